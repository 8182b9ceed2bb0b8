"""Sub-core binding: warp 0 alone, beside a warp of its own sub-partition and beside one of another, and how well
%warpid % 4 predicts which partners slow it."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ...figure_model import Figure
from ..sweeps import derived, method_of, param, ratio_spread, series, unit_of

SLOWED = 0.75  # a partner slows warp 0 when warp 0's rate falls below this share of its rate alone


def subcore_split(raw: pd.DataFrame, case: str) -> tuple[str | None, list[str], list[str]]:
    """A sub-core case's points: partner 0 (warp 0 alone), the partners on warp 0's sub-partition (same %warpid % 4 in
    most launches) and those on another one."""
    same = {p: float(np.median(v)) for p, v in series(raw, case, "same_subpartition").items()}
    alone = next((p for p in same if param(p, "partner") == 0), None)
    partners = [p for p in same if param(p, "partner") != 0]
    return alone, [p for p in partners if same[p] >= 0.5], [p for p in partners if same[p] < 0.5]


def binding(rate: Mapping[str, float], alone: float, same: list[str], other: list[str]) -> float:
    """The share of partners that slow warp 0 exactly when they share its sub-partition (1 = bound by %warpid % 4)."""
    partners = same + other
    if not partners or not alone:
        return float("nan")
    agree = [(rate[p] < SLOWED * alone) == (p in same) for p in partners]
    return sum(agree) / len(agree)


def subcore_figures(raw: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """Per sub-core case: warp 0 alone, beside a warp of its own sub-partition and beside one of another, the slowdown
    between the two, how well %warpid % 4 predicts it, and the pair's rate on one sub-partition."""
    out = []
    cases = sorted({str(c) for c in raw.loc[raw["metric"] == "same_subpartition", "case"]})
    for case in cases:
        alone, same, other = subcore_split(raw, case)
        thr = series(raw, case, "throughput")
        if alone is None or alone not in thr:
            continue
        method = method_of(generic, case)
        a = thr[alone]
        out.append(
            derived(
                case,
                "throughput",
                unit_of(raw, case, "throughput"),
                f"{case} warp 0 alone",
                np.median(a),
                np.ptp(a),
                len(a),
                f"warp 0's ILP-8 chain with no partner warp ({len(a)} launches)",
                (alone,),
                params=alone,
                method=method,
            )
        )
        out += _beside_figures(raw, case, thr, (same, other), method)
        out += _binding_figures(raw, case, thr, (alone, same, other), method)
    return out


def _beside_figures(
    raw: pd.DataFrame, case: str, thr: dict[str, np.ndarray], sides: tuple[list[str], list[str]], method: str
) -> list[Figure]:
    """Warp 0's rate beside a warp of its own sub-partition and beside one of another (`sides`: the partners of
    each), and the slowdown between the two."""
    same, other = sides
    unit = unit_of(raw, case, "throughput")
    out, pooled = [], {}
    for side, pts, text in (
        ("same", same, "a warp of its own sub-partition"),
        ("other", other, "a warp of another sub-partition"),
    ):
        if not pts:
            continue
        pooled[side] = np.concatenate([thr[p] for p in pts])
        listed = ", ".join(f"partner {param(p, 'partner')}" for p in pts)
        out.append(
            derived(
                case,
                "throughput",
                unit,
                f"{case} warp 0 beside {text}",
                np.median(pooled[side]),
                np.ptp(pooled[side]),
                len(pooled[side]),
                f"median of warp 0's rate over the launches "
                f"beside {listed} (%warpid % 4 {'equal to' if side == 'same' else 'unlike'} warp 0's)",
                pts,
                method=method,
            )
        )
    if len(pooled) == 2:
        out.append(
            derived(
                case,
                "slowdown",
                "x",
                f"{case} same-sub-partition slowdown",
                np.median(pooled["other"]) / np.median(pooled["same"]),
                ratio_spread(pooled["other"], pooled["same"]),
                len(pooled["other"]) + len(pooled["same"]),
                "warp 0's rate beside another sub-partition's warp / beside its own sub-partition's "
                "(2.00: the two warps share one scheduler's issue slots or one pipe)",
                same + other,
                method=method,
            )
        )
    return out


def _binding_figures(
    raw: pd.DataFrame, case: str, thr: dict[str, np.ndarray], split: tuple[str, list[str], list[str]], method: str
) -> list[Figure]:
    """How well %warpid % 4 predicts which partners slow warp 0 (`split`: as subcore_split gives it), and the rate of
    warp 0 and a partner of its sub-partition together."""
    alone, same, other = split
    pair = series(raw, case, "pair_throughput")
    out = []
    if same or other:
        rate = {p: float(np.median(v)) for p, v in thr.items()}
        out.append(
            derived(
                case,
                "binding",
                "fraction",
                f"{case} sub-partition binding",
                binding(rate, rate[alone], same, other),
                0.0,
                sum(len(thr[p]) for p in same + other),
                f"share of the partner warps that slow warp 0 below {SLOWED:.0%} of its rate alone "
                "exactly when their %warpid % 4 equals warp 0's (1 = each warp is bound to "
                "sub-partition %warpid % 4)",
                [alone, *same, *other],
                method=method,
            )
        )
    if same and all(p in pair for p in same):
        both = np.concatenate([pair[p] for p in same])
        out.append(
            derived(
                case,
                "pair_throughput",
                unit_of(raw, case, "pair_throughput"),
                f"{case} pair rate on one sub-partition",
                np.median(both),
                np.ptp(both),
                len(both),
                "warp 0 and a partner of its sub-partition together: both warps' instructions over "
                "their common span (one scheduler's rate for the pipe)",
                same,
                method=method,
            )
        )
    return out
