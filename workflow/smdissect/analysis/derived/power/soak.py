"""The soak: the SMs' clock, the temperature and the board power at its start and end, and the clock event onsets
per reason."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ....measure import power
from ....measure.run import SLOWDOWNS
from ...figure_model import REFERENCE, Check, Figure
from ..samples import make, params_of
from .clock import NVML_CLOCK_TOLERANCE, NVML_CLOCK_WHY
from .settings import at_most, compare, setting

POWER_READING_TOLERANCE = 0.05  # the energy counter's average and the power readings over the same seconds
WINDOW_S = 2.0  # the soak's start and end: its first and last 2 s


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


def _temperatures(base: dict, nvml: pd.DataFrame) -> list[Figure | None]:
    """The GPU temperature at the soak's start and end (NVML's median over WINDOW_S) and its rise."""
    n = _window(len(nvml), nvml["time_s"].to_numpy(float))
    temps = {
        "start": nvml.head(n)["temperature_c"].to_numpy(float),
        "end": nvml.tail(n)["temperature_c"].to_numpy(float),
    }
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
    return out


def _power_end(base: dict, nvml: pd.DataFrame, limit: float | None) -> list[Figure]:
    """The board power over the soak's last WINDOW_S (the energy counter, checked against the power readings) and
    as a share of the enforced limit."""
    n = _window(len(nvml), nvml["time_s"].to_numpy(float))
    last = nvml.tail(n)
    edge = nvml.iloc[-n - 1] if len(nvml) > n else nvml.iloc[0]
    tail = nvml.iloc[-1]
    seconds = float(tail["time_s"] - edge["time_s"])
    if seconds <= 0:
        return []
    watts = float(tail["energy_j"] - edge["energy_j"]) / seconds
    check = compare(
        "power readings",
        watts,
        float(last["power_w"].median()),
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
    if not limit:
        return [power_fig]
    share = Figure(
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
    return [power_fig, share]


def _slowdowns(base: dict, nvml: pd.DataFrame) -> list[Figure]:
    """The onsets of the clock-lowering reasons, the share of readings slowed down, and the onsets of each clock
    event reason."""
    masks = nvml["mask"].to_numpy(float)
    onsets = power.onsets(masks)
    slowed = [bool(power.slowdown(int(m))) for m in masks]
    total = sum(c for r, c in onsets.items() if r in SLOWDOWNS)
    counts = {"spread": 0.0, "samples": len(masks), **base}
    return [
        Figure(
            metric="slowdown_events",
            unit="events",
            name="clock slowdown onsets over the soak",
            value=float(total),
            derivation=f"readings where a clock-lowering reason ({', '.join(sorted(SLOWDOWNS))}) began, over all "
            f"{len(masks)} NVML readings every ~100 ms",
            **counts,
        ),
        Figure(
            metric="slowdown_share",
            unit="%",
            name="share of soak readings with the clocks held down",
            value=100 * sum(slowed) / len(masks),
            derivation="readings whose clock event reasons include a clock-lowering one, over all readings",
            **counts,
        ),
        *(
            Figure(
                metric=f"events_{reason}",
                unit="events",
                name=f"{reason} onsets over the soak",
                value=float(count),
                derivation=f"readings where NVML's clock event reason {reason} began (set, and not in the reading "
                "before)",
                **counts,
            )
            for reason, count in sorted(onsets.items())
        ),
    ]


def soak(raw: pd.DataFrame) -> list[Figure | None]:
    """The soak's figures at each of its points."""
    out: list[Figure | None] = []
    for params in params_of(raw, power.SOAK, "soak_time"):
        nvml, bins = power.soak_series(raw, params)
        if len(nvml) < 2 or len(bins) < 2:
            continue
        base = {"case": power.SOAK, "kind": "derived", "params": params, "points": (params,)}
        out += _soak_clocks(base, nvml, bins, setting(raw, "max_sm_clock"))
        out += _temperatures(base, nvml)
        out += _power_end(base, nvml, setting(raw, "power_limit"))
        out += _slowdowns(base, nvml)
    return out
