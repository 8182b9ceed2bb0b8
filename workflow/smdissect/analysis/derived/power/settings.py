"""The card's clock and power-limit settings (NVML, read with no load), each checked against the device attribute,
the datasheet or another setting."""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd

from ....core import archs
from ....measure import power
from ...checks import BOUND_TOLERANCE
from ...figure_model import REFERENCE, Check, Figure
from ..samples import run_of, samples

# NVML's clock settings, the device attribute and the datasheet agree within this share: one 15 MHz clock step of
# ~1980 MHz is 0.8%.
SETTING_TOLERANCE = 0.01
SETTINGS = (
    "max_sm_clock",
    "default_sm_clock",
    "sm_clock_attribute",
    "power_limit",
    "default_power_limit",
    "max_power_limit",
)  # clock_limits' metrics the derived figures read
Spec = tuple[str, str, str, str, Callable[[float], list[Check]]]  # metric, unit, name, how it was read, its checks


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


def setting(raw: pd.DataFrame, metric: str) -> float | None:
    """One of clock_limits' settings as NVML read it (None: not read)."""
    found = samples(raw, power.LIMITS, metric, "{}")
    return float(found[0]) if len(found) else None


def settings(raw: pd.DataFrame) -> list[Figure]:
    """The card's max and default SM clock, its enforced power limit and the top of the limit's range (NVML), each
    with what can check it: the device attribute and the datasheet's boost clock and board power, the max clock over
    the default one, the limit's range."""
    read = {m: setting(raw, m) for m in SETTINGS}
    gpu = run_of(raw)[1]
    model = archs.gpu_model(gpu)
    base = {"case": power.LIMITS, "kind": "derived", "spread": 0.0, "samples": 1, "params": "{}", "points": ("{}",)}
    return [
        Figure(metric=m, unit=unit, name=name, value=read[m], derivation=how, checks=checks(read[m]), **base)
        for m, unit, name, how, checks in (*_clock_specs(read, model, gpu), *_power_specs(read, model, gpu))
        if read[m] is not None
    ]


def _clock_specs(read: dict[str, float | None], model: archs.GpuModel | None, gpu: str) -> list[Spec]:
    """The max and default SM clock: the max against the device attribute and the datasheet's boost clock, the
    default under the max."""
    boost = model.boost_mhz if model else None
    sheet = (
        f"the {model.name} datasheet boost clock (smdissect.core.archs)"
        if boost
        else f"boost clock of {gpu} in smdissect.core.archs"
    )
    return [
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
    ]


def _power_specs(read: dict[str, float | None], model: archs.GpuModel | None, gpu: str) -> list[Spec]:
    """The enforced power limit and the top of the limit's range: the limit within the range and the datasheet's
    board power, the range's top against the datasheet."""
    tdp = model.tdp_w if model else None
    sheet_tdp = (
        f"the {model.name} datasheet's max board power (smdissect.core.archs)" if tdp else f"TDP of {gpu} in archs"
    )
    default = read["default_power_limit"]
    same = (
        "" if default is None else " (its default)" if default == read["power_limit"] else f" (default {default:g} W)"
    )
    return [
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
