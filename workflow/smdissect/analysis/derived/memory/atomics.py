"""The global atomics' words: the L2 home partition of each word, as latency_modes finds it over a point's words."""

from __future__ import annotations

import math

import pandas as pd

from ....core.tables import point_text
from ... import latency_modes
from ...figure_model import Figure
from ..samples import keep
from .common import with_checks
from .slots import slot, tied

ATOMIC_WORDS = ("atomic_add_global_latency", "atomic_add_system_latency", "atomic_cas_global_latency")  # per word


def atomic_words(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per point of a global atomic latency case (samples: 32 words' latencies per repeat): what latency_modes finds
    over the words (clusters, near and far latency, far share, word agreement), as chase_near_far's lines."""
    out: list[Figure | None] = []
    latency = raw[(raw["metric"] == "latency") & raw["case"].isin(ATOMIC_WORDS)]
    for (case, params), point in latency.groupby(["case", "params"], sort=True):
        s, _ = slot(point, str(params), point_text(str(params)), methods, "words")
        m, name = s.modes, f"{case} L2"
        two = m.clusters == 2
        figures = [
            s.figure("clusters", "count", f"{name} latency clusters", m.clusters, "as chase_near_far's loads"),
            s.figure(
                "near_latency",
                "cycle",
                f"{name} near latency",
                m.near,
                "mean of the lower cluster" if two else "one cluster: the mean of every word",
                "near",
            ),
            s.figure("far_latency", "cycle", f"{name} far latency", m.far if two else math.nan, "upper cluster", "far"),
            s.figure(
                "far_share",
                "fraction",
                f"{name} far share",
                m.far_share,
                "the upper cluster's share of the words (0 with one cluster)",
                "far_share",
            ),
            s.figure(
                "line_agreement",
                "fraction",
                f"{name} word agreement",
                m.agreement if two else math.nan,
                "share of words on the same side of the cut in every repeat (a latency set by the word's address, "
                f"its L2 home, needs >= {latency_modes.ADDRESS_BOUND:g})",
            ),
        ]
        tied_checks = tied(m)
        out += [with_checks(tied_checks, f) for f in figures[:4]] + figures[4:]
    return keep(out)
