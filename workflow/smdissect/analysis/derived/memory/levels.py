"""The levels of the pointer chase's latency curve: flat runs of consecutive footprints (also read by the geometry
derivers), each stride's curve and the level or transition each chase point is on."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ....core import stats
from .common import param

NEAR = 0.05  # a level: at least MIN_POINTS consecutive footprints, each within 5% of their median
MIN_POINTS = 3  # two points 10% apart on a rising curve are no plateau
LEVELS = ("L1", "L2", "DRAM")  # the levels of a chase curve, in footprint order
LINE = 128  # bytes: a random chain's slot, and the cache line a chase step touches
PAGE_KB = 2048  # the driver's large page: how many pages a footprint spans (TLB reach)


def stride_label(stride: float) -> str:
    """'random' for the permutation chain over 128 B lines (stride 0), else the stride in bytes."""
    return "random" if stride == 0 else f"stride {int(stride)} B"


def line_kb(footprint_kb: float, stride: float) -> float:
    """KB of distinct 128 B lines a chain of that footprint and stride touches (one per slot beyond 128 B)."""
    return footprint_kb if stride <= LINE else footprint_kb * LINE / stride


def runs(values: list[float], near: float = NEAR) -> list[tuple[int, int]]:
    """The levels of a latency curve in footprint order, as (first, last) index pairs: maximal runs of at least
    MIN_POINTS consecutive points each within `near` of the run's median, found left to right. The points between two
    levels are transitions (their latency mixes the two levels' hits)."""
    out, i = [], 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and _flat(values[i : j + 2], near):
            j += 1
        if j - i + 1 >= MIN_POINTS:
            out.append((i, j))
            i = j + 1
        else:
            i += 1
    return out


def _flat(values: list[float], near: float) -> bool:
    middle = float(np.median(values))
    return all(abs(v - middle) <= near * middle for v in values)


@dataclass(frozen=True)
class Level:
    """One detected level of one stride's curve."""

    name: str  # L1, L2, DRAM, level 4...
    stride: float
    footprints: tuple[float, ...]  # its points' footprints (KB)
    params: tuple[str, ...]  # its points
    after: tuple[float, ...]  # the footprints after it up to the next level (its transition), or to the sweep's end
    next_level: float  # first footprint of the next level (NaN: none)


def curve(raw: pd.DataFrame, stride: float) -> pd.DataFrame:
    """One stride's chase curve: params, footprint_kb and the median latency per point, in footprint order."""
    mine = raw[(raw["case"] == "chase") & (raw["metric"] == "latency")]
    out = stats.summary(mine, ["params"], sort=False)[["params", "value"]]
    out["footprint_kb"] = out["params"].map(lambda p: param(p, "footprint_kb"))
    out["stride_b"] = out["params"].map(lambda p: param(p, "stride_b"))
    return out[out["stride_b"] == stride].sort_values("footprint_kb", ignore_index=True)


def levels(points: pd.DataFrame, stride: float) -> list[Level]:
    """The levels of one stride's curve (`curve`), named in footprint order (LEVELS)."""
    found = runs(points["value"].tolist())
    fp, params = points["footprint_kb"].tolist(), points["params"].tolist()
    out = []
    for k, (i, j) in enumerate(found):
        end = found[k + 1][0] if k + 1 < len(found) else len(fp)
        name = LEVELS[k] if k < len(LEVELS) else f"level {k + 1}"
        out.append(
            Level(
                name,
                stride,
                tuple(fp[i : j + 1]),
                tuple(params[i : j + 1]),
                tuple(fp[j + 1 : end]),
                fp[end] if end < len(fp) else math.nan,
            )
        )
    return out


def strides(raw: pd.DataFrame) -> list[float]:
    """The chase's strides, in sweep order."""
    mine = raw[(raw["case"] == "chase") & (raw["metric"] == "latency")]
    return list(dict.fromkeys(mine["params"].map(lambda p: param(p, "stride_b"))))


def regions(raw: pd.DataFrame) -> dict[str, str]:
    """Chase point -> the level it is on ('L2') or 'transition' (from the derived levels)."""
    out = {}
    for stride in strides(raw):
        pts = curve(raw, stride)
        out |= dict.fromkeys(pts["params"], "transition")
        for lv in levels(pts, stride):
            out |= dict.fromkeys(lv.params, lv.name)
    return out
