"""Cross-validation: clock64 timings and manifest claims against ncu counters and cuobjdump."""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterator
from typing import Any

import pandas as pd

from ..core.archs import SCHEDULERS
from ..core.catalog import Case
from ..core.tables import canonical_params, parse_params
from ..measure.ncu import pipe_metric
from . import figure_model, figures

# What a disagreement of each check means, shown beside every 'disagree' the case does not explain itself.
WHY = {
    "cycles": "clock64 spans only the timed loop while sm__cycles_active counts the CTA's whole life; a gap "
    "beyond tolerance means setup or drain is not small against the loop, or the SM ran other work",
    "pipe": "the pipe counter counts a different number of instructions than the chain issues: the instruction "
    "went to another pipe on this chip, or the compiler changed the chain (see the SASS rows)",
    "instructions": "the kernel issued more than its chain: loop overhead or extra instructions the compiler added",
    "cpi": "clock64 cycles per issued instruction differ from ncu's warp latency per issued instruction: the "
    "timed region and the profiled kernel do not match",
    "slope": "the cycle counter's slope between the two body lengths differs from clock64's: the timing is noisy",
    "stall": "the dominant stall reason is not the one the case's kind implies",
    "sass": "the compiled SASS does not hold the instructions the case claims: the measurement is of something else",
    "counter": "the counter saw a different amount of work than the case says its launch did: caching, "
    "prefetch or write-back moved other bytes, or the launch did other work than claimed",
}
TOLERANCE = {"cycles": 0.02, "pipe": 0.01, "instructions": 0.02, "cpi": 0.03, "slope": 0.02}
# Why a measured point has no counters, where the manifest (`unprofiled`) does not say it for the case.
NO_CLAIM = "no counter checks this number: the kernel's records claim no count a counter could confirm at this point"
NO_KERNEL = "ncu recorded no kernel at this point: its launch failed or hung under ncu (the profile job's log says)"
DERIVED_ONLY = "no figure is taken at this point alone: counters are read where this case's figures are taken"


def _row(case: Case, params: str, check: str, kind: str, ours: float, theirs: float, note: str = "") -> dict[str, Any]:
    tol = TOLERANCE.get(kind, case.tolerance)
    if math.isnan(ours) or math.isnan(theirs):
        verdict, err = "not-applicable", float("nan")
        note = note or "a counter this check needs was not collected on this chip"
    else:
        err = abs(theirs - ours) / abs(ours) if ours else float("inf")
        verdict = "agree" if err <= tol else "disagree"
    if verdict == "disagree":
        note = case.explain.get(kind) or _follows(case, kind) or note or WHY[kind]
    return {
        "case": case.id,
        "params": params,
        "check": check,
        "clock64_value": ours,
        "counter_value": theirs,
        "rel_err": err,
        "tolerance": tol,
        "verdict": verdict,
        "note": note,
    }


def _follows(case: Case, kind: str) -> str:
    """A pipe or CPI disagreement that follows from the case's own account of its instruction count."""
    if kind in ("pipe", "cpi") and "instructions" in case.explain:
        return f"follows from the instruction count: {case.explain['instructions']}"
    return ""


def _metric(ncu: pd.DataFrame, variant: str, name: str) -> float:
    values = ncu.loc[(ncu.variant == variant) & (ncu.metric == name), "value"]
    return float(values.iloc[0]) if len(values) else float("nan")


def _pipe_count(ncu: pd.DataFrame, pipe: str) -> float:
    """Sum of the named pipes' counters (a manifest pipe may be 'fmaheavy+fmalite')."""
    return sum(_metric(ncu, "long", pipe_metric(p)) for p in pipe.split("+"))


def checks_for_point(
    case: Case, params: str, raw: pd.DataFrame, ncu: pd.DataFrame, stalls: pd.DataFrame, ops: dict[str, int]
) -> Iterator[dict[str, Any]]:
    """Every GPU check of one (case, params) point."""
    point = parse_params(params)
    warps = point.get("warps", 1)
    iterations = int(raw.iterations.iloc[0])
    clock64_cycles = float(raw.cycles.median())
    expected = ops["long"] * iterations * warps  # warp-level instructions of the chain in the long kernel
    yield _row(
        case,
        params,
        "cycles: clock64 span vs sm__cycles_active.max",
        "cycles",
        clock64_cycles,
        _metric(ncu, "long", "sm__cycles_active.max"),
    )
    if case.pipe:
        yield _row(
            case,
            params,
            f"instructions: chain vs {pipe_metric(case.pipe)}",
            "pipe",
            float(expected),
            _pipe_count(ncu, case.pipe),
        )
    yield _row(
        case,
        params,
        "instructions: chain vs smsp__inst_executed.sum",
        "instructions",
        float(expected),
        _metric(ncu, "long", "smsp__inst_executed.sum"),
    )
    yield _cpi_row(case, params, clock64_cycles, expected, warps, ncu)
    latency = raw[raw.metric == "latency"]
    if len(latency):
        extra = (ops["long"] - ops["short"]) * iterations
        slope = (_metric(ncu, "long", "sm__cycles_active.max") - _metric(ncu, "short", "sm__cycles_active.max")) / extra
        yield _row(
            case,
            params,
            "latency: clock64 slope vs sm__cycles_active slope",
            "slope",
            float(latency.value.median()),
            slope,
        )
    yield _stall_row(case, params, stalls[stalls.variant == "long"], _stall_scope(point))


def _cpi_row(case: Case, params: str, cycles: float, expected: int, warps: int, ncu: pd.DataFrame) -> dict[str, Any]:
    """clock64 cycles per issued instruction of the chain (`expected` warp instructions in `cycles`) against ncu's warp
    latency per issued instruction; not applicable where more warps than schedulers share the CTA's span."""
    note = (
        ""
        if warps <= SCHEDULERS
        else (
            f"{warps} warps share {SCHEDULERS} schedulers and finish at different times, so the CTA's clock64 span "
            "exceeds the average warp's active time that ncu divides by"
        )
    )
    return _row(
        case,
        params,
        "CPI: clock64 vs smsp__average_warp_latency_per_inst_issued",
        "cpi",
        cycles * warps / expected if not note else float("nan"),
        _metric(ncu, "long", "smsp__average_warp_latency_per_inst_issued.ratio"),
        note,
    )


def expect_rows(case: Case, params: str, raw: pd.DataFrame, ncu: pd.DataFrame) -> Iterator[dict[str, Any]]:
    """A timed case's own counter claims (the records' `expect`) against the counters of the launch they name."""
    claims = raw.drop_duplicates(["variant", "expect"])
    for variant, expect in zip(claims.variant, claims.expect, strict=True):
        for metric, value in sorted(json.loads(expect or "{}").items()):
            yield _row(
                case,
                params,
                f"counter {variant}: claimed vs {metric}",
                "counter",
                float(value),
                _metric(ncu, variant, metric),
            )


def _stall_scope(point: dict[str, int]) -> str:
    """'' where a case's stall claim holds (one chain in one warp: ilp=1, warps=1), else where it does."""
    return "" if point.get("ilp", 1) == 1 and point.get("warps", 1) == 1 else "ilp=1, warps=1 only"


def _stall_row(case: Case, params: str, stalls: pd.DataFrame, only: str) -> dict[str, Any]:
    """The dominant stall reason of one launch against the case's claim; `only` names where the claim holds."""
    long = stalls.sort_values("value", ascending=False)
    top = f"{long.reason.iloc[0]} ({long.share.iloc[0]:.0%})" if len(long) else "none"
    base = {
        "case": case.id,
        "params": params,
        "check": f"stall: dominant reason is {case.stall}",
        "clock64_value": float("nan"),
        "tolerance": float("nan"),
        "rel_err": float("nan"),
    }
    share = long.loc[long.reason == case.stall, "share"]
    base["counter_value"] = float(share.iloc[0]) if len(share) else float("nan")
    if not case.stall or only or not len(long):
        return base | {
            "verdict": "not-applicable",
            "note": f"expected reason stated for {only or 'no point'}; top: {top}",
        }
    if long.reason.iloc[0] == case.stall:
        return base | {"verdict": "agree", "note": f"top: {top}"}
    return base | {"verdict": "disagree", "note": case.explain.get("stall", f"{WHY['stall']}; top: {top}")}


def sass_rows(cases: dict[str, Case], sass_checks: pd.DataFrame) -> Iterator[dict[str, Any]]:
    """The SASS expectations of the run arch, as cross-validation rows."""
    for r in sass_checks.itertuples():
        ok = r.verdict == "agree"
        note = "" if ok else cases[r.case].explain.get("sass", WHY["sass"])
        yield {
            "case": r.case,
            "params": r.params,
            "check": f"sass {r.variant}: {r.opcode} {r.expect}",
            "clock64_value": float("nan"),
            "counter_value": float(r.count),
            "rel_err": float("nan"),
            "tolerance": float("nan"),
            "verdict": r.verdict,
            "note": note,
        }


def counted(case: Case, point_raw: pd.DataFrame) -> bool:
    """Whether counters can check a measured point: a chain case's (cycles, instructions, pipe, CPI), or a timed
    case's whose records there claim counter values (`expect`)."""
    return case.kind == "chain" or any(json.loads(e or "{}") for e in point_raw["expect"])


def figure_points(cases: list[Case], raw: pd.DataFrame) -> dict[str, list[dict[str, int]]]:
    """Case id -> the planned points outside its profiled sweeps where a figure of its own is taken (its only point,
    its peak, one per point) and counters can check it (`counted`): what ncu profiles beside the profiled sweeps."""
    if raw.empty:
        return {}
    by_point = figure_model.points(raw)
    out = {}
    for case in cases:
        mine = raw[raw["case"] == case.id]
        planned = {canonical_params(p): p for p in case.points()}
        skip = {canonical_params(p) for p in case.profiled_points()}
        taken = dict.fromkeys(p for f in figures.case_figures(case, raw, by_point) for p in f.points)
        wanted = [
            planned[p] for p in taken if p in planned and p not in skip and counted(case, mine[mine["params"] == p])
        ]
        if wanted:
            out[case.id] = wanted
    return out


def planned_points(cases: list[Case], raw: pd.DataFrame, profiled: Collection[str]) -> set[tuple[str, str]]:
    """(case, params) of every point ncu profiles: the profiled sweeps and figure points of the `profiled` families."""
    mine = [c for c in cases if c.family in profiled]
    extra = figure_points(mine, raw)
    return {(c.id, canonical_params(p)) for c in mine for p in [*c.profiled_points(), *extra.get(c.id, [])]}


def unprofiled_note(case: Case, point_raw: pd.DataFrame, planned: bool) -> str:
    """Why a measured point has no counters: no count to check there, a launch ncu lost, or what the manifest says
    of the points ncu leaves out (`unprofiled`)."""
    if not counted(case, point_raw):
        return case.unprofiled or NO_CLAIM
    if planned:
        return NO_KERNEL
    return case.unprofiled or DERIVED_ONLY


def crossval(
    cases: list[Case],
    raw: pd.DataFrame,
    ncu: pd.DataFrame,
    stalls: pd.DataFrame,
    sass_checks: pd.DataFrame,
    ops: dict[tuple[str, str, str], int],
    profiled: Collection[str],
) -> list[dict[str, Any]]:
    """All checks for every measured point; `ops` maps (case, params-without-warps, variant) to body length;
    `profiled`: the families ncu profiles."""
    by_id = {c.id: c for c in cases}
    rows = list(sass_rows(by_id, sass_checks))
    planned = planned_points(cases, raw, profiled)
    for (case_id, params), point_raw in raw.groupby(["case", "params"]):
        case = by_id[case_id]
        point_ncu = ncu[(ncu.case == case_id) & (ncu.params == params)]
        point_stalls = stalls[(stalls.case == case_id) & (stalls.params == params)]
        if point_ncu.empty:
            note = unprofiled_note(case, point_raw, (case_id, params) in planned)
            rows.append(_row(case, params, "profile: point profiled", "counter", float("nan"), float("nan"), note))
        elif case.kind == "chain":
            kernel_key = canonical_params({k: v for k, v in parse_params(params).items() if k != "warps"})
            point_ops = {v: ops[(case_id, kernel_key, v)] for v in ("short", "long")}
            rows += checks_for_point(case, params, point_raw, point_ncu, point_stalls, point_ops)
        else:
            rows += expect_rows(case, params, point_raw, point_ncu)
            variant = next((v for v in point_raw.variant if v), "")
            only = _stall_scope(parse_params(params)) if variant else "a record naming its variant"
            rows.append(_stall_row(case, params, point_stalls[point_stalls.variant == variant], only))
    return rows
