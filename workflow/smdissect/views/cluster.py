"""Report view of the cluster category: cluster barrier cost versus cluster size, distributed shared memory
against local shared memory (latency and bandwidth), the SM-pair ping-pong heatmap and the cluster placement map."""

from __future__ import annotations

import math
from collections import Counter

import altair as alt
import pandas as pd

from smdissect import report

BARRIERS = {"cluster_barrier": "arrive (release) + wait", "cluster_barrier_relaxed": "arrive.relaxed + wait"}
CHASES = {"dsmem_latency": "peer CTA (shared::cluster)", "dsmem_latency_own": "own CTA (shared::cluster)",
          "smem_latency_local": "own CTA (ld.shared)"}  # fmt: skip
STREAMS = {"dsmem_read": ("read", "peer CTA"), "dsmem_write": ("write", "peer CTA"),
           "smem_read_local": ("read", "own CTA"), "smem_write_local": ("write", "own CTA")}  # fmt: skip
PLACEMENT = ["max_active_clusters", "active_sms", "distinct_sms_per_cluster", "smid_span", "sm_groups"]


def _not_measured(frames: dict[str, pd.DataFrame], cases: list[str]) -> str:
    """The planned points of `cases` that were static or failed, with the reason (e.g. a refused cluster size)."""
    status = frames.get("status")
    if status is None or status.empty:
        return ""
    rest = status[status["case"].isin(cases) & (status["status"] != "measured")]
    return report.table(rest[["case", "params", "status", "reason"]]) if len(rest) else ""


def _barrier(frames: dict[str, pd.DataFrame]) -> str:
    data = report.points(frames.get("raw"), list(BARRIERS), "latency", ["cluster"])
    if data.empty:
        return report.empty("no cluster barrier measurements") + _not_measured(frames, list(BARRIERS))
    data["barrier"] = data["case"].map(BARRIERS)
    chart = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("cluster:Q", scale=alt.Scale(type="log", base=2), title="CTAs per cluster"),
            y=alt.Y("value:Q", title="cycles per barrier"),
            color=alt.Color("barrier:N"),
        )
        .properties(width=480, height=260)
    )
    table = data.pivot_table(index="cluster", columns="barrier", values="value").reset_index()
    table.columns = [str(c) if c == "cluster" else f"{c} (cycle)" for c in table.columns]
    return report.svg(chart) + report.table(table) + _not_measured(frames, list(BARRIERS))


def remote_hop(latency: pd.DataFrame) -> pd.DataFrame:
    """Per cluster size: each chase's latency, the remote hop (peer minus own CTA through shared::cluster) and the
    peer chase over the local ld.shared chase."""
    wide = latency.pivot_table(index="cluster", columns="case", values="value")
    out = pd.DataFrame({"cluster": wide.index.astype(int)})
    for case, label in CHASES.items():
        out[f"{label} (cycle)"] = wide[case].to_numpy() if case in wide else math.nan
    peer, own, local = (wide.get(c, pd.Series(math.nan, index=wide.index)).to_numpy() for c in CHASES)
    out["remote hop (cycle)"] = peer - own
    out["peer / local"] = peer / local
    return out


def bandwidth_ratio(streams: pd.DataFrame) -> pd.DataFrame:
    """Per cluster size and direction: DSMEM and local shared-memory bandwidth (B/cycle/SM) and their ratio."""
    data = streams.assign(
        direction=streams["case"].map(lambda c: STREAMS[c][0]), target=streams["case"].map(lambda c: STREAMS[c][1])
    )
    wide = data.pivot_table(index=["cluster", "direction"], columns="target", values="value").reset_index()
    for target in ("peer CTA", "own CTA"):
        if target not in wide:
            wide[target] = math.nan
    wide["DSMEM / local"] = wide["peer CTA"] / wide["own CTA"]
    wide["cluster"] = wide["cluster"].astype(int)
    return wide.rename(columns={"peer CTA": "DSMEM (B/cycle/SM)", "own CTA": "local (B/cycle/SM)"})[
        ["cluster", "direction", "DSMEM (B/cycle/SM)", "local (B/cycle/SM)", "DSMEM / local"]
    ]


def _dsmem(frames: dict[str, pd.DataFrame]) -> str:
    raw = frames.get("raw")
    latency = report.points(raw, list(CHASES), "latency", ["cluster"])
    streams = report.points(raw, list(STREAMS), "bandwidth_per_sm", ["cluster"])
    if latency.empty and streams.empty:
        return report.empty("no distributed shared memory measurements")
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
        out += report.svg(chart) + report.table(remote_hop(latency))
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
        out += report.svg(chart) + report.table(bandwidth_ratio(streams))
    return out + _not_measured(frames, [*CHASES, *STREAMS])


def pair_summary(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per sm_a: the same-SM round trip, the nearest and farthest other SM and their round trips, and the median."""
    rows = []
    for sm_a, group in pairs.groupby("sm_a"):
        others = group[group["sm_b"] != sm_a]
        same = group.loc[group["sm_b"] == sm_a, "value"]
        near = others.loc[others["value"].idxmin()] if len(others) else None
        far = others.loc[others["value"].idxmax()] if len(others) else None
        rows.append({
            "sm_a": int(sm_a),
            "same SM (cycle)": float(same.iloc[0]) if len(same) else math.nan,
            "nearest sm_b": int(near["sm_b"]) if near is not None else None,
            "nearest (cycle)": float(near["value"]) if near is not None else math.nan,
            "farthest sm_b": int(far["sm_b"]) if far is not None else None,
            "farthest (cycle)": float(far["value"]) if far is not None else math.nan,
            "median other (cycle)": float(others["value"].median()) if len(others) else math.nan,
        })  # fmt: skip
    return pd.DataFrame(rows)


def _pingpong(frames: dict[str, pd.DataFrame]) -> str:
    pairs = report.points(frames.get("raw"), ["sm_pingpong"], "round_trip", ["sm_a", "sm_b"])
    if pairs.empty:
        return report.empty("no SM-pair ping-pong measurements") + _not_measured(frames, ["sm_pingpong"])
    heat = (
        alt.Chart(pairs)
        .mark_rect()
        .encode(
            x=alt.X("sm_b:O", title="SM b"),
            y=alt.Y("sm_a:O", title="SM a"),
            color=alt.Color("value:Q", title="round trip (cycle)", scale=alt.Scale(scheme="viridis")),
            tooltip=["sm_a:O", "sm_b:O", "value:Q"],
        )
        .properties(width=640, height=40 * pairs["sm_a"].nunique())
    )
    note = report.empty(
        "round trip: side a writes the flag (atom.exch), side b sees it (ld.acquire.gpu polling) and writes it back; "
        "sm_a == sm_b: two warps of one CTA on that SM"
    )
    return report.svg(heat) + note + report.table(pair_summary(pairs)) + _not_measured(frames, ["sm_pingpong"])


def sm_ranges(sms: list[int]) -> str:
    """SM ids as compact ranges: [0, 1, 2, 5, 7, 8] -> '0-2, 5, 7-8'."""
    out: list[str] = []
    for sm in sorted(sms):
        if out and sm == int(out[-1].split("-")[-1]) + 1:
            out[-1] = f"{out[-1].split('-')[0]}-{sm}"
        else:
            out.append(str(sm))
    return ", ".join(out)


def groups(raw: pd.DataFrame, params: str) -> dict[int, list[int]]:
    """SM groups of one placement point from its group_of_sm record (sample i: SM i's group, -1 for unused)."""
    rows = raw[(raw["case"] == "cluster_placement") & (raw["params"] == params) & (raw["metric"] == "group_of_sm")]
    out: dict[int, list[int]] = {}
    for sm, group in zip(rows["repeat"], rows["value"], strict=True):
        if group >= 0:
            out.setdefault(int(group), []).append(int(sm))
    return out


def group_sizes(found: dict[int, list[int]]) -> str:
    """How many groups have how many SMs, largest first: '2 x 18 SMs, 6 x 16 SMs'."""
    sizes = Counter(len(sms) for sms in found.values())
    return ", ".join(f"{count} x {size} SMs" for size, count in sorted(sizes.items(), reverse=True))


def _placement(frames: dict[str, pd.DataFrame]) -> str:
    raw = frames.get("raw")
    parts = [report.points(raw, ["cluster_placement"], m, ["cluster"]).assign(metric=m) for m in PLACEMENT]
    data = pd.concat(parts, ignore_index=True)
    if data.empty:
        return report.empty("no cluster placement measurements") + _not_measured(frames, ["cluster_placement"])
    table = data.pivot_table(index=["params", "cluster"], columns="metric", values="value").reset_index()
    table["groups over all launches"] = [len(groups(raw, p)) for p in table["params"]]
    table["group sizes"] = [group_sizes(groups(raw, p)) for p in table["params"]]
    table = table.sort_values("cluster")
    columns = ["cluster", *[m for m in PLACEMENT if m in table], "groups over all launches", "group sizes"]
    out = report.table(table[columns].rename(columns={"smid_span": "max smid span", "sm_groups": "groups per launch"}))
    largest = table.iloc[-1]
    members = groups(raw, str(largest["params"]))
    note = report.empty(
        f"SMs linked by sharing a cluster (over all launches) at {int(largest['cluster'])} CTAs per cluster, one CTA "
        "per SM: a cluster never leaves its GPC, so each group lies within one GPC (pairs: within a TPC)"
    )
    listing = pd.DataFrame(
        [{"group": g, "SMs": sm_ranges(sms), "size": len(sms)} for g, sms in sorted(members.items())]
    )
    return out + note + (report.table(listing) if len(listing) else "") + _not_measured(frames, ["cluster_placement"])


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The cluster category's charts and tables, each saying so when its measurements are missing."""
    return [
        ("Cluster barrier cost versus cluster size", _barrier(frames)),
        ("Distributed shared memory versus local shared memory", _dsmem(frames)),
        ("SM-to-SM round trip through global memory (ping-pong heatmap)", _pingpong(frames)),
        ("Cluster placement: SM ids per cluster and SM groups", _placement(frames)),
    ]
