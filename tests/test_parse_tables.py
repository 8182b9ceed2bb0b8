"""ncu_report parsing of real H200 reports, and the tables' schemas and atomic writes."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from helpers import FIXTURES
from smdissect.core import files, tables
from smdissect.core.errors import SmdissectError
from smdissect.measure import device, ncu, parse, run

REPORTS = sorted((FIXTURES / "captured").glob("*.ncu-rep"))


@pytest.fixture(scope="module")
def metrics() -> pd.DataFrame:
    assert REPORTS, "no .ncu-rep fixture committed"
    return pd.DataFrame([row for r in REPORTS for row in parse.metric_rows(r, "gh100")])


def test_every_profiled_kernel_maps_to_its_case(metrics: pd.DataFrame) -> None:
    assert set(metrics.variant) == {"short", "long"}
    assert metrics.params.str.startswith("{").all() and metrics.case.notna().all()
    assert (metrics.kernel == "chain_kernel").all(), "a kernel outside an 'smd:' range was kept"


def test_units_come_from_the_chip_catalogue(metrics: pd.DataFrame) -> None:
    units = metrics.drop_duplicates("metric").set_index("metric").unit
    assert units["sm__cycles_active.max"] == "cycle" and units["smsp__inst_executed.sum"] == "inst"
    assert units["sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active"] == "%"


def test_ffma_pipe_count_matches_the_chain(metrics: pd.DataFrame) -> None:
    ffma = metrics[(metrics.case == "ffma") & (metrics.variant == "long") & (metrics.params == '{"ilp":1,"warps":1}')]
    value = ffma.set_index("metric").value
    expected = 512 * 256  # chain length x outer iterations, one warp
    assert abs(value["sm__inst_executed_pipe_fma.sum"] - expected) / expected < 0.01
    assert 3.75 <= value["smsp__average_warp_latency_per_inst_issued.ratio"] <= 4.25


def test_stall_shares_and_dominant_reason(metrics: pd.DataFrame) -> None:
    stalls = parse.stalls(metrics)
    sums = stalls.groupby(["case", "params", "variant"]).share.sum()
    assert ((sums - 1).abs() < 1e-9).all()
    ffma = stalls[(stalls.case == "ffma") & (stalls.params == '{"ilp":1,"warps":1}') & (stalls.variant == "long")]
    assert ffma.sort_values("value").reason.iloc[-1] == "wait"


def test_pipes_table_has_counts_and_peaks(metrics: pd.DataFrame) -> None:
    pipes = parse.pipes(metrics)
    assert {"fma", "alu", "fmaheavy", "fmalite"} <= set(pipes["pipe"])
    assert pipes.inst_executed.ge(0).all()


def test_truncated_report_is_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.ncu-rep"
    broken.write_bytes(REPORTS[0].read_bytes()[: REPORTS[0].stat().st_size // 3])
    with pytest.raises(SmdissectError, match="truncated or corrupt") as err:
        parse.metric_rows(broken, "gh100")
    assert "\n" not in str(err.value)


def test_empty_report_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "empty.ncu-rep").write_bytes(b"")
    with pytest.raises(SmdissectError, match="missing or empty"):
        parse.metric_rows(tmp_path / "empty.ncu-rep", "gh100")


def test_failed_write_leaves_no_table(tmp_path: Path) -> None:
    target = tmp_path / "raw.parquet"
    with pytest.raises(SmdissectError, match="lacks columns"):
        tables.write("raw", pd.DataFrame({"case": ["x"]}), target)
    with pytest.raises(RuntimeError), files.atomic_path(target) as tmp:
        Path(tmp).write_text("half")
        raise RuntimeError("job died")
    assert list(tmp_path.iterdir()) == []


def test_corrupt_table_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "raw.parquet"
    bad.write_bytes(b"PAR1 not really")
    with pytest.raises(SmdissectError, match=r"is not a readable raw table.*delete it and re-run"):
        tables.read("raw", bad)


def test_every_schema_carries_provenance() -> None:
    for kind, schema in tables.SCHEMAS.items():
        assert {n for n, _ in tables.PROVENANCE} <= set(schema.names), kind


def test_canonical_params_sorted_and_compact() -> None:
    assert tables.canonical_params({"warps": 4, "ilp": 2}) == '{"ilp":2,"warps":4}'


def test_counter_permission_errors_name_the_fix(tmp_path: Path) -> None:
    restricted = tmp_path / "params"
    restricted.write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\n")
    reason = device.counters_permitted(restricted, euid=1000)
    assert reason and "ERR_NVGPUCTRPERM" in reason and "NVreg_RestrictProfilingToAdminUsers=0" in reason
    assert device.counters_permitted(restricted, euid=0) is None
    restricted.write_text("RmProfilingAdminOnly: 0\n")
    assert device.counters_permitted(restricted, euid=1000) is None
    ncu_output = (
        "==PROF== Connected to process 4242 (/tmp/float)\n"
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters "
        "on the target device 0. For instructions on enabling permissions and to get more information see "
        "https://developer.nvidia.com/ERR_NVGPUCTRPERM\n"
    )
    line = ncu.error_line(ncu_output)
    assert "\n" not in line and "NVreg_RestrictProfilingToAdminUsers=0" in line


def test_metric_lists_are_chosen_per_chip() -> None:
    (hopper, _), (blackwell, _) = ncu.metrics("gh100"), ncu.metrics("gb203")
    assert "sm__inst_executed_pipe_fp64.sum" in hopper and "sm__inst_executed_pipe_fp64.sum" in blackwell
    assert any("aluheavy" in m for m in blackwell) and not any("aluheavy" in m for m in hopper)
    assert ncu.stall_metric("wait") in hopper and ncu.stall_metric("short_scoreboard") in blackwell


def test_category_metrics_are_kept_where_the_chip_has_them() -> None:
    wanted = ["dram__bytes_read.sum", "sm__inst_executed_pipe_tensor_op_hmma.sum", "sm__no_such_counter.sum"]
    hopper, dropped = ncu.metrics("gh100", extra=wanted)
    assert "dram__bytes_read.sum" in hopper and "sm__inst_executed_pipe_tensor_op_hmma.sum" in hopper
    assert dropped == ["sm__no_such_counter.sum"]
    blackwell, dropped = ncu.metrics("gb203", extra=wanted)
    assert "sm__inst_executed_pipe_tensor_op_hmma.sum" in dropped and "dram__bytes_op_read.sum" in blackwell
    assert ncu.canonical("dram__bytes_op_read.sum") == "dram__bytes_read.sum"


def test_binary_records_become_one_row_per_sample() -> None:
    records = run.parse_records((FIXTURES / "captured" / "latency-sfu.jsonl").read_text())
    assert {r["case"] for r in records} == {"mufu_rcp", "mufu_ex2"}
    base = {"gpu": "NVIDIA H200", "family": "sfu", "category": "latency"}
    df = tables.frame("raw", run.sample_rows(records, base))
    assert len(df) == sum(len(r["samples"]) for r in records) and df.repeat.max() == 8
    latency = df[(df.case == "mufu_rcp") & (df.metric == "latency")]
    assert latency.params.iloc[0] == '{"ilp":1,"warps":1}' and latency.value.max() - latency.value.min() < 1.0


def test_a_point_the_binary_skipped_keeps_its_reason() -> None:
    stderr = 'chase {"footprint_kb":1024,"stride_b":2048}: pointer chase phases disagree: n steps took 9 cycles\n'
    status, reason = run.skipped_why(stderr, "chase", '{"footprint_kb":1024,"stride_b":2048}')
    assert status == "failed" and reason.endswith("n steps took 9 cycles")
    assert run.skipped_why(stderr, "chase", '{"footprint_kb":1,"stride_b":0}') == (
        "failed",
        "the binary emitted no record for this point",
    )


def test_a_point_the_device_cannot_run_is_a_static_row() -> None:
    stderr = 'static: p2p_copy {"dst":1,"src":0}: needs 2 GPUs, 1 present\n'
    assert run.skipped_why(stderr, "p2p_copy", '{"dst":1,"src":0}') == ("static", stderr.strip())
    assert run.skipped_why(stderr, "p2p_copy_bidir", '{"dst":1,"src":0}')[0] == "failed"
    assert run.skipped_why(stderr, "copy", '{"dst":1,"src":0}')[0] == "failed"  # not a suffix of another case


def test_replay_passes_are_kept_and_reported(metrics: pd.DataFrame) -> None:
    from smdissect.pages import category_sections

    passes = metrics[metrics.metric == "profiler__replayer_passes"]
    assert len(passes) == metrics.drop_duplicates(["case", "params", "variant"]).shape[0] and passes.value.min() >= 1
    line = category_sections.passes(metrics)
    assert f"replayed each {int(passes.value.min())} to {int(passes.value.max())} times" in line
