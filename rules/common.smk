# Input functions shared by the rules.
import json


def family_files(pattern, profiled=False):
    """One path per family (or per profiled family) of the category, from a pattern with {gpu}, {arch},
    {category}, {family}."""

    def paths(wildcards):
        fams = (PLAN.profiled if profiled else PLAN.families)[wildcards.category]
        return expand(pattern, family=fams, allow_missing=True, **wildcards)

    return paths


def report_inputs(wildcards):
    """The static SASS tables of every arch, plus the GPU tables when a GPU is here."""
    fams = PLAN.families[wildcards.category]
    static = "results/static/{arch}/{category}/{family}/{table}.parquet"
    inputs = {
        t: expand(static, arch=PLAN.archs, category=wildcards.category, family=fams, table=t)
        for t in ("sass", "sass_checks", "controlcodes")
    }
    if PLAN.gpu:
        gpu_dir = f"results/{wildcards.gpu}/{PLAN.run_arch}/{wildcards.category}"
        for t in ("raw", "status"):
            inputs[t] = expand(f"{gpu_dir}/{{family}}/{t}.parquet", family=fams)
        for t in ("ncu", "stalls", "pipes"):
            inputs[t] = expand(f"{gpu_dir}/{{family}}/{t}.parquet", family=PLAN.profiled[wildcards.category])
        inputs["crossval"] = [f"{gpu_dir}/crossval.parquet"]
    return inputs


def folder_raw(folder):
    """The raw tables of a results folder: planned ones for a folder this run fills, else those on disk."""
    if folder in GPUS and PLAN.gpu:
        return [path.format(gpu=folder) for path in gpu_tables("raw")]
    return sorted(Path(f"results/{folder}").rglob("raw.parquet"))


def gpu_tables(table):
    """One GPU table of every family of every category (none without a GPU)."""
    if not PLAN.gpu:
        return []
    return [
        f"results/{{gpu}}/{PLAN.run_arch}/{category}/{family}/{table}.parquet"
        for category, fams in PLAN.families.items()
        for family in fams
    ]
