"""Derived figures of the power category, per precision: the power model P = P_infrastructure + k x active SMs
(intercept, slope, R^2, rms and each point's residual), the intercept against the idle card and as a share of the
board power at the most SMs, TFLOPS/W at the most SMs, alone and over fp32 FFMA's, and the SM clock NVML read
under that load (lowest, highest, jitter); the card's clock and power-limit settings checked against the device
attribute and the datasheet; and the soak's clock, temperature and power at its start and end, with the clock
event onsets per reason."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from .. import archs, power
from ..catalog import Case
from ..checks import BOUND_TOLERANCE, point_clocks
from ..figure_model import REFERENCE, Check, Figure
from ..run import SLOWDOWNS
from ..tables import canonical_params
from .samples import at, keep, make, params_of, run_of, samples

CATEGORY = "power"
METRICS = frozenset(
    {
        "clock_jitter",
        "default_sm_clock",
        "fit_r2",
        "fit_residual",
        "fit_rms",
        "infrastructure_share",
        "k_per_sm",
        "max_power_limit",
        "max_sm_clock",
        "p_infrastructure",
        "p_infrastructure_minus_idle",
        "power_end",
        "power_end_share",
        "power_limit",
        "slowdown_events",
        "slowdown_share",
        "sm_clock",
        "soak_clock_change",
        "soak_clock_end",
        "soak_clock_start",
        "sustained_clock_max",
        "sustained_clock_min",
        "temperature_end",
        "temperature_rise",
        "temperature_start",
        "tflops_per_w",
        "tflops_per_w_vs_fp32",
    }
)  # every metric a figure of this deriver can have

FP32 = "power_fp32_ffma"  # the precision TFLOPS/W is compared with
CLOCK = "sm_clock_nvml"  # the SM clock NVML reads every 25 ms of each point's window
NVML_CLOCK_TOLERANCE = 0.02  # NVML's reading and the launches' own clock agree within this share
# Why they may not: NVML reports the clock the driver set for the graphics domain; clock64 over %globaltimer is the
# clock the SMs ran. Under mma.sync load on the H200 the SMs ran 1,799-1,815 MHz at any SM count (1 to 132) while
# NVML read 1980 MHz: near the 1830 MHz the H100 whitepaper's tensor peaks assume, a clock NVML does not show.
NVML_CLOCK_WHY = "NVML reads the clock the driver set; the SMs ran another under this load, which sm_clock gives"
# NVML's clock settings, the device attribute and the datasheet agree within this share: one 15 MHz clock step of
# ~1980 MHz is 0.8%.
SETTING_TOLERANCE = 0.01
POWER_READING_TOLERANCE = 0.05  # the energy counter's average and the power readings over the same seconds
WINDOW_S = 2.0  # the soak's start and end: its first and last 2 s
SETTINGS = (
    "max_sm_clock",
    "default_sm_clock",
    "sm_clock_attribute",
    "power_limit",
    "default_power_limit",
    "max_power_limit",
)  # clock_limits' metrics the derived figures read


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


def compare(name: str, value: float, ref: float | None, what: str, tol: float, evidence: str = REFERENCE) -> Check:
    """A check that `value` equals the reference `ref` (named `what`) within the share `tol`; n/a without one."""
    if ref is None or not math.isfinite(ref) or not ref:
        return Check(name, "n/a", f"no {what}", evidence=evidence)
    off = value / ref - 1
    verdict = "agree" if abs(off) <= tol else "disagree"
    return Check(name, verdict, f"{value:.4g} vs {what} {ref:.4g} ({off:+.1%}, tolerance {tol:.0%})", evidence=evidence)


def at_most(name: str, value: float, bound: float | None, what: str) -> Check:
    """A bound (rules out, never verifies): `value` no more than `bound` (named `what`) plus BOUND_TOLERANCE."""
    if bound is None or not math.isfinite(bound):
        return Check(name, "n/a", f"no {what}")
    over = value > bound * (1 + BOUND_TOLERANCE)
    return Check(name, "disagree" if over else "agree", f"{value:.4g} vs {what} {bound:.4g}")


def _setting(raw: pd.DataFrame, metric: str) -> float | None:
    found = samples(raw, power.LIMITS, metric, "{}")
    return float(found[0]) if len(found) else None


def _settings(raw: pd.DataFrame) -> list[Figure]:
    """The card's max and default SM clock, its enforced power limit and the top of the limit's range (NVML), each
    with what can check it: the device attribute and the datasheet's boost clock and board power, the max clock over
    the default one, the limit's range."""
    read = {m: _setting(raw, m) for m in SETTINGS}
    gpu = run_of(raw)[1]
    model = archs.gpu_model(gpu)
    boost = model.boost_mhz if model else None
    sheet = (
        f"the {model.name} datasheet boost clock (smdissect.archs)"
        if boost
        else f"boost clock of {gpu} in smdissect.archs"
    )
    tdp = model.tdp_w if model else None
    sheet_tdp = f"the {model.name} datasheet's max board power (smdissect.archs)" if tdp else f"TDP of {gpu} in archs"
    default = read["default_power_limit"]
    same = (
        "" if default is None else " (its default)" if default == read["power_limit"] else f" (default {default:g} W)"
    )
    specs: list[tuple[str, str, str, str, Callable[[float], list[Check]]]] = [
        (
            "max_sm_clock",
            "MHz",
            "max (boost) SM clock",
            "nvmlDeviceGetMaxClockInfo(NVML_CLOCK_SM), read with no load",
            lambda v: [
                compare("device attribute", v, read["sm_clock_attribute"], "cudaDevAttrClockRate", SETTING_TOLERANCE),
                compare("datasheet", v, boost, sheet, SETTING_TOLERANCE),
            ],
        ),
        (
            "default_sm_clock",
            "MHz",
            "default applications SM clock",
            "nvmlDeviceGetDefaultApplicationsClock(NVML_CLOCK_SM): the clock the driver targets for applications by "
            "default; no datasheet states it",
            lambda v: [at_most("max clock", v, read["max_sm_clock"], "the max SM clock")],
        ),
        (
            "power_limit",
            "W",
            "enforced power limit",
            f"nvmlDeviceGetEnforcedPowerLimit{same}, read with no load; never changed",
            lambda v: [
                at_most("limit range", v, read["max_power_limit"], "the top of the limit range"),
                at_most("datasheet", v, tdp, sheet_tdp),
            ],
        ),
        (
            "max_power_limit",
            "W",
            "top of the configurable power-limit range",
            "nvmlDeviceGetPowerManagementLimitConstraints' maximum, read with no load; never changed",
            lambda v: [compare("datasheet", v, tdp, sheet_tdp, SETTING_TOLERANCE)],
        ),
    ]
    base = {"case": power.LIMITS, "kind": "derived", "spread": 0.0, "samples": 1, "params": "{}", "points": ("{}",)}
    return [
        Figure(metric=m, unit=unit, name=name, value=read[m], derivation=how, checks=checks(read[m]), **base)
        for m, unit, name, how, checks in specs
        if read[m] is not None
    ]


def _window(n_total: int, times: np.ndarray) -> int:
    """How many consecutive readings (or bins) WINDOW_S spans, at least one and at most half the series."""
    step = float(np.median(np.diff(times))) if len(times) > 1 else WINDOW_S
    return max(1, min(n_total // 2, round(WINDOW_S / step))) if step > 0 else 1


def _soak_clocks(base: dict, nvml: pd.DataFrame, bins: pd.DataFrame, max_clock: float | None) -> list[Figure | None]:
    """The clock the SMs ran at the soak's start and end (clock64 over %globaltimer), each checked against NVML's
    reading over the same seconds and the max SM clock, and the change between them."""
    k, n = _window(len(bins), bins["time_s"].to_numpy(float)), _window(len(nvml), nvml["time_s"].to_numpy(float))
    parts = {"start": (bins.head(k), nvml.head(n), "first"), "end": (bins.tail(k), nvml.tail(n), "last")}
    out: list[Figure | None] = []
    values = {}
    for when, (ran, read, which) in parts.items():
        clocks = ran["clock_mhz"].to_numpy(float)
        values[when] = clocks
        value = float(np.median(clocks))
        nvml_check = compare(
            "NVML clock", value, float(read["sm_clock_mhz"].median()), "NVML's median reading", NVML_CLOCK_TOLERANCE
        )
        if nvml_check.verdict == "disagree":
            nvml_check = Check(nvml_check.name, "disagree", nvml_check.detail, REFERENCE, NVML_CLOCK_WHY)
        out.append(
            Figure(
                metric=f"soak_clock_{when}",
                unit="MHz",
                name=f"SM clock at the soak's {when}",
                value=value,
                spread=float(clocks.max() - clocks.min()),
                samples=len(clocks),
                derivation=f"median over the {which} {len(clocks)} bins (~{WINDOW_S:g} s) of each bin's clock64 "
                "cycles over its %globaltimer ns, the median over SMs",
                checks=[nvml_check, at_most("max clock", value, max_clock, "the max SM clock (NVML)")],
                clock_mhz=value,
                **base,
            )
        )
    out.append(
        make(
            base["case"],
            "soak_clock_change",
            "%",
            "SM clock change over the soak (end over start)",
            lambda e, s: 100 * (e / s - 1),
            [values["end"], values["start"]],
            f"100 x (end / start - 1) of the SMs' clock over the first and last ~{WINDOW_S:g} s",
            base["points"],
            params=base["params"],
        )
    )
    return out


def _soak_state(base: dict, nvml: pd.DataFrame, limit: float | None) -> list[Figure | None]:
    """Temperature at the start and end and its rise; board power over the last seconds (the energy counter) and as
    a share of the enforced limit; the onsets of each clock event reason and the share of readings slowed down."""
    n = _window(len(nvml), nvml["time_s"].to_numpy(float))
    first, last = nvml.head(n), nvml.tail(n)
    temps = {"start": first["temperature_c"].to_numpy(float), "end": last["temperature_c"].to_numpy(float)}
    out: list[Figure | None] = [
        make(
            base["case"],
            f"temperature_{w}",
            "C",
            f"GPU temperature at the soak's {w}",
            lambda x: x,
            [v],
            f"median NVML temperature over the {len(v)} readings of its {'first' if w == 'start' else 'last'} "
            f"~{WINDOW_S:g} s",
            base["points"],
            params=base["params"],
        )
        for w, v in temps.items()
    ]
    out.append(
        make(
            base["case"],
            "temperature_rise",
            "C",
            "GPU temperature rise over the soak",
            lambda e, s: e - s,
            [temps["end"], temps["start"]],
            "end minus start temperature (medians of NVML's readings)",
            base["points"],
            params=base["params"],
        )
    )
    edge = nvml.iloc[-n - 1] if len(nvml) > n else nvml.iloc[0]
    tail = nvml.iloc[-1]
    seconds = float(tail["time_s"] - edge["time_s"])
    if seconds > 0:
        watts = float(tail["energy_j"] - edge["energy_j"]) / seconds
        readings = float(last["power_w"].median())
        check = compare(
            "power readings",
            watts,
            readings,
            "NVML's median power reading over the same seconds (the same board sensor: rules out, never verifies)",
            POWER_READING_TOLERANCE,
            evidence="",
        )
        power_fig = Figure(
            metric="power_end",
            unit="W",
            name="board power at the soak's end",
            value=watts,
            spread=float(last["power_w"].max() - last["power_w"].min()),
            samples=len(last),
            derivation=f"the energy counter's increase over the last {seconds:.3g} s of readings over those seconds; "
            "spread: the power readings' range there",
            checks=[check],
            **base,
        )
        out.append(power_fig)
        if limit:
            out.append(
                Figure(
                    metric="power_end_share",
                    unit="%",
                    name="board power at the soak's end / enforced power limit",
                    value=100 * watts / limit,
                    spread=100 * power_fig.spread / limit,
                    samples=len(last),
                    derivation=f"power at the end over the enforced limit ({limit:g} W, clock_limits)",
                    checks=[at_most("power limit", watts, limit, "the enforced power limit")],
                    **base,
                )
            )
    masks = nvml["mask"].to_numpy(float)
    onsets = power.onsets(masks)
    slowed = [bool(power.slowdown(int(m))) for m in masks]
    total = sum(c for r, c in onsets.items() if r in SLOWDOWNS)
    out.append(
        Figure(
            metric="slowdown_events",
            unit="events",
            name="clock slowdown onsets over the soak",
            value=float(total),
            spread=0.0,
            samples=len(masks),
            derivation=f"readings where a clock-lowering reason ({', '.join(sorted(SLOWDOWNS))}) began, over all "
            f"{len(masks)} NVML readings every ~100 ms",
            **base,
        )
    )
    out.append(
        Figure(
            metric="slowdown_share",
            unit="%",
            name="share of soak readings with the clocks held down",
            value=100 * sum(slowed) / len(masks),
            spread=0.0,
            samples=len(masks),
            derivation="readings whose clock event reasons include a clock-lowering one, over all readings",
            **base,
        )
    )
    out += [
        Figure(
            metric=f"events_{reason}",
            unit="events",
            name=f"{reason} onsets over the soak",
            value=float(count),
            spread=0.0,
            samples=len(masks),
            derivation=f"readings where NVML's clock event reason {reason} began (set, and not in the reading before)",
            **base,
        )
        for reason, count in sorted(onsets.items())
    ]
    return out


def _soak(raw: pd.DataFrame) -> list[Figure | None]:
    """The soak's figures at each of its points."""
    out: list[Figure | None] = []
    for params in params_of(raw, power.SOAK, "soak_time"):
        nvml, bins = power.soak_series(raw, params)
        if len(nvml) < 2 or len(bins) < 2:
            continue
        base = {"case": power.SOAK, "kind": "derived", "params": params, "points": (params,)}
        out += _soak_clocks(base, nvml, bins, _setting(raw, "max_sm_clock"))
        out += _soak_state(base, nvml, _setting(raw, "power_limit"))
    return out


def figures(frames: dict[str, pd.DataFrame], generic: list[Figure], cases: dict[str, Case]) -> list[Figure]:
    """Every derived figure of the power category's run."""
    raw = frames.get("raw")
    if raw is None or raw.empty:
        return []
    out: list[Figure | None] = [*_settings(raw), *_soak(raw)]
    pts = power.points(raw)
    if pts.empty:
        return keep(out)
    idle = samples(raw, power.IDLE, "power", canonical_params({"sms": 0}))
    fp32_top = _top(FP32, pts)
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
