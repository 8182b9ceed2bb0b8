"""The derivations a row of the paper's map (or a field of the model) may take over this run's figures: ratios,
sums, medians and the like, and two counts over several figures (formats sharing a pipeline, co-issuing pairs)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .derived.pipelines import coissue as pipes

SAME_LATENCY = 0.05  # formats_sharing: a format shares the pipeline within this share of the first one's latency


@dataclass(frozen=True)
class Formula:
    """A derivation: how many refs it takes (None: any), whether a ref may stand for several figures, the value from
    the refs' figures, how it reads ({0}.. the refs, {all} all of them), and whether it counts over the refs this run
    measured (all but the first may be absent)."""

    arity: int | None
    many: bool
    compute: Callable[[list[pd.DataFrame]], float]
    text: str
    partial: bool = False


def _value(found: pd.DataFrame) -> float:
    return float(found["value"].iloc[0])


def _values(frames: list[pd.DataFrame]) -> list[float]:
    return [float(v) for f in frames for v in f["value"]]


def formats_sharing(frames: list[pd.DataFrame]) -> float:
    """How many of the measured formats' latencies lie within SAME_LATENCY of the first one's."""
    first = _value(frames[0])
    return float(sum(abs(_value(f) - first) <= SAME_LATENCY * first for f in frames if len(f)))


def coissuing_pairs(frames: list[pd.DataFrame]) -> float:
    """Pairs of two different instruction classes whose sharing index is under coissue.PARTLY_INDEX."""
    pairs = [pipes.pair_figure_names(name) for f in frames for name in f.loc[f["value"] < pipes.PARTLY_INDEX, "figure"]]
    return float(sum(1 for p in pairs if p is not None and p[0] != p[1]))


FORMULAS: dict[str, Formula] = {
    "ratio": Formula(2, False, lambda f: _value(f[0]) / _value(f[1]), "{0} / {1}"),
    "percent": Formula(2, False, lambda f: 100 * _value(f[0]) / _value(f[1]), "100 x {0} / {1}"),
    "difference": Formula(2, False, lambda f: _value(f[0]) - _value(f[1]), "{0} - {1}"),
    "sum": Formula(2, False, lambda f: _value(f[0]) + _value(f[1]), "{0} + {1}"),
    "scaled": Formula(1, False, lambda f: _value(f[0]), "{0}"),
    "efficiency_over": Formula(3, False, lambda f: _value(f[0]) / _value(f[1]) / _value(f[2]), "({0} / {1}) / {2}"),
    "median": Formula(None, False, lambda f: float(np.median(_values(f))), "median of {all}"),
    "min": Formula(None, True, lambda f: min(_values(f)), "lowest of {all}"),
    "max": Formula(None, True, lambda f: max(_values(f)), "highest of {all}"),
    "spread": Formula(1, False, lambda f: float(f[0]["spread"].iloc[0]), "max - min of the samples of {0}"),
    "formats_sharing": Formula(
        None,
        False,
        formats_sharing,
        f"formats within {SAME_LATENCY:.0%} of the first's latency among those measured of {{all}}",
        partial=True,
    ),
    "coissuing_pairs": Formula(
        None,
        True,
        coissuing_pairs,
        f"pairs of two classes under a sharing index of {pipes.PARTLY_INDEX:g} among {{all}}",
        partial=True,
    ),
}
