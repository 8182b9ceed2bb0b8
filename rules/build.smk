# build: nvcc compiles one case family for one arch; the toolkit version is a rerun trigger.
rule build:
    input:
        source=lambda wildcards: PLAN.source(wildcards.category, wildcards.family),
        patched=lambda wildcards: PLAN.patch_targets(wildcards.category, wildcards.family),
        headers=HEADERS,
    output:
        binary="build/{arch}/{category}/{family}",
        listing="build/{arch}/{category}/{family}.json",
    params:
        nvcc=S["nvcc"],
        toolchain=PLAN.nvcc_version,
        flags=lambda wildcards: PLAN.flags(wildcards.category, wildcards.family),
    priority: lambda wildcards: 1 if wildcards.arch in PLAN.arch_of.values() else 0  # the GPU stages wait on these
    benchmark:
        "benchmarks/build/{arch}/{category}/{family}.tsv"
    log:
        "logs/build/{arch}/{category}/{family}.log",
    conda:
        ENV
    shell:
        "smdissect build --source {input.source} --binary {output.binary} --listing {output.listing}"
        " --arch {wildcards.arch} --include kernels/common --nvcc {params.nvcc} --flags={params.flags:q}"
        " 2> {log} || (cat {log} >&2; exit 1)"
