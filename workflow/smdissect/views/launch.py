"""Report view of the launch category: launch overhead, kernel-to-kernel gaps (serial, graph, PDL), cluster
launch control and the host link's bandwidth against its PCIe peak."""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from smdissect import report

MODES = {"gap_serial": "serial", "gap_graph": "graph", "gap_pdl": "PDL", "gap_graph_pdl": "graph + PDL"}
DIRECTIONS = {"h2d_pinned": "H2D pinned", "d2h_pinned": "D2H pinned", "bidir_pinned": "both ways pinned",
              "h2d_pageable": "H2D pageable"}  # fmt: skip
# PCIe generation by transfer rate (GT/s), and the share of the raw rate its line encoding leaves for data.
GENERATIONS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
ENCODING = {1: 8 / 10, 2: 8 / 10, 3: 128 / 130, 4: 128 / 130, 5: 128 / 130, 6: 242 / 256}


def _stack(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """The non-empty frames one under the other (the first, empty, when all are)."""
    filled = [p for p in parts if len(p)]
    return pd.concat(filled, ignore_index=True) if filled else parts[0]


def grid_label(ctas: float) -> str:
    """'one per SM' for the encoded ctas = 0, else the CTA count."""
    return "one per SM" if ctas == 0 else f"{int(ctas)} CTA" + ("s" if ctas != 1 else "")


def _overhead(raw: pd.DataFrame | None) -> str:
    quantities = [("launch_round_trip", "latency", "launch + synchronize round trip"),
                  ("launch_enqueue", "enqueue", "cudaLaunchKernel call (enqueue)"),
                  ("launch_enqueue", "completed", "per launch until 1000 have run")]  # fmt: skip
    parts = [report.points(raw, [case], m, ["ctas"]).assign(quantity=q) for case, m, q in quantities]
    data = _stack(parts)
    if data.empty:
        return report.empty("no launch-overhead measurements")
    data["grid"] = data["ctas"].map(grid_label)
    note = report.empty(
        "host steady_clock around an empty kernel (one warp per CTA): the round trip is the median of 200 launches "
        "each followed by cudaStreamSynchronize; enqueue is the host time of 1000 back-to-back cudaLaunchKernel "
        "calls divided by 1000"
    )
    table = data[["quantity", "grid", "value", "spread"]].rename(columns={"value": "us", "spread": "spread (us)"})
    return note + report.table(table)


def gaps(raw: pd.DataFrame | None, metric: str) -> pd.DataFrame:
    """One row per (grid, chain length), one column per launch mode: the median gap of `metric` in us."""
    data = report.points(raw, list(MODES), metric, ["ctas", "kernels"])
    if data.empty:
        return pd.DataFrame()
    data["mode"] = data["case"].map(MODES)
    table = data.pivot_table(index=["ctas", "kernels"], columns="mode", values="value")
    table = table[[m for m in MODES.values() if m in table.columns]].reset_index()
    table.insert(0, "grid", table.pop("ctas").map(grid_label))
    table.columns.name = None
    return table


def _gaps(raw: pd.DataFrame | None) -> str:
    dependent = gaps(raw, "dependent_gap")
    if dependent.empty:
        return report.empty("no kernel-to-kernel gap measurements")
    data = report.points(raw, list(MODES), "dependent_gap", ["ctas", "kernels"])
    data["mode"] = data["case"].map(MODES)
    data["grid"] = data["ctas"].map(grid_label)
    chart = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("kernels:Q", scale=alt.Scale(type="log", base=2), title="kernels in the chain"),
            y=alt.Y("value:Q", title="dependent gap (us)"),
            color=alt.Color("mode:N", sort=list(MODES.values())),
            column=alt.Column("grid:N", title=None),
        )
        .properties(width=300, height=220)
    )
    if "serial" in dependent.columns:
        for mode in [m for m in MODES.values() if m != "serial" and m in dependent.columns]:
            dependent[f"{mode} saves (us)"] = dependent["serial"] - dependent[mode]
    step = report.points(raw, ["globaltimer_step"], "step", [])
    interval = report.points(raw, ["globaltimer_step"], "update_interval", [])
    resolution = (
        f"%globaltimer as read here: smallest step {step['value'].iloc[0]:.0f} ns, updated every "
        f"{interval['value'].iloc[0]:.0f} ns on average; each gap is a difference of two readings, and the mean "
        "over a chain averages the step out"
        if len(step) and len(interval)
        else "the %globaltimer resolution was not measured"
    )
    note = report.empty(
        "dependent gap: from the last CTA end of kernel k to the first CTA of kernel k+1 returning from "
        "griddepcontrol.wait (a no-op without PDL), the mean over the chain; start gap: to the first CTA start of "
        "kernel k+1 (negative where PDL launched it while k still ran); per kernel: the chain's span over its "
        "length. A gate kernel holds the stream until the whole chain is enqueued. " + resolution
    )
    start = gaps(raw, "start_gap")
    per_kernel = gaps(raw, "per_kernel")
    return (
        report.svg(chart)
        + note
        + "<h3>Dependent gap (us)</h3>"
        + report.table(dependent)
        + "<h3>Start gap (us)</h3>"
        + report.table(start)
        + "<h3>Per kernel of the chain (us)</h3>"
        + report.table(per_kernel)
    )


def _clc(raw: pd.DataFrame | None) -> str:
    metrics = {"round_trip": "round trip (cycle)", "failed_round_trip": "failing round trip (cycle)",
               "canceled_share": "tiles run by cancel"}  # fmt: skip
    data = _stack([report.points(raw, ["clc_try_cancel"], m, ["ctas_per_sm"]).assign(metric=m) for m in metrics])
    if data.empty:
        return report.empty(
            "no cluster-launch-control measurements: clusterlaunchcontrol needs sm_100 or newer (a static row on "
            "older GPUs; its SASS is still checked)"
        )
    table = data.pivot_table(index="ctas_per_sm", columns="metric", values="value").reset_index()
    table = table.rename(columns=metrics)
    table.columns.name = None
    return report.table(table)


def generation(speed_gts: float) -> float:
    """The PCIe generation of a link's transfer rate (GT/s), NaN for a rate no generation uses."""
    return float(next((g for s, g in GENERATIONS.items() if math.isclose(s, speed_gts, rel_tol=0.02)), math.nan))


def link_peak(speed_gts: float, lanes: float) -> tuple[float, float]:
    """Per-direction peak of a link in GB/s: raw (GT/s x lanes / 8) and after its generation's line encoding."""
    raw = speed_gts * lanes / 8
    gen = generation(speed_gts)
    return raw, raw * ENCODING[int(gen)] if not math.isnan(gen) else math.nan


def _link(raw: pd.DataFrame | None) -> pd.DataFrame:
    """The link's measured attributes (one row), with its generation and peaks; empty when not read."""
    values = {m: report.points(raw, ["pcie_link"], m, [])["value"] for m in
              ("link_speed", "link_width", "max_link_speed", "max_link_width")}  # fmt: skip
    if any(v.empty for v in values.values()):
        return pd.DataFrame()
    speed, width = float(values["link_speed"].iloc[0]), float(values["link_width"].iloc[0])
    peak, data_peak = link_peak(speed, width)
    return pd.DataFrame([{
        "speed (GT/s)": speed, "width (lanes)": width, "generation": generation(speed),
        "max speed (GT/s)": float(values["max_link_speed"].iloc[0]),
        "max width (lanes)": float(values["max_link_width"].iloc[0]),
        "raw peak per direction (GB/s)": peak, "after encoding (GB/s)": data_peak,
    }])  # fmt: skip


def _host_link(raw: pd.DataFrame | None) -> str:
    data = report.points(raw, list(DIRECTIONS), "bandwidth", ["size_kb"])
    if data.empty:
        return report.empty("no host-link measurements")
    data["direction"] = data["case"].map(DIRECTIONS)
    chart = (
        alt.Chart(data[data["case"] != "h2d_pageable"])
        .mark_line(point=True)
        .encode(
            x=alt.X("size_kb:Q", scale=alt.Scale(type="log", base=4), title="copy size (KB)"),
            y=alt.Y("value:Q", title="GB/s"),
            color=alt.Color("direction:N"),
        )
        .properties(width=560, height=280)
    )
    curve = data.pivot_table(index="size_kb", columns="direction", values="value").reset_index()
    curve.columns.name = None
    link = _link(raw)
    best = data.loc[data.groupby("case")["value"].idxmax(), ["direction", "size_kb", "value"]]
    best = best.rename(columns={"value": "best GB/s", "size_kb": "at size (KB)"})
    if not link.empty:
        peak = float(link["raw peak per direction (GB/s)"].iloc[0])
        ways = best["direction"].map(lambda d: 2 if d == DIRECTIONS["bidir_pinned"] else 1)
        best["of raw link peak"] = best["best GB/s"] / (peak * ways)
        link_html = report.table(link)
    else:
        link_html = report.empty("PCIe link speed and width not read (sysfs not readable here)")
    note = report.empty(
        "cudaMemcpyAsync batches timed with CUDA events (up to 64 copies of one size per sample, at most 256 MB); "
        "both ways: H2D and D2H on two streams at once, GB/s of both; link from /sys/bus/pci, read during a copy "
        "(an idle link trains down); raw peak = GT/s x lanes / 8 per direction"
    )
    return report.svg(chart) + note + report.table(curve) + report.table(best) + link_html


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The launch category's tables and charts, each saying so when its measurements are missing."""
    raw = frames.get("raw")
    return [
        ("Launch overhead", _overhead(raw)),
        ("Kernel-to-kernel gaps: serial, graph, PDL", _gaps(raw)),
        ("Cluster launch control", _clc(raw)),
        ("Host link (PCIe) bandwidth", _host_link(raw)),
    ]
