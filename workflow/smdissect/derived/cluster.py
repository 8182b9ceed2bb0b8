"""Figures the cluster category derives over several points: the cluster barrier's cost over cluster sizes and what its
release adds, the DSMEM remote hop (peer minus own CTA through shared::cluster) and the peer and generic paths
against the local ld.shared chase, DSMEM over local shared-memory bandwidth, the SM-to-SM ping-pong summary (fastest,
median and slowest pair, per first SM its nearest and farthest partner and its near / far groups), the SM groups
clusters form over all launches, and the chip's topology (derived.cluster_topology)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from .. import latency_modes
from ..figure_model import Figure
from ..tables import parse_params
from . import samples as s
from .cluster_topology import PARTS as TOPOLOGY_PARTS

CATEGORY = "cluster"
METRICS = frozenset(
    {
        "generic_path",
        "gpc_locality",
        "gpcs",
        "groups_all_launches",
        "growth",
        "largest_group",
        "latency",
        "release_cost",
        "remote_hop",
        "round_trip",
        "round_trip_cross_gpc",
        "round_trip_group",
        "round_trip_pair",
        "round_trip_same_gpc",
        "same_gpc_next",
        "same_tpc_next",
        "sm_count",
        "sms_per_gpc_max",
        "sms_per_gpc_min",
        "tpcs",
        "vs_local",
    }
)  # every metric a figure of this deriver can have

BARRIERS = {"cluster_barrier": "arrive (release) + wait", "cluster_barrier_relaxed": "arrive.relaxed + wait"}
STREAMS = {"dsmem_read": "smem_read_local", "dsmem_write": "smem_write_local"}
MIN_CLUSTER = 2  # a barrier summary is over clusters of CTAs on several SMs (cluster=1 is one CTA on one SM)


def _sizes(raw: pd.DataFrame, case: str, metric: str) -> dict[int, tuple[str, np.ndarray]]:
    """cluster size -> (params, samples) of one metric of a case swept over `cluster` only."""
    out = {}
    for params in s.params_of(raw, case, metric):
        point = parse_params(params)
        if set(point) == {"cluster"}:
            out[int(point["cluster"])] = (params, s.samples(raw, case, metric, params))
    return dict(sorted(out.items()))


def _over_sizes(
    case: str,
    metric: str,
    unit: str,
    name: str,
    per_size: dict[int, tuple[str, float]],
    samples: int,
    derivation: str,
    method: str,
) -> Figure | None:
    """A figure summarising one value per cluster size: their median, spread the range over the sizes."""
    if not per_size:
        return None
    values = np.array([v for _, v in per_size.values()])
    sizes = ", ".join(str(n) for n in per_size)
    return Figure(
        case=case,
        metric=metric,
        unit=unit,
        kind="derived",
        name=name,
        value=float(np.median(values)),
        spread=float(values.max() - values.min()),
        samples=samples,
        derivation=f"{derivation}, median over cluster sizes {sizes} (spread: their range)",
        points=tuple(p for p, _ in per_size.values()),
        method=method,
    )


def barriers(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Each barrier's cost over cluster sizes >= MIN_CLUSTER, its growth from the smallest to the largest cluster, and
    what the release semantics add (arrive minus arrive.relaxed)."""
    out: list[Figure | None] = []
    found = {c: {n: v for n, v in _sizes(raw, c, "latency").items() if n >= MIN_CLUSTER} for c in BARRIERS}
    for case, what in BARRIERS.items():
        sizes = found[case]
        if not sizes:
            continue
        medians = {n: (p, float(np.median(v))) for n, (p, v) in sizes.items()}
        out.append(
            _over_sizes(
                case,
                "latency",
                "cycle",
                f"{case} latency over cluster sizes",
                medians,
                sum(len(v) for _, v in sizes.values()),
                f"cycles per back-to-back {what} of every thread of every CTA (per size: the median of its samples)",
                methods.get(case, ""),
            )
        )
        if len(sizes) >= 2:
            n0, n1 = min(sizes), max(sizes)
            (p0, v0), (p1, v1) = sizes[n0], sizes[n1]
            out.append(
                s.make(
                    case,
                    "growth",
                    "cycle",
                    f"{case} growth from {n0} to {n1} CTAs per cluster",
                    lambda a, b: b - a,
                    [v0, v1],
                    f"latency at cluster={n1} minus at cluster={n0}",
                    [p0, p1],
                    methods.get(case, ""),
                )
            )
    common = sorted(set(found["cluster_barrier"]) & set(found["cluster_barrier_relaxed"]))
    release = {
        n: (
            found["cluster_barrier"][n][0],
            float(np.median(found["cluster_barrier"][n][1]) - np.median(found["cluster_barrier_relaxed"][n][1])),
        )
        for n in common
    }
    out.append(
        _over_sizes(
            "cluster_barrier",
            "release_cost",
            "cycle",
            "cluster barrier release cost (arrive minus arrive.relaxed)",
            release,
            sum(len(found[c][n][1]) for c in BARRIERS for n in common),
            "cluster_barrier minus cluster_barrier_relaxed at the same size (the MEMBAR.ALL.GPU the release form adds)",
            methods.get("cluster_barrier", ""),
        )
    )
    return s.keep(out)


def _per_size(
    raw: pd.DataFrame,
    case: str,
    other: str,
    metric: str,
    out_metric: str,
    unit: str,
    name: str,
    fn: Callable[[float, float], float],
    what: str,
    methods: dict[str, str],
) -> list[Figure]:
    """fn(case, other) at every cluster size both measured, one figure each."""
    mine, theirs = _sizes(raw, case, metric), _sizes(raw, other, metric)
    return s.keep(
        s.make(
            case,
            out_metric,
            unit,
            f"{name} at cluster={n}",
            fn,
            [mine[n][1], theirs[n][1]],
            f"{what} at cluster={n} (medians of {len(mine[n][1])} and {len(theirs[n][1])} samples; "
            "spread: over their extremes)",
            [mine[n][0]],
            methods.get(case, ""),
            mine[n][0],
        )
        for n in sorted(set(mine) & set(theirs))
    )


def dsmem(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """The remote hop, the peer and generic paths against the local chase, and DSMEM over local bandwidth."""
    out = _per_size(
        raw,
        "dsmem_latency",
        "dsmem_latency_own",
        "latency",
        "remote_hop",
        "cycle",
        "DSMEM remote hop",
        lambda a, b: a - b,
        "dsmem_latency minus dsmem_latency_own (the same ld.shared::cluster chase in "
        "the peer's and in the own CTA's shared memory: the SM-to-SM network's share)",
        methods,
    )
    out += _per_size(
        raw,
        "dsmem_latency",
        "smem_latency_local",
        "latency",
        "vs_local",
        "ratio",
        "DSMEM peer chase / local ld.shared chase",
        lambda a, b: a / b,
        "dsmem_latency over smem_latency_local",
        methods,
    )
    out += _per_size(
        raw,
        "dsmem_latency_own",
        "smem_latency_local",
        "latency",
        "generic_path",
        "cycle",
        "shared::cluster path to the own CTA minus ld.shared",
        lambda a, b: a - b,
        "dsmem_latency_own minus smem_latency_local (the generic LD.E path and its MOV per step)",
        methods,
    )
    for case, local in STREAMS.items():
        direction = case.removeprefix("dsmem_")
        out += _per_size(
            raw,
            case,
            local,
            "bandwidth_per_sm",
            "vs_local",
            "ratio",
            f"DSMEM {direction} / local {direction} bandwidth",
            lambda a, b: a / b,
            f"{case} over {local} (B/cycle/SM)",
            methods,
        )
    return out


def _pairs(raw: pd.DataFrame) -> pd.DataFrame:
    """sm_pingpong's points: sm_a, sm_b, params, the median round trip and the samples."""
    rows = []
    for params in s.params_of(raw, "sm_pingpong", "round_trip"):
        point, values = parse_params(params), s.samples(raw, "sm_pingpong", "round_trip", params)
        if len(values) and {"sm_a", "sm_b"} <= set(point):
            rows.append(
                {
                    "sm_a": int(point["sm_a"]),
                    "sm_b": int(point["sm_b"]),
                    "params": params,
                    "value": float(np.median(values)),
                    "samples": values,
                }
            )
    return pd.DataFrame(rows, columns=["sm_a", "sm_b", "params", "value", "samples"])


def _pair_figure(name: str, pair: pd.Series, derivation: str, method: str, metric: str = "round_trip_pair") -> Figure:
    v = pair["samples"]
    return Figure(
        case="sm_pingpong",
        metric=metric,
        unit="cycle",
        kind="derived",
        name=name,
        value=float(pair["value"]),
        spread=float(v.max() - v.min()),
        samples=len(v),
        derivation=f"{derivation} (median of {len(v)} samples)",
        params=pair["params"],
        points=(pair["params"],),
        method=method,
    )


def _summary(name: str, group: pd.DataFrame, derivation: str, method: str, metric: str = "round_trip_group") -> Figure:
    """The median of a group of pairs' medians (metric round_trip only for the median over every pair: the figure the
    paper's round trip, uniform over pairs, stands beside)."""
    return Figure(
        case="sm_pingpong",
        metric=metric,
        unit="cycle",
        kind="derived",
        name=name,
        value=float(group["value"].median()),
        spread=float(group["value"].max() - group["value"].min()),
        samples=int(sum(len(v) for v in group["samples"])),
        derivation=f"{derivation}: median of {len(group)} pairs' medians (spread: their range)",
        points=tuple(group["params"]),
        method=method,
    )


def pingpong(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Fastest, median and slowest pair of distinct SMs; per first SM its same-SM round trip, nearest, median and
    farthest partner, and its near and far groups where latency_modes finds two (else says it finds one)."""
    pairs = _pairs(raw)
    method = methods.get("sm_pingpong", "")
    others = pairs[pairs["sm_a"] != pairs["sm_b"]]
    if others.empty:
        return []
    fast, slow = others.loc[others["value"].idxmin()], others.loc[others["value"].idxmax()]
    out = [
        _pair_figure("sm_pingpong round trip, fastest pair", fast, f"SMs {fast.sm_a} and {fast.sm_b}", method),
        _summary(
            "sm_pingpong round trip, median pair",
            others,
            "over every measured pair of distinct SMs",
            method,
            "round_trip",
        ),
        _pair_figure("sm_pingpong round trip, slowest pair", slow, f"SMs {slow.sm_a} and {slow.sm_b}", method),
    ]
    for a, group in others.groupby("sm_a"):
        same = pairs[(pairs["sm_a"] == a) & (pairs["sm_b"] == a)]
        if len(same):
            out.append(
                _pair_figure(
                    f"sm_pingpong round trip within SM {a}",
                    same.iloc[0],
                    f"two warps of the one CTA on SM {a} play both sides",
                    method,
                )
            )
        near, far = group.loc[group["value"].idxmin()], group.loc[group["value"].idxmax()]
        split, test = two_groups(group)
        one = "" if split else f"; one group by {test}"
        out += [
            _pair_figure(f"sm_pingpong round trip from SM {a}, nearest SM", near, f"to SM {near.sm_b}", method),
            _summary(
                f"sm_pingpong round trip from SM {a}, median SM", group, f"from SM {a} to each other SM{one}", method
            ),
            _pair_figure(f"sm_pingpong round trip from SM {a}, farthest SM", far, f"to SM {far.sm_b}", method),
        ]
        if split:
            out += groups_of(int(a), group, split, test, method)
    return out


def two_groups(group: pd.DataFrame) -> tuple[latency_modes.Split | None, str]:
    """latency_modes' least-variance cut of the partners' median round trips where it finds two clusters (else None),
    and the test's numbers as text."""
    split = latency_modes.best_split(group["value"].to_numpy())
    if split is None:
        return None, "fewer than two distinct medians"
    test = (
        f"latency_modes' least-variance cut of the {len(group)} partners' medians (separation "
        f"{split.separation:.1f} rms widths, {split.high_share:.0%} above the cut at {split.cut:.0f} cycles; two "
        f"groups need >= {latency_modes.SEPARATION:g} widths)"
    )
    return (split if split.two else None), test


def groups_of(a: int, group: pd.DataFrame, split: latency_modes.Split, test: str, method: str) -> list[Figure]:
    """SM a's partners split into a near and a far group at the cut two_groups accepted."""
    low, high = group[group["value"] < split.cut], group[group["value"] >= split.cut]
    near_sms = ", ".join(str(b) for b in sorted(low["sm_b"]))
    return [
        _summary(f"sm_pingpong round trip from SM {a}, near group", low, f"SMs {near_sms}; {test}", method),
        _summary(f"sm_pingpong round trip from SM {a}, far group", high, f"the other {len(high)} SMs; {test}", method),
    ]


def sm_groups(raw: pd.DataFrame, params: str) -> dict[int, list[int]]:
    """SM groups of one placement point from its group_of_sm record (sample i: SM i's group, -1 for unused)."""
    rows = raw[(raw["case"] == "cluster_placement") & (raw["params"] == params) & (raw["metric"] == "group_of_sm")]
    out: dict[int, list[int]] = {}
    for sm, group in zip(rows["repeat"], rows["value"], strict=True):
        if group >= 0:
            out.setdefault(int(group), []).append(int(sm))
    return out


def placement(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per cluster size >= 2: the SM groups sharing a cluster formed over all launches, and the largest one."""
    out = []
    method = methods.get("cluster_placement", "")
    for n, (params, _) in _sizes(raw, "cluster_placement", "group_of_sm").items():
        found = sm_groups(raw, params)
        if n < MIN_CLUSTER or not found:
            continue
        sizes = [len(v) for v in found.values()]
        base = {
            "case": "cluster_placement",
            "kind": "derived",
            "spread": 0.0,
            "samples": int(sum(sizes)),
            "params": params,
            "points": (params,),
            "method": method,
        }
        out += [
            Figure(
                metric="groups_all_launches",
                unit="group",
                name=f"cluster_placement SM groups over all launches at cluster={n}",
                value=float(len(found)),
                derivation="SMs linked by sharing a "
                f"cluster in any launch (group_of_sm), counted once: {sum(sizes)} SMs used",
                **base,
            ),
            Figure(
                metric="largest_group",
                unit="sm",
                name=f"cluster_placement largest SM group at cluster={n}",
                value=float(max(sizes)),
                derivation=f"SMs of the largest group (smallest: {min(sizes)}); a "
                "cluster never leaves its GPC, so a group lies within one GPC",
                **base,
            ),
        ]
    return out


figures = s.of_parts(barriers, dsmem, pingpong, placement, *TOPOLOGY_PARTS)  # every derived figure of the category
