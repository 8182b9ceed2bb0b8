"""Derived figures of the geometry category: each TLB level's latency, reach and miss penalty (tlb), the L1's fill
granularity (sector), capacity per shared-memory carveout, line size and ways (l1), the L2's bandwidth level and
fall-off footprint, camping ratios, persisting gain and address map (l2), and the other caches and store and prefetch
operators (caches). Levels are memory's: runs of at least MIN_POINTS consecutive points within NEAR of their median
(derived.memory.levels)."""

from __future__ import annotations

import pandas as pd

from ....core.catalog import Case
from ...figure_model import Figure
from . import caches, l1, l2, sector, tlb

CATEGORY = "geometry"
METRICS = frozenset(
    {
        "bandwidth",
        "bytes_per_miss",
        "camping_ratio",
        "constant_memory",
        "falloff_mb",
        "far_share",
        "hit_latency",
        "hit_share_past_ways",
        "interleave_bytes",
        "l1_capacity",
        "l1_hit_share",
        "latency_saved",
        "level*_capacity",
        "level*_latency",
        "line_bytes",
        "miss_latency",
        "per_address",
        "persisting_gain",
        "reach_at_least",
        "same_sides",
        "sector_bytes",
        "tlb*_entries",
        "tlb*_miss_penalty",
        "tlb*_reach",
        "tlb_steps",
        "ways",
        "ways_at_least",
    }
)  # every metric a figure of this deriver can have: tlb*_ per miss step and level*_ per level a sweep shows

PARTS = (tlb.tlb, sector.sector, l1.capacity, l1.ways, l2.l2, l2.address_map, *caches.PARTS)


def figures(frames: dict[str, pd.DataFrame], generic: list[Figure], cases: dict[str, Case]) -> list[Figure]:
    """Every derived figure of the geometry category's run, each case's method from its manifest case."""
    raw = frames.get("raw")
    if raw is None or raw.empty:
        return []
    methods = {k: c.method for k, c in cases.items()}
    return [f for part in PARTS for f in part(raw, methods)]
