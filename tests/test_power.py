"""The power category: manifest, real builds for sm_90a and sm_120a with their SASS against the manifest, the power
model's least squares on frames shaped like a real run, the clock and power-limit settings and the soak's figures
with their checks, the report view, and the H200's recorded samples."""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Callable
from pathlib import Path

import helpers
import numpy as np
import pandas as pd
import pytest
from helpers import ARCHS, FIXTURES, ROOT, assert_sass_claims
from smdissect.analysis import figures
from smdissect.analysis.figure_model import REFERENCE, Figure, judge
from smdissect.core import catalog, tables
from smdissect.core.errors import SmdissectError
from smdissect.measure import power, sass
from smdissect.pages import markup
from smdissect.pages.views import power as view

CASES = catalog.load(ROOT / "kernels", "power")
SWEEP = [1, 2, 4, 8, 16, 33, 66, 99, 132]
RECORDED = FIXTURES / "captured" / "power-raw.parquet"
SW_POWER_CAP, GPU_IDLE = 0x4, 0x1


def test_manifest_is_unprofiled_and_fits_the_run_budget() -> None:
    settings = catalog.family_settings(ROOT / "kernels", "power", "power")
    assert settings["profile"] is False and settings["timeout"] <= 300
    points = sum(len(c.points()) for c in CASES if c.id not in (power.SOAK, power.LIMITS))
    (soak,) = [c for c in CASES if c.id == power.SOAK]
    soak_s = sum(p["seconds"] for p in soak.points())
    assert soak_s <= 20, "the soak may hold the GPU 20 s at most"
    assert points * 2.0 + soak_s < 90, "each point holds about 2 s of sustained work: the category must stay under 90 s"
    busy = [c for c in CASES if c.id not in (power.IDLE, power.SOAK, power.LIMITS)]
    assert {c.id for c in busy} == set(power.PRECISIONS)
    assert all(min(c.sweep["sms"]) >= 1 for c in busy)
    assert next(c for c in CASES if c.id == power.IDLE).sweep == {"sms": [0]}


@pytest.mark.parametrize("arch", ARCHS)
def test_family_lists_its_cases_and_its_sass_holds(compiled: Callable[[str, str, str], Path], arch: str) -> None:
    binary = compiled(arch, "power", "power")
    kernels = assert_sass_claims(binary, arch, CASES)
    assert kernels[power.IDLE] == []
    counts = sass.opcodes(sass.dump(binary, arch))
    expected = {
        "power_fp32_ffma": "FFMA",
        "power_fp16_hfma2": "HFMA2",
        "power_bf16_mma": "HMMA",
        "power_fp64_dfma": "DFMA",
    }
    for case_id, opcode in expected.items():
        (k,) = kernels[case_id]
        observed = counts[k["symbol"]]
        assert sass.count(observed, opcode) >= k["ops"] > 0, f"{arch} {case_id}: {opcode} missing"
    (soak,) = kernels[power.SOAK]  # the soak runs the bf16 load with clock stamps: the same HMMA per pass
    assert soak["symbol"] == "soak_kernel<MmaBf16>" and soak["ops"] == kernels["power_bf16_mma"][0]["ops"]
    assert kernels[power.LIMITS] == []


def test_bad_parameters_fail_with_one_line(compiled: Callable[[str, str, str], Path]) -> None:
    binary = compiled("sm_90a", "power", "power")
    for args in (
        ["--case", "power_fp32_ffma", "--param", "sms=many"],
        ["--repeats", "0"],
        ["--bogus"],
        ["--case", "power_soak", "--param", "seconds=twenty"],
    ):
        proc = subprocess.run([str(binary), *args], capture_output=True, text=True)
        assert proc.returncode != 0 and len(proc.stderr.strip().splitlines()) == 1, args


# Known models: board power = intercept + slope x SMs, TFLOPS = rate x SMs.
MODELS = {
    "power_fp32_ffma": (160.0, 1.10, 0.50),
    "power_fp16_hfma2": (165.0, 1.30, 1.00),
    "power_bf16_mma": (170.0, 2.90, 3.00),
    "power_fp64_dfma": (158.0, 1.60, 0.25),
}


def raw_frame(
    models: dict[str, tuple[float, float, float]],
    throttled: dict[tuple[str, int], float] | None = None,
    noise: float = 0.0,
) -> pd.DataFrame:
    """A raw table as the power family's run writes it: per point one power, energy and tflops sample, NVML
    readings, a throttle mask; `throttled` pulls given points below the line by that many watts (power cap)."""
    throttled = throttled or {}
    rows = []

    def add(case: str, sms: int, metric: str, unit: str, samples: list[float]) -> None:
        rows.extend(
            {
                "gpu": "NVIDIA H200",
                "case": case,
                "params": tables.canonical_params({"sms": sms}),
                "metric": metric,
                "unit": unit,
                "repeat": i,
                "value": v,
                "clock_mhz": 1980.0,
                "iterations": 1,
                "cycles": 0.0,
                "smid": -1,
            }
            for i, v in enumerate(samples)
        )

    for case, (intercept, slope, rate) in models.items():
        for j, sms in enumerate(SWEEP):
            drop = throttled.get((case, sms), 0.0)
            watts = intercept + slope * sms + noise * (-1) ** j - drop
            add(case, sms, "power", "W", [watts])
            add(case, sms, "energy", "J", [watts * 1.02])
            add(case, sms, "tflops", "TFLOPS", [rate * sms])
            add(case, sms, "power_nvml", "W", [watts - 1, watts + 1, watts])
            add(case, sms, "sm_clock_nvml", "MHz", [1980.0, 1980.0, 1965.0 if drop else 1980.0])
            add(case, sms, "temperature", "C", [40.0 + sms / 10] * 3)
            add(case, sms, "throttle_reasons", "bitmask", [float(SW_POWER_CAP if drop else 0)])
    add(power.IDLE, 0, "power", "W", [78.0])
    add(power.IDLE, 0, "energy", "J", [79.6])
    add(power.IDLE, 0, "sm_clock_nvml", "MHz", [345.0, 345.0])
    add(power.IDLE, 0, "throttle_reasons", "bitmask", [float(GPU_IDLE)])
    return tables.frame("raw", rows)


def test_points_collect_each_sample() -> None:
    pts = power.points(raw_frame(MODELS, throttled={("power_bf16_mma", 132): 40.0}))
    assert len(pts) == 4 * len(SWEEP) + 1
    top = pts[(pts["case"] == "power_bf16_mma") & (pts["sms"] == 132)].iloc[0]
    assert top["power_w"] == pytest.approx(170 + 2.9 * 132 - 40) and top["tflops"] == pytest.approx(396)
    assert top["throttle"] == SW_POWER_CAP and top["reasons"] == "sw_power_cap" and top["throttled"]
    assert top["sm_clock_mhz"] == 1980.0 and top["power_nvml_w"] == pytest.approx(top["power_w"])
    idle = pts[pts["case"] == power.IDLE].iloc[0]
    assert idle["sms"] == 0 and idle["reasons"] == "gpu_idle" and not idle["throttled"] and math.isnan(idle["tflops"])


def test_fit_recovers_known_coefficients() -> None:
    fit = power.fits(power.points(raw_frame(MODELS, noise=0.3))).set_index(["precision", "samples"])
    for case, (intercept, slope, _) in MODELS.items():
        row = fit.loc[(power.PRECISIONS[case], "all")]
        assert row["n"] == len(SWEEP)
        assert row["intercept_w"] == pytest.approx(intercept, abs=0.5)
        assert row["slope_w_per_sm"] == pytest.approx(slope, abs=0.01)
        assert 0.999 < row["r2"] < 1 and row["rms_w"] == pytest.approx(0.3, abs=0.05)
        assert row["idle_w"] == 78.0


def test_throttled_samples_bend_the_line_and_are_left_out() -> None:
    bent = {("power_bf16_mma", 99): 30.0, ("power_bf16_mma", 132): 60.0}
    pts = power.points(raw_frame(MODELS, throttled=bent))
    fit = power.fits(pts).set_index(["precision", "samples"])
    everything, clean = fit.loc[("bf16 mma.sync", "all")], fit.loc[("bf16 mma.sync", "unthrottled")]
    assert everything["n"] == 9 and clean["n"] == 7
    assert everything["slope_w_per_sm"] < 2.8 and everything["r2"] < 0.999
    assert clean["intercept_w"] == pytest.approx(170.0) and clean["slope_w_per_sm"] == pytest.approx(2.9)
    assert clean["r2"] == pytest.approx(1.0) and clean["rms_w"] == pytest.approx(0.0, abs=1e-9)
    best = power.best_fit(power.fits(pts)).set_index("precision")
    assert best.loc["bf16 mma.sync", "samples"] == "unthrottled"
    residual = power.residuals(pts, power.fits(pts))
    at = pts.index[(pts["case"] == "power_bf16_mma") & (pts["sms"] == 132)][0]
    assert residual[at] == pytest.approx(-60.0) and residual[pts["case"] == power.IDLE].isna().all()


def test_a_line_needs_two_distinct_sm_counts() -> None:
    assert math.isnan(power.line(np.array([4.0]), np.array([100.0]))["slope_w_per_sm"])
    assert math.isnan(power.line(np.array([4.0, 4.0]), np.array([100.0, 101.0]))["intercept_w"])
    exact = power.line(np.array([0.0, 10.0, 20.0]), np.array([50.0, 60.0, 70.0]))
    assert (
        exact["intercept_w"] == pytest.approx(50) and exact["slope_w_per_sm"] == pytest.approx(1) and exact["r2"] == 1
    )


def test_efficiency_at_the_most_sms() -> None:
    eff = power.efficiency(power.points(raw_frame(MODELS))).set_index("precision")
    fp32 = 0.5 * 132 / (160 + 1.1 * 132)
    assert eff.loc["fp32 FFMA", "sms"] == 132 and eff.loc["fp32 FFMA", "tflops_per_w"] == pytest.approx(fp32)
    assert eff.loc["bf16 mma.sync", "vs_fp32"] == pytest.approx(3.0 * 132 / (170 + 2.9 * 132) / fp32)
    assert "idle" not in eff.index


def judged(raw: pd.DataFrame, others: dict | None = None) -> dict[str, Figure]:
    return {f.name: f for f in figures.compute(CASES, {"raw": raw}, others or {}, "sm_90a", "NVIDIA H200")}


def figures_frame(raw: pd.DataFrame) -> pd.DataFrame:
    found = figures.compute(CASES, {"raw": raw}, {}, "sm_90a", "NVIDIA H200")
    prov = {"gpu": "NVIDIA H200", "arch": "sm_90a", "category": "power"}
    return tables.frame("figures", figures.rows(found, prov))


def test_derived_figures_recover_the_model() -> None:
    found = judged(raw_frame(MODELS, throttled={("power_bf16_mma", 132): 40.0}))
    for case, (intercept, slope, rate) in MODELS.items():
        assert found[f"{case} P_infrastructure (fit intercept)"].value == pytest.approx(intercept)
        assert found[f"{case} k per active SM (fit slope)"].value == pytest.approx(slope)
        assert found[f"{case} R^2 of the power fit"].value == pytest.approx(1.0)
        assert found[f"{case} P_infrastructure minus the idle card"].value == pytest.approx(intercept - 78.0)
        top = 170 + 2.9 * 132 - 40 if case == "power_bf16_mma" else intercept + slope * 132
        share = found[f"{case} P_infrastructure share of the board power at sms=132"]
        assert share.value == pytest.approx(100 * intercept / top)
        assert found[f"{case} TFLOPS/W at sms=132"].value == pytest.approx(rate * 132 / top)
    bf16 = found["power_bf16_mma P_infrastructure (fit intercept)"]
    assert len(bf16.points) == len(SWEEP) - 1 and "unthrottled" in bf16.derivation  # the capped point is left out
    fp32 = 0.5 * 132 / (160 + 1.1 * 132)
    vs = found["power_fp64_dfma TFLOPS/W over power_fp32_ffma at sms=132"]
    assert vs.value == pytest.approx(0.25 * 132 / (158 + 1.6 * 132) / fp32)
    assert "power_fp32_ffma TFLOPS/W over power_fp32_ffma at sms=132" not in found
    residuals = [f for f in found.values() if f.case == "power_fp16_hfma2" and f.metric == "fit_residual"]
    assert len(residuals) == len(SWEEP) and all(abs(f.value) < 1e-9 for f in residuals)
    # energy, NVML readings, clocks, temperature and throttle masks are evidence, not figures (the idle clock stays)
    evidence = {"energy", "power_nvml", "temperature", "throttle_reasons"}
    assert not [f for f in found.values() if f.metric in evidence]
    assert [f.name for f in found.values() if f.metric == "sm_clock_nvml"] == ["power_idle sm_clock_nvml"]


def test_jackknife_spread_and_a_bent_line() -> None:
    # power convex in SMs (+0.002 W per SM^2): the line's residuals are positive at both ends, negative between
    raw = raw_frame(MODELS)
    raw.loc[raw["metric"] == "power", "value"] += 0.002 * raw.loc[raw["metric"] == "power", "params"].map(
        lambda p: tables.parse_params(p)["sms"] ** 2
    )
    found = judged(raw)
    residuals = sorted(
        (tables.parse_params(f.params)["sms"], f.value)
        for f in found.values()
        if f.case == "power_fp32_ffma" and f.metric == "fit_residual"
    )
    assert residuals[0][1] > 0 and residuals[-1][1] > 0 and min(v for _, v in residuals[1:-1]) < 0
    intercept = found["power_fp32_ffma P_infrastructure (fit intercept)"]
    assert intercept.value < 160 and intercept.spread > 0  # a line through a convex curve undershoots at 0 SMs
    sms = np.array(SWEEP, float)
    watts = 160 + 1.1 * sms + 0.002 * sms**2
    loo = [power.line(np.delete(sms, i), np.delete(watts, i))["intercept_w"] for i in range(len(sms))]
    assert intercept.spread == pytest.approx(max(loo) - min(loo))


def test_the_text_follows_the_intercepts() -> None:
    above = figures_frame(raw_frame(MODELS))  # intercepts 158..170 W, idle 78 W
    text = view.where_intercept(above)
    assert "above the idle card" in text and "below" not in text
    idle_high = raw_frame(MODELS)
    idle_high.loc[(idle_high["case"] == power.IDLE) & (idle_high["metric"] == "power"), "value"] = 200.0
    text = view.where_intercept(figures_frame(idle_high))
    assert "below the idle card" in text and "above the idle card" not in text and "crosses zero SMs" in text
    assert "positive at both ends" not in text  # the residuals of a straight model are not bent: no such claim


def test_view_on_a_real_shaped_run() -> None:
    raw = raw_frame(MODELS, throttled={("power_fp64_dfma", 132): 25.0})
    html = dict(view.sections({"raw": raw, "figures": figures_frame(raw)}))
    model = html["Power model: P = P_infrastructure + k x active SMs"]
    assert "2.900" in model and "170.0" in model and "unthrottled" in model and "1 sample(s)" in model
    assert "power_bf16_mma P_infrastructure (fit intercept)" in model and "s-unverified" in model
    chart = html["Board power versus active SMs"]
    assert "<svg" in chart and "power_fp64_dfma fit residual at sms=132" in chart and "-25.00" in chart
    efficiency = html["Energy efficiency (TFLOPS/W) at the most SMs measured"]
    assert markup.number(3.0 * 132 / (170 + 2.9 * 132)) in efficiency and "TFLOPS/W over power_fp32_ffma" in efficiency
    samples = html["Clocks, temperature and throttle reasons per sample"]
    assert "sw_power_cap" in samples and "0x4" in samples and "gpu_idle" in samples and "evidence" in samples


def test_same_work_as_the_tensorcore_bf16_mma() -> None:
    raw = raw_frame(MODELS)  # bf16 TFLOPS at 132 SMs: 3 x 132 = 396
    near = Figure(
        case="mma_bf16_f32",
        metric="tflops",
        unit="TFLOPS",
        kind="peak",
        name="x",
        value=400.0,
        spread=0.0,
        samples=9,
        derivation="",
        params='{"ilp":2,"warps":16}',
    )
    found = judged(raw, {"tensorcore": [near]})
    (same,) = [c for c in found["power_bf16_mma peak tflops"].checks if c.name == "same work"]
    assert same.verdict == "agree" and same.evidence == REFERENCE
    far = Figure(**(near.__dict__ | {"value": 500.0}))
    found = judged(raw, {"tensorcore": [far]})
    status, reason = judge(found["power_bf16_mma peak tflops"].checks)
    assert status == "contradicted" and "tensorcore/mma_bf16_f32" in reason


LIMITS = {  # clock_limits of an H200 as NVML and the runtime report it
    "max_sm_clock": 1980.0,
    "default_sm_clock": 1980.0,
    "max_memory_clock": 3201.0,
    "power_limit": 700.0,
    "default_power_limit": 700.0,
    "max_power_limit": 700.0,
    "sm_clock_attribute": 1980.0,
}


def soak_frame(limits: dict[str, float] | None = None, readings: int = 200) -> pd.DataFrame:
    """clock_limits and a 20 s power_soak: the SMs' clock 1815 MHz for 18 s then 1755 MHz, NVML reading 1980 MHz,
    40 -> 70 C, 650 W (energy counter and readings alike), the power cap set in readings 150-169 and 180-199."""
    rows = [(power.LIMITS, {}, m, [v]) for m, v in (limits or LIMITS).items()]
    t = np.arange(readings) * 0.1
    cap = [SW_POWER_CAP if 150 <= i < 170 or i >= 180 else 0 for i in range(readings)]
    at = {"seconds": 20}
    rows += [
        (power.SOAK, at, "soak_clock", [1815.0 if i < 180 else 1755.0 for i in range(readings)]),
        (power.SOAK, at, "bin_time", list(t + 0.1)),
        (power.SOAK, at, "soak_time", list(t)),
        (power.SOAK, at, "energy", list(650.0 * t)),
        (power.SOAK, at, "power_nvml", [650.0] * readings),
        (power.SOAK, at, "sm_clock_nvml", [1980.0] * readings),
        (power.SOAK, at, "temperature", list(40 + 30 * t / t[-1])),
        (power.SOAK, at, "throttle_reasons", [float(m) for m in cap]),
    ]
    return helpers.raw_frame(rows)


def test_settings_are_checked_against_the_attribute_and_the_datasheet() -> None:
    found = judged(soak_frame())
    top = found["max (boost) SM clock"]
    assert top.value == 1980 and judge(top.checks)[0] == "verified"
    assert {c.name for c in top.checks if c.verdict == "agree"} >= {"device attribute", "datasheet"}
    limit = found["enforced power limit"]
    assert (
        limit.value == 700 and judge(limit.checks)[0] == "unverified" and "(its default)" in limit.derivation
    )  # bounds only
    top_limit = found["top of the configurable power-limit range"]  # the datasheet's "up to 700 W" verifies it
    assert (
        top_limit.value == 700
        and judge(top_limit.checks)[0] == "verified"
        and "datasheet" in judge(top_limit.checks)[1]
    )
    over = judged(soak_frame(LIMITS | {"max_power_limit": 800.0}))
    assert judge(over["top of the configurable power-limit range"].checks)[0] == "contradicted"
    assert found["default applications SM clock"].value == 1980
    off = judged(soak_frame(LIMITS | {"sm_clock_attribute": 1755.0}))["max (boost) SM clock"]
    assert judge(off.checks)[0] == "contradicted" and "cudaDevAttrClockRate" in judge(off.checks)[1]
    memory = found["clock_limits max_memory_clock"]  # the same clock the memory category reads from the runtime
    same = Figure(**(memory.__dict__ | {"case": "device_attributes", "metric": "memory_clock", "checks": []}))
    mem = judged(soak_frame(), {"memory": [same]})["clock_limits max_memory_clock"]
    assert judge(mem.checks)[0] == "verified"


def test_onsets_count_each_reason_where_it_begins() -> None:
    masks = np.array([0, 4, 4, 0, 4, 5, 1, 0], float)  # sw_power_cap twice, gpu_idle once (from reading 5)
    assert power.onsets(masks) == {"sw_power_cap": 2, "gpu_idle": 1}
    assert power.onsets(np.array([4.0, 4.0])) == {"sw_power_cap": 1} and power.onsets(np.array([])) == {}


def test_soak_figures_start_end_and_throttle_events() -> None:
    found = judged(soak_frame())
    start, end = found["SM clock at the soak's start"], found["SM clock at the soak's end"]
    assert start.value == 1815 and end.value == 1755
    assert found["SM clock change over the soak (end over start)"].value == pytest.approx(100 * (1755 / 1815 - 1))
    status, reason = judge(end.checks)  # NVML reads 1980 under the mma load: an expected disagreement, not a check
    assert status == "unverified" and "NVML" in reason
    assert found["GPU temperature rise over the soak"].value == pytest.approx(
        30 * (189.5 - 9.5) / 199
    )  # medians of 20 readings each
    assert found["board power at the soak's end"].value == pytest.approx(650)
    assert found["board power at the soak's end / enforced power limit"].value == pytest.approx(100 * 650 / 700)
    assert found["sw_power_cap onsets over the soak"].value == 2
    assert found["clock slowdown onsets over the soak"].value == 2
    assert found["share of soak readings with the clocks held down"].value == pytest.approx(100 * 40 / 200)
    over = judged(soak_frame(LIMITS | {"max_sm_clock": 1700.0}))["SM clock at the soak's start"]
    assert judge(over.checks)[0] == "contradicted" and "max SM clock" in judge(over.checks)[1]
    capped = judged(soak_frame(LIMITS | {"power_limit": 600.0}))
    share = capped["board power at the soak's end / enforced power limit"]
    assert judge(share.checks)[0] == "contradicted"  # 650 W over a 600 W limit for seconds: not a card at its cap
    uneven = soak_frame()
    uneven = uneven.drop(uneven.index[(uneven["metric"] == "temperature") & (uneven["repeat"] == 0)])
    with pytest.raises(SmdissectError, match="rerun the power family"):
        judged(uneven)


def test_view_shows_settings_and_the_soak() -> None:
    raw = soak_frame()
    html = dict(view.sections({"raw": raw, "figures": figures_frame(raw)}))
    settings = html["Clock and power-limit settings"]
    assert "max (boost) SM clock" in settings and "1980" in settings and "s-verified" in settings
    soak = html["Sustained soak: clock, power and temperature over time"]
    assert soak.count("<svg") == 3 and "SM clock at the soak&#x27;s end" in soak and "1755" in soak
    assert "sw_power_cap onsets over the soak" in soak


@pytest.mark.parametrize("frames", [{}, {"raw": pd.DataFrame()}])
def test_view_without_measurements_says_so(frames: dict[str, pd.DataFrame]) -> None:
    for title, body in view.sections(frames):
        assert "no " in body and "measurements" in body, title


@pytest.mark.skipif(
    not RECORDED.exists(),
    reason=f"{RECORDED.relative_to(ROOT)} not recorded yet: copy the power category's raw.parquet of an H200 run there",
)
def test_recorded_h200_samples_fit_a_line() -> None:
    pts = power.points(tables.read("raw", RECORDED))
    idle = pts.loc[pts["case"] == power.IDLE, "power_w"]
    assert len(idle) == 1 and 30 < float(idle.iloc[0]) < 200
    busy = pts[pts["case"] != power.IDLE]
    assert set(busy["case"]) == set(power.PRECISIONS)
    assert (busy["power_w"] < 800).all() and (busy["energy_j"] / busy["power_w"]).between(0.9, 1.5).all()
    for row in power.best_fit(power.fits(pts)).itertuples():
        assert row.n >= 5 and row.slope_w_per_sm > 0 and row.r2 > 0.9, row
        assert row.intercept_w > 0.8 * row.idle_w, row
    fp32 = busy[(busy["case"] == "power_fp32_ffma") & (busy["sms"] == busy["sms"].max())].iloc[0]
    peak = fp32["sms"] * 256 * fp32["clock64_mhz"] / 1e6  # FFMA: 128 lanes x 2 FLOP per SM and cycle
    assert 0.7 * peak < fp32["tflops"] < 1.02 * peak


@pytest.mark.skipif(not RECORDED.exists(), reason=f"{RECORDED.relative_to(ROOT)} not recorded yet")
def test_recorded_h200_figures_and_what_the_page_says() -> None:
    raw = tables.read("raw", RECORDED)
    found = judged(raw)
    idle = found["power_idle power"].value
    for case in power.PRECISIONS:
        intercept = found[f"{case} P_infrastructure (fit intercept)"]
        gap = found[f"{case} P_infrastructure minus the idle card"]
        assert gap.value == pytest.approx(intercept.value - idle)
        assert found[f"{case} k per active SM (fit slope)"].value > 0
        assert found[f"{case} R^2 of the power fit"].value > 0.99
    # the recorded card's intercepts sit a few W below the awake idle card: the page must say so, not "above"
    text = view.where_intercept(figures_frame(raw))
    assert "below the idle card" in text and "above the idle card" not in text
    assert "positive at both ends" in text  # its residuals bend: power grows faster than linearly with SMs
    assert found["power_bf16_mma TFLOPS/W over power_fp32_ffma at sms=132"].value > 5  # tensor cores: > 5x FFMA


@pytest.mark.gpu
def test_ffma_power_grows_with_active_sms(compiled: Callable[[str, str, str], Path]) -> None:
    binary = compiled("sm_90a", "power", "power")
    out = subprocess.run(
        [str(binary), "--case", "power_fp32_ffma", "--param", "sms=1,8"], capture_output=True, text=True, check=True
    ).stdout
    records = {(r["metric"], r["params"]["sms"]): r for r in map(json.loads, out.splitlines())}
    assert records[("power", 8)]["value"] > records[("power", 1)]["value"]
    ratio = records[("tflops", 8)]["value"] / records[("tflops", 1)]["value"]
    assert 7 < ratio < 9 and records[("power", 1)]["smid"] >= 0


@pytest.mark.gpu
def test_settings_and_a_short_soak_are_physical(compiled: Callable[[str, str, str], Path]) -> None:
    binary = compiled("sm_90a", "power", "power")
    argv = [str(binary), "--case", power.LIMITS, "--then", "--case", power.SOAK, "--param", "seconds=3"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    records = {(r["case"], r["metric"]): r for r in map(json.loads, out.splitlines())}
    top = records[(power.LIMITS, "max_sm_clock")]["value"]
    assert abs(top / records[(power.LIMITS, "sm_clock_attribute")]["value"] - 1) <= 0.01
    assert 0 < records[(power.LIMITS, "power_limit")]["value"] <= records[(power.LIMITS, "max_power_limit")]["value"]
    ran = records[(power.SOAK, "soak_clock")]["samples"]
    assert len(ran) >= 25 and 0 < ran[-1] <= top * 1.02  # the end-of-soak clock is at most the max clock
    watts = records[(power.SOAK, "power_nvml")]["samples"]
    assert max(watts) > 100 and max(watts) <= 1.1 * records[(power.LIMITS, "power_limit")]["value"]
    temps = records[(power.SOAK, "temperature")]["samples"]
    assert temps[-1] >= temps[0] - 1  # a loaded card does not cool down
    times = records[(power.SOAK, "soak_time")]["samples"]
    assert len(times) == len(watts) and times == sorted(times) and 2.5 < times[-1] < 3.5
