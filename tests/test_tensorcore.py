"""The tensorcore category: every family compiles for sm_90a and sm_120a, its listing and SASS match the manifest,
each arch assembles each format to the expected tensor instruction (native, block-scaled or emulated), and the
report view turns real-shaped tables into its sections."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from conftest import ARCHS, ROOT
from smdissect import catalog, pipeline, sass, tables
from smdissect.views import tensorcore as view

FAMILIES = ["mma", "blockscale", "wgmma", "ldmatrix"]
CASES = catalog.load(ROOT / "kernels", "tensorcore")

# What each arch makes of the formats whose SASS differs between them (per mma of the long ilp-1 kernel).
FORMS = {
    ("sm_90a", "mma_b1_s32"): "native",
    ("sm_120a", "mma_b1_s32"): "emulated",
    ("sm_90a", "mma_s4_s32"): "emulated",
    ("sm_120a", "mma_s4_s32"): "emulated",
    ("sm_90a", "mma_e4m3_f32"): "emulated",
    ("sm_120a", "mma_e4m3_f32"): "native",
    ("sm_90a", "mma_f16_f32"): "native",
    ("sm_120a", "mma_f16_f32"): "native",
    ("sm_120a", "mxf4nvf4_e2m1"): "native",
    ("sm_90a", "mxf4nvf4_e2m1"): "absent",
    ("sm_90a", "wgmma_f16_ss"): "native",
    ("sm_120a", "wgmma_f16_ss"): "absent",
}


def sass_frames(compiled, arch: str, family: str, tmp_path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The sass and sass_checks tables of one family, made by the pipeline's own stage."""
    binary = compiled(arch, "tensorcore", family)
    cases = pipeline.family_cases(ROOT / "kernels", "tensorcore", family)
    out = tmp_path / arch / family
    pipeline.sass_tables(binary, binary.with_suffix(".json"), cases, arch, "test", out / "s.parquet",
                         out / "c.parquet", out / "controls.parquet")  # fmt: skip
    return tables.read("sass", out / "s.parquet"), tables.read("sass_checks", out / "c.parquet")


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("arch", ARCHS)
def test_listing_covers_the_manifest_and_the_sass(compiled, arch: str, family: str) -> None:
    binary = compiled(arch, "tensorcore", family)
    listing = [json.loads(line) for line in subprocess.run([binary, "--list"], capture_output=True, text=True,
                                                           check=True).stdout.splitlines()]  # fmt: skip
    assert {e["case"] for e in listing} == {c.id for c in CASES if c.family == family}
    kernels = sass.opcodes(sass.dump(binary, arch))
    for entry in listing:
        variants = {k["variant"]: k["ops"] for k in entry["kernels"] if k["params"].get("ilp") == 1}
        assert variants["long"] == 2 * variants["short"] > 0
        assert all(k["symbol"] in kernels for k in entry["kernels"])


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("arch", ARCHS)
def test_supported_cases_hold_their_sass_claims(compiled, arch: str, family: str, tmp_path: Path) -> None:
    _, checks = sass_frames(compiled, arch, family, tmp_path)
    runnable = {c.id for c in CASES if c.family == family and c.unsupported(arch) is None}
    failed = checks[checks["case"].isin(runnable) & (checks["verdict"] != "agree")]
    assert failed.empty, failed[["case", "kernel", "opcode", "expect", "count"]].to_string()


@pytest.mark.parametrize("arch", ARCHS)
def test_each_arch_assembles_each_format_as_expected(compiled, arch: str, tmp_path: Path) -> None:
    frames = [sass_frames(compiled, arch, f, tmp_path)[0] for f in ("mma", "blockscale", "wgmma")]
    forms = view._sass_forms(pd.concat(frames)).set_index("case")
    for (a, case), form in FORMS.items():
        if a == arch:
            assert forms.loc[case, "form"] == form, (arch, case, forms.loc[case].to_dict())
    emulated = forms[forms["form"] == "emulated"]
    assert (emulated["SASS instructions per mma"] > 1).all()


def test_block_scale_kinds_become_the_block_scale_instruction(compiled, tmp_path: Path) -> None:
    rows, _ = sass_frames(compiled, "sm_120a", "blockscale", tmp_path)
    scaled = rows[rows["case"].str.startswith("mx") & (rows["variant"] == "long")]
    for case, k in scaled.groupby("case"):
        ops = k["ops"].iloc[0]
        sf = k[k["opcode"].str.match(r"^[QO]MMA\.SF\b")].groupby("kernel")["count"].sum()
        assert (sf == ops).all() and len(sf) == k["kernel"].nunique(), case
        assert not k["opcode"].str.match(r"^[QO]MMA\.16").any(), f"{case}: an unscaled MMA"


def test_peak_is_the_datasheet_over_sms_and_clock() -> None:
    assert view._peak_per_cycle("sm_90a", "wgmma_f16_ss") == pytest.approx(989.4e12 / (132 * 1830e6))
    assert view._peak_per_cycle("sm_90a", "mma_sp_f16_f32") == pytest.approx(2 * 989.4e12 / (132 * 1830e6))
    assert view._peak_per_cycle("sm_120a", "mma_f16_f32") is None


def raw_frame(points: list[tuple[str, dict, str, float]]) -> pd.DataFrame:
    """A raw table with the pipeline's columns, one sample per (case, params, metric, value)."""
    rows = [{"gpu": "NVIDIA H200", "gpu_uuid": "GPU-0", "arch": "sm_90a", "driver": "580", "cuda": "13.0",
             "run_id": "t", "category": "tensorcore", "case": c, "params": json.dumps(p, sort_keys=True,
             separators=(",", ":")), "sm_clock_before_mhz": 1980.0, "sm_clock_after_mhz": 1980.0, "family": "mma",
             "metric": m, "unit": "", "repeat": 0, "value": v, "cycles": 1e5, "iterations": 64,
             "clock_mhz": 1980.0, "smid": 0} for c, p, m, v in points]  # fmt: skip
    return pd.DataFrame(rows)


def test_view_sections_on_real_shaped_frames(compiled, tmp_path: Path) -> None:
    sync, wg = {"ilp": 1, "warps": 1}, {"batch": 4, "ilp": 1, "n": 256, "warpgroups": 2}
    raw = raw_frame([
        ("mma_f16_f32", sync, "latency", 33.0), ("mma_f16_f32", sync, "throughput", 0.03),
        ("mma_f16_f32", {"ilp": 8, "warps": 16}, "throughput", 0.5),
        ("mma_f16_f32", {"ilp": 8, "warps": 16}, "flops", 2048.0),
        ("mma_f16_f32", {"ilp": 8, "warps": 16}, "tflops", 535.0),
        ("wgmma_f16_ss", wg, "throughput", 0.0075), ("wgmma_f16_ss", wg, "flops", 3932.0),
        ("wgmma_f16_ss", wg, "tflops", 1027.0),
    ])  # fmt: skip
    sass_rows = pd.concat([sass_frames(compiled, "sm_90a", f, tmp_path)[0] for f in ("mma", "wgmma")])
    table = view.per_format(raw, sass_rows).set_index("case")
    assert table.loc["mma_f16_f32", "issue interval (cycle)"] == pytest.approx(4 / 0.5)
    assert table.loc["wgmma_f16_ss", "% of peak"] == pytest.approx(100 * 3932 / (989.4e12 / (132 * 1830e6)))
    assert table.loc["mma_f16_f32", "form"] == "native"
    titled = dict(view.sections({"raw": raw, "sass": sass_rows}))
    assert "1.92x mma.sync" in titled["mma.sync vs wgmma"]
    assert "<svg" in titled["Latency per format"] and "<svg" in titled["wgmma throughput over N and warpgroups"]
    assert "not run: needs sm_120a" not in titled["SASS form per case (native or emulated)"]


def test_view_without_gpu_tables_says_so(compiled, tmp_path: Path) -> None:
    static = sass_frames(compiled, "sm_120a", "blockscale", tmp_path)[0]
    titled = dict(view.sections({"sass": static}))
    assert "not measured" in titled["Tensor-core formats"]
    assert "not run: needs sm_120a" in titled["SASS form per case (native or emulated)"]
    assert view.sections({}) and all(isinstance(h, str) for _, h in view.sections({"raw": pd.DataFrame()}))
