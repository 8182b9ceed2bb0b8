"""A cluster case's points by cluster size, and a figure summarising one value per size: what the barrier, DSMEM and
placement figures share."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ....core.tables import parse_params
from ...figure_model import Figure
from .. import samples as s

MIN_CLUSTER = 2  # a barrier summary is over clusters of CTAs on several SMs (cluster=1 is one CTA on one SM)


def by_size(raw: pd.DataFrame, case: str, metric: str) -> dict[int, tuple[str, np.ndarray]]:
    """cluster size -> (params, samples) of one metric of a case swept over `cluster` only."""
    out = {}
    for params in s.params_of(raw, case, metric):
        point = parse_params(params)
        if set(point) == {"cluster"}:
            out[int(point["cluster"])] = (params, s.samples(raw, case, metric, params))
    return dict(sorted(out.items()))


def over_sizes(
    case: str,
    metric: str,
    unit: str,
    name: str,
    per_size: dict[int, tuple[str, float]],
    samples: int,
    derivation: str,
    method: str,
) -> Figure | None:
    """A figure summarising one value per cluster size: their median, spread the range over the sizes."""
    if not per_size:
        return None
    values = np.array([v for _, v in per_size.values()])
    sizes = ", ".join(str(n) for n in per_size)
    return Figure(
        case=case,
        metric=metric,
        unit=unit,
        kind="derived",
        name=name,
        value=float(np.median(values)),
        spread=float(values.max() - values.min()),
        samples=samples,
        derivation=f"{derivation}, median over cluster sizes {sizes} (spread: their range)",
        points=tuple(p for p, _ in per_size.values()),
        method=method,
    )
