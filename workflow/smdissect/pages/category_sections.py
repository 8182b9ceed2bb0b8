"""The sections every category page has around its view: the findings, every figure, the coverage of the planned
points, the ILP curve, every point's median, stall reasons, pipe counts, profiling cost, cross-validation and the
static SASS."""

from __future__ import annotations

import html

import pandas as pd

from ..core import stats
from ..core.tables import VERDICTS, point_text
from .charts import SERIES, chunks, svg
from .evidence import counts_line, figure_rows, headline_rows, param
from .markup import cell_text, empty, fold, number, share, table


def medians(raw: pd.DataFrame) -> pd.DataFrame:
    """Median, spread (as a share) and sample count per (case, point, metric), for the every-point table."""
    summary = stats.summary(raw, ["case", "params", "metric", "unit"])
    summary = summary.rename(columns={"value": "median", "samples": "n"}).sort_values(["case", "metric", "params"])
    spreads = [share(sp, v) for sp, v in zip(summary["spread"], summary["median"], strict=True)]
    return summary.assign(median=summary["median"].map(number), spread=spreads)


CONTRADICTED_SHOWN = 10  # more contradicted figures than this are folded: the findings stay one screen


def findings(figures: pd.DataFrame, key: pd.DataFrame) -> str:
    """Counts by status, the category's key findings, and the contradicted figures apart (they are not findings)."""
    against = figures[figures["status"] == "contradicted"]
    out = counts_line(figures)
    if len(key):
        out += table(headline_rows(key).drop(columns=["category"]), raw=("status",))
    if len(against):
        rows = table(figure_rows(against, ("figure", "value", "unit", "status", "reason")), raw=("status",))
        out += (
            "<h3>Contradicted: not findings</h3><p>A check disagrees with each of these or a bound is broken; the "
            "number is kept only as evidence of what went wrong.</p>"
            + (rows if len(against) <= CONTRADICTED_SHOWN else fold(f"{len(against)} contradicted figures", rows))
        )
    return (
        out + '<p>Every figure, with how it was measured and why it has its status: <a href="#all-figures">All '
        "figures</a>.</p>"
    )


def coded(values: pd.DataFrame) -> str:
    """What each coded parameter value in the figures' names means (the manifest's `values:`)."""
    rows = values.assign(value=values["axis"] + "=" + values["value"].astype(str))[["value", "meaning"]]
    return "<p>Points are named by their parameters; these values stand for:</p>" + table(rows)


def all_figures(figures: pd.DataFrame) -> str:
    """Every figure that stands (not contradicted), with the SM clock its launches ran at (clock64 over
    %globaltimer, blank where untimed), method, derivation and the reason of its status."""
    findings = figures[figures["status"] != "contradicted"]
    if findings.empty:
        return empty("no figure stands")
    columns = ("figure", "value", "unit", "spread", "clock_mhz", "status", "reason", "method", "derivation")
    rows = figure_rows(findings.assign(clock_mhz=findings.get("clock_mhz", pd.Series(dtype=float))), columns)
    rows = rows.assign(clock_mhz=rows["clock_mhz"].map(lambda c: f"{c:.0f}" if pd.notna(c) and c > 0 else ""))
    rows = rows.rename(columns={"clock_mhz": "SM clock (MHz)"})
    methods = list(dict.fromkeys(rows["method"]))
    rows["method"] = rows["method"].map(lambda m: f"[{methods.index(m) + 1}]")
    notes = "".join(f"<li>{html.escape(str(m))}</li>" for m in methods)
    return fold(
        f"{len(findings)} figures (sortable, filterable)",
        table(rows, raw=("status",)) + f"<p>Methods:</p><ol>{notes}</ol>",
    )


def status(status: pd.DataFrame, elsewhere: dict[str, str]) -> str:
    """Counts of measured / static / failed points, where another committed run measured the static ones, then
    the points not measured (folded): the static ones grouped by their reason, each failed one with its error."""
    counts = status["status"].value_counts()
    line = " &middot; ".join(f"{html.escape(str(k))}: <b>{v}</b>" for k, v in counts.items())
    rest = status[status["status"] != "measured"]
    links = "".join(
        f'<p>The points that {html.escape(need)} are measured in <a href="{html.escape(href, quote=True)}">'
        f"that run's page</a>.</p>"
        for need, href in elsewhere.items()
        if rest["reason"].str.contains(need, regex=False).any()
    )
    static = rest[rest["status"] != "failed"].groupby(["status", "reason"], as_index=False, sort=True)
    grouped = static.agg(cases=("case", lambda c: ", ".join(dict.fromkeys(c))), points=("case", "size"))
    failed = rest[rest["status"] == "failed"].sort_values(["case", "params"])
    pairs = zip(failed["params"], failed["reason"], strict=True)
    where = [f"at {point_text(p) or 'its one point'}: {r}" for p, r in pairs]
    failed = pd.DataFrame({"cases": failed["case"], "points": 1, "status": failed["status"], "reason": where})
    rows = pd.concat([grouped[["cases", "points", "status", "reason"]], failed], ignore_index=True)
    listing = fold(f"{len(rest)} points not measured, grouped by why", table(rows)) if len(rest) else ""
    flagged = status.loc[status["flag"].fillna("") != "", ["family", "flag"]].drop_duplicates()
    warn = f'<div class="skipped"><h2>Flagged GPU jobs</h2>{table(flagged)}</div>' if len(flagged) else ""
    return f"<p>{line}</p>{links}{warn}{listing}"


def ilp_chart(raw: pd.DataFrame, cases: pd.DataFrame | None) -> str:
    """Median throughput against ILP at the fewest warps of each sweep (where ILP alone hides latency): one chart per
    pipe, at most charts.SERIES cases each."""
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    thr = raw[raw["metric"] == "throughput"].copy()
    thr["ilp"] = pd.to_numeric(thr["params"].map(lambda p: param(p, "ilp")), errors="coerce")
    thr["warps"] = pd.to_numeric(thr["params"].map(lambda p: param(p, "warps")), errors="coerce")
    thr = thr.dropna(subset=["ilp", "warps"])
    thr = thr[thr["warps"] == thr.groupby("case")["warps"].transform("min")]
    if thr.empty:
        return empty("no throughput rows with ilp and warps parameters")
    data = stats.summary(thr, ["case", "warps", "ilp"])
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
                    x=alt.X(
                        "ilp:Q",
                        scale=alt.Scale(type="log", base=2),
                        title="ILP (independent chains)",
                        axis=alt.Axis(values=sorted(data["ilp"].unique().tolist()), format="d"),
                    ),
                    y=alt.Y("value:Q", scale=alt.Scale(type="log"), title=f"median throughput ({unit})"),
                    color=alt.Color("case:N"),
                )
                .properties(width=240, height=180)
            )
            described = (
                f"Median throughput ({unit}, log scale) against ILP (1 to {int(data['ilp'].max())}, log 2) at the "
                f"fewest warps of each sweep, one line per case on pipe {name}: {', '.join(some)}."
            )
            out.append(svg(chart, described, f"Throughput over ILP, {label}"))
    warps = ", ".join(sorted({cell_text(w) for w in data["warps"]}))
    return (
        f"<p>Throughput (log) against ILP (log 2) at the fewest warps of each case's sweep (warps={warps}); the "
        "ILP knees at every warp count are figures (All figures).</p>" + "".join(out)
    )


STALL_REASONS = 9  # the chart shows this many reasons by share, the rest summed as 'other'


def stalls(stalls: pd.DataFrame) -> str:
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
    reasons = bars.groupby("reason")["value"].sum().sort_values(ascending=False).index.tolist()
    order = bars.groupby("point")["value"].sum().sort_values(ascending=False).index.tolist()
    halves = chunks(reasons, (len(reasons) + 1) // 2) if len(reasons) > SERIES else [reasons]
    panels = [
        alt.Chart(bars[bars["reason"].isin(some)], title=f"stall reasons {', '.join(some[:2])}, ...")
        .mark_bar()
        .encode(
            y=alt.Y("point:N", title=None, sort=order),
            x=alt.X("sum(value):Q", title="warp cycles per issued instruction"),
            color=alt.Color("reason:N", sort=some, scale=alt.Scale(domain=some)),
            order=alt.Order("reason:N"),
        )
        .properties(width=300, height=alt.Step(11))
        for some in halves
    ]
    chart = alt.hconcat(*panels).resolve_scale(color="independent") if len(panels) > 1 else panels[0]
    described = (
        f"Stacked bars of warp cycles per issued instruction at the first profiled point of each of "
        f"{bars['point'].nunique()} cases, largest total first, split by stall reason over {len(panels)} panel(s) of "
        f"at most {SERIES} reasons: {', '.join(reasons)} (the {STALL_REASONS} largest; the rest summed as other)."
    )
    chart = chart.properties(title="Stall reasons at each case's first profiled point")
    dominant = st.sort_values("value", ascending=False).drop_duplicates(["case", "params"])
    dominant = dominant.sort_values(["case", "params"])
    return svg(chart, described) + fold(
        f"the dominant stall reason at each of {len(dominant)} profiled points",
        table(dominant.assign(value=dominant["value"].map(number), share=[share(v, 1) for v in dominant["share"]])),
    )


def passes(ncu: pd.DataFrame) -> str:
    """How many replay passes ncu needed per profiled kernel (each pass re-runs the kernel)."""
    passes = ncu.loc[ncu["metric"] == "profiler__replayer_passes", "value"]
    if passes.empty:
        return empty("the reports hold no replay-pass count")
    kernels = ncu.drop_duplicates(["case", "params", "variant"]).shape[0]
    return (
        f"<p>{kernels} profiled kernels; ncu replayed each {int(passes.min())} to {int(passes.max())} times "
        f"(median {passes.median():g}) to collect the category's {ncu['metric'].nunique() - 1} metrics.</p>"
    )


def pipes(pipes: pd.DataFrame) -> str:
    """Instructions executed per pipe (with % of peak), pipes with any work only, folded."""
    p = _long(pipes).groupby(["case", "params", "pipe"], as_index=False)[["inst_executed", "pct_of_peak"]].mean()
    p = p[p["pipe"].isin(p.loc[p["inst_executed"] > 0, "pipe"])]
    if p.empty:
        return empty("no pipe executed any instruction in the long variant")
    pct = p["pct_of_peak"].map(lambda v: "" if pd.isna(v) else f" ({v:.1f}%)")
    p["cell"] = p["inst_executed"].map(cell_text) + pct
    wide = p.pivot(index=["case", "params"], columns="pipe", values="cell").fillna("")
    wide = wide.rename_axis(columns=None).reset_index()
    return fold(f"instructions per pipe at {len(wide)} profiled points", table(wide))


def crossval(cv: pd.DataFrame) -> str:
    """Verdict counts, every disagreement with its note, then one row per (case, check) over its points (folded);
    the per-point rows are in crossval.parquet."""
    counts = cv["verdict"].value_counts()
    order = [v for v in VERDICTS if v in counts] + [v for v in counts.index if v not in VERDICTS]
    line = " &middot; ".join(f"{html.escape(str(v))}: <b>{counts[v]}</b>" for v in order)
    cols = ["case", "params", "check", "clock64_value", "counter_value", "rel_err", "tolerance", "verdict", "note"]
    bad = cv[cv["verdict"] == "disagree"].sort_values(["case", "params", "check"])
    bad = bad.assign(
        **{c: bad[c].map(number) for c in ("clock64_value", "counter_value")},
        **{c: bad[c].map(lambda v: share(v, 1)) for c in ("rel_err", "tolerance")},
    )
    shown = table(bad[cols]) if len(bad) else empty("no check disagrees")
    per = (
        cv.assign(err=cv["rel_err"].abs())
        .groupby("case", as_index=False)
        .agg(
            checks=("verdict", "size"),
            agree=("verdict", lambda v: int((v == "agree").sum())),
            disagree=("verdict", lambda v: int((v == "disagree").sum())),
            not_applicable=("verdict", lambda v: int((v == "not-applicable").sum())),
            largest_rel_err=("err", "max"),
            kinds=("check", lambda c: ", ".join(sorted(set(c)))),
        )
    )
    per["largest_rel_err"] = per["largest_rel_err"].map(lambda v: share(v, 1))
    return f"<p>{line}</p><h3>Disagreements</h3>{shown}" + fold(
        f"the checks of each of {len(per)} cases (each check at each point: crossval.parquet)", table(per)
    )


def _span(counts: pd.Series) -> str:
    """A range of whole counts as text: '4', or '2-8'."""
    low, high = int(counts.min()), int(counts.max())
    return f"{low}" if low == high else f"{low}-{high}"


def sass_checks(checks: pd.DataFrame, run_arch: str) -> str:
    """SASS expectations per arch (the run's arch first), one row per (case, opcode, expectation) over its kernels."""
    out = []
    for arch in sorted(checks["arch"].unique(), key=lambda a: (a != run_arch, a)):
        g = checks[checks["arch"] == arch]
        per = g.groupby(["case", "opcode", "expect", "scope"], as_index=False).agg(
            kernels=("verdict", "size"),
            agree=("verdict", lambda v: int((v == "agree").sum())),
            disagree=("verdict", lambda v: int((v == "disagree").sum())),
            counts=("count", _span),
        )
        out.append(
            fold(
                f"{html.escape(str(arch))}: {len(per)} expectations over {len(g)} kernel checks, "
                f"{int((g['verdict'] == 'disagree').sum())} disagree",
                table(per),
            )
        )
    return "".join(out)


def sass_per_op(sass: pd.DataFrame, cases: pd.DataFrame | None, run_arch: str) -> str:
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


def _long(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of the long (measured) kernel variant."""
    return df[df["variant"] == "long"]
