# figures: every reported figure of a category, computed once, each with its status from the checks that can fail it.
rule figures:
    input:
        raw=family_tables("raw"),
        crossval=rules.crossval.output[0],
        sass_checks=family_tables("sass_checks"),
        controlcodes=family_tables("controlcodes"),
        refs=lambda wildcards: planned_tables("raw", wildcards.gpu, PLAN.references(wildcards.category)),
        manifest="kernels/{category}/cases.yaml",
    output:
        TABLES["figures"].pattern,
    benchmark:
        "benchmarks/figures/{gpu}/{arch}/{category}.tsv"
    log:
        "logs/figures/{gpu}/{arch}/{category}.log",
    conda:
        ENV
    shell:
        "smdissect figures --kernels kernels --category {wildcards.category} --out {output}"
        " --raw {input.raw} --crossval {input.crossval} --sass-checks {input.sass_checks}"
        " --controlcodes {input.controlcodes} --refs {input.refs} 2> {log}"
