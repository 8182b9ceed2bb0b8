"""Latency modes of individually timed loads (chase_near_far): whether one SM sees one L2 hit latency or two (the near
and the far L2 partition), decided from the whole distribution by a test that can say no.

Loads beyond SLOW x the median missed the L2 (DRAM, a TLB miss): a third mode, counted as the slow share and left out
of the clusters. Every other load goes into one exact 2-means (Otsu) split, the cut that leaves the least variance
within the two sides. That split always exists, so it is only accepted as two clusters where both sides hold at least
MIN_SHARE of the L2 hits, their means lie at least SEPARATION rms widths apart (cutting one mode in two gives 1.6-3.5:
2.6 for a normal distribution, 3.5 for a uniform one) and at least MIN_GAP of the lower latency apart (the clock's
quantisation is no mode). Where the same lines were timed in several launches, the agreement says how many lines fell
on the same side of the cut in every launch: near 1 where the latency is set by the line's address (its partition),
near 0 where it is timing noise."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

SLOW = 1.5  # a load beyond 1.5x the median latency is a miss (DRAM, TLB), not an L2 hit of either partition
MIN_SHARE = 0.05  # each of two clusters holds at least 5% of the L2 hits
SEPARATION = 4.0  # the two clusters' means lie at least 4 rms widths apart
MIN_GAP = 0.03  # ... and at least 3% of the lower cluster's latency apart
WIDTH_FLOOR = 1.0  # cycle: the clock's resolution; a narrower cluster counts as this wide
ADDRESS_BOUND = 0.9  # two clusters are two latencies of the lines' addresses (partitions) where this share agrees


@dataclass(frozen=True)
class Modes:
    """What the latency distribution of one point shows (latencies in the unit of the input, cycles here)."""

    loads: int  # timed loads analysed (every launch)
    median: float  # median latency of all of them
    clusters: int  # 1 or 2 (0: no load)
    near: float  # mean latency of the lower cluster; of every L2 hit where there is one cluster
    far: float  # mean latency of the upper cluster; NaN with one cluster
    far_share: float  # the upper cluster's share of the L2 hits; 0 with one cluster
    slow_share: float  # share of all loads beyond SLOW x the median
    separation: float  # gap between the candidate split's means over their rms width; NaN where no split exists
    cut: float  # latency of the candidate split (first latency of the upper side); NaN where none exists
    agreement: float  # share of lines on the same side of the cut in every launch; NaN with one launch
    spread: float  # largest range over launches of a reported cluster's mean (at the pooled cut); NaN: one launch


@dataclass(frozen=True)
class Split:
    """The least-variance cut of sorted values and the two sides' statistics."""

    cut: float
    low_mean: float
    high_mean: float
    low_sd: float
    high_sd: float
    high_share: float

    @property
    def separation(self) -> float:
        width = math.sqrt((max(self.low_sd, WIDTH_FLOOR) ** 2 + max(self.high_sd, WIDTH_FLOOR) ** 2) / 2)
        return (self.high_mean - self.low_mean) / width

    @property
    def two(self) -> bool:
        """Whether the split separates two clusters (see the module's doc)."""
        return (
            MIN_SHARE <= self.high_share <= 1 - MIN_SHARE
            and self.separation >= SEPARATION
            and self.high_mean - self.low_mean >= MIN_GAP * self.low_mean
        )


def best_split(values: npt.ArrayLike) -> Split | None:
    """The exact 2-means split of `values` (the cut maximising the between-side variance, only between distinct
    values), or None where they hold fewer than two distinct values."""
    x = np.sort(np.asarray(values, dtype=float))
    n = len(x)
    edges = np.nonzero(np.diff(x) > 0)[0] + 1  # a cut before x[i]: x[:i] low, x[i:] high
    if not len(edges):
        return None
    total = np.cumsum(x)
    low = total[edges - 1] / edges
    high = (total[-1] - total[edges - 1]) / (n - edges)
    i = int(edges[np.argmax(edges * (n - edges) * (high - low) ** 2)])
    lo, hi = x[:i], x[i:]
    return Split(float(x[i]), float(lo.mean()), float(hi.mean()), float(lo.std()), float(hi.std()), (n - i) / n)


def modes(latencies: npt.ArrayLike, per_launch: int = 0) -> Modes:
    """The modes of per-load latencies; `per_launch` > 0: they are launches of that many loads each, one after the
    other, every launch timing the same lines in the same order (what chase_near_far records)."""
    x = np.asarray(latencies, dtype=float)
    nan = math.nan
    if not len(x):
        return Modes(0, nan, 0, nan, nan, nan, nan, nan, nan, nan, nan)
    median = float(np.median(x))
    hit = x <= SLOW * median
    split = best_split(x[hit])
    two = split is not None and split.two
    near = split.low_mean if two else float(x[hit].mean())
    far, share = (split.high_mean, split.high_share) if two else (nan, 0.0)
    cut = split.cut if split else nan
    agreement = spread = nan
    if per_launch > 0 and len(x) % per_launch == 0 and len(x) // per_launch >= 2:
        grid = x.reshape(-1, per_launch)
        agreement = _agreement(grid, SLOW * median, cut)
        spread = _spread(grid, SLOW * median, cut if two else nan)
    return Modes(
        len(x),
        median,
        2 if two else 1,
        near,
        far,
        share,
        1 - float(hit.mean()),
        split.separation if split else nan,
        cut,
        agreement,
        spread,
    )


def _agreement(grid: np.ndarray, slow: float, cut: float) -> float:
    """Share of the lines (columns) hit in two launches or more whose L2 hits all fall on one side of `cut`."""
    if math.isnan(cut):
        return math.nan
    hit = grid <= slow
    high = (grid >= cut) & hit
    hits = hit.sum(axis=0)
    seen = hits >= 2
    if not seen.any():
        return math.nan
    highs = high.sum(axis=0)
    same = (highs == 0) | (highs == hits)
    return float(same[seen].mean())


def _spread(grid: np.ndarray, slow: float, cut: float) -> float:
    """The largest range over launches (rows) of a cluster's mean: each side of `cut` (all L2 hits where NaN)."""
    sides = [(grid <= slow)] if math.isnan(cut) else [(grid <= slow) & (grid < cut), (grid <= slow) & (grid >= cut)]
    worst = 0.0
    for side in sides:
        counts = side.sum(axis=1)
        if (counts == 0).any():
            return math.nan
        means = np.where(side, grid, 0.0).sum(axis=1) / counts
        worst = max(worst, float(means.max() - means.min()))
    return worst


def reading(m: Modes) -> str:
    """What the modes say, in words: one L2 latency, two set by the line's address, or two that are not."""
    if m.clusters == 0:
        return "no loads"
    if m.clusters == 1:
        return "one L2 latency"
    if math.isnan(m.agreement):
        return "two L2 latencies (one launch: not checked against the lines' addresses)"
    if m.agreement >= ADDRESS_BOUND:
        return "two L2 latencies, set by the line's address"
    return "two latencies not tied to the line's address (timing noise, not partitions)"


def sides(latencies: npt.ArrayLike, per_launch: int, m: Modes) -> np.ndarray:
    """Per line (position in a launch of `per_launch` loads): 1 where each of its L2 hits lies at or above the cut of
    two clusters `m`, 0 where each lies below, -1 where it has none or some on either side (all -1 with one cluster)."""
    grid = np.asarray(latencies, dtype=float).reshape(-1, per_launch)
    if m.clusters != 2:
        return np.full(per_launch, -1)
    hit = grid <= SLOW * m.median
    highs, hits = ((grid >= m.cut) & hit).sum(axis=0), hit.sum(axis=0)
    return np.where(hits == 0, -1, np.where(highs == hits, 1, np.where(highs == 0, 0, -1)))


def same_sides(a: np.ndarray, b: np.ndarray) -> float:
    """Share of the lines placed by both (`sides` of two SMs timing the same lines) placed on the same side: near 1
    for two SMs of one partition, near 0 for SMs of different partitions (each one's far lines the other's near ones);
    NaN where no line is placed by both."""
    both = (a >= 0) & (b >= 0)
    return float((a[both] == b[both]).mean()) if both.any() else math.nan
