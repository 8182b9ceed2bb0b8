# profile: ncu over the timed launches of a family (NVTX-selected, clocks left alone) into a .ncu-rep: its profiled
# sweeps, and each point a figure of its own is taken at, which the run's raw table says (crossval.figure_points).
rule profile:
    input:
        binary=BUILT["binary"],
        manifest="kernels/{category}/cases.yaml",
        raw=TABLES["raw"].pattern,
    output:
        report="results/{gpu}/{arch}/{category}/{family}/profile.ncu-rep",
        meta="results/{gpu}/{arch}/{category}/{family}/profile.json",
    params:
        ncu=S["ncu"],
        device=lambda wildcards: PLAN.device_arg(wildcards.gpu),
        toolchain=PLAN.nvcc_version,
        ncu_version=PLAN.ncu_version,
    resources:
        gpu=1,
    priority: 2
    benchmark:
        "benchmarks/profile/{gpu}/{arch}/{category}/{family}.tsv"
    log:
        "logs/profile/{gpu}/{arch}/{category}/{family}.log",
    conda:
        ENV
    shell:
        "smdissect profile --binary {input.binary} --arch {wildcards.arch} --cuda {params.toolchain}"
        " --ncu {params.ncu} --report {output.report} --meta {output.meta} --kernels kernels"
        " --category {wildcards.category} --family {wildcards.family} --device {params.device}"
        " --ncu-version {params.ncu_version:q} --raw {input.raw} 2> {log}"
