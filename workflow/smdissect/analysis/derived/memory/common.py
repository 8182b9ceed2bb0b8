"""What several memory topics share: one axis of a point, and a figure carrying the checks its deriver made."""

from __future__ import annotations

import math

from ....core.tables import parse_params
from ...figure_model import Check, Figure


def param(params: str, key: str) -> float:
    """One axis of a canonical-JSON point (NaN where it lacks it)."""
    return float(parse_params(params).get(key, math.nan))


def with_checks(checks: list[Check], figure: Figure | None) -> Figure | None:
    """`figure` carrying checks its deriver made (the generic checks are added to them)."""
    if figure is not None:
        figure.checks = [*checks, *figure.checks]
    return figure
