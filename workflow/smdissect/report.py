"""Self-contained HTML reports: plain tables and inline-SVG charts, nothing fetched when the page opens."""

from __future__ import annotations

import html
import importlib
import json
import math
import numbers
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pandas as pd

from . import tables
from .files import write_text
from .tables import FIGURE_STATUSES, VERDICTS

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
"""


def _fmt(value: object) -> str:
    """A cell as text: blanks for missing, integers whole, other floats to 4 significant digits."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    if isinstance(value, numbers.Integral):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e12 else f"{value:.4g}"
    return str(value)


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
    """A DataFrame as an HTML table, escaped except in the `raw` columns."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    cols = [(str(c), c in raw) for c in df.columns]
    rows = ("".join(_cell(c, v, h) for (c, h), v in zip(cols, r, strict=True)) for r in df.itertuples(index=False))
    body = "".join(f"<tr>{r}</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _deftable(pairs: dict[str, str]) -> str:
    """Key/value pairs as a small two-column table."""
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in pairs.items())
    return f'<table class="prov">{rows}</table>'


def svg(chart: alt.TopLevelMixin) -> str:
    """A chart rendered to inline SVG (vl-convert is imported here: a GPU machine that makes no pages lacks it)."""
    import vl_convert

    return f'<div class="chart">{vl_convert.vegalite_to_svg(chart.to_json())}</div>'


def empty(text: str) -> str:
    """Why a section shows nothing."""
    return f'<p class="empty">{html.escape(text)}</p>'


def _section(title: str, body: str) -> str:
    """A titled section of a page."""
    return f"<section><h2>{html.escape(title)}</h2>{body}</section>"


def _page(title: str, body: str) -> str:
    """A full HTML document with the inline stylesheet; non-ASCII as character references."""
    doc = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{CSS}</style></head><body>{body}</body></html>\n"
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


def _header(title: str, category: str, provenance: dict[str, str], skipped: dict[str, str]) -> str:
    """Title, provenance and the skipped-stages box."""
    out = f"<h1>{html.escape(title)}</h1><p>category: <code>{html.escape(category)}</code></p>{_deftable(provenance)}"
    if skipped:
        items = "".join(f"<li><b>{html.escape(s)}</b>: {html.escape(r)}</li>" for s, r in skipped.items())
        out += f'<div class="skipped"><h2>Skipped stages</h2><ul>{items}</ul></div>'
    return out


def _paper(summary: pd.DataFrame, raw: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Add the published figure (and its source) that each group's paper_ref points at."""
    refs = raw.dropna(subset=["paper_ref"]).groupby(["case", "params", "metric"])["paper_ref"].first()
    lookup = {r.id: r for r in reference.itertuples(index=False)}
    hits = [lookup.get(i) for i in summary.join(refs, on=["case", "params", "metric"])["paper_ref"]]
    summary["paper"] = [f"{_fmt(h.value)} {_fmt(h.unit)}".strip() if h else "" for h in hits]
    summary["source"] = [h.source if h else "" for h in hits]
    return summary


def _medians(raw: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Median, spread and sample count per (case, params, metric, unit), with the paper's figure."""
    keys = ["case", "params", "metric", "unit"]
    summary = (
        raw.groupby(keys, dropna=False)
        .agg(
            median=("value", "median"),
            spread=("value", lambda s: s.max() - s.min()),
            n=("value", "size"),
            clock_mhz=("clock_mhz", "median"),
            cycles=("cycles", "median"),
        )
        .reset_index()
    )
    if "paper_ref" in raw.columns:
        summary = _paper(summary, raw, reference)
    return summary.sort_values(["case", "metric", "params"])


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
    out = pd.DataFrame({
        "figure": figures["figure"], "unit": figures["unit"],
        "value": [number(v, resolution=r) for v, r in zip(figures["value"], figures["resolution"], strict=True)],
        "spread": [share(s, v) for s, v in zip(figures["spread"], figures["value"], strict=True)],
        "status": figures["status"].map(badge), "reason": figures["reason"], "method": figures["method"],
        "derivation": figures["derivation"], "checks": figures["checks"], "case": figures["case"],
    })  # fmt: skip
    return out[list(columns)]


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


def _figures(figures: pd.DataFrame) -> str:
    """The category's figures: counts by status, the findings (verified and unverified, with why), then the
    contradicted ones, which are not findings."""
    findings = figures[figures["status"] != "contradicted"]
    against = figures[figures["status"] == "contradicted"]
    out = counts_line(figures)
    out += table(figure_rows(findings, ("figure", "value", "unit", "spread", "status", "reason", "method",
                                        "derivation")), raw=("status",)) if len(findings) else empty("no figure stands")
    if len(against):
        out += ("<h3>Contradicted: not findings</h3><p>A check disagrees with each of these or a bound is broken; the "
                "number is kept only as evidence of what went wrong.</p>"
                + table(figure_rows(against, ("figure", "value", "unit", "status", "reason", "checks")),
                        raw=("status",)))  # fmt: skip
    return out


def _status(status: pd.DataFrame) -> str:
    """Counts of measured / static / failed points, then every point that was not measured, with why."""
    counts = status["status"].value_counts()
    line = " &middot; ".join(f"{html.escape(str(k))}: <b>{v}</b>" for k, v in counts.items())
    rest = status[status["status"] != "measured"]
    listing = table(rest[["case", "params", "status", "reason"]].sort_values(["case", "params"])) if len(rest) else ""
    flagged = status.loc[status["flag"].fillna("") != "", ["family", "flag"]].drop_duplicates()
    warn = f'<div class="skipped"><h2>Flagged GPU jobs</h2>{table(flagged)}</div>' if len(flagged) else ""
    return f"<p>{line}</p>{warn}{listing}"


def _ilp_chart(raw: pd.DataFrame) -> str:
    """Median throughput against ILP, one line per case, one panel per warp count."""
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not
    thr = raw[raw["metric"] == "throughput"].copy()
    thr["ilp"] = pd.to_numeric(thr["params"].map(lambda p: param(p, "ilp")), errors="coerce")
    thr["warps"] = pd.to_numeric(thr["params"].map(lambda p: param(p, "warps")), errors="coerce")
    thr = thr.dropna(subset=["ilp"])
    if thr.empty:
        return empty("no throughput rows with an ilp parameter")
    data = thr.groupby(["case", "warps", "ilp"], as_index=False, dropna=False)["value"].median().sort_values("warps")
    data["panel"] = data["warps"].map(lambda w: f"warps={_fmt(w) or 'any'}")
    unit = ", ".join(sorted(thr["unit"].dropna().astype(str).unique())) or "warp_inst/cycle/SM"
    chart = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "ilp:Q",
                scale=alt.Scale(type="log", base=2),
                axis=alt.Axis(values=sorted(data["ilp"].unique().tolist()), format="d"),
                title="ILP (independent chains)",
            ),
            y=alt.Y("value:Q", title=f"median throughput ({unit})"),
            color=alt.Color("case:N"),
        )
        .properties(width=260, height=220)
        .facet(column=alt.Column("panel:N", title=None, sort=list(data["panel"].unique())))
    )
    return svg(chart)


def _stalls(stalls: pd.DataFrame) -> str:
    """Stacked stall reasons per (case, params) and the dominant reason of each."""
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not
    st = _long(stalls).groupby(["case", "params", "reason"], as_index=False)[["value", "share"]].mean()
    if st.empty:
        return empty("no rows for the long variant")
    shown = st[st["reason"].isin(st.groupby("reason")["share"].max().loc[lambda s: s >= 0.01].index)].copy()
    shown["point"] = shown["case"] + " " + shown["params"]
    chart = (
        alt.Chart(shown)
        .mark_bar()
        .encode(
            y=alt.Y("point:N", title=None),
            x=alt.X("sum(value):Q", title="warp cycles per issued instruction"),
            color=alt.Color("reason:N"),
            order=alt.Order("reason:N"),
        )
        .properties(width=520)
    )
    top = st.sort_values("value", ascending=False).drop_duplicates(["case", "params"])
    return svg(chart) + "<h3>Dominant stall reason</h3>" + table(top.sort_values(["case", "params"]))


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
    """Instructions executed per pipe (with % of peak), pipes with any work only."""
    p = _long(pipes).groupby(["case", "params", "pipe"], as_index=False)[["inst_executed", "pct_of_peak"]].mean()
    p = p[p["pipe"].isin(p.loc[p["inst_executed"] > 0, "pipe"])]
    if p.empty:
        return empty("no pipe executed any instruction in the long variant")
    pct = p["pct_of_peak"].map(lambda v: "" if pd.isna(v) else f" ({v:.1f}%)")
    p["cell"] = p["inst_executed"].map(_fmt) + pct
    wide = p.pivot(index=["case", "params"], columns="pipe", values="cell").fillna("")
    return table(wide.rename_axis(columns=None).reset_index())


def _crossval(cv: pd.DataFrame) -> str:
    """Verdict counts, then every check with its note."""
    counts = cv["verdict"].value_counts()
    order = [v for v in VERDICTS if v in counts] + [v for v in counts.index if v not in VERDICTS]
    line = " &middot; ".join(f"{html.escape(str(v))}: <b>{counts[v]}</b>" for v in order)
    cols = ["case", "params", "check", "clock64_value", "counter_value", "rel_err", "tolerance", "verdict", "note"]
    return f"<p>{line}</p>" + table(cv[cols].sort_values(["case", "params", "check"]))


def _sass_checks(checks: pd.DataFrame) -> str:
    """One table of SASS expectations per arch."""
    cols = ["case", "params", "variant", "kernel", "opcode", "expect", "count", "verdict"]
    return "".join(
        f"<h4>{html.escape(str(arch))}</h4>" + table(g[cols].sort_values(["case", "params", "variant"]))
        for arch, g in checks.groupby("arch")
    )


def _sass_per_op(sass: pd.DataFrame, cases: pd.DataFrame | None) -> str:
    """Which SASS each case's PTX becomes: opcodes issued at least half as often as the op, at ILP 1 (the long
    variant of chain cases, every kernel of the others)."""
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
    return table(out.sort_values(["arch", "case"]))


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
    reference: pd.DataFrame,
) -> None:
    """Write one category's report page."""

    def part(name: str, render: Callable[[pd.DataFrame], str]) -> str:
        why = _missing(name, tables, skipped)
        return empty(why) if why else render(tables[name])

    sass = (
        "<h3>Expected opcodes</h3>"
        + part("sass_checks", _sass_checks)
        + "<h3>SASS per PTX op (long variant, ilp 1)</h3>"
        + part("sass", lambda s: _sass_per_op(s, tables.get("cases")))
    )
    medians = None if _missing("raw", tables, skipped) else _medians(tables["raw"], reference)  # computed once
    view = _view(category)
    chain = tables.get("cases") is not None and (tables["cases"]["kind"] == "chain").any()
    body = "".join(
        [
            _header(title, category, provenance, skipped),
            _section("Figures", part("figures", _figures)),
            _section("Coverage of the planned points", part("status", _status)),
            *(_section(t, h) for t, h in (view(tables) if view else [])),
            _section("ILP curve", part("raw", _ilp_chart)) if chain else "",
            _section("Latency and throughput, every point", part("raw", lambda _: table(medians))),
            _section("Profiling cost", part("ncu", _passes)),
            _section("Stall reasons", part("stalls", _stalls)),
            _section("Pipe counts", part("pipes", _pipes)),
            _section("Cross-validation", part("crossval", _crossval)),
            _section("SASS (static)", sass),
        ]
    )
    write_text(out, _page(f"{title} ({category})", body))


def render_index(
    out: Path, gpu: str, pages: list[dict[str, object]], provenance: dict[str, str], skipped: dict[str, str],
    paper: pd.DataFrame, instructions: pd.DataFrame, coverage: pd.DataFrame, not_measured: pd.DataFrame,
    headlines: pd.DataFrame,
) -> None:  # fmt: skip
    """Write the index page: categories, the paper's key tables regenerated from the data, coverage."""
    from .coverage import STATES

    rows = []
    for page in pages:
        verdicts = cast(dict[str, int], page.get("verdicts") or {})
        states = cast(dict[str, int], page.get("coverage") or {})
        link = f'<a href="{html.escape(str(page["href"]), quote=True)}">{html.escape(str(page["category"]))}</a>'
        figures = cast(dict[str, int], page.get("figures") or {})
        rows.append({"category": link, "title": page.get("title", "")} | {s: int(figures.get(s, 0)) for s in
                    FIGURE_STATUSES} | {v: int(verdicts.get(v, 0)) for v in VERDICTS}
                    | {s: int(states.get(s, 0)) for s in STATES})  # fmt: skip
    cols = ["category", "title", *FIGURE_STATUSES, *VERDICTS, *STATES]
    listing = table(pd.DataFrame(rows, columns=cols), raw=("category",)) if rows else empty("no category pages")
    title = f"smdissect — {gpu}"
    total = coverage[list(STATES)].sum() if len(coverage) else pd.Series(0, index=list(STATES))
    planned = int(total.sum())
    covered = 100 * int(total["measured"] + total["static-only"]) / max(planned, 1)
    summary = (f"<p>{planned} planned measurements (case x parameter point x arch): "
               + " &middot; ".join(f"{s}: <b>{int(total[s])}</b>" for s in STATES)
               + f" &middot; covered (measured or static-only): <b>{covered:.1f}%</b></p>")  # fmt: skip
    key = {
        "Instruction reference table": instructions,
        "Measured against the paper (sm_120 figure and sm_90 column)": paper,
        "Cross-generation comparison (figures with an sm_90 column)": paper[paper["paper_sm90"].notna()]
        if len(paper) else paper,
    }  # fmt: skip
    tables_html = "".join(_section(name, table(df) if len(df) else empty("no measured case names such a figure"))
                          for name, df in key.items())  # fmt: skip
    links = '<p><a href="compare-paper.html">Every quantity against the paper (diff page)</a></p>'
    skipped_box = _header(title, "index", provenance, skipped)
    heads = headlines.assign(value=[number(v, resolution=r) for v, r in zip(headlines["value"],
                                    headlines["resolution"], strict=True)], spread=[
        share(sp, v) for sp, v in zip(headlines["spread"], headlines["value"], strict=True)],
        status=headlines["status"].map(badge), paper_sm120=headlines["paper_sm120"].map(number))
    heads = heads.rename(columns={"paper_sm120": "paper (RTX PRO 5000, another GPU)"})
    headline = table(heads.drop(columns=["figure", "resolution"]), raw=("status",)) if len(heads) else empty(
        "no figures")  # fmt: skip
    body = "".join([
        skipped_box, links, _section("Headline figures", headline), _section("Categories", listing), tables_html,
        _section("Coverage", summary + table(coverage) if len(coverage) else empty("nothing planned")),
        _section("Planned points not measured", table(not_measured) if len(not_measured) else empty("none")),
    ])  # fmt: skip
    write_text(out, _page(title, body))


def render_gpus(out: Path, gpus: pd.DataFrame, folders: list[str]) -> None:
    """Write the page over several GPUs of one run: each GPU's folder, identity and coverage, with links."""
    title = "smdissect — every GPU of this run"
    listing = gpus.assign(
        folder=[f'<a href="{html.escape(f, quote=True)}/index.html">{html.escape(f)}</a>' for f in gpus["folder"]]
    )
    compares = "".join(
        f'<li><a href="compare/{html.escape(f"{folders[0]}-vs-{other}", quote=True)}.html">'
        f"{html.escape(folders[0])} vs {html.escape(other)}</a></li>"
        for other in folders[1:]
    )
    body = (f"<h1>{html.escape(title)}</h1>" + _section("GPUs", table(listing, raw=("folder",)))
            + _section("Comparisons", f"<ul>{compares}</ul>" if compares else empty("one GPU only")))  # fmt: skip
    write_text(out, _page(title, body))


def render_compare(out: Path, names: tuple[str, str], diff: pd.DataFrame) -> None:
    """Write the diff page of two result sets: flagged rows (difference beyond the spreads and the floor) first."""
    from .compare import RELATIVE_FLOOR

    flagged = int(diff["flagged"].sum())
    title = "smdissect — comparison"
    head = _deftable({"a": names[0], "b": names[1], "figures": str(len(diff)), "flagged": str(flagged)})
    note = ("<p>Ratio = a / b (b is the reference). A figure is flagged where |a - b| exceeds the larger of the two "
            f"sets' spreads (max - min of its samples; the paper's have none) and {RELATIVE_FLOOR:.0%} of b; flagged "
            "rows come first.</p>")  # fmt: skip
    body = f"<h1>{html.escape(title)}</h1>{head}{note}" + _section("Every quantity", table(diff))
    write_text(out, _page(title, body))
