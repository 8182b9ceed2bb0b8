"""Figures of a result set, the instruction table built from them, and the diff of two result sets (GPUs or runs),
figure by figure."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..core import catalog, tables
from ..core.errors import SmdissectError

KEYS = ["category", "figure"]
PAPER = "paper"  # the result-set name of the seed paper's figures
RELATIVE_FLOOR = 0.02  # a difference is flagged only beyond both sets' spreads and this share of the reference
COLUMNS = [
    "category",
    "figure",
    "case",
    "metric",
    "unit",
    "params",
    "kind",
    "value",
    "spread",
    "status",
    "reason",
    "paper",
    "gpu",
    "arch",
]


def figures_in(folder: Path) -> pd.DataFrame:
    """Every figure under `folder` (results/<gpu>/ or a committed reports/<gpu>/tables/), with every column."""
    paths = tables.find("figures", folder)
    if not paths:
        raise SmdissectError(f"{folder} holds no figures.parquet: run `snakemake --cores all tables` for that GPU")
    return tables.read("figures", paths)


def is_model(path: Path) -> bool:
    """Whether a compared set is a model file (model.json) rather than a result folder."""
    return path.suffix == ".json"


def model_set(path: Path, kernels: Path) -> pd.DataFrame:
    """A model file's measured parameters, or the model of a result folder's figures, as a comparison takes them: one
    row per field keyed by its section (as `category`) and name (as `figure`)."""
    from . import model

    if is_model(path):
        m = model.read(path)
    else:
        status = tables.read("status", tables.find("status", path))
        m = model.build(figures_in(path), status, path.name, kernels)
    rows = [
        {
            "category": field.split(".", 1)[0],
            "figure": field.split(".", 1)[1],
            "case": ", ".join(dict.fromkeys(f"{f['category']}/{f['case']}" for f in p["evidence"]["figures"])),
            "metric": ", ".join(dict.fromkeys(f["metric"] for f in p["evidence"]["figures"])),
            "unit": p["unit"],
            "params": "",
            "kind": p["evidence"]["how"],
            "value": p["value"],
            "spread": math.nan if p["spread"] is None else p["spread"],
            "status": p["status"],
            "reason": p["reason"],
            "paper": "",
            "gpu": m["gpu"]["name"],
            "arch": m["gpu"]["arch"],
        }
        for field, p in model.parameters(m).items()
        if p["value"] is not None
    ]
    return pd.DataFrame(rows, columns=COLUMNS).sort_values(KEYS, ignore_index=True)


def result_set(figures: pd.DataFrame) -> pd.DataFrame:
    """A set of figures as a comparison takes it: the compared columns, one row per figure in key order."""
    return figures[COLUMNS].sort_values(KEYS, ignore_index=True)


def instructions(figures: pd.DataFrame, cases: list[catalog.Case]) -> pd.DataFrame:
    """The instruction reference table: every chain case's dependent latency and peak throughput, with statuses."""
    rows = []
    for case in (c for c in cases if c.kind == "chain"):
        mine = figures[(figures["case"] == case.id) & (figures["category"] == case.category)]
        lat = mine[(mine["metric"] == "latency") & (mine["kind"] == "point")]
        thr = mine[(mine["metric"] == "throughput") & (mine["kind"] == "peak")]
        rows.append(
            {
                "category": case.category,
                "case": case.id,
                "ptx": case.ptx,
                "pipe": case.pipe or "",
                "latency (cycle)": lat["value"].iloc[0] if len(lat) else math.nan,
                "spread": lat["spread"].iloc[0] if len(lat) else math.nan,
                "latency status": lat["status"].iloc[0] if len(lat) else "",
                "peak (warp_inst/cycle/SM)": thr["value"].iloc[0] if len(thr) else math.nan,
                "at": tables.point_text(thr["params"].iloc[0]) if len(thr) else "",
                "peak status": thr["status"].iloc[0] if len(thr) else "",
            }
        )
    return pd.DataFrame(rows)


def diff(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Every figure of either set side by side, ratio a / b (b the reference); `flagged` where the difference
    exceeds both sets' spreads and RELATIVE_FLOOR of b, flagged rows first."""
    both = a.merge(b, on=KEYS, how="outer", suffixes=("_a", "_b"))
    both["difference"] = both["value_a"] - both["value_b"]
    both["ratio"] = [x / y if y else math.nan for x, y in zip(both["value_a"], both["value_b"], strict=True)]
    noise = both[["spread_a", "spread_b"]].max(axis=1).fillna(0)
    beyond = (both["difference"].abs() > noise) & ((both["ratio"] - 1).abs() > RELATIVE_FLOOR)
    both["flagged"] = beyond.fillna(False) & both["difference"].notna()
    both["only_in"] = [
        "b" if pd.isna(x) else "a" if pd.isna(y) else "" for x, y in zip(both["value_a"], both["value_b"], strict=True)
    ]
    both["unit"] = both["unit_a"].fillna(both["unit_b"])
    cols = [
        *KEYS,
        "unit",
        "value_a",
        "spread_a",
        "status_a",
        "value_b",
        "spread_b",
        "status_b",
        "difference",
        "ratio",
        "flagged",
        "only_in",
    ]
    return both[cols].sort_values(["flagged", *KEYS], ascending=[False, True, True], ignore_index=True)
