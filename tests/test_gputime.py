"""The GPU's hold against the kernels' own durations (measure.gputime): launches counted once per point, not per
sample; power's windows and CUDA-event times counted."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from smdissect.measure import gputime

POINT = {"category": "memory", "family": "chase", "variant": ""}


def rows(case: str, metric: str, unit: str, values: list[float], cycles: float, mhz: float) -> list[dict]:
    """Raw rows of one point's metric, one per sample."""
    return [POINT | {"case": case, "params": "{}", "metric": metric, "unit": unit, "repeat": i, "value": v,
                     "cycles": cycles, "clock_mhz": mhz} for i, v in enumerate(values)]  # fmt: skip


def test_a_point_counts_its_launches_not_its_samples() -> None:
    raw = pd.DataFrame(
        rows("a", "latency", "cycle", [1.0] * 9, 2e6, 2000)  # 9 launches of 1 ms
        + rows("a", "throughput", "op/cycle", [1.0] * 9, 2e6, 2000)  # the same launches: not counted again
        + rows("b", "load_latency", "cycle", [1.0] * 512 * 9, 1e6, 2000)  # 512 samples per launch, 9 launches
        + rows("b", "timing_overhead", "cycle", [1.0] * 9, 1e6, 2000)
        + rows("c", "ms", "ms", [2.0] * 5, 0, 0)  # CUDA events: 5 x 2 ms
        + rows("d", "energy", "J", [140.0], 0, 0)
        + rows("d", "power", "W", [127.27272727], 0, 0)  # a 1.1 s window
        + rows("e", "bandwidth", "GB/s", [3000.0] * 9, 0, 0)  # no duration recorded: nothing counted
    )
    assert gputime.timed(raw)[("memory", "chase")] == pytest.approx(9e-3 + 4.5e-3 + 10e-3 + 1.1)


def test_a_profiled_kernel_counts_every_replay_pass() -> None:
    metrics = {"gpu__time_duration.sum": 1e6, "profiler__replayer_passes": 12, "sm__cycles_active.max": 5e5}
    ncu = pd.DataFrame(
        [
            POINT | {"case": "a", "params": "{}", "kernel": k, "metric": m, "value": v}
            for k in ("k1", "k2")
            for m, v in metrics.items()
        ]
    )
    assert gputime.profiled(ncu)[("memory", "chase")] == pytest.approx(2 * 12e-3)


def test_held_reads_each_gpu_jobs_log(tmp_path: Path) -> None:
    for stage, seconds in (("run", "3.25"), ("profile", "1.50")):
        log = tmp_path / stage / "h200" / "sm_90a" / "memory" / "chase.log"
        log.parent.mkdir(parents=True)
        log.write_text(f"noise\nsmdissect: GPU 0 held {seconds} s after a 0.10 s wait\n")
    jobs = gputime.held(tmp_path)
    assert dict(zip(jobs.stage, jobs.held_s, strict=True)) == {"run": 3.25, "profile": 1.5}
    raw = pd.DataFrame(rows("a", "latency", "cycle", [1.0] * 9, 2e8, 2000))  # 9 launches of 0.1 s
    unprofiled = pd.DataFrame(columns=["metric", "kernel", *POINT, "case", "params", "value"])
    table = gputime.breakdown(jobs, raw, unprofiled)
    assert gputime.ratio(table) == pytest.approx(4.75 / 0.9)
