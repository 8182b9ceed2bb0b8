# Input functions shared by the rules, and the software environment of every job.
import json

ENV = "../workflow/envs/smdissect.yaml"  # with --software-deployment-method conda (ncu and the driver stay the host's)


def family_files(pattern, profiled=False):
    """One path per family (or per profiled family) of the category, from a pattern with {gpu}, {arch},
    {category}, {family}."""

    def paths(wildcards):
        category = wildcards.category
        fams = PLAN.profiled_in(category, wildcards.arch) if profiled else PLAN.families[category]
        return expand(pattern, family=fams, allow_missing=True, **wildcards)

    return paths


def report_inputs(wildcards):
    """The static SASS tables of every arch, plus the GPU tables of a folder this run fills."""
    fams = PLAN.families[wildcards.category]
    static = "results/static/{arch}/{category}/{family}/{table}.parquet"
    inputs = {
        t: expand(static, arch=PLAN.archs, category=wildcards.category, family=fams, table=t)
        for t in ("sass", "sass_checks", "controlcodes")
    }
    arch = PLAN.arch_of.get(wildcards.gpu)
    if arch:
        gpu_dir = f"results/{wildcards.gpu}/{arch}/{wildcards.category}"
        for t in ("raw", "status"):
            inputs[t] = expand(f"{gpu_dir}/{{family}}/{t}.parquet", family=fams)
        for t in ("ncu", "stalls", "pipes"):
            inputs[t] = expand(f"{gpu_dir}/{{family}}/{t}.parquet", family=PLAN.profiled_in(wildcards.category, arch))
        inputs["crossval"] = [f"{gpu_dir}/crossval.parquet"]
        inputs["figures"] = [f"{gpu_dir}/figures.parquet"]
    return inputs


def category_table(table, folder):
    """One per-category GPU table (crossval, figures) of every category of a results folder (none where this run
    fills none)."""
    arch = PLAN.arch_of.get(folder)
    return [f"results/{folder}/{arch}/{category}/{table}.parquet" for category in PLAN.families] if arch else []


def folder_figures(folder):
    """The figures tables of a results folder: planned ones for a folder this run fills, else those on disk."""
    if folder in PLAN.arch_of:
        return category_table("figures", folder)
    return sorted(Path(f"results/{folder}").rglob("figures.parquet"))


def category_tables(table, folder, category):
    """One GPU table of every family of one category of a results folder (none where this run fills none)."""
    arch = PLAN.arch_of.get(folder)
    return [f"results/{folder}/{arch}/{category}/{family}/{table}.parquet" for family in PLAN.families[category]] if arch else []


def gpu_tables(table, folder):
    """One GPU table of every family of every category of a results folder (none where this run fills none)."""
    arch = PLAN.arch_of.get(folder)
    if not arch:
        return []
    return [
        f"results/{folder}/{arch}/{category}/{family}/{table}.parquet"
        for category, fams in PLAN.families.items()
        for family in fams
    ]
