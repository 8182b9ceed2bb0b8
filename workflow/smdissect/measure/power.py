"""The power model of the power category: board power P = P_infrastructure + k x active SMs per precision, fitted
by least squares over the raw table's samples, with and without the samples whose clocks were held down (power
cap, thermal slowdown: they bend the line); TFLOPS/W at the most SMs measured; and the soak's time series (NVML
readings and the SMs' own clock every 100 ms) with its clock event onsets per reason."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..core.errors import SmdissectError
from ..core.tables import parse_params
from .device import throttle_names
from .run import slowdowns

IDLE = "power_idle"
SOAK = "power_soak"  # sustained load on every SM, NVML and the SMs' own clock every 100 ms
LIMITS = "clock_limits"  # the card's clock and power-limit settings (NVML) and the SM clock attribute
# power_soak's NVML metrics, one sample per 100 ms reading in time order, and their soak_series columns
SOAK_NVML = {
    "soak_time": "time_s",
    "energy": "energy_j",
    "power_nvml": "power_w",
    "sm_clock_nvml": "sm_clock_mhz",
    "temperature": "temperature_c",
    "throttle_reasons": "mask",
}
PRECISIONS = {
    "power_fp32_ffma": "fp32 FFMA",
    "power_fp16_hfma2": "fp16 HFMA2",
    "power_bf16_mma": "bf16 mma.sync",
    "power_fp64_dfma": "fp64 DFMA",
}
SETS = ("all", "unthrottled")  # the samples a fit uses
POINT_COLUMNS = [
    "case",
    "precision",
    "sms",
    "power_w",
    "energy_j",
    "tflops",
    "power_nvml_w",
    "sm_clock_mhz",
    "clock64_mhz",
    "temperature_c",
    "throttle",
    "reasons",
    "throttled",
]
FIT_COLUMNS = ["precision", "samples", "n", "intercept_w", "slope_w_per_sm", "r2", "rms_w", "idle_w"]


def slowdown(mask: int) -> bool:
    """Whether an NVML clock event reason mask holds a reason that lowers the clocks under load (power cap, thermal
    or hardware slowdown, board limit): such a sample sits below the line of the unthrottled ones."""
    return bool(slowdowns(throttle_names(mask)))


def points(raw: pd.DataFrame | None) -> pd.DataFrame:
    """One row per measured (case, sms) of the power category: precision, active SMs, energy-based average power,
    energy, TFLOPS, NVML power / SM clock / temperature medians, clock64 clock, throttle mask, names and flag."""
    if raw is None or raw.empty:
        return pd.DataFrame(columns=POINT_COLUMNS)
    rows = raw[raw["case"].isin([IDLE, *PRECISIONS])]
    out = []
    for (case, params), group in rows.groupby(["case", "params"]):
        value = group.groupby("metric")["value"].median()
        mask = int(
            np.bitwise_or.reduce(group.loc[group["metric"] == "throttle_reasons", "value"].astype(int), initial=0)
        )
        out.append(
            {
                "case": case,
                "precision": PRECISIONS.get(case, "idle"),
                "sms": int(parse_params(params)["sms"]),
                "power_w": value.get("power", math.nan),
                "energy_j": value.get("energy", math.nan),
                "tflops": value.get("tflops", math.nan),
                "power_nvml_w": value.get("power_nvml", math.nan),
                "sm_clock_mhz": value.get("sm_clock_nvml", math.nan),
                "clock64_mhz": float(group["clock_mhz"].median()),
                "temperature_c": value.get("temperature", math.nan),
                "throttle": mask,
                "reasons": throttle_names(mask),
                "throttled": slowdown(mask),
            }
        )
    return pd.DataFrame(out, columns=POINT_COLUMNS).sort_values(["case", "sms"], ignore_index=True)


def line(sms: np.ndarray, power: np.ndarray) -> dict[str, float]:
    """Least-squares P = intercept + slope x sms: coefficients, R^2, root-mean-square residual and sample count
    (NaN coefficients below two distinct SM counts)."""
    n = len(sms)
    if n < 2 or len(np.unique(sms)) < 2:
        return {"n": n, "intercept_w": math.nan, "slope_w_per_sm": math.nan, "r2": math.nan, "rms_w": math.nan}
    design = np.column_stack([np.ones(n), sms])
    (intercept, slope), *_ = np.linalg.lstsq(design, power, rcond=None)
    residual = power - (intercept + slope * sms)
    total = float(np.sum((power - power.mean()) ** 2))
    r2 = 1 - float(np.sum(residual**2)) / total if total > 0 else math.nan
    rms = float(np.sqrt(np.mean(residual**2)))
    return {"n": n, "intercept_w": float(intercept), "slope_w_per_sm": float(slope), "r2": r2, "rms_w": rms}


def fits(pts: pd.DataFrame) -> pd.DataFrame:
    """Per precision, the line over all its samples and over the unthrottled ones, beside the idle card's power."""
    idle = pts.loc[pts["case"] == IDLE, "power_w"]
    idle_w = float(idle.median()) if len(idle) else math.nan
    rows = []
    for precision, group in pts[pts["case"] != IDLE].groupby("precision", sort=False):
        for name in SETS:
            used = group if name == "all" else group[~group["throttled"].astype(bool)]
            fit = line(used["sms"].to_numpy(float), used["power_w"].to_numpy(float))
            rows.append({"precision": precision, "samples": name, **fit, "idle_w": idle_w})
    return pd.DataFrame(rows, columns=FIT_COLUMNS)


def best_fit(fit_table: pd.DataFrame) -> pd.DataFrame:
    """One line per precision: the unthrottled fit where it has coefficients, else the fit over all samples."""
    ok = fit_table.dropna(subset=["slope_w_per_sm"])
    ranked = ok.assign(rank=ok["samples"].map({"unthrottled": 0, "all": 1})).sort_values(["precision", "rank"])
    return ranked.drop_duplicates("precision").drop(columns="rank").reset_index(drop=True)


def residuals(pts: pd.DataFrame, fit_table: pd.DataFrame) -> pd.Series:
    """Each sample's power minus its precision's best line (NaN for idle and for a precision without a line)."""
    lines = best_fit(fit_table).set_index("precision")
    predicted = pts["precision"].map(lines["intercept_w"]) + pts["precision"].map(lines["slope_w_per_sm"]) * pts["sms"]
    return (pts["power_w"] - predicted).where(pts["case"] != IDLE)


def efficiency(pts: pd.DataFrame) -> pd.DataFrame:
    """Per precision at its most SMs measured: TFLOPS, board power and TFLOPS/W, and TFLOPS/W over fp32's."""
    busy = pts[(pts["case"] != IDLE) & pts["tflops"].notna()]
    top = busy.loc[busy.groupby("precision")["sms"].idxmax()]
    out = top[["precision", "sms", "tflops", "power_w", "throttled"]].assign(
        tflops_per_w=top["tflops"] / top["power_w"]
    )
    fp32 = out.loc[out["precision"] == PRECISIONS["power_fp32_ffma"], "tflops_per_w"]
    out["vs_fp32"] = out["tflops_per_w"] / float(fp32.iloc[0]) if len(fp32) else math.nan
    return out.reset_index(drop=True)


def _series(raw: pd.DataFrame, case: str, metric: str, params: str) -> np.ndarray:
    rows = raw[(raw["case"] == case) & (raw["metric"] == metric) & (raw["params"] == params)]
    return rows.sort_values("repeat")["value"].to_numpy(float)


def soak_series(raw: pd.DataFrame | None, params: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """power_soak's NVML readings at one point (a row per reading: seconds since every CTA ran, energy since then,
    board power, SM clock, temperature, clock event mask) and the SMs' own clock per bin (its end in s, MHz), in time
    order; empty where it did not run. Readings of unequal count are a one-line error naming the rerun."""
    nvml = pd.DataFrame(columns=list(SOAK_NVML.values()))
    kernel = pd.DataFrame(columns=["time_s", "clock_mhz"])
    if raw is None or raw.empty or not (raw["case"] == SOAK).any():
        return nvml, kernel
    series = {col: _series(raw, SOAK, m, params) for m, col in SOAK_NVML.items()}
    bins = {"time_s": _series(raw, SOAK, "bin_time", params), "clock_mhz": _series(raw, SOAK, "soak_clock", params)}
    for name, found in (("NVML readings", series), ("clock bins", bins)):
        if len({len(v) for v in found.values()}) > 1:
            raise SmdissectError(f"{SOAK} {params}: its {name} differ in count; rerun the power family")
    return pd.DataFrame(series), pd.DataFrame(bins)


def onsets(masks: np.ndarray) -> dict[str, int]:
    """Per clock event reason seen in a series of NVML masks: how often it began (set in a reading, not in the one
    before; the first reading counts where set)."""
    out: dict[str, int] = {}
    before = 0
    for mask in masks.astype(np.int64):
        for bit in (1 << b for b in range(64) if int(mask) >> b & 1):
            if not before & bit:
                name = throttle_names(bit)
                out[name] = out.get(name, 0) + 1
        before = int(mask)
    return out
