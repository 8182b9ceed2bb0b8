"""Quantities of a result set, the paper beside them, and the diff of two result sets (GPUs or runs)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from . import catalog, tables
from .errors import SmdissectError

KEYS = ["category", "case", "metric", "unit", "params"]
PAPER = "paper"  # the result-set name of the seed paper's figures


def quantities(raw: pd.DataFrame) -> pd.DataFrame:
    """One row per (category, case, metric, unit, params): median, spread (max - min) and sample count."""
    if raw.empty:
        return pd.DataFrame(columns=[*KEYS, "median", "spread", "n", "gpu", "arch"])
    return (
        raw.groupby(KEYS, as_index=False)
        .agg(median=("value", "median"), spread=("value", lambda s: s.max() - s.min()), n=("value", "size"),
             gpu=("gpu", "first"), arch=("arch", "first"))
        .sort_values(KEYS, ignore_index=True)
    )  # fmt: skip


def result_set(folder: Path) -> pd.DataFrame:
    """The quantities of every raw table under `folder` (results/<gpu>/ or a committed reports/<gpu>/tables/)."""
    paths = sorted(folder.rglob("raw.parquet"))
    if not paths:
        raise SmdissectError(f"{folder} holds no raw.parquet: run the pipeline for that GPU first")
    return quantities(tables.read("raw", paths))


def _reference_point(group: pd.DataFrame) -> pd.Series:
    """The point whose median stands for a case's figure: its only point, else its best (lowest latency-like
    figure in cycles or ns, highest rate otherwise)."""
    lower_is_better = group["unit"].iloc[0] in ("cycle", "ns", "us", "ms")
    return group.loc[group["median"].idxmin() if lower_is_better else group["median"].idxmax()]


def sm90_id(ref: str) -> str:
    """The id of the paper's sm_90 column beside an sm_120 figure: `x_sm120` -> `x_sm90`."""
    return re.sub(r"_sm120a?$", "_sm90", ref)


def against_paper(measured: pd.DataFrame, cases: list[catalog.Case], reference: pd.DataFrame) -> pd.DataFrame:
    """Each case that names a paper figure: its measured figure beside the paper's sm_120 and sm_90 ones."""
    refs = reference.set_index("id")
    rows = []
    for case in cases:
        if not case.paper:
            continue
        if case.paper not in refs.index:
            raise SmdissectError(f"kernels/{case.category}/cases.yaml: case {case.id}: paper id {case.paper} "
                                 "is not in reference/seed_sm120.csv")  # fmt: skip
        group = measured[(measured["case"] == case.id) & (measured["category"] == case.category)]
        group = group[group["metric"] == case.measures[0]]
        point = _reference_point(group) if len(group) else None
        ref, old = refs.loc[case.paper], refs.loc[sm90_id(case.paper)] if sm90_id(case.paper) in refs.index else None
        value = float(point["median"]) if point is not None else math.nan
        rows.append({
            "category": case.category, "case": case.id, "quantity": ref["quantity"], "at": "" if point is None
            else point["params"], "measured": value, "unit": point["unit"] if point is not None else ref["unit"],
            "spread": float(point["spread"]) if point is not None else math.nan, "paper_sm120": float(ref["value"]),
            "ratio_sm120": value / float(ref["value"]), "paper_sm90": float(old["value"]) if old is not None
            else math.nan, "ratio_sm90": value / float(old["value"]) if old is not None else math.nan,
            "source": ref["source"],
        })  # fmt: skip
    return pd.DataFrame(rows)


def instructions(measured: pd.DataFrame, cases: list[catalog.Case]) -> pd.DataFrame:
    """The instruction reference table: every chain case's dependent latency and peak throughput."""
    rows = []
    for case in (c for c in cases if c.kind == "chain"):
        mine = measured[(measured["case"] == case.id) & (measured["category"] == case.category)]
        lat, thr = mine[mine["metric"] == "latency"], mine[mine["metric"] == "throughput"]
        best = thr.loc[thr["median"].idxmax()] if len(thr) else None
        rows.append({"category": case.category, "case": case.id, "ptx": case.ptx, "pipe": case.pipe or "",
                     "latency (cycle)": lat["median"].iloc[0] if len(lat) else math.nan,
                     "spread": lat["spread"].iloc[0] if len(lat) else math.nan,
                     "peak (warp_inst/cycle/SM)": best["median"] if best is not None else math.nan,
                     "at": best["params"] if best is not None else ""})  # fmt: skip
    return pd.DataFrame(rows)


def paper_set(cases: list[catalog.Case], reference: pd.DataFrame, like: pd.DataFrame) -> pd.DataFrame:
    """The paper's sm_120 figures as a result set, at the point the measured set `like` reports for each case."""
    table = against_paper(like, cases, reference)
    if table.empty:
        return quantities(pd.DataFrame())
    metric = {(c.category, c.id): c.measures[0] for c in cases}
    return pd.DataFrame({
        "category": table["category"], "case": table["case"],
        "metric": [metric[(c, i)] for c, i in zip(table["category"], table["case"], strict=True)],
        "unit": table["unit"], "params": table["at"], "median": table["paper_sm120"], "spread": 0.0, "n": 1,
        "gpu": "seed paper (RTX PRO 5000)", "arch": "sm_120a",
    })  # fmt: skip


def diff(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Every quantity of either set side by side; `flagged` where the difference exceeds both sets' spreads."""
    both = a.merge(b, on=KEYS, how="outer", suffixes=("_a", "_b"))
    both["difference"] = both["median_b"] - both["median_a"]
    both["ratio"] = both["median_b"] / both["median_a"]
    noise = both[["spread_a", "spread_b"]].max(axis=1)
    both["flagged"] = (both["difference"].abs() > noise) & both["difference"].notna()
    both["only_in"] = ["a" if pd.isna(y) else "b" if pd.isna(x) else ""
                       for x, y in zip(both["median_a"], both["median_b"], strict=True)]  # fmt: skip
    cols = [*KEYS, "median_a", "spread_a", "median_b", "spread_b", "difference", "ratio", "flagged", "only_in"]
    return both[cols].sort_values(["flagged", *KEYS], ascending=[False, *[True] * len(KEYS)], ignore_index=True)
