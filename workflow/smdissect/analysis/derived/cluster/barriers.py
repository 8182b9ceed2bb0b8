"""The cluster barrier's cost over cluster sizes, its growth from the smallest to the largest cluster and what its
release semantics add (cluster_barrier, cluster_barrier_relaxed)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...figure_model import Figure
from .. import samples as s
from .sizes import MIN_CLUSTER, by_size, over_sizes

BARRIERS = {"cluster_barrier": "arrive (release) + wait", "cluster_barrier_relaxed": "arrive.relaxed + wait"}


def barriers(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Each barrier's cost over cluster sizes >= MIN_CLUSTER, its growth from the smallest to the largest cluster, and
    what the release semantics add (arrive minus arrive.relaxed)."""
    out: list[Figure | None] = []
    found = {c: {n: v for n, v in by_size(raw, c, "latency").items() if n >= MIN_CLUSTER} for c in BARRIERS}
    for case, what in BARRIERS.items():
        sizes = found[case]
        if not sizes:
            continue
        medians = {n: (p, float(np.median(v))) for n, (p, v) in sizes.items()}
        out.append(
            over_sizes(
                case,
                "latency",
                "cycle",
                f"{case} latency over cluster sizes",
                medians,
                sum(len(v) for _, v in sizes.values()),
                f"cycles per back-to-back {what} of every thread of every CTA (per size: the median of its samples)",
                methods.get(case, ""),
            )
        )
        if len(sizes) >= 2:
            n0, n1 = min(sizes), max(sizes)
            (p0, v0), (p1, v1) = sizes[n0], sizes[n1]
            out.append(
                s.make(
                    case,
                    "growth",
                    "cycle",
                    f"{case} growth from {n0} to {n1} CTAs per cluster",
                    lambda a, b: b - a,
                    [v0, v1],
                    f"latency at cluster={n1} minus at cluster={n0}",
                    [p0, p1],
                    methods.get(case, ""),
                )
            )
    common = sorted(set(found["cluster_barrier"]) & set(found["cluster_barrier_relaxed"]))
    release = {
        n: (
            found["cluster_barrier"][n][0],
            float(np.median(found["cluster_barrier"][n][1]) - np.median(found["cluster_barrier_relaxed"][n][1])),
        )
        for n in common
    }
    out.append(
        over_sizes(
            "cluster_barrier",
            "release_cost",
            "cycle",
            "cluster barrier release cost (arrive minus arrive.relaxed)",
            release,
            sum(len(found[c][n][1]) for c in BARRIERS for n in common),
            "cluster_barrier minus cluster_barrier_relaxed at the same size (the MEMBAR.ALL.GPU the release form adds)",
            methods.get("cluster_barrier", ""),
        )
    )
    return s.keep(out)
