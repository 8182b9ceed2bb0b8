"""smdissect.analysis.paper: every figure of the seed paper accounted for once (tied, derived or a reason from the fixed
vocabulary), the map checked against the manifests and derivers, and the frozen H200 run's accounting."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml
from helpers import ROOT, RUN
from smdissect.analysis import (
    derived,
    figure_model,
    figures,
    paper,
    paper_accounting,
    paper_formulas,
    paper_structure,
)
from smdissect.core import catalog, tables
from smdissect.core.errors import SmdissectError

KERNELS = ROOT / "kernels"
REDERIVED = ("power", "tensorcore")  # categories whose derivers give figures newer than the frozen tables


def _map() -> dict:
    return yaml.safe_load((ROOT / paper.MAP).read_text())


def _load_with(tmp_path: Path, data: dict) -> dict[str, paper.Entry]:
    path = tmp_path / "paper_map.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return paper.load(KERNELS, path)


def _recomputed(category: str, arch: str = "sm_90a") -> pd.DataFrame:
    """A category's figures table computed afresh from the frozen H200 tables, as the figures stage would."""
    run, static = RUN / arch / category, RUN / "static" / arch / category
    frames = {
        kind: tables.read(kind, sorted(folder.rglob(f"{kind}.parquet")))
        for kind, folder in (("raw", run), ("crossval", run), ("sass_checks", static), ("controlcodes", static))
    }
    others = {}
    for other in catalog.referenced_categories(KERNELS, category):
        raw = tables.read("raw", sorted((RUN / arch / other).rglob("raw.parquet")))
        by_point = figure_model.points(raw)
        others[other] = [f for c in catalog.load(KERNELS, other) for f in figures.case_figures(c, raw, by_point)]
    first = frames["raw"].iloc[0]
    found = figures.compute(catalog.load(KERNELS, category), frames, others, str(first["arch"]), str(first["gpu"]))
    prov = first[[n for n, _ in tables.PROVENANCE if n not in ("case", "params")]].to_dict()
    return tables.frame("figures", figures.rows(found, prov))


@pytest.fixture(scope="module")
def committed() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The frozen H200 run's figures (the rederived categories computed afresh) and status tables."""
    found = tables.read("figures", sorted(RUN.rglob("figures.parquet")))
    found = pd.concat([found[~found["category"].isin(REDERIVED)], *map(_recomputed, REDERIVED)], ignore_index=True)
    return found, tables.read("status", sorted(RUN.rglob("status.parquet")))


@pytest.fixture(scope="module")
def table(committed: tuple[pd.DataFrame, pd.DataFrame]) -> pd.DataFrame:
    return paper_accounting.accounting(committed[0], paper.reference(KERNELS), committed[1], KERNELS).set_index(
        "id", drop=False
    )


# --- the map ------------------------------------------------------------------------------------------------------


def test_every_row_is_accounted_for_exactly_once() -> None:
    entries = paper.load(KERNELS)
    assert list(entries) == list(paper.reference(KERNELS)["id"])
    assert {e.how for e in entries.values()} <= {"tied", "derived", "reason"}
    assert all(e.reason in paper.REASONS for e in entries.values() if e.reason)
    assert all(e.refs or e.reason or e.where != paper.MAP for e in entries.values())


def test_a_row_neither_tied_derived_nor_given_a_reason_fails(tmp_path: Path) -> None:
    data = _map()
    del data["rows"]["sm_count_sm120"]
    with pytest.raises(SmdissectError, match=r"accounted for nowhere \(sm_count_sm120\)"):
        _load_with(tmp_path, data)
    data["rows"]["sm_count_sm120"] = {"note": "nothing else"}
    with pytest.raises(SmdissectError, match="neither tied, derived nor given a reason"):
        _load_with(tmp_path, data)


def test_a_reason_outside_the_vocabulary_fails(tmp_path: Path) -> None:
    data = _map()
    data["rows"]["tdp_sm120"] = {"reason": "too hard"}
    with pytest.raises(SmdissectError, match="reason 'too hard' is not one of"):
        _load_with(tmp_path, data)


def test_only_another_gpus_column_keeps_a_counterpart(tmp_path: Path) -> None:
    data = _map()
    data["rows"]["tdp_sm120"] = {
        "reason": "not measurable by software",
        "tie": {"case": "power/power_idle", "metric": "power"},
    }
    with pytest.raises(SmdissectError, match="only 'another GPU's column' keeps a counterpart"):
        _load_with(tmp_path, data)


@pytest.mark.parametrize(
    ("tie", "message"),
    [
        ({"case": "pipelines/ffmaa", "metric": "latency"}, "case pipelines/ffmaa is in no kernels"),
        ({"case": "pipelines/ffma", "metric": "ilp_kneee"}, "has no metric ilp_kneee"),
        ({"case": "pipelines/ffma", "metric": "ilp_knee", "at": {"warps": 7}}, "has no point warps=7"),
        ({"case": "pipelines/ffma", "metric": "ilp_knee", "at": {"lanes": 1}}, "has no point lanes=1"),
    ],
)
def test_a_tie_naming_an_unknown_case_metric_or_point_fails(tmp_path: Path, tie: dict, message: str) -> None:
    data = _map()
    data["rows"]["ffma_ilp_knee_sm120"] = {"tie": tie}
    with pytest.raises(SmdissectError, match=message):
        _load_with(tmp_path, data)


def test_a_derivation_needs_a_known_formula_and_its_figures(tmp_path: Path) -> None:
    data = _map()
    two = [{"case": "pipelines/ffma", "metric": "latency"}, {"case": "pipelines/fadd", "metric": "latency"}]
    data["rows"]["iadd64_latency_delta_sm120"] = {"derived": "quotient", "of": two}
    with pytest.raises(SmdissectError, match="formula 'quotient' is not one of"):
        _load_with(tmp_path, data)
    data["rows"]["iadd64_latency_delta_sm120"] = {"derived": "difference", "of": two[:1]}
    with pytest.raises(SmdissectError, match="difference takes 2 figures, `of` lists 1"):
        _load_with(tmp_path, data)


def test_a_row_a_manifest_ties_is_not_repeated_in_the_map(tmp_path: Path) -> None:
    data = _map()
    data["rows"]["ffma_latency_sm120"] = {"tie": {"case": "pipelines/ffma", "metric": "latency"}}
    with pytest.raises(SmdissectError, match=r"ffma_latency_sm120 \(kernels/latency/cases.yaml.*a fact lives in one"):
        _load_with(tmp_path, data)


def test_a_row_not_in_the_paper_fails(tmp_path: Path) -> None:
    data = _map()
    data["rows"]["warp_size_sm120"] = {"reason": "property of the paper"}
    with pytest.raises(SmdissectError, match=r"not in reference/seed_sm120\.csv: warp_size_sm120"):
        _load_with(tmp_path, data)


def test_derived_metrics_are_known_but_typos_are_not() -> None:
    assert derived.declares("pipelines", "ilp_knee") and derived.declares("memory", "dram_latency")
    assert derived.declares("gemm", "pct_of_peak_at_clock_cutlass") and derived.declares("geometry", "level3_latency")
    assert not derived.declares("pipelines", "ilp_kneee") and not derived.declares("latency", "ilp_knee")


def test_a_deriver_giving_an_undeclared_metric_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    module = derived.modules()["gemm"]
    monkeypatch.setattr(module, "METRICS", module.METRICS - {"cutlass_over_cublas"})
    raw = tables.read("raw", sorted((RUN / "sm_90a" / "gemm").glob("*/raw.parquet")))
    with pytest.raises(SmdissectError, match="gives metrics it does not declare: cutlass_over_cublas"):
        figures.compute(catalog.load(KERNELS, "gemm"), {"raw": raw}, {}, "sm_90a", "NVIDIA H200")


# --- formulas -----------------------------------------------------------------------------------------------------


def _figs(*rows: tuple[str, float]) -> pd.DataFrame:
    return pd.DataFrame([{"figure": f, "value": v, "spread": 0.0} for f, v in rows])


def test_coissuing_pairs_count_two_different_classes_under_the_partly_shared_index() -> None:
    found = [
        _figs(
            ("coissue ffma+ffma sharing index", 0.1),
            ("coissue ffma+xu sharing index", 0.03),
            ("coissue ffma+alu sharing index", 0.83),
        ),
        _figs(("coissue xu+lsu sharing index", 0.29)),
    ]
    assert paper_formulas.coissuing_pairs(found) == 2  # ffma+xu and xu+lsu; ffma+ffma is one class, ffma+alu shares


def test_formats_sharing_counts_the_latencies_near_the_first() -> None:
    assert paper_formulas.formats_sharing([_figs(("a", 24.0)), _figs(("b", 25.0)), _figs(("c", 76.0))]) == 2


# --- the frozen H200 run ----------------------------------------------------------------------------------------


def test_the_committed_run_accounts_for_all_174_rows(table: pd.DataFrame) -> None:
    assert len(table) == 174 and table["id"].is_unique
    assert set(table["status"]) <= {
        *tables.FIGURE_STATUSES,
        "static",
        "failed",
        "not run",
        "no counterpart",
    }  # no ambiguous tie, no figure missing from the run


def test_every_tied_or_derived_row_is_measured_or_says_why(table: pd.DataFrame) -> None:
    counted = table[table["accounted"] != "reason"]
    measured = counted["measured"].map(math.isfinite)
    unmeasured = counted[~measured]
    assert set(unmeasured["status"]) <= {"static", "failed", "not run"}
    assert unmeasured["status_reason"].str.len().gt(0).all()
    assert counted.loc[measured, "status"].isin(tables.FIGURE_STATUSES).all()


def test_every_case_ran_and_sm90_lacks_only_the_sm120_features(table: pd.DataFrame) -> None:
    assert not (table["status"] == "not run").any(), table.loc[table["status"] == "not run", "status_reason"]
    static = table[table["status"] == "static"]
    assert static["status_reason"].str.contains("sm_90a lacks|needs 2 GPUs").all()
    assert table.loc["mma_fp4_latency_sm120", "status"] == "static"  # an sm_120a-only format on the H200


def test_ratio_is_measured_over_paper_in_the_papers_unit(table: pd.DataFrame) -> None:
    row = table.loc["pcie_bidir_bandwidth_sm120"]
    assert row["ratio"] == pytest.approx(row["measured"] / row["paper"]) and row["ratio"] < 1.5
    share = table.loc["dram_bandwidth_utilization_sm120"]  # a fraction measured, a % in the paper
    assert share["measured_unit"] == "%" and 50 < share["measured"] <= 100
    assert share["ratio"] == pytest.approx(share["measured"] / 87.5)
    rates = table.loc["ffma_peak_throughput_sm120"]  # inst/cycle of no stated scope: not comparable
    assert rates["measured_unit"] == "warp_inst/cycle/SM" and math.isnan(rates["ratio"])


def test_the_papers_hopper_column_stands_beside_the_h200s_own(table: pd.DataFrame) -> None:
    hopper = paper_accounting.cross_generation(table)
    assert {"ffma_latency_sm90", "rcp_latency_sm90", "max_warps_per_sm_sm90"} <= set(hopper["id"])
    assert (hopper["paper_gpu"] == paper_accounting.PAPER_GPUS["sm_90"]).all()
    same = table.loc["ffma_latency_sm90"]
    assert same["counterpart"] == table.loc["ffma_latency_sm120", "counterpart"] == "ffma latency"


def test_derived_rows_compute_from_their_figures(table: pd.DataFrame, committed: tuple) -> None:
    found = committed[0]
    ffma = found[(found["case"] == "ffma") & (found["category"] == "pipelines") & (found["metric"] == "throughput")]
    dfma = found[(found["case"] == "dfma") & (found["category"] == "pipelines") & (found["metric"] == "throughput")]
    ratio = table.loc["fp64_fp32_throughput_ratio_sm120"]
    assert ratio["accounted"] == "derived"
    assert ratio["measured"] == pytest.approx(ffma["value"].iloc[0] / dfma["value"].iloc[0])
    assert table.loc["coissue_pair_count_sm120", "measured"] > 0


def test_the_appendix_value_stands_beside_the_summarys(table: pd.DataFrame) -> None:
    """The full study's appendix states some rows again, at times with another value (compare-paper shows both)."""
    row = table.loc["mma_unified_issue_interval_sm120"]
    assert row["paper"] == 23 and row["appendix"] == 15.88
    assert row["appendix_field"] == "instructions.tensor_core.HMMA_16816.throughput"
    assert math.isnan(table.loc["coverage_categories_sm120", "appendix"])  # the appendix has no such field


def test_a_derived_row_takes_the_worst_status_of_its_figures() -> None:
    assert tables.worst_status(["verified", "consistent"]) == "consistent"  # not verified by one verified part
    assert tables.worst_status(["consistent", "unverified", "verified"]) == "unverified"
    assert tables.worst_status(["verified", "contradicted"]) == "contradicted"
    assert tables.worst_status([]) == "unverified"


def test_rederived_figures_stand_on_the_committed_samples(committed: tuple) -> None:
    found = committed[0].set_index("figure")
    raw = tables.read("raw", sorted((RUN / "sm_90a" / "power").rglob("raw.parquet")))
    clocks = raw[(raw["case"] == "power_bf16_mma") & (raw["metric"] == "sm_clock_nvml")]["value"]
    assert found.loc["power_bf16_mma NVML SM clock, lowest", "value"] == clocks.min()
    jitter = found.loc["power_bf16_mma NVML SM clock jitter under load", "value"]
    assert jitter == pytest.approx(100 * (clocks.max() - clocks.min()) / clocks.median())
    assert found.loc["mma_f16_f32 ILP knee at warps=1", "value"] in (1, 2, 4, 8)  # an ILP of the sweep
    assert found.loc["mma_f16_f32 warps to saturate at ilp=1", "value"] in (1, 4, 8, 16)  # a warp count of the sweep


def test_summary_counts_every_row(table: pd.DataFrame) -> None:
    counts = paper_accounting.summary(table.reset_index(drop=True))
    assert counts["rows"].sum() == 174
    assert {"tied", "derived", "reason: another GPU's column"} <= set(counts["kind"])


# --- structure and coverage -----------------------------------------------------------------------------------------


def test_structure_maps_every_section_to_known_categories() -> None:
    parts = paper_structure.structure(KERNELS)
    known = set(catalog.categories(KERNELS))
    assert parts["rows"].gt(0).all() and set(parts["coverage"]) <= {"covered", "partly", "not covered", "n/a"}
    named = {c for cats in parts["categories"] for c in cats.split(", ") if c}
    # every smdissect category covers a section of the paper or a field of its machine-readable appendix, but
    # control (branches, instruction cache, spills), which only the full study's text measures (its section 7)
    fields = yaml.safe_load((KERNELS.parent / "reference" / "model_fields.yaml").read_text())["fields"]
    refs = [r for f in fields.values() for r in ([f["tie"]] if "tie" in f else f.get("of", []))]
    appendix = {r["case"].split("/")[0] for r in refs}
    assert named <= known and named | appendix | {"control"} == known


def test_coverage_sets_the_run_beside_the_paper(committed: tuple) -> None:
    status = committed[1]
    cov = paper_structure.coverage(status, paper.reference(KERNELS)).set_index("who")
    run = cov.iloc[0]
    assert run["items"] == len(status) == run["measured"] + run["static"] + run["failed"]
    assert run["coverage %"] == pytest.approx(100 * run["measured"] / run["items"])
    ours = cov.loc["seed paper (RTX PRO 5000)"]
    assert (ours["items"], ours["coverage %"]) == (879, 96.1)
    why = paper_structure.unmeasured(status)
    assert why["points"].sum() == run["static"] + run["failed"]
    assert not why["reason"].str.startswith("static: ").any()


def test_docs_page_is_generated_from_the_map() -> None:
    assert (ROOT / "docs" / "paper-map.md").read_text() == paper_structure.markdown(KERNELS)
