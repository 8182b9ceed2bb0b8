"""Index, coverage and compare pages from the frozen H200 tables (fixtures/run)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pandas as pd
import pytest
from helpers import ROOT, RUN, run_cli
from smdissect.analysis import compare, coverage
from smdissect.core import catalog, tables


def cells(page: str) -> list[list[str]]:
    """The text of every table row of an HTML page."""
    rows = re.findall(r"<tr>(.*?)</tr>", page)
    return [[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", r)] for r in rows]


@pytest.fixture(scope="module")
def measured() -> pd.DataFrame:
    return compare.result_set(compare.figures_in(RUN))


def test_diff_flags_only_beyond_the_spread_and_the_floor(measured: pd.DataFrame) -> None:
    shifted = measured.copy()
    shifted["value"] = shifted["value"] + 0.5 * shifted["spread"]  # within noise everywhere
    assert not compare.diff(measured, shifted)["flagged"].any()
    nudged = measured.assign(value=measured["value"] * (1 + compare.RELATIVE_FLOOR / 2), spread=0.0)
    assert not compare.diff(nudged, measured.assign(spread=0.0))["flagged"].any()  # 1% off: under the floor
    moved = shifted.index[shifted["case"] == "ffma"]
    shifted.loc[moved, "value"] += 1.0
    flagged = compare.diff(measured, shifted).query("flagged")
    assert set(flagged["figure"].str.split().str[0]) == {"ffma"} and len(flagged) == len(moved)


def test_coverage_accounts_for_every_planned_point() -> None:
    cases = catalog.load(ROOT / "kernels", "latency")
    points = [tables.canonical_params(p) for p in cases[0].points()]
    status = pd.DataFrame(
        {
            "category": "latency",
            "case": cases[0].id,
            "params": points[1:],
            "status": ["measured"] * (len(points) - 2) + ["failed"],
            "reason": "",
        }
    )
    cov = coverage.coverage(cases, ["sm_90a", "sm_120a"], "sm_90a", status, "no GPU")
    assert len(cov) == 2 * sum(len(c.points()) for c in cases)
    mine = cov[(cov.case == cases[0].id) & (cov.arch == "sm_90a")].set_index("params").status
    assert mine[points[0]] == "missing" and mine[points[-1]] == "failed" and mine[points[1]] == "measured"
    assert (cov[cov.arch == "sm_120a"].status == "static-only").all()
    counts = coverage.counts(cov).set_index(["category", "arch"])
    assert counts.loc[("latency", "sm_90a"), "measured"] == len(points) - 2


def test_compare_cli_writes_every_paper_figure(tmp_path: Path) -> None:
    out = tmp_path / "compare.html"
    proc = run_cli(
        sys.executable,
        "-m",
        "smdissect",
        "compare",
        "--a",
        str(RUN),
        "--b",
        "paper",
        "--categories",
        "latency",
        "--out",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    rows = cells(out.read_text())
    header = next(r for r in rows if r[:4] == ["quantity", "paper", "appendix", "unit"])
    listed = [dict(zip(header, r, strict=True)) for r in rows if len(r) == len(header) and r != header]
    every = pd.read_csv(ROOT / "reference" / "seed_sm120.csv")
    assert len(listed) >= len(every)  # every figure of the paper, whether latency measures it or not
    ffma = next(r for r in listed if r["quantity"].startswith("fma.rn.f32 (FFMA) dependent latency"))
    assert ffma["paper"] == "4.220" and ffma["status"] == "consistent" and ffma["accounted"] == "tied"  # counters
    assert ffma["appendix"] == "4.000"  # the full study's appendix gives FFMA's latency as 4 cycles
    assert abs(float(ffma["ratio"]) - float(ffma["measured"]) / 4.22) < 1e-3  # measured / paper
    missing = run_cli(sys.executable, "-m", "smdissect", "compare", "--a", str(tmp_path), "--out", str(out))
    assert missing.returncode != 0 and "holds no figures.parquet" in missing.stderr.strip().splitlines()[-1]


def test_index_from_committed_tables(tmp_path: Path) -> None:
    out = tmp_path / "index.html"
    raw = [str(p) for p in sorted(RUN.rglob("raw.parquet"))]
    figures = [str(p) for p in sorted(RUN.rglob("figures.parquet"))]
    proc = run_cli(
        sys.executable,
        "-m",
        "smdissect",
        "index",
        "--kernels",
        "kernels",
        "--gpu",
        "h200",
        "--out",
        str(out),
        "--categories",
        "latency",
        "--archs",
        "sm_90a",
        "sm_120a",
        "--run-arch",
        "sm_90a",
        "--raw",
        *raw,
        "--figures",
        *figures,
        "--skipped",
        "{}",
        "--provenance",
        "{}",
    )
    assert proc.returncode == 0, proc.stderr
    page = out.read_text()
    assert "Instruction reference table" in page and "Cross-generation: the paper" in page
    assert "Headline figures" in page and "FFMA dependent latency" in page
    rows = cells(page)
    header = next(r for r in rows if r[:3] == ["category", "case", "ptx"])
    ffma = dict(zip(header, next(r for r in rows if r[:3] == ["latency", "ffma", "fma.rn.f32"]), strict=True))
    assert ffma["pipe"] == "fma" and abs(float(ffma["latency (cycle)"]) - 4.04) < 0.01
    assert ffma["peak (warp_inst/cycle/SM)"].startswith("3.9") and ffma["latency status"] == "consistent"
    # no status tables given: every planned point of the run's arch is missing, the other arch's only built
    assert re.search(
        r"On this GPU \(sm_90a\): <b>0</b> of ([\d,]+) planned points measured \(0\.0%\), 0 static "
        r"with the reason given, 0 failed, \1 missing\. sm_120a: [\d,]+ points built",
        page,
    )
