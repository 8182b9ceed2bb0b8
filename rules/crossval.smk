# crossval: clock64 against the counters, the manifest against the SASS, for every case of a category.
rule crossval:
    input:
        raw=family_tables("raw"),
        ncu=family_tables("ncu"),
        stalls=family_tables("stalls"),
        sass_checks=family_tables("sass_checks"),
        listings=family_files(BUILT["listing"]),
        manifest="kernels/{category}/cases.yaml",
    output:
        TABLES["crossval"].pattern,
    benchmark:
        "benchmarks/crossval/{gpu}/{arch}/{category}.tsv"
    log:
        "logs/crossval/{gpu}/{arch}/{category}.log",
    conda:
        ENV
    shell:
        "smdissect crossval --kernels kernels --category {wildcards.category} --out {output}"
        " --raw {input.raw} --ncu {input.ncu} --stalls {input.stalls} --sass-checks {input.sass_checks}"
        " --listings {input.listings} 2> {log}"
