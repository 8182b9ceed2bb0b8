"""archs: the per-arch and per-GPU facts, checked against the manifests, the H200 run's measurements and the
datasheets they cite."""

from __future__ import annotations

import pandas as pd
import pytest
from helpers import ROOT, RUN
from smdissect.analysis import coverage
from smdissect.analysis.derived import gemm, tensorcore
from smdissect.core import archs, catalog, features, files
from smdissect.measure import device

H200 = RUN / "sm_90a"  # the frozen H200 run (fixtures/run)
ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a", "sm_120a", "sm_121a")


def manifest_pipes() -> dict[str, dict[str, str]]:
    """Per category: each case's manifest `pipe` (its own or its defaults')."""
    kernels = ROOT / "kernels"
    return {
        category: {c.id: c.pipe for c in catalog.load(kernels, category) if c.pipe}
        for category in catalog.categories(kernels)
    }


def h200_peaks() -> pd.DataFrame:
    """Each H200 latency/pipelines case's best throughput (median per params, max over params) with its pipe."""
    pipes, rows = manifest_pipes(), []
    for raw_path in sorted([*H200.glob("latency/*/raw.parquet"), *H200.glob("pipelines/*/raw.parquet")]):
        raw = pd.read_parquet(raw_path, columns=["category", "case", "params", "metric", "value"])
        thr = raw[raw["metric"] == "throughput"]
        best = thr.groupby(["category", "case", "params"])["value"].median().groupby(["category", "case"]).max()
        for (category, case), value in best.items():
            rows.append({"category": category, "case": case, "pipe": pipes[category].get(case), "best": value})
    return pd.DataFrame(rows)


def test_every_manifest_pipe_has_a_rate_on_sm_90a_or_a_documented_reason() -> None:
    named = {p for cases in manifest_pipes().values() for p in cases.values()}
    assert {"fma", "alu", "xu", "fp64", "lsu", "fmaheavy+fmalite", "tensor", "uniform"} <= named
    for pipe in named:
        rate = archs.pipe_rate("sm_90a", pipe)
        assert (rate is not None) != (pipe in archs.NO_PUBLISHED_RATE), pipe
        assert rate is None or 0 < rate <= archs.ISSUE_RATE, pipe
    assert all(len(why) > 20 for why in archs.NO_PUBLISHED_RATE.values())


def test_h200_measurements_never_exceed_the_published_pipe_rate_and_reach_it() -> None:
    peaks = h200_peaks().dropna(subset=["pipe"])
    peaks["rate"] = peaks["pipe"].map(lambda p: archs.pipe_rate("sm_90a", p))
    rated = peaks.dropna(subset=["rate"])
    assert len(rated) >= 60 and set(rated["pipe"]) >= {"fma", "alu", "xu", "fp64", "lsu", "fmaheavy+fmalite"}
    over = rated[rated["best"] > 1.01 * rated["rate"]]
    assert over.empty, over.to_string()
    reached = rated.groupby("pipe").apply(lambda g: g["best"].max() / g["rate"].iloc[0], include_groups=False)
    assert (reached > 0.95).all(), reached.to_string()  # each rate is a peak something reaches, not a loose bound


def test_pipe_rates_are_the_guides_columns() -> None:
    expected = {  # warp instructions per cycle per SM: the guides' results per clock / 32 (half2: / 2 more)
        "sm_80": {"fma": 2.0, "fp16": 4.0, "fp64": 1.0, "alu": 2.0, "xu": 0.5, "lsu": 1.0},
        "sm_89": {"fma": 4.0, "fmaheavy+fmalite": 2.0, "fp64": 1 / 16, "alu": 2.0, "xu": 0.5, "lsu": 1.0},
        "sm_90a": {"fma": 4.0, "fmaheavy+fmalite": 4.0, "fp64": 2.0, "alu": 2.0, "xu": 0.5, "lsu": 1.0},
        "sm_100a": {"fma": 4.0, "fp64": 2.0},
        "sm_120a": {"fma": 4.0, "fmaheavy+fmalite": 2.0, "fp64": 1 / 16, "xu": 0.5, "lsu": 1.0},
    }
    for arch, rates in expected.items():
        for pipe, rate in rates.items():
            assert archs.pipe_rate(arch, pipe) == pytest.approx(rate), (arch, pipe)
    assert archs.pipe_rate("sm_120a", "alu") is None  # IADD3 at 128 but LOP3 at 64: the guide names no pipe
    assert archs.pipe_rate("sm_80", "fmaheavy+fmalite") is None and archs.pipe_rate("sm_90a", "fp16") is None
    assert archs.pipe_rate("sm_121a", "fma") == archs.pipe_rate("sm_120a", "fma")
    assert archs.pipe_rate("sm_75", "fma") is None and archs.pipe_rate("gfx90a", "fma") is None
    assert archs.pipe_rate("sm_90a", "no_such_pipe") is None


def test_issue_rate_is_the_schedulers() -> None:
    assert archs.ISSUE_RATE == archs.SCHEDULERS * 1.0 == 4.0
    assert all((archs.pipe_rate(a, p) or 0) <= archs.ISSUE_RATE for a in ARCHS for p in archs.PIPE_ROWS)


def test_tensor_peak_is_the_datasheet_over_sms_and_clock() -> None:
    f16 = archs.tensor_peak("sm_90a", "f16")
    assert f16 == pytest.approx(4096, rel=1e-3) and f16 == pytest.approx(989.4e12 / (132 * 1830e6))
    assert archs.tensor_peak("sm_90", "bf16") == f16 and archs.tensor_peak("sm_90a", "f16", acc="f16") == f16
    assert archs.tensor_peak("sm_90a", "f16", sparse=True) == pytest.approx(2 * f16)
    assert archs.tensor_peak("sm_90a", "tf32") == pytest.approx(2048, rel=1e-3)
    assert archs.tensor_peak("sm_90a", "e4m3") == archs.tensor_peak("sm_90a", "e5m2") == pytest.approx(8192, rel=1e-3)
    assert archs.tensor_peak("sm_90a", "f64") == pytest.approx(256, rel=1e-3)  # 66.9 TFLOPS at 1980 MHz, not 1830
    assert archs.tensor_peak("sm_90a", "f64", sparse=True) is None and archs.tensor_peak("sm_90a", "s4") is None
    assert archs.tensor_peak("sm_80", "f16") == pytest.approx(2048, rel=1e-3)
    assert archs.tensor_peak("sm_80", "b1") == pytest.approx(32768, rel=1e-3)
    assert archs.tensor_peak("sm_80", "f64") == pytest.approx(128, rel=1e-3)
    assert archs.tensor_peak("sm_120a", "mxf4nvf4") == pytest.approx(4096, rel=1e-3)
    assert archs.tensor_peak("sm_120a", "f16", acc="f16") == pytest.approx(1024, rel=1e-3)
    assert archs.tensor_peak("sm_89", "s8") == pytest.approx(2048, rel=1e-3)


def test_sku_dependent_and_unpublished_tensor_peaks_are_none() -> None:
    for arch in ("sm_89", "sm_120a"):  # FP32 accumulate: half rate on GeForce, full on L40S
        assert archs.tensor_peak(arch, "f16") is None and archs.tensor_peak(arch, "tf32") is None
    assert archs.tensor_peak("sm_120a", "mxf8f6f4") is None  # FP8 with FP32 accumulate: whitepaper and CUTLASS differ
    assert archs.tensor_peak("sm_100a", "f16") is None and archs.tensor_peak("sm_121a", "e2m1") is None  # no clock
    assert archs.tensor_peak("sm_89", "tf32", gpu="NVIDIA L40S") == pytest.approx(183e12 / (142 * 2520e6))
    assert archs.tensor_peak("sm_89", "f16", gpu="NVIDIA GeForce RTX 4090") == pytest.approx(512, rel=1e-3)
    assert archs.tensor_peak("sm_120a", "f16", gpu="NVIDIA GeForce RTX 5090") == pytest.approx(512, rel=1e-3)
    assert archs.tensor_peak("sm_120a", "f16", acc="f16", gpu="NVIDIA GeForce RTX 5090") == pytest.approx(1024, 1e-3)


def test_h200_tensor_measurements_stay_under_the_peak() -> None:
    paths = sorted((H200 / "tensorcore").glob("wgmma*/raw.parquet"))
    raw = pd.concat(pd.read_parquet(p, columns=["case", "params", "metric", "value"]) for p in paths)
    flops = raw[raw["metric"] == "flops"].groupby(["case", "params"])["value"].median().groupby("case").max()
    bounded = 0
    for case, best in flops.items():
        fmt, sparse, _ = tensorcore.tensor_format(str(case))
        peak = archs.tensor_peak("sm_90a", fmt, sparse, gpu="NVIDIA H200")
        assert peak is None or best <= 1.01 * peak, case  # a wgmma under its datasheet rate (b1 has none)
        bounded += peak is not None
    assert bounded >= 3


def test_gpu_models_and_name_matching() -> None:
    h200 = archs.gpu_model("NVIDIA H200")
    assert h200 is not None and h200.name == "H200" and h200.sms == 132 and h200.dram_gbs == 4800
    assert h200.tensor_mhz == 1830 and h200.tensor_per_cycle("f16") == pytest.approx(4096, rel=1e-3)
    names = {
        "NVIDIA H200 NVL": "H200 NVL",
        "NVIDIA H100 80GB HBM3": "H100",
        "NVIDIA H100 PCIe": "H100 PCIe",
        "NVIDIA H100 NVL": "H100 NVL",
        "NVIDIA A100-SXM4-80GB": "A100-SXM4-80GB",
        "NVIDIA A100-PCIE-40GB": "A100",
        "NVIDIA L40S": "L40S",
        "NVIDIA L4": "L4",
        "NVIDIA GeForce RTX 4090": "RTX 4090",
        "NVIDIA B200": "B200",
        "NVIDIA GeForce RTX 5090": "RTX 5090",
        "NVIDIA RTX PRO 5000 Blackwell": "RTX PRO 5000 Blackwell",
        "NVIDIA GB10": "GB10",
    }
    for device_name, key in names.items():
        model = archs.gpu_model(device_name)
        assert model is not None and model.name == key, device_name
    for other in ("NVIDIA L40", "NVIDIA GB200", "NVIDIA RTX PRO 5000 Blackwell Generation Laptop GPU", "Tesla V100"):
        assert archs.gpu_model(other) is None, other  # a key must match a whole token, and laptops are other chips
    assert archs.dram_peak_gbs("NVIDIA H100 PCIe") == 2000 and archs.dram_peak_gbs("NVIDIA H100 80GB HBM3") == 3350
    assert archs.dram_peak_gbs("NVIDIA A100-PCIE-40GB") is None and archs.dram_peak_gbs("unknown") is None
    for model in archs.MODELS:
        assert model.source and archs.arch_version(model.arch) in archs.ARITHMETIC, model.name
        assert all(v > 0 for v in model.tensor_tflops.values()), model.name


def test_derived_peak_says_it_was_derived() -> None:
    peak = archs.derived_peak("sm_90a", 100, 1500.0, fmt="f16")
    assert peak is not None and peak.derived and peak.how.startswith("derived: 100 SMs")
    assert peak.per_second == pytest.approx(100 * archs.tensor_peak("sm_90a", "f16") * 1500e6)
    issue = archs.derived_peak("sm_90a", 132, 1980.0, pipe="fma")
    assert issue is not None and issue.per_second == pytest.approx(132 * 4.0 * 1980e6)
    assert archs.derived_peak("sm_100a", 148, 1965.0, fmt="f16") is None  # no published per-SM rate
    sheet = archs.device_peak("NVIDIA H200", "sm_90a", 132, 1980.0, "bf16")
    assert sheet is not None and not sheet.derived and sheet.per_second == pytest.approx(989.4e12)
    unknown = archs.device_peak("NVIDIA H300", "sm_90a", 150, 2000.0, "bf16")
    assert unknown is not None and unknown.derived


def test_each_arch_table_has_one_home() -> None:
    assert catalog.FEATURES is features.FEATURES
    assert device.ARCH_SPECIFIC is archs.ARCH_SPECIFIC
    assert features.FEATURES["wgmma"] == {90} and 120 in features.FEATURES["f8f6f4"] and (12, 0) in archs.ARCH_SPECIFIC
    assert archs.arch_version("sm_90a") == 90 and archs.arch_version("sm_120f") == 120
    assert archs.arch_version("compute_100a") == 100 and archs.arch_version("gfx942") is None


def test_gemm_percent_at_clock_uses_the_products_peak() -> None:
    per_cycle, sms, _ = gemm.peak_at_clock("sm_90a", "NVIDIA H200", "gemm_bf16")
    assert sms == 132 and per_cycle * sms * 1830e6 / 1e12 == pytest.approx(989.4, rel=1e-3)
    per_cycle, sms, _ = gemm.peak_at_clock("sm_90a", "NVIDIA H100 PCIe", "gemm_bf16")
    assert sms == 114 and per_cycle * sms * 1620e6 / 1e12 == pytest.approx(756, rel=1e-3)
    assert gemm.peak_at_clock("sm_90a", "some GPU", "gemm_bf16") is None


def test_the_kernels_feature_header_is_the_feature_table() -> None:
    """kernels/common/features.cuh is FEATURES as preprocessor tests: one fact, written by `smdissect features`."""
    header = (ROOT / features.FEATURES_HEADER).read_text()
    assert header == features.features_header(), "run: python3 -m smdissect features"
    assert "#define SMD_HAS_tma (SMD_SM == 90 || SMD_SM == 100" in header and "#define SMD_HAS_wgmma 1" in header


def test_a_case_is_static_exactly_where_its_arch_lacks_a_feature() -> None:
    kernels = ROOT / "kernels"
    plan = coverage.arch_plan(catalog.load_all(kernels, catalog.categories(kernels)), ["sm_80", "sm_90a", "sm_120a"])
    why = plan.set_index(["arch", "case"])["reason"]
    assert why[("sm_80", "bulk_depth")] and not why[("sm_90a", "bulk_depth")]
    assert why[("sm_80", "mma_e4m3_f32")] == "sm_80 lacks fp8" and not why[("sm_120a", "mma_e4m3_f32")]
    assert why[("sm_120a", "wgmma_f16_f32_ss")] == "sm_120a lacks wgmma" and not why[("sm_80", "mma_f16_f32")]


def test_the_readme_plans_every_arch_from_the_manifests() -> None:
    kernels = ROOT / "kernels"
    plan = coverage.arch_plan(catalog.load_all(kernels, catalog.categories(kernels)), list(archs.CHECKED_ARCHS))
    start, end = files.markers("archs")
    block = f"{start}\n{coverage.arch_markdown(plan)}\n{end}"
    assert block in (ROOT / "README.md").read_text(), "run: python3 -m smdissect archs --readme README.md"
