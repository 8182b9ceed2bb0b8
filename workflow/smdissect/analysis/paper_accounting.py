"""Each row of the seed paper against this run's figures: the counterpart a tie or derivation names, in the paper's
unit, with its status, the ratio measured / paper, or why there is none; and the cross-generation finding."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core import catalog
from ..core.appendix import appendix_for
from ..core.tables import STATUS_RANK, parse_params, worst_status
from .paper import COMPARED, MAP, REASONS, Entry, Ref, load
from .paper_formulas import FORMULAS

GENERATION_AGREE = 0.10  # a paper's other-GPU figure (often printed as ~N) agrees with this run's within this share
PAPER_GPUS = {
    "sm_120": "RTX PRO 5000 (sm_120a)",
    "sm_120a": "RTX PRO 5000 (sm_120a)",
    "sm_90": "H100 (paper's SM 90 column)",
    "sm_100": "B200 (paper's SM 100 column)",
}
# A figure's unit -> the paper's: the factor that converts a value (units equal: 1; absent: not comparable).
UNIT_FACTORS: dict[tuple[str, str], float] = {
    ("fraction", "%"): 100.0,
    ("ratio", "x"): 1.0,
    ("byte", "KB"): 2.0**-10,
    ("byte", "MB"): 2.0**-20,
    ("byte", "GB"): 2.0**-30,
    ("KB", "MB"): 2.0**-10,
    ("MHz", "GHz"): 1e-3,
    ("ns", "us"): 1e-3,
    ("cycle/way", "cycle"): 1.0,
    **{(u, "count"): 1.0 for u in ("warp", "loads", "ilp", "groups", "sm", "copies", "CTAs")},
}
COLUMNS = [
    "id",
    "quantity",
    "paper",
    "unit",
    "appendix",
    "appendix_field",
    "paper_gpu",
    "source",
    "accounted",
    "reason",
    "where",
    "category",
    "counterpart",
    "measured",
    "measured_unit",
    "status",
    "status_reason",
    "ratio",
    "note",
]


def _at(params: str, at: tuple[tuple[str, int], ...]) -> bool:
    """Whether a canonical-JSON point holds every axis value of `at`."""
    point = parse_params(params)
    return all(point.get(k) == v for k, v in at)


def _stands_at(figure: pd.Series, at: tuple[tuple[str, int], ...]) -> bool:
    """Whether a figure is taken at `at`: its point holds it, or (a figure over several points) every point it
    stands on does."""
    if figure["params"]:
        return _at(str(figure["params"]), at)
    points = json.loads(figure["points"] or "[]")
    return bool(points) and all(_at(p, at) for p in points)


def matches(figures: pd.DataFrame, ref: Ref) -> pd.DataFrame:
    """The figures of this run a ref names."""
    mine = figures[
        (figures["category"] == ref.category) & (figures["case"] == ref.case) & (figures["metric"] == ref.metric)
    ]
    if ref.figure:
        mine = mine[mine["figure"] == ref.figure]
    return mine[[_stands_at(f, ref.at) for _, f in mine.iterrows()]] if ref.at else mine


def absent(ref: Ref, status: pd.DataFrame | None, arch: str, kernels: Path) -> tuple[str, str]:
    """(status, why) of a ref with no figure: static or failed where the run says so, else why none was made."""
    if status is not None and len(status):
        rows = status[(status["category"] == ref.category) & (status["case"] == ref.case)]
        rows = rows.loc[[_at(p, ref.at) for p in rows["params"]]] if ref.at else rows
        for state in ("failed", "static"):
            hit = rows[rows["status"] == state]
            if len(hit):
                return state, str(hit["reason"].iloc[0])
        if len(rows):
            return "missing", (
                f"measured, but this run's figures hold no {ref.text()}: re-run the figures stage "
                f"(snakemake tables), or fix {MAP}"
            )
    case = next((c for c in catalog.load(kernels, ref.category) if c.id == ref.case), None)
    why = case.unsupported(arch) if case is not None and arch else None
    if why:
        return "static", f"not run: {why}"
    return "not run", f"no status row for {ref.category}/{ref.case}: the case is newer than this run"


def _convert(value: float, unit: str, to: str) -> float | None:
    """A value in another unit, None where the two are not comparable."""
    factor = 1.0 if unit == to else UNIT_FACTORS.get((unit, to))
    return None if factor is None else value * factor


def _counterpart(
    entry: Entry, figures: pd.DataFrame, status: pd.DataFrame | None, arch: str, unit: str, kernels: Path
) -> dict[str, Any]:
    """The measured side of one row: its figure (or the formula over its figures), in the paper's unit, with
    status and why."""
    found = [matches(figures, r) for r in entry.refs]
    rule = FORMULAS.get(entry.formula)
    many, partial = (rule.many, rule.partial) if rule else (False, False)
    for i, (ref, f) in enumerate(zip(entry.refs, found, strict=True)):
        if f.empty and not (partial and i):
            state, why = absent(ref, status, arch, kernels)
            return {"status": state, "status_reason": why}
        if len(f) > 1 and not many:
            return {
                "status": "ambiguous",
                "status_reason": f"{len(f)} figures match {ref.text()}: name one with `at` or `figure` in {MAP}",
            }
    first = found[0].iloc[0]
    statuses = [str(s) for f in found for s in f["status"]]
    if rule is None:
        value = _convert(float(first["value"]), str(first["unit"]), unit)
        return {
            "category": first["category"],
            "counterpart": first["figure"],
            "status": first["status"],
            "status_reason": first["reason"],
            "measured": float(first["value"]) if value is None else value,
            "measured_unit": str(first["unit"]) if value is None else unit,
        }
    names = [r.text() for r in entry.refs]
    how = rule.text.format(*names, all=", ".join(names))
    with np.errstate(divide="ignore", invalid="ignore"):
        value = rule.compute([f for f in found if len(f)]) * entry.factor
    return {
        "category": entry.refs[0].category,
        "counterpart": how + (f", x {entry.factor:g}" if entry.factor != 1 else ""),
        "status": worst_status(statuses),
        "status_reason": f"the worst status of the {len(statuses)} figures it stands on",
        "measured": value,
        "measured_unit": unit,
    }


def _named_figure(row: str, figures: pd.DataFrame) -> pd.DataFrame:
    """The figures that stand for a row a manifest or deriver names (its `paper` column), verified first."""
    mine = figures[figures["paper"].fillna("") == row]
    return mine.iloc[sorted(range(len(mine)), key=lambda i: STATUS_RANK.get(mine["status"].iloc[i], len(STATUS_RANK)))]


def account(
    entry: Entry,
    ref_row: pd.Series,
    figures: pd.DataFrame,
    status: pd.DataFrame | None,
    arch: str,
    kernels: Path,
) -> dict[str, Any]:
    """One row of the accounting table."""
    unit, paper = str(ref_row["unit"]), float(ref_row["value"])
    out: dict[str, Any] = {
        "id": entry.id,
        "quantity": ref_row["quantity"],
        "paper": paper,
        "unit": unit,
        "appendix": math.nan,
        "appendix_field": "",
        "paper_gpu": PAPER_GPUS.get(str(ref_row["arch"]), str(ref_row["arch"])),
        "source": ref_row["source"],
        "accounted": entry.how,
        "reason": entry.reason,
        "where": entry.where,
        "category": "",
        "counterpart": "",
        "measured": math.nan,
        "measured_unit": "",
        "status": "no counterpart",
        "status_reason": "",
        "ratio": math.nan,
        "note": entry.note,
    }
    if entry.where != MAP:  # tied by a manifest or deriver: the figure carrying its id
        stand = _named_figure(entry.id, figures)
        if not len(stand) and not entry.refs:
            return out | {"status": "missing", "status_reason": f"no figure of this run stands for it ({entry.where})"}
        f = stand.iloc[0] if len(stand) else None
        ref = Ref(f["category"], f["case"], f["metric"], figure=f["figure"]) if f is not None else entry.refs[0]
        entry = Entry(entry.id, entry.where, (ref,))
    if entry.refs:
        out |= _counterpart(entry, figures, status, arch, unit, kernels)
    elif entry.reason:
        out["status_reason"] = REASONS[entry.reason]
    later = appendix_for(entry.id, kernels.parent)  # the full study's appendix states it too: its value in our unit
    same_unit = later is not None and later.unit == unit and isinstance(later.value, float)
    out |= {"appendix": later.value if same_unit else math.nan, "appendix_field": later.id if later else ""}
    comparable = out["measured_unit"] == unit and paper != 0 and math.isfinite(out["measured"])
    out["ratio"] = out["measured"] / paper if comparable else math.nan
    return out


def accounting(
    figures: pd.DataFrame, reference: pd.DataFrame, status: pd.DataFrame | None, kernels: Path
) -> pd.DataFrame:
    """One row per figure of the paper: its value and GPU, how it is accounted for, the counterpart measured on this
    run (in the paper's unit where the two compare) with its status, the ratio measured / paper and a note where the
    two measure different things. `status` (the run's status tables) says why a counterpart was not measured."""
    entries = load(kernels)
    arch = str(figures["arch"].iloc[0]) if len(figures) else ""
    rows = [
        account(entries[r["id"]], r, figures, status, arch, kernels)
        for _, r in reference.iterrows()
        if r["id"] in entries
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """How the rows are accounted for (tied, derived, each reason) and what became of their counterparts."""
    kind = table["accounted"].where(table["accounted"] != "reason", "reason: " + table["reason"])
    counts = table.assign(kind=kind).pivot_table(
        index="kind", columns="status", values="id", aggfunc="size", fill_value=0
    )
    counts["rows"] = counts.sum(axis=1)
    return counts.reset_index().rename_axis(columns=None)


def cross_generation(table: pd.DataFrame) -> pd.DataFrame:
    """The paper's other-GPU columns beside the running GPU's own figures: the cross-generation finding, each
    marked whether the two agree within GENERATION_AGREE."""
    mine = table[(table["reason"] == COMPARED) & table["counterpart"].ne("")]
    mine = mine[["id", "quantity", "paper", "unit", "paper_gpu", "counterpart", "measured", "status", "ratio"]]
    agree = (mine["ratio"] - 1).abs() <= GENERATION_AGREE
    return mine.assign(verdict=agree.map({True: "agrees", False: "differs"}).where(mine["ratio"].notna(), ""))
