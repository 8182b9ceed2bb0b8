# Input functions shared by the rules.
import json


def family_files(pattern):
    """One path per family of the category, from a pattern with {gpu}, {arch}, {category}, {family}."""

    def paths(wildcards):
        return expand(pattern, family=PLAN.families[wildcards.category], allow_missing=True, **wildcards)

    return paths


def report_inputs(wildcards):
    """The static SASS tables of every arch, plus the GPU tables when a GPU is here."""
    fams = PLAN.families[wildcards.category]
    static = "results/static/{arch}/{category}/{family}/{table}.parquet"
    inputs = {
        t: expand(static, arch=PLAN.archs, category=wildcards.category, family=fams, table=t)
        for t in ("sass", "sass_checks")
    }
    if PLAN.gpu:
        gpu_dir = f"results/{wildcards.gpu}/{PLAN.run_arch}/{wildcards.category}"
        for t in ("raw", "ncu", "stalls", "pipes"):
            inputs[t] = expand(f"{gpu_dir}/{{family}}/{t}.parquet", family=fams)
        inputs["crossval"] = [f"{gpu_dir}/crossval.parquet"]
    return inputs
