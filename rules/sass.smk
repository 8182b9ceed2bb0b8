# sass: cuobjdump opcode counts per kernel, checked against the manifest's expectations (no GPU needed).
rule sass:
    input:
        binary="build/{arch}/{category}/{family}",
        listing="build/{arch}/{category}/{family}.json",
        manifest="kernels/{category}/cases.yaml",
    output:
        sass="results/static/{arch}/{category}/{family}/sass.parquet",
        checks="results/static/{arch}/{category}/{family}/sass_checks.parquet",
        controls="results/static/{arch}/{category}/{family}/controlcodes.parquet",
    params:
        toolchain=PLAN.nvcc_version,
    benchmark:
        "benchmarks/sass/{arch}/{category}/{family}.tsv"
    log:
        "logs/sass/{arch}/{category}/{family}.log",
    conda:
        ENV
    shell:
        "smdissect sass --binary {input.binary} --listing {input.listing} --arch {wildcards.arch}"
        " --cuda {params.toolchain} --out-sass {output.sass} --out-checks {output.checks} --out-controls {output.controls} --kernels kernels"
        " --category {wildcards.category} --family {wildcards.family} 2> {log} || (cat {log} >&2; exit 1)"
