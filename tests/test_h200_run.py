"""The committed H200 run meets each category's bar, checked on its own tables (reports/h200/tables)."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import ROOT
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
    torch = m[m.case == "torch_copy"]["median"].max()  # torch's own copy, measured in the same run
    assert best / torch >= 1.0 and best / 4800 > 0.9
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
    assert set(status.status) <= {"measured", "static", "failed"} and (status.status == "measured").mean() > 0.85
    static = status[status.status == "static"]  # the arch lacks a feature, or the device (one GPU) cannot run it
    assert (static.reason.str.startswith("not run: ") | static.reason.str.startswith("static: ")).all()
    failed = status[status.status == "failed"]
    assert failed.reason.str.startswith("error: ").all()  # each failure keeps the binary's one-line error


def test_tma_bulk_copies_reach_ninety_percent_of_ldg_in_the_same_run() -> None:
    m = medians("async")
    bulk = m[m.case.isin(["bulk_ctas", "bulk_depth"])]["median"].max()
    assert bulk / m[m.case == "ldg_stream"]["median"].max() >= 0.90
    cv = tables.read("crossval", RUN / "async" / "crossval.parquet")
    dram = cv[cv.check.str.contains("dram__bytes_read")]
    assert len(dram) > 0 and (dram.verdict == "agree").all()


def test_cutlass_gemm_matches_cublas_and_states_its_share_of_peak() -> None:
    m = medians("gemm").pivot_table(index="params", columns="metric", values="median")
    ratio = m["ratio_to_cublas"]  # issue 8: >= 0.95 on every shape (both ran under the power cap in this run)
    assert len(m) >= 4 and (ratio >= 0.95).all() and (m["max_rel_err"] < 0.02).all()
    assert ((m["pct_of_peak_cutlass"] > 50) & (m["pct_of_peak_cutlass"] <= 100)).all()


def test_attention_splits_every_tile_into_softmax_and_tensor_shares() -> None:
    m = medians("attention")
    shares = m[m.case.isin(["softmax_share", "tensor_share"])]
    assert set(shares.case) == {"softmax_share", "tensor_share"} and shares["median"].between(0, 100).all()
    full = m[(m.case == "tile_full") & (m.metric == "cycles_per_tile")]["median"]
    no_softmax = m[(m.case == "tile_no_softmax") & (m.metric == "cycles_per_tile")]["median"]
    assert (full.to_numpy() > no_softmax.to_numpy()).all()  # dropping a stage never makes a tile slower
