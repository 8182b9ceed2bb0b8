"""A case's medians along one axis (a curve) and the levels on it (flat runs, memory's), as figures, and the device's
attributes (device_geometry): what the geometry derivers share."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ....core import stats
from ....core.tables import parse_params
from ...figure_model import Check, Figure
from ..memory.levels import runs
from ..samples import make, samples


def curve(raw: pd.DataFrame, case: str, metric: str, axis: str, **fixed: float) -> pd.DataFrame:
    """One case's median per point along `axis` (other axes at `fixed`): params, the axis and value, in axis order."""
    rows = raw[(raw["case"] == case) & (raw["metric"] == metric)]
    if rows.empty:
        return pd.DataFrame(columns=["params", axis, "value"])
    out = stats.summary(rows, ["params"], sort=False)[["params", "value"]]
    for key in (axis, *fixed):
        out[key] = out["params"].map(lambda p, k=key: float(parse_params(p).get(k, math.nan)))
    for key, want in fixed.items():
        out = out[out[key] == want]
    return out.sort_values(axis, ignore_index=True)


def axis_values(raw: pd.DataFrame, case: str, metric: str, axis: str) -> list[float]:
    """The distinct values of one axis of a case's points, in order."""
    rows = raw[(raw["case"] == case) & (raw["metric"] == metric)]
    return sorted({float(parse_params(p).get(axis, math.nan)) for p in rows["params"].unique()})


def levels(pts: pd.DataFrame) -> list[tuple[int, int]]:
    """memory's levels of a curve (index ranges of its runs)."""
    return runs(pts["value"].tolist())


def level_figure(
    raw: pd.DataFrame, case: str, metric: str, pts: pd.DataFrame, span: tuple[int, int], name: str, how: str, unit: str
) -> Figure | None:
    """A level's value: the median of its points' medians, its spread the range of all their samples."""
    i, j = span
    params = pts["params"].iloc[i : j + 1].tolist()
    parts = [samples(raw, case, metric, p) for p in params]
    fig = make(case, metric, unit, name, lambda *m: float(np.median(m)), parts, how, params)
    if fig is not None:
        fig.spread = float(np.ptp(np.concatenate(parts)))
    return fig


def with_checks(checks: list[Check], fig: Figure | None) -> Figure | None:
    """`fig` carrying checks its deriver made."""
    if fig is not None:
        fig.checks = [*checks, *fig.checks]
    return fig


def attributes(raw: pd.DataFrame) -> dict[str, float]:
    """device_geometry's attributes (medians), empty where it did not run."""
    rows = raw[raw["case"] == "device_geometry"]
    return {str(m): float(g.median()) for m, g in rows.groupby("metric")["value"]}
