# report: one self-contained HTML page per category (inline SVG charts, opens offline) and an index.
rule report:
    input:
        unpack(report_inputs),
        manifest="kernels/{category}/cases.yaml",
        reference="reference/seed_sm120.csv",
    output:
        report("reports/{gpu}/{category}.html", caption="../reports/templates/category.rst", category="smdissect"),
    params:
        skipped=json.dumps(PLAN.skipped),
        provenance=lambda wildcards: json.dumps(PLAN.provenance(wildcards.gpu)),
        tables=lambda wildcards, input: " ".join(
            f"--{kind.replace('_', '-')} {' '.join(input[kind])}" for kind in TABLES if input[kind]
        ),
        categories=" ".join(PLAN.families),
    log:
        "logs/report/{gpu}/{category}.log",
    conda:
        ENV
    shell:
        "smdissect report --kernels kernels --category {wildcards.category} --out {output}"
        " --skipped {params.skipped:q} --provenance {params.provenance:q} {params.tables}"
        " --categories {params.categories}"
        " 2> {log}"


rule index:
    input:
        pages=expand("reports/{{gpu}}/{category}.html", category=PLAN.families),
        raw=lambda wildcards: planned_tables("raw", wildcards.gpu),
        status=lambda wildcards: planned_tables("status", wildcards.gpu),
        figures=lambda wildcards: planned_tables("figures", wildcards.gpu),
        reference="reference/seed_sm120.csv",
    output:
        page=report("reports/{gpu}/index.html", caption="../reports/templates/index.rst", category="smdissect"),
        roofline="reports/{gpu}/roofline.json",  # the roofline file and its page, written beside the index
        roofline_page="reports/{gpu}/roofline.html",
    params:
        skipped=json.dumps(PLAN.skipped),
        provenance=lambda wildcards: json.dumps(PLAN.provenance(wildcards.gpu)),
        categories=" ".join(PLAN.families),
        archs=" ".join(PLAN.archs),
        run_arch=lambda wildcards: PLAN.arch_of.get(wildcards.gpu, ""),
    log:
        "logs/report/{gpu}/index.log",
    conda:
        ENV
    shell:
        "smdissect index --kernels kernels --gpu {wildcards.gpu} --out {output.page}"
        " --categories {params.categories} --archs {params.archs} --run-arch={params.run_arch:q}"
        " --raw {input.raw} --status {input.status} --figures {input.figures}"
        " --skipped {params.skipped:q} --provenance {params.provenance:q} 2> {log}"


# compare: every quantity of one GPU's results against the paper's figures (b=paper), or two result folders
# (`snakemake reports/compare/h200-vs-rtx-pro-5000.html` compares results/h200 with results/rtx-pro-5000).
rule compare_paper:
    input:
        figures=lambda wildcards: planned_tables("figures", wildcards.gpu),
        reference="reference/seed_sm120.csv",
    output:
        report("reports/{gpu}/compare-paper.html", caption="../reports/templates/compare.rst", category="smdissect"),
    params:
        categories=" ".join(PLAN.families),
    log:
        "logs/report/{gpu}/compare-paper.log",
    conda:
        ENV
    shell:
        "smdissect compare --a results/{wildcards.gpu} --b paper --categories {params.categories}"
        " --out {output} 2> {log}"


# gpus: with device: all, one page over every GPU's folder, linking each index and the comparisons.
rule gpus:
    input:
        expand("reports/{gpu}/index.html", gpu=GPUS),
    output:
        report("reports/gpus.html", caption="../reports/templates/index.rst", category="smdissect"),
    params:
        folders=" ".join(f"results/{g}" for g in GPUS),
    log:
        "logs/report/gpus.log",
    conda:
        ENV
    shell:
        "smdissect gpus --folders {params.folders} --out {output} 2> {log}"


rule compare:
    input:
        a=lambda wildcards: folder_figures(wildcards.a),
        b=lambda wildcards: folder_figures(wildcards.b),
    output:
        "reports/compare/{a}-vs-{b}.html",
    log:
        "logs/report/compare/{a}-vs-{b}.log",
    conda:
        ENV
    shell:
        "smdissect compare --a results/{wildcards.a} --b results/{wildcards.b} --out {output}"
        " 2> {log}"


# model: the measured GPU as data (reports/<gpu>/model.json, every field of the seed paper's appendix with its
# evidence), and the GPGPU-Sim config written from it with its diff against Accel-Sim's published one.
rule model:
    input:
        figures=lambda wildcards: planned_tables("figures", wildcards.gpu),
        status=lambda wildcards: planned_tables("status", wildcards.gpu),
        fields="reference/model_fields.yaml",
        appendix="reference/seed_sm120_appendix.csv",
    output:
        "reports/{gpu}/model.json",
    log:
        "logs/report/{gpu}/model.log",
    conda:
        ENV
    shell:
        "smdissect export --tables results/{wildcards.gpu} --out {output} 2> {log}"


rule simconfig:
    input:
        model=rules.model.output[0],
        accelsim=expand("reference/accelsim/SM90_H100.{file}", file=["gpgpusim.config", "trace.config"]),
    output:
        "reports/{gpu}/gpgpusim.config",
        "reports/{gpu}/trace.config",
        "reports/{gpu}/gpgpusim-diff.html",
    log:
        "logs/report/{gpu}/simconfig.log",
    conda:
        ENV
    shell:
        "smdissect simconfig --model {input.model} --out reports/{wildcards.gpu} 2> {log}"
