"""The attention category: manifest, the flash family built for sm_90a and sm_120a with its SASS against the
manifest, the torch SDPA script's protocol without torch, and the report view on frames shaped like a real run."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from helpers import ARCHS, ROOT, RUN, assert_sass_claims, listing, raw_frame
from smdissect.analysis import figures, paper
from smdissect.analysis.figure_model import Figure
from smdissect.core import catalog, tables
from smdissect.measure import sass
from smdissect.pages.views import attention as view

CASES = catalog.load(ROOT / "kernels", "attention")
FAMILIES = catalog.families(CASES)
SDPA = ROOT / "kernels" / "attention" / "sdpa.py"
SHARES = ("softmax_share", "tensor_share")  # two launches (full and the stripped variant) per point


def test_manifest_is_two_families_and_names_the_paper_figures() -> None:
    assert set(FAMILIES) == {"flash", "sdpa"}
    reference = pd.read_csv(ROOT / "reference" / "seed_sm120.csv").set_index("id")
    papers = {c.id: c.paper for c in CASES if c.paper}
    assert papers == {"softmax_share": "flashattn_softmax_share_sm120", "tensor_share": "flashattn_tc_share_sm120"}
    assert reference.loc[list(papers.values()), "unit"].tolist() == ["%", "%"]
    assert not catalog.family_settings(ROOT / "kernels", "attention", "sdpa")["profile"]


def test_profile_sweeps_narrow_the_sweep_and_stay_within_the_ncu_budget() -> None:
    launches = 0
    for case in FAMILIES["flash"]:
        for key, values in (case.profile_sweep or {}).items():
            assert key in case.sweep and set(values) <= set(case.sweep[key]), case.id
        launches += len(case.profiled_points()) * (2 if case.id in SHARES else 1)
    assert launches < 40


@pytest.mark.parametrize("arch", ARCHS)
def test_flash_lists_its_cases_and_its_sass_holds(compiled: Callable[[str, str, str], Path], arch: str) -> None:
    assert_sass_claims(compiled(arch, "attention", "flash"), arch, FAMILIES["flash"])


@pytest.mark.parametrize("arch", ARCHS)
def test_variants_drop_and_double_their_stage(compiled: Callable[[str, str, str], Path], arch: str) -> None:
    counts = sass.opcodes(sass.dump(compiled(arch, "attention", "flash"), arch))
    for d in (64, 128):
        of = {v: counts[f"flash_fwd<__nv_bfloat16,{d},{i}>"] for i, v in enumerate(view.VARIANTS)}
        hmma = {v: sass.count(c, "HMMA") for v, c in of.items()}
        ex2 = {v: sass.count(c, "MUFU.EX2") for v, c in of.items()}
        assert hmma["no_qk"] == hmma["no_pv"] == hmma["full"] // 2 and hmma["no_qk_no_pv"] == 0
        assert hmma["double_qk"] == hmma["full"] * 3 // 2 and ex2["double_softmax"] == 2 * ex2["full"]
        assert ex2["no_softmax"] == 0 and hmma["no_softmax"] == hmma["full"] == d  # 8 n-tiles x d/16 + d/8 x 4
        ldsm = {v: sass.count(c, "LDSM") for v, c in of.items()}
        # ptxas loads each K fragment once for both QK passes: double_qk doubles the HMMAs only
        assert ldsm["double_qk"] == ldsm["full"] > ldsm["no_qk"] > ldsm["no_qk_no_pv"] > 0


def test_flash_bad_parameters_fail_with_one_line(compiled: Callable[[str, str, str], Path]) -> None:
    binary = compiled("sm_90a", "attention", "flash")
    proc = subprocess.run([str(binary), "--case", "tile_full", "--param", "head_dim=x"], capture_output=True, text=True)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "head_dim" in proc.stderr


def test_sdpa_lists_without_torch() -> None:
    assert listing([sys.executable, str(SDPA)]) == {"torch_sdpa": []}
    assert SDPA.read_text().startswith("#!/usr/bin/env python3\n") and "\nimport torch" not in SDPA.read_text()
    assert {c.id for c in FAMILIES["sdpa"]} == {"torch_sdpa"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("--case torch_sdpa --param bh=x", "is not a list of integers"),
        ("--case nope", "unknown case 'nope'"),
        ("--case torch_sdpa --param bh=1 --param seqlen=64 --param head_dim=96 --param dtype=0", "head_dim 64 or 128"),
        ("--case torch_sdpa --param bh=1", "missing --param"),
        ("", "no --case given"),
    ],
)
def test_sdpa_bad_parameters_fail_with_one_line(args: str, message: str) -> None:
    proc = subprocess.run([sys.executable, str(SDPA), *args.split()], capture_output=True, text=True)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr


# cycles per tile at head_dim 128, 2 CTAs/SM: softmax 400 of 1000, tensor core 500 of 1000
TILE = {
    "full": 1000.0,
    "no_softmax": 600.0,
    "no_qk": 750.0,
    "no_pv": 780.0,
    "no_qk_no_pv": 500.0,
    "double_softmax": 1350.0,
    "double_qk": 1260.0,
}
POINT = {"ctas_per_sm": 2, "head_dim": 128}


def real_shaped_run() -> pd.DataFrame:
    rows = [(f"tile_{v}", POINT, "cycles_per_tile", [c - 2, c, c + 2]) for v, c in TILE.items()]
    rows += [("softmax_share", POINT, "softmax_share", [39.0, 41.0]), ("tensor_share", POINT, "tensor_share", [50.5])]
    shape = {"bh": 132, "dtype": 0, "head_dim": 128, "seqlen": 4096}
    rows += [("flash_tflops", shape, "tflops", [200.0, 210.0, 220.0]), ("flash_tflops", shape, "ms", [5.0])]
    rows += [("torch_sdpa", shape, "tflops", [400.0, 420.0]), ("torch_sdpa", shape | {"dtype": 1}, "tflops", [430.0])]
    return raw_frame(rows, arch="sm_90a", category="attention", iterations=64)


def judged(raw: pd.DataFrame) -> dict[str, Figure]:
    return {f.name: f for f in figures.compute(CASES, {"raw": raw}, {}, "sm_90a", "NVIDIA H200")}


def split(found: dict[str, Figure], metric: str) -> Figure:
    (hit,) = [f for f in found.values() if f.case == "tile_full" and f.metric == metric]
    return hit


def test_decomposition_from_the_variants() -> None:
    found = judged(real_shaped_run())
    assert split(found, "softmax_share").value == pytest.approx(40.0)
    assert split(found, "tensor_share").value == pytest.approx(50.0)
    assert split(found, "qk_pv_removed").value == pytest.approx(47.0)
    assert split(found, "second_softmax_adds").value == pytest.approx(35.0)
    assert split(found, "second_qk_adds").value == pytest.approx(26.0)
    soft = split(found, "softmax_share")
    # its spread: every value the samples allow, full at 998..1002 and no_softmax at 598..602 cycles per tile
    assert soft.spread == pytest.approx(100 * ((1002 - 598) / 1002 - (998 - 602) / 998))
    assert soft.kind == "derived" and soft.points == (tables.canonical_params(POINT),) and soft.samples == 6
    assert "(full - no_softmax) / full" in soft.derivation
    # the share cases' own alternating measurements stay their own figures beside the derived ones
    assert found["softmax_share softmax_share"].value == pytest.approx(40.0)
    assert found["tensor_share tensor_share"].value == pytest.approx(50.5)


def test_throughput_beside_torch() -> None:
    found = judged(real_shaped_run())
    (ratio,) = [f for f in found.values() if f.metric == "over_torch_sdpa"]
    assert ratio.value == pytest.approx(210.0 / 410.0) and tables.parse_params(ratio.params)["dtype"] == 0
    assert ratio.spread == pytest.approx(220 / 400 - 200 / 420)
    # f16 was measured by torch alone: no ratio; ms is the same measurement as TFLOPS: no figure of its own
    assert len([f for f in found.values() if f.case == "torch_sdpa" and f.metric == "tflops"]) == 2
    assert not any(f.metric == "ms" for f in found.values())


def figures_frame(raw: pd.DataFrame) -> pd.DataFrame:
    found = figures.compute(CASES, {"raw": raw}, {}, "sm_90a", "NVIDIA H200")
    prov = {"gpu": "NVIDIA H200", "arch": "sm_90a", "category": "attention"}
    return tables.frame("figures", figures.rows(found, prov))


def test_view_on_a_real_shaped_run() -> None:
    raw = real_shaped_run()
    table = figures_frame(raw)
    html = dict(view.sections({"raw": raw, "figures": table, "reference": paper.reference(ROOT / "kernels")}))
    part = html["FlashAttention-2 tile loop: softmax vs tensor core per tile"]
    assert "<svg" in part and "paper sm_120" in part and "63.1" in part and ">40.00<" in part
    assert "tile_full QK + PV removed" in part and "tile_no_qk_no_pv cycles_per_tile" in part
    assert "s-unverified" in part  # every figure with its status
    assert "0.5122" in html["Whole-kernel TFLOPS: this kernel and PyTorch SDPA"]
    rows = view.decomposition(table)
    assert rows["metric"].tolist()[:2] == ["softmax_share", "softmax_share"]  # derived and alternating side by side


def test_committed_h200_split() -> None:
    paths = sorted((RUN / "sm_90a" / "attention").glob("*/raw.parquet"))
    found = judged(tables.read("raw", paths))
    shares = {f.params: f.value for f in found.values() if f.case == "tile_full" and f.metric == "softmax_share"}
    alternating = {f.params: f.value for f in found.values() if f.case == "softmax_share"}
    assert set(shares) == set(alternating) and len(shares) == 4
    for params, value in shares.items():  # the two ways of measuring the softmax share agree within 3 points
        assert abs(value - alternating[params]) < 3, params
    assert all(0 < v < 63.1 for v in shares.values())  # well below the seed paper's sm_120 share


@pytest.mark.parametrize("frames", [{}, {"raw": pd.DataFrame()}])
def test_view_without_measurements_says_so(frames: dict[str, pd.DataFrame]) -> None:
    for title, body in view.sections(frames):
        assert "no " in body and "measurements" in body, title


def run_flash(binary: Path, case: str, *params: str) -> list[dict]:
    args = [str(binary), "--case", case, "--repeats", "3"] + [a for p in params for a in ("--param", p)]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.gpu
def test_tile_variants_order_as_their_work(compiled: Callable[[str, str, str], Path]) -> None:
    binary = compiled("sm_90a", "attention", "flash")
    cycles = {v: run_flash(binary, f"tile_{v}", "head_dim=128", "ctas_per_sm=1")[0]["value"] for v in view.VARIANTS}
    assert cycles["double_qk"] > cycles["full"] > cycles["no_qk"] > cycles["no_qk_no_pv"] > 0
    assert cycles["double_softmax"] > cycles["full"] > cycles["no_softmax"]


@pytest.mark.gpu
def test_whole_kernel_is_checked_and_fast(compiled: Callable[[str, str, str], Path]) -> None:
    binary = compiled("sm_90a", "attention", "flash")
    records = run_flash(binary, "flash_tflops", "bh=132", "seqlen=1024", "head_dim=128", "dtype=0")
    tflops = next(r for r in records if r["metric"] == "tflops")
    assert 20 < tflops["value"] < 1000 and tflops["expect"]["sm__inst_executed_pipe_tensor.sum"] > 0
