# crossval: clock64 against the counters, the manifest against the SASS, for every case of a category.
rule crossval:
    input:
        raw=family_files("results/{gpu}/{arch}/{category}/{family}/raw.parquet"),
        ncu=family_files("results/{gpu}/{arch}/{category}/{family}/ncu.parquet", profiled=True),
        stalls=family_files("results/{gpu}/{arch}/{category}/{family}/stalls.parquet", profiled=True),
        sass_checks=family_files("results/static/{arch}/{category}/{family}/sass_checks.parquet"),
        listings=family_files("build/{arch}/{category}/{family}.json"),
        manifest="kernels/{category}/cases.yaml",
    output:
        "results/{gpu}/{arch}/{category}/crossval.parquet",
    benchmark:
        "benchmarks/crossval/{gpu}/{arch}/{category}.tsv"
    log:
        "logs/crossval/{gpu}/{arch}/{category}.log",
    conda:
        ENV
    shell:
        "smdissect crossval --kernels kernels --category {wildcards.category} --out {output}"
        " --raw {input.raw} --ncu {input.ncu} --stalls {input.stalls} --sass-checks {input.sass_checks}"
        " --listings {input.listings} 2> {log} || (cat {log} >&2; exit 1)"
