"""analysis.model and pages.simconfig: the model exported from the frozen H200 run follows its schema and covers
every field of the seed paper's appendix, a broken model fails, the simulator config reads back to the figures it
came from, and `smdissect compare` takes model files."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest
import yaml
from helpers import ROOT, RUN
from smdissect.analysis import compare, model, paper, paper_accounting
from smdissect.core import appendix, tables
from smdissect.core.errors import SmdissectError
from smdissect.pages import simconfig
from smdissect.stages import pages as pages_stage

KERNELS = ROOT / "kernels"


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The model exported from the frozen run's tables, as `smdissect export` writes it."""
    out = tmp_path_factory.mktemp("model") / "model.json"
    model.export(RUN, out, KERNELS)
    return out


@pytest.fixture(scope="module")
def exported(model_file: Path) -> dict:
    return json.loads(model_file.read_text())


@pytest.fixture(scope="module")
def figures() -> dict[tuple[str, str], dict]:
    """The frozen run's figures by (category, figure name)."""
    df = tables.read("figures", tables.find("figures", RUN))
    return {(r["category"], r["figure"]): r for r in df.to_dict("records")}


def test_the_exported_model_follows_the_schema(exported: dict, model_file: Path) -> None:
    model.validate(exported, str(model_file))
    assert exported["schema"] == model.schema()["$id"] and model.version() == "1.0.0"


@pytest.mark.parametrize(
    "break_it",
    [
        lambda m: m["sections"]["l1_cache"]["latency_cyc"].update(value="fast"),
        lambda m: m["sections"]["tlb"]["miss_penalty_cyc"].pop("reason"),
        lambda m: m["sections"]["dram"]["latency_cyc"].update(status="great"),
        lambda m: m["sections"]["topology"]["sm_count"]["evidence"].update(figures=[]),
        lambda m: m.update(schema="urn:smdissect:schema:model:0.9.0"),
    ],
)
def test_a_broken_model_fails_validation(exported: dict, break_it) -> None:
    broken = copy.deepcopy(exported)
    break_it(broken)
    with pytest.raises(SmdissectError, match="re-export it"):
        model.validate(broken)


def test_every_appendix_field_is_filled_or_explained(exported: dict) -> None:
    """Each field of the appendix is in the model with a value, or null with a reason."""
    params = model.parameters(exported)
    fields = appendix.appendix(ROOT)
    assert len(fields) > 300
    lacking = [f for f in fields if f not in params or (params[f]["value"] is None and not params[f]["reason"])]
    assert not lacking, f"fields the model neither fills nor explains: {lacking}"
    assert set(params) == set(fields)


def test_a_field_the_map_leaves_out_is_an_error(tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / model.FIELDS).read_text())
    del data["fields"]["l1_cache.latency_cyc"]
    path = tmp_path / "model_fields.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(SmdissectError, match=r"l1_cache\.latency_cyc .* add a tie, derived or reason"):
        model.entries(KERNELS, path)


def test_ties_carry_their_figure(exported: dict, figures: dict) -> None:
    """A tied field's value is its figure's (in the appendix's unit where the two convert), and every evidence
    figure is the frozen table's, value and status."""
    fields = appendix.appendix(ROOT)
    for fid, p in model.parameters(exported).items():
        if p["value"] is None:
            continue
        for f in p["evidence"]["figures"]:
            row = figures[(f["category"], f["figure"])]
            assert (f["value"], f["status"]) == (row["value"], row["status"]), fid
        if p["evidence"]["how"] == "tie":
            f = p["evidence"]["figures"][0]
            factor = 1.0 if p["unit"] == f["unit"] else paper_accounting.UNIT_FACTORS[(f["unit"], fields[fid].unit)]
            assert p["value"] == pytest.approx(f["value"] * factor, rel=1e-12), fid


def test_the_config_reads_back_to_the_figures(exported: dict, figures: dict) -> None:
    """Every option written has the value of the fields it names, and those are the frozen figures'; every
    option not written says why in a comment."""
    params = model.parameters(exported)
    written = 0
    for file in (simconfig.GPGPUSIM, simconfig.TRACE):
        text = simconfig.render(exported, file)
        config = simconfig.read_config(text)
        for option in (o for o in simconfig.OPTIONS if o.file == file):
            got = [params[f] for f in option.fields]
            if not got or any(p["value"] is None for p in got):
                assert option.name not in config and f"# {option.name}: not measured: " in text, option.name
                continue
            written += 1
            values = [p["value"] for p in got]
            assert config[option.name] == option.text(values), option.name
            for p in got:
                for f in p["evidence"]["figures"]:
                    assert math.isclose(figures[(f["category"], f["figure"])]["value"], f["value"]), option.name
    assert written >= 15


def test_the_diff_names_the_side_the_evidence_supports(exported: dict) -> None:
    sources = simconfig.reference_configs(KERNELS)
    reference = {k: v for _, text in sources.values() for k, v in simconfig.read_config(text).items()}
    rows = simconfig.diff(exported, reference).set_index("option")
    assert rows.loc["-gpgpu_n_clusters", "smdissect"] == rows.loc["-gpgpu_n_clusters", "accel-sim"] == "132"
    assert rows.loc["-gpgpu_l1_latency", "accel-sim"] == "20" and rows.loc["-gpgpu_l1_latency", "smdissect"] == "32"
    assert rows.loc["-gpgpu_l1_latency", "evidence supports"].startswith("neither: smdissect's is unverified")
    assert rows.loc["-dram_latency", "evidence supports"] == "Accel-Sim's: nothing measured here"


def test_the_appendix_differs_from_the_earlier_summary() -> None:
    """The appendix's value of a field beside the seed summary's (reference/seed_sm120.csv): the issue's examples."""
    summary = paper.reference(KERNELS).set_index("id")["value"]
    assert appendix.appendix_value("l1_cache.latency_cyc", ROOT).value == 44 != summary["l1_hit_latency_sm120"]
    assert appendix.appendix_value("instructions.tensor_core.HMMA_16816.throughput", ROOT).value == 15.88
    assert summary["mma_unified_issue_interval_sm120"] == 23
    with pytest.raises(SmdissectError, match=r"section\.name"):
        appendix.appendix_value("l1_latency", ROOT)
    interval = appendix.appendix_for("mma_unified_issue_interval_sm120", ROOT)
    assert interval is not None and interval.id == "instructions.tensor_core.HMMA_16816.throughput"
    assert appendix.appendix_for("coverage_categories_sm120", ROOT) is None


def test_the_summary_rows_the_appendix_names_exist() -> None:
    ids = set(paper.reference(KERNELS)["id"])
    named = [s for f in appendix.appendix(ROOT).values() for s in f.summary]
    assert named and set(named) <= ids and len(named) == len(set(named))


def test_compare_takes_model_files(tmp_path: Path, model_file: Path) -> None:
    out = tmp_path / "page.html"
    pages_stage.compare_page(model_file, str(RUN), KERNELS, [], out)
    rows = compare.model_set(model_file, KERNELS)
    assert f"<th>figures</th><td>{len(rows)}</td>" in out.read_text() and len(rows) > 100
    with pytest.raises(SmdissectError, match="--b paper takes a result folder"):
        pages_stage.compare_page(model_file, compare.PAPER, KERNELS, [], out)
