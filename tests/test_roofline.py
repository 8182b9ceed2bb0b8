"""The roofline file and the index's first screen from the frozen H200 tables (fixtures/run): every measured
ceiling is the figure it names, converted at the SM count and the clock of its launches, and a wrong one is caught."""

from __future__ import annotations

import copy
import math
import sys
from pathlib import Path

import pandas as pd
import pytest
from helpers import RUN, run_cli
from smdissect.analysis import roofline
from smdissect.core import tables
from smdissect.pages import roofline_page, sheet


@pytest.fixture(scope="module")
def figures() -> pd.DataFrame:
    return tables.read("figures", tables.find("figures", RUN))


@pytest.fixture(scope="module")
def data(figures: pd.DataFrame) -> dict:
    return roofline.build(figures)


def figure(figures: pd.DataFrame, category: str, name: str) -> pd.Series:
    return figures[(figures["category"] == category) & (figures["figure"] == name)].iloc[0]


def test_measured_ceilings_are_the_figures_they_name(data: dict, figures: pd.DataFrame) -> None:
    assert data["gpu"] == "NVIDIA H200" and data["sms"] == 132
    for entry in data["compute"] + data["memory"]:
        m = entry["measured"]
        f = figure(figures, m["category"], m["figure"])
        assert m["value"] == f["value"] and m["status"] == f["status"], entry["name"]
    assert roofline.check(data, figures) == []


def test_tensor_ceilings_equal_the_runs_own_tflops_figures(data: dict, figures: pd.DataFrame) -> None:
    for entry in (e for e in data["compute"] if e["name"].startswith("tensor_") and e["name"] != "tensor_f64"):
        m = entry["measured"]
        case = m["figure"].removesuffix(" peak flops")
        tflops = figure(figures, "tensorcore", f"{case} tflops at peak flops")["value"]
        assert math.isclose(m["per_second"] / 1e12, tflops, rel_tol=1e-6), entry["name"]


def test_documented_ceilings_come_from_the_datasheet(data: dict) -> None:
    by_name = {e["name"]: e["documented"] for e in data["compute"] + data["memory"]}
    assert by_name["tensor_f16"]["per_second"] == 989.4e12 and by_name["tensor_f16"]["clock_mhz"] == 1830
    assert by_name["dram"]["per_second"] == 4800e9 and by_name["fp32"]["per_cycle_per_sm"] == 256
    assert by_name["l2"] is None  # no document gives the L2 bandwidth


def test_a_wrong_ceiling_fails(data: dict, figures: pd.DataFrame) -> None:
    wrong = copy.deepcopy(data)
    wrong["compute"][0]["measured"]["per_second"] *= 1.1
    wrong["memory"][-1]["measured"]["status"] = "verified" if data["memory"][-1]["measured"]["status"] != "verified" \
        else "consistent"  # fmt: skip
    found = roofline.check(wrong, figures)
    assert len(found) == 2 and found[0].startswith(f"{data['compute'][0]['name']}: per_second"), found
    moved = copy.deepcopy(data)
    moved["memory"][0]["measured"]["figure"] = "no such figure"
    assert roofline.check(moved, figures) == [f"{data['memory'][0]['name']}: memory: no such figure is not a figure "
                                              "of the run"]  # fmt: skip


def test_cli_writes_the_file_and_the_page(tmp_path: Path) -> None:
    out, page = tmp_path / "roofline.json", tmp_path / "roofline.html"
    proc = run_cli(sys.executable, "-m", "smdissect", "roofline", "--tables", str(RUN), "--out", str(out),
                   "--page", str(page))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert roofline.read(out)["compute"] and "<desc>Log-log roofline of the NVIDIA H200" in page.read_text()
    empty = run_cli(sys.executable, "-m", "smdissect", "roofline", "--tables", str(tmp_path), "--out", str(out))
    assert empty.returncode != 0 and "holds no figures.parquet" in empty.stderr.strip().splitlines()[-1]


def test_first_screen_values(data: dict, figures: pd.DataFrame) -> None:
    facts = {f.quantity: f for f in sheet.device(figures)}
    assert facts["SMs"].value == "132 (datasheet: 132)" and facts["SMs"].status == "verified"
    assert facts["memory size"].value.startswith("139.8 GiB") and facts["L2 cache"].value.startswith("60 MiB")
    assert facts["power limit"].value == "700 W (datasheet: up to 700 W)"
    assert (
        facts["base clock"].value == sheet.NOT_RECORDED and "default applications clock" in facts["base clock"].source
    )
    peaks = sheet.compute(data).set_index("ceiling")
    fp16 = peaks.loc["FP16 tensor", "at that clock"]  # the run's peak at its clock: within the datasheet's 989 TFLOPS
    assert fp16.endswith(" TFLOPS") and 900 < float(fp16.split()[0].replace(",", "")) <= 989.4 * 1.02
    assert peaks.loc["INT8 tensor", "documented"] == "1,979 TOPS" and peaks.loc[
        "INT8 tensor", "at that clock"
    ].endswith(" TOPS")
    levels = sheet.levels(data, figures).set_index("level")
    dram = levels.loc["DRAM", "bandwidth"]
    assert dram.endswith(" GB/s") and 4000 < float(dram.split()[0].replace(",", "")) <= 4800
    assert levels.loc["L2", "documented"] == "none"
    assert not any("e+" in str(v) for v in [*peaks.to_numpy().ravel(), *levels.to_numpy().ravel()])


def test_a_run_without_figures_has_an_empty_roofline_page(tmp_path: Path) -> None:
    data = roofline.build(tables.frame("figures", []))
    assert data["compute"] == [] and data["memory"] == [] and sheet.glance(tables.frame("figures", []), data) is None
    roofline_page.render(tmp_path / "roofline.html", data, "")
    assert "no compute or no memory ceiling to draw" in (tmp_path / "roofline.html").read_text()
