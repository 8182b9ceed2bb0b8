"""The gemm category: both CUTLASS families compile for sm_90a and sm_120a, their listing and SASS match the manifest
(TMA + wgmma on sm_90a, the block-scaled NVFP4 MMA on sm_120a), bad parameters fail in one line, and the report
view turns real-shaped tables into its sections. The torch_gemm script (PyTorch's GEMM per tensor format) lists
without torch, agrees with its manifest entries, fails bad parameters in one line, and its records give one figure
per point at the SM clock NVML read; on a GPU each case runs, checked, under the datasheet peak of its format."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest
from helpers import ARCHS, ROOT, assert_sass_claims, listing
from smdissect.analysis import figures
from smdissect.analysis.figure_model import Figure, judge
from smdissect.core import archs, catalog, tables
from smdissect.measure import device, protocol, run, sass
from smdissect.pages import markup
from smdissect.pages.views import gemm as view

CASES = catalog.load(ROOT / "kernels", "gemm")
FAMILIES = sorted(catalog.families(CASES))
# The kernel each CUTLASS family measures, and the opcodes that prove its path on the arch it is built for.
PATHS = {
    "cutlass_sm90": ("sm_90a", "cutlass_gemm_bf16", ("HGMMA", "UTMALDG", "WARPGROUP.ARRIVE")),
    "cutlass_sm120": ("sm_120a", "cutlass_gemm_nvfp4", ("OMMA.SF", "UTMALDG")),
}
TORCH_GEMM = ROOT / "kernels" / "gemm" / "torch_gemm.py"
TORCH_CASES = {c.id: c for c in catalog.families(CASES)["torch_gemm"]}


def test_profiled_launches_stay_within_the_ncu_budget() -> None:
    for case in CASES:
        if not catalog.family_settings(ROOT / "kernels", "gemm", case.family)["profile"]:
            continue
        assert [set(s) for s in case.profiled_sweeps()] == [set(case.sweep)], case.id
        assert len(case.profiled_points()) == 1, case.id


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("family", FAMILIES)
def test_family_lists_its_cases_and_its_sass_holds(
    compiled: Callable[[str, str, str], Path], arch: str, family: str
) -> None:
    assert_sass_claims(compiled(arch, "gemm", family), arch, catalog.families(CASES)[family])


@pytest.mark.parametrize("family", sorted(PATHS))
def test_each_path_is_real_on_its_arch_and_empty_on_the_other(
    compiled: Callable[[str, str, str], Path], family: str
) -> None:
    home, symbol, opcodes = PATHS[family]
    binary = compiled(home, "gemm", family)
    for arch in ARCHS:
        counts = sass.opcodes(sass.dump(binary, arch))[symbol]
        found = {op: sass.count(counts, op) for op in opcodes}
        if arch == home:
            assert all(found.values()) and sum(counts.values()) > 500, found
        else:  # compiled out: no tensor or TMA instruction, a few instructions of an empty kernel
            assert not any(found.values()) and sum(counts.values()) < 64, found


def test_sm90_kernel_is_the_wgmma_tma_cooperative_configuration(compiled: Callable[[str, str, str], Path]) -> None:
    counts = sass.opcodes(sass.dump(compiled("sm_90a", "gemm", "cutlass_sm90"), "sm_90a"))["cutlass_gemm_bf16"]
    assert any(op.startswith("HGMMA.64") for op in counts), sorted(counts)
    assert sass.count(counts, "UTMALDG.3D.MULTICAST") >= 1  # the 2x1x1 cluster shares B tiles by multicast
    assert sass.count(counts, "UTMASTG") >= 1  # the TMA epilogue
    # wgmma batches, not one fence per wgmma (what ptxas falls back to when a call, e.g. assert, splits the pipeline)
    assert sass.count(counts, "WARPGROUP.DEPBAR") < sass.count(counts, "HGMMA")


@pytest.mark.parametrize(
    "args",
    [
        ["--case", "nope"],
        ["--case", "gemm_bf16", "--param", "mn=1000", "--param", "k=64"],
        ["--case", "gemm_bf16", "--param", "k=4096"],
    ],
)
def test_bad_parameters_fail_with_one_line(compiled: Callable[[str, str, str], Path], args: list[str]) -> None:
    binary = compiled("sm_90a", "gemm", "cutlass_sm90")
    proc = subprocess.run([str(binary), *args], capture_output=True, text=True)
    assert proc.returncode != 0 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


UNITS = {
    "tflops_cutlass": "TFLOPS",
    "tflops_cublas": "TFLOPS",
    "tflops": "TFLOPS",
    "pct_of_peak_cutlass": "%",
    "pct_of_peak_cublas": "%",
    "ratio_to_cublas": "x",
    "max_rel_err": "fraction",
}  # as the binaries print them


def raw_frame(
    rows: list[tuple[str, dict[str, int], str, list[float], str]],
    clock: float = 1830.0,
    gpu: str = "NVIDIA H200",
    arch: str = "sm_90a",
) -> pd.DataFrame:
    """A raw table as the run stage writes it: one row per sample, the SM clock read after each launch."""
    out = []
    for case, params, metric, samples, variant in rows:
        for i, v in enumerate(samples):
            out.append(
                {
                    "gpu": gpu,
                    "arch": arch,
                    "category": "gemm",
                    "case": case,
                    "params": tables.canonical_params(params),
                    "family": "cutlass_sm90",
                    "metric": metric,
                    "unit": UNITS[metric],
                    "repeat": i,
                    "value": v,
                    "cycles": 0.0,
                    "iterations": 1,
                    "clock_mhz": clock,
                    "smid": -1,
                    "variant": variant,
                    "expect": "",
                }
            )
    return tables.frame("raw", out)


def ncu_frame(kind: str, rows: list[dict]) -> pd.DataFrame:
    """A stalls or pipes table of one profiled point, both libraries."""
    base = {
        "gpu": "NVIDIA H200",
        "arch": "sm_90a",
        "category": "gemm",
        "case": "gemm_bf16",
        "params": tables.canonical_params({"k": 8192, "mn": 8192}),
        "family": "cutlass_sm90",
    }
    return tables.frame(kind, [base | r for r in rows])


def bf16_rows(mn: int, k: int, cutlass: float, cublas: float) -> list:
    """The records of one gemm_bf16 point, as the binary emits them (two samples each)."""
    p = {"k": k, "mn": mn}
    return [
        ("gemm_bf16", p, "tflops_cutlass", [cutlass, cutlass], "cutlass"),
        ("gemm_bf16", p, "pct_of_peak_cutlass", [100 * cutlass / 989.4] * 2, "cutlass"),
        ("gemm_bf16", p, "tflops_cublas", [cublas, cublas], "cublas"),
        ("gemm_bf16", p, "pct_of_peak_cublas", [100 * cublas / 989.4] * 2, "cublas"),
        ("gemm_bf16", p, "ratio_to_cublas", [cutlass / cublas] * 2, "cutlass"),
        ("gemm_bf16", p, "max_rel_err", [0.004], "cutlass"),
    ]


def judged(raw: pd.DataFrame, arch: str = "sm_90a", gpu: str = "NVIDIA H200") -> dict[str, Figure]:
    return {f.name: f for f in figures.compute(CASES, {"raw": raw}, {}, arch, gpu)}


def one(found: dict[str, Figure], metric: str, params: str = "") -> Figure:
    """The figure of a metric (at `params`, for one with a figure per point)."""
    (hit,) = [f for f in found.values() if f.metric == metric and (not params or f.params == params)]
    return hit


def figures_frame(raw: pd.DataFrame) -> pd.DataFrame:
    found = figures.compute(CASES, {"raw": raw}, {}, "sm_90a", "NVIDIA H200")
    return tables.frame("figures", figures.rows(found, {"gpu": "NVIDIA H200", "arch": "sm_90a", "category": "gemm"}))


def test_pct_of_peak_at_the_launch_clock() -> None:
    # at 1830 MHz (the clock the datasheet's 989.4 TFLOPS assume) both percentages agree; at 1500 MHz, the power cap's
    # clock, the same TFLOPS are 1830/1500 times more of what the tensor cores could do
    at_sheet = judged(raw_frame(bf16_rows(8192, 8192, 700.0, 750.0)))
    assert one(at_sheet, "pct_of_peak_at_clock_cutlass").value == pytest.approx(100 * 700 / 989.4, rel=2e-4)
    assert one(at_sheet, "pct_of_peak_cutlass").value == pytest.approx(100 * 700 / 989.4)
    capped = judged(raw_frame(bf16_rows(8192, 8192, 700.0, 750.0), clock=1500.0))
    pct = one(capped, "pct_of_peak_at_clock_cutlass")
    assert pct.value == pytest.approx(100 * 700e12 / (132 * 4096 * 1500e6), rel=2e-4)
    assert pct.kind == "derived" and pct.points == ('{"k":8192,"mn":8192}',) and "1500 MHz" in pct.derivation
    cublas = one(capped, "pct_of_peak_at_clock_cublas")
    assert cublas.value == pytest.approx(100 * 750e12 / (132 * 4096 * 1500e6), rel=2e-4)


def test_cutlass_over_cublas_at_their_peaks() -> None:
    found = judged(raw_frame(bf16_rows(8192, 8192, 700.0, 750.0) + bf16_rows(4096, 4096, 600.0, 500.0)))
    assert found["gemm_bf16 peak tflops_cutlass"].params == '{"k":8192,"mn":8192}'
    ratio = found["gemm_bf16 CUTLASS over cuBLAS at their peaks"]
    assert ratio.value == pytest.approx(700 / 750) and ratio.params == '{"k":8192,"mn":8192}'
    assert found["gemm_bf16 ratio_to_cublas at k=4096, mn=4096"].value == pytest.approx(600 / 500)  # per shape
    # a ceiling still rising at the largest shape is not a ceiling: the plateau check over mn and k
    rising = judged(raw_frame(bf16_rows(4096, 4096, 300.0, 300.0) + bf16_rows(8192, 4096, 600.0, 600.0)))
    status, reason = judge(rising["gemm_bf16 peak tflops_cutlass"].checks)
    assert status == "contradicted" and "not saturated" in reason, reason


def test_view_on_a_real_shaped_run() -> None:
    raw = raw_frame(bf16_rows(8192, 8192, 700.0, 750.0) + bf16_rows(4096, 4096, 600.0, 500.0), clock=1500.0)
    stalls = ncu_frame(
        "stalls",
        [
            {"variant": v, "kernel": k, "reason": r, "value": x, "share": x / total}
            for v, k, total, parts in (
                ("cutlass", "cutlass_gemm_bf16", 3.0, {"wait": 1.5, "math_pipe_throttle": 1.0, "long_scoreboard": 0.5}),
                ("cublas", "sm90_xmma_gemm", 2.0, {"wait": 0.5, "math_pipe_throttle": 1.5}),
            )
            for r, x in parts.items()
        ],
    )
    pipes = ncu_frame(
        "pipes",
        [
            {
                "variant": "cutlass",
                "kernel": "cutlass_gemm_bf16",
                "pipe": "tensor_op_gmma",
                "inst_executed": 8.4e6,
                "pct_of_peak": 91.0,
            },
            {
                "variant": "cutlass",
                "kernel": "cutlass_gemm_bf16",
                "pipe": "alu",
                "inst_executed": 1e5,
                "pct_of_peak": 2.0,
            },
        ],
    )
    table = figures_frame(raw)
    html = dict(view.sections({"raw": raw, "stalls": stalls, "pipes": pipes, "figures": table}))
    body = html["GEMM throughput: CUTLASS vs cuBLAS"]
    assert "<svg" in body and "gemm_bf16 peak tflops_cutlass" in body and "70.75" in body  # % of the datasheet peak
    assert markup.number(100 * 700e12 / (132 * 4096 * 1500e6)) in body  # 86.31: at the 1500 MHz the launch ran at
    assert "0.9333" in body and "s-unverified" in body
    rows = view.throughput(table)
    assert rows["figure"].iloc[0] == "gemm_bf16 peak tflops_cutlass"  # the ceilings first, then shape by shape
    assert rows["params"].iloc[2] == '{"k":4096,"mn":4096}'
    prof = html["Profiled GEMM launches: stall reasons and pipes (ncu)"]
    assert "<svg" in prof and "math_pipe_throttle" in prof and "tensor_op_gmma" in prof
    top = view.stall_breakdown(stalls).groupby("library")["reason"].first()
    assert top["CUTLASS"] == "wait" and top["cuBLAS"] == "math_pipe_throttle"
    assert list(view.pipe_breakdown(pipes)["pipe"]) == ["tensor_op_gmma", "alu"]


def test_nvfp4_rows_have_no_cublas_partner() -> None:
    rows = [
        ("gemm_nvfp4", {"k": 4096, "mn": 8192}, "tflops", [900.0, 910.0], "cutlass"),
        ("gemm_nvfp4", {"k": 4096, "mn": 8192}, "max_rel_err", [0.003], "cutlass"),
    ]
    gpu = "NVIDIA RTX PRO 5000 Blackwell"
    found = judged(raw_frame(rows, clock=2000.0, gpu=gpu, arch="sm_120a"), "sm_120a", gpu)
    pct = one(found, "pct_of_peak_at_clock_cutlass")
    per_cycle = archs.tensor_peak("sm_120a", "e2m1")  # the RTX 5090's per-SM rate, the PRO 5000's 110 SMs
    assert pct.value == pytest.approx(100 * 905e12 / (110 * per_cycle * 2000e6), rel=1e-3)
    assert not any("cublas" in name for name in found)
    assert one(found, "max_rel_err").value == pytest.approx(0.003)


@pytest.mark.parametrize(
    "frames", [{}, {"raw": pd.DataFrame()}, {"raw": raw_frame([]), "stalls": ncu_frame("stalls", [])}]
)
def test_view_without_measurements_says_so(frames: dict[str, pd.DataFrame]) -> None:
    for title, body in view.sections(frames):
        assert "no " in body and "measurements" in body, title


@pytest.mark.gpu
def test_cutlass_matches_cublas_and_reaches_the_tensor_cores(compiled: Callable[[str, str, str], Path]) -> None:
    binary = compiled("sm_90a", "gemm", "cutlass_sm90")
    out = subprocess.run(
        [str(binary), "--case", "gemm_bf16", "--param", "mn=4096", "--param", "k=4096", "--repeats", "5"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    records = {r["metric"]: r for r in map(json.loads, out.splitlines())}
    assert records["max_rel_err"]["value"] < 0.01
    assert 300 < records["tflops_cutlass"]["value"] < 989.4 * 1980 / 1830
    assert 0.5 < records["ratio_to_cublas"]["value"] < 2
    assert records["tflops_cutlass"]["expect"]["sm__inst_executed_pipe_tensor_op_gmma.sum"] == 4096**3 / 65536


@pytest.fixture(scope="module")
def script() -> ModuleType:
    """kernels/gemm/torch_gemm.py as a module: its formats (it imports torch only to run)."""
    spec = importlib.util.spec_from_file_location("torch_gemm", TORCH_GEMM)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_torch_gemm_lists_its_formats_without_torch() -> None:
    text = TORCH_GEMM.read_text()
    assert text.startswith("#!/usr/bin/env python3\n") and "\nimport torch" not in text
    assert listing([sys.executable, str(TORCH_GEMM)]) == {case: [] for case in TORCH_CASES}


def test_torch_gemm_cases_name_their_format_peak_and_requirement(script: ModuleType) -> None:
    assert set(script.FORMATS) == set(TORCH_CASES)
    assert not catalog.family_settings(ROOT / "kernels", "gemm", "torch_gemm")["profile"]
    for case in TORCH_CASES.values():
        fmt = script.FORMATS[case.id]
        assert case.peak == f"tensor:{case.id.removeprefix('torch_gemm_').removeprefix('sp_')}", case.id
        assert fmt.sparse == case.id.startswith("torch_gemm_sp_"), case.id  # checks.limit's sparse peak
        assert archs.tensor_peak("sm_90a", case.peak.removeprefix("tensor:"), fmt.sparse, gpu="NVIDIA H200"), case.id
        assert case.features == ((fmt.feature,) if fmt.feature else ()), case.id  # the script checks what requires says
        assert (fmt.unit == "TOPS") == (case.id == "torch_gemm_s8"), case.id
        assert case.kind == "timed" and case.unprofiled and case.explain["sass"] and not case.sass_expect, case.id
        assert case.figures == {"tflops": "each", "flops": "peak", "ms": "none", "max_rel_err": "none"}, case.id
        assert all(n >= script.CHECKED_ROWS and n % script.ALIGN == 0 for n in case.sweep["mn"]), case.id
    fp8 = [TORCH_CASES["torch_gemm_e4m3"], TORCH_CASES["torch_gemm_e5m2"]]
    for case in fp8:
        assert case.unsupported("sm_80") == "sm_80 lacks fp8"  # a static row with the reason there
        assert not any(case.unsupported(arch) for arch in ("sm_89", "sm_90a", "sm_120a"))
    others = [c for c in TORCH_CASES.values() if c not in fp8]
    assert all(c.unsupported(arch) is None for c in others for arch in archs.CHECKED_ARCHS)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("--case torch_gemm_bf16 --param mn=x", "is not a list of integers"),
        ("--case torch_gemm_bf16 --param mn=4100", "a multiple of 16"),
        ("--case torch_gemm_e4m3 --param mn=32", "mn >= 64"),
        ("--case torch_gemm_s8", "missing --param mn"),
        ("--case torch_gemm_fp4 --param mn=4096", "unknown case 'torch_gemm_fp4'"),
    ],
)
def test_torch_gemm_bad_parameters_fail_with_one_line(args: str, message: str) -> None:
    proc = subprocess.run([sys.executable, str(TORCH_GEMM), *args.split()], capture_output=True, text=True)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr


def test_torch_gemm_records_give_a_figure_per_point_at_the_nvml_clock(capsys: pytest.CaptureFixture[str]) -> None:
    # (case, mn, ms per call, unit, SM clock NVML read after the calls), emitted as torch_gemm.py emits them
    calls = [
        ("torch_gemm_bf16", 4096, 0.25, "TFLOPS", 1980.0),
        ("torch_gemm_bf16", 8192, 1.6, "TFLOPS", 1755.0),
        ("torch_gemm_s8", 16384, 9.0, "TOPS", 1605.0),
    ]
    for case, mn, ms, unit, mhz in calls:
        protocol.emit(case, {"mn": mn}, "tflops", unit, [2 * mn**3 / (ms * 1e-3) / 1e12] * 3, "torch", mhz)
        protocol.emit(case, {"mn": mn}, "ms", "ms", [ms] * 3, "torch", mhz)
        protocol.emit(case, {"mn": mn}, "max_rel_err", "fraction", [0.002], "torch")
    records = protocol.read(capsys.readouterr().out, "torch_gemm")
    base = {"gpu": "NVIDIA H200", "arch": "sm_90a", "category": "gemm", "family": "torch_gemm"}
    found = judged(tables.frame("raw", run.sample_rows(records, base))).values()
    rates = {(f.case, f.params): f for f in found if f.metric == "tflops"}
    assert sorted(rates) == [("torch_gemm_bf16", '{"mn":4096}'), ("torch_gemm_bf16", '{"mn":8192}'),
                             ("torch_gemm_s8", '{"mn":16384}')]  # fmt: skip
    bf16 = rates[("torch_gemm_bf16", '{"mn":8192}')]
    assert bf16.value == pytest.approx(2 * 8192**3 / 1.6e-3 / 1e12) and bf16.clock_mhz == 1755.0
    s8 = rates[("torch_gemm_s8", '{"mn":16384}')]
    assert s8.unit == "TOPS" and s8.clock_mhz == 1605.0
    assert not [f for f in found if f.metric in ("ms", "max_rel_err")]  # the same measurement, no figure of its own


@pytest.mark.gpu
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch: pip install -e '.[torch]'")
@pytest.mark.parametrize("case_id", sorted(TORCH_CASES))
def test_torch_gemm_runs_checked_under_the_datasheet_peak(script: ModuleType, case_id: str) -> None:
    gpu, case, fmt = device.query(0), TORCH_CASES[case_id], script.FORMATS[case_id]
    mn = min(case.sweep["mn"])
    args = [sys.executable, str(TORCH_GEMM), "--case", case_id, "--param", f"mn={mn}", "--repeats", "3"]
    path = os.pathsep.join([str(ROOT / "workflow"), os.environ.get("PYTHONPATH", "")])  # as the DAG's jobs see it
    proc = subprocess.run(args, capture_output=True, text=True, env=os.environ | {"PYTHONPATH": path})
    if case.unsupported(gpu.arch):  # the script refuses in one line what the manifest keeps static
        assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert f"needs a GPU with {fmt.feature}" in proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    records = {r["metric"]: r for r in protocol.read(proc.stdout, case_id)}
    assert records["max_rel_err"]["value"] <= fmt.tolerance  # the output check passed
    rate, ms = records["tflops"], records["ms"]
    assert rate["unit"] == fmt.unit and rate["value"] == pytest.approx(2 * mn**3 / (ms["value"] * 1e-3) / 1e12)
    assert rate["clock_mhz"] > 0  # NVML's SM clock, read after each timed call
    per_sm = records["flops"]  # the same rate per SM and cycle at that clock
    assert per_sm["value"] == pytest.approx(rate["value"] * 1e12 / (gpu.sm_count * rate["clock_mhz"] * 1e6), rel=0.01)
    per_cycle = archs.tensor_peak(gpu.arch, case.peak.removeprefix("tensor:"), fmt.sparse, gpu=gpu.name)
    model = archs.gpu_model(gpu.name)
    mhz = max(rate["clock_mhz"], (model.boost_mhz if model else None) or 0)  # the datasheet rate at the top clock
    peak = per_cycle * gpu.sm_count * mhz * 1e6 / 1e12 if per_cycle else math.inf
    assert min(rate["samples"]) > 0 and max(rate["samples"]) < peak, (rate["samples"], peak)
