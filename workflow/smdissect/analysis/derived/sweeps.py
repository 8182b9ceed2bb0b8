"""What the derivers of figures over several points of a sweep share: a case's samples by point, a value derived
from the points' medians with its spread over the repeats, and a derived figure standing on several points."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping

import numpy as np
import pandas as pd

from ...core.tables import parse_params
from ..figure_model import Figure


def param(params: str, key: str) -> object:
    """One value of a canonical-JSON point (None where absent)."""
    return parse_params(params).get(key)


def series(raw: pd.DataFrame, case: str, metric: str) -> dict[str, np.ndarray]:
    """Point -> the samples of one metric of one case at it, in repeat order (sweep order of the points)."""
    if raw.empty:
        return {}
    rows = raw[(raw["case"] == case) & (raw["metric"] == metric)]
    order = "repeat" if "repeat" in rows.columns else "value"
    return {str(p): g.sort_values(order)["value"].to_numpy(float) for p, g in rows.groupby("params", sort=False)}


def unit_of(raw: pd.DataFrame, case: str, metric: str) -> str:
    """The unit a case recorded a metric in ('' where it did not)."""
    rows = raw[(raw["case"] == case) & (raw["metric"] == metric)]
    return str(rows["unit"].iloc[0]) if len(rows) and "unit" in rows.columns else ""


def medians(points: Mapping[Hashable, np.ndarray]) -> dict[Hashable, float]:
    """The median of every point's samples."""
    return {k: float(np.median(v)) for k, v in points.items()}


def robust(
    fn: Callable[[dict[Hashable, float]], float | None], points: Mapping[Hashable, np.ndarray]
) -> tuple[float | None, float]:
    """`fn` of the points' medians, and its spread: max - min of `fn` over the repeats (repeat r of every point
    together, so a figure derived over several points spreads as one launch's worth of each would make it)."""
    value = fn(medians(points))
    repeats = min((len(v) for v in points.values()), default=0)
    each = [fn({k: float(v[r]) for k, v in points.items()}) for r in range(repeats)]
    each = [e for e in each if e is not None and np.isfinite(e)]
    return value, (max(each) - min(each) if each else 0.0)


def ratio_spread(top: np.ndarray, bottom: np.ndarray) -> float:
    """The spread of a ratio of two sample sets from their extremes: max(top)/min(bottom) - min(top)/max(bottom)."""
    if not len(top) or not len(bottom) or min(bottom) <= 0 or max(bottom) <= 0:
        return float("nan")
    return float(max(top) / min(bottom) - min(top) / max(bottom))


def derived(
    case: str,
    metric: str,
    unit: str,
    name: str,
    value: float,
    spread: float,
    samples: int,
    derivation: str,
    points: Iterable[str],
    params: str = "",
    method: str = "",
) -> Figure:
    """A figure derived over one or several points of a case (kind 'derived')."""
    return Figure(
        case=case,
        metric=metric,
        unit=unit,
        kind="derived",
        name=name,
        value=float(value),
        spread=float(spread),
        samples=int(samples),
        derivation=derivation,
        params=params,
        points=tuple(dict.fromkeys(points)),
        method=method,
    )


def method_of(generic: Iterable[Figure], case: str) -> str:
    """The method text a case's generic figures carry (its manifest `method`)."""
    return next((f.method for f in generic if f.case == case and f.method), "")


def num(value: float) -> str:
    """A number in a derivation text: 4 significant figures."""
    return f"{value:.4g}"


def slope(xs: Iterable[float], ys: Iterable[float]) -> float | None:
    """The least-squares slope of ys over xs (None with fewer than two distinct xs)."""
    x, y = np.asarray(list(xs), float), np.asarray(list(ys), float)
    return float(np.polyfit(x, y, 1)[0]) if len(set(x)) > 1 else None


def with_papers(found: list[Figure], papers: Mapping[str, str]) -> list[Figure]:
    """The figures, each named in `papers` carrying that reference/ row's id (the paper figure it stands for)."""
    for f in found:
        f.paper = papers.get(f.name, f.paper)
    return found
