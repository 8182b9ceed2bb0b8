"""The committed H200 run meets each category's bar, checked on its own tables (reports/h200/tables)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import FIXTURES, ROOT
from smdissect import tables

RUN = ROOT / "reports" / "h200" / "tables" / "sm_90a"


def medians(category: str) -> pd.DataFrame:
    """Median and spread of every (case, metric, params) the run measured in a category."""
    raw = tables.read("raw", sorted((RUN / category).rglob("raw.parquet")))
    return raw.groupby(["case", "metric", "unit", "params"], as_index=False)["value"].agg(
        median="median", spread=lambda s: s.max() - s.min()
    )


def test_pipelines_table_has_sixty_instruction_types_with_sub_cycle_spread() -> None:
    m = medians("pipelines")
    latency = m[m.metric == "latency"]
    assert latency.case.nunique() >= 60 and (latency.spread < 1.0).all()
    ffma = m[(m.case == "ffma") & (m.metric == "throughput")]["median"].max()
    assert ffma == pytest.approx(4.0, rel=0.05)  # the SM's issue limit: 4 sub-partitions x 1 warp-inst/cycle


def test_dram_bandwidth_beats_the_library_copy_and_counters_agree() -> None:
    m = medians("memory")
    best = m[m.case.isin(["dram_read", "dram_copy"]) & (m.unit == "GB/s")]["median"].max()
    torch = json.loads((FIXTURES / "h200" / "torch-copy.json").read_text())
    assert best / torch["copy_gbps_read_plus_write"] >= 1.0 and best / 4800 > 0.9
    cv = tables.read("crossval", RUN / "memory" / "crossval.parquet")
    dram = cv[cv.check.str.contains("dram__bytes")]
    assert len(dram) >= 6 and (dram.verdict == "agree").all() and (dram.rel_err < 0.05).all()


def test_wgmma_reaches_the_sms_dense_f16_peak() -> None:
    m = medians("tensorcore")
    wgmma = m[(m.case == "wgmma_f16_ss") & (m.metric == "flops")]["median"].max()
    assert wgmma >= 0.8 * 4096  # 989.4 TFLOPS / (132 SMs x 1830 MHz) FLOP/cycle/SM
    mma = m[(m.case == "mma_f16_f32") & (m.metric == "flops")]["median"].max()
    assert mma < wgmma  # mma.sync cannot keep the tensor cores as busy as wgmma


def test_every_planned_point_of_the_run_arch_is_accounted_for() -> None:
    status = tables.read("status", sorted(RUN.rglob("status.parquet")))
    assert set(status.status) <= {"measured", "static"} and (status.status == "measured").mean() > 0.85
    static = status[status.status == "static"]
    assert static.reason.str.startswith("not run: ").all()
