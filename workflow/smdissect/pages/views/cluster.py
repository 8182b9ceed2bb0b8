"""Report view of the cluster category: cluster barrier cost versus cluster size, distributed shared memory
against local shared memory (latency and bandwidth), the SM-pair ping-pong heatmap, the cluster placement map and
the chip's topology (GPCs, TPCs, where CTAs land).
Every number is a row of the figures table (analysis.derived.cluster derives the summaries, hops and ratios); the
charts and the placement map are drawn from the samples."""

from __future__ import annotations

import pandas as pd

from smdissect.analysis.derived.cluster.placement import sm_groups
from smdissect.analysis.derived.cluster.topology import gpc_groups, sm_ranges
from smdissect.pages import charts, evidence, markup

CATEGORY = "cluster"

BARRIERS = {"cluster_barrier": "arrive (release) + wait", "cluster_barrier_relaxed": "arrive.relaxed + wait"}
CHASES = {
    "dsmem_latency": "peer CTA (shared::cluster)",
    "dsmem_latency_own": "own CTA (shared::cluster)",
    "smem_latency_local": "own CTA (ld.shared)",
}
STREAMS = {
    "dsmem_read": ("read", "peer CTA"),
    "dsmem_write": ("write", "peer CTA"),
    "smem_read_local": ("read", "own CTA"),
    "smem_write_local": ("write", "own CTA"),
}
PLACEMENT = ["max_active_clusters", "active_sms", "smid_span", "groups_all_launches", "largest_group"]
COLUMNS = ("figure", "value", "unit", "spread", "status", "reason")
TOPOLOGY = ("sm_topology", "cta_order")
JOINED = ("round_trip_same_gpc", "round_trip_cross_gpc", "gpc_locality")  # sm_pingpong's figures by GPC group


def _figures(
    frames: dict[str, pd.DataFrame], cases: list[str], metrics: tuple[str, ...] = (), columns: tuple[str, ...] = COLUMNS
) -> str:
    figs = evidence.figures_of(frames, cases=tuple(cases), metrics=metrics)
    return evidence.figure_table(figs, columns) if len(figs) else ""


def _barrier(frames: dict[str, pd.DataFrame]) -> str:

    data = evidence.points(frames.get("raw"), list(BARRIERS), "latency", ["cluster"])
    figs = _figures(frames, list(BARRIERS), columns=(*COLUMNS, "derivation"))
    if data.empty and not figs:
        return markup.empty("no cluster barrier measurements") + evidence.not_measured(frames, list(BARRIERS))
    chart = ""
    if not data.empty:
        chart = charts.log2_lines(
            data.assign(barrier=data["case"].map(BARRIERS)),
            "cluster",
            "CTAs per cluster",
            "cycles per barrier",
            "barrier",
            "Cycles per cluster barrier against CTAs per cluster (log 2), one line per barrier form (arrive + wait, "
            "relaxed arrive + wait).",
            "Cluster barrier cost over cluster size",
        )
    return chart + figs + evidence.not_measured(frames, list(BARRIERS))


def _dsmem(frames: dict[str, pd.DataFrame]) -> str:
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    raw = frames.get("raw")
    latency = evidence.points(raw, list(CHASES), "latency", ["cluster"])
    streams = evidence.points(raw, list(STREAMS), "bandwidth_per_sm", ["cluster"])
    figs = evidence.figures_of(frames, cases=(*CHASES, *STREAMS))
    if latency.empty and streams.empty and figs.empty:
        return markup.empty("no distributed shared memory measurements")
    out = ""
    if not latency.empty:
        chart = (
            alt.Chart(latency.assign(target=latency["case"].map(CHASES)))
            .mark_bar()
            .encode(
                x=alt.X("target:N", title=None, sort=list(CHASES.values())),
                y=alt.Y("value:Q", title="latency (cycle per dependent load)"),
                color=alt.Color("target:N", legend=None),
                column=alt.Column("cluster:O", title="CTAs per cluster"),
            )
            .properties(width=150, height=220)
        )
        out += charts.svg(
            chart,
            "Latency in cycles per dependent load of the peer CTA's shared memory, the own CTA's through "
            "shared::cluster and the own CTA's through ld.shared, one panel per cluster size.",
            "Distributed shared memory latency against local",
        )
    out += "<h3>Latency: remote hop and paths</h3>" + _figures(frames, list(CHASES))
    if not streams.empty:
        data = streams.assign(access=streams["case"].map(lambda c: " ".join(STREAMS[c])))
        chart = (
            alt.Chart(data)
            .mark_line(point=True)
            .encode(
                x=alt.X("cluster:O", title="CTAs per cluster"),
                y=alt.Y("value:Q", title="B/cycle/SM (16 B accesses, every CTA streaming)"),
                color=alt.Color("access:N"),
            )
            .properties(width=420, height=240)
        )
        out += charts.svg(
            chart,
            "Bytes per cycle per SM of reads and writes to the peer CTA's and the own CTA's shared memory, against "
            "CTAs per cluster, every CTA streaming 16 B accesses.",
            "Distributed shared memory bandwidth against local",
        )
    out += "<h3>Bandwidth: DSMEM against local</h3>" + _figures(frames, list(STREAMS))
    return out + evidence.not_measured(frames, [*CHASES, *STREAMS])


def _pingpong(frames: dict[str, pd.DataFrame]) -> str:
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    pairs = evidence.points(frames.get("raw"), ["sm_pingpong"], "round_trip", ["sm_a", "sm_b"])
    figs = evidence.figures_of(frames, cases=("sm_pingpong",))
    if pairs.empty and figs.empty:
        return markup.empty("no SM-pair ping-pong measurements") + evidence.not_measured(frames, ["sm_pingpong"])
    heat = ""
    if not pairs.empty:
        heat = charts.svg(
            alt.Chart(pairs)
            .mark_rect()
            .encode(
                x=alt.X("sm_b:O", title="SM b"),
                y=alt.Y("sm_a:O", title="SM a"),
                color=alt.Color("value:Q", title="round trip (cycle)", scale=alt.Scale(scheme="viridis")),
                tooltip=["sm_a:O", "sm_b:O", "value:Q"],
            )
            .properties(width=640, height=40 * pairs["sm_a"].nunique()),
            f"Heatmap of the round trip in cycles between {pairs['sm_a'].nunique()} SMs a (rows) and "
            f"{pairs['sm_b'].nunique()} SMs b (columns) through a flag in global memory, "
            f"{markup.number(pairs['value'].min())} to {markup.number(pairs['value'].max())} cycles.",
            "SM-to-SM round trip",
        )
    note = markup.empty(
        "round trip: side a writes the flag (atom.exch), side b sees it (ld.acquire.gpu polling) and writes it back; "
        "sm_a == sm_b: two warps of one CTA on that SM; near and far groups only where latency_modes' least-variance "
        "cut separates two clusters (the derivation gives the test's numbers)"
    )
    table = evidence.figure_table(figs, (*COLUMNS, "derivation")) if len(figs) else ""
    return heat + note + table + evidence.not_measured(frames, ["sm_pingpong"])


def _placement(frames: dict[str, pd.DataFrame]) -> str:
    raw = frames.get("raw")
    figs = evidence.figures_of(frames, cases=("cluster_placement",), metrics=tuple(PLACEMENT))
    if figs.empty:
        return markup.empty("no cluster placement measurements") + evidence.not_measured(frames, ["cluster_placement"])
    out = evidence.figure_table(figs, COLUMNS)
    maps = evidence.points(raw, ["cluster_placement"], "group_of_sm", ["cluster"])
    if len(maps):
        largest = maps.loc[maps["cluster"].idxmax()]
        members = sm_groups(raw, str(largest["params"]))
        listing = pd.DataFrame([{"group": g, "SMs": sm_ranges(sms)} for g, sms in sorted(members.items())])
        out += markup.empty(
            f"SMs linked by sharing a cluster (over all launches) at {int(largest['cluster'])} CTAs per cluster, one "
            "CTA per SM: a cluster never leaves its GPC, so each group lies within one GPC (pairs: within a TPC)"
        ) + (markup.table(listing) if len(listing) else "")
    return out + evidence.not_measured(frames, ["cluster_placement"])


def _landing_chart(raw: pd.DataFrame) -> str:
    """blockIdx against the SM it landed on, for the grid of one CTA per SM (first launch)."""
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    rows = raw[(raw["case"] == "cta_order") & (raw["metric"] == "sm_of_cta")]
    rows = rows[rows["params"].map(lambda p: evidence.param(p, "per_sm")) == 1]
    if rows.empty:
        return ""
    data = pd.DataFrame({"cta": rows["repeat"].astype(int), "sm": rows["value"].astype(int)})
    chart = (
        alt.Chart(data)
        .mark_point(filled=True, size=18)
        .encode(x=alt.X("cta:Q", title="blockIdx.x"), y=alt.Y("sm:Q", title="%smid"), tooltip=["cta:Q", "sm:Q"])
        .properties(width=560, height=260)
    )
    return charts.svg(
        chart,
        f"The SM (%smid) each of {len(data)} CTAs (blockIdx.x) of a grid of one CTA per SM landed on, first launch: a "
        "straight line is sequential assignment, a sawtooth round robin over groups of SMs.",
        "Where each CTA lands",
    )


def _occupancy_chart(raw: pd.DataFrame) -> str:
    """cudaOccupancyMaxActiveClusters against the cluster size, one CTA per SM."""
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    rows = raw[(raw["case"] == "sm_topology") & (raw["metric"] == "active_clusters_by_size")]
    if rows.empty:
        return ""
    data = pd.DataFrame({"size": rows["repeat"].astype(int) + 1, "clusters": rows["value"].astype(int)})
    chart = (
        alt.Chart(data)
        .mark_bar()
        .encode(x=alt.X("size:O", title="CTAs per cluster"), y=alt.Y("clusters:Q", title="clusters resident at once"))
        .properties(width=420, height=220)
    )
    return charts.svg(
        chart,
        "Clusters the occupancy API lets run at once against CTAs per cluster, one CTA per SM: above half a GPC's SMs "
        "each GPC holds at most one, so the bars there count the GPCs with at least that many SMs.",
        "Resident clusters per cluster size",
    )


def _topology(frames: dict[str, pd.DataFrame]) -> str:
    raw = frames.get("raw")
    figs = pd.concat(
        [
            evidence.figures_of(frames, cases=TOPOLOGY),
            evidence.figures_of(frames, cases=("sm_pingpong",), metrics=JOINED),
        ]
    )
    if figs.empty:
        return markup.empty("no topology measurements") + evidence.not_measured(frames, list(TOPOLOGY))
    out = evidence.figure_table(figs, (*COLUMNS, "derivation"))
    groups, _ = gpc_groups(raw) if raw is not None and not raw.empty else ([], ())
    if groups:
        listing = pd.DataFrame({"SMs of one GPC group": [f"{sm_ranges(g)} ({len(g)} SMs)" for g in groups]})
        out += markup.empty(
            "SMs linked by sharing a cluster in any launch of sm_topology or cluster_placement: each group lies in one "
            "GPC; TPCs are an inference (SMs always paired in 2-CTA clusters), no API or counter names them"
        ) + markup.table(listing)
    if raw is not None and not raw.empty:
        out += _landing_chart(raw) + _occupancy_chart(raw)
    return out + evidence.not_measured(frames, list(TOPOLOGY))


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The cluster category's charts and tables, each saying so when its measurements are missing."""
    return [
        ("Cluster barrier cost versus cluster size", _barrier(frames)),
        ("Distributed shared memory versus local shared memory", _dsmem(frames)),
        ("SM-to-SM round trip through global memory (ping-pong heatmap)", _pingpong(frames)),
        ("Cluster placement: SM ids per cluster and SM groups", _placement(frames)),
        ("Chip topology: GPCs, TPCs and the order CTAs land on SMs", _topology(frames)),
    ]
