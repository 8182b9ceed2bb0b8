"""The register file: its size per SM, the allocation unit and the partitions that give the warps resident at each
register count (each against its documented value), and what setmaxnreg costs to give registers back or take them."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ...figure_model import REFERENCE, Check, Figure
from ..sweeps import derived, method_of, num, param, robust, series, unit_of

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
