"""Read .ncu-rep files with ncu_report into the long ncu table and the stalls and pipes tables."""

from __future__ import annotations

import math
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import SmdissectError
from ..core.tables import canonical_params, parse_params
from .ncu import PIPE, STALL, canonical, unit

# Hardware units whose counters are kept (not device attributes), and the replay passes each kernel cost.
UNITS = (
    "sm__",
    "smsp__",
    "dram__",
    "lts__",
    "l1tex__",
    "gpu__",
    "gpc__",
    "tpc__",
    "idc__",
    "pcie__",
    "nvlrx__",
    "nvltx__",
    "launch__",
    "profiler__replayer_passes",
)
RANGE = re.compile(r"^smd:(?P<case>[a-z0-9_]+):(?P<params>\{.*\}):(?P<variant>[a-z0-9_]+)$")


def ncu_report_module() -> Any:
    """The ncu_report module: installed (PyPI ncu-report), else the one Nsight Compute ships in extras/python."""
    try:
        import ncu_report
    except ImportError:
        ncu = shutil.which("ncu")
        shipped = [Path(ncu).resolve().parent / "extras" / "python"] if ncu else []
        shipped += sorted(Path("/opt/nvidia").glob("nsight-compute/*/extras/python"), reverse=True)
        for folder in shipped:
            if (folder / "ncu_report.py").exists():
                sys.path.append(str(folder))
                import ncu_report

                return ncu_report
        raise SmdissectError("the ncu_report module is missing: pip install ncu-report") from None
    return ncu_report


def load(report: Path) -> Any:
    """Open a report with ncu_report; a missing module or a truncated file is a one-line error."""
    ncu_report = ncu_report_module()
    if not report.exists() or report.stat().st_size == 0:
        raise SmdissectError(f"{report} is missing or empty: re-run its profile job")
    try:
        ctx = ncu_report.load_report(str(report))
        if ctx.num_ranges() == 0:
            raise ValueError("no ranges")
        for r in range(ctx.num_ranges()):
            rng = ctx.range_by_idx(r)
            for i in range(rng.num_actions()):
                action = rng.action_by_idx(i)
                if action.nvtx_state() is None or not action.metric_names():
                    raise ValueError(f"kernel {i} of range {r} has no NVTX state or metrics")
    except Exception as err:
        raise SmdissectError(f"{report} is truncated or corrupt ({err}): delete it and re-run its profile job") from err
    return ctx


def nvtx_key(action: Any) -> dict[str, str] | None:
    """(case, params, variant) of a profiled kernel from its 'smd:' NVTX range, or None outside one."""
    state = action.nvtx_state()
    for domain_id in state.domains():
        for name in state.domain_by_id(domain_id).push_pop_ranges():
            if m := RANGE.match(name):
                key = m.groupdict()
                key["params"] = canonical_params(parse_params(key["params"]))
                return key
    return None


def metric_rows(report: Path, chip: str) -> list[dict[str, Any]]:
    """One row per (profiled kernel, metric): case, params, variant, kernel, metric, unit, value.

    Units come from the chip's metric catalogue: IMetric.unit() crashes ncu 2025.3.1's bundled module."""
    ctx = load(report)
    rows = []
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            key = nvtx_key(action)
            if key is None:
                continue
            for name in filter(lambda n: n.startswith(UNITS), action.metric_names()):
                value = action.metric_by_name(name).as_double()
                if not math.isnan(value):
                    row = {"kernel": action.name(), "metric": canonical(name), "unit": unit(chip, name), "value": value}
                    rows.append(key | row)
    if not rows:
        raise SmdissectError(f"{report} holds no kernel inside an 'smd:' NVTX range: re-run its profile job")
    return rows


def stalls(ncu: pd.DataFrame) -> pd.DataFrame:
    """Warp cycles per issued instruction by stall reason, with each reason's share of the total."""
    df = ncu[ncu.metric.str.endswith("_per_issue_active.ratio")].copy()
    df["reason"] = df.metric.str.removesuffix(".ratio").str.extract(STALL.pattern)[0]
    df = df.dropna(subset=["reason"])
    total = df.groupby(["case", "params", "variant"]).value.transform("sum")
    df["share"] = (df.value / total).where(total > 0, 0.0)
    return df.drop(columns=["metric", "unit"])


def pipes(ncu: pd.DataFrame) -> pd.DataFrame:
    """Instructions executed per pipe with the pipe's share of its peak rate."""
    counts = ncu[ncu.metric.str.match(r"^sm__inst_executed_pipe_.*\.sum$")].copy()
    counts["pipe"] = counts.metric.str.removesuffix(".sum").str.extract(PIPE.pattern)[0]
    counts = counts.dropna(subset=["pipe"]).rename(columns={"value": "inst_executed"})
    peak = ncu[ncu.metric.str.endswith(".avg.pct_of_peak_sustained_active")].copy()
    peak["pipe"] = peak.metric.str.extract(r"^sm__inst_executed_pipe_(.+)\.avg\.pct_of_peak_sustained_active$")[0]
    peak = peak.dropna(subset=["pipe"])[["case", "params", "variant", "pipe", "value"]]
    out = counts.merge(
        peak.rename(columns={"value": "pct_of_peak"}), on=["case", "params", "variant", "pipe"], how="left"
    )
    return out.drop(columns=["metric", "unit"])
