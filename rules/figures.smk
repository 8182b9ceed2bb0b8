# figures: every reported figure of a category, computed once, each with its status from the checks that can fail it.
rule figures:
    input:
        raw=family_files("results/{gpu}/{arch}/{category}/{family}/raw.parquet"),
        crossval="results/{gpu}/{arch}/{category}/crossval.parquet",
        sass_checks=family_files("results/static/{arch}/{category}/{family}/sass_checks.parquet"),
        controlcodes=family_files("results/static/{arch}/{category}/{family}/controlcodes.parquet"),
        refs=lambda wildcards: [p for c in PLAN.references(wildcards.category) for p in category_tables("raw", wildcards.gpu, c)],
        manifest="kernels/{category}/cases.yaml",
    output:
        "results/{gpu}/{arch}/{category}/figures.parquet",
    benchmark:
        "benchmarks/figures/{gpu}/{arch}/{category}.tsv"
    log:
        "logs/figures/{gpu}/{arch}/{category}.log",
    conda:
        ENV
    shell:
        "smdissect figures --kernels kernels --category {wildcards.category} --out {output}"
        " --raw {input.raw} --crossval {input.crossval} --sass-checks {input.sass_checks}"
        " --controlcodes {input.controlcodes} --refs {input.refs}"
        " 2> {log} || (cat {log} >&2; exit 1)"
