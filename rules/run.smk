# run: time every case of a family on the GPU (clock64, JSON lines) into raw.parquet; one job's GPU work at a time.
rule run:
    input:
        binary=BUILT["binary"],
        manifest="kernels/{category}/cases.yaml",
    output:
        raw=TABLES["raw"].pattern,
        status=TABLES["status"].pattern,
    params:
        device=lambda wildcards: PLAN.device_arg(wildcards.gpu),
        repeats=S["repeats"],
        toolchain=PLAN.nvcc_version,
    resources:
        gpu=1,
    priority: 2
    benchmark:
        "benchmarks/run/{gpu}/{arch}/{category}/{family}.tsv"
    log:
        "logs/run/{gpu}/{arch}/{category}/{family}.log",
    conda:
        ENV
    shell:
        "smdissect run --binary {input.binary} --arch {wildcards.arch} --cuda {params.toolchain}"
        " --out {output.raw} --out-status {output.status} --kernels kernels --category {wildcards.category} --family {wildcards.family}"
        " --repeats {params.repeats} --device {params.device} 2> {log}"
