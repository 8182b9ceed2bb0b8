# report: one self-contained HTML page per category (inline SVG charts, opens offline) and an index.
rule report:
    input:
        unpack(report_inputs),
        manifest="kernels/{category}/cases.yaml",
        reference="reference/seed_sm120.csv",
    output:
        "reports/{gpu}/{category}.html",
    params:
        skipped=json.dumps(PLAN.skipped),
        provenance=json.dumps(PLAN.provenance()),
        tables=lambda wildcards, input: " ".join(
            f"--{t.replace('_', '-')} {' '.join(input[t])}"
            for t in ("raw", "status", "ncu", "stalls", "pipes", "crossval", "sass", "sass_checks")
            if t in input.keys()
        ),
    log:
        "logs/report/{gpu}/{category}.log",
    shell:
        "python3 -m smdissect report --kernels kernels --category {wildcards.category} --out {output}"
        " --skipped {params.skipped:q} --provenance {params.provenance:q} {params.tables}"
        " 2> {log} || (cat {log} >&2; exit 1)"


rule index:
    input:
        pages=expand("reports/{{gpu}}/{category}.html", category=PLAN.families),
        crossval=(
            expand("results/{{gpu}}/{arch}/{category}/crossval.parquet", arch=PLAN.run_arch, category=PLAN.families)
            if PLAN.gpu
            else []
        ),
    output:
        "reports/{gpu}/index.html",
    params:
        skipped=json.dumps(PLAN.skipped),
        provenance=json.dumps(PLAN.provenance()),
        categories=" ".join(PLAN.families),
    log:
        "logs/report/{gpu}/index.log",
    shell:
        "python3 -m smdissect index --kernels kernels --gpu {wildcards.gpu} --out {output} --categories {params.categories}"
        " --crossval {input.crossval} --skipped {params.skipped:q} --provenance {params.provenance:q}"
        " 2> {log} || (cat {log} >&2; exit 1)"
