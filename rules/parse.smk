# parse: ncu_report reads the .ncu-rep into long metrics, stall reasons and pipe counts (no GPU needed).
rule parse:
    input:
        report="results/{gpu}/{arch}/{category}/{family}/profile.ncu-rep",
        meta="results/{gpu}/{arch}/{category}/{family}/profile.json",
    output:
        ncu="results/{gpu}/{arch}/{category}/{family}/ncu.parquet",
        stalls="results/{gpu}/{arch}/{category}/{family}/stalls.parquet",
        pipes="results/{gpu}/{arch}/{category}/{family}/pipes.parquet",
    benchmark:
        "benchmarks/parse/{gpu}/{arch}/{category}/{family}.tsv"
    log:
        "logs/parse/{gpu}/{arch}/{category}/{family}.log",
    conda:
        ENV
    shell:
        "smdissect parse --report {input.report} --meta {input.meta} --out-ncu {output.ncu}"
        " --out-stalls {output.stalls} --out-pipes {output.pipes} 2> {log} || (cat {log} >&2; exit 1)"
