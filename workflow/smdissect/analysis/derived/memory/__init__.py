"""Derived figures of the memory category: the pointer-chase staircase's levels (each level's latency, the capacity
where it ends), the L2 latency modes of chase_near_far (latency_modes), shared-memory latency by width, broadcast and
the bank-conflict penalty, the memory-level-parallelism knee, and the bandwidth peaks against the datasheet and the
library copies.

A figure's `metric` names what it is. The one figure that stands for a case's `paper` figure carries the case's first
metric (the checks and the paper table look figures up by it): `latency` is the L1 hit latency of the random chase
(chase), the 32-bit LDS latency (smem_latency); every other level, width or statistic has a metric of its own."""

from __future__ import annotations

import pandas as pd

from ....core.catalog import Case
from ...figure_model import Figure
from ..samples import run_of
from .atomics import atomic_words
from .bandwidth import bandwidth
from .device import device_of
from .mlp import mlp
from .near_far import near_far
from .reports import check_reports
from .shared_memory import shared
from .staircase import staircase

CATEGORY = "memory"
METRICS = frozenset(
    {
        "clusters",
        "conflict_penalty",
        "dram_capacity",
        "dram_latency",
        "far_latency",
        "far_share",
        "knee",
        "l1_capacity",
        "l1_latency",
        "l2_capacity",
        "l2_latency",
        "latency",
        "latency_128bit",
        "latency_64bit",
        "latency_max_ways",
        "level*_capacity",  # a chase level past DRAM (levels.LEVELS names three): level4_latency, ...
        "level*_latency",
        "line_agreement",
        "near_latency",
        "of_datasheet",
        "over_memcpy_d2d",
        "over_torch_copy",
        "same_sides",
        "separation",
        "single_load_latency",
        "slow_share",
        "tail_latency",
        "timing_overhead",
    }
)  # every metric a figure of this deriver can have


def figures(frames: dict[str, pd.DataFrame], generic: list[Figure], cases: dict[str, Case]) -> list[Figure]:
    """Every derived figure of the memory category's run, each with its case's method from `cases`; the generic
    figures of what the device reports get their checks against it here (check_reports)."""
    raw = frames.get("raw")
    if raw is None or raw.empty:
        return []
    arch, gpu = run_of(raw)
    methods = {k: c.method for k, c in cases.items()}
    split = near_far(raw, methods)
    device = device_of(raw, split)
    check_reports(generic, device)
    chase = staircase(raw, device, methods) + split
    return (
        chase
        + atomic_words(raw, methods)
        + shared(raw, methods)
        + mlp(raw, methods)
        + bandwidth(raw, generic, cases, arch, gpu)
    )
