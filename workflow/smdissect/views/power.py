"""Report view of the power category: the per-SM power model per precision, board power against active SMs with
the fitted lines, TFLOPS/W at the most SMs measured, and the clocks and throttle reasons of every sample."""

from __future__ import annotations

import altair as alt
import pandas as pd

from smdissect import power, report


def _model(pts: pd.DataFrame, fit_table: pd.DataFrame) -> str:
    if fit_table.empty:
        return report.empty("no power measurements of busy SMs")
    table = fit_table.assign(above_idle_w=fit_table["intercept_w"] - fit_table["idle_w"]).round(4).rename(columns={
        "intercept_w": "P_infrastructure (W)", "slope_w_per_sm": "k (W/SM)", "r2": "R²", "rms_w": "rms residual (W)",
        "idle_w": "idle card (W)", "above_idle_w": "infrastructure - idle (W)"})  # fmt: skip
    flagged = int(pts["throttled"].sum())
    note = report.empty(
        "P = P_infrastructure + k x active SMs, least squares over the busy samples (one persistent CTA per SM; "
        "energy-counter average over a 1 s window of sustained work). The intercept is the card awake at its load "
        "clocks with no SM busy, so it sits above the idle card (no kernel, idle clocks). 'unthrottled' leaves out the "
        f"{flagged} sample(s) whose clock event reasons include a power cap, thermal or hardware slowdown"
    )
    return note + report.table(table)


def _chart(pts: pd.DataFrame, fit_table: pd.DataFrame) -> str:
    if pts.empty:
        return report.empty("no power measurements")
    lines = power.best_fit(fit_table)
    ends = pd.concat([lines.assign(sms=s) for s in (0, int(pts["sms"].max()))], ignore_index=True).assign(
        power_w=lambda d: d["intercept_w"] + d["slope_w_per_sm"] * d["sms"]
    )
    data = pts.assign(sample=pts["throttled"].map({True: "throttled", False: "unthrottled"}))
    dots = (
        alt.Chart(data)
        .mark_point(filled=True, size=60)
        .encode(
            x=alt.X("sms:Q", title="active SMs (one persistent CTA each)"),
            y=alt.Y("power_w:Q", title="board power (W, energy counter)"),
            color=alt.Color("precision:N"),
            shape=alt.Shape("sample:N", title="clock events"),
        )
    )
    fitted = alt.Chart(ends).mark_line(strokeDash=[4, 3]).encode(x="sms:Q", y="power_w:Q", color="precision:N")
    return report.svg((dots + fitted).properties(width=560, height=320))


def _efficiency(pts: pd.DataFrame) -> str:
    table = power.efficiency(pts)
    if table.empty:
        return report.empty("no TFLOPS measurements")
    return report.table(table.rename(columns={
        "sms": "active SMs", "tflops": "TFLOPS", "power_w": "board power (W)", "throttled": "throttled",
        "tflops_per_w": "TFLOPS/W", "vs_fp32": "TFLOPS/W over fp32 FFMA"}))  # fmt: skip


def _samples(pts: pd.DataFrame, fit_table: pd.DataFrame) -> str:
    if pts.empty:
        return report.empty("no power measurements")
    table = pts.assign(
        residual_w=power.residuals(pts, fit_table).round(2), throttle=pts["throttle"].map(lambda m: f"{m:#x}")
    )
    columns = {"precision": "precision", "sms": "active SMs", "power_w": "power (W)", "residual_w": "residual (W)",
               "power_nvml_w": "NVML power readings (W, median)", "energy_j": "energy (J)", "tflops": "TFLOPS",
               "sm_clock_mhz": "SM clock NVML (MHz)", "clock64_mhz": "SM clock clock64 (MHz)",
               "temperature_c": "temperature (C)", "throttle": "clock event mask", "reasons": "clock event reasons",
               "throttled": "bends the line"}  # fmt: skip
    return report.table(table[list(columns)].rename(columns=columns))


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The power category's model, chart and tables, each saying so when its measurements are missing."""
    pts = power.points(frames.get("raw"))
    fit_table = power.fits(pts)
    return [
        ("Power model: P = P_infrastructure + k x active SMs", _model(pts, fit_table)),
        ("Board power versus active SMs", _chart(pts, fit_table)),
        ("Energy efficiency (TFLOPS/W) at the most SMs measured", _efficiency(pts)),
        ("Clocks, temperature and throttle reasons per sample", _samples(pts, fit_table)),
    ]
