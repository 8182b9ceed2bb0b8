"""Where a run's GPU time went: each GPU job's hold on the GPU against its kernels' own durations."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

# The line cli._device writes to a GPU job's log when it lets the GPU go.
HELD = re.compile(r"^smdissect: GPU \d+ held ([\d.]+) s after a ([\d.]+) s wait$", re.M)
GPU_STAGES = ("run", "profile")
FAMILY = ["category", "family"]
POINT = [*FAMILY, "case", "params", "variant"]


def held(logs: Path) -> pd.DataFrame:
    """Seconds each GPU job held the GPU (stage, category, family, held_s), from logs/<stage>/<gpu>/<arch>/."""
    rows = []
    for stage in GPU_STAGES:
        for log in sorted((logs / stage).glob("*/*/*/*.log")):
            seconds = sum(float(h) for h, _ in HELD.findall(log.read_text(errors="replace")))
            rows.append({"stage": stage, "category": log.parent.name, "family": log.stem, "held_s": seconds})
    return pd.DataFrame(rows, columns=["stage", "category", "family", "held_s"])


def timed(raw: pd.DataFrame) -> pd.Series:
    """Seconds of timed kernel work per (category, family): each measured point's launches x its median timed
    cycles / its clock (a point's launches: the fewest samples of its metrics, so one sample per load is not
    one launch per load); power's points count their NVML window (energy / power), and points timed in ms
    (CUDA events: attention/sdpa) their samples; points with neither (bandwidths, host-timed launches) none."""
    cycled = raw[(raw.cycles > 0) & (raw.clock_mhz > 0)]
    per_metric = cycled.groupby([*POINT, "metric"]).agg(
        cycles=("cycles", "first"), mhz=("clock_mhz", "first"), n=("value", "size")
    )
    launch_s = per_metric.cycles / (per_metric.mhz * 1e6)
    points = pd.DataFrame({"s": launch_s, "n": per_metric.n}).groupby(POINT).agg(s=("s", "max"), n=("n", "min"))
    seconds = (points.s * points.n).groupby(FAMILY).sum()
    energy = raw[raw.metric.isin(["energy", "power"]) & (raw.unit.isin(["J", "W"]))]
    window = energy.pivot_table(index=[*POINT, "repeat"], columns="metric", values="value")
    if {"energy", "power"} <= set(window.columns):
        windows = (window.energy / window.power).groupby(FAMILY).sum()
        seconds = seconds.add(windows, fill_value=0)
    events = raw[(raw.unit == "ms") & ~(raw.cycles > 0)]
    seconds = seconds.add(events.groupby(FAMILY).value.sum() / 1e3, fill_value=0)
    return seconds.rename("timed_s")


def profiled(ncu: pd.DataFrame) -> pd.Series:
    """Seconds of profiled kernel work per (category, family): each kernel's duration times its replay passes."""
    wanted = ["gpu__time_duration.sum", "profiler__replayer_passes"]
    wide = ncu[ncu.metric.isin(wanted)].pivot_table(index=[*POINT, "kernel"], columns="metric", values="value")
    if not set(wanted) <= set(wide.columns):  # nothing profiled
        return pd.Series(dtype=float, name="profiled_s", index=pd.MultiIndex.from_tuples([], names=FAMILY))
    seconds = wide["gpu__time_duration.sum"] * 1e-9 * wide["profiler__replayer_passes"]
    return seconds.groupby(FAMILY).sum().rename("profiled_s")


def breakdown(jobs: pd.DataFrame, raw: pd.DataFrame, ncu: pd.DataFrame) -> pd.DataFrame:
    """Per family: GPU held by its run and profile jobs, its kernels' timed and profiled seconds, and the ratio
    of held to kernel time (the pipeline's overhead: 1 = the GPU did nothing but the measured kernels)."""
    wide = jobs.pivot_table(index=FAMILY, columns="stage", values="held_s", aggfunc="sum")
    wide = wide.reindex(columns=list(GPU_STAGES)).fillna(0).add_suffix("_held_s")
    out = wide.join(timed(raw), how="outer").join(profiled(ncu), how="outer").fillna(0)
    out["held_s"] = out.run_held_s + out.profile_held_s
    out["kernel_s"] = out.timed_s + out.profiled_s
    return out.sort_values("held_s", ascending=False)


def ratio(table: pd.DataFrame) -> float:
    """The whole run's GPU held time over its kernels' own durations."""
    return float(table.held_s.sum() / table.kernel_s.sum())
