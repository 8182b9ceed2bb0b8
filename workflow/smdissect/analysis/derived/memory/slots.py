"""One point's samples split by latency_modes (chase_near_far's loads, the atomics' words): its modes, the range of
each side over launches, and the figures it gives."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ... import latency_modes
from ...figure_model import Check, Figure


def _launch_ranges(grid: np.ndarray, m: latency_modes.Modes) -> dict[str, float]:
    """Per launch (rows of `grid`) at the pooled cut: the range over launches of the near and far means and of the far
    and slow shares (NaN where a launch has none of a side)."""
    slow = grid > latency_modes.SLOW * m.median
    hit = ~slow
    far = hit & (grid >= m.cut) if m.clusters == 2 else np.zeros_like(hit)
    near = hit & ~far
    out = {}
    for key, side in (("near", near), ("far", far)):
        counts = side.sum(axis=1)
        means = np.where(side, grid, 0.0).sum(axis=1) / np.where(counts, counts, 1)
        out[key] = float(means.max() - means.min()) if counts.all() else math.nan
    hits = hit.sum(axis=1)
    out["far_share"] = float(np.ptp(far.sum(axis=1) / np.where(hits, hits, 1)))
    out["slow_share"] = float(np.ptp(slow.mean(axis=1)))
    return out


@dataclass(frozen=True)
class SlotFigures:
    """What every figure of one point split by latency_modes shares (chase_near_far's loads, the atomics' words): its
    case, point, modes, launch ranges and derivation stem."""

    case: str
    params: str
    where: str
    modes: latency_modes.Modes
    ranges: dict[str, float]
    stem: str
    method: str

    def figure(self, metric: str, unit: str, name: str, value: float, how: str, spread_of: str = "") -> Figure | None:
        """One figure of this point (None where the value is not defined, e.g. far with one cluster)."""
        if not math.isfinite(value):
            return None
        return Figure(
            case=self.case,
            metric=metric,
            unit=unit,
            kind="derived",
            name=f"{name} ({self.where})",
            value=float(value),
            spread=self.ranges.get(spread_of, math.nan),
            samples=self.modes.loads,
            derivation=f"{self.stem}; {how}",
            params=self.params,
            points=(self.params,),
            method=self.method,
        )


def slot(
    samples: pd.DataFrame, params: str, where: str, methods: dict[str, str], what: str = "loads"
) -> tuple[SlotFigures, np.ndarray]:
    """The modes of one point's samples (`what`: `iterations` of them per launch, every launch in run order), with its
    case's method from `methods`, and each sample slot's side of the cut."""
    g = samples[samples["params"] == params].sort_values("repeat")
    case, x, per_launch = str(g["case"].iloc[0]), g["value"].to_numpy(float), int(g["iterations"].iloc[0])
    m = latency_modes.modes(x, per_launch)
    whole = per_launch > 0 and len(x) % per_launch == 0
    launches = len(x) // per_launch if whole else 0
    ranges = _launch_ranges(x.reshape(-1, per_launch), m) if launches >= 2 else {}
    stem = (
        f"{m.loads} {what} ({launches} launches of {per_launch}) timed from SM {int(g['smid'].iloc[0])}; "
        f"latency_modes.modes: {latency_modes.reading(m)}"
    )
    placed = latency_modes.sides(x, per_launch, m) if whole else np.array([])
    return SlotFigures(case, params, where, m, ranges, stem, methods.get(case, "")), placed


def tied(m: latency_modes.Modes) -> list[Check]:
    """Whether two clusters are two latencies of the lines' addresses (each line on one side in every launch)."""
    if m.clusters != 2:
        return []
    if math.isnan(m.agreement):
        return [Check("line agreement", "n/a", "one launch: the clusters are not checked against the lines")]
    verdict = "agree" if m.agreement >= latency_modes.ADDRESS_BOUND else "disagree"
    return [
        Check(
            "line agreement",
            verdict,
            f"{m.agreement:.0%} of the lines on one side of the cut in every launch "
            f"(partitions need >= {latency_modes.ADDRESS_BOUND:.0%}): {latency_modes.reading(m)}",
        )
    ]
