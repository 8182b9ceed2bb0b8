"""Report view of the async category: TMA bandwidth against outstanding copies and CTAs, the TMA / LDG bandwidth
ratio of one run, dependent copy latency by level and size, L2 cache hints, and synchronisation costs. Every number is
a row of the figures table (analysis.derived.async_ derives the ratios, knees and slopes); charts are drawn from the
samples."""

from __future__ import annotations

import pandas as pd

from smdissect.analysis.derived import async_ as derived
from smdissect.core import catalog
from smdissect.pages import charts, evidence, markup

CATEGORY = "async"

TMA = ["bulk_depth", "bulk_ctas", "tensor_depth", "tensor_ctas"]
LATENCY = catalog.ids("async", family="latency")
COSTS = catalog.ids("async", family="costs")
COLUMNS = ("figure", "value", "unit", "spread", "status", "reason")
WITH_DERIVATION = (*COLUMNS, "derivation")


def _curve_chart(data: pd.DataFrame, axis: str, title: str) -> str:
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    data = data.assign(series=data["case"] + " " + data["bytes"].astype(int).astype(str) + " B")
    if "outstanding" in data and axis != "outstanding":
        data["series"] += " x" + data["outstanding"].astype(int).astype(str)
    chart = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X(f"{axis}:Q", scale=alt.Scale(type="log", base=2), title=title),
            y=alt.Y("value:Q", title="GB/s"),
            color=alt.Color("series:N", title=None),
        )
        .properties(width=560, height=280)
    )
    described = (
        f"TMA bandwidth (GB/s) against {title} (log 2), one line per case, copy size and copies in flight: "
        f"{', '.join(sorted(data['series'].unique()))}."
    )
    return charts.svg(chart, described, f"TMA bandwidth over {title}")


def _sweep(
    frames: dict[str, pd.DataFrame], cases: list[str], keys: list[str], title: str, missing: str, note: str
) -> str:
    """TMA bandwidth along keys[0] (the chart, from the samples), then the cases' figures: each one's peak and the
    first keys[0] within 90% of each curve's best (derived.async_)."""
    data = evidence.points(frames.get("raw"), cases, "bandwidth", keys)
    figs = evidence.figures_of(frames, cases=tuple(cases), metrics=("bandwidth", f"{keys[0]}_for_90pct"))
    if data.empty and figs.empty:
        return markup.empty(missing)
    chart = _curve_chart(data, keys[0], title) if not data.empty else ""
    return chart + markup.empty(note) + evidence.figure_table(figs, WITH_DERIVATION)


def _depth(frames: dict[str, pd.DataFrame]) -> str:
    note = (
        "one CTA per SM, one producer thread keeping N copies in flight, four warps summing every copied word; a "
        "knee whose curve still rises at the end of its sweep is a lower bound (its derivation says so); the paper "
        "(RTX PRO 5000, sm_120) reports that 90% of peak needs at least 32 outstanding copies"
    )
    return _sweep(
        frames,
        ["bulk_depth", "tensor_depth"],
        ["outstanding", "bytes", "ctas"],
        "copies in flight per CTA",
        "no TMA outstanding-copy measurements",
        note,
    )


def _ctas(frames: dict[str, pd.DataFrame]) -> str:
    note = "the paper (RTX PRO 5000, sm_120, 110 SMs) saturates DRAM with about 76 CTAs of TMA copies"
    return _sweep(
        frames,
        ["bulk_ctas", "tensor_ctas"],
        ["ctas", "outstanding", "bytes"],
        "CTAs",
        "no TMA CTA-count measurements",
        note,
    )


def _versus_ldg(frames: dict[str, pd.DataFrame]) -> str:
    ratios = evidence.figures_of(frames, metrics=("vs_ldg",))
    streams = evidence.figures_of(frames, cases=("cp_async_stream", "ldg_stream"), kinds=("peak",))
    if ratios.empty and streams.empty:
        return markup.empty("no streaming bandwidth measurements")
    note = (
        "each stream's best point over the best LDG.128 point of the same binary, buffer and run; the bulk path's "
        "target is 0.90; a best taken at the end of a sweep still rising makes the ratio a lower bound"
    )
    return markup.empty(note) + evidence.figure_table(pd.concat([ratios, streams]), WITH_DERIVATION)


def _latency(frames: dict[str, pd.DataFrame]) -> str:
    figs = evidence.figures_of(frames, cases=tuple(LATENCY), metrics=("latency",))
    slopes = evidence.figures_of(frames, cases=tuple(LATENCY), metrics=("cycles_per_kb",))
    if figs.empty and slopes.empty:
        return markup.empty("no async-copy latency measurements")
    note = markup.empty(
        "one thread, each copy's slot names the next (random cycle): a step is issue, transfer, completion, the "
        "wait and one ld.shared; L1/L2 footprints are read first, DRAM ones (1 GB) include TLB misses; .cg and "
        "the bulk-copy engine bypass the L1, so their smallest footprint is an L2 hit"
    )
    rows = evidence.figure_rows(figs, COLUMNS)
    footprints = figs["params"].map(lambda p: evidence.param(p, "footprint_kb", 0))
    rows.insert(1, "level", [derived.level(c, float(kb)) for c, kb in zip(figs["case"], footprints, strict=True)])
    table = markup.table(rows, raw=("status",)) if len(rows) else ""
    per_kb = evidence.figure_table(slopes, WITH_DERIVATION) if len(slopes) else ""
    return note + table + per_kb


def _hints(frames: dict[str, pd.DataFrame]) -> str:
    figs = evidence.figures_of(frames, cases=("bulk_l2_hint",))
    if figs.empty:
        return markup.empty("no L2 cache-hint measurements")
    note = markup.empty(
        "policies: 0 no hint, 1 evict_last working set, 2 evict_first streaming set, 3 evict_last + persisting "
        "set-aside. A working set of half the L2 is bulk-read, then 4 L2s of other data streamed, then the working "
        "set re-read (timed): a hint that protects the working set turns the re-read into L2 hits. The method says "
        "why this re-read cannot show it"
    )
    method = next((m for m in figs["method"] if m), "")
    return note + (markup.empty(f"method: {method}") if method else "") + evidence.figure_table(figs, COLUMNS)


def _costs(frames: dict[str, pd.DataFrame]) -> str:
    figs = evidence.figures_of(frames, cases=tuple(COSTS))
    if figs.empty:
        return markup.empty("no cost measurements")
    note = markup.empty(
        "cycles per op of one thread's back-to-back ops (slope between n and 2n). elect.sync: ptxas compiles it to "
        "ELECT, which reads no operand and keeps one per basic block, so each step is one loop iteration whose exit "
        "branch waits on the step's lane id; its cost is the step minus the control (the same loop in the same "
        "launch without the ELECT)"
    )
    return note + evidence.figure_table(figs, COLUMNS)


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The async category's charts and tables, each saying so when its measurements are missing."""
    return [
        ("TMA bandwidth versus copies in flight per CTA", _depth(frames)),
        ("TMA bandwidth versus CTAs", _ctas(frames)),
        ("TMA bulk versus LDG.128 (same run)", _versus_ldg(frames)),
        ("Dependent copy latency (L1 / L2 / DRAM)", _latency(frames)),
        ("L2 cache hints", _hints(frames)),
        ("Synchronisation costs", _costs(frames)),
    ]
