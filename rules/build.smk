# build: nvcc compiles one case family; the toolkit version is a rerun trigger. A family with patch targets also
# gets its patched cubins beside the binary (controlcodes.prepare), where its binary reads them. The archs a GPU of
# this run executes are built one per job (first, with the configured host optimization); the SASS-only archs of a
# family in one nvcc call, whose binary is copied to each arch's path.
BUILT = {
    "binary": "build/{arch}/{category}/{family}",
    "listing": "build/{arch}/{category}/{family}.json",
    "cubins": "build/{arch}/{category}/{family}.cubins",  # controlcodes.CUBIN_DIR: empty if unpatched
}
BUILD_INPUT = {
    "source": lambda wildcards: PLAN.source(wildcards.category, wildcards.family),
    "patched": lambda wildcards: PLAN.patch_targets(wildcards.category, wildcards.family),
    "headers": HEADERS,
}
BUILD_SHELL = (
    "smdissect build --source {input.source} --binary {output.binary} --listing {output.listing}"
    " --arch {params.archs} --include kernels/common --nvcc {params.nvcc} --flags={params.flags:q} 2> {log}"
)
if PLAN.run_archs:

    rule build:
        input:
            **BUILD_INPUT,
        output:
            binary=BUILT["binary"],
            listing=BUILT["listing"],
            cubins=directory(BUILT["cubins"]),
        wildcard_constraints:
            arch="|".join(PLAN.run_archs),
        params:
            archs=lambda wildcards: wildcards.arch,
            nvcc=S["nvcc"],
            toolchain=PLAN.nvcc_version,
            flags=lambda wildcards: PLAN.flags(wildcards.category, wildcards.family, wildcards.arch),
        priority: 1  # the GPU stages wait on these
        benchmark:
            "benchmarks/build/{arch}/{category}/{family}.tsv"
        log:
            "logs/build/{arch}/{category}/{family}.log",
        conda:
            ENV
        shell:
            BUILD_SHELL


if PLAN.static_only:

    rule build_static:
        input:
            **BUILD_INPUT,
        output:
            binary=expand(BUILT["binary"], arch=PLAN.static_only, allow_missing=True),
            listing=expand(BUILT["listing"], arch=PLAN.static_only, allow_missing=True),
            cubins=directory(expand(BUILT["cubins"], arch=PLAN.static_only, allow_missing=True)),
        params:
            archs=" ".join(PLAN.static_only),
            nvcc=S["nvcc"],
            toolchain=PLAN.nvcc_version,
            flags=lambda wildcards: PLAN.flags(wildcards.category, wildcards.family, PLAN.static_only[0]),
        benchmark:
            "benchmarks/build/static/{category}/{family}.tsv"
        log:
            "logs/build/static/{category}/{family}.log",
        conda:
            ENV
        shell:
            BUILD_SHELL
