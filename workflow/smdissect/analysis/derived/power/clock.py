"""The SM clock under one precision's load: what its launches ran at, and NVML's readings (lowest, highest, jitter)
checked against it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...checks import point_clocks
from ...figure_model import REFERENCE, Check, Figure
from ..samples import params_of, samples

CLOCK = "sm_clock_nvml"  # the SM clock NVML reads every 25 ms of each point's window
NVML_CLOCK_TOLERANCE = 0.02  # NVML's reading and the launches' own clock agree within this share
# Why they may not: NVML reports the clock the driver set for the graphics domain; clock64 over %globaltimer is the
# clock the SMs ran. Under mma.sync load on the H200 the SMs ran 1,799-1,815 MHz at any SM count (1 to 132) while
# NVML read 1980 MHz: near the 1830 MHz the H100 whitepaper's tensor peaks assume, a clock NVML does not show.
NVML_CLOCK_WHY = "NVML reads the clock the driver set; the SMs ran another under this load, which sm_clock gives"


def clock_figures(raw: pd.DataFrame, case: str) -> list[Figure]:
    """The SM clock under one precision's load: what its launches ran at (clock64 over %globaltimer, every SM), and
    NVML's lowest and highest reading with their gap as a share of the median, each NVML figure checked against
    the measured clock."""
    loaded = params_of(raw, case, CLOCK)
    clocks = np.concatenate([samples(raw, case, CLOCK, p) for p in loaded]) if loaded else np.array([])
    if not len(clocks):
        return []
    base = {"case": case, "kind": "derived", "spread": 0.0, "samples": len(clocks), "points": tuple(loaded)}
    known = point_clocks(raw)
    ran = np.array([known[(case, p)] for p in loaded if (case, p) in known])
    if not len(ran):
        return _nvml_figures(case, clocks, len(loaded), base)
    sm = float(np.median(ran))
    measured = Figure(
        metric="sm_clock",
        unit="MHz",
        name=f"{case} SM clock under load (clock64 over %globaltimer)",
        value=sm,
        derivation=f"median over its {len(ran)} loaded points of the clock its launches ran at: clock64 "
        "cycles over %globaltimer ns of each SM's timed loop",
        clock_mhz=sm,
        **base | {"samples": len(ran), "spread": float(ran.max() - ran.min())},
    )
    checked = base | {"checks": [_nvml_check(float(np.median(clocks)), sm)]}
    return [measured, *_nvml_figures(case, clocks, len(loaded), checked)]


def _nvml_check(mid: float, sm: float) -> Check:
    """NVML's median reading `mid` against the clock `sm` the launches ran at (a disagreement is explained)."""
    off = mid / sm - 1
    return Check(
        "measured clock",
        "agree" if abs(off) <= NVML_CLOCK_TOLERANCE else "disagree",
        f"NVML's median {mid:.0f} MHz vs {sm:.0f} MHz the launches ran at ({off:+.1%}, tolerance "
        f"{NVML_CLOCK_TOLERANCE:.0%})",
        evidence=REFERENCE,
        explained=NVML_CLOCK_WHY,
    )


def _nvml_figures(case: str, clocks: np.ndarray, windows: int, base: dict[str, object]) -> list[Figure]:
    """NVML's lowest and highest SM clock reading over a precision's `windows` loaded windows, and their gap as a
    share of the median."""
    lo, hi, mid = float(clocks.min()), float(clocks.max()), float(np.median(clocks))
    over = f"the {len(clocks)} NVML readings ({CLOCK}, every 25 ms) over its {windows} loaded 1 s windows"
    return [
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
