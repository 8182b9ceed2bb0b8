# sass: cuobjdump opcode counts per kernel, checked against the manifest's expectations (no GPU needed).
rule sass:
    input:
        binary=BUILT["binary"],
        listing=BUILT["listing"],
        manifest="kernels/{category}/cases.yaml",
    output:
        sass=TABLES["sass"].pattern,
        checks=TABLES["sass_checks"].pattern,
        controls=TABLES["controlcodes"].pattern,
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
        " --category {wildcards.category} --family {wildcards.family} 2> {log}"
