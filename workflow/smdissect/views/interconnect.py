"""Report view of the interconnect category: peer copy bandwidth (copy engines and SM loads), atomic, load and
ping-pong latency of peer memory against local memory, and the links as CUDA and NVML report them."""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from smdissect import report

COPIES = {"memcpy_peer": "memcpy uni", "memcpy_peer_bidir": "memcpy bidir", "kernel_copy_peer": "kernel copy"}
# nvmlGpuTopologyLevel_t and nvmlNvlinkVersion_t (nvml.h): the codes NVML returns, as NVML names them.
TOPOLOGY = {0: "internal", 10: "single switch", 20: "multiple switches", 30: "host bridge", 40: "NUMA node",
            50: "system"}  # fmt: skip
NVLINK_VERSIONS = {0: "none", 1: "1.0", 2: "2.0", 3: "2.2", 4: "3.0", 5: "3.1", 6: "4.0", 7: "5.0", 8: "6.0"}
LINK_METRICS = ["cuda_peer_access", "cuda_native_atomics", "cuda_performance_rank", "nvml_p2p_read",
                "nvml_p2p_nvlink", "topology_level"]  # fmt: skip


def points(raw: pd.DataFrame | None, cases: list[str], metric: str, keys: list[str]) -> pd.DataFrame:
    """Median, spread and median SM clock per (case, params) of one metric, the named parameters as columns."""
    out = report.points(raw, cases, metric, keys, clock_mhz=("clock_mhz", "median"))
    return out.astype(dict.fromkeys(keys, "Int64"))


def pair(a: object, b: object) -> str:
    """'0 -> 1' for a pair of GPU indices, '0 (local)' for a GPU with itself."""
    return f"{a} (local)" if a == b else f"{a} -> {b}"


def versus_local(data: pd.DataFrame, runs: str, holds: str, keys: tuple[str, ...] = ()) -> pd.Series:
    """Each point's value over the local point of the same running GPU (runs == holds) and other `keys`."""
    local = data[data[runs] == data[holds]].set_index([runs, *keys])["value"]
    index = pd.MultiIndex.from_frame(data[[runs, *keys]]) if keys else data[runs]
    return pd.Series(data["value"].to_numpy() / local.reindex(index).to_numpy(), index=data.index)


def _bandwidth(raw: pd.DataFrame | None) -> str:
    data = points(raw, list(COPIES), "bandwidth", ["src", "dst", "size_mb"])
    if data.empty:
        return report.empty("no peer copy measurements")
    data["copy"] = data["case"].map(COPIES)
    data["pair"] = [pair(s, d) for s, d in zip(data["src"], data["dst"], strict=True)]
    chart = (
        alt.Chart(data.drop(columns=["src", "dst", "size_mb"]).assign(size_mb=data["size_mb"].astype(float)))
        .mark_line(point=True)
        .encode(
            x=alt.X("size_mb:Q", scale=alt.Scale(type="log"), title="copy size (MB)"),
            y=alt.Y("value:Q", title="GB/s (bidir: both directions)"),
            color=alt.Color("pair:N", title="src -> dst"),
            column=alt.Column("copy:N", title=None),
        )
        .properties(width=220, height=220)
    )
    table = data.pivot_table(index=["copy", "pair"], columns="size_mb", values="value").reset_index()
    table.columns = [c if isinstance(c, str) else f"{int(c)} MB (GB/s)" for c in table.columns]
    largest = data.loc[data.groupby(["copy", "pair"])["size_mb"].idxmax()].copy()
    largest["of local"] = versus_local(largest, "src", "dst", ("copy",))
    note = report.empty(
        "memcpy: cudaMemcpyPeerAsync on the copy engines, timed over >= 256 MB per sample; kernel copy: every SM "
        "of dst loads src's memory through the peer mapping. 'of local': the largest size against the same GPU's "
        "own copy (src == dst, reading from src's view)"
    )
    best = largest[["copy", "pair", "size_mb", "value", "of local"]].rename(columns={"value": "GB/s"})
    return report.svg(chart) + report.table(table) + note + report.table(best)


def _latency_table(data: pd.DataFrame, keys: tuple[str, ...]) -> pd.DataFrame:
    data = data.copy()
    data["where"] = ["local" if g == m else "peer" for g, m in zip(data["gpu"], data["mem"], strict=True)]
    data["ns"] = data["value"] / data["clock_mhz"] * 1e3
    data["vs local"] = versus_local(data, "gpu", "mem", keys)
    cols = [*keys, "gpu", "mem", "where", "value", "spread", "ns", "vs local"]
    return data[cols].rename(columns={"value": "cycle", "spread": "spread (cycle)", "gpu": "thread on GPU",
                                      "mem": "memory on GPU"})  # fmt: skip


def _atomics(raw: pd.DataFrame | None) -> str:
    data = points(raw, ["atomic_sys_latency"], "latency", ["gpu", "mem"])
    if data.empty:
        return report.empty("no cross-GPU atomic measurements")
    note = report.empty("one thread, dependent atomicAdd_system (atom.add.sys.u64): slope between n and 2n atomics; "
                        "ns at the timed GPU's measured SM clock")  # fmt: skip
    return note + report.table(_latency_table(data, ()))


def _chase(raw: pd.DataFrame | None) -> str:
    data = points(raw, ["peer_chase"], "latency", ["gpu", "mem", "footprint_mb"])
    if data.empty:
        return report.empty("no peer pointer-chase measurements")
    note = report.empty("one thread, dependent 64-bit loads over a random cycle of 128 B lines (warmed by the CTA "
                        "first): slope between n and 2n loads")  # fmt: skip
    return note + report.table(_latency_table(data, ("footprint_mb",)))


def _ping_pong(raw: pd.DataFrame | None) -> str:
    data = points(raw, ["ping_pong"], "round_trip", ["src", "dst"])
    if data.empty:
        return report.empty("no ping-pong measurements")
    data["pair"] = [pair(s, d) for s, d in zip(data["src"], data["dst"], strict=True)]
    data["flag in memory of"] = data["src"]
    data["cycle"] = data["value"] * data["clock_mhz"] / 1e3
    table = data[["pair", "flag in memory of", "value", "spread", "cycle"]]
    return report.table(table.rename(columns={"value": "round trip (ns)", "spread": "spread (ns)"}))


def _links(raw: pd.DataFrame | None) -> str:
    pairs = pd.concat([points(raw, ["p2p_link"], m, ["src", "dst"]).assign(metric=m) for m in LINK_METRICS])
    gpus = pd.concat([points(raw, ["nvlink_state"], m, ["gpu"]).assign(metric=m)
                      for m in ("nvlinks_active", "nvlink_version")])  # fmt: skip
    if pairs.empty and gpus.empty:
        return report.empty("no link measurements")
    out = ""
    if not pairs.empty:
        table = pairs.pivot_table(index=["src", "dst"], columns="metric", values="value").reset_index()
        table = table.reindex(columns=["src", "dst", *LINK_METRICS])
        table["topology_level"] = table["topology_level"].map(_named(TOPOLOGY))
        out += report.table(table)
    if not gpus.empty:
        table = gpus.pivot_table(index="gpu", columns="metric", values="value").reset_index()
        table = table.reindex(columns=["gpu", "nvlinks_active", "nvlink_version"])
        table["nvlink_version"] = table["nvlink_version"].map(_named(NVLINK_VERSIONS))
        out += report.table(table)
    return out


def _named(names: dict[int, str]) -> object:
    """A mapper from an NVML code to its name ('code N' when unknown, blank when missing)."""
    return lambda v: "" if v is None or (isinstance(v, float) and math.isnan(v)) else names.get(int(v), f"code {v}")


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The interconnect category's charts and tables, each saying so when its measurements are missing."""
    raw = frames.get("raw")
    return [
        ("Peer-to-peer copy bandwidth", _bandwidth(raw)),
        ("Cross-GPU atomic latency: local vs peer", _atomics(raw)),
        ("Peer memory access latency (pointer chase)", _chase(raw)),
        ("GPU-to-GPU ping-pong round trip", _ping_pong(raw)),
        ("Links reported by CUDA and NVML", _links(raw)),
    ]
