"""Figures the scheduler category derives over several points: sub-core binding, the warps that saturate a pipe,
the scoreboard depth (one number), the setmaxnreg costs, the outcomes of the patched control codes, the register
file (size, allocation unit, partitions; what the reuse flags save) and, where the table is given, the compiler's stall
counts of the chain kernels. Pure functions of the tables."""

from __future__ import annotations

import pandas as pd

from ....core.catalog import Case
from ...figure_model import Figure
from ..sweeps import with_papers
from .control_codes import control_code_figures, reuse_figures, stall_figures, yield_figures
from .latency import scoreboard_figures, warps_figures
from .registers import regfile_figures, setmaxnreg_figures
from .subcore import subcore_figures

CATEGORY = "scheduler"
METRICS = frozenset(
    {
        "allocation_unit",
        "binding",
        "compiler_stall",
        "dec_cost",
        "depth",
        "inc_cost",
        "pair_throughput",
        "register_partitions",
        "registers_per_sm",
        "reuse_ratio",
        "safe_stall",
        "saturation_warps",
        "slowdown",
        "stall_slope",
        "throughput",
        "wrong_results",
        "yield_ratio",
    }
)  # every metric a figure of this deriver can have
# reference/ rows the derived figures stand for (the seed paper's sm_120 figures; compare shows them side by side)
PAPER = {
    "scoreboard depth": "scoreboard_depth_min_sm120",
    "setmaxnreg.dec cost": "setmaxnreg_dec_latency_sm120",
    "setmaxnreg.inc cost": "setmaxnreg_inc_latency_sm120",
    "warps_iadd3 warps to saturate": "iadd3_saturation_warps_sm120",
    "warps_mufu warps to saturate": "sfu_saturation_warps_sm120",
}


def figures(frames: dict[str, pd.DataFrame], generic: list[Figure], cases: dict[str, Case]) -> list[Figure]:
    """Every derived figure of the scheduler category."""
    raw = frames.get("raw", pd.DataFrame())
    if raw is None or raw.empty:
        return []
    return with_papers(
        subcore_figures(raw, generic)
        + warps_figures(raw, generic)
        + scoreboard_figures(raw, generic)
        + setmaxnreg_figures(raw, generic)
        + stall_figures(raw, generic)
        + yield_figures(raw, generic)
        + regfile_figures(raw, generic)
        + reuse_figures(raw, generic)
        + control_code_figures(frames, generic),
        PAPER,
    )
