"""Derived figures of the power category, per precision: the power model P = P_infrastructure + k x active SMs
(intercept, slope, R^2, rms and each point's residual), the intercept against the idle card and as a share of the
board power at the most SMs, TFLOPS/W at the most SMs, alone and over fp32 FFMA's, and the SM clock NVML read
under that load (lowest, highest, jitter)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import power
from ..checks import point_clocks
from ..figure_model import REFERENCE, Check, Figure
from ..tables import canonical_params
from .samples import at, keep, make, params_of, samples

FP32 = "power_fp32_ffma"  # the precision TFLOPS/W is compared with
CLOCK = "sm_clock_nvml"  # the SM clock NVML reads every 25 ms of each point's window
NVML_CLOCK_TOLERANCE = 0.02  # NVML's reading and the launches' own clock agree within this share
# Why they may not: NVML reports the clock the driver set for the graphics domain; clock64 over %globaltimer is the
# clock the SMs ran. Under mma.sync load on the H200 the SMs ran 1,799-1,815 MHz at any SM count (1 to 132) while
# NVML read 1980 MHz: near the 1830 MHz the H100 whitepaper's tensor peaks assume, a clock NVML does not show.
NVML_CLOCK_WHY = "NVML reads the clock the driver set; the SMs ran another under this load, which sm_clock gives"


def _jackknife(sms: np.ndarray, watts: np.ndarray) -> dict[str, float]:
    """max - min of each fit coefficient over the fits leaving one point out (NaN below three points)."""
    if len(sms) < 3:
        return dict.fromkeys(("intercept_w", "slope_w_per_sm", "r2", "rms_w"), math.nan)
    fits = [power.line(np.delete(sms, i), np.delete(watts, i)) for i in range(len(sms))]
    return {
        k: float(np.nanmax([f[k] for f in fits]) - np.nanmin([f[k] for f in fits]))
        for k in ("intercept_w", "slope_w_per_sm", "r2", "rms_w")
    }


def _fit_figures(case: str, mine: pd.DataFrame, used: pd.DataFrame, which: str, idle: np.ndarray) -> list[Figure]:
    sms, watts = used["sms"].to_numpy(float), used["power_w"].to_numpy(float)
    fit = power.line(sms, watts)
    if math.isnan(fit["slope_w_per_sm"]):
        return []
    spread = _jackknife(sms, watts)
    pts = tuple(canonical_params({"sms": int(s)}) for s in used["sms"])
    over = (
        f"least squares over the {which} points ({len(pts)}: sms={', '.join(str(int(s)) for s in sms)}), each "
        "the energy-counter average of a 1 s window of sustained work; spread: range over the leave-one-out fits"
    )
    base = {"case": case, "kind": "derived", "samples": len(pts), "points": pts}
    fitted = (  # metric, unit, name, fit key, how
        (
            "p_infrastructure",
            "W",
            "P_infrastructure (fit intercept)",
            "intercept_w",
            "intercept of P = P_inf + k x SMs",
        ),
        ("k_per_sm", "W/SM", "k per active SM (fit slope)", "slope_w_per_sm", "slope"),
        ("fit_r2", "1", "R^2 of the power fit", "r2", "1 - SS_residual / SS_total"),
        ("fit_rms", "W", "rms residual of the power fit", "rms_w", "root mean square residual"),
    )
    out = [
        Figure(
            metric=metric,
            unit=unit,
            name=f"{case} {name}",
            value=fit[key],
            spread=spread[key],
            derivation=f"{how}, {over}",
            **base,
        )
        for metric, unit, name, key, how in fitted
    ]
    if len(idle):
        idle_at = canonical_params({"sms": 0})
        gap = fit["intercept_w"] - float(np.median(idle))
        out.append(
            Figure(
                metric="p_infrastructure_minus_idle",
                unit="W",
                name=f"{case} P_infrastructure minus the idle card",
                value=gap,
                spread=spread["intercept_w"] + float(idle.max() - idle.min()),
                derivation=f"the fit's intercept minus {power.IDLE} power at sms=0 "
                f"({float(np.median(idle)):.4g} W: no kernel, context open); spread: the intercept's "
                "leave-one-out range plus the idle samples' range",
                **(base | {"points": (*pts, idle_at)}),
            )
        )
    fitted = set(pts)
    for s, w in zip(mine["sms"].to_numpy(float), mine["power_w"].to_numpy(float), strict=True):
        p = canonical_params({"sms": int(s)})
        role = f"a point of the fit over the {which} points" if p in fitted else "left out of the fit (throttled)"
        out.append(
            Figure(
                metric="fit_residual",
                unit="W",
                name=f"{case} fit residual at sms={int(s)}",
                value=float(w - (fit["intercept_w"] + fit["slope_w_per_sm"] * s)),
                spread=0.0,
                derivation=f"power at sms={int(s)} minus the fit's P_inf + k x {int(s)} ({role})",
                params=p,
                **(base | {"samples": 1, "points": (p,)}),
            )
        )
    return out


def _top(case: str, pts: pd.DataFrame) -> str | None:
    mine = pts[(pts["case"] == case) & pts["tflops"].notna()]
    return canonical_params({"sms": int(mine["sms"].max())}) if len(mine) else None


def _efficiency(raw: pd.DataFrame, case: str, top: str, fp32_top: str | None) -> list[Figure | None]:
    tflops, watts = samples(raw, case, "tflops", top), samples(raw, case, "power", top)
    out = [
        make(
            case,
            "tflops_per_w",
            "TFLOPS/W",
            f"{case} TFLOPS/W{at(top)}",
            lambda t, p: t / p,
            [tflops, watts],
            f"TFLOPS{at(top)} (the most SMs measured) / board power there (energy-counter average)",
            [top],
        )
    ]
    if case != FP32 and fp32_top is not None:
        out.append(
            make(
                case,
                "tflops_per_w_vs_fp32",
                "x",
                f"{case} TFLOPS/W over {FP32}{at(top)}",
                lambda t, p, t0, p0: (t / p) / (t0 / p0),
                [tflops, watts, samples(raw, FP32, "tflops", fp32_top), samples(raw, FP32, "power", fp32_top)],
                f"TFLOPS/W{at(top)} / {FP32} TFLOPS/W{at(fp32_top)}",
                [top, fp32_top],
                params=top,
            )
        )
    return out


def _share(raw: pd.DataFrame, case: str, intercept: Figure, top: str) -> Figure | None:
    watts = samples(raw, case, "power", top)
    share = make(
        case,
        "infrastructure_share",
        "%",
        f"{case} P_infrastructure share of the board power{at(top)}",
        lambda p: 100 * intercept.value / p,
        [watts],
        f"the fit's intercept ({intercept.value:.4g} W) / board power{at(top)} (the most SMs measured); "
        "spread: the power samples' and the intercept's leave-one-out range",
        (*intercept.points, top),
        params=top,
    )
    if share is not None and math.isfinite(intercept.spread):
        share.spread += 100 * intercept.spread / float(np.median(watts))
    return share


def _clock(raw: pd.DataFrame, case: str) -> list[Figure]:
    """The SM clock under one precision's load: what its launches ran at (clock64 over %globaltimer, every SM), and
    NVML's lowest and highest reading with their gap as a share of the median, each NVML figure checked against
    the measured clock."""
    loaded = params_of(raw, case, CLOCK)
    clocks = np.concatenate([samples(raw, case, CLOCK, p) for p in loaded]) if loaded else np.array([])
    if not len(clocks):
        return []
    lo, hi, mid = float(clocks.min()), float(clocks.max()), float(np.median(clocks))
    over = f"the {len(clocks)} NVML readings ({CLOCK}, every 25 ms) over its {len(loaded)} loaded 1 s windows"
    base = {"case": case, "kind": "derived", "spread": 0.0, "samples": len(clocks), "points": tuple(loaded)}
    known = point_clocks(raw)
    ran = np.array([known[(case, p)] for p in loaded if (case, p) in known])
    measured = []
    if len(ran):
        sm = float(np.median(ran))
        measured = [
            Figure(
                metric="sm_clock",
                unit="MHz",
                name=f"{case} SM clock under load (clock64 over %globaltimer)",
                value=sm,
                derivation=f"median over its {len(ran)} loaded points of the clock its launches ran at: clock64 "
                "cycles over %globaltimer ns of each SM's timed loop",
                clock_mhz=sm,
                **base | {"samples": len(ran), "spread": float(ran.max() - ran.min())},
            )
        ]
        off = mid / sm - 1
        nvml_check = Check(
            "measured clock",
            "agree" if abs(off) <= NVML_CLOCK_TOLERANCE else "disagree",
            f"NVML's median {mid:.0f} MHz vs {sm:.0f} MHz the launches ran at ({off:+.1%}, tolerance "
            f"{NVML_CLOCK_TOLERANCE:.0%})",
            evidence=REFERENCE,
            explained=NVML_CLOCK_WHY,
        )
        base = base | {"checks": [nvml_check]}
    return measured + [
        Figure(
            metric="sustained_clock_min",
            unit="MHz",
            name=f"{case} NVML SM clock, lowest",
            value=lo,
            derivation=f"lowest of {over}",
            **base,
        ),
        Figure(
            metric="sustained_clock_max",
            unit="MHz",
            name=f"{case} NVML SM clock, highest",
            value=hi,
            derivation=f"highest of {over}",
            **base,
        ),
        Figure(
            metric="clock_jitter",
            unit="%",
            name=f"{case} NVML SM clock jitter under load",
            value=100 * (hi - lo) / mid,
            derivation=f"100 x (highest - lowest) / median ({mid:.0f} MHz) of {over}",
            **base,
        ),
    ]


def figures(frames: dict[str, pd.DataFrame], generic: list[Figure]) -> list[Figure]:
    """Every derived figure of the power category's run."""
    raw = frames.get("raw")
    pts = power.points(raw)
    if pts.empty:
        return []
    idle = samples(raw, power.IDLE, "power", canonical_params({"sms": 0}))
    fp32_top = _top(FP32, pts)
    out: list[Figure | None] = []
    for case in power.PRECISIONS:
        mine = pts[pts["case"] == case]
        if mine.empty:
            continue
        clean = mine[~mine["throttled"].astype(bool)]
        used, which = (clean, "unthrottled") if clean["sms"].nunique() >= 2 else (mine, "all (some throttled)")
        fit = _fit_figures(case, mine, used, which, idle)
        out += fit
        top = _top(case, pts)
        if top is not None:
            out += _efficiency(raw, case, top, fp32_top)
            if fit:
                out.append(_share(raw, case, fit[0], top))
        out += _clock(raw, case)
    return keep(out)
