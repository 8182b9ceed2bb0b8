"""Median and spread of samples: the one way figures, charts and pages summarise the samples of each point."""

from __future__ import annotations

import pandas as pd


def summary(rows: pd.DataFrame, by: list[str], sort: bool = True) -> pd.DataFrame:
    """Per group of `by` (sorted, or in first-seen order): the median of its `value`s, their spread (max - min) and
    how many there are, as the columns `value`, `spread` and `samples` after the group's keys."""
    grouped = rows.groupby(by, sort=sort, dropna=False)["value"]
    out = grouped.agg(value="median", low="min", high="max", samples="size").reset_index()
    return out.assign(spread=out["high"] - out["low"])[[*by, "value", "spread", "samples"]]


def inner_spread(rows: pd.DataFrame, by: list[str]) -> dict[tuple, float]:
    """Per group of `by`: the spread of its `value`s less the lowest and the highest where there are 5 or more (one
    launch's hiccup cannot move their median past its neighbour), else max - min."""

    def inner(values: pd.Series) -> float:
        v = sorted(values)
        return float(v[-2] - v[1]) if len(v) >= 5 else float(v[-1] - v[0])

    return {k if isinstance(k, tuple) else (k,): x for k, x in rows.groupby(by, sort=False)["value"].agg(inner).items()}
