"""The stages as functions of files, one module per layer of the run, each with the commands the CLI runs for it:
`static` (build, SASS), `gpu` (run, exec, profile, parse), `tables` (crossval, figures), `pages` (the HTML) and
`data` (the model, simulator config, paper map, arch tables). The CLI imports only the module of the stage asked."""
