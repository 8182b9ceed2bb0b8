"""Self-contained HTML reports: plain tables and inline-SVG charts, nothing fetched when the page opens."""

from __future__ import annotations

import html
import importlib
import json
import math
import numbers
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pandas as pd

from . import tables
from .files import write_text
from .tables import FIGURE_STATUSES, VERDICTS, point_text

if TYPE_CHECKING:
    import altair as alt

# Which pipeline stages produce each table: their skip reason explains an empty section.
STAGES: dict[str, tuple[str, ...]] = {
    "raw": ("run",),
    "stalls": ("profile", "parse"),
    "ncu": ("profile", "parse"),
    "pipes": ("profile", "parse"),
    "crossval": ("crossval",),
    "figures": ("figures",),
    "sass": ("sass",),
    "sass_checks": ("sass",),
    "status": ("run",),
    "controlcodes": ("sass",),
}

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1400px}
h1{margin-bottom:.2em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3} td.num{text-align:right;font-variant-numeric:tabular-nums}
table.prov th{font-weight:normal;color:#555}
.skipped{border:2px solid #c90;background:#fff6e0;padding:.5em 1em;margin:1em 0}
.skipped h2{margin-top:0;border:none} .empty{color:#777;font-style:italic}
td.v-agree{background:#d7f2d7} td.v-disagree{background:#f7d0d0;font-weight:bold}
td.v-not-applicable{background:#e6e6e6;color:#555}
span.s-verified,span.s-unverified,span.s-contradicted{padding:0 .4em;border-radius:3px;font-size:12px}
span.s-verified{background:#d7f2d7} span.s-unverified{background:#eee;color:#444}
span.s-contradicted{background:#f7d0d0;font-weight:bold}
code{font-size:12px}
header.nav{font-size:13px;border-bottom:1px solid #ccc;padding-bottom:.4em;margin-bottom:.6em}
header.nav a{margin-right:.6em} header.nav b{margin-right:.6em}
nav.toc{font-size:13px;background:#f7f7f7;padding:.3em .8em;display:inline-block}
nav.toc ol{margin:.2em 0;padding-left:1.4em;columns:2 24em;column-gap:2em}
p.lede{color:#444;max-width:1000px}
details{margin:.4em 0} summary{cursor:pointer;color:#0645ad}
table.sortable th{cursor:pointer} input.filter{font-size:12px;margin:.3em 0;width:22em}
"""

# Click a header of a sortable table to sort by it; type into a filter box to keep the rows that contain the text.
SCRIPT = """<script>
document.addEventListener('click',e=>{const th=e.target.closest('table.sortable th');if(!th)return;
const t=th.closest('table'),i=[...th.parentNode.children].indexOf(th),b=t.tBodies[0],d=th.dataset.dir==='a'?'d':'a';
th.dataset.dir=d;const key=r=>{const s=(r.children[i]||{}).textContent||'';const n=parseFloat(s);
return /^[-+]?[0-9.]/.test(s.trim())&&!isNaN(n)?n:s.toLowerCase()};
[...b.rows].sort((x,y)=>{const p=key(x),q=key(y),c=typeof p===typeof q?(p<q?-1:p>q?1:0):(typeof p==='number'?-1:1);
return d==='a'?c:-c}).forEach(r=>b.appendChild(r))});
document.addEventListener('input',e=>{if(!e.target.matches('input.filter'))return;
const q=e.target.value.toLowerCase();for(const r of e.target.nextElementSibling.tBodies[0].rows)
r.hidden=q!==''&&!r.textContent.toLowerCase().includes(q)});
</script>"""
STATUS_COLUMNS = ("latency status", "peak status")  # columns `readable` turns into badges (HTML)
SORTABLE_ROWS = 12  # tables longer than this sort by a click on a header
FILTER_ROWS = 30  # and longer than this get a filter box
RATIO_NOTE = "Ratios are measured / reference; a spread is the samples' max - min as a share of the median."
JSON_POINT = re.compile(r"\{\"[^{}]*\}")
SVG_ATTRIBUTE = re.compile(r'="([^"]*)"')
SVG_DECIMALS = re.compile(r"(\d\.\d\d)\d+")  # coordinates in attributes to 1/100 px (text is left as drawn)


def _fmt(value: object) -> str:
    """A cell as text: blanks for missing, integers whole, other floats to 4 significant digits."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    if isinstance(value, numbers.Integral):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e12 else f"{value:.4g}"
    return "" if value == "{}" else JSON_POINT.sub(lambda m: point_text(m.group(0)), str(value))


def _cell(column: str, value: object, raw: bool = False) -> str:
    """One <td>: numbers right-aligned, verdicts colored; `raw` cells are already HTML."""
    if raw:
        return f"<td>{value}</td>"
    text = html.escape(_fmt(value))
    if column == "verdict" and text:
        return f'<td class="v-{text}">{text}</td>'
    num = isinstance(value, numbers.Number) and not isinstance(value, bool)
    return f'<td class="num">{text}</td>' if num else f"<td>{text}</td>"


def table(df: pd.DataFrame, raw: tuple[str, ...] = ()) -> str:
    """A DataFrame as an HTML table, escaped except in the `raw` columns; long ones sortable and filterable."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    cols = [(str(c), c in raw) for c in df.columns]
    rows = ("".join(_cell(c, v, h) for (c, h), v in zip(cols, r, strict=True)) for r in df.itertuples(index=False))
    body = "".join(f"<tr>{r}</tr>" for r in rows)
    sortable = ' class="sortable"' if len(df) > SORTABLE_ROWS else ""
    box = '<input class="filter" type="search" placeholder="filter rows">' if len(df) > FILTER_ROWS else ""
    return f"{box}<table{sortable}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def fold(summary: str, body: str) -> str:
    """Evidence a reader opens on demand: `body` under a one-line `summary` (HTML)."""
    return f"<details><summary>{summary}</summary>{body}</details>"


def _deftable(pairs: dict[str, str]) -> str:
    """Key/value pairs as a small two-column table."""
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in pairs.items())
    return f'<table class="prov">{rows}</table>'


def svg(chart: alt.TopLevelMixin) -> str:
    """A chart rendered to inline SVG (vl-convert is imported here: a GPU machine that makes no pages lacks it)."""
    import vl_convert

    spec = _distinct(json.loads(chart.to_json()))
    spec.setdefault("config", {})["aria"] = False  # no per-mark descriptions: they were most of a chart's bytes
    drawn = SVG_ATTRIBUTE.sub(lambda m: '="' + SVG_DECIMALS.sub(r"\1", m.group(1)) + '"',
                              vl_convert.vegalite_to_svg(spec))
    return f'<div class="chart">{drawn}</div>'


# A footprint axis in KB labelled as a person writes sizes (48 KB, 24 MB, 2 GB): a Vega-Lite axis labelExpr.
KB_LABELS = ("datum.value >= 1048576 ? format(datum.value / 1048576, '~g') + ' GB' : datum.value >= 1024 ? "
             "format(datum.value / 1024, '~g') + ' MB' : format(datum.value, '~g') + ' KB'")  # fmt: skip


def _distinct(spec: dict) -> dict:
    """Lines told apart by more than colour: every line mark coloured by a category also gets that category's
    point shape and dash, so two series on top of each other stay visible (nested specs included)."""
    mark = spec.get("mark")
    kind = mark.get("type") if isinstance(mark, dict) else mark
    enc = spec.get("encoding", {})
    color = enc.get("color", {})
    if kind == "line" and color.get("type") == "nominal" and "field" in color:
        same = {k: v for k, v in color.items() if k in ("field", "type", "title", "legend", "sort")}
        enc.setdefault("shape", same)
        enc.setdefault("strokeDash", same)
    for key in ("spec", "layer", "hconcat", "vconcat", "concat"):
        inner = spec.get(key)
        for part in inner if isinstance(inner, list) else [inner] if isinstance(inner, dict) else []:
            _distinct(part)
    return spec


def empty(text: str) -> str:
    """Why a section shows nothing."""
    return f'<p class="empty">{html.escape(text)}</p>'


def anchor(title: str) -> str:
    """A section's id: its title in lower case, words joined by '-'."""
    return re.sub(r"[^a-z0-9]+", "-", html.unescape(title).lower()).strip("-")


def _section(title: str, body: str) -> str:
    """A titled section of a page, with an id the table of contents links."""
    return f'<section id="{anchor(title)}"><h2>{html.escape(title)}</h2>{body}</section>'


def navigation(categories: list[str], current: str, prefix: str = "") -> str:
    """The header of every page: the index and every category, the current one in bold."""
    links = [(f"{prefix}index.html", "index"), *((f"{prefix}{c}.html", c) for c in categories)]
    items = "".join(f"<b>{html.escape(name)}</b>" if name == current else
                    f'<a href="{html.escape(href, quote=True)}">{html.escape(name)}</a>'
                    for href, name in links)  # fmt: skip
    return f'<header class="nav">smdissect: {items}</header>'


def _toc(titles: list[str]) -> str:
    """A table of contents linking each section of a page."""
    items = "".join(f'<li><a href="#{anchor(t)}">{html.escape(t)}</a></li>' for t in titles)
    return f'<nav class="toc"><b>Contents</b><ol>{items}</ol></nav>'


def sections(parts: list[tuple[str, str]]) -> str:
    """A table of contents, then each (title, body) as a section (empty bodies left out)."""
    shown = [(t, b) for t, b in parts if b]
    return _toc([t for t, _ in shown]) + "".join(_section(t, b) for t, b in shown)


def _page(title: str, body: str, nav: str = "") -> str:
    """A full HTML document with the inline stylesheet and script; non-ASCII as character references."""
    doc = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{CSS}</style></head><body>{nav}{body}{SCRIPT}</body></html>\n"
    )
    return doc.encode("ascii", "xmlcharrefreplace").decode("ascii")


def param(params: object, key: str, default: object = None) -> object:
    """One value of a canonical-JSON params string."""
    try:
        return json.loads(str(params)).get(key, default)
    except (json.JSONDecodeError, AttributeError):
        return default


def points(
    raw: pd.DataFrame | None, cases: list[str], metric: str, keys: list[str], **extra: tuple[str, str]
) -> pd.DataFrame:
    """Median and spread (max - min) per (case, params) of one metric of `cases`, any `extra` named aggregations
    beside them, and the named parameters as numeric columns; sorted by case, then those parameters."""
    none = pd.DataFrame(columns=["case", "params", "value", "spread", *extra, *keys])
    if raw is None or raw.empty:
        return none
    rows = raw[raw["case"].isin(cases) & (raw["metric"] == metric)]
    if rows.empty:
        return none
    out = rows.groupby(["case", "params"], as_index=False).agg(
        value=("value", "median"), spread=("value", lambda s: s.max() - s.min()), **extra
    )
    for key in keys:
        out[key] = pd.to_numeric(out["params"].map(lambda p, k=key: param(p, k)), errors="coerce")
    return out.sort_values(["case", *keys]).reset_index(drop=True)


def _missing(name: str, tables: dict[str, pd.DataFrame], skipped: dict[str, str]) -> str | None:
    """Why table `name` has nothing to show, or None when it has rows."""
    df = tables.get(name)
    if df is not None and not df.empty:
        return None
    reasons = [f"{s}: {skipped[s]}" for s in STAGES.get(name, ()) if s in skipped]
    return f"not measured: {'; '.join(reasons)}" if reasons else "no rows"


def _long(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of the long (measured) kernel variant."""
    return df[df["variant"] == "long"]


def _lede(title: str, provenance: dict[str, str], skipped: dict[str, str]) -> str:
    """Title, which GPU measured the page, how ratios and spreads read, and the skipped-stages box."""
    labels = (("gpu", ""), ("arch", ""), ("driver", "driver "), ("cuda", "CUDA "))
    who = " &middot; ".join(f"{label}{html.escape(str(provenance[k]))}" for k, label in labels if provenance.get(k))
    out = f'<h1>{html.escape(title)}</h1><p class="lede">{who}. {html.escape(RATIO_NOTE)}</p>'
    if skipped:
        items = "".join(f"<li><b>{html.escape(s)}</b>: {html.escape(r)}</li>" for s, r in skipped.items())
        out += f'<div class="skipped"><h2>Skipped stages</h2><ul>{items}</ul></div>'
    return out


def _medians(raw: pd.DataFrame) -> pd.DataFrame:
    """Median, spread (as a share) and sample count per (case, point, metric), for the every-point table."""
    summary = (
        raw.groupby(["case", "params", "metric", "unit"], dropna=False)
        .agg(median=("value", "median"), spread=("value", lambda s: s.max() - s.min()), n=("value", "size"))
        .reset_index()
        .sort_values(["case", "metric", "params"])
    )
    spreads = [share(sp, v) for sp, v in zip(summary["spread"], summary["median"], strict=True)]
    return summary.assign(median=summary["median"].map(number), spread=spreads)


def number(value: float, digits: int = 4, resolution: float = math.nan) -> str:
    """A figure as a person writes it: `digits` significant figures (4.000, 23.00, 0.5000), whole numbers beyond
    them (43167), an exponent only outside 1e-3 .. 1e7; to the decimal of its `resolution` where it has one (a
    host timer's 0.01 us: 0.40)."""
    if value is None or pd.isna(value):
        return ""
    if resolution and not math.isnan(resolution):
        return f"{value:.{max(0, -math.floor(math.log10(resolution)))}f}"
    if value != 0 and not 1e-3 <= abs(value) < 1e7:
        return f"{value:.{digits - 1}e}"
    if abs(value) >= 10**digits:
        return f"{value:.0f}"
    return f"{value:#.{digits}g}".rstrip(".")


def share(spread: float, value: float) -> str:
    """A spread as a percentage of its value ('' where either is missing)."""
    if spread is None or value is None or pd.isna(spread) or pd.isna(value) or not value:
        return ""
    pct = 100 * spread / abs(value)
    if pct == 0:
        return "0%"
    return "<0.01%" if pct < 0.01 else f"{pct:.2g}%" if pct < 10 else f"{pct:.0f}%"


def badge(status: str) -> str:
    """A figure's status as a coloured badge."""
    return f'<span class="s-{html.escape(status)}">{html.escape(status)}</span>'


def status_counts(figures: pd.DataFrame) -> dict[str, int]:
    """How many figures have each status, in FIGURE_STATUSES order."""
    counts = figures["status"].value_counts() if len(figures) else pd.Series(dtype=int)
    return {s: int(counts.get(s, 0)) for s in FIGURE_STATUSES}


def counts_line(figures: pd.DataFrame) -> str:
    """'N figures: a verified, b unverified, c contradicted' as a paragraph."""
    counts = status_counts(figures)
    parts = ", ".join(f"{badge(s)} <b>{n}</b>" for s, n in counts.items())
    return f'<p class="counts">{len(figures)} figures: {parts}</p>'


def figure_rows(figures: pd.DataFrame, columns: tuple[str, ...] = ("figure", "value", "unit", "spread", "status",
                                                                    "reason", "method")) -> pd.DataFrame:  # fmt: skip
    """Figures as display rows: value to 4 significant figures, spread as a share, the status as a badge."""
    return shown(figures)[list(columns)]


def shown(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows with a value, its resolution, spread and status, as a page shows them: the value as a person writes it
    (to its resolution), the spread as a share of it, the status as a badge."""
    return rows.assign(
        value=[number(v, resolution=r) for v, r in zip(rows["value"], rows["resolution"], strict=True)],
        spread=[share(sp, v) for sp, v in zip(rows["spread"], rows["value"], strict=True)],
        status=rows["status"].map(badge),
    )  # fmt: skip


def not_measured(frames: dict[str, pd.DataFrame], cases: list[str]) -> str:
    """The planned points of `cases` that were static or failed, with the reason ('' where all were measured)."""
    status = frames.get("status")
    if status is None or status.empty:
        return ""
    rest = status[status["case"].isin(cases) & (status["status"] != "measured")]
    return table(rest[["case", "params", "status", "reason"]]) if len(rest) else ""


def figures_of(frames: dict[str, pd.DataFrame], cases: tuple[str, ...] = (), metrics: tuple[str, ...] = (),
               kinds: tuple[str, ...] = ()) -> pd.DataFrame:  # fmt: skip
    """The category's figures (frames['figures']) of the given cases, metrics and kinds (each: all when empty)."""
    df = frames.get("figures")
    if df is None or df.empty:
        return pd.DataFrame(columns=tables.SCHEMAS["figures"].names)
    keep = pd.Series(True, index=df.index)
    for column, wanted in (("case", cases), ("metric", metrics), ("kind", kinds)):
        if wanted:
            keep &= df[column].isin(wanted)
    return df[keep]


def figure_table(figures: pd.DataFrame, columns: tuple[str, ...] = ("figure", "value", "unit", "spread", "status",
                                                                     "reason")) -> str:  # fmt: skip
    """Figures as a table with their status badges (a view's way to state numbers), or why there are none."""
    if figures.empty:
        return empty("no figures: not measured on this GPU")
    return table(figure_rows(figures, columns), raw=("status",))


def _findings(figures: pd.DataFrame, key: pd.DataFrame) -> str:
    """Counts by status, the category's key findings, and the contradicted figures apart (they are not findings)."""
    against = figures[figures["status"] == "contradicted"]
    out = counts_line(figures)
    if len(key):
        out += table(headline_rows(key).drop(columns=["category"]), raw=("status",))
    if len(against):
        out += ("<h3>Contradicted: not findings</h3><p>A check disagrees with each of these or a bound is broken; the "
                "number is kept only as evidence of what went wrong.</p>"
                + table(figure_rows(against, ("figure", "value", "unit", "status", "reason")),
                        raw=("status",)))  # fmt: skip
    return out + '<p>Every figure, with how it was measured and why it has its status: <a href="#all-figures">All ' \
                 "figures</a>.</p>"


def _all_figures(figures: pd.DataFrame) -> str:
    """Every figure that stands (verified or unverified), with method, derivation and the reason of its status."""
    findings = figures[figures["status"] != "contradicted"]
    if findings.empty:
        return empty("no figure stands")
    rows = figure_rows(findings, ("figure", "value", "unit", "spread", "status", "reason", "method", "derivation"))
    methods = list(dict.fromkeys(rows["method"]))
    rows["method"] = rows["method"].map(lambda m: f"[{methods.index(m) + 1}]")
    notes = "".join(f"<li>{html.escape(str(m))}</li>" for m in methods)
    return fold(f"{len(findings)} figures (sortable, filterable)",
                table(rows, raw=("status",)) + f"<p>Methods:</p><ol>{notes}</ol>")


def headline_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Headline or key-finding rows (headlines.table) for display: values as a person writes them, badges."""
    out = shown(rows).assign(paper_sm120=rows["paper_sm120"].map(number)).drop(columns=["figure", "resolution"])
    return out.rename(columns={"paper_sm120": "paper (RTX PRO 5000, another GPU)"})


def _status(status: pd.DataFrame, elsewhere: dict[str, str]) -> str:
    """Counts of measured / static / failed points, where another committed run measured the static ones, then
    every point that was not measured, with why (folded)."""
    counts = status["status"].value_counts()
    line = " &middot; ".join(f"{html.escape(str(k))}: <b>{v}</b>" for k, v in counts.items())
    rest = status[status["status"] != "measured"]
    links = "".join(f'<p>The points that {html.escape(need)} are measured in <a href="{html.escape(href, quote=True)}">'
                    f"that run's page</a>.</p>" for need, href in elsewhere.items()
                    if rest["reason"].str.contains(need, regex=False).any())  # fmt: skip
    rest_rows = rest[["case", "params", "status", "reason"]].sort_values(["case", "params"])
    listing = fold(f"{len(rest)} points not measured, with why", table(rest_rows)) if len(rest) else ""
    flagged = status.loc[status["flag"].fillna("") != "", ["family", "flag"]].drop_duplicates()
    warn = f'<div class="skipped"><h2>Flagged GPU jobs</h2>{table(flagged)}</div>' if len(flagged) else ""
    return f"<p>{line}</p>{links}{warn}{listing}"


def chunks(items: list[str], size: int = 10) -> list[list[str]]:
    """`items` in consecutive groups of at most `size` (a chart's series, so that its legend stays readable)."""
    return [items[i:i + size] for i in range(0, len(items), size)]


def _ilp_chart(raw: pd.DataFrame, cases: pd.DataFrame | None) -> str:
    """Median throughput against ILP at the fewest warps of each sweep (where ILP alone hides latency): one chart per
    pipe, at most ten cases each."""
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not
    thr = raw[raw["metric"] == "throughput"].copy()
    thr["ilp"] = pd.to_numeric(thr["params"].map(lambda p: param(p, "ilp")), errors="coerce")
    thr["warps"] = pd.to_numeric(thr["params"].map(lambda p: param(p, "warps")), errors="coerce")
    thr = thr.dropna(subset=["ilp", "warps"])
    thr = thr[thr["warps"] == thr.groupby("case")["warps"].transform("min")]
    if thr.empty:
        return empty("no throughput rows with ilp and warps parameters")
    data = thr.groupby(["case", "warps", "ilp"], as_index=False)["value"].median()
    pipe = dict(zip(cases["case"], cases["pipe"], strict=True)) if cases is not None and len(cases) else {}
    data["pipe"] = data["case"].map(lambda c: pipe.get(c) or "other")
    unit = ", ".join(sorted(thr["unit"].dropna().astype(str).unique())) or "warp_inst/cycle/SM"
    out = []
    for name, group in data.groupby("pipe"):
        parts = chunks(sorted(group["case"].unique()))
        for i, some in enumerate(parts):
            label = f"pipe {name}" + (f" ({i + 1} of {len(parts)})" if len(parts) > 1 else "")
            chart = (
                alt.Chart(group[group["case"].isin(some)], title=label)
                .mark_line(point=True)
                .encode(
                    x=alt.X("ilp:Q", scale=alt.Scale(type="log", base=2), title="ILP (independent chains)",
                            axis=alt.Axis(values=sorted(data["ilp"].unique().tolist()), format="d")),
                    y=alt.Y("value:Q", scale=alt.Scale(type="log"), title=f"median throughput ({unit})"),
                    color=alt.Color("case:N"),
                )
                .properties(width=240, height=180)
            )  # fmt: skip
            out.append(svg(chart))
    warps = ", ".join(sorted({_fmt(w) for w in data["warps"]}))
    return (f"<p>Throughput (log) against ILP (log 2) at the fewest warps of each case's sweep (warps={warps}); the "
            "ILP knees at every warp count are figures (All figures).</p>" + "".join(out))


STALL_REASONS = 9  # the chart shows this many reasons by share, the rest summed as 'other'


def _stalls(stalls: pd.DataFrame) -> str:
    """Stacked stall reasons at each case's first profiled point, the largest reasons named; the dominant reason of
    every profiled point folded below."""
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not
    st = _long(stalls).groupby(["case", "params", "reason"], as_index=False)[["value", "share"]].mean()
    if st.empty:
        return empty("no rows for the long variant")
    first = st[st["params"] == st.groupby("case")["params"].transform("min")].copy()
    top = first.groupby("reason")["value"].sum().nlargest(STALL_REASONS).index
    first["reason"] = first["reason"].where(first["reason"].isin(top), "other")
    first["point"] = first["case"] + " " + first["params"].map(point_text)
    bars = first.groupby(["point", "reason"], as_index=False)["value"].sum()
    chart = (
        alt.Chart(bars)
        .mark_bar()
        .encode(y=alt.Y("point:N", title=None), x=alt.X("sum(value):Q", title="warp cycles per issued instruction"),
                color=alt.Color("reason:N"), order=alt.Order("reason:N"))
        .properties(width=520)
    )  # fmt: skip
    dominant = st.sort_values("value", ascending=False).drop_duplicates(["case", "params"])
    dominant = dominant.sort_values(["case", "params"])
    return (svg(chart) + fold(f"the dominant stall reason at each of {len(dominant)} profiled points",
                              table(dominant.assign(value=dominant["value"].map(number), share=[
                                  share(v, 1) for v in dominant["share"]]))))  # fmt: skip


def _passes(ncu: pd.DataFrame) -> str:
    """How many replay passes ncu needed per profiled kernel (each pass re-runs the kernel)."""
    passes = ncu.loc[ncu["metric"] == "profiler__replayer_passes", "value"]
    if passes.empty:
        return empty("the reports hold no replay-pass count")
    kernels = ncu.drop_duplicates(["case", "params", "variant"]).shape[0]
    return (
        f"<p>{kernels} profiled kernels; ncu replayed each {int(passes.min())} to {int(passes.max())} times "
        f"(median {passes.median():g}) to collect the category's {ncu['metric'].nunique() - 1} metrics.</p>"
    )


def _pipes(pipes: pd.DataFrame) -> str:
    """Instructions executed per pipe (with % of peak), pipes with any work only, folded."""
    p = _long(pipes).groupby(["case", "params", "pipe"], as_index=False)[["inst_executed", "pct_of_peak"]].mean()
    p = p[p["pipe"].isin(p.loc[p["inst_executed"] > 0, "pipe"])]
    if p.empty:
        return empty("no pipe executed any instruction in the long variant")
    pct = p["pct_of_peak"].map(lambda v: "" if pd.isna(v) else f" ({v:.1f}%)")
    p["cell"] = p["inst_executed"].map(_fmt) + pct
    wide = p.pivot(index=["case", "params"], columns="pipe", values="cell").fillna("")
    wide = wide.rename_axis(columns=None).reset_index()
    return fold(f"instructions per pipe at {len(wide)} profiled points", table(wide))


def _crossval(cv: pd.DataFrame) -> str:
    """Verdict counts, every disagreement with its note, then one row per (case, check) over its points (folded);
    the per-point rows are in crossval.parquet."""
    counts = cv["verdict"].value_counts()
    order = [v for v in VERDICTS if v in counts] + [v for v in counts.index if v not in VERDICTS]
    line = " &middot; ".join(f"{html.escape(str(v))}: <b>{counts[v]}</b>" for v in order)
    cols = ["case", "params", "check", "clock64_value", "counter_value", "rel_err", "tolerance", "verdict", "note"]
    bad = cv[cv["verdict"] == "disagree"].sort_values(["case", "params", "check"])
    bad = bad.assign(**{c: bad[c].map(number) for c in ("clock64_value", "counter_value")},
                     **{c: bad[c].map(lambda v: share(v, 1)) for c in ("rel_err", "tolerance")})  # fmt: skip
    shown = table(bad[cols]) if len(bad) else empty("no check disagrees")
    per = cv.assign(err=cv["rel_err"].abs()).groupby("case", as_index=False).agg(
        checks=("verdict", "size"), agree=("verdict", lambda v: int((v == "agree").sum())),
        disagree=("verdict", lambda v: int((v == "disagree").sum())),
        not_applicable=("verdict", lambda v: int((v == "not-applicable").sum())),
        largest_rel_err=("err", "max"), kinds=("check", lambda c: ", ".join(sorted(set(c)))))  # fmt: skip
    per["largest_rel_err"] = per["largest_rel_err"].map(lambda v: share(v, 1))
    return (f"<p>{line}</p><h3>Disagreements</h3>{shown}"
            + fold(f"the checks of each of {len(per)} cases (each check at each point: crossval.parquet)", table(per)))


def _span(counts: pd.Series) -> str:
    """A range of whole counts as text: '4', or '2-8'."""
    low, high = int(counts.min()), int(counts.max())
    return f"{low}" if low == high else f"{low}-{high}"


def _sass_checks(checks: pd.DataFrame, run_arch: str) -> str:
    """SASS expectations per arch (the run's arch first), one row per (case, opcode, expectation) over its kernels."""
    out = []
    for arch in sorted(checks["arch"].unique(), key=lambda a: (a != run_arch, a)):
        g = checks[checks["arch"] == arch]
        per = g.groupby(["case", "opcode", "expect", "scope"], as_index=False).agg(
            kernels=("verdict", "size"), agree=("verdict", lambda v: int((v == "agree").sum())),
            disagree=("verdict", lambda v: int((v == "disagree").sum())),
            counts=("count", _span))
        out.append(fold(f"{html.escape(str(arch))}: {len(per)} expectations over {len(g)} kernel checks, "
                        f"{int((g['verdict'] == 'disagree').sum())} disagree", table(per)))  # fmt: skip
    return "".join(out)


def _sass_per_op(sass: pd.DataFrame, cases: pd.DataFrame | None, run_arch: str) -> str:
    """Which SASS each case's PTX becomes: opcodes issued at least half as often as the op, at ILP 1 (the long
    variant of chain cases, every kernel of the others); the run's arch first."""
    chained = set(sass.loc[sass["variant"] == "long", "case"])
    s = sass[(sass["variant"] == "long") | ~sass["case"].isin(chained)]
    s = s[s["params"].map(lambda p: param(p, "ilp", 1) == 1).astype(bool) & (s["ops"] > 0)]
    if s.empty:
        return empty("no long-variant rows at ilp 1")
    first = s.groupby(["arch", "case"])["params"].transform("min")
    s = s[(s["params"] == first) & (s["count"] >= 0.5 * s["ops"])].sort_values("count", ascending=False)
    s = s.drop_duplicates(["arch", "case", "opcode"])
    s = s.assign(term=s["opcode"] + " x" + (s["count"] / s["ops"]).map(lambda r: f"{round(r, 2):g}"))
    out = s.groupby(["arch", "case"], as_index=False)["term"].agg(", ".join).rename(columns={"term": "sass_per_op"})
    if cases is not None and not cases.empty:
        out = out.merge(cases[[c for c in ("case", "ptx", "pipe") if c in cases.columns]], on="case", how="left")
    out = out.assign(other=out["arch"] != run_arch).sort_values(["other", "arch", "case"]).drop(columns="other")
    return fold(f"the SASS of {out['case'].nunique()} cases per arch", table(out))


def _view(category: str) -> Callable[[dict[str, pd.DataFrame]], list[tuple[str, str]]] | None:
    """The category's own report sections (workflow/smdissect/views/<category>.py), if it has a view."""
    try:
        module = importlib.import_module(f"smdissect.views.{category}")
    except ModuleNotFoundError as err:
        if err.name not in ("smdissect.views", f"smdissect.views.{category}"):
            raise
        return None
    return module.sections


def render_category(
    out: Path,
    category: str,
    title: str,
    tables: dict[str, pd.DataFrame],
    skipped: dict[str, str],
    provenance: dict[str, str],
    categories: list[str],
    elsewhere: dict[str, str],
) -> None:
    """Write one category's report page (`tables` holds the category's tables and the paper's `reference`): findings
    first, then the view's evidence, coverage, and the long evidence tables folded; `elsewhere` maps a static
    reason to the page of a run that measured those points."""
    from . import headlines

    def part(name: str, render: Callable[[pd.DataFrame], str]) -> str:
        why = _missing(name, tables, skipped)
        return empty(why) if why else render(tables[name])

    run_arch = str(provenance.get("arch", ""))
    figures = tables.get("figures", pd.DataFrame())
    reference = tables.get("reference", pd.DataFrame())
    key = headlines.table(figures, reference, headlines.key_findings(category)) if len(figures) else pd.DataFrame()
    key = key[key["status"].isin(("verified", "unverified"))] if len(key) else key
    sass = ("<h3>Expected opcodes</h3>" + part("sass_checks", lambda c: _sass_checks(c, run_arch))
            + "<h3>SASS per PTX op (long variant, ilp 1)</h3>"
            + part("sass", lambda s: _sass_per_op(s, tables.get("cases"), run_arch)))  # fmt: skip
    view = _view(category)
    chain = tables.get("cases") is not None and (tables["cases"]["kind"] == "chain").any()
    every = part("raw", lambda raw: fold(f"{raw.groupby(['case', 'params', 'metric']).ngroups} (case, point, metric) "
                                         "medians", table(_medians(raw))))  # fmt: skip
    parts = [
        ("Findings", part("figures", lambda f: _findings(f, key))),
        *(view(tables) if view else []),
        ("ILP curve", part("raw", lambda raw: _ilp_chart(raw, tables.get("cases")))) if chain else ("", ""),
        ("All figures", part("figures", _all_figures)),
        ("Coverage of the planned points", part("status", lambda st: _status(st, elsewhere))),
        ("Latency and throughput, every point", every),
        ("Stall reasons", part("stalls", _stalls)),
        ("Pipe counts", part("pipes", _pipes)),
        ("Profiling cost", part("ncu", _passes)),
        ("Cross-validation", part("crossval", _crossval)),
        ("SASS (static)", sass),
        ("Setup", _deftable(provenance)),
    ]
    body = _lede(title, provenance, skipped) + sections(parts)
    write_text(out, _page(f"{title} ({category})", body, navigation(categories, category)))


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


def _coverage_line(coverage: pd.DataFrame, run_arch: str | None) -> str:
    """What became of the planned points on this GPU's arch, and how many of the other archs were only built."""
    from .coverage import STATES

    here = coverage[coverage["arch"] == run_arch][list(STATES)].sum() if run_arch else pd.Series(0, index=list(STATES))
    other = coverage[coverage["arch"] != run_arch]
    planned = int(here.sum())
    text = (f"<p>On this GPU ({html.escape(str(run_arch))}): <b>{int(here['measured']):,}</b> of {planned:,} planned "
            f"points measured ({100 * int(here['measured']) / max(planned, 1):.1f}%), "
            f"{int(here['static-only']):,} static with the reason given, {int(here['failed']):,} failed, "
            f"{int(here['missing']):,} missing.")  # fmt: skip
    for arch, g in other.groupby("arch"):
        text += f" {html.escape(str(arch))}: {int(g[list(STATES)].sum().sum()):,} points built and SASS-checked only."
    return text + "</p>"


def _category_rows(pages: list[dict[str, object]]) -> pd.DataFrame:
    """One row per category page: a link, its key findings and its figure and point counts."""
    rows = []
    for page in pages:
        link = f'<a href="{html.escape(str(page["href"]), quote=True)}">{html.escape(str(page["category"]))}</a>'
        figures = cast(dict[str, int], page.get("figures") or {})
        states = cast(dict[str, int], page.get("coverage") or {})
        key = cast(pd.DataFrame, page.get("key", pd.DataFrame()))
        found = "; ".join(f"{html.escape(str(r.quantity))} {number(r.value, resolution=r.resolution)} "
                          f"{html.escape(str(r.unit))}" for r in key.itertuples(index=False)
                          if r.status in ("verified", "unverified"))  # fmt: skip
        rows.append({"category": link, "key findings": found}
                    | {s: int(figures.get(s, 0)) for s in FIGURE_STATUSES}
                    | {"points measured": int(states.get("measured", 0)), "static": int(states.get("static-only", 0)),
                       "failed": int(states.get("failed", 0))})  # fmt: skip
    return pd.DataFrame(rows)


METHOD = ("Each case is an nvcc microbenchmark built for the card's arch; the instruction it claims is checked in "
          "the SASS of its timed loop. It runs raw (clock64 around the timed loop, medians over repeats) and once "
          "under Nsight Compute (clocks left as found, --clock-control none), whose stall reasons and pipe counts "
          "cross-check the clock64 figures. Every figure on these pages is computed once, in the figures table, and "
          "judged: verified where an independent check (counters, bounds, a second case) agrees, unverified with "
          "the reason where none applies, contradicted where one disagrees; a contradicted figure is never shown "
          "as a finding.")  # fmt: skip


def render_index(
    out: Path, gpu: str, pages: list[dict[str, object]], provenance: dict[str, str], skipped: dict[str, str],
    instructions: pd.DataFrame, coverage: pd.DataFrame, not_measured: pd.DataFrame, headlines: pd.DataFrame,
    run_arch: str | None, paper: dict[str, pd.DataFrame],
) -> None:  # fmt: skip
    """Write the index page: what this GPU is like (headline figures), the method, each category's key findings,
    the coverage (also in the paper's terms), the instruction table and the cross-generation finding; `paper` holds
    the paper's 'generation', 'coverage' and 'structure' tables (smdissect.paper)."""
    title = f"smdissect: {gpu}"
    listing = table(_category_rows(pages), raw=("category",)) if pages else empty("no category pages")
    instructions = readable(instructions, {"latency (cycle)": "spread"}, ("peak (warp_inst/cycle/SM)",))
    generation = paper.get("generation", pd.DataFrame())
    parts = [
        ("Headline figures", table(headline_rows(headlines), raw=("status",)) if len(headlines)
         else empty("no figures")),
        ("Method and setup", f"<p>{html.escape(METHOD)}</p>{_deftable(provenance)}"),
        ("Categories", listing),
        ("Coverage", _coverage_line(coverage, run_arch) + table_of(paper.get("coverage", pd.DataFrame()))
         + fold("points per category and arch", table(coverage)) if len(coverage) else empty("nothing planned")),
        ("Cross-generation: the paper's Hopper figures against this GPU",
         table(_paper_rows(generation), raw=("status",)) + '<p><a href="compare-paper.html">Every figure of the '
         "paper, with its counterpart here or the reason there is none</a></p>" if len(generation) and run_arch
         else ""),
        ("Instruction reference table", fold(f"{len(instructions)} instructions: latency and peak issue rate",
                                             table(instructions, raw=STATUS_COLUMNS)) if len(instructions) else ""),
        ("The paper's sections in smdissect", fold("the paper's test sections, the categories that measure them and "
                                                   "how much", table_of(paper.get("structure", pd.DataFrame())))),
        ("Planned points not measured", fold(f"{len(not_measured)} points, with why", table(not_measured))
         if len(not_measured) else empty("none")),
    ]  # fmt: skip
    body = _lede(title, provenance, skipped) + sections(parts)
    write_text(out, _page(title, body, navigation([str(p["category"]) for p in pages], "index")))


def render_gpus(out: Path, gpus: pd.DataFrame, folders: list[str], categories: list[str]) -> None:
    """Write the page over several GPUs of one run: each GPU's folder, identity and coverage, with links."""
    title = "smdissect: every GPU of this run"
    listing = gpus.assign(
        folder=[f'<a href="{html.escape(f, quote=True)}/index.html">{html.escape(f)}</a>' for f in gpus["folder"]]
    )
    compares = "".join(
        f'<li><a href="compare/{html.escape(f"{folders[0]}-vs-{other}", quote=True)}.html">'
        f"{html.escape(folders[0])} vs {html.escape(other)}</a></li>"
        for other in folders[1:]
    )
    body = f"<h1>{html.escape(title)}</h1>" + sections([
        ("GPUs", table(listing, raw=("folder",))),
        ("Comparisons", f"<ul>{compares}</ul>" if compares else empty("one GPU only"))])  # fmt: skip
    write_text(out, _page(title, body, navigation(categories, "", f"{folders[0]}/")))


def render_compare(out: Path, names: tuple[str, str], diff: pd.DataFrame, nav: str) -> None:
    """Write the diff page of two result sets: flagged rows (difference beyond the spreads and the floor) first."""
    from .compare import RELATIVE_FLOOR

    flagged = int(diff["flagged"].sum())
    title = "smdissect: comparison"
    head = _deftable({"a": names[0], "b (the reference)": names[1], "figures": str(len(diff)),
                      "flagged": str(flagged)})  # fmt: skip
    note = (f"<p>Ratio = a / b, measured / reference. A figure is flagged where |a - b| exceeds both the larger of "
            f"the two sets' spreads (max - min of its samples) and {RELATIVE_FLOOR:.0%} of b; flagged rows come "
            "first.</p>")  # fmt: skip
    shown = diff.assign(**{c: diff[c].map(number) for c in ("value_a", "value_b", "difference", "ratio")},
                        spread_a=[share(sp, v) for sp, v in zip(diff["spread_a"], diff["value_a"], strict=True)],
                        spread_b=[share(sp, v) for sp, v in zip(diff["spread_b"], diff["value_b"], strict=True)],
                        flagged=diff["flagged"].map({True: "flagged", False: ""}))  # fmt: skip
    parts = [("Flagged", table(shown[diff["flagged"]]) if flagged else empty("no figure differs beyond its spread "
                                                                             "and the floor")),
             ("Every figure", fold(f"{len(diff)} figures", table(shown)))]  # fmt: skip
    body = f"<h1>{html.escape(title)}</h1>{head}{note}" + sections(parts)
    write_text(out, _page(title, body, nav))


def _paper_rows(table: pd.DataFrame) -> pd.DataFrame:
    """Paper-accounting rows for display: numbers as a person writes them, statuses as badges."""
    shown = table.assign(paper=table["paper"].map(number), measured=table["measured"].map(number),
                         ratio=table["ratio"].map(number))  # fmt: skip
    marks = [badge(s) if s in FIGURE_STATUSES else html.escape(str(s or "")) for s in shown["status"]]
    return shown.assign(status=marks)


def render_paper(out: Path, names: tuple[str, str], every: pd.DataFrame, counts: pd.DataFrame,
                 generation: pd.DataFrame, coverage: pd.DataFrame, structure: pd.DataFrame,
                 nav: str) -> None:  # fmt: skip
    """Write the page of every paper figure: its value and GPU, the counterpart measured here with its status, the
    ratio measured / paper, or the reason there is none; the cross-generation finding; the paper's structure."""
    title = "smdissect: every figure of the paper"
    head = _deftable({"measured": names[0], "paper": names[1], "paper figures": str(len(every))})
    note = ("<p>Each row of the paper's figures (reference/seed_sm120.csv) is tied to the case that measures its "
            "counterpart here, derived from measured figures, or given the reason it cannot be measured here. "
            "Ratio = measured / paper; the paper's values are of its GPU (mostly an RTX PRO 5000, sm_120a), not "
            "this one.</p>")  # fmt: skip
    cols = ["quantity", "paper", "unit", "paper_gpu", "accounted", "counterpart", "measured", "status", "ratio",
            "reason", "note"]  # fmt: skip
    parts = [
        ("How the paper's figures are accounted for", table_of(counts)),
        ("Cross-generation: the paper's Hopper figures against a real Hopper",
         table(_paper_rows(generation), raw=("status",)) if len(generation) else empty("no such figure")),
        ("Every paper figure", table(_paper_rows(every)[cols], raw=("status",))),
        ("Coverage in the paper's terms", table_of(coverage)),
        ("The paper's sections in smdissect", table_of(structure)),
    ]
    body = f"<h1>{html.escape(title)}</h1>{head}{note}" + sections(parts)
    write_text(out, _page(title, body, nav))


def table_of(df: pd.DataFrame) -> str:
    """A table, or why there is none."""
    return table(df) if len(df) else empty("no rows")
