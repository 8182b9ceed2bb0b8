"""Report view of the launch category: launch overhead, kernel-to-kernel gaps (serial, graph, PDL), cluster launch
control, the host link's bandwidth against its PCIe peak, and the host-side costs (cold launch, cudaMalloc/cudaFree,
unified-memory faults, stream and event queries). Every number is a row of the figures table
(analysis.derived.launch derives the gaps of the longest chains, what graphs and PDL save, the link's peak and each
direction's share of it, the cold launch's extra cost, the allocator's cost per GiB and the page-fault cost); the
charts are drawn from the samples."""

from __future__ import annotations

import math

import pandas as pd

from smdissect.analysis.derived.launch import DIRECTIONS, GAPS, MODES, grid_label, resolution_us
from smdissect.core import catalog
from smdissect.pages import charts, evidence, markup

CATEGORY = "launch"

COLUMNS = ("figure", "value", "unit", "spread", "status", "reason")
HOST = {**{c: label for c, (label, _) in DIRECTIONS.items()}, "h2d_pageable": "H2D pageable"}
ALLOC = {"malloc": "cudaMalloc", "free": "cudaFree", "pair": "cudaMalloc + cudaFree"}
HOST_PARTS = {  # host.cu's cases, in the order the page shows them
    "launch_cold": "Cold against warm launch",
    "malloc_free": "cudaMalloc and cudaFree",
    "managed_fault": "Unified memory: GPU page faults against prefetch",
    "stream_event_query": "Stream and event queries",
}


def timer_table(figs: pd.DataFrame, step_ns: float | None) -> str:
    """Gap figures with value and spread printed to the digit the timer has (0.01 us for 32 ns steps), not the four
    significant figures of markup.number."""
    if figs.empty:
        return ""
    rows = evidence.figure_rows(figs, COLUMNS)
    digit = resolution_us(step_ns)
    if digit is not None:
        places = max(0, -math.floor(math.log10(digit)))
        rows["value"] = [f"{v:.{places}f}" for v in figs["value"]]
        rows["spread"] = [f"{s:.{places}f} us" for s in figs["spread"]]
    return markup.table(rows, raw=("status",))


def _overhead(frames: dict[str, pd.DataFrame]) -> str:
    figs = evidence.figures_of(frames, cases=catalog.ids("launch", family="overhead"))
    if figs.empty:
        return markup.empty("no launch-overhead measurements")
    note = markup.empty(
        "host steady_clock around an empty kernel (one warp per CTA; ctas=0: one CTA per SM): the round trip is the "
        "median of 200 launches each followed by cudaStreamSynchronize; enqueue is the host time of 1000 back-to-back "
        "cudaLaunchKernel calls divided by 1000, completed the time until all 1000 have run, per launch"
    )
    return note + evidence.figure_table(figs, (*COLUMNS, "method"))


def _gaps(frames: dict[str, pd.DataFrame]) -> str:
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    raw = frames.get("raw")
    data = evidence.points(raw, list(MODES), "dependent_gap", ["ctas", "kernels"])
    figs = evidence.figures_of(frames, cases=tuple(MODES), metrics=(*GAPS, "saves_vs_serial"))
    if data.empty and figs.empty:
        return markup.empty("no kernel-to-kernel gap measurements")
    chart = ""
    if not data.empty:
        data = data.assign(mode=data["case"].map(MODES), grid=data["ctas"].map(grid_label))
        chart = charts.svg(
            alt.Chart(data)
            .mark_line(point=True)
            .encode(
                x=alt.X("kernels:Q", scale=alt.Scale(type="log", base=2), title="kernels in the chain"),
                y=alt.Y("value:Q", title="dependent gap (us)"),
                color=alt.Color("mode:N", sort=list(MODES.values())),
                column=alt.Column("grid:N", title=None),
            )
            .properties(width=300, height=220),
            f"Dependent gap between kernels (us) against the number of kernels in the chain (log 2), one panel per "
            f"grid size, one line per launch mode ({', '.join(sorted(data['mode'].unique()))}).",
            "Launch gap over chain length",
        )
    timer = evidence.figures_of(frames, cases=("globaltimer_step",))
    step = timer.loc[timer["metric"] == "step", "value"]
    step_ns = float(step.iloc[0]) if len(step) else None
    note = markup.empty(
        "dependent gap: from the last CTA end of kernel k to the first CTA of kernel k+1 returning from "
        "griddepcontrol.wait (a no-op without PDL), the mean over the chain; start gap: to the first CTA start of "
        "kernel k+1 (negative where PDL launched it while k still ran); per kernel: the chain's span over its "
        "length. A gate kernel holds the stream until the whole chain is enqueued. The figures are of the longest "
        "chain and printed to the digit %globaltimer has (its step is the globaltimer_step figure below)"
    )
    parts = [timer_table(figs[figs["metric"] == m], step_ns) for m in (*GAPS, "saves_vs_serial")]
    titles = [*(f"<h3>{w.capitalize()}</h3>" for w in GAPS.values()), "<h3>What graphs and PDL save</h3>"]
    body = "".join(t + p for t, p in zip(titles, parts, strict=True) if p)
    return chart + note + body + (evidence.figure_table(timer, COLUMNS) if len(timer) else "")


def _clc(frames: dict[str, pd.DataFrame]) -> str:
    figs = evidence.figures_of(frames, cases=("clc_try_cancel",))
    if figs.empty:
        return markup.empty(
            "no cluster-launch-control measurements: clusterlaunchcontrol needs sm_100 or newer (a static row on "
            "older GPUs; its SASS is still checked)"
        ) + evidence.not_measured(frames, ["clc_try_cancel"])
    return evidence.figure_table(figs, COLUMNS)


def _host_link(frames: dict[str, pd.DataFrame]) -> str:
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    data = evidence.points(frames.get("raw"), list(HOST), "bandwidth", ["size_kb"])
    copies = evidence.figures_of(frames, cases=tuple(HOST))
    link = evidence.figures_of(frames, cases=("pcie_link",))
    if data.empty and copies.empty and link.empty:
        return markup.empty("no host-link measurements")
    chart = ""
    if not data.empty:
        pinned = data[data["case"] != "h2d_pageable"].assign(direction=lambda d: d["case"].map(HOST))
        chart = charts.svg(
            alt.Chart(pinned)
            .mark_line(point=True)
            .encode(
                x=alt.X("size_kb:Q", scale=alt.Scale(type="log", base=4), title="copy size (KiB)"),
                y=alt.Y("value:Q", title="GB/s"),
                color=alt.Color("direction:N"),
            )
            .properties(width=560, height=280),
            f"Host-device copy bandwidth (GB/s) against copy size (KiB, log 4), one line per pinned direction "
            f"({', '.join(sorted(pinned['direction'].unique()))}).",
            "Pinned host copies: bandwidth over size",
        )
    note = markup.empty(
        "cudaMemcpyAsync batches timed with CUDA events (up to 64 copies of one size per sample, at most 256 MB); "
        "both ways: H2D and D2H on two streams at once, GB/s of both; link from /sys/bus/pci, read during a copy "
        "(an idle link trains down); shares are of the raw rate (GT/s x lanes / 8 per direction), as published PCIe "
        "utilisation is given"
    )
    link_html = (
        evidence.figure_table(link, (*COLUMNS, "derivation"))
        if len(link)
        else markup.empty("PCIe link speed and width not read (sysfs not readable here)")
    )
    return chart + note + evidence.figure_table(copies, (*COLUMNS, "derivation")) + link_html


def _alloc_chart(raw: pd.DataFrame | None) -> str:
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    data = pd.concat([evidence.points(raw, ["malloc_free"], m, ["size_kb"]).assign(call=m) for m in ALLOC])
    if data.empty:
        return ""
    data = data.assign(call=data["call"].map(ALLOC))
    return charts.svg(
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("size_kb:Q", scale=alt.Scale(type="log", base=4), title="allocation size (KiB)"),
            y=alt.Y("value:Q", scale=alt.Scale(type="log"), title="host time per call (us, log)"),
            color=alt.Color("call:N"),
        )
        .properties(width=560, height=260),
        "Host time of one cudaMalloc, of the cudaFree that follows it and of the pair (us, log) against the allocation "
        "size (KiB, log 4), one line each (median of 32 pairs per sample).",
        "cudaMalloc and cudaFree over size",
    )


def _host_costs(frames: dict[str, pd.DataFrame]) -> str:
    figs = evidence.figures_of(frames, cases=catalog.ids("launch", family="host"))
    if figs.empty:
        return markup.empty("no host-side cost measurements") + evidence.not_measured(
            frames, list(catalog.ids("launch", family="host"))
        )
    note = markup.empty(
        "host steady_clock: a cold launch is the first launch of a kernel never launched in the process (against "
        "the same kernel's later launches); cudaMalloc and cudaFree of one size, pair by pair; unified memory written "
        "by the host then touched by a kernel (one thread per 4 KiB page) with and without cudaMemPrefetchAsync, per "
        "MiB; queries, records and synchronizes: each call timed alone, the median of 1000"
    )
    parts = [
        (title, evidence.figure_table(figs[figs["case"] == case], (*COLUMNS, "derivation")))
        for case, title in HOST_PARTS.items()
        if (figs["case"] == case).any()
    ]
    body = "".join(f"<h3>{title}</h3>{html}" for title, html in parts)
    return note + _alloc_chart(frames.get("raw")) + body


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The launch category's tables and charts, each saying so when its measurements are missing."""
    return [
        ("Launch overhead", _overhead(frames)),
        ("Kernel-to-kernel gaps: serial, graph, PDL", _gaps(frames)),
        ("Cluster launch control", _clc(frames)),
        ("Host link (PCIe) bandwidth", _host_link(frames)),
        ("Host-side costs: cold launch, allocation, unified memory, queries", _host_costs(frames)),
    ]
