"""Report view of the pipelines category: the instruction reference table, the co-issue matrix and the pipe
topology it supports, subnormal-operand penalties and dispatch latency. Every number is a row of the figures table
(the derived ones from analysis.derived.pipelines), shown with its status; the heatmap draws the same figures."""

from __future__ import annotations

import html
import re

import pandas as pd

from smdissect.analysis.derived.pipelines.coissue import PARTLY_INDEX, SEPARABLE, SHARED_INDEX, pair_figure_names
from smdissect.analysis.derived.pipelines.subnormal import subnormal_ops
from smdissect.core.archs import ISSUE_RATE
from smdissect.core.tables import point_text
from smdissect.pages import charts, evidence, markup

CATEGORY = "pipelines"

PIPE_SHARE = 0.1  # pipes counting at least this share of the busiest pipe's instructions (loop overhead is less)
KNEE_NAME = re.compile(r" ILP knee at warps=(?P<warps>\d+)$")
FIGURE_COLUMNS = ("figure", "value", "unit", "spread", "status", "reason")


def _frame(frames: dict[str, pd.DataFrame], name: str) -> pd.DataFrame:
    """A table of the category, or an empty one when it is missing."""
    df = frames.get(name)
    return df if df is not None else pd.DataFrame()


def _num(params: pd.Series, key: str) -> pd.Series:
    """One swept parameter of every row, as numbers (NaN where absent)."""
    return pd.to_numeric(params.map(lambda p: evidence.param(p, key)), errors="coerce")


# --- instruction reference table -------------------------------------------------------------------------


def sass_per_op(sass: pd.DataFrame) -> pd.DataFrame:
    """Per (arch, case): opcodes of the long ilp-1 kernel issued at least half as often as the op, with count/ops."""
    if sass.empty:
        return pd.DataFrame(columns=["arch", "case", "sass"])
    s = sass[(sass["variant"] == "long") & (_num(sass["params"], "ilp").fillna(1) == 1) & (sass["ops"] > 0)]
    s = (
        s[s["count"] >= 0.5 * s["ops"]]
        .sort_values("count", ascending=False)
        .drop_duplicates(["arch", "case", "opcode"])
    )
    terms = s["opcode"] + " x" + (s["count"] / s["ops"]).map(lambda r: f"{round(r, 2):g}")
    return s.assign(sass=terms).groupby(["arch", "case"], as_index=False)["sass"].agg(", ".join)


def _pipes_per_case(pipes: pd.DataFrame) -> dict[str, str]:
    """The pipes ncu counts each case's long ilp-1 kernel on (most warps), with each pipe's share of the busiest."""
    if pipes.empty:
        return {}
    p = pipes[(pipes["variant"] == "long") & (_num(pipes["params"], "ilp") == 1)].copy()
    p["warps"] = _num(p["params"], "warps").fillna(1)
    p = p[p["warps"] == p.groupby("case")["warps"].transform("max")]
    out = {}
    for case, g in p.groupby("case"):
        counts = g.groupby("pipe")["inst_executed"].mean().sort_values(ascending=False)
        top = counts.iloc[0] if len(counts) else 0
        busy = counts[counts >= PIPE_SHARE * top] if top > 0 else counts.iloc[0:0]
        out[case] = ", ".join(f"{pipe} ({n / top:.0%})" for pipe, n in busy.items())
    return out


def _chain_cases(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The chain cases with their PTX and claimed pipe: from the manifest, else from the figures and SASS tables."""
    cases = _frame(frames, "cases")
    if not cases.empty and "case" in cases:
        kind = cases["kind"] if "kind" in cases else pd.Series("chain", index=cases.index)
        chosen = cases[kind.fillna("chain") == "chain"]
        return chosen.reindex(columns=["case", "ptx", "pipe"])
    figs, sass = evidence.figures_of(frames, metrics=("latency", "throughput")), _frame(frames, "sass")
    ids = set(figs["case"])
    ids |= set(sass.loc[sass["variant"] == "long", "case"]) if not sass.empty else set()
    return pd.DataFrame({"case": sorted(ids), "ptx": "", "pipe": ""})


def _first(figs: pd.DataFrame) -> pd.Series | None:
    """The first of some figures, or None."""
    return figs.iloc[0] if len(figs) else None


def reference_table(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per chain case: PTX, SASS per arch, its latency and peak throughput figures (value, spread, status),
    where the peak was, its ILP knees, and the ncu pipes; a case with no figure says why it did not run."""
    figs, status = evidence.figures_of(frames), _frame(frames, "status")
    forms = sass_per_op(_frame(frames, "sass"))
    pipes = _pipes_per_case(_frame(frames, "pipes"))
    reasons = {}
    if not status.empty and {"case", "reason"} <= set(status.columns):
        reasons = status[status["reason"].fillna("") != ""].groupby("case")["reason"].first().to_dict()
    rows = []
    for c in _chain_cases(frames).itertuples(index=False):
        row: dict[str, object] = {"case": c.case, "PTX": c.ptx or ""}
        for arch, g in forms[forms["case"] == c.case].groupby("arch"):
            row[f"SASS {arch}"] = g["sass"].iloc[0]
        mine = figs[figs["case"] == c.case]
        lat = _first(mine[(mine["metric"] == "latency") & (mine["kind"] == "point")])
        thr = _first(mine[(mine["metric"] == "throughput") & (mine["kind"] == "peak")])
        if lat is None and thr is None:
            row["latency (cycle)"] = reasons.get(c.case, "not run")
        if lat is not None:
            row |= {
                "latency (cycle)": float(lat["value"]),
                "spread": markup.share(lat["spread"], lat["value"]),
                "latency status": markup.badge(str(lat["status"])),
            }
        if thr is not None:
            row |= {
                "best throughput (warp_inst/cycle/SM)": float(thr["value"]),
                "at": point_text(str(thr["params"])),
                "throughput status": markup.badge(str(thr["status"])),
            }
        for k in mine[mine["metric"] == "ilp_knee"].itertuples(index=False):
            if m := KNEE_NAME.search(str(k.figure)):
                row[f"ILP knee (warps={m.group('warps')})"] = float(k.value)
        row["ncu pipes (long, ilp 1)"] = pipes.get(c.case, "")
        row["claimed pipe"] = c.pipe or ""
        rows.append(row)
    table = pd.DataFrame(rows)
    archs = sorted((c for c in table.columns if c.startswith("SASS ")), key=lambda c: int(re.sub(r"\D", "", c)))
    knees = sorted((c for c in table.columns if c.startswith("ILP knee")), key=lambda c: int(re.sub(r"\D", "", c)))
    order = ["case", "PTX", *archs, "latency (cycle)", "spread", "latency status"]
    order += ["best throughput (warp_inst/cycle/SM)", "at", "throughput status", *knees, "ncu pipes (long, ilp 1)"]
    order += ["claimed pipe"]
    return table.reindex(columns=[c for c in order if c in table.columns])


def _reference_section(frames: dict[str, pd.DataFrame]) -> str:
    table = reference_table(frames)
    if table.empty:
        return markup.empty("no chain cases in the manifest or data")
    intro = (
        "<p>Latency: cycles per extra dependent instruction (the slope between two chain lengths). Best throughput: "
        "the peak over ILP x warps. ILP knee: the smallest ILP reaching 90% of the best throughput at that warp count "
        "(one warp: the ILP that hides the latency; the most warps: what ILP the warps leave to hide). Status and "
        "reason of every figure: the Figures section.</p>"
    )
    return intro + markup.table(table, raw=("latency status", "throughput status"))


# --- co-issue matrix and pipe topology -------------------------------------------------------------------------


def pair_cells(figs: pd.DataFrame, what: str) -> pd.DataFrame:
    """The co-issue pair figures of one kind ('slowdown beyond issue', 'sharing index', ...) as x, y, value rows."""
    rows = []
    for r in figs.itertuples(index=False):
        parts = pair_figure_names(str(r.figure))
        if parts and parts[2] == what:
            rows.append({"x": parts[0], "y": parts[1], "value": float(r.value), "status": str(r.status)})
    return pd.DataFrame(rows, columns=["x", "y", "value", "status"])


def _class_order(figs: pd.DataFrame) -> list[str]:
    """The co-issue classes in index order (the order of their alone-rate figures)."""
    alone = figs[figs["metric"] == "throughput_alone"]["figure"].str.extract(r"^coissue (\S+) alone rate$")[0]
    return alone.dropna().tolist()


def _heatmap(cells: pd.DataFrame, order: list[str]) -> str:
    """Slowdown beyond the issue limit of every pair (symmetric), with the numbers as text."""
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    both = pd.concat(
        [cells.assign(a=cells["x"], b=cells["y"]), cells[cells["x"] != cells["y"]].assign(a=cells["y"], b=cells["x"])]
    )
    both = both.rename(columns={"value": "slowdown"})[["a", "b", "slowdown"]]
    base = alt.Chart(both).encode(x=alt.X("b:N", sort=order, title="class"), y=alt.Y("a:N", sort=order, title="class"))
    rect = base.mark_rect().encode(
        color=alt.Color(
            "slowdown:Q", scale=alt.Scale(scheme="orangered", domainMin=1), title="issue-limited / measured"
        )
    )
    text = base.mark_text(fontSize=11).encode(
        text=alt.Text("slowdown:Q", format=".2f"),
        color=alt.condition(alt.datum.slowdown > 1.5, alt.value("white"), alt.value("black")),
    )
    described = (
        f"Heatmap of the slowdown beyond the issue limit of every pair of {len(order)} co-issue classes "
        f"({', '.join(order)}): 1.00 is no loss beyond the dispatch port, larger numbers mean the pair shares a pipe."
    )
    return charts.svg((rect + text).properties(width=420, height=420), described, "Co-issue slowdown per pair")


def _coissue_section(frames: dict[str, pd.DataFrame]) -> str:
    figs = evidence.figures_of(frames, kinds=("derived",))
    cells = pair_cells(figs, "slowdown beyond issue")
    if cells.empty:
        return markup.empty("no co-issue figures (coissue_* cases not measured)")
    intro = (
        "<p>Every warp (16, 4 per scheduler) interleaves the two classes' independent chains in its own instruction "
        "stream, so each class gets a fixed share of the issue slots (its share of the body's instructions) instead "
        "of what a greedy scheduler leaves it. Each cell: the pair's expected total rate if the two classes only "
        f"share the dispatch port (min({ISSUE_RATE:g} warp-inst/cycle/SM, each class's alone rate / its share)) "
        "divided by the measured total (the figures 'coissue x+y slowdown beyond issue'). 1.00 = no loss beyond the "
        "issue limit; on the diagonal a class paired with itself shows 2.00 when its alone rate already saturates "
        "its pipe.</p>"
    )
    alone = figs[figs["metric"] == "throughput_alone"]
    return (
        intro
        + _heatmap(cells, _class_order(figs))
        + "<h3>Each class alone (16 warps)</h3>"
        + evidence.figure_table(alone, FIGURE_COLUMNS)
    )


def _topology_section(frames: dict[str, pd.DataFrame]) -> str:
    figs = evidence.figures_of(frames, kinds=("derived",))
    groups = figs[figs["metric"] == "pipe_groups"]
    if groups.empty:
        return markup.empty("no co-issue figures: the topology needs the coissue_* cases")
    g = groups.iloc[0]
    lines = [
        f"<p><b>Inferred on this GPU</b> ({markup.badge(str(g['status']))}): {html.escape(str(g['derivation']))}.</p>",
        "<p><b>Rule.</b> With shares f<sub>x</sub> + f<sub>y</sub> = 1 of the pair's instructions and alone rates "
        "a<sub>x</sub>, a<sub>y</sub>: if the classes only share the dispatch port, the pair's total rate is "
        f"E<sub>issue</sub> = min({ISSUE_RATE:g}, a<sub>x</sub>/f<sub>x</sub>, a<sub>y</sub>/f<sub>y</sub>) (a "
        "balanced mix makes it min(4, a<sub>x</sub> + a<sub>y</sub>)); if they time-share one pipe, "
        "E<sub>shared</sub> = 1 / (f<sub>x</sub>/a<sub>x</sub> + f<sub>y</sub>/a<sub>y</sub>). The sharing index "
        "places the measured total T between them in time per instruction: (1/T - 1/E<sub>issue</sub>) / "
        "(1/E<sub>shared</sub> - 1/E<sub>issue</sub>), 0 = only the issue limit, 1 = one shared pipe. "
        f"<i>shared pipe</i>: index &ge; {SHARED_INDEX:g}; <i>partly shared</i>: &ge; {PARTLY_INDEX:g}; below that "
        "<i>issue-limited</i> when the dispatch port is the binding term of E<sub>issue</sub>, else "
        f"<i>independent</i>; <i>cannot tell</i> (no index) when E<sub>issue</sub> is less than {SEPARABLE:g}x "
        "E<sub>shared</sub> (two classes that each fill the issue slots alone look the same shared or not). A "
        "slowdown that only reaches the issue limit says nothing about sharing a pipe. Each pair's verdict ends its "
        "derivation below.</p>",
        "<p>The paper reports for sm_120 (RTX PRO 5000) a '5 pipelines + V-pipe' model (P0: FFMA/IADD3, V-pipe: "
        "FMNMX/SIMD, P1: FP64, P2: SFU, P3, P4: tensor; 9 co-issuing pairs) against an older '4 pipelines' model. "
        "The groups above are what this GPU's clocks support for the classes measured here; compare the number of "
        "groups and which classes fall together with that model.</p>",
    ]
    index = figs[figs["metric"] == "sharing_index"]
    return "".join(lines) + evidence.figure_table(index, (*FIGURE_COLUMNS, "derivation"))


# --- subnormal operands and dispatch latency --------------------------------------------------------------------


def _subnormal_section(frames: dict[str, pd.DataFrame]) -> str:
    figs = evidence.figures_of(frames)
    cases = tuple(c for by in subnormal_ops(figs["case"].unique()).values() for c in by.values())
    penalties = figs[figs["metric"].isin(["latency_penalty", "throughput_penalty"])]
    if not cases:
        return markup.empty("no subnormal figures (<op>_normal / <op>_subnormal cases not measured)")
    measured = evidence.figures_of(frames, cases=cases, metrics=("latency", "throughput"), kinds=("point", "peak"))
    intro = (
        "<p>The same dependent chain on normal and on subnormal operands (no .ftz: subnormals computed exactly; each "
        "point checked on the GPU that the chain values really are subnormal), and with .ftz (flushed to zero, "
        "checked likewise). Penalty: subnormal latency / normal latency, normal peak throughput / subnormal peak "
        "throughput; 1.00 = no penalty (the paper: +0.12 cycle on sm_120, noise).</p>"
    )
    return (
        intro
        + evidence.figure_table(penalties, FIGURE_COLUMNS)
        + "<h3>Each case</h3>"
        + evidence.figure_table(measured, FIGURE_COLUMNS)
    )


def _dispatch_section(frames: dict[str, pd.DataFrame]) -> str:
    figs = evidence.figures_of(frames)
    derived = figs[figs["metric"].isin(["dispatch", "dispatch_slope"]) & (figs["kind"] == "derived")]
    if derived.empty:
        return markup.empty("no dispatch figures (dispatch_* cases not measured)")
    notes = []
    for case, g in derived.groupby("case", sort=False):
        first, more = _first(g[g["metric"] == "dispatch"]), _first(g[g["metric"] == "dispatch_slope"])
        parts = []
        if first is not None:
            parts.append(
                f"the first dependent op after a clock read costs {markup.number(first['value'])} cycles "
                f"beyond a back-to-back clock read ({markup.badge(str(first['status']))})"
            )
        if more is not None:
            parts.append(
                f"each further dependent op {markup.number(more['value'])} cycles ({markup.badge(str(more['status']))})"
            )
        notes.append(f"<li><b>{html.escape(str(case))}</b>: {'; '.join(parts)}</li>")
    each = figs[figs["case"].isin(derived["case"]) & figs["metric"].isin(["clock_to_clock", "elapsed"])]
    intro = (
        "<p>One lane reads clock64, runs n dependent ops on the value read and reads clock64 again; the same launch "
        "times a bare back-to-back read pair (clock_to_clock). dispatch = elapsed - clock_to_clock; at n = 1 it is "
        "the dispatch latency (the paper: 3 cycles to the first IADD3 result on sm_120), the slope over n the op's "
        "latency. A spread above 1 cycle means the measurement is broken, not noisy.</p>"
    )
    return (
        intro
        + f"<ul>{''.join(notes)}</ul>"
        + evidence.figure_table(derived, (*FIGURE_COLUMNS, "method"))
        + "<h3>Every point</h3>"
        + evidence.figure_table(each, FIGURE_COLUMNS)
    )


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The category's sections: reference table, co-issue matrix, topology, subnormal operands, dispatch latency."""
    return [
        ("Instruction reference table", _reference_section(frames)),
        ("Co-issue matrix", _coissue_section(frames)),
        ("Pipe topology", _topology_section(frames)),
        ("Subnormal operands", _subnormal_section(frames)),
        ("Dispatch latency", _dispatch_section(frames)),
    ]
