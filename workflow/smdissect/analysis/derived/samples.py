"""What the derivers share: the samples of one point of a raw table, the point of a generic figure, the run's arch
and GPU, and a derived figure made from the samples it stands on (its value from their medians, its spread the
range the samples allow)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from ...core import archs, catalog
from ...core.tables import point_text
from ..figure_model import Figure

Part = Callable[[pd.DataFrame, dict[str, str]], list[Figure]]


def of_parts(*parts: Part) -> Callable[[dict[str, pd.DataFrame], list[Figure], dict[str, catalog.Case]], list[Figure]]:
    """A category's deriver made of parts, each given the raw table and the method of each case with a generic
    figure (none without raw)."""

    def derive(frames: dict[str, pd.DataFrame], generic: list[Figure], cases: dict[str, catalog.Case]) -> list[Figure]:
        raw = frames.get("raw")
        if raw is None or raw.empty:
            return []
        methods = {f.case: f.method for f in generic}
        return [f for part in parts for f in part(raw, methods)]

    return derive


def samples(raw: pd.DataFrame, case: str, metric: str, params: str) -> np.ndarray:
    """Every sample of one metric of a case at one point (canonical-JSON params), in run order."""
    if raw is None or raw.empty:
        return np.array([])
    rows = raw[(raw["case"] == case) & (raw["metric"] == metric) & (raw["params"] == params)]
    return rows["value"].to_numpy(float)


def column(raw: pd.DataFrame, case: str, metric: str, params: str, name: str) -> np.ndarray:
    """Another column (e.g. clock_mhz) of the same samples as `samples`, in the same order."""
    rows = raw[(raw["case"] == case) & (raw["metric"] == metric) & (raw["params"] == params)]
    return rows[name].to_numpy(float)


def params_of(raw: pd.DataFrame, case: str, metric: str) -> list[str]:
    """The points of one metric of a case, in run order."""
    if raw is None or raw.empty:
        return []
    rows = raw[(raw["case"] == case) & (raw["metric"] == metric)]
    return list(dict.fromkeys(rows["params"]))


def point_of(generic: Iterable[Figure], case: str, metric: str) -> str | None:
    """The point a case's generic point or peak figure of `metric` was taken at, or None."""
    found = [f for f in generic if f.case == case and f.metric == metric and f.kind in ("point", "peak")]
    return found[0].params if found else None


def run_of(raw: pd.DataFrame) -> tuple[str, str]:
    """The arch and GPU of a one-run raw table (the arch from the GPU's model where the table lacks it)."""
    first = raw.iloc[0]
    gpu = str(first.get("gpu", "") or "")
    arch = str(first.get("arch", "") or "")
    if not arch or arch in ("nan", "None"):
        model = archs.gpu_model(gpu)
        arch = model.arch if model else ""
    return arch, gpu


def make(
    case: str,
    metric: str,
    unit: str,
    name: str,
    fn: Callable[..., float],
    parts: Sequence[np.ndarray],
    derivation: str,
    points: Iterable[str],
    method: str = "",
    params: str = "",
) -> Figure | None:
    """A derived figure: fn of the parts' medians; its spread the range of fn over the parts' extremes (each part at
    its min or max: for fn monotonic in each part, every value the samples allow); None where a part is empty or the
    value is not finite."""
    if not parts or any(len(p) == 0 for p in parts):
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(fn(*(float(np.median(p)) for p in parts)))
        corners = [float(fn(*c)) for c in itertools.product(*((float(p.min()), float(p.max())) for p in parts))]
    if not math.isfinite(value):
        return None
    corners = [c for c in corners if math.isfinite(c)]
    spread = max(corners) - min(corners) if corners else math.nan
    pts = tuple(dict.fromkeys(points))
    return Figure(
        case=case,
        metric=metric,
        unit=unit,
        kind="derived",
        name=name,
        value=value,
        spread=spread,
        samples=int(sum(len(p) for p in parts)),
        derivation=derivation,
        params=params or (pts[0] if len(pts) == 1 else ""),
        points=pts,
        method=method,
    )


def from_values(
    case: str,
    metric: str,
    unit: str,
    name: str,
    values: np.ndarray,
    derivation: str,
    points: Iterable[str],
    method: str = "",
    params: str = "",
) -> Figure | None:
    """A derived figure that is one value per sample (each sample transformed alone): their median and range."""
    values = np.asarray(values, float)
    values = values[np.isfinite(values)]
    return (
        make(case, metric, unit, name, lambda v: v, [values], derivation, points, method, params)
        if len(values)
        else None
    )


def at(params: str) -> str:
    """' at ilp=2, warps=16' for a point, '' for none."""
    text = point_text(params)
    return f" at {text}" if text else ""


def keep(found: Iterable[Figure | None]) -> list[Figure]:
    """The figures that could be made."""
    return [f for f in found if f is not None]
