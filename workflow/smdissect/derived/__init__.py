"""Figures a category derives from several points of its sweeps (cache levels, knees, fits, ratios), one module
per category, registered here by name."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from ..figure_model import Figure
from . import (  # async_: a keyword
    async_,
    attention,
    cluster,
    control,
    gemm,
    geometry,
    interconnect,
    launch,
    memory,
    pipelines,
    power,
    scheduler,
    sync,
    tensorcore,
)

Deriver = Callable[[dict[str, pd.DataFrame], list[Figure]], list[Figure]]
DERIVERS: dict[str, Deriver] = {
    "async": async_.figures,
    "attention": attention.figures,
    "cluster": cluster.figures,
    "control": control.figures,
    "gemm": gemm.figures,
    "geometry": geometry.figures,
    "interconnect": interconnect.figures,
    "launch": launch.figures,
    "memory": memory.figures,
    "pipelines": pipelines.figures,
    "power": power.figures,
    "scheduler": scheduler.figures,
    "sync": sync.figures,
    "tensorcore": tensorcore.figures,
}


def figures(category: str, frames: dict[str, pd.DataFrame], generic: list[Figure]) -> list[Figure]:
    """The derived figures of a category from its tables and its generic figures (none without a deriver)."""
    derive = DERIVERS.get(category)
    return derive(frames, generic) if derive else []
