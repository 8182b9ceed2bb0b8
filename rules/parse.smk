# parse: ncu_report reads the .ncu-rep into long metrics, stall reasons and pipe counts (no GPU needed).
rule parse:
    input:
        report=rules.profile.output.report,
        meta=rules.profile.output.meta,
    output:
        ncu=TABLES["ncu"].pattern,
        stalls=TABLES["stalls"].pattern,
        pipes=TABLES["pipes"].pattern,
    benchmark:
        "benchmarks/parse/{gpu}/{arch}/{category}/{family}.tsv"
    log:
        "logs/parse/{gpu}/{arch}/{category}/{family}.log",
    conda:
        ENV
    shell:
        "smdissect parse --report {input.report} --meta {input.meta} --out-ncu {output.ncu}"
        " --out-stalls {output.stalls} --out-pipes {output.pipes} 2> {log}"
