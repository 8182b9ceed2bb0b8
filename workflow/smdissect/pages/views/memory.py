"""Report view of the memory category: the latency staircase and its levels, the L2 near and far latencies, load
flavours, shared memory, memory-level parallelism, bandwidth against the card's peak, and atomics. Every number it
states is a row of frames['figures'] (analysis.derived.memory and the manifest's rules), shown with its status; the
charts draw the samples."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd

from smdissect.analysis import latency_modes
from smdissect.analysis.derived.memory.bandwidth import LIBRARIES
from smdissect.analysis.derived.memory.levels import MIN_POINTS, NEAR, PAGE_KB, stride_label
from smdissect.analysis.derived.memory.mlp import KNEE
from smdissect.core import catalog
from smdissect.core.tables import kb_text, parse_params
from smdissect.pages import charts, evidence, markup

CATEGORY = "memory"

FLAVOURS = ["default", "ca", "cg", "cs", "lu", "cv", "nc", "const"]
OLD_NEAR_FAR = ["latency_near", "latency_far", "far_share", "outlier_share"]  # chase_near_far before load_latency
BANDWIDTH = ["dram_read", "dram_write", "dram_copy", "l2_read", "l1_read", "smem_read", *LIBRARIES]
BIN = 2  # cycles per bar of the per-load latency histogram
LEVEL = re.compile(r"^chase (?P<level>.+) latency \((?P<stride>.+)\)$")  # a level's latency figure


def _figures(frames: dict[str, pd.DataFrame], cases: list[str], metrics: tuple[str, ...] = ()) -> str:
    """The figures of `cases` as a table with their status (what the section states)."""
    return evidence.figure_table(evidence.figures_of(frames, cases=tuple(cases), metrics=metrics))


def levels(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The chase's level figures: level, stride label, latency and the footprints (KB) of the points they stand on."""
    figs = evidence.figures_of(frames, cases=("chase",))
    rows = []
    for f in figs.itertuples(index=False):
        found = LEVEL.match(str(f.figure))
        if not found:
            continue
        kbs = [float(parse_params(p)["footprint_kb"]) for p in json.loads(f.points or "[]")]
        if kbs:
            rows.append(
                {
                    "level": found["level"],
                    "stride": found["stride"],
                    "latency": float(f.value),
                    "from": min(kbs),
                    "to": max(kbs),
                    "points": json.loads(f.points),
                    "status": f.status,
                }
            )
    return pd.DataFrame(rows, columns=["level", "stride", "latency", "from", "to", "points", "status"])


def _staircase(frames: dict[str, pd.DataFrame]) -> str:
    """The staircase chart, how its levels are found, the chase's figures and the table of its points."""
    raw = frames.get("raw")
    data = evidence.points(raw, ["chase"], "latency", ["footprint_kb", "stride_b"])
    if data.empty:
        return markup.empty("no pointer-chase measurements")
    data["stride"] = data["stride_b"].map(stride_label)
    found = levels(frames)
    on = {p: lv.level for lv in found.itertuples(index=False) for p in lv.points}
    data["region"] = data["params"].map(lambda p: on.get(p, "transition"))
    data["point"] = data["region"].map(lambda r: "transition" if r == "transition" else "on a level")
    note = markup.empty(
        f"levels (derived): at least {MIN_POINTS} consecutive footprints each within {NEAR:.0%} of "
        "their median, named L1, L2, DRAM in footprint order; a level's capacity is the bytes of distinct 128 B lines "
        "at its last footprint (the footprint up to a 128 B stride, 1/16 of it at 2048 B: a cache holds lines, not "
        "the bytes a strided chain skips), the next point, off it, bounding it, and is checked against what the "
        "device reports; the points between two levels are transitions: they straddle a cache's "
        "capacity, so their latency mixes hits and misses. Every slot of the chain is read before the timed steps "
        "(caches and TLB warmed: untimed whole cycles of the chase, or one warp's in-order read of every slot before "
        "each of 8 windows of a chain too long to walk); beyond the TLB's reach the warm-up cannot keep every page "
        "translated, so the DRAM level includes TLB misses"
    )
    return (
        _staircase_chart(data, found)
        + note
        + _figures(frames, ["chase"])
        + "<h3>Points (the evidence of the levels; their latencies are in the chart and the every-point table)</h3>"
        + markup.table(_staircase_points(raw, data))
    )


def _staircase_chart(data: pd.DataFrame, found: pd.DataFrame) -> str:
    """The chase's latency over footprint per stride, each level drawn as a labelled bar over its footprints."""
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    x = alt.X("footprint_kb:Q", scale=alt.Scale(type="log"), axis=charts.kib_axis(data["footprint_kb"], "footprint"))
    color = alt.Color("stride:N", title="stride")
    lines = (
        alt.Chart(data)
        .mark_line(opacity=0.6)
        .encode(x=x, y=alt.Y("value:Q", title="latency (cycle per load)"), color=color)
    )
    marks = (
        alt.Chart(data)
        .mark_point(filled=True)
        .encode(x=x, y="value:Q", color=color, shape=alt.Shape("point:N", title="point"))
    )
    chart = lines + marks
    if len(found):
        span = (
            alt.Chart(found)
            .mark_rule(strokeWidth=3, opacity=0.5)
            .encode(
                x=alt.X("from:Q", scale=alt.Scale(type="log")), x2="to:Q", y="latency:Q", color=alt.Color("stride:N")
            )
        )
        text = (
            alt.Chart(_labels(found))
            .mark_text(dy=-9, fontSize=11, fontWeight="bold")
            .encode(x=alt.X("middle:Q", scale=alt.Scale(type="log")), y="latency:Q", text="label:N")
        )
        chart = chart + span + text
    described = (
        f"Pointer-chase latency (cycles per load) against footprint (log, ticks at powers of two) for "
        f"{data['stride'].nunique()} strides, each detected level drawn as a bar over its footprints and labelled: "
        + "; ".join(_labels(found)["label"])
        + "."
        if len(found)
        else "Pointer-chase latency (cycles per load) against footprint: no level detected."
    )
    return charts.svg(chart.properties(width=640, height=320), described, "Pointer-chase latency staircase")


def _staircase_points(raw: pd.DataFrame | None, data: pd.DataFrame) -> pd.DataFrame:
    """Each chase point's footprint, stride, region (level or transition), timed loads and 2 MB pages."""
    rounds = derived_loads(raw, "chase")
    on_points = data.assign(
        loads=data["params"].map(rounds), pages_2mb=np.ceil(data["footprint_kb"] / PAGE_KB).astype(int)
    )
    return on_points[["footprint_kb", "stride", "region", "loads", "pages_2mb"]].rename(
        columns={"loads": "timed loads per sample", "pages_2mb": "2 MB pages"}
    )


def _labels(found: pd.DataFrame) -> pd.DataFrame:
    """One annotation per level over every stride: its name and latency figure(s), over the footprints it spans."""
    rows = []
    for level, g in found.groupby("level", sort=False):
        low, high = g["latency"].min(), g["latency"].max()
        value = markup.number(low) if high - low <= 0.005 * low else f"{markup.number(low)}-{markup.number(high)}"
        rows.append(
            {"label": f"{level}: {value} cycles", "latency": high, "middle": math.sqrt(g["from"].min() * g["to"].min())}
        )
    return pd.DataFrame(rows)


def derived_loads(raw: pd.DataFrame | None, case: str) -> pd.Series:
    """Params -> dependent loads a sample of a chase case averages: its records' iterations n, timed as n + 2n."""
    if raw is None or raw.empty:
        return pd.Series(dtype=float)
    return raw[raw["case"] == case].groupby("params")["iterations"].max() * 3


def histogram(raw: pd.DataFrame) -> pd.DataFrame:
    """Per chase_near_far point, BIN-cycle bars of its L2 hits, each on its side of the cut of two clusters."""
    loads = raw[(raw["case"] == "chase_near_far") & (raw["metric"] == "load_latency")]
    bars = []
    order = sorted(
        loads["params"].unique(), key=lambda p: (evidence.param(p, "footprint_kb"), evidence.param(p, "sm_slot"))
    )
    for params in order:
        g = loads[loads["params"] == params].sort_values("repeat")
        x = g["value"].to_numpy(float)
        m = latency_modes.modes(x, int(g["iterations"].iloc[0]))
        hits = x[x <= latency_modes.SLOW * m.median]
        edges = np.arange(math.floor(hits.min() / BIN) * BIN, hits.max() + BIN, BIN)
        counts, _ = np.histogram(hits, bins=edges)
        side = np.where(edges[:-1] + BIN / 2 < m.cut, "near", "far") if m.clusters == 2 else "one cluster"
        label = f"SM {int(g['smid'].iloc[0])} (slot {evidence.param(params, 'sm_slot')})"
        bars.append(pd.DataFrame({"SM": label, "from": edges[:-1], "to": edges[1:], "loads": counts, "cluster": side}))
    return pd.concat(bars, ignore_index=True) if bars else pd.DataFrame()


def _near_far(frames: dict[str, pd.DataFrame]) -> str:
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    raw = frames.get("raw")
    mine = raw[raw["case"] == "chase_near_far"] if raw is not None and not raw.empty else pd.DataFrame()
    if mine.empty or not (mine["metric"] == "load_latency").any():
        if mine.empty or not mine["metric"].isin(OLD_NEAR_FAR).any():
            return markup.empty("no near/far measurements")
        return markup.empty(
            "no per-load latency measurements of chase_near_far in this run: its latency_near, latency_far and "
            "far_share came from a method that dropped every load beyond 25% of the median and always split the rest "
            "in two (two clusters and a far share near 0.5 by construction), so they are not shown"
        )
    lm = latency_modes
    note = markup.empty(
        f"method: every load timed alone (ld.global.cg, L2 only) less its launch's fixed overhead (timed mean minus "
        f"chased mean), no load dropped; loads beyond {lm.SLOW:g}x the median are misses (slow share), all others "
        f"split at the least-variance cut, called two clusters only where each holds >= {lm.MIN_SHARE:.0%} of them "
        f"and their means lie >= {lm.SEPARATION:g} rms widths (separation; one mode cut in two gives 1.6-3.5) and "
        f">= {lm.MIN_GAP:.0%} apart; line agreement: the share of lines on the same side of the cut in every launch "
        f"(partitions need >= {lm.ADDRESS_BOUND:g}); same sides as the first slot: of the lines both SMs place, the "
        "share they place alike (every SM times the same lines: about 1 in the first slot's partition, about 0 in "
        "the other)"
    )
    bars = histogram(raw)
    chart = (
        alt.Chart(bars)
        .mark_bar()
        .encode(
            x=alt.X("from:Q", bin="binned", title=f"latency of one load (cycle, {BIN}-cycle bars)"),
            x2="to:Q",
            y=alt.Y("loads:Q", title="loads"),
            color=alt.Color(
                "cluster:N",
                scale=alt.Scale(domain=["near", "far", "one cluster"], range=["#4c78a8", "#f58518", "#9d9d9d"]),
            ),
            row=alt.Row("SM:N", title=None, sort=list(dict.fromkeys(bars["SM"]))),
        )
        .properties(width=640, height=90)
    )
    described = (
        f"Histogram of the latency of single L2 loads in {BIN}-cycle bars, one row per SM "
        f"({', '.join(dict.fromkeys(bars['SM']))}), coloured by the near or far cluster each load falls in."
    )
    drawn = charts.svg(chart, described, "Per-load L2 latency: near and far clusters")
    return note + drawn + _figures(frames, ["chase_near_far"])


def _flavours(frames: dict[str, pd.DataFrame]) -> str:
    cases = [f"load_{f}" for f in FLAVOURS]
    if evidence.figures_of(frames, cases=tuple(cases)).empty:
        return markup.empty("no load-flavour measurements")
    return markup.empty(
        "one dependent 64-bit load per step at a 4 KB (L1-resident) and an 8 MB (L2-resident) footprint; .cg, .lu "
        "and .cv leave the L1 out, so their 4 KB point is an L2 hit; ld.const's 1 KB point hits the constant cache, "
        "its larger ones the next constant level"
    ) + _figures(frames, cases)


def _shared(frames: dict[str, pd.DataFrame]) -> str:
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    raw = frames.get("raw")
    conflicts = evidence.points(raw, ["smem_bank_conflict"], "latency", ["ways"])
    cases = list(catalog.ids("memory", family="shared"))
    if conflicts.empty and evidence.figures_of(frames, cases=tuple(cases)).empty:
        return markup.empty("no shared-memory measurements")
    chart = (
        alt.Chart(conflicts)
        .mark_line(point=True)
        .encode(x=alt.X("ways:Q", title="conflict degree (ways)"), y=alt.Y("value:Q", title="latency (cycle)"))
        .properties(width=480, height=260)
    )
    note = markup.empty(
        "every latency here is a pure LDS chase (the loaded word is the next address: no address arithmetic on the "
        "chain), the slope between 2048 and 4096 steps per lane; a chase of an index (j = s[j]), as published "
        "shared-memory latencies are, adds one dependent address computation per load"
    )
    described = "Shared-memory load latency (cycles) against the bank-conflict degree (ways)."
    drawn = charts.svg(chart, described, "Shared memory: latency over bank conflicts") if len(conflicts) else ""
    return drawn + note + _figures(frames, cases)


def _mlp(frames: dict[str, pd.DataFrame]) -> str:
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    raw = frames.get("raw")
    data = evidence.points(raw, ["mlp"], "latency", ["loads", "footprint_kb"])
    if data.empty:
        return markup.empty("no memory-level-parallelism measurements")
    data["footprint"] = data["footprint_kb"].map(kb_text)
    chart = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("loads:Q", title="independent loads in flight per thread"),
            y=alt.Y("value:Q", title="cycles per round"),
            color=alt.Color("footprint:N"),
        )
        .properties(width=480, height=260)
    )
    knees = evidence.figures_of(frames, cases=("mlp",), metrics=("knee",))
    if len(knees):
        marks = pd.DataFrame(
            {
                "loads": knees["value"].to_numpy(float),
                "footprint": [f"{int(evidence.param(p, 'footprint_kb'))} KB" for p in knees["params"]],
            }
        )
        chart = chart + alt.Chart(marks).mark_rule(strokeDash=[4, 3]).encode(x="loads:Q", color="footprint:N")
    note = markup.empty(
        f"knee: the most loads in flight whose round stays within {KNEE - 1:.0%} of one load's round at that "
        "and every smaller count (dashed)"
    )
    described = (
        f"Cycles per round against independent loads in flight per thread, one line per footprint "
        f"({', '.join(dict.fromkeys(data['footprint']))}); each knee a dashed rule."
    )
    return charts.svg(chart, described, "Memory-level parallelism") + note + _figures(frames, ["mlp"])


def _bandwidth(frames: dict[str, pd.DataFrame]) -> str:
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    raw = frames.get("raw")
    data = evidence.points(raw, ["dram_read", "dram_write", "dram_copy", "l2_read"], "bandwidth", ["ctas", "loads"])
    if data.empty and evidence.figures_of(frames, cases=tuple(BANDWIDTH)).empty:
        return markup.empty("no bandwidth measurements")
    out = ""
    if len(data):
        curves = data.assign(loads=lambda d: d["loads"].astype(int).astype(str))
        chart = (
            alt.Chart(curves)
            .mark_line(point=True)
            .encode(
                x=alt.X("ctas:Q", scale=alt.Scale(type="log"), title="CTAs (256 threads)"),
                y=alt.Y("value:Q", title="GB/s (bytes read + written)"),
                color=alt.Color("loads:N", title="16 B loads per thread"),
                column=alt.Column("case:N", title=None),
            )
            .properties(width=220, height=220)
        )
        described = (
            f"Bandwidth (GB/s, bytes read + written) against CTAs (log), one panel per case "
            f"({', '.join(sorted(curves['case'].unique()))}), one line per count of 16 B loads per thread."
        )
        out += charts.svg(chart, described, "Bandwidth over CTAs")
    note = markup.empty(
        "best: the best point of each sweep; fraction_of_peak: of the attribute peak (2 x memory clock x bus width "
        "from the device attributes) at that point; share of datasheet DRAM: of the GPU's published DRAM bandwidth "
        "(DRAM cases only: an L2 or on-chip rate is no DRAM traffic); dram_copy over the library copies of the same "
        "run (the same work: a read or a write alone is not compared); on-chip rates in B/cycle/SM against the "
        "shared-memory banks' 128 B/cycle/SM"
    )
    return out + note + _figures(frames, BANDWIDTH)


def _atomics(frames: dict[str, pd.DataFrame]) -> str:
    figs = evidence.figures_of(frames)
    cases = sorted(c for c in figs["case"].unique() if str(c).startswith("atomic_")) if len(figs) else []
    if not cases:
        return markup.empty("no atomics measurements")
    return markup.empty(
        "type 0 u32, 1 u64, 2 f32, 3 f64; contention 0: a word per thread, 1: every thread on one word; latency: the "
        "slope of a dependent chain of atomics (global and system: on each of 32 words, split by the word's near or "
        "far L2 home partition), throughput: atomics per cycle per SM"
    ) + _figures(frames, cases)


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The memory category's charts and figure tables, each saying so when its measurements are missing."""
    return [
        ("Pointer-chase staircase and detected levels", _staircase(frames)),
        ("L2 near and far partitions (per-load latency clusters)", _near_far(frames)),
        ("Load flavours: latency by cache operator", _flavours(frames)),
        ("Shared memory: bank conflicts, widths, broadcast, capacity", _shared(frames)),
        ("Memory-level parallelism", _mlp(frames)),
        ("Bandwidth", _bandwidth(frames)),
        ("Atomics", _atomics(frames)),
    ]
