"""The attention category: manifest, the flash family built for sm_90a and sm_120a with its SASS against the
manifest, the torch SDPA script's protocol without torch, and the report view on frames shaped like a real run."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from conftest import ARCHS, ROOT, assert_sass_claims, listing, raw_frame
from smdissect import catalog, sass
from smdissect.views import attention as view

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
TILE = {"full": 1000.0, "no_softmax": 600.0, "no_qk": 750.0, "no_pv": 780.0, "no_qk_no_pv": 500.0,
        "double_softmax": 1350.0, "double_qk": 1260.0}  # fmt: skip
POINT = {"ctas_per_sm": 2, "head_dim": 128}


def real_shaped_run() -> pd.DataFrame:
    rows = [(f"tile_{v}", POINT, "cycles_per_tile", [c - 2, c, c + 2]) for v, c in TILE.items()]
    rows += [("softmax_share", POINT, "softmax_share", [39.0, 41.0]), ("tensor_share", POINT, "tensor_share", [50.5])]
    shape = {"bh": 132, "dtype": 0, "head_dim": 128, "seqlen": 4096}
    rows += [("flash_tflops", shape, "tflops", [200.0, 210.0, 220.0]), ("flash_tflops", shape, "ms", [5.0])]
    rows += [("torch_sdpa", shape, "tflops", [400.0, 420.0]), ("torch_sdpa", shape | {"dtype": 1}, "tflops", [430.0])]
    return raw_frame(rows, arch="sm_90a", category="attention", iterations=64)


def test_decomposition_from_the_variants() -> None:
    (row,) = view.decomposition(real_shaped_run()).to_dict("records")
    assert row["full (cycle/tile)"] == 1000 and row["no_qk_no_pv (cycle/tile)"] == 500
    assert row["softmax share (%)"] == pytest.approx(40.0) and row["tensor share (%)"] == pytest.approx(50.0)
    assert row["QK + PV removed (%)"] == pytest.approx(47.0)
    assert row["2nd softmax adds (%)"] == pytest.approx(35.0) and row["2nd QK adds (%)"] == pytest.approx(26.0)
    assert row["softmax share, alternating (%)"] == pytest.approx(40.0)
    assert row["tensor share, alternating (%)"] == pytest.approx(50.5)


def test_throughput_beside_torch() -> None:
    table = view.throughput(real_shaped_run()).set_index("dtype")
    assert table.loc["bf16", "flash / torch"] == pytest.approx(210.0 / 410.0)
    assert math.isnan(table.loc["f16", "flash (TFLOPS)"]) and table.loc["f16", "torch SDPA (TFLOPS)"] == 430.0


def test_view_on_a_real_shaped_run() -> None:
    html = dict(view.sections({"raw": real_shaped_run()}))
    split = html["FlashAttention-2 tile loop: softmax vs tensor core per tile"]
    assert "<svg" in split and "paper sm_120" in split and "63.1" in split and ">40<" in split
    assert "0.5122" in html["Whole-kernel TFLOPS: this kernel and PyTorch SDPA"]


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
