"""The power model per precision: P = P_infrastructure + k x active SMs fitted over its points (intercept, slope,
R^2, rms and each point's residual), the intercept against the idle card and as a share of the board power at the most
SMs, and TFLOPS/W at the most SMs, alone and over fp32 FFMA's."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ....core.tables import canonical_params
from ....measure import power
from ...figure_model import Figure
from ..samples import at, make, samples

FP32 = "power_fp32_ffma"  # the precision TFLOPS/W is compared with


def _jackknife(sms: np.ndarray, watts: np.ndarray) -> dict[str, float]:
    """max - min of each fit coefficient over the fits leaving one point out (NaN below three points)."""
    if len(sms) < 3:
        return dict.fromkeys(("intercept_w", "slope_w_per_sm", "r2", "rms_w"), math.nan)
    fits = [power.line(np.delete(sms, i), np.delete(watts, i)) for i in range(len(sms))]
    return {
        k: float(np.nanmax([f[k] for f in fits]) - np.nanmin([f[k] for f in fits]))
        for k in ("intercept_w", "slope_w_per_sm", "r2", "rms_w")
    }


def fit_figures(case: str, mine: pd.DataFrame, used: pd.DataFrame, which: str, idle: np.ndarray) -> list[Figure]:
    """One precision's power fit over its `used` points (`which` of them): its coefficients, the intercept against
    the idle card's power (`idle`), and the residual at each of its points (`mine`, those left out included)."""
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
    out = _coefficients(case, fit, spread, over, base)
    if len(idle):
        out.append(_over_idle(case, fit["intercept_w"], spread["intercept_w"], idle, base))
    return out + _residuals(case, mine, fit, which, base)


def _coefficients(
    case: str, fit: dict[str, float], spread: dict[str, float], over: str, base: dict[str, object]
) -> list[Figure]:
    """The fit's intercept, slope, R^2 and rms residual, each with its leave-one-out range (`over`: how it was fit)."""
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
    return [
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


def _over_idle(case: str, intercept: float, spread: float, idle: np.ndarray, base: dict[str, object]) -> Figure:
    """The fit's intercept minus the idle card's power (no kernel, context open)."""
    return Figure(
        metric="p_infrastructure_minus_idle",
        unit="W",
        name=f"{case} P_infrastructure minus the idle card",
        value=intercept - float(np.median(idle)),
        spread=spread + float(idle.max() - idle.min()),
        derivation=f"the fit's intercept minus {power.IDLE} power at sms=0 "
        f"({float(np.median(idle)):.4g} W: no kernel, context open); spread: the intercept's "
        "leave-one-out range plus the idle samples' range",
        **(base | {"points": (*base["points"], canonical_params({"sms": 0}))}),
    )


def _residuals(
    case: str, mine: pd.DataFrame, fit: dict[str, float], which: str, base: dict[str, object]
) -> list[Figure]:
    """Each point's power minus the fit's, saying whether the fit used it."""
    fitted = set(base["points"])
    out = []
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


def top_point(case: str, pts: pd.DataFrame) -> str | None:
    """The point of the most SMs a precision measured TFLOPS at (None: none)."""
    mine = pts[(pts["case"] == case) & pts["tflops"].notna()]
    return canonical_params({"sms": int(mine["sms"].max())}) if len(mine) else None


def efficiency(raw: pd.DataFrame, case: str, top: str, fp32_top: str | None) -> list[Figure | None]:
    """TFLOPS/W at a precision's most SMs (`top`), and over fp32 FFMA's at its most SMs (`fp32_top`)."""
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


def share(raw: pd.DataFrame, case: str, intercept: Figure, top: str) -> Figure | None:
    """The fit's intercept as a share of the board power at a precision's most SMs (`top`)."""
    watts = samples(raw, case, "power", top)
    found = make(
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
    if found is not None and math.isfinite(intercept.spread):
        found.spread += 100 * intercept.spread / float(np.median(watts))
    return found
