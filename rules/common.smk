# Input functions shared by the rules, and the software environment of every job. Every table's path comes from the
# registry (smdissect.core.tables.TABLES): a rule names a table kind, never its path.
import json

from smdissect.core.tables import CATEGORY, STATIC, TABLES
from smdissect.core.tables import find as find_tables

ENV = "../workflow/envs/smdissect.yaml"  # with --software-deployment-method conda (ncu and the driver stay the host's)


def family_files(pattern, profiled=False):
    """One path per family (or per profiled family) of the category, from a pattern with {gpu}, {arch},
    {category}, {family}."""

    def paths(wildcards):
        category = wildcards.category
        fams = PLAN.profiled_in(category, wildcards.arch) if profiled else PLAN.families[category]
        return expand(pattern, family=fams, allow_missing=True, **wildcards)

    return paths


def family_tables(kind):
    """The files of table `kind` (tables.TABLES) of every family, or every profiled family, of the job's category."""
    return family_files(TABLES[kind].pattern, TABLES[kind].profiled)


def planned_tables(kind, folder, categories=None):
    """Every file of table `kind` this run plans for results/<folder>/ over `categories` (default: every configured
    one; a dict: those categories, only the families it names of each): a static table's of every built arch, a GPU
    table's of the folder's arch (none where this run fills no such folder); one per category, or per family (or
    profiled family) of each."""
    table = TABLES[kind]
    archs = PLAN.archs if table.per == STATIC else [PLAN.arch_of[folder]] if folder in PLAN.arch_of else []
    files = []
    for arch in archs:
        for category in PLAN.families if categories is None else categories:
            if table.per == CATEGORY:
                files.append(table.pattern.format(gpu=folder, arch=arch, category=category))
                continue
            fams = PLAN.profiled_in(category, arch) if table.profiled else PLAN.families[category]
            if isinstance(categories, dict):
                fams = [f for f in fams if f in categories[category]]
            files += [table.pattern.format(gpu=folder, arch=arch, category=category, family=f) for f in fams]
    return files


def report_inputs(wildcards):
    """Every table of a category's page: the static ones of every arch, the GPU ones of a folder this run fills."""
    return {kind: planned_tables(kind, wildcards.gpu, [wildcards.category]) for kind in TABLES}


def folder_figures(folder):
    """The figures tables of a results folder: planned ones for a folder this run fills, else those on disk."""
    if folder in PLAN.arch_of:
        return planned_tables("figures", folder)
    return find_tables("figures", Path("results", folder))
