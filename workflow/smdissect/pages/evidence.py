"""What a page states and the samples it draws: a category's figures selected and shown with their status, the
medians of the points a chart plots, and the planned points that were not measured."""

from __future__ import annotations

import json

import pandas as pd

from ..core import stats, tables
from ..core.tables import FIGURE_STATUSES
from .markup import badge, empty, number, share, table

STATUS_COLUMNS = ("latency status", "peak status")  # columns `readable` turns into badges (HTML)


def param(params: object, key: str, default: object = None) -> object:
    """One value of a canonical-JSON params string."""
    try:
        return tables.parse_params(str(params)).get(key, default)
    except (json.JSONDecodeError, AttributeError):
        return default


def points(raw: pd.DataFrame | None, cases: list[str], metric: str, keys: list[str]) -> pd.DataFrame:
    """Median and spread (max - min) per (case, params) of one metric of `cases`, and the named parameters as numeric
    columns; sorted by case, then those parameters."""
    none = pd.DataFrame(columns=["case", "params", "value", "spread", *keys])
    if raw is None or raw.empty:
        return none
    rows = raw[raw["case"].isin(cases) & (raw["metric"] == metric)]
    if rows.empty:
        return none
    out = stats.summary(rows, ["case", "params"]).drop(columns="samples")
    for key in keys:
        out[key] = pd.to_numeric(out["params"].map(lambda p, k=key: param(p, k)), errors="coerce")
    return out.sort_values(["case", *keys]).reset_index(drop=True)


def figures_of(
    frames: dict[str, pd.DataFrame],
    cases: tuple[str, ...] = (),
    metrics: tuple[str, ...] = (),
    kinds: tuple[str, ...] = (),
) -> pd.DataFrame:
    """The category's figures (frames['figures']) of the given cases, metrics and kinds (each: all when empty)."""
    df = frames.get("figures")
    if df is None or df.empty:
        return pd.DataFrame(columns=tables.SCHEMAS["figures"].names)
    keep = pd.Series(True, index=df.index)
    for column, wanted in (("case", cases), ("metric", metrics), ("kind", kinds)):
        if wanted:
            keep &= df[column].isin(wanted)
    return df[keep]


def shown(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows with a value, its resolution, spread and status, as a page shows them: the value as a person writes it
    (to its resolution), the spread as a share of it, the status as a badge."""
    return rows.assign(
        value=[number(v, resolution=r) for v, r in zip(rows["value"], rows["resolution"], strict=True)],
        spread=[share(sp, v) for sp, v in zip(rows["spread"], rows["value"], strict=True)],
        status=rows["status"].map(badge),
    )


def figure_rows(
    figures: pd.DataFrame,
    columns: tuple[str, ...] = ("figure", "value", "unit", "spread", "status", "reason", "method"),
) -> pd.DataFrame:
    """Figures as display rows: value to 4 significant figures, spread as a share, the status as a badge."""
    return shown(figures)[list(columns)]


def figure_table(
    figures: pd.DataFrame, columns: tuple[str, ...] = ("figure", "value", "unit", "spread", "status", "reason")
) -> str:
    """Figures as a table with their status badges (a view's way to state numbers), or why there are none."""
    if figures.empty:
        return empty("no figures: not measured on this GPU")
    return table(figure_rows(figures, columns), raw=("status",))


def headline_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Headline or key-finding rows (headlines.table) for display: values as a person writes them, badges; the
    paper's figures (another GPU's) are on compare-paper.html only."""
    return shown(rows).drop(columns=["figure", "resolution", "paper_sm120"], errors="ignore")


def readable(df: pd.DataFrame, spreads: dict[str, str], values: tuple[str, ...] = ()) -> pd.DataFrame:
    """A table of figures for display: each `spreads` value column and its spread column (as a share of it), the
    other `values` columns, as a person writes numbers; statuses as badges."""
    if df.empty:
        return df
    out = df.copy()
    for value, spread in spreads.items():
        out[spread] = [share(sp, v) for sp, v in zip(df[spread], df[value], strict=True)]
    for column in (*spreads, *values):
        out[column] = df[column].map(number)
    for column in (c for c in df.columns if "status" in c):
        out[column] = df[column].map(lambda st: badge(st) if st else "")
    return out


def status_counts(figures: pd.DataFrame) -> dict[str, int]:
    """How many figures have each status, in FIGURE_STATUSES order."""
    counts = figures["status"].value_counts() if len(figures) else pd.Series(dtype=int)
    return {s: int(counts.get(s, 0)) for s in FIGURE_STATUSES}


def counts_line(figures: pd.DataFrame) -> str:
    """'N figures: a verified, b unverified, c contradicted' as a paragraph."""
    counts = status_counts(figures)
    parts = ", ".join(f"{badge(s)} <b>{n}</b>" for s, n in counts.items())
    return f'<p class="counts">{len(figures)} figures: {parts}</p>'


def not_measured(frames: dict[str, pd.DataFrame], cases: list[str]) -> str:
    """The planned points of `cases` that were static or failed, with the reason ('' where all were measured)."""
    status = frames.get("status")
    if status is None or status.empty:
        return ""
    rest = status[status["case"].isin(cases) & (status["status"] != "measured")]
    return table(rest[["case", "params", "status", "reason"]]) if len(rest) else ""
