"""How the scheduler hides latency: the warps (one dependent chain each) that saturate a pipe, and the scoreboard
depth, the loads one thread keeps in flight before a use waits for them."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ...figure_model import Figure
from ..chains import KNEE, saturation_warps
from ..sweeps import derived, method_of, num, param, robust, series

STEP = 0.5  # a scoreboard step: cycles per iteration rise by this share of a one-load iteration between two points


def warps_figures(raw: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """Per warp-scaling case (one dependent chain per warp): the fewest warps reaching KNEE of its peak."""
    out = []
    for case in sorted({str(c) for c in raw.loc[raw["metric"] == "resident_warps", "case"]}):
        thr = series(raw, case, "throughput")
        pts = {int(param(p, "warps")): v for p, v in thr.items() if param(p, "warps") is not None}
        if len(pts) < 2:
            continue
        warps, spread = robust(saturation_warps, pts)
        med = {w: float(np.median(v)) for w, v in pts.items()}
        best = max(med, key=lambda w: med[w])
        listed = ", ".join(f"{w}: {num(v)}" for w, v in sorted(med.items()))
        out.append(
            derived(
                case,
                "saturation_warps",
                "warp",
                f"{case} warps to saturate",
                warps,
                spread,
                sum(len(v) for v in pts.values()),
                f"fewest warps (one dependent chain each) reaching "
                f"{KNEE:.0%} of the best rate ({num(med[best])} warp_inst/cycle/SM at {best} warps); by "
                f"warps: {listed}",
                thr.keys(),
                method=method_of(generic, case),
            )
        )
    return out


def scoreboard_depth(by_loads: Mapping[int, float], step: float = STEP) -> tuple[int, int | None]:
    """The most independent loads before cycles per iteration first rise by `step` of a one-load iteration between
    two swept counts (a second round trip), and the count where it rose (None: no step in the sweep)."""
    loads = sorted(by_loads)
    base = by_loads[loads[0]]
    for a, b in itertools.pairwise(loads):
        if by_loads[b] - by_loads[a] > step * base:
            return a, b
    return loads[-1], None


def scoreboard_figures(raw: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """The scoreboard depth, one number: how many loads one thread keeps in flight before a use waits for them."""
    cycles = series(raw, "scoreboard_depth", "cycles_per_iteration")
    pts = {int(param(p, "loads")): v for p, v in cycles.items() if param(p, "loads") is not None}
    if len(pts) < 2:
        return []
    med = {n: float(np.median(v)) for n, v in pts.items()}
    depth, rise = scoreboard_depth(med)
    _, spread = robust(lambda m: scoreboard_depth(m)[0], pts)
    where = (
        f"{depth} loads {num(med[depth])} -> {rise} loads {num(med[rise])} cycles (+{num(med[rise] - med[depth])}"
        f"): the SM keeps at least {depth} loads of one thread in flight, fewer than {rise} before the step"
        if rise is not None
        else f"no step up to {depth} loads: at least {depth}"
    )
    fig = derived(
        "scoreboard_depth",
        "depth",
        "loads",
        "scoreboard depth",
        depth,
        spread,
        sum(len(v) for v in pts.values()),
        f"most independent ld.global.cg loads issued before the first use "
        f"while cycles per iteration stay within one round trip: the first rise by more than {STEP:.0%} of a "
        f"one-load iteration ({num(med[min(med)])} cycles) between two swept counts is {where}",
        cycles.keys(),
        method=method_of(generic, "scoreboard_depth"),
    )
    return [fig]
