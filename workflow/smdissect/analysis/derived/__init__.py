"""Figures a category derives from several points of its sweeps (cache levels, knees, fits, ratios): one module per
category, found here by the CATEGORY it declares, with the metrics it gives (METRICS: names, or fnmatch patterns
where a sweep decides how many, as level*_latency) and the paper rows it ties."""

from __future__ import annotations

import fnmatch
import functools
from types import ModuleType
from typing import Protocol

import pandas as pd

from ...core.catalog import Case
from ...core.categories import declared
from ...core.errors import SmdissectError
from ..figure_model import Figure


class Deriver(Protocol):
    """A category's derived figures from its tables, its generic figures and its manifest cases by id."""

    def __call__(
        self, frames: dict[str, pd.DataFrame], generic: list[Figure], cases: dict[str, Case], /
    ) -> list[Figure]: ...


@functools.cache
def modules() -> dict[str, ModuleType]:
    """Every deriver module of this package by the category it declares (CATEGORY); helpers declare none."""
    return declared(__name__, __path__)


def declares(category: str, metric: str) -> bool:
    """Whether a category's deriver declares `metric` among those it gives (no deriver declares any)."""
    module = modules().get(category)
    return module is not None and any(fnmatch.fnmatchcase(metric, m) for m in module.METRICS)


def figures(
    category: str, frames: dict[str, pd.DataFrame], generic: list[Figure], cases: dict[str, Case]
) -> list[Figure]:
    """The derived figures of a category (none without a deriver); a figure whose metric its deriver does not
    declare is a one-line error."""
    module = modules().get(category)
    if module is None:
        return []
    derive: Deriver = module.figures
    made = derive(frames, generic, cases)
    undeclared = sorted({f.metric for f in made if not declares(category, f.metric)})
    if undeclared:
        raise SmdissectError(
            f"{module.__name__} gives metrics it does not declare: {', '.join(undeclared)}: add them to its METRICS"
        )
    return made
