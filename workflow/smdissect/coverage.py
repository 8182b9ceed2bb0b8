"""Coverage: what became of every planned measurement (case x parameter point x arch)."""

from __future__ import annotations

import pandas as pd

from . import catalog, tables

STATES = ("measured", "static-only", "failed", "missing")


def planned(cases: list[catalog.Case], archs: list[str]) -> pd.DataFrame:
    """Every (category, case, params, arch) the manifests plan for the configured archs."""
    rows = [{"category": c.category, "case": c.id, "params": tables.canonical_params(p), "arch": arch}
            for c in cases for p in c.points() for arch in archs]  # fmt: skip
    return pd.DataFrame(rows, columns=["category", "case", "params", "arch"])


def coverage(cases: list[catalog.Case], archs: list[str], run_arch: str | None, status: pd.DataFrame,
             no_gpu: str) -> pd.DataFrame:  # fmt: skip
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
