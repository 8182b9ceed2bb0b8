"""Median and spread of samples: the one way figures, charts and pages summarise the samples of each point."""

from __future__ import annotations

import pandas as pd


def summary(rows: pd.DataFrame, by: list[str], sort: bool = True) -> pd.DataFrame:
    """Per group of `by` (sorted, or in first-seen order): the median of its `value`s, their spread (max - min) and
    how many there are, as the columns `value`, `spread` and `samples` after the group's keys."""
    grouped = rows.groupby(by, sort=sort, dropna=False)["value"]
    out = grouped.agg(value="median", low="min", high="max", samples="size").reset_index()
    return out.assign(spread=out["high"] - out["low"])[[*by, "value", "spread", "samples"]]
