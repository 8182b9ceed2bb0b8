"""Report view of the scheduler category: sub-core binding, warp scaling, scoreboard depth, control codes,
binary-patching outcomes, setmaxnreg cost and the register file. Every number is a row of the figures table (the
derived ones from smdissect.analysis.derived.scheduler), shown with its status; the charts draw the raw samples."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from smdissect.analysis.derived.scheduler.control_codes import chain_stalls
from smdissect.core import catalog
from smdissect.pages import charts, evidence, markup

CATEGORY = "scheduler"

FIGURE_COLUMNS = ("figure", "value", "unit", "spread", "status", "reason")


def _figures(
    frames: dict[str, pd.DataFrame], cases: tuple[str, ...], metrics: tuple[str, ...] = (), kinds: tuple[str, ...] = ()
) -> str:
    """The figures of some cases as a table with their statuses."""
    return evidence.figure_table(evidence.figures_of(frames, cases=cases, metrics=metrics, kinds=kinds), FIGURE_COLUMNS)


def _subcore(frames: dict[str, pd.DataFrame]) -> str:
    """Warp 0's issue rate beside each partner warp, colored by whether %warpid % 4 matched; the binding figures."""
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    raw = frames.get("raw")
    cases = ["subcore_ffma", "subcore_mufu"]
    thr = evidence.points(raw, cases, "throughput", ["partner"])
    if thr.empty:
        return markup.empty("no sub-core measurements")
    same = evidence.points(raw, cases, "same_subpartition", ["partner"])[["case", "params", "value"]]
    data = thr.merge(same.rename(columns={"value": "same"}), on=["case", "params"], how="left")
    data["partner warp"] = data.apply(lambda r: "none" if r["partner"] == 0 else f"warp {int(r['partner'])}", axis=1)
    data["sub-partition"] = data["same"].map(lambda s: "same as warp 0" if s >= 0.5 else "different")
    data.loc[data["partner"] == 0, "sub-partition"] = "alone"
    chart = (
        alt.Chart(data[["case", "partner warp", "value", "sub-partition"]])
        .mark_bar()
        .encode(
            x=alt.X("partner warp:N", sort=None),
            y=alt.Y("value:Q", title="warp 0 throughput (warp_inst/cycle)"),
            color=alt.Color("sub-partition:N"),
            column=alt.Column("case:N", title=None),
        )
        .properties(width=260, height=200)
    )
    return (
        charts.svg(
            chart,
            "Warp 0's throughput (warp_inst/cycle) alone and beside each partner warp, one panel per case, bars "
            "coloured by whether the partner shares warp 0's sub-partition.",
            "Warp 0 throughput beside each partner warp",
        )
        + _figures(frames, tuple(cases), kinds=("derived",))
        + "<h3>%warpid against the warp index (warpid_map)</h3>"
        + _figures(frames, ("warpid_map",))
    )


def _warps(frames: dict[str, pd.DataFrame]) -> str:
    """Throughput per SM against the resident warps measured on it, one line per pipe; saturation and residency."""
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    raw = frames.get("raw")
    timed = set(catalog.ids("scheduler", measure="throughput"))
    cases = [c for c in catalog.ids("scheduler", measure="resident_warps") if c in timed]
    thr = evidence.points(raw, cases, "throughput", ["warps"])
    if thr.empty:
        return markup.empty("no warp-scaling measurements")
    res = evidence.points(raw, cases, "resident_warps", ["warps"])[["case", "params", "value"]]
    data = thr.merge(res.rename(columns={"value": "resident"}), on=["case", "params"], how="left")
    chart = (
        alt.Chart(data[["case", "resident", "value"]])
        .mark_line(point=True)
        .encode(
            x=alt.X("resident:Q", title="resident warps per SM (measured)"),
            y=alt.Y("value:Q", title="throughput (warp_inst/cycle/SM)"),
            color=alt.Color("case:N"),
        )
        .properties(width=420, height=260)
    )
    return (
        charts.svg(
            chart,
            f"Throughput (warp_inst/cycle/SM) against the resident warps per SM measured, one line per case "
            f"({', '.join(sorted(data['case'].unique()))}).",
            "Throughput over resident warps",
        )
        + _figures(frames, tuple(cases))
        + "<h3>Most co-resident warps and CTAs per SM</h3>"
        + _figures(frames, ("max_resident",))
    )


def _scoreboard(frames: dict[str, pd.DataFrame]) -> str:
    """Cycles per iteration against independent loads in flight, and the scoreboard depth they give."""
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    data = evidence.points(frames.get("raw"), ["scoreboard_depth"], "cycles_per_iteration", ["loads"])
    if data.empty:
        return markup.empty("no scoreboard measurements")
    chart = (
        alt.Chart(data[["loads", "value"]])
        .mark_line(point=True)
        .encode(
            x=alt.X("loads:Q", title="independent loads issued before the first use"),
            y=alt.Y("value:Q", title="cycles per iteration"),
        )
        .properties(width=420, height=240)
    )
    depth = evidence.figures_of(frames, cases=("scoreboard_depth",), kinds=("derived",))
    each = evidence.figures_of(frames, cases=("scoreboard_depth",), kinds=("each", "point", "peak"))
    return (
        charts.svg(
            chart,
            f"Cycles per loop iteration against the independent loads issued before the first use (1 to "
            f"{int(data['loads'].max())}): where it starts to rise, the scoreboard is full.",
            "Scoreboard: cycles per iteration over loads in flight",
        )
        + evidence.figure_table(depth, (*FIGURE_COLUMNS, "derivation", "method"))
        + "<h3>Every load count</h3>"
        + evidence.figure_table(each, FIGURE_COLUMNS)
    )


def _controlcodes(frames: dict[str, pd.DataFrame]) -> str:
    """The compiler's stall counts of the chain kernels (static SASS), the figures made of them where the figures
    stage had the table, and the latencies measured on the same chains."""
    codes = frames.get("controlcodes")
    if codes is None or codes.empty:
        return markup.empty("no decoded control codes (the sass stage's controlcodes table is missing)")
    raw = frames.get("raw")
    run_arch = str(raw["arch"].iloc[0]) if raw is not None and len(raw) and "arch" in raw.columns else ""
    shown = codes[codes["arch"] == run_arch] if run_arch and "arch" in codes.columns else codes
    stalls = evidence.figures_of(frames, metrics=("compiler_stall",))
    summary = (
        evidence.figure_table(stalls, FIGURE_COLUMNS)
        if len(stalls)
        else "<p>The stall counts ptxas encodes (static SASS, not measured):</p>" + markup.table(chain_stalls(shown))
    )
    measured = evidence.figures_of(frames, metrics=("latency",))
    first = shown[shown["kernel"] == "ffma_chain"].head(48)
    detail = "<h3>ffma_chain, first instructions</h3>" + markup.table(first) if not first.empty else ""
    latency = (
        "<h3>Latency measured on the chains</h3>" + evidence.figure_table(measured, FIGURE_COLUMNS)
        if len(measured)
        else ""
    )
    return summary + latency + detail


def _patching(frames: dict[str, pd.DataFrame]) -> str:
    """Stall count k of the chain FFMAs: wrong results and speed; the yield flag: cycles per iteration."""
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    parts = []
    stall = evidence.figures_of(frames, cases=("stall_patch",))
    if len(stall):
        derived = stall[stall["kind"] == "derived"]
        parts.append(
            "<h3>Stall count patched to k (4 warps x 32 threads)</h3>"
            + evidence.figure_table(derived, (*FIGURE_COLUMNS, "derivation"))
            + evidence.figure_table(stall[stall["kind"] != "derived"], FIGURE_COLUMNS)
        )
    yld = evidence.points(frames.get("raw"), ["yield_patch"], "cycles_per_iteration", ["warps", "flipped"])
    if not yld.empty:
        yld["yield flag"] = yld["flipped"].map({0: "compiler's", 1: "inverted"})
        chart = (
            alt.Chart(yld[["warps", "value", "yield flag"]])
            .mark_line(point=True)
            .encode(
                x=alt.X("warps:Q", scale=alt.Scale(type="log", base=2), title="warps in the CTA"),
                y=alt.Y("value:Q", title="cycles per iteration (128 dependent FFMAs)"),
                color=alt.Color("yield flag:N"),
            )
            .properties(width=420, height=240)
        )
        parts.append(
            "<h3>Yield flag of the chain FFMAs</h3>"
            + charts.svg(
                chart,
                "Cycles per iteration of 128 dependent FFMAs against warps in the CTA (log 2), with the compiler's "
                "yield flags and with them inverted.",
                "Yield flag: cycles per iteration over warps",
            )
            + _figures(frames, ("yield_patch",), kinds=("derived",))
        )
    return "".join(parts) or markup.empty("no patching measurements")


def _occupancy_chart(raw: pd.DataFrame) -> str:
    """Warps resident per SM (measured, and the occupancy API's model) against ptxas's registers a thread."""
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    regs = evidence.points(raw, ["reg_occupancy"], "registers", ["live"])[["params", "value"]]
    series = []
    for metric, label in (("resident_warps", "measured"), ("api_warps", "occupancy API")):
        pts = evidence.points(raw, ["reg_occupancy"], metric, ["live"])[["params", "value"]]
        series.append(pts.merge(regs.rename(columns={"value": "registers"}), on="params").assign(source=label))
    data = pd.concat(series, ignore_index=True)
    if data.empty:
        return ""
    chart = (
        alt.Chart(data[["registers", "value", "source"]])
        .mark_line(point=True, interpolate="step-after")
        .encode(
            x=alt.X("registers:Q", title="registers a thread (ptxas)"),
            y=alt.Y("value:Q", title="warps resident per SM"),
            color=alt.Color("source:N"),
            strokeDash=alt.StrokeDash("source:N"),
        )
        .properties(width=420, height=240)
    )
    return charts.svg(
        chart,
        "Warps resident at once on one SM (2-warp CTAs spinning on clock64, median over SMs) and the occupancy API's "
        "prediction, against the registers ptxas gave each thread: each step down is one warp fewer per partition.",
        "Resident warps over registers a thread",
    )


def _reuse_chart(raw: pd.DataFrame) -> str:
    """The 8-chain FFMA rate against warps, with the compiler's .reuse flags and with them cleared."""
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    data = evidence.points(raw, ["reuse_patch"], "throughput", ["warps", "cleared"])
    if data.empty:
        return ""
    data["reuse flags"] = data["cleared"].map({0: "compiler's", 1: "cleared"})
    chart = (
        alt.Chart(data[["warps", "value", "reuse flags"]])
        .mark_line(point=True)
        .encode(
            x=alt.X("warps:Q", title="warps in the CTA (one SM)"),
            y=alt.Y("value:Q", title="FFMA throughput (warp_inst/cycle/SM)"),
            color=alt.Color("reuse flags:N"),
        )
        .properties(width=420, height=240)
    )
    return charts.svg(
        chart,
        "FFMA throughput of 8 independent chains a thread sharing a and b, against warps in one CTA, with the "
        ".reuse flags ptxas set and with every one cleared in the cubin.",
        "Reuse flags: FFMA throughput over warps",
    )


def _regfile(frames: dict[str, pd.DataFrame]) -> str:
    """Occupancy against registers a thread and the register file it implies; what the operand reuse cache saves."""
    raw = frames.get("raw")
    occupancy, reuse = _occupancy_chart(raw), _reuse_chart(raw)
    parts = []
    if occupancy:
        fitted = evidence.figures_of(frames, cases=("reg_occupancy",), kinds=("derived",))
        none = markup.empty(
            "no register-file size, allocation unit and partition count give every point's resident warps"
        )
        parts.append(
            "<h3>Registers per SM and the allocation unit</h3>"
            + occupancy
            + (evidence.figure_table(fitted, (*FIGURE_COLUMNS, "derivation", "method")) if len(fitted) else none)
            + "<h3>Every register count</h3>"
            + _figures(frames, ("reg_occupancy",), kinds=("each",))
        )
    if reuse:
        parts.append("<h3>Operand reuse cache</h3>" + reuse + _figures(frames, ("reuse_patch",), kinds=("derived",)))
    return "".join(parts) or markup.empty("no register-file measurements")


def _setmaxnreg(frames: dict[str, pd.DataFrame]) -> str:
    """Cycles per setmaxnreg.dec and .inc, clock-read overhead subtracted."""
    figs = evidence.figures_of(frames, cases=("setmaxnreg",))
    if figs.empty:
        return markup.empty("no setmaxnreg measurements")
    return evidence.figure_table(figs, (*FIGURE_COLUMNS, "derivation", "method"))


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The category's sections, each saying so when its table is missing or empty."""
    parts: list[tuple[str, Callable[[], str]]] = [
        ("Sub-core binding (warpid % 4)", lambda: _subcore(frames)),
        ("Latency hiding: throughput vs resident warps", lambda: _warps(frames)),
        ("Scoreboard depth", lambda: _scoreboard(frames)),
        ("Control codes of the chain kernels", lambda: _controlcodes(frames)),
        ("Binary patching", lambda: _patching(frames)),
        ("setmaxnreg cost", lambda: _setmaxnreg(frames)),
        ("Register file: occupancy and operand reuse", lambda: _regfile(frames)),
    ]
    return [(title, render()) for title, render in parts]
