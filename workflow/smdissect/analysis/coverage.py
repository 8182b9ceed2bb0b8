"""Coverage: what became of every planned measurement (case x parameter point x arch)."""

from __future__ import annotations

import pandas as pd

from ..core import catalog, tables

STATES = ("measured", "static-only", "failed", "missing")


def planned(cases: list[catalog.Case], archs: list[str]) -> pd.DataFrame:
    """Every (category, case, params, arch) the manifests plan for the configured archs."""
    rows = [
        {"category": c.category, "case": c.id, "params": tables.canonical_params(p), "arch": arch}
        for c in cases
        for p in c.points()
        for arch in archs
    ]
    return pd.DataFrame(rows, columns=["category", "case", "params", "arch"])


def coverage(
    cases: list[catalog.Case], archs: list[str], run_arch: str | None, status: pd.DataFrame, no_gpu: str
) -> pd.DataFrame:
    """Each planned point's state and reason: the run arch from the status tables (absent = missing), every
    other arch static-only (built and SASS-checked, no such GPU here)."""
    plan = planned(cases, archs)
    known = status[["category", "case", "params", "status", "reason"]].assign(arch=run_arch)
    out = plan.merge(known, on=["category", "case", "params", "arch"], how="left")
    other = out["arch"] != run_arch
    out.loc[other, "status"] = "static-only"
    out.loc[other, "reason"] = [
        f"no {a} GPU here ({no_gpu}): built and SASS-checked only" for a in out.loc[other, "arch"]
    ]
    out["status"] = out["status"].replace({"static": "static-only"}).fillna("missing")
    out.loc[out["status"] == "missing", "reason"] = "no status row: its run job did not finish"
    return out


def counts(cov: pd.DataFrame) -> pd.DataFrame:
    """Points per (category, arch) in each state, with the share measured."""
    table = cov.pivot_table(index=["category", "arch"], columns="status", values="case", aggfunc="size", fill_value=0)
    table = table.reindex(columns=list(STATES), fill_value=0).reset_index().rename_axis(columns=None)
    table["planned"] = table[list(STATES)].sum(axis=1)
    table["covered %"] = 100 * (table["planned"] - table["missing"] - table["failed"]) / table["planned"]
    return table


def not_measured(cov: pd.DataFrame) -> pd.DataFrame:
    """The points not measured, grouped by (category, case, arch, status, reason) with how many points each."""
    rest = cov[cov["status"] != "measured"]
    return (
        rest.groupby(["category", "case", "arch", "status", "reason"], as_index=False, dropna=False)
        .agg(points=("params", "size"))
        .sort_values(["status", "category", "case", "arch"], ignore_index=True)
    )


def arch_plan(cases: list[catalog.Case], archs: list[str]) -> pd.DataFrame:
    """Per (arch, category): the planned points the arch can run and those static there, and why (a case it lacks
    a feature for; a point the device itself refuses is only known when it runs)."""
    rows = [
        {
            "arch": arch,
            "category": c.category,
            "case": c.id,
            "points": len(c.points()),
            "reason": c.unsupported(arch) or "",
        }
        for arch in archs
        for c in cases
    ]
    return pd.DataFrame(rows, columns=["arch", "category", "case", "points", "reason"])


def arch_markdown(plan: pd.DataFrame) -> str:
    """The README's table of planned points per arch (runnable / planned per category), then each arch's static
    cases grouped by reason."""
    archs = list(dict.fromkeys(plan["arch"]))
    runnable = plan[plan["reason"] == ""].groupby(["category", "arch"])["points"].sum()
    planned = plan.groupby(["category", "arch"])["points"].sum()
    lines = ["| category | " + " | ".join(archs) + " |", "| --- |" + " --- |" * len(archs)]
    for category in dict.fromkeys(plan["category"]):
        cells = [f"{runnable.get((category, a), 0)} / {planned[(category, a)]}" for a in archs]
        lines.append(f"| {category} | " + " | ".join(cells) + " |")
    totals = [f"**{runnable.xs(a, level='arch').sum()} / {planned.xs(a, level='arch').sum()}**" for a in archs]
    lines += ["| all | " + " | ".join(totals) + " |", ""]
    for arch in archs:
        static = plan[(plan["arch"] == arch) & (plan["reason"] != "")]
        for reason, group in static.groupby("reason", sort=True):
            n = int(group["points"].sum())
            why = reason.removeprefix(f"{arch} ")
            lines.append(f"- {arch}: {why}: {', '.join(group['case'])} ({n} point{'s' * (n != 1)})")
    return "\n".join(lines)
