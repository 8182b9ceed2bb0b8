"""Derived figures of the power category, per precision: the power model P = P_infrastructure + k x active SMs
(intercept, slope, R^2, rms and each point's residual), the intercept against the idle card and as a share of the
board power at the most SMs, TFLOPS/W at the most SMs, alone and over fp32 FFMA's, and the SM clock NVML read
under that load (lowest, highest, jitter); the card's clock and power-limit settings checked against the device
attribute and the datasheet; and the soak's clock, temperature and power at its start and end, with the clock
event onsets per reason."""

from __future__ import annotations

import pandas as pd

from ....core.catalog import Case
from ....core.tables import canonical_params
from ....measure import power
from ...figure_model import Figure
from ..samples import keep, samples
from .clock import clock_figures
from .model import FP32, efficiency, fit_figures, share, top_point
from .settings import settings
from .soak import soak

CATEGORY = "power"
METRICS = frozenset(
    {
        "clock_jitter",
        "default_sm_clock",
        "events_*",
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
)  # every metric a figure of this deriver can have (events_<reason>: the soak's onsets of each clock event reason)


def figures(frames: dict[str, pd.DataFrame], generic: list[Figure], cases: dict[str, Case]) -> list[Figure]:
    """Every derived figure of the power category's run."""
    raw = frames.get("raw")
    if raw is None or raw.empty:
        return []
    out: list[Figure | None] = [*settings(raw), *soak(raw)]
    pts = power.points(raw)
    if pts.empty:
        return keep(out)
    idle = samples(raw, power.IDLE, "power", canonical_params({"sms": 0}))
    fp32_top = top_point(FP32, pts)
    for case in power.PRECISIONS:
        mine = pts[pts["case"] == case]
        if mine.empty:
            continue
        clean = mine[~mine["throttled"].astype(bool)]
        used, which = (clean, "unthrottled") if clean["sms"].nunique() >= 2 else (mine, "all (some throttled)")
        fit = fit_figures(case, mine, used, which, idle)
        out += fit
        top = top_point(case, pts)
        if top is not None:
            out += efficiency(raw, case, top, fp32_top)
            if fit:
                out.append(share(raw, case, fit[0], top))
        out += clock_figures(raw, case)
    return keep(out)
