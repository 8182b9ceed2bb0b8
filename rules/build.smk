# build: nvcc compiles one case family for one arch; the toolkit version is a rerun trigger. A family with patch
# targets also gets its patched cubins beside the binary (controlcodes.prepare), where its binary reads them.
rule build:
    input:
        source=lambda wildcards: PLAN.source(wildcards.category, wildcards.family),
        patched=lambda wildcards: PLAN.patch_targets(wildcards.category, wildcards.family),
        headers=HEADERS,
    output:
        binary="build/{arch}/{category}/{family}",
        listing="build/{arch}/{category}/{family}.json",
        cubins=directory("build/{arch}/{category}/{family}.cubins"),  # controlcodes.CUBIN_DIR: empty if unpatched
    params:
        nvcc=S["nvcc"],
        toolchain=PLAN.nvcc_version,
        flags=lambda wildcards: PLAN.flags(wildcards.category, wildcards.family, wildcards.arch),
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
        " 2> {log}"
