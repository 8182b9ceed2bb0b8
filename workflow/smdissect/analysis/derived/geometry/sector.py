"""The L1's fill granularity of the geometry category (l1_sector): per stride the cold lap's bytes per miss, over the
strides below a sector the fill granularity with the share of misses at its starts, the chased L1-hit latency and the
cold misses' latency; with the documented sector and line the other L1 and L2 figures compare to."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ....core.tables import parse_params
from ...figure_model import REFERENCE, Check, Figure
from ..samples import keep, make, samples

MISS = 2.0  # a cold-lap load is an L1 miss where it takes over twice the chased L1-hit latency
SECTOR, LINE = 32, 128  # bytes: Nsight Compute Kernel Profiling Guide, "Memory Tables": 4 sectors of 32 B per line
ON_SECTOR = 0.95  # share of the fine strides' cold misses that must fall at multiples of the granularity
DOCUMENTED = "Nsight Compute Kernel Profiling Guide (a line is 128 B, four 32 B sectors)"


@dataclass(frozen=True)
class ColdLap:
    """The cold laps of one l1_sector stride: its chased L1-hit samples, each launch's cold-lap latencies (launch x
    load), which loads missed, each launch's miss share and bytes per miss, and each load's byte offset from the
    chain's start."""

    stride: float
    params: str
    hits: np.ndarray
    grid: np.ndarray
    missed: np.ndarray
    shares: np.ndarray
    per_miss: np.ndarray
    offsets: np.ndarray

    @property
    def hit(self) -> float:
        """The L1-hit latency: the median of the chased loads."""
        return float(np.median(self.hits))


def cold_lap(raw: pd.DataFrame, params: str, loads: pd.DataFrame) -> ColdLap:
    """One stride's cold lap: a load is a miss where it takes over MISS times the stride's L1-hit latency."""
    stride = float(parse_params(params)["stride_b"])
    hits = samples(raw, "l1_sector", "latency", params)
    x = loads.sort_values("repeat")["value"].to_numpy(float)
    per = int(loads["iterations"].iloc[0])
    grid = x[: len(x) // per * per].reshape(-1, per)
    missed = grid > MISS * float(np.median(hits))
    shares = missed.mean(axis=1)
    return ColdLap(stride, params, hits, grid, missed, shares, stride / shares[shares > 0], np.arange(per) * stride)


def sector(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per stride: the cold lap's miss share and bytes per miss; over the fine strides the fill granularity (sector),
    with the share of misses at its starts; the chased L1-hit latency and the cold misses' latency."""
    loads = raw[(raw["case"] == "l1_sector") & (raw["metric"] == "load_latency")]
    if loads.empty:
        return []
    laps = [cold_lap(raw, str(params), g) for params, g in loads.groupby("params", sort=False)]
    fine = [c for c in laps if c.stride < SECTOR and len(c.per_miss)]
    method = methods.get("l1_sector", "")
    pts = tuple(loads["params"].unique())
    return keep([*(bytes_per_miss(c, method) for c in laps), granularity(fine, methods), *latencies(laps, pts, method)])


def bytes_per_miss(c: ColdLap, method: str) -> Figure | None:
    """One stride's bytes per cold miss: the stride over each launch's miss share."""
    per = c.grid.shape[1]
    return make(
        "l1_sector",
        "bytes_per_miss",
        "B",
        f"L1 bytes per cold miss at stride {c.stride:g} B",
        lambda v: v,
        [c.per_miss],
        f"stride / the share of the cold lap's {per} loads over {MISS:g}x the L1-hit latency ({c.hit:.4g} "
        f"cycles), per launch ({len(c.grid)}); median {np.median(c.shares):.3g} of the loads missed",
        [c.params],
        method,
        c.params,
    )


def latencies(laps: list[ColdLap], pts: tuple[str, ...], method: str) -> list[Figure | None]:
    """The chased L1-hit latency and the cold misses' latency, over every stride."""
    return [
        make(
            "l1_sector",
            "hit_latency",
            "cycle",
            "L1 hit latency (warmed .ca chase)",
            lambda v: v,
            [np.concatenate([c.hits for c in laps])],
            "the chased loads of every stride (3n L1 hits per launch)",
            pts,
            method,
        ),
        make(
            "l1_sector",
            "miss_latency",
            "cycle",
            "L1 cold-miss latency (L2 hit)",
            lambda v: v,
            [np.concatenate([c.grid[c.missed] for c in laps])],
            f"every cold-lap load over {MISS:g}x the L1-hit latency, all strides",
            pts,
            method,
        ),
    ]


def granularity(fine: list[ColdLap], methods: dict[str, str]) -> Figure | None:
    """The L1's fill granularity: bytes per miss over the strides below a sector, checked against the documented
    sector and by where the misses fall (each at a multiple of it)."""
    if not fine:
        return None
    fig = make(
        "l1_sector",
        "sector_bytes",
        "B",
        "L1 fill granularity (sector size)",
        lambda v: v,
        [np.concatenate([f.per_miss for f in fine])],
        f"bytes per cold miss at strides {', '.join(f'{f.stride:g}' for f in fine)} B (each launch's stride / miss "
        "share)",
        [f.params for f in fine],
        methods.get("l1_sector", ""),
    )
    if fig is None:
        return None
    unit = max(1, round(fig.value))
    on = sum(int(f.missed[:, f.offsets % unit == 0].sum()) for f in fine)
    share = on / max(1, sum(int(f.missed.sum()) for f in fine))
    placed = Check(
        "miss offsets",
        "agree" if share >= ON_SECTOR else "disagree",
        f"{share:.1%} of the cold misses at a multiple of {unit} B from the chain's start (at least {ON_SECTOR:.0%})",
    )
    documented = Check(
        "documented",
        "agree" if abs(fig.value - SECTOR) <= 0.1 * SECTOR else "disagree",
        f"{fig.value:.4g} B vs the {SECTOR} B sector of the {DOCUMENTED}",
        evidence=REFERENCE,
    )
    fig.checks = [placed, documented]
    return fig
