"""The chip's topology from where CTAs land (sm_topology, cta_order, cluster_placement): the SMs that ran a CTA against
the device's SM count, the GPCs (SMs linked by sharing a cluster, over every launch of both placement cases), SMs per
GPC, the inferred TPCs (SMs always paired in 2-CTA clusters) and whether consecutive blockIdx share a GPC or TPC."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from ....core import archs
from ....core.tables import canonical_params, parse_params
from ...figure_model import REFERENCE, Check, Figure
from .. import samples as s

TOPOLOGY = canonical_params({})
# [H100-WP] (NVIDIA H100 Tensor Core GPU Architecture, "H100 SM architecture"): the full GH100 has 8 GPCs of 9 TPCs of 2
# SMs; H100 SXM5 and H200 enable 132 SMs, and no NVIDIA document says how they are spread over the GPCs.
GH100_GPCS, GH100_SMS_PER_GPC = 8, 18
WHITEPAPER = "[H100-WP]: the full GH100 has 8 GPCs x 9 TPCs x 2 SMs; no NVIDIA document states the product's GPCs"


def _map(raw: pd.DataFrame, case: str, metric: str, params: str) -> dict[int, int]:
    """A map record (sample i: the value for SM or CTA i) as {i: value}."""
    rows = raw[(raw["case"] == case) & (raw["metric"] == metric) & (raw["params"] == params)]
    return {int(i): int(v) for i, v in zip(rows["repeat"], rows["value"], strict=True)}


def _one(raw: pd.DataFrame, case: str, metric: str, params: str) -> float | None:
    """The median of a one-point record, None where it was not measured."""
    v = s.samples(raw, case, metric, params)
    return float(np.median(v)) if len(v) else None


def gpc_groups(raw: pd.DataFrame) -> tuple[list[list[int]], tuple[str, ...]]:
    """SMs linked by sharing a cluster in any launch of sm_topology or cluster_placement (sorted groups, each sorted),
    and the points they come from."""
    up: dict[int, int] = {}

    def find(a: int) -> int:
        while up.setdefault(a, a) != a:
            a = up[a]
        return a

    points = [(c, p) for c in ("sm_topology", "cluster_placement") for p in s.params_of(raw, c, "group_of_sm")]
    for case, params in points:
        for sm, group in _map(raw, case, "group_of_sm", params).items():
            if group >= 0:
                a, b = find(sm), find(group)
                up[max(a, b)] = min(a, b)
    found: dict[int, list[int]] = {}
    for sm in up:
        found.setdefault(find(sm), []).append(sm)
    return sorted(sorted(g) for g in found.values()), tuple(p for _, p in points)


def tpc_pairs(raw: pd.DataFrame) -> list[tuple[int, int]]:
    """SM pairs that were each other's only partner in every 2-CTA cluster of sm_topology (the inferred TPCs)."""
    partner = _map(raw, "sm_topology", "partner_of_sm", TOPOLOGY)
    return sorted((a, b) for a, b in partner.items() if a < b and partner.get(b) == a)


def _figure(
    case: str, metric: str, unit: str, name: str, value: float, derivation: str, points, method: str = ""
) -> Figure:
    """A derived figure counted from a map: one value (samples.from_values of it), no spread."""
    pts = tuple(dict.fromkeys(points))
    params = pts[0] if len(pts) == 1 else ""
    fig = s.from_values(case, metric, unit, name, np.array([value]), derivation, pts, method, params)
    if fig is None:
        raise ValueError(f"{name}: a count is not finite ({value})")
    return fig


def _bound(name: str, holds: bool, detail: str) -> Check:
    """A documented or logical bound: a violation contradicts, agreement verifies nothing."""
    return Check(name, "agree" if holds else "disagree", detail)


def sm_total(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """SMs that ran a CTA of a grid of one CTA per SM, against cudaDevAttrMultiProcessorCount and the datasheet."""
    params = canonical_params({"per_sm": 1})
    used, attribute = (
        _one(raw, "cta_order", "distinct_sms", params),
        _one(raw, "cta_order", "sm_count_attribute", params),
    )
    if used is None:
        return []
    checks = []
    if attribute is not None:
        same = used == attribute
        checks.append(
            Check(
                "device attribute",
                "agree" if same else "disagree",
                f"cudaDevAttrMultiProcessorCount {attribute:g}",
                evidence=REFERENCE,
            )
        )
    model = archs.gpu_model(s.run_of(raw)[1])
    if model is not None and model.sms:
        checks.append(
            Check(
                "documented",
                "agree" if used == model.sms else "disagree",
                f"{model.sms} SMs: {model.source[:80]}",
                evidence=REFERENCE,
            )
        )
    fig = _figure(
        "cta_order",
        "sm_count",
        "sm",
        "SMs that ran a CTA (one CTA per SM)",
        used,
        "distinct %smid over a grid of exactly one CTA per SM (median over launches)",
        [params],
        method=methods.get("cta_order", ""),
    )
    fig.checks = checks
    return [fig]


def _occupancy(raw: pd.DataFrame) -> dict[int, int]:
    """cudaOccupancyMaxActiveClusters per cluster size the device took (sample i: size i + 1, -1 refused)."""
    return {i + 1: n for i, n in _map(raw, "sm_topology", "active_clusters_by_size", TOPOLOGY).items() if n >= 0}


def _on_gh100(raw: pd.DataFrame) -> bool:
    """Whether the run's arch is sm_90 (a GH100, whose GPCs [H100-WP] sizes)."""
    return s.run_of(raw)[0].startswith("sm_90")


def gpcs(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """GPCs (SM groups linked by shared clusters: each lies in one GPC, so their count bounds the GPCs from above),
    the largest and smallest group; on GH100 checked against lower bounds from [H100-WP]'s 18-SM GPC."""
    groups, points = gpc_groups(raw)
    if not groups:
        return []
    hopper = _on_gh100(raw)
    lower = _lower_bounds(sorted(len(g) for g in groups), _occupancy(raw)) if hopper else {}
    method = methods.get("sm_topology", "")
    return [_gpc_count(groups, points, lower, method), *_group_sizes(raw, groups, points, lower, method)]


def _gpc_count(groups: list[list[int]], points: tuple[str, ...], lower: dict[str, int], method: str) -> Figure:
    """The GPC count's upper bound (the groups), checked against the lower bounds where there are any."""
    count = _figure(
        "sm_topology",
        "gpcs",
        "gpc",
        "GPCs (SM groups linked by shared clusters)",
        len(groups),
        f"SMs that shared a cluster in any launch of sm_topology (sizes 2 to the largest) or cluster_placement, "
        f"joined: each group lies in one GPC (a cluster is co-scheduled on one GPC), so {len(groups)} groups bound "
        f"the GPCs from above; groups: {'; '.join(f'{sm_ranges(g)} ({len(g)} SMs)' for g in groups)}",
        points,
        method=method,
    )
    count.checks = [Check("documented", "n/a", WHITEPAPER, evidence=REFERENCE)]
    if lower:
        most = max(lower.values())
        same = most == len(groups)
        bounds = ", ".join(f"{v} by {k}" for k, v in lower.items())
        count.checks = [
            _bound("bounds below the groups", most <= len(groups), f"GPCs at least: {bounds}"),
            Check(
                "second method",
                "agree" if same else "n/a",
                f"GPCs at least {most} ({bounds}), at most {len(groups)} (the groups)"
                + ("" if same else ": the bounds do not meet, the GPC count is not isolated"),
                evidence=REFERENCE,
            ),
            _bound("documented bound", most <= GH100_GPCS, WHITEPAPER),
        ]
    return count


def _group_sizes(
    raw: pd.DataFrame, groups: list[list[int]], points: tuple[str, ...], lower: dict[str, int], method: str
) -> list[Figure]:
    """The largest and smallest group's SMs, each checked for whole GPCs and against the occupancy API's clusters."""
    hopper = _on_gh100(raw)
    occupancy = _occupancy(raw)
    sizes = sorted(len(g) for g in groups)
    half = GH100_SMS_PER_GPC // 2 + 1
    largest = _figure(
        "sm_topology",
        "sms_per_gpc_max",
        "sm",
        "SMs in the largest GPC group",
        sizes[-1],
        f"SMs of the largest group (all group sizes: {', '.join(map(str, sizes))}); a lower bound on the largest GPC's "
        "SMs, equal to it where the GPC count is verified",
        points,
        method=method,
    )
    smallest = _figure(
        "sm_topology",
        "sms_per_gpc_min",
        "sm",
        "SMs in the smallest GPC group",
        sizes[0],
        "SMs of the smallest group; a GPC's SMs only where the GPC count is verified",
        points,
        method=method,
    )
    attribute = _one(raw, "sm_topology", "sm_count_attribute", TOPOLOGY)
    complete = _complete(max(lower.values(), default=None), len(groups), sum(sizes), attribute)
    for fig, size in ((largest, sizes[-1]), (smallest, sizes[0])):
        fig.checks = [complete, _per_size_check(groups, occupancy, half, hopper, size)]
        if hopper:
            fig.checks.append(_bound("documented bound", size <= GH100_SMS_PER_GPC, WHITEPAPER))
    return [largest, smallest]


def _lower_bounds(sizes: list[int], occupancy: dict[int, int]) -> dict[str, int]:
    """Lower bounds on the GPCs of a GH100 ([H100-WP]: at most 18 SMs per GPC): the clusters of the smallest size over
    half a GPC the occupancy API lets run at once (at most one per GPC), and the GPCs the groups need when no GPC
    holds more than 18 SMs (a group of over 9 SMs takes a GPC of its own; the rest fill those GPCs' free SMs first)."""
    cap, out = GH100_SMS_PER_GPC, {}
    above = sorted(n for n in occupancy if n > cap // 2)
    if above:
        out[f"cudaOccupancyMaxActiveClusters at {above[0]} CTAs"] = occupancy[above[0]]
    big = [n for n in sizes if n > cap // 2]
    rest = max(0, sum(n for n in sizes if n <= cap // 2) - sum(cap - n for n in big))
    out[f"packing the groups into GPCs of at most {cap} SMs"] = len(big) + -(-rest // cap)
    return out


def sm_ranges(sms: list[int]) -> str:
    """SM ids as compact ranges: [0, 1, 2, 5, 7, 8] -> '0-2, 5, 7-8'."""
    out: list[str] = []
    for sm in sorted(sms):
        if out and sm == int(out[-1].split("-")[-1]) + 1:
            out[-1] = f"{out[-1].split('-')[0]}-{sm}"
        else:
            out.append(str(sm))
    return ", ".join(out)


def _complete(lower: int | None, groups: int, grouped: int, sms: float | None) -> Check:
    """Groups are whole GPCs where the occupancy bound meets the group count and the groups hold every SM."""
    whole = lower == groups and sms is not None and grouped == sms
    detail = (
        f"{groups} groups, "
        + (f"at least {lower} GPCs" if lower else "no lower bound on the GPCs")
        + f", {grouped} SMs grouped of "
        + ("an unmeasured SM count" if sms is None else f"{sms:g} (cudaDevAttrMultiProcessorCount)")
    )
    return Check(
        "whole GPCs",
        "agree" if whole else "n/a",
        detail + ("" if whole else ": a group may be part of a GPC"),
        evidence=REFERENCE,
    )


def _per_size_check(groups: list[list[int]], occupancy: dict[int, int], half: int, hopper: bool, size: int) -> Check:
    """Whether, at every size from `half` up, the groups of at least that many SMs are as many as the clusters of that
    size the occupancy API lets run at once (one per GPC there): the group sizes read a second way, where `size` (the
    figure's) lies in that range."""
    sizes = [n for n in sorted(occupancy) if n >= half]
    if not hopper or not sizes or not half <= size <= sizes[-1]:
        return Check(
            "second method",
            "n/a",
            "the occupancy API's clusters of over half a GPC (one per GPC) read a group's size only on a documented "
            f"GPC size ([H100-WP]) and for sizes it took ({', '.join(map(str, sizes)) or 'none'}): not {size}",
            evidence=REFERENCE,
        )
    seen = {n: sum(len(g) >= n for g in groups) for n in sizes}
    same = all(seen[n] == occupancy[n] for n in sizes)
    detail = ", ".join(f"{n}: {seen[n]} groups / {occupancy[n]} clusters" for n in sizes)
    return Check(
        "second method",
        "agree" if same else "n/a",
        f"groups of >= n SMs vs cudaOccupancyMaxActiveClusters at n CTAs ({detail})",
        evidence=REFERENCE,
    )


def tpcs(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """The inferred TPCs: SM pairs always together in 2-CTA clusters, and how many of them are (2k, 2k + 1)."""
    partner = _map(raw, "sm_topology", "partner_of_sm", TOPOLOGY)
    if not partner:
        return []
    pairs = tpc_pairs(raw)
    used = sum(p != -1 for p in partner.values())
    even = sum(a % 2 == 0 and b == a + 1 for a, b in pairs)
    fig = _figure(
        "sm_topology",
        "tpcs",
        "tpc",
        "TPCs (SM pairs always together in 2-CTA clusters, inferred)",
        len(pairs),
        f"SMs whose only partner over every 2-CTA cluster launch was each other: {2 * len(pairs)} of {used} SMs used, "
        f"{even} of the {len(pairs)} pairs are %smid (2k, 2k + 1); an inference: nothing says a 2-CTA cluster is "
        "placed on one TPC",
        [TOPOLOGY],
        method=methods.get("sm_topology", ""),
    )
    fig.checks = [
        Check(
            "documented", "n/a", "no API or counter maps %smid to TPCs; [H100-WP]: 2 SMs per TPC", evidence=REFERENCE
        ),
        _bound("pairs within the SMs", 2 * len(pairs) <= used, f"{2 * len(pairs)} paired of {used} SMs"),
    ]
    return [fig]


def neighbours(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per cta_order point: the share of blockIdx i, i + 1 on one GPC group, and on one inferred TPC."""
    groups, group_points = gpc_groups(raw)
    group_of = {sm: g[0] for g in groups for sm in g}
    tpc_of = {sm: a for a, b in tpc_pairs(raw) for sm in (a, b)}
    out = []
    for params in s.params_of(raw, "cta_order", "sm_of_cta"):
        sm = _map(raw, "cta_order", "sm_of_cta", params)
        order = [sm[i] for i in sorted(sm)]
        per = int(parse_params(params).get("per_sm", 0))
        for what, of, pts in (("GPC group", group_of, group_points), ("inferred TPC", tpc_of, (TOPOLOGY,))):
            steps = [(a, b) for a, b in itertools.pairwise(order) if a in of and b in of]
            if not steps:
                continue
            share = sum(of[a] == of[b] for a, b in steps) / len(steps)
            out.append(
                _figure(
                    "cta_order",
                    "same_gpc_next" if what == "GPC group" else "same_tpc_next",
                    "fraction",
                    f"cta_order blockIdx i and i + 1 on one {what} at per_sm={per}",
                    share,
                    f"{len(steps)} consecutive blockIdx pairs of the first launch, both SMs in a {what}: the share on "
                    "the same one (round robin over GPCs gives about 0, filling one GPC first about 1)",
                    [params, *pts],
                    method=methods.get("cta_order", ""),
                )
            )
    return out
