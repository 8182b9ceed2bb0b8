"""chase_near_far: per SM slot, the latency modes of its single L2 loads (clusters, near and far latency, shares,
separation, line agreement), its timing overhead, and how alike two slots place the same lines."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ... import latency_modes
from ...figure_model import Check, Figure
from ..samples import from_values, keep, samples
from .common import param, with_checks
from .slots import SlotFigures, slot, tied

PARTITION = 0.9  # two SMs timing the same lines: one partition places >= 90% of them alike, two <= 10%


def near_far(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per SM slot of chase_near_far: what latency_modes finds in all its loads (clusters, near and far latency, far
    and slow share, separation, line agreement), its timing overhead, and for every slot after the first, the share
    of lines it places on the same side of the cut as the first slot."""
    loads = raw[(raw["case"] == "chase_near_far") & (raw["metric"] == "load_latency")]
    if loads.empty:
        return []
    out: list[Figure | None] = []
    order = sorted(loads["params"].unique(), key=lambda p: (param(p, "footprint_kb"), param(p, "sm_slot")))
    first: tuple[str, np.ndarray] | None = None
    for params in order:
        s, placed = slot(loads, params, f"SM slot {int(param(params, 'sm_slot'))}", methods)
        hits = f"the L2 hits (loads within {latency_modes.SLOW:g}x the median {s.modes.median:.4g})"
        tied_checks = tied(s.modes)  # two clusters stand only where the lines set them
        out += [with_checks(tied_checks, f) for f in _cluster_figures(s, hits)] + _spread_figures(s, hits)
        if first is None:
            first = (params, placed)
        elif len(placed) == len(first[1]) and param(params, "footprint_kb") == param(first[0], "footprint_kb"):
            out.append(_same_sides(s, first, placed))
        out.append(_overhead(raw, s))
    return keep(out)


def _cluster_figures(s: SlotFigures, hits: str) -> list[Figure | None]:
    """A slot's clusters, near and far latency and far share: what two clusters claim."""
    m = s.modes
    return [
        s.figure(
            "clusters",
            "count",
            "L2 latency clusters",
            m.clusters,
            f"two where the least-variance split of {hits} leaves each side >= "
            f"{latency_modes.MIN_SHARE:.0%} of them, >= {latency_modes.SEPARATION:g} rms widths and >= "
            f"{latency_modes.MIN_GAP:.0%} apart",
        ),
        s.figure(
            "near_latency",
            "cycle",
            "L2 near latency",
            m.near,
            "mean of the lower cluster" if m.clusters == 2 else f"one cluster: the mean of all {hits}",
            "near",
        ),
        s.figure(
            "far_latency",
            "cycle",
            "L2 far latency",
            m.far if m.clusters == 2 else math.nan,
            "mean of the upper cluster",
            "far",
        ),
        s.figure(
            "far_share",
            "fraction",
            "L2 far share",
            m.far_share,
            f"the upper cluster's share of {hits} (0 with one cluster)",
            "far_share",
        ),
    ]


def _spread_figures(s: SlotFigures, hits: str) -> list[Figure | None]:
    """A slot's slow share, cluster separation and line agreement: how its loads spread and whether lines stay put."""
    m = s.modes
    return [
        s.figure(
            "slow_share",
            "fraction",
            "L2 slow share",
            m.slow_share,
            f"share of all loads beyond {latency_modes.SLOW:g}x the median (L2 misses: DRAM, TLB)",
            "slow_share",
        ),
        s.figure(
            "separation",
            "rms widths",
            "L2 cluster separation",
            m.separation,
            f"gap between the two sides of the least-variance cut at {m.cut:.4g} cycles over their rms "
            "width (one mode cut in two gives 1.6-3.5)",
        ),
        s.figure(
            "line_agreement",
            "fraction",
            "L2 line agreement",
            m.agreement if m.clusters == 2 else math.nan,
            "share of lines on the same side of the cut in every launch (a latency set by the line's "
            f"address, its partition, needs >= {latency_modes.ADDRESS_BOUND:g})",
        ),
    ]


def _same_sides(s: SlotFigures, first: tuple[str, np.ndarray], placed: np.ndarray) -> Figure | None:
    """The share of the lines a slot places on the same side of the cut as the first slot (`first`: its point and
    sides), checked as one partition (about 1) or two (about 0)."""
    ref, same = int(param(first[0], "sm_slot")), latency_modes.same_sides(first[1], placed)
    verdict = "agree" if same >= PARTITION or same <= 1 - PARTITION else "disagree"
    sides = (
        [
            Check(
                "partitions",
                verdict,
                f"{same:.0%} of the lines placed alike: one partition needs >= "
                f"{PARTITION:.0%}, two <= {1 - PARTITION:.0%}",
            )
        ]
        if math.isfinite(same)
        else []
    )
    return with_checks(
        sides,
        s.figure(
            "same_sides",
            "fraction",
            f"L2 same sides as slot {ref}",
            same,
            "of the lines both slots place (every slot times the same lines), the "
            f"share placed on the same side of the cut as slot {ref}: about 1 in "
            f"slot {ref}'s partition, about 0 in the other",
        ),
    )


def _overhead(raw: pd.DataFrame, s: SlotFigures) -> Figure | None:
    """A slot's timing overhead: the fixed cost subtracted from every timed load, per launch."""
    return from_values(
        "chase_near_far",
        "timing_overhead",
        "cycle",
        f"timing overhead ({s.where})",
        samples(raw, "chase_near_far", "timing_overhead", s.params),
        "the fixed cost subtracted from every timed load: per launch, the timed loads' mean "
        "less its chased loads' mean (median and range over launches)",
        [s.params],
        s.method,
    )
