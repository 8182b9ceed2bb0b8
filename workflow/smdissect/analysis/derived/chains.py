"""Dependent instruction chains swept over ILP and warps: the ILP knee (the smallest ILP near the best throughput)
and the fewest warps that saturate a pipe, shared by the pipelines, scheduler and tensorcore derivers."""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import pandas as pd

from ..figure_model import Figure
from .sweeps import derived, medians, method_of, num, param, robust, series

KNEE = 0.9  # the ILP knee: the smallest ILP reaching this share of the best throughput at one warp count


def ilp_knee(by_ilp: Mapping[Hashable, float], share: float = KNEE) -> int | None:
    """The smallest ILP whose throughput reaches `share` of the best over ILP (None without a positive one)."""
    best = max(by_ilp.values(), default=0.0)
    if not best > 0:
        return None
    return int(min(int(i) for i, v in by_ilp.items() if v >= share * best))


def chain_points(raw: pd.DataFrame) -> dict[str, dict[int, dict[int, str]]]:
    """Every chain case's throughput points: case -> warps -> ilp -> point."""
    out: dict[str, dict[int, dict[int, str]]] = {}
    if raw.empty:
        return out
    thr = raw.loc[raw["metric"] == "throughput", ["case", "params"]].drop_duplicates()
    for case, params in thr.itertuples(index=False):
        ilp, warps = param(params, "ilp"), param(params, "warps")
        if ilp is not None and warps is not None:
            out.setdefault(str(case), {}).setdefault(int(warps), {})[int(ilp)] = str(params)
    return out


def knee_figures(raw: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """Per chain case, its ILP knee at the fewest and at the most warps it ran (where it swept two ILPs or more)."""
    out = []
    for case, by_warps in chain_points(raw).items():
        thr = series(raw, case, "throughput")
        for warps in sorted({min(by_warps), max(by_warps)}):
            at = by_warps[warps]
            if len(at) < 2:
                continue
            pts = {ilp: thr[p] for ilp, p in sorted(at.items())}
            knee, spread = robust(ilp_knee, pts)
            if knee is None:
                continue
            med = medians(pts)
            best = max(med, key=lambda i: med[i])
            steps = ", ".join(f"ilp {i}: {num(v)} ({v / med[best]:.0%})" for i, v in med.items())
            out.append(
                derived(
                    case,
                    "ilp_knee",
                    "ilp",
                    f"{case} ILP knee at warps={warps}",
                    knee,
                    spread,
                    sum(len(v) for v in pts.values()),
                    f"smallest ILP reaching {KNEE:.0%} of the best throughput at warps={warps} "
                    f"({num(med[best])} warp_inst/cycle/SM at ilp={best}): {steps}; spread: over the "
                    "repeats",
                    at.values(),
                    method=method_of(generic, case),
                )
            )
    return out


def saturation_warps(by_warps: Mapping[int, float], share: float = KNEE) -> int | None:
    """The fewest warps whose throughput reaches `share` of the best over the sweep."""
    best = max(by_warps.values(), default=0.0)
    if not best > 0:
        return None
    return int(min(int(w) for w, v in by_warps.items() if v >= share * best))
