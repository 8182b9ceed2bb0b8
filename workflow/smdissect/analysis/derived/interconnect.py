"""Figures the interconnect category derives over several points: every peer copy's bandwidth and every peer access's
latency against the same GPU's local one (src == dst, gpu == mem), and the peer copies' share of the NVLink peak the
driver's link count and version give. On a host with one GPU the peer points are static rows (the status table says
why), so none of these figures exists there."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...core import catalog
from ...core.catalog import Case
from ...core.tables import canonical_params, parse_params
from ..figure_model import Figure
from . import samples as s

CATEGORY = "interconnect"
METRICS = frozenset({"latency_ns", "link_share", "vs_local"})  # every metric a figure of this deriver can have

COPIES = {
    "memcpy_peer": ("cudaMemcpyPeerAsync", 1),
    "memcpy_peer_bidir": ("cudaMemcpyPeerAsync both ways", 2),
    "kernel_copy_peer": ("kernel copy", 1),
}
# Per-direction data rate of one NVLink by nvmlNvlinkVersion_t (nvml.h: 1 = 1.0 ... 6 = 4.0, 7 = 5.0), GB/s: the
# P100 (4 links, 160 GB/s both ways), V100 (6, 300), A100 (12, 600), H100 (18, 900) and B200 (18, 1800) whitepapers'
# totals over their links and two directions. 2.2 (3) and 3.1 (5) have no published per-link figure here.
NVLINK_GBS = {1: 20.0, 2: 25.0, 4: 25.0, 6: 25.0, 7: 50.0}
NVLINK_NAMES = {1: "1.0", 2: "2.0", 3: "2.2", 4: "3.0", 5: "3.1", 6: "4.0", 7: "5.0", 8: "6.0"}
LATENCIES = {
    "atomic_sys_latency": ("latency", "gpu", "mem", "atomicAdd_system"),
    "peer_chase": ("latency", "gpu", "mem", "dependent load"),
    "ping_pong": ("round_trip", "src", "dst", "flag ping-pong"),
}


def _points(raw: pd.DataFrame, case: str, metric: str) -> dict[str, dict[str, int]]:
    return {p: parse_params(p) for p in s.params_of(raw, case, metric)}


def _local(point: dict[str, int], runs: str, holds: str) -> str:
    """The local point of the same GPU and other axes: `holds` set to the GPU that `runs`."""
    return canonical_params(point | {holds: point[runs]})


def versus_local(
    raw: pd.DataFrame,
    case: str,
    metric: str,
    runs: str,
    holds: str,
    name: str,
    what: str,
    method: str,
    only: dict[str, int] | None = None,
) -> list[Figure]:
    """Every peer point (runs != holds) of a case over its local point."""
    out = []
    for params, point in _points(raw, case, metric).items():
        if point[runs] == point[holds] or any(point.get(k) != v for k, v in (only or {}).items()):
            continue
        local = _local(point, runs, holds)
        rest = ", ".join(f"{k}={v}" for k, v in point.items() if k not in (runs, holds))
        label = f"{name} {point[runs]} -> {point[holds]} / local" + (f", {rest}" if rest else "")
        out.append(
            s.make(
                case,
                "vs_local",
                "ratio",
                label,
                lambda a, b: a / b,
                [s.samples(raw, case, metric, params), s.samples(raw, case, metric, local)],
                f"{what} at {runs}={point[runs]}, {holds}={point[holds]} over the same GPU's local point "
                f"({holds}={point[runs]}){', ' + rest if rest else ''}",
                [params, local],
                method,
                params,
            )
        )
    return s.keep(out)


def _largest(raw: pd.DataFrame, case: str) -> dict[str, int] | None:
    sizes = [p.get("size_mb") for p in _points(raw, case, "bandwidth").values() if "size_mb" in p]
    return {"size_mb": max(sizes)} if sizes else None


def nvlink_peak(raw: pd.DataFrame, a: int, b: int) -> tuple[float, str] | None:
    """Per-direction NVLink peak between GPUs a and b (GB/s) and how it was got: the fewer active links of the two
    times the per-link rate of their NVLink version; None where the driver reports no NVLink path or no rate."""
    nvlink = s.samples(raw, "p2p_link", "nvml_p2p_nvlink", canonical_params({"dst": b, "src": a}))
    if not len(nvlink) or not float(np.median(nvlink)) > 0:
        return None
    links, versions = [], []
    for gpu in (a, b):
        at = canonical_params({"gpu": gpu})
        n, v = (
            s.samples(raw, "nvlink_state", "nvlinks_active", at),
            s.samples(raw, "nvlink_state", "nvlink_version", at),
        )
        if not len(n) or not len(v):
            return None
        links.append(float(np.median(n)))
        versions.append(int(np.median(v)))
    if len(set(versions)) != 1 or versions[0] not in NVLINK_GBS or not min(links) > 0:
        return None
    rate = NVLINK_GBS[versions[0]]
    return min(links) * rate, (
        f"{min(links):g} active NVLink {NVLINK_NAMES.get(versions[0], versions[0])} links x "
        f"{rate:g} GB/s per direction (nvmlDeviceGetNvLinkState / Version)"
    )


def link_share(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Each peer copy at its largest size over the NVLink peak of its pair (both ways: over twice it)."""
    out = []
    for case, (what, ways) in COPIES.items():
        largest = _largest(raw, case)
        for params, point in _points(raw, case, "bandwidth").items():
            if point["src"] == point["dst"] or largest is None or point.get("size_mb") != largest["size_mb"]:
                continue
            peak = nvlink_peak(raw, point["src"], point["dst"])
            if peak is None:
                continue
            values = s.samples(raw, case, "bandwidth", params)
            out.append(
                s.from_values(
                    case,
                    "link_share",
                    "%",
                    f"{case} {point['src']} -> {point['dst']} / NVLink peak",
                    100 * values / (ways * peak[0]),
                    f"{what} of {point['size_mb']} MB over {ways} x {peak[0]:g} GB/s: {peak[1]}",
                    [params],
                    methods.get(case, ""),
                    params,
                )
            )
    return s.keep(out)


def in_ns(raw: pd.DataFrame, case: str, methods: dict[str, str]) -> list[Figure]:
    """Each latency point of a case in ns: every sample's cycles over the SM clock its launch measured."""
    out = []
    for params in s.params_of(raw, case, "latency"):
        cycles, mhz = s.samples(raw, case, "latency", params), s.column(raw, case, "latency", params, "clock_mhz")
        with np.errstate(divide="ignore", invalid="ignore"):
            ns = cycles / mhz * 1e3
        out.append(
            s.from_values(
                case,
                "latency_ns",
                "ns",
                f"{case} latency in ns{s.at(params)}",
                ns,
                "each sample's cycles over the SM clock (MHz) its launch measured, median of "
                f"{len(ns)}: comparable between GPUs whose clocks differ",
                [params],
                methods.get(case, ""),
                params,
            )
        )
    return s.keep(out)


def figures(frames: dict[str, pd.DataFrame], generic: list[Figure], cases: dict[str, Case]) -> list[Figure]:
    """Every derived figure of the interconnect category."""
    raw = frames.get("raw")
    if raw is None or raw.empty:
        return []
    methods = {f.case: f.method for f in generic}
    out = []
    for case, (what, _) in COPIES.items():
        largest = _largest(raw, case)
        if largest:
            out += versus_local(
                raw, case, "bandwidth", "src", "dst", case, f"{what} bandwidth", methods.get(case, ""), largest
            )
    for case, (metric, runs, holds, what) in LATENCIES.items():
        out += versus_local(
            raw, case, metric, runs, holds, case, f"{what} {metric.replace('_', ' ')}", methods.get(case, "")
        )
    for case in catalog.ids("interconnect", family="peer_latency"):
        out += in_ns(raw, case, methods)
    return out + link_share(raw, methods)
