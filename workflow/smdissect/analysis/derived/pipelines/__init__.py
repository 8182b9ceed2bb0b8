"""Figures the pipelines category derives over several points: the ILP knees of the instruction chains, the co-issue
pair model and the pipe topology it supports, the subnormal-operand penalties and the dispatch latency and slope.
The helpers are pure functions of the raw table; the view renders their figures, the tests call them directly."""

from __future__ import annotations

import pandas as pd

from ....core.catalog import Case
from ...figure_model import Figure
from ..chains import knee_figures
from ..sweeps import with_papers
from .coissue import coissue_figures
from .dispatch import dispatch_figures
from .subnormal import subnormal_figures

CATEGORY = "pipelines"
METRICS = frozenset(
    {
        "dispatch",
        "dispatch_slope",
        "ilp_knee",
        "latency_penalty",
        "paired_total",
        "pipe_groups",
        "sharing_index",
        "slowdown_beyond_issue",
        "throughput_alone",
        "throughput_penalty",
    }
)  # every metric a figure of this deriver can have
PAPER = {"dispatch_iadd3 dispatch latency": "dispatch_latency_sm120"}  # reference/ rows a derived figure stands for


def figures(frames: dict[str, pd.DataFrame], generic: list[Figure], cases: dict[str, Case]) -> list[Figure]:
    """Every derived figure of the pipelines category."""
    raw = frames.get("raw", pd.DataFrame())
    if raw is None or raw.empty:
        return []
    found = (
        knee_figures(raw, generic)
        + coissue_figures(raw, generic)
        + subnormal_figures(raw, generic)
        + dispatch_figures(raw, generic)
    )
    return with_papers(found, PAPER)
