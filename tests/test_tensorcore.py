"""The tensorcore category: every family compiles for sm_90a and sm_120a, its listing and SASS match the manifest,
each arch assembles each format to the expected tensor instruction (native, block-scaled or emulated), and the
report view turns real-shaped tables into its sections."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from helpers import ARCHS, ROOT, RUN, raw_frame
from smdissect.analysis import figures
from smdissect.analysis.derived import tensorcore as derived
from smdissect.analysis.figure_model import Figure, judge
from smdissect.core import catalog, tables
from smdissect.measure import sass
from smdissect.pages.views import tensorcore as view
from smdissect.stages import static as static_stage

WGMMA = ["wgmma", "wgmma_fp8", "wgmma_int", "wgmma_sp"]
FAMILIES = ["mma", "blockscale", *WGMMA, "ldmatrix"]
CASES = catalog.load(ROOT / "kernels", "tensorcore")
TENSORCORE = RUN / "sm_90a" / "tensorcore"

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
    ("sm_90a", "wgmma_f16_f32_ss"): "native",
    ("sm_120a", "wgmma_f16_f32_ss"): "absent",
    ("sm_90a", "wgmma_e4m3_f32_ss"): "native",
    ("sm_120a", "wgmma_e4m3_f32_ss"): "absent",
    ("sm_90a", "wgmma_s8_s32_rs"): "native",
    ("sm_90a", "wgmma_b1_s32_ss"): "native",
    ("sm_90a", "wgmma_sp_e4m3_f32_ss"): "native",
}


def sass_frames(compiled, arch: str, family: str, tmp_path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The sass and sass_checks tables of one family, made by the pipeline's own stage."""
    binary = compiled(arch, "tensorcore", family)
    cases = static_stage.family_cases(ROOT / "kernels", "tensorcore", family)
    out = tmp_path / arch / family
    static_stage.sass_tables(
        binary,
        binary.with_suffix(".json"),
        cases,
        arch,
        "test",
        out / "s.parquet",
        out / "c.parquet",
        out / "controls.parquet",
    )
    return tables.read("sass", out / "s.parquet"), tables.read("sass_checks", out / "c.parquet")


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("arch", ARCHS)
def test_listing_covers_the_manifest_and_the_sass(compiled, arch: str, family: str) -> None:
    binary = compiled(arch, "tensorcore", family)
    listing = [
        json.loads(line)
        for line in subprocess.run([binary, "--list"], capture_output=True, text=True, check=True).stdout.splitlines()
    ]
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
    frames = [sass_frames(compiled, arch, f, tmp_path)[0] for f in ("mma", "blockscale", *WGMMA)]
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
    dense = 989.4e12 / (132 * 1830e6)
    fp8 = 1978.9e12 / (132 * 1830e6)
    assert derived.peak_per_cycle("sm_90a", "wgmma_f16_f32_ss") == pytest.approx(dense)
    assert derived.peak_per_cycle("sm_90a", "wgmma_f16_f16_ss") == pytest.approx(dense)  # no f16/f16 figure apart
    assert derived.peak_per_cycle("sm_90a", "wgmma_e5m2xe4m3_f32_ss") == pytest.approx(fp8)  # A's format: FP8
    assert derived.peak_per_cycle("sm_90a", "wgmma_sp_e4m3_f32_ss") == pytest.approx(2 * fp8)
    assert derived.peak_per_cycle("sm_90a", "wgmma_sp_tf32_f32_ss") == pytest.approx(dense)  # 2 x tf32's half
    assert derived.peak_per_cycle("sm_90a", "wgmma_b1_s32_ss") is None
    assert derived.peak_per_cycle("sm_90a", "mma_sp_f16_f32") == pytest.approx(2 * dense)
    assert derived.peak_per_cycle("sm_90a", "mma_e5m2_f32") == pytest.approx(fp8)
    assert derived.peak_per_cycle("sm_120a", "mma_f16_f32") is None  # GeForce: FP32-accumulate rate per SKU
    # Hopper's datasheets give no INT4 or b1 peak (A100's did): nothing bounds those on sm_90a
    assert derived.peak_per_cycle("sm_90a", "mma_s4_s32") is None
    assert derived.peak_per_cycle("sm_90a", "mma_b1_s32") is None
    assert derived.peak_per_cycle("sm_80", "mma_b1_s32") == pytest.approx(4992e12 / (108 * 1410e6))
    assert derived.peak_per_cycle("sm_90a", "ldmatrix_x4") is None


def test_tensor_cases_name_their_bound_and_their_plateau() -> None:
    for case in CASES:
        fmt, sparse, _ = derived.tensor_format(case.id)
        if fmt is None:  # ldmatrix and tcgen05.ld/st: no FLOP; tcgen05.ld/st sweep no ILP or warps
            assert case.peak is None and case.saturate == (() if case.id.startswith("tcgen05") else ("ilp", "warps"))
            continue
        # the bound the checks apply is the one % of peak uses, but for the fp8 mma.sync that sm_90a emulates with
        # HMMA: bounded by the f16 rate there (no sm_89/sm_120 datasheet gives either for FP32 accumulate)
        bound = "f16" if case.id in ("mma_e4m3_f32", "mma_e5m2_f32") else fmt
        assert case.peak == f"tensor:{bound}", case.id
        assert sparse == ("sp" in case.id.split("_")), case.id
        axes = {"wgmma": ("n", "warpgroups", "batch"), "tcgen05": ("n",)}.get(case.id.split("_")[0], ("ilp", "warps"))
        assert case.saturate == axes, case.id
    by_id = {c.id: c for c in CASES}
    assert by_id["mma_e4m3_f32"].built_from == ("mma_f16_f32",)  # sm_90a emulates it with HMMA
    assert by_id["mma_s4_s32"].built_from == ("mma_s8_s32",)  # 2 IMMA.S8 per mma on both archs


def frame(rows: list[tuple[str, dict, str, list[float]]], units: dict[str, str]) -> pd.DataFrame:
    """A raw table as an H200 run writes it (helpers.raw_frame), each metric in its unit."""
    parts = [
        raw_frame([r for r in rows if r[2] == m], unit=u, arch="sm_90a", category="tensorcore", clock_mhz=1795.0)
        for m, u in units.items()
    ]
    return pd.concat(parts, ignore_index=True)


UNITS = {"latency": "cycle", "throughput": "op/cycle/SM", "flops": "FLOP/cycle/SM", "tflops": "TFLOPS"}
SWEEP = [(i, w) for i in (1, 2, 4, 8) for w in (1, 4, 8, 16)]


def mma_rows(case: str, flop: float, latency: float, rate) -> list:
    """An mma.sync case over ilp x warps: `rate(ilp, warps)` op/cycle/SM (three samples a point, 0.1% apart)."""
    rows = [(case, {"ilp": 1, "warps": 1}, "latency", [latency] * 3)]
    for ilp, warps in SWEEP:
        r, p = rate(ilp, warps), {"ilp": ilp, "warps": warps}
        rows += [
            (case, p, "throughput", [r * 0.999, r, r * 1.001]),
            (case, p, "flops", [r * flop] * 3),
            (case, p, "tflops", [r * flop * 132 * 1795e6 / 1e12] * 3),
        ]
    return rows


def wgmma_rows(case: str) -> list:
    """wgmma over n and warpgroups: one warpgroup 3000 FLOP/cycle/SM, two at the 4096 peak."""
    rows = []
    for n in (64, 256):
        rows.append((case, {"batch": 1, "ilp": 1, "n": n, "warpgroups": 1}, "latency", [85.0 + n] * 3))
        for batch, groups in ((1, 1), (1, 2), (4, 1), (4, 2)):
            p, flops = {"batch": batch, "ilp": 1, "n": n, "warpgroups": groups}, 3000.0 if groups == 1 else 4096.0
            rows += [
                (case, p, "flops", [flops] * 3),
                (case, p, "throughput", [flops / (2 * 64 * n * 16)] * 3),
                (case, p, "tflops", [flops * 132 * 1795e6 / 1e12] * 3),
            ]
    return rows


def real_shaped_run() -> pd.DataFrame:
    """mma.sync f16 levelling at one HMMA per 6 cycles per sub-partition, an fp8 mma.sync whose HMMAs left the timed
    loop (4-cycle latency, above the e4m3 peak), the INT4 emulation still rising at 16 warps, and wgmma at the peak."""
    # as in the H200 run, the best point (ilp 2, 16 warps) sits on the plateau, 0.3% above the rest of it
    rows = mma_rows(
        "mma_f16_f32", 4096, 24.0, lambda i, w: min(i * w / 24, 2 / 3) * (1.003 if (i, w) == (2, 16) else 1)
    )
    rows += mma_rows("mma_e4m3_f32", 8192, 4.0, lambda i, w: 1.03 if (i, w) == (4, 16) else min(i * w / 4, 1.0))
    rows += mma_rows("mma_s4_s32", 16384, 157.0, lambda i, w: 0.0033 * w)
    rows += wgmma_rows("wgmma_f16_f32_ss")
    return frame(rows, UNITS)


def judged(raw: pd.DataFrame) -> list[Figure]:
    return figures.compute(CASES, {"raw": raw}, {}, "sm_90a", "NVIDIA H200")


def by_name(found: list[Figure]) -> dict[str, Figure]:
    return {f.name: f for f in found}


def test_derived_figures_stand_at_the_peak_flops_point() -> None:
    found = by_name(judged(real_shaped_run()))
    dense = 989.4e12 / (132 * 1830e6)
    peak = found["mma_f16_f32 peak flops"]
    interval = found["mma_f16_f32 issue interval"]
    assert interval.kind == "derived" and interval.points == (peak.params,)
    rate = 2 / 3 * 1.003  # at the peak point
    assert interval.value == pytest.approx(4 / rate)
    assert interval.spread == pytest.approx(4 / (rate * 0.999) - 4 / (rate * 1.001))  # the samples' range
    assert found["mma_f16_f32 % of the f16 peak"].value == pytest.approx(100 * peak.value / dense)
    assert found["mma_f16_f32 throughput at peak flops"].params == peak.params  # the manifest's {at: flops}
    # wgmma: one wgmma per SM every 2 x 64 x n x 16 / 4096 cycles at the peak point; throughput and TFLOPS derived
    wg = found["wgmma_f16_f32_ss peak flops"]
    n = tables.parse_params(wg.params)["n"]
    assert found["wgmma_f16_f32_ss issue interval"].value == pytest.approx(2 * 64 * n * 16 / 4096)
    assert found["wgmma_f16_f32_ss % of the f16 peak"].value == pytest.approx(100 * 4096 / dense)
    assert found["wgmma_f16_f32_ss throughput at peak flops"].kind == "derived"
    assert "wgmma_f16_f32_ss peak throughput" not in found and "wgmma_f16_f32_ss peak tflops" not in found  # rule: none
    gap = found["wgmma f16 over mma.sync f16 FLOP/cycle/SM"]
    assert gap.value == pytest.approx(1 / rate) and set(gap.points) == {wg.params, peak.params}
    # no datasheet INT4 peak on Hopper: no % of peak for the emulated s4
    assert "mma_s4_s32 issue interval" in found and not any(k.startswith("mma_s4_s32 %") for k in found)


def test_the_checks_catch_a_hoisted_fp8_mma_and_an_unsaturated_emulation() -> None:
    found = by_name(judged(real_shaped_run()))
    status = {k: judge(f.checks) for k, f in found.items()}
    assert (
        status["mma_e4m3_f32 peak flops"][0] == "contradicted"
        and "f16 tensor peak" in status["mma_e4m3_f32 peak flops"][1]
    )
    assert (
        status["mma_e4m3_f32 latency"][0] == "contradicted"
        and "mma_f16_f32 latency" in status["mma_e4m3_f32 latency"][1]
    )
    # still rising at the sweep's end, which its manifest explains: a lower bound, never verified
    assert status["mma_s4_s32 peak flops"][0] == "unverified" and "not saturated" in status["mma_s4_s32 peak flops"][1]
    for name in ("mma_f16_f32 peak flops", "mma_f16_f32 latency", "wgmma_f16_f32_ss peak flops"):
        assert status[name][0] != "contradicted", (name, status[name])
    plateau = [c for c in found["wgmma_f16_f32_ss peak flops"].checks if c.name == "plateau"]
    assert [c.verdict for c in plateau] == ["agree"] and "tensor peak" in plateau[0].detail


def figures_frame(found: list[Figure]) -> pd.DataFrame:
    prov = {"gpu": "NVIDIA H200", "arch": "sm_90a", "category": "tensorcore"}
    return tables.frame("figures", figures.rows(found, prov))


def test_view_sections_on_real_shaped_frames(compiled, tmp_path: Path) -> None:
    raw = real_shaped_run()
    table = figures_frame(judged(raw))
    sass_rows = pd.concat([sass_frames(compiled, "sm_90a", f, tmp_path)[0] for f in ("mma", *WGMMA)])
    rows = view.per_format(table)
    assert list(dict.fromkeys(rows["case"])) == list(dict.fromkeys(raw["case"]))  # run order
    first = rows[rows["case"] == "mma_f16_f32"]["metric"].tolist()
    assert first == ["latency", "issue_interval", "throughput", "flops", "pct_of_peak", "tflops"]
    titled = dict(view.sections({"raw": raw, "sass": sass_rows, "figures": table}))
    assert "1.50x" in titled["mma.sync vs wgmma"] and "wgmma f16 over mma.sync f16" in titled["mma.sync vs wgmma"]
    formats = titled["Tensor-core formats"]
    assert "mma_f16_f32 issue interval" in formats and "5.982" in formats and "s-contradicted" in formats
    assert "<svg" in titled["Latency per format"] and "<svg" in titled["wgmma throughput over N and warpgroups"]
    assert "<svg" in titled["Share of the format's dense peak"]
    assert "not run: needs sm_120a" not in titled["SASS form per case (native or emulated)"]


def test_committed_h200_tensor_figures() -> None:
    found = by_name(judged(tables.read("raw", sorted(TENSORCORE.glob("*/raw.parquet")))))
    # every mma.sync format issues one mma every ~6 cycles per sub-partition: 2/3 of the dense f16/bf16/tf32/s8 peak
    for case in ("mma_f16_f32", "mma_bf16_f32", "mma_tf32_f32", "mma_s8_s32"):
        assert 5.9 < found[f"{case} issue interval"].value < 6.1, case
    fmt = {"mma_f16_f32": "f16", "mma_bf16_f32": "bf16", "mma_tf32_f32": "tf32", "mma_s8_s32": "s8"}
    for case, name in fmt.items():
        assert 65 < found[f"{case} % of the {name} peak"].value < 69, case
    # wgmma reaches the datasheet's dense rate in every format it has one for, A from shared memory or registers
    dense = [c.id for c in CASES if c.id.startswith("wgmma") and "_sp_" not in c.id and "b1" not in c.id]
    for case in dense:
        assert found[f"{case} % of the {derived.tensor_format(case)[0]} peak"].value == pytest.approx(100, abs=2)
    # 2:4 sparse: A and B from shared memory stop at 8/9 of the sparse peak, where they read 128 B/cycle/SM (the
    # shared-memory bandwidth); A from registers leaves B alone at 128 B/cycle/SM and reaches it
    for case in ("wgmma_sp_f16_f32_ss", "wgmma_sp_e4m3_f32_ss", "wgmma_sp_s8_s32_ss", "wgmma_sp_tf32_f32_ss"):
        share = found[f"{case} % of the {derived.tensor_format(case)[0]} sparse peak"].value
        assert share == pytest.approx(100 * 8 / 9, abs=1), case
        assert found[f"{case} shared-memory operand bytes at peak flops"].value == pytest.approx(128, rel=0.01)
    assert found["wgmma_sp_f16_f32_rs % of the f16 sparse peak"].value == pytest.approx(100, abs=2)
    # b1: BMMA at the same issue interval, 2 x 16 x 8 x 256 OPs each; no Hopper datasheet peak bounds it
    b1 = found["mma_b1_s32 peak flops"]
    assert b1.value == pytest.approx(2 * 16 * 8 * 256 * 4 / 6, rel=0.01)
    assert not [c for c in b1.checks if c.name in ("bound", "ceiling")]
    # fp8 mma.sync on sm_90a: converts and two HMMA per step, kept in the timed loop (session 5's kernel let ptxas
    # hoist them and timed 4 FADDs: 4 cycles, 103% of the e4m3 peak); the f16 rate bounds it
    fp8, f16 = found["mma_e4m3_f32 latency"], found["mma_f16_f32 latency"]
    assert fp8.value > 2 * f16.value and judge(fp8.checks)[0] != "contradicted"
    (ceiling,) = [c for c in found["mma_e4m3_f32 peak flops"].checks if c.name == "ceiling"]
    assert ceiling.verdict == "disagree" and "emulat" in ceiling.explained  # under the f16 peak: the emulation's
    assert found["mma_e4m3_f32 peak flops"].value < 0.5 * found["mma_f16_f32 peak flops"].value


def test_committed_peaks_stand_beside_the_library_gemm_of_their_format() -> None:
    rows = view.library(pd.read_parquet(TENSORCORE / "figures.parquet")).set_index("case")
    for case, lib in (("wgmma_e4m3_f32_ss", "e4m3"), ("wgmma_s8_s32_ss", "s8"), ("wgmma_tf32_f32_ss", "tf32"),
                      ("wgmma_bf16_f32_ss", "bf16"), ("mma_f64_m16n8k8", "f64"), ("wgmma_e5m2xe4m3_f32_ss", "e5m2"),
                      ("wgmma_sp_f16_f32_ss", "sp_f16"), ("wgmma_sp_f16_f32_rs", "sp_f16")):  # fmt: skip
        floor = rows.loc[case, "library on the same card (floor check)"]
        assert floor.startswith("agree: ") and f"gemm/torch_gemm_{lib} " in floor, (case, floor)


def test_view_without_gpu_tables_says_so(compiled, tmp_path: Path) -> None:
    static = sass_frames(compiled, "sm_120a", "blockscale", tmp_path)[0]
    titled = dict(view.sections({"sass": static}))
    assert "not measured" in titled["Tensor-core formats"]
    assert "not run: needs sm_120a" in titled["SASS form per case (native or emulated)"]
    assert view.sections({}) and all(isinstance(h, str) for _, h in view.sections({"raw": pd.DataFrame()}))
