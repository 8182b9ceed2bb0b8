"""Figures the scheduler category derives over several points: sub-core binding, the warps that saturate a pipe,
the scoreboard depth (one number), the setmaxnreg costs, the outcomes of the patched control codes, the register
file (size, allocation unit, partitions; what the reuse flags save) and, where the table is given, the compiler's stall
counts of the chain kernels. Pure functions of the tables."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from ..catalog import Case
from ..figure_model import REFERENCE, Check, Figure
from ..tables import point_text
from .pipelines import (
    KNEE,
    derived,
    method_of,
    num,
    param,
    ratio_spread,
    robust,
    series,
    slope,
    unit_of,
    with_papers,
)

CATEGORY = "scheduler"
METRICS = frozenset(
    {
        "allocation_unit",
        "binding",
        "compiler_stall",
        "dec_cost",
        "depth",
        "inc_cost",
        "pair_throughput",
        "register_partitions",
        "registers_per_sm",
        "reuse_ratio",
        "safe_stall",
        "saturation_warps",
        "slowdown",
        "stall_slope",
        "throughput",
        "wrong_results",
        "yield_ratio",
    }
)  # every metric a figure of this deriver can have

SLOWED = 0.75  # a partner slows warp 0 when warp 0's rate falls below this share of its rate alone
STEP = 0.5  # a scoreboard step: cycles per iteration rise by this share of a one-load iteration between two points
CHAIN_MIN = 64  # a kernel whose most common opcode appears this often holds a dependent chain
# reference/ rows the derived figures stand for (the seed paper's sm_120 figures; compare shows them side by side)
PAPER = {
    "scoreboard depth": "scoreboard_depth_min_sm120",
    "setmaxnreg.dec cost": "setmaxnreg_dec_latency_sm120",
    "setmaxnreg.inc cost": "setmaxnreg_inc_latency_sm120",
    "warps_iadd3 warps to saturate": "iadd3_saturation_warps_sm120",
    "warps_mufu warps to saturate": "sfu_saturation_warps_sm120",
}

# --- sub-core binding --------------------------------------------------------------------------------------------


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
        thr, pair = series(raw, case, "throughput"), series(raw, case, "pair_throughput")
        if alone is None or alone not in thr:
            continue
        unit, method = unit_of(raw, case, "throughput"), method_of(generic, case)
        a = thr[alone]
        out.append(
            derived(
                case,
                "throughput",
                unit,
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
        pooled = {}
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


# --- latency hiding: warps to saturate ---------------------------------------------------------------------------


def saturation_warps(by_warps: Mapping[int, float], share: float = KNEE) -> int | None:
    """The fewest warps whose throughput reaches `share` of the best over the sweep."""
    best = max(by_warps.values(), default=0.0)
    if not best > 0:
        return None
    return int(min(int(w) for w, v in by_warps.items() if v >= share * best))


def warps_figures(raw: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """Per warp-scaling case (one dependent chain per warp): the fewest warps reaching KNEE of its peak."""
    out = []
    for case in sorted({str(c) for c in raw.loc[raw["metric"] == "resident_warps", "case"]}):
        thr = series(raw, case, "throughput")
        pts = {int(param(p, "warps")): v for p, v in thr.items() if param(p, "warps") is not None}
        if len(pts) < 2:
            continue
        warps, spread = robust(saturation_warps, pts)
        med = {w: float(np.median(v)) for w, v in pts.items()}
        best = max(med, key=lambda w: med[w])
        listed = ", ".join(f"{w}: {num(v)}" for w, v in sorted(med.items()))
        out.append(
            derived(
                case,
                "saturation_warps",
                "warp",
                f"{case} warps to saturate",
                warps,
                spread,
                sum(len(v) for v in pts.values()),
                f"fewest warps (one dependent chain each) reaching "
                f"{KNEE:.0%} of the best rate ({num(med[best])} warp_inst/cycle/SM at {best} warps); by "
                f"warps: {listed}",
                thr.keys(),
                method=method_of(generic, case),
            )
        )
    return out


# --- scoreboard depth --------------------------------------------------------------------------------------------


def scoreboard_depth(by_loads: Mapping[int, float], step: float = STEP) -> tuple[int, int | None]:
    """The most independent loads before cycles per iteration first rise by `step` of a one-load iteration between
    two swept counts (a second round trip), and the count where it rose (None: no step in the sweep)."""
    loads = sorted(by_loads)
    base = by_loads[loads[0]]
    for a, b in itertools.pairwise(loads):
        if by_loads[b] - by_loads[a] > step * base:
            return a, b
    return loads[-1], None


def scoreboard_figures(raw: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """The scoreboard depth, one number: how many loads one thread keeps in flight before a use waits for them."""
    cycles = series(raw, "scoreboard_depth", "cycles_per_iteration")
    pts = {int(param(p, "loads")): v for p, v in cycles.items() if param(p, "loads") is not None}
    if len(pts) < 2:
        return []
    med = {n: float(np.median(v)) for n, v in pts.items()}
    depth, rise = scoreboard_depth(med)
    _, spread = robust(lambda m: scoreboard_depth(m)[0], pts)
    where = (
        f"{depth} loads {num(med[depth])} -> {rise} loads {num(med[rise])} cycles (+{num(med[rise] - med[depth])}"
        f"): the SM keeps at least {depth} loads of one thread in flight, fewer than {rise} before the step"
        if rise is not None
        else f"no step up to {depth} loads: at least {depth}"
    )
    fig = derived(
        "scoreboard_depth",
        "depth",
        "loads",
        "scoreboard depth",
        depth,
        spread,
        sum(len(v) for v in pts.values()),
        f"most independent ld.global.cg loads issued before the first use "
        f"while cycles per iteration stay within one round trip: the first rise by more than {STEP:.0%} of a "
        f"one-load iteration ({num(med[min(med)])} cycles) between two swept counts is {where}",
        cycles.keys(),
        method=method_of(generic, "scoreboard_depth"),
    )
    return [fig]


# --- setmaxnreg --------------------------------------------------------------------------------------------------


def setmaxnreg_figures(raw: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """The cost of setmaxnreg.dec and of setmaxnreg.inc, each one number over every register count given back."""
    out = []
    for metric, what in (("dec_cost", "setmaxnreg.dec"), ("inc_cost", "setmaxnreg.inc")):
        pts = series(raw, "setmaxnreg", metric)
        if not pts:
            continue
        pooled = np.concatenate(list(pts.values()))
        listed = ", ".join(f"low={param(p, 'low')}: {num(np.median(v))}" for p, v in pts.items())
        out.append(
            derived(
                "setmaxnreg",
                metric,
                unit_of(raw, "setmaxnreg", metric),
                f"{what} cost",
                np.median(pooled),
                np.ptp(pooled),
                len(pooled),
                f"median cycles per {what} over every "
                f"register count given back ({listed}), the same loop's clock reads without it subtracted",
                pts.keys(),
                method=method_of(generic, "setmaxnreg"),
            )
        )
    return out


# --- patched control codes ---------------------------------------------------------------------------------------


def safe_stall(wrong: Mapping[int, float]) -> int | None:
    """The smallest patched stall count from which every larger one gives no wrong result (None: none does)."""
    safe = None
    for k in sorted(wrong, reverse=True):
        if wrong[k] > 0:
            break
        safe = k
    return safe


def patch_figures(raw: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """The smallest stall count the FFMA chain survives, the cycles each stall count costs above it, and the inverted
    yield flag's effect per warp count."""
    out = []
    wrong = {int(param(p, "stall")): v for p, v in series(raw, "stall_patch", "wrong_results").items()}
    cycles = {int(param(p, "stall")): v for p, v in series(raw, "stall_patch", "cycles_per_ffma").items()}
    points = list(series(raw, "stall_patch", "wrong_results"))
    method = method_of(generic, "stall_patch")
    if wrong:
        k, spread = robust(safe_stall, wrong)
        listed = ", ".join(f"{s}: {num(np.median(v))}" for s, v in sorted(wrong.items()))
        if k is not None:
            out.append(
                derived(
                    "stall_patch",
                    "safe_stall",
                    "cycle",
                    "stall_patch smallest safe stall count",
                    k,
                    spread,
                    sum(len(v) for v in wrong.values()),
                    f"smallest stall count of the chain FFMAs "
                    f"from which no thread of 4 warps gets a wrong result; wrong threads by stall count: "
                    f"{listed}",
                    points,
                    method=method,
                )
            )
            above = {s: v for s, v in cycles.items() if s >= k}
            fit, fit_spread = robust(lambda m: slope(m.keys(), m.values()), above)
            if fit is not None:
                out.append(
                    derived(
                        "stall_patch",
                        "stall_slope",
                        "cycle",
                        "stall_patch cycles per stall count",
                        fit,
                        fit_spread,
                        sum(len(v) for v in above.values()),
                        "least-squares slope of cycles per "
                        f"FFMA over the safe stall counts ({', '.join(str(s) for s in sorted(above))}): "
                        "what each stall cycle the compiler encodes costs the chain",
                        points,
                        method=method,
                    )
                )
    yielded = method_of(generic, "yield_patch")
    out += flagged_ratios(
        raw,
        "yield_patch",
        ("flipped", "cycles_per_iteration", "yield_ratio", "inverted yield"),
        lambda flipped, base: (
            f"cycles per iteration with the chain FFMAs' yield flag inverted / with the compiler's: {flipped} / {base}"
        ),
        yielded,
    )
    wrong = most_wrong(
        raw,
        "yield_patch",
        "thread",
        lambda worst: (
            f"most threads with a wrong result in any launch over every warp count and yield flag (at "
            f"{worst}): the yield flag does not guard the chain's results"
        ),
        yielded,
    )
    return out + ([wrong] if wrong else [])


# --- the register file -------------------------------------------------------------------------------------------

CTA_WARPS = 2  # regfile.cu's kCtaWarps: warps resident come in CTAs of 2
GRANULES = (32, 64, 128, 256, 512, 1024)  # registers a warp's allocation may be rounded up to
PARTITIONS = (1, 2, 4)  # register-file slices an SM's warps may each be confined to
FILE_SIZES = np.arange(4096, 262144 + 1, 256)  # registers per SM tried
NARROW = 0.1  # a register file bounded within this share of its lower end: the documented size can confirm it
# the documented values: the CUDA C++ Programming Guide's table of compute capabilities (64K 32-bit registers per
# SM, 5.0 to 12.x) and cuda_occupancy.h (cudaOccRegAllocationGranularity 256, cudaOccSubPartitionsPerMultiprocessor 4)
DOCUMENTED = {"registers_per_sm": 65536, "allocation_unit": 256, "register_partitions": 4}


def predicted_warps(regs: int, per_sm: np.ndarray, granule: int, partitions: int) -> np.ndarray:
    """Warps an SM holds at `regs` registers a thread, for each register-file size: a warp's registers rounded up to
    `granule`, each of `partitions` slices holding whole warps, whole 2-warp CTAs."""
    per_warp = -(-regs * 32 // granule) * granule
    warps = partitions * ((per_sm // partitions) // per_warp)
    return warps // CTA_WARPS * CTA_WARPS


def register_fits(points: list[tuple[int, float]]) -> list[tuple[int, int, int]]:
    """Every (registers per SM, granule, partitions) that gives each (registers a thread, warps resident) point: the
    warps exactly where fewer than the sweep's most were resident (registers bound them), at least them elsewhere."""
    most = max(w for _, w in points)
    fits = []
    for granule, parts in itertools.product(GRANULES, PARTITIONS):
        ok = np.ones(len(FILE_SIZES), bool)
        for regs, warps in points:
            pred = predicted_warps(regs, FILE_SIZES, granule, parts)
            ok &= pred == warps if warps < most else pred >= warps
        fits += [(int(n), granule, parts) for n in FILE_SIZES[ok]]
    return fits


def _fit_value(metric: str, fits: list[tuple[int, int, int]]) -> float | None:
    """The smallest value of one fitted quantity over the fits (None: no fit)."""
    column = {"registers_per_sm": 0, "allocation_unit": 1, "register_partitions": 2}[metric]
    return min((f[column] for f in fits), default=None)


def _fit_of(metric: str, regs: Mapping[str, int], warps: Mapping[str, float]) -> float | None:
    """`_fit_value` of the fits to one set of points (point -> warps resident), `regs` their registers a thread."""
    return _fit_value(metric, register_fits([(regs[p], w) for p, w in warps.items()]))


def documented_check(metric: str, values: list[int]) -> Check:
    """The values of one quantity that fit every point against its documented value: disagreeing where no fit has
    it, agreeing where the fits single it out (one value, or a file size within NARROW), else undecided."""
    doc, lo, hi = DOCUMENTED[metric], min(values), max(values)
    shown = ", ".join(f"{v:,}" for v in values[:6]) + (f" .. {hi:,}" if len(values) > 6 else "")
    detail = f"documented {doc:,}; the points allow {shown}"
    if doc not in values:
        return Check("documented", "disagree", detail, evidence=REFERENCE)
    if lo == hi or (metric == "registers_per_sm" and hi - lo <= NARROW * lo):
        return Check("documented", "agree", detail, evidence=REFERENCE)
    return Check("documented", "n/a", f"{detail}: the sweep does not single it out", evidence=REFERENCE)


def regfile_figures(raw: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """Registers per SM, the allocation unit and the register-file partitions: every combination that gives the warps
    resident at each register count, each checked against its documented value."""
    warps, regs = series(raw, "reg_occupancy", "resident_warps"), series(raw, "reg_occupancy", "registers")
    at = {p: int(np.median(regs[p])) for p in warps if p in regs}
    if len(at) < 2:
        return []
    pts = {p: warps[p] for p in at}
    fits = register_fits([(at[p], float(np.median(v))) for p, v in pts.items()])
    listed = ", ".join(f"{at[p]} regs: {num(np.median(v))}" for p, v in sorted(pts.items(), key=lambda kv: at[kv[0]]))
    if not fits:
        return []
    out = []
    units = {"registers_per_sm": "reg", "allocation_unit": "reg/warp", "register_partitions": "partition"}
    for metric, what in (
        ("registers_per_sm", "registers per SM"),
        ("allocation_unit", "register allocation unit per warp"),
        ("register_partitions", "register-file partitions"),
    ):
        value, spread = robust(functools.partial(_fit_of, metric, at), pts)
        column = list(units).index(metric)
        values = sorted({f[column] for f in fits})
        fig = derived(
            "reg_occupancy",
            metric,
            units[metric],
            f"reg_occupancy {what}",
            value,
            spread,
            sum(len(v) for v in pts.values()),
            f"the smallest {what} of every (registers per SM, allocation unit, partitions) that gives each point's "
            f"resident warps (2-warp CTAs; exactly where registers bound them): {', '.join(map(str, values[:6]))}"
            f"{' .. ' + str(values[-1]) if len(values) > 6 else ''} fit; warps by registers a thread: {listed}",
            pts.keys(),
            method=method_of(generic, "reg_occupancy"),
        )
        fig.checks = [documented_check(metric, values)]
        out.append(fig)
    return out


def reuse_figures(raw: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """Per warp count: the FFMA rate with the .reuse flags cleared over the compiler's; the most wrong results."""
    method = method_of(generic, "reuse_patch")
    out = flagged_ratios(
        raw,
        "reuse_patch",
        ("cleared", "throughput", "reuse_ratio", "cleared reuse"),
        lambda cleared, base: (
            f"FFMA rate with every FFMA's .reuse flags cleared / with the compiler's: {cleared} / "
            f"{base} warp_inst/cycle/SM (below 1: what the reuse cache saves the register file)"
        ),
        method,
    )
    wrong = most_wrong(
        raw,
        "reuse_patch",
        "chain",
        lambda _: (
            "most chains with a wrong result in any launch, with and without the .reuse flags (0: the flags "
            "only say where an operand may be read again, never what it holds)"
        ),
        method,
    )
    return out + ([wrong] if wrong else [])


def flagged_ratios(
    raw: pd.DataFrame,
    case: str,
    what: tuple[str, str, str, str],
    describe: Callable[[str, str], str],
    method: str,
) -> list[Figure]:
    """Per warp count, a patched cubin's `metric` over the compiler's: `what` is (the axis whose 1 is the patched
    cubin, the metric, the ratio's metric, its name); `describe` words the derivation from the two medians."""
    axis, metric, ratio, label = what
    values = series(raw, case, metric)
    by = {(int(param(p, "warps")), int(param(p, axis))): (p, v) for p, v in values.items()}
    out = []
    for warps in sorted({w for w, _ in by}):
        if (warps, 0) not in by or (warps, 1) not in by:
            continue
        (p0, base), (p1, patched) = by[(warps, 0)], by[(warps, 1)]
        out.append(
            derived(
                case,
                ratio,
                "x",
                f"{case} {label} at warps={warps}",
                np.median(patched) / np.median(base),
                ratio_spread(patched, base),
                len(base) + len(patched),
                describe(num(np.median(patched)), num(np.median(base))),
                (p0, p1),
                params=p1,
                method=method,
            )
        )
    return out


def most_wrong(raw: pd.DataFrame, case: str, unit: str, describe: Callable[[str], str], method: str) -> Figure | None:
    """The most wrong results of a patched case's launches (its worst point worded by `describe`), None unrecorded."""
    bad = series(raw, case, "wrong_results")
    if not bad:
        return None
    pooled = np.concatenate(list(bad.values()))
    worst = max(bad, key=lambda p: float(np.max(bad[p])))
    return derived(
        case,
        "wrong_results",
        unit,
        f"{case} wrong results",
        float(np.max(pooled)),
        float(np.ptp(pooled)),
        len(pooled),
        describe(point_text(worst)),
        bad.keys(),
        method=method,
    )


# --- the compiler's control codes (where the figures stage is given them) --------------------------------------


def chain_stalls(codes: pd.DataFrame) -> pd.DataFrame:
    """Per kernel holding a chain (per arch, where the table has several): its most common opcode, how often, and the
    mode of that opcode's stall count."""
    keys = ["arch", "kernel"] if "arch" in codes.columns else ["kernel"]
    rows = []
    for key, group in codes.groupby(keys):
        opcode, count = group["opcode"].value_counts().index[0], int(group["opcode"].value_counts().iloc[0])
        if count < CHAIN_MIN:
            continue
        ops = group[group["opcode"] == opcode]
        rows.append(
            dict(zip(keys, key, strict=True))
            | {
                "opcode": opcode,
                "count": count,
                "stall": int(ops["stall"].mode().iloc[0]),
                "yield_share": float(ops["yield_"].mean()),
            }
        )
    return pd.DataFrame(rows, columns=[*keys, "opcode", "count", "stall", "yield_share"])


def control_code_figures(frames: dict[str, pd.DataFrame], generic: list[Figure]) -> list[Figure]:
    """Per chain kernel of a case (named by the SASS checks): the stall count the compiler encodes on its chain
    opcode. Only where the figures stage is given the controlcodes table."""
    codes, checks = frames.get("controlcodes"), frames.get("sass_checks")
    if codes is None or codes.empty or checks is None or checks.empty:
        return []
    owners = checks.drop_duplicates("kernel").set_index("kernel")
    arch = str(checks["arch"].iloc[0]) if "arch" in checks.columns else ""
    if arch and "arch" in codes.columns:
        codes = codes[codes["arch"] == arch]
    out = []
    for r in chain_stalls(codes).itertuples(index=False):
        if r.kernel not in owners.index:
            continue
        case, at = str(owners.loc[r.kernel, "case"]), str(owners.loc[r.kernel, "params"])
        out.append(
            derived(
                case,
                "compiler_stall",
                "cycle",
                f"{r.kernel} compiler stall count",
                r.stall,
                0.0,
                r.count,
                f"the most common stall count ptxas encodes on the {r.count} {r.opcode} of {r.kernel} "
                f"(static: the SASS control codes; yield flag on {r.yield_share:.0%} of them)",
                (at,),
                params=at,
                method=method_of(generic, case),
            )
        )
    return out


def figures(frames: dict[str, pd.DataFrame], generic: list[Figure], cases: dict[str, Case]) -> list[Figure]:
    """Every derived figure of the scheduler category."""
    raw = frames.get("raw", pd.DataFrame())
    if raw is None or raw.empty:
        return []
    return with_papers(
        subcore_figures(raw, generic)
        + warps_figures(raw, generic)
        + scoreboard_figures(raw, generic)
        + setmaxnreg_figures(raw, generic)
        + patch_figures(raw, generic)
        + regfile_figures(raw, generic)
        + reuse_figures(raw, generic)
        + control_code_figures(frames, generic),
        PAPER,
    )
