"""ncu_report parsing of real H200 reports, and the tables' schemas and atomic writes."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from conftest import FIXTURES
from smdissect import parse, tables
from smdissect.errors import SmdissectError

REPORTS = sorted((FIXTURES / "h200").glob("*.ncu-rep"))


@pytest.fixture(scope="module")
def metrics() -> pd.DataFrame:
    assert REPORTS, "no .ncu-rep fixture committed"
    return pd.DataFrame([row for r in REPORTS for row in parse.metric_rows(r)])


def test_every_profiled_kernel_maps_to_its_case(metrics: pd.DataFrame) -> None:
    assert set(metrics.variant) == {"short", "long"}
    assert metrics.params.str.startswith("{").all() and metrics.case.notna().all()
    assert (metrics.kernel == "chain_kernel").all(), "a kernel outside an 'smd:' range was kept"


def test_ffma_pipe_count_matches_the_chain(metrics: pd.DataFrame) -> None:
    ffma = metrics[(metrics.case == "ffma") & (metrics.variant == "long") & (metrics.params.str.contains('"ilp":1,'))]
    value = ffma.set_index("metric").value
    expected = 512 * 256  # chain length x outer iterations, one warp
    assert abs(value["sm__inst_executed_pipe_fma.sum"] - expected) / expected < 0.01
    assert 3.75 <= value["smsp__average_warp_latency_per_inst_issued.ratio"] <= 4.25


def test_stall_shares_and_dominant_reason(metrics: pd.DataFrame) -> None:
    stalls = parse.stalls(metrics)
    sums = stalls.groupby(["case", "params", "variant"]).share.sum()
    assert ((sums - 1).abs() < 1e-9).all()
    ffma = stalls[(stalls.case == "ffma") & stalls.params.str.contains('"ilp":1,') & (stalls.variant == "long")]
    assert ffma.sort_values("value").reason.iloc[-1] == "wait"


def test_pipes_table_has_counts_and_peaks(metrics: pd.DataFrame) -> None:
    pipes = parse.pipes(metrics)
    assert {"fma", "alu", "fmaheavy", "fmalite"} <= set(pipes["pipe"])
    assert pipes.inst_executed.ge(0).all()


def test_truncated_report_is_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.ncu-rep"
    broken.write_bytes(REPORTS[0].read_bytes()[: REPORTS[0].stat().st_size // 3])
    with pytest.raises(SmdissectError, match="truncated or corrupt") as err:
        parse.metric_rows(broken)
    assert "\n" not in str(err.value)


def test_empty_report_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "empty.ncu-rep").write_bytes(b"")
    with pytest.raises(SmdissectError, match="missing or empty"):
        parse.metric_rows(tmp_path / "empty.ncu-rep")


def test_failed_write_leaves_no_table(tmp_path: Path) -> None:
    target = tmp_path / "raw.parquet"
    with pytest.raises(SmdissectError, match="lacks columns"):
        tables.write("raw", pd.DataFrame({"case": ["x"]}), target)
    with pytest.raises(RuntimeError), tables.atomic_path(target) as tmp:
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
