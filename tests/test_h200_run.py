"""The committed H200 run (reports/h200/) itself, opt-in: `SMDISSECT_CHECK_COMMITTED=1 python3 -m pytest
tests/test_h200_run.py` (the other tests read a frozen copy of part of it, tests/fixtures/run). It meets each
category's bar, read from its figures table, and accounts for every planned point; its pages, the README, TIMES.md,
model.json, the simulator configs and roofline.json are those of its tables; its pages open offline and show its
figures with their status, never a contradicted one as a finding; and every committed page (reports/h200x2/ too)
reads in a real headless Chromium, offline: no console error, every chart titled, described and with a legend of at
most six series, the header linking the index, every category, the roofline, the paper comparison and the run's GPU
page, 1400 px wide and at most 12,000 px tall with every fold closed, the findings on a screen, and no raw JSON
parameter, machine path or exponent in the text."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from chromium import CHROMIUM, NO_CHROMIUM, browse, probe
from helpers import ROOT
from smdissect.analysis import derived, model, paper, roofline
from smdissect.core import catalog, files, tables
from smdissect.measure import gputime
from smdissect.pages import headlines, simconfig

PAGES = ROOT / "reports" / "h200"
TABLES = PAGES / "tables"
RUN = TABLES / "sm_90a"
KERNELS = ROOT / "kernels"
FIRST_SCREEN_PX = 1000  # the index's device sheet, peaks and trust summary: one screen at 1400 px wide
pytestmark = pytest.mark.skipif(
    os.environ.get("SMDISSECT_CHECK_COMMITTED") != "1",
    reason="checks the committed run, reports/h200/: set SMDISSECT_CHECK_COMMITTED=1 (the other tests read a frozen "
    "copy, tests/fixtures/run)",
)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)


@pytest.fixture(scope="module")
def figures() -> pd.DataFrame:
    """Every figure of the committed run."""
    return tables.read("figures", sorted(RUN.glob("*/figures.parquet")))


def one(figures: pd.DataFrame, name: str, category: str | None = None) -> pd.Series:
    """The figure of that name (of that category, where two categories name one alike): exactly one."""
    mine = figures[(figures["figure"] == name) & (figures["category"] == category if category else True)]
    (row,) = [r for _, r in mine.iterrows()]
    return row


def test_every_category_has_figures_each_with_a_status_and_reason(figures: pd.DataFrame) -> None:
    assert set(figures["category"]) == {p.name for p in RUN.iterdir() if (p / "crossval.parquet").exists()}
    assert set(figures["status"]) <= set(tables.FIGURE_STATUSES) and (figures["reason"].str.len() > 0).all()
    assert not figures.duplicated(["category", "figure"]).any()


def test_each_page_counts_its_figures_and_shows_no_contradicted_one_as_a_finding(figures: pd.DataFrame) -> None:
    for category, mine in figures.groupby("category"):
        page = (PAGES / f"{category}.html").read_text()
        section = page[page.index('<section id="findings">') : page.index("</section>", page.index('id="findings"'))]
        every = page[
            page.index('<section id="all-figures">') : page.index("</section>", page.index('id="all-figures"'))
        ]
        counts = mine["status"].value_counts()
        for status in tables.FIGURE_STATUSES:
            assert re.search(rf">{status}</span> <b>{int(counts.get(status, 0))}</b>", section), (category, status)
        findings = section.split('<p class="counts">')[1].split("</p>", 1)[1].split("<h3>Contradicted: not")[0]
        assert 's-contradicted">contradicted' not in findings + every, category
        assert ("<h3>Contradicted: not findings</h3>" in section) == bool(counts.get("contradicted", 0)), category
        assert every.count("<tr>") - 1 == len(mine) - int(counts.get("contradicted", 0)), category


def test_readme_headlines_are_the_committed_figures(figures: pd.DataFrame) -> None:
    found = headlines.ranked(catalog.findings(KERNELS, catalog.categories(KERNELS)))
    block = headlines.markdown(headlines.table(figures, paper.reference(KERNELS), found), figures)
    readme = (ROOT / "README.md").read_text()
    start, end = files.markers("headlines")
    assert f"{start}\n{block}\n{end}" in readme, (
        "run: python3 -m smdissect headlines --tables reports/h200/tables --readme README.md"
    )
    assert "missing" not in set(headlines.table(figures, pd.DataFrame(), found)["status"])  # each is in the run


def test_pipelines_table_has_sixty_instruction_types_with_sub_cycle_spread(figures: pd.DataFrame) -> None:
    latency = figures[
        (figures["category"] == "pipelines") & (figures["metric"] == "latency") & (figures["kind"] == "point")
    ]
    assert latency["case"].nunique() >= 60 and (latency["spread"] < 1.0).all()
    ffma = one(figures, "ffma peak throughput", "pipelines")
    assert ffma["value"] == pytest.approx(4.0, rel=0.05)  # the SM's issue limit: 4 sub-partitions x 1 warp-inst/cycle


def test_dram_bandwidth_beats_the_library_copy_and_counters_agree(figures: pd.DataFrame) -> None:
    read, torch = one(figures, "dram_read peak bandwidth"), one(figures, "torch_copy bandwidth")
    assert read["status"] == "verified" and read["value"] / torch["value"] >= 1.0 and read["value"] / 4800 > 0.9
    cv = tables.read("crossval", RUN / "memory" / "crossval.parquet")
    dram = cv[cv.check.str.contains("dram__bytes")]
    assert len(dram) >= 6 and (dram.verdict == "agree").all() and (dram.rel_err < 0.05).all()


def test_wgmma_reaches_the_sms_dense_f16_peak(figures: pd.DataFrame) -> None:
    wgmma, mma = one(figures, "wgmma_f16_f32_ss peak flops"), one(figures, "mma_f16_f32 peak flops")
    assert wgmma["value"] >= 0.8 * 4096 and wgmma["status"] == "verified"  # 989.4 TFLOPS / (132 SMs x 1830 MHz)
    assert mma["value"] < wgmma["value"]  # mma.sync cannot keep the tensor cores as busy as wgmma


def test_wgmma_fp8_and_int8_reach_twice_the_f16_rate(figures: pd.DataFrame) -> None:
    f16 = one(figures, "wgmma_f16_f32_ss peak flops")["value"]
    for name in ("wgmma_e4m3_f32_ss", "wgmma_e5m2_f32_ss", "wgmma_s8_s32_ss"):
        fig = one(figures, f"{name} peak flops")
        assert fig["value"] == pytest.approx(2 * f16, rel=0.02) and fig["status"] == "verified", name  # 1978.9 TFLOPS


def test_fp8_mma_sync_is_emulated_on_sm90_and_stays_in_its_timed_loop(figures: pd.DataFrame) -> None:
    latency, flops = one(figures, "mma_e4m3_f32 latency"), one(figures, "mma_e4m3_f32 peak flops")
    f16 = one(figures, "mma_f16_f32 latency")
    assert latency["value"] > f16["value"] and flops["value"] < 8192 / 2  # converts + 2 HMMA, not a native fp8 path
    # nothing independent times an emulated fp8 mma: its own counters and its timed loop's SASS agree
    assert latency["status"] == "consistent" and "sass timed loop: agree" in latency["checks"]


def test_iadd64_is_no_faster_than_the_iadd3_it_is_built_from(figures: pd.DataFrame) -> None:
    iadd64 = one(figures, "iadd64 latency", "pipelines")
    assert iadd64["value"] >= 4.0 * 0.98 and "built from: agree" in iadd64["checks"]


def test_every_planned_point_of_the_run_arch_is_accounted_for() -> None:
    status = tables.read("status", sorted(RUN.rglob("status.parquet")))
    assert set(status.status) <= {"measured", "static", "failed"} and (status.status == "measured").mean() > 0.85
    static = status[status.status == "static"]  # the arch lacks a feature, or the device (one GPU) cannot run it
    assert (static.reason.str.startswith("not run: ") | static.reason.str.startswith("static: ")).all()
    failed = status[status.status == "failed"]
    assert failed.reason.str.startswith("error: ").all()  # each failure keeps the binary's one-line error


def test_tma_bulk_copies_reach_ninety_percent_of_ldg_in_the_same_run(figures: pd.DataFrame) -> None:
    ratio = one(figures, "TMA bulk best / LDG.128 best")
    assert ratio["value"] >= 0.90 and ratio["status"] != "contradicted"
    cv = tables.read("crossval", RUN / "async" / "crossval.parquet")
    dram = cv[cv.check.str.contains("dram__bytes_read")]
    assert len(dram) > 0 and (dram.verdict == "agree").all()


def test_cutlass_gemm_matches_cublas_and_states_its_share_of_peak(figures: pd.DataFrame) -> None:
    ratio = figures[figures["figure"].str.startswith("gemm_bf16 ratio_to_cublas at ")]
    share = figures[figures["figure"].str.startswith("gemm_bf16 pct_of_peak_cutlass at ")]
    error = figures[figures["figure"].str.startswith("gemm_bf16 max_rel_err at ")]
    # each point runs both libraries back to back under the power cap, whose clock moves between them: session 11's
    # run put CUTLASS at 0.89 of cuBLAS at mn=16384, k=4096 (0.98-1.02 elsewhere; session 9: all within 0.5%)
    assert len(ratio) >= 4 and ratio["value"].median() >= 0.98 and (ratio["value"] >= 0.85).all()
    assert (error["value"] < 0.02).all()
    assert ((share["value"] > 50) & (share["value"] <= 100)).all()


def test_attention_splits_every_tile_into_softmax_and_tensor_shares(figures: pd.DataFrame) -> None:
    shares = figures[figures["case"].isin(["softmax_share", "tensor_share"])]
    assert set(shares["case"]) == {"softmax_share", "tensor_share"} and shares["value"].between(0, 100).all()
    full = figures[figures["figure"].str.startswith("tile_full cycles_per_tile at ")].set_index("params")["value"]
    dropped = figures[figures["figure"].str.startswith("tile_no_softmax cycles_per_tile at ")].set_index("params")
    assert len(full) and (full > dropped["value"].reindex(full.index)).all()  # dropping a stage never slows a tile


def test_no_unverified_reason_is_about_the_profiling_plan(figures: pd.DataFrame) -> None:
    unverified = figures[figures["status"] == "unverified"]
    assert len(unverified) and not unverified["reason"].str.contains("profiled", case=False).any()


def test_the_run_says_how_it_was_produced() -> None:
    run = (PAGES / "RUN.md").read_text()
    for needed in (".ci/device-run", "snakemake --cores all", "580.", "MHz", "2026-"):
        assert needed in run, needed
    command = json.loads((RUN / "latency" / "float" / "profile.json").read_text())["command"]
    assert "--clock-control none" in command and "--nvtx-include regex:^smd:/" in command


def test_the_times_are_those_of_the_tables() -> None:
    """TIMES.md's kernel seconds per family are those of the run's tables (regenerated with the run)."""
    timed = gputime.timed(tables.read("raw", tables.find("raw", RUN)))
    profiled = gputime.profiled(tables.read("ncu", tables.find("ncu", RUN)))
    text = (PAGES / "TIMES.md").read_text()
    listed = re.findall(r"^\| (\w+)/(\w+) \| [\d.]+ s \| ([\d.]+) s \| [\d.]+ s \| ([\d.]+) s \|", text, re.M)
    assert len(listed) >= 10
    for category, family, timed_s, profiled_s in listed:
        assert float(timed_s) == pytest.approx(timed.get((category, family), 0), abs=0.051), family
        assert float(profiled_s) == pytest.approx(profiled.get((category, family), 0), abs=0.051), family


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads((PAGES / "model.json").read_text())


def test_the_model_is_the_export_of_the_tables(tmp_path: Path, committed: dict) -> None:
    model.validate(committed, "reports/h200/model.json")
    out = tmp_path / "model.json"
    model.export(TABLES, out, KERNELS)
    fresh = json.loads(out.read_text())
    fresh["provenance"]["tables"] = committed["provenance"]["tables"]
    assert fresh == committed, "reports/h200/model.json is stale: run `smdissect export` (README, The GPU as data)"


def test_the_simulator_configs_are_the_models(committed: dict) -> None:
    for file in (simconfig.GPGPUSIM, simconfig.TRACE):
        text = (PAGES / file).read_text()
        assert text == simconfig.render(committed, file), f"reports/h200/{file} is stale: run `smdissect simconfig`"


def test_the_roofline_file_is_that_of_the_tables() -> None:
    figures = tables.read("figures", tables.find("figures", TABLES))
    committed = roofline.read(PAGES / "roofline.json")
    assert committed == json.loads(json.dumps(roofline.build(figures)))
    assert roofline.check(committed, figures) == []


def test_the_committed_runs_have_pages() -> None:
    categories = sorted(p.parent.name for p in KERNELS.glob("*/cases.yaml"))
    for page in ("index.html", "roofline.html", "compare-paper.html", *(f"{c}.html" for c in categories)):
        assert (PAGES / page).exists(), page
    assert (ROOT / "reports" / "h200x2" / "gpus.html").exists()


@pytest.mark.parametrize("page", ["index.html", "latency.html"])
def test_pages_open_offline(page: str) -> None:
    html = (PAGES / page).read_text()
    assert "<script src=" not in html and "<link " not in html
    assert "NVIDIA H200" in html


@needs_chromium
def test_index_opens_on_the_device_its_peaks_and_the_trust_summary(tmp_path: Path) -> None:
    found, _ = probe(PAGES / "index.html", tmp_path)
    assert all(0 < bottom <= FIRST_SCREEN_PX for bottom in found["screen"].values()), found["screen"]
    for words in ("SMs", "boost clock", "L2 cache", "power limit", "CUDA toolkit", "FP16 tensor", "TFLOPS", "TOPS",
                  "DRAM", "latency (ns)", "what it means"):  # fmt: skip
        assert words in found["text"], words


@needs_chromium
def test_roofline_page_draws_a_described_chart(tmp_path: Path) -> None:
    page = PAGES / "roofline.html"
    assert (page.parent / "roofline.json").exists()
    found, _ = probe(page, tmp_path)
    assert len(found["charts"]) == 1 and not found["errors"], found["errors"]
    chart = found["charts"][0]
    assert chart["title"].startswith("Roofline of the NVIDIA H200") and "measured" in chart["desc"], chart
    assert "roofline" in {n["name"] for n in found["nav"]}


def test_screenshots_are_committed_beside_the_run() -> None:
    shots = sorted((PAGES / "screenshots").glob("*.png"))
    assert {p.stem for p in shots} >= {"index", "memory", "pipelines", "roofline"}
    for shot in shots:
        data = shot.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and 20_000 < len(data) < 400_000, (shot.name, len(data))


@needs_chromium
def test_screenshot_of_the_index_renders(tmp_path: Path) -> None:
    shot = tmp_path / "index.png"
    browse(PAGES / "index.html", tmp_path, f"--screenshot={shot}")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a real rendering, not a blank page


REPORTS = ROOT / "reports"
LISTED = ["git", "ls-files", "--cached", "--others", "--exclude-standard", "reports"]
# committed or ready to commit: a run's own pages, not a local run's (reports/* is ignored)
COMMITTED = subprocess.run(LISTED, capture_output=True, text=True, cwd=ROOT).stdout.split()
COMMITTED_PAGES = sorted(ROOT / p for p in COMMITTED if p.endswith(".html") and "/.probe-" not in p)
CATEGORIES = sorted(p.parent.name for p in (ROOT / "kernels").glob("*/cases.yaml"))
MAX_BYTES = 1_500_000
MAX_LEGEND = 6  # series one legend may name
MAX_HEIGHT = 12_000  # px, every fold closed
SCIENTIFIC = re.compile(r"\b\d+(\.\d+)?[eE][+-]?\d+\b")  # 1.5e+07: a number no person writes
FINDINGS_PX = 1600  # the findings (or the index's headline table) fit in about two screens at 1400 px wide


@needs_chromium
@pytest.mark.parametrize("page", COMMITTED_PAGES, ids=[str(p.relative_to(REPORTS)) for p in COMMITTED_PAGES])
def test_every_committed_page_reads_in_a_browser(page: Path, tmp_path: Path) -> None:
    assert page.stat().st_size < MAX_BYTES, f"{page.name}: {page.stat().st_size:,} bytes (at most {MAX_BYTES:,})"
    found, stderr = probe(page, tmp_path)
    assert not found["errors"] and not found["remote"], found["errors"] + found["remote"]
    console = [ln for ln in stderr.splitlines() if "CONSOLE" in ln and "PROBE" not in ln]
    assert not console, console
    # the header: the index, every category of this run, the roofline, the paper comparison and the run's GPU page
    # where they exist, each link resolving to a page
    names = {n["name"] for n in found["nav"]}
    links = [(page.parent / n["href"]).resolve() for n in found["nav"] if n["href"]]
    assert "index" in names and all(link.exists() for link in links), found["nav"]
    run = next((link.parent for link in links if link.name == "index.html"), page.parent)
    pages = [*CATEGORIES, "roofline", "compare-paper"]
    assert {p for p in pages if (run / f"{p}.html").exists()} <= names, found["nav"]
    gpus = [g for g in (run.parent / "gpus.html", run.parent.parent / "gpus.html") if g.exists()]
    assert not gpus or gpus[0] in links or page == gpus[0], found["nav"]
    # the page: 1400 px wide without a horizontal scroll, at most MAX_HEIGHT tall with every fold closed
    size = found["page"]
    assert size["w"] <= size["view"] and size["h"] <= MAX_HEIGHT and not size["open"], size
    # charts: drawn, titled and described, legends of at most MAX_LEGEND series, none cut short ("... N entries")
    assert len(found["charts"]) >= page.read_text().count('<div class="chart">')
    for chart in found["charts"]:
        assert chart["w"] > 50 and chart["h"] > 50 and chart["marks"] > 5, chart
        assert chart["title"] and chart["desc"], {k: chart[k] for k in ("title", "desc", "w", "h")}
        for legend in chart["legends"]:
            assert legend["symbols"] <= MAX_LEGEND, legend
            assert not any("entries" in label for label in legend["labels"]), legend
    # findings first and short; text as a person writes it
    reference_pages = ("gpus.html", "compare-paper.html", "roofline.html", "gpgpusim-diff.html")  # no findings
    if page.name not in reference_pages and "compare" not in page.parts:
        assert 0 < found["findings"] < FINDINGS_PX, f"findings section {found['findings']} px tall"
    assert not re.search(r'\{"[a-z_0-9]+":', found["text"]), re.search(r'.{60}\{"[a-z_0-9]+":.{40}', found["text"])
    assert not re.search(r"(?<![\w.])/(work|tmp|home|root|usr)/", found["text"])
    assert not SCIENTIFIC.search(found["text"]), [m.group(0) for m in SCIENTIFIC.finditer(found["text"])][:5]


def test_every_derived_metric_of_the_committed_runs_is_declared() -> None:
    """Each derived figure of every committed run (one GPU and two) has a metric its category's deriver declares: a
    figure only a two-GPU run makes would otherwise stop a user's figures stage."""
    found = tables.read("figures", sorted((ROOT / "reports").glob("*/tables/**/figures.parquet")))
    made = found[found["kind"] == "derived"][["category", "metric"]].drop_duplicates()
    assert len(made) > 100
    undeclared = [f"{c}: {m}" for c, m in made.itertuples(index=False) if not derived.declares(c, m)]
    assert not undeclared, undeclared
