"""The SM-to-SM ping-pong summary (sm_pingpong): the fastest, median and slowest pair, per first SM its same-SM round
trip, nearest, median and farthest partner, and its near and far groups where latency_modes finds two; and the round
trips within one inferred GPC against across GPCs (topology's groups)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ....core.tables import parse_params
from ... import latency_modes
from ...figure_model import Figure
from .. import samples as s
from .topology import gpc_groups


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


def pingpong_by_gpc(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """sm_pingpong's pairs of distinct SMs split by whether both lie in one GPC group: each side's median round trip and
    their difference (where both sides have pairs)."""
    groups, group_points = gpc_groups(raw)
    group_of = {sm: g[0] for g in groups for sm in g}
    sides: dict[bool, list[tuple[str, np.ndarray]]] = {True: [], False: []}
    for params in s.params_of(raw, "sm_pingpong", "round_trip"):
        point = parse_params(params)
        a, b = int(point.get("sm_a", -1)), int(point.get("sm_b", -1))
        if a != b and a in group_of and b in group_of:
            sides[group_of[a] == group_of[b]].append((params, s.samples(raw, "sm_pingpong", "round_trip", params)))
    if not sides[True] or not sides[False]:
        return []
    method = methods.get("sm_pingpong", "")
    medians = {k: np.array([float(np.median(v)) for _, v in pairs]) for k, pairs in sides.items()}
    pts = {k: [p for p, _ in pairs] for k, pairs in sides.items()}
    return s.keep(
        [
            s.from_values(
                "sm_pingpong",
                "round_trip_same_gpc",
                "cycle",
                "sm_pingpong round trip within one GPC group",
                medians[True],
                f"median of {len(medians[True])} pairs' medians, both SMs in one group "
                "(sm_topology / cluster_placement)",
                [*pts[True], *group_points],
                method,
            ),
            s.from_values(
                "sm_pingpong",
                "round_trip_cross_gpc",
                "cycle",
                "sm_pingpong round trip across GPC groups",
                medians[False],
                f"median of {len(medians[False])} pairs' medians, SMs in different groups",
                [*pts[False], *group_points],
                method,
            ),
            s.make(
                "sm_pingpong",
                "gpc_locality",
                "cycle",
                "sm_pingpong within minus across GPC groups",
                lambda a, b: a - b,
                [medians[True], medians[False]],
                "median round trip of same-group pairs minus that of cross-group pairs (negative: a GPC is "
                "closer to itself; groups are within a GPC but two groups may share one)",
                [*pts[True], *pts[False], *group_points],
                method,
            ),
        ]
    )
