"""Report view of the interconnect category: peer copy bandwidth (copy engines and SM loads), atomic, load and
ping-pong latency of peer memory against local memory, and the links as CUDA and NVML report them. Every number is a
row of the figures table (analysis.derived.interconnect derives each peer point over its local one and the copies'
share of the NVLink peak); the chart is drawn from the samples. On a host with one GPU every peer point is a static
row, listed with its reason where its figures would be."""

from __future__ import annotations

import math

import pandas as pd

from smdissect.pages import charts, evidence, markup

CATEGORY = "interconnect"

COPIES = {"memcpy_peer": "memcpy uni", "memcpy_peer_bidir": "memcpy bidir", "kernel_copy_peer": "kernel copy"}
# nvmlGpuTopologyLevel_t and nvmlNvlinkVersion_t (nvml.h): the codes NVML returns, as NVML names them.
TOPOLOGY = {
    0: "internal",
    10: "single switch",
    20: "multiple switches",
    30: "host bridge",
    40: "NUMA node",
    50: "system",
}
NVLINK_VERSIONS = {0: "none", 1: "1.0", 2: "2.0", 3: "2.2", 4: "3.0", 5: "3.1", 6: "4.0", 7: "5.0", 8: "6.0"}
NAMED = {"topology_level": TOPOLOGY, "nvlink_version": NVLINK_VERSIONS}
COLUMNS = ("figure", "value", "unit", "spread", "status", "reason")


def pair(a: object, b: object) -> str:
    """'0 -> 1' for a pair of GPU indices, '0 (local)' for a GPU with itself."""
    return f"{a} (local)" if a == b else f"{a} -> {b}"


def _not_measured(frames: dict[str, pd.DataFrame], cases: list[str]) -> str:
    """The planned points of `cases` that were static or failed, with the reason (one GPU: every peer point)."""
    status = frames.get("status")
    if status is None or status.empty:
        return ""
    rest = status[status["case"].isin(cases) & (status["status"] != "measured")]
    if rest.empty:
        return ""
    return "<h4>Not measured here</h4>" + markup.table(rest[["case", "params", "status", "reason"]])


def _peer(frames: dict[str, pd.DataFrame], cases: list[str]) -> str:
    """The cases' peer-over-local figures, or why there are none (no peer point measured: the static rows)."""
    ratios = evidence.figures_of(frames, cases=tuple(cases), metrics=("vs_local", "link_share"))
    if len(ratios):
        return "<h3>Peer against local</h3>" + evidence.figure_table(ratios, (*COLUMNS, "derivation"))
    return markup.empty("no peer point measured: no peer-over-local figure (see the points not measured)")


def _bandwidth(frames: dict[str, pd.DataFrame]) -> str:
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    data = evidence.points(frames.get("raw"), list(COPIES), "bandwidth", ["src", "dst", "size_mb"])
    figs = evidence.figures_of(frames, cases=tuple(COPIES), metrics=("bandwidth",))
    if data.empty and figs.empty:
        return markup.empty("no peer copy measurements") + _not_measured(frames, list(COPIES))
    chart = ""
    if not data.empty:
        pairs = [pair(int(s), int(d)) for s, d in zip(data["src"], data["dst"], strict=True)]
        data = data.assign(copy=data["case"].map(COPIES), pair=pairs)
        chart = charts.svg(
            alt.Chart(data[["copy", "pair", "size_mb", "value"]])
            .mark_line(point=True)
            .encode(
                x=alt.X("size_mb:Q", scale=alt.Scale(type="log"), title="copy size (MB)"),
                y=alt.Y("value:Q", title="GB/s (bidir: both directions)"),
                color=alt.Color("pair:N", title="src -> dst"),
                column=alt.Column("copy:N", title=None),
            )
            .properties(width=220, height=220),
            f"Peer copy bandwidth (GB/s) against copy size (MB, log), one panel per copy kind "
            f"({', '.join(sorted(data['copy'].unique()))}), one line per source -> destination GPU pair.",
            "Peer copy bandwidth over size",
        )
    note = markup.empty(
        "memcpy: cudaMemcpyPeerAsync on the copy engines, timed over >= 256 MB per sample; kernel copy: every SM "
        "of dst loads src's memory through the peer mapping. Peer against local: the largest size against the same "
        "GPU's own copy (src == dst); NVLink peak: the driver's active links x the per-link rate of their version"
    )
    return (
        chart
        + note
        + evidence.figure_table(figs, COLUMNS)
        + _peer(frames, list(COPIES))
        + _not_measured(frames, list(COPIES))
    )


def _latency(frames: dict[str, pd.DataFrame], case: str, metric: str, missing: str, note: str) -> str:
    figs = evidence.figures_of(frames, cases=(case,), metrics=(metric, f"{metric}_ns"))
    if figs.empty:
        return markup.empty(missing) + _not_measured(frames, [case])
    table = evidence.figure_table(figs, COLUMNS)
    return markup.empty(note) + table + _peer(frames, [case]) + _not_measured(frames, [case])


def _links(frames: dict[str, pd.DataFrame]) -> str:
    figs = evidence.figures_of(frames, cases=("p2p_link", "nvlink_state"))
    if figs.empty:
        return markup.empty("no link measurements") + _not_measured(frames, ["p2p_link", "nvlink_state"])
    rows = evidence.figure_rows(figs, COLUMNS)
    rows.insert(3, "means", [_named(m, v) for m, v in zip(figs["metric"], figs["value"], strict=True)])
    return markup.table(rows, raw=("status",)) + _not_measured(frames, ["p2p_link", "nvlink_state"])


def _named(metric: str, value: float) -> str:
    """What an NVML code means ('code N' when unknown, blank for metrics that are no code or a missing value)."""
    names = NAMED.get(metric)
    if names is None or value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return names.get(int(value), f"code {value:g}")


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The interconnect category's charts and tables, each saying so when its measurements are missing."""
    return [
        ("Peer-to-peer copy bandwidth", _bandwidth(frames)),
        (
            "Cross-GPU atomic latency: local vs peer",
            _latency(
                frames,
                "atomic_sys_latency",
                "latency",
                "no cross-GPU atomic measurements",
                "one thread, dependent atomicAdd_system (atom.add.sys.u64): slope between n and 2n atomics",
            ),
        ),
        (
            "Peer memory access latency (pointer chase)",
            _latency(
                frames,
                "peer_chase",
                "latency",
                "no peer pointer-chase measurements",
                "one thread, dependent 64-bit loads over a random cycle of 128 B lines (warmed by the CTA first): "
                "slope between n and 2n loads; cycles of the GPU running the thread",
            ),
        ),
        (
            "GPU-to-GPU ping-pong round trip",
            _latency(
                frames,
                "ping_pong",
                "round_trip",
                "no ping-pong measurements",
                "one thread on src and one on dst hand a flag in src's memory back and forth (ld.acquire.sys poll, "
                "st.release.sys hand-off); ns of the host's timer",
            ),
        ),
        ("Links reported by CUDA and NVML", _links(frames)),
    ]
