"""The scheduler category: manifest, both archs' builds and SASS expectations, the derived figures (sub-core
binding, warps to saturate, scoreboard depth, setmaxnreg, patching) on raw tables shaped like a real run's, the
report view that renders them, and (on a GPU) the patching experiment end to end."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import ARCHS, FLAGS, ROOT, raw_frame
from smdissect.analysis import figures
from smdissect.analysis.derived import chains
from smdissect.analysis.derived.scheduler import control_codes, latency, registers, subcore
from smdissect.analysis.figure_model import Figure, judge
from smdissect.core import catalog, tables
from smdissect.measure import controlcodes, sass
from smdissect.pages.views import scheduler

KERNELS = ROOT / "kernels"
CASES = catalog.load(KERNELS, "scheduler")
FAMILIES = sorted(catalog.families(CASES))


def test_manifest_covers_the_issue() -> None:
    ids = {c.id for c in CASES}
    assert {"subcore_ffma", "warps_ffma", "max_resident", "scoreboard_depth", "setmaxnreg"} <= ids
    assert {"stall_patch", "yield_patch", "reuse_patch", "reg_occupancy"} <= ids
    assert catalog.family_settings(KERNELS, "scheduler", "regfile")["profile"] is False
    assert catalog.family_settings(KERNELS, "scheduler", "patched")["profile"] is False
    assert all(c.kind == "timed" for c in CASES)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("family", FAMILIES)
def test_family_sass_holds(compiled: Callable[[str, str, str], Path], arch: str, family: str) -> None:
    """Every listed kernel exists in the binary and meets its case's SASS expectations."""
    binary = compiled(arch, "scheduler", family)
    listing = json.loads(binary.with_suffix(".json").read_text())
    text = sass.dump(binary, arch)
    counts, code = sass.opcodes(text), sass.code(text)
    by_id = {c.id: c for c in CASES}
    assert {entry["case"] for entry in listing} == {c.id for c in CASES if c.family == family}
    for entry in listing:
        for kernel in entry["kernels"]:
            assert kernel["symbol"] in counts, f"{kernel['symbol']} not in the {arch} SASS"
            rows = sass.claims(by_id[entry["case"]], code[kernel["symbol"]], kernel["ops"])
            bad = [r for r in rows if r["verdict"] != "agree"]
            assert not bad, f"{arch} {entry['case']} {kernel['symbol']}: {bad}"


def test_setmaxnreg_times_the_loop_around_its_clock_reads(compiled: Callable[[str, str, str], Path]) -> None:
    """Its step (one .dec, one .inc with a TRY_ALLOC retry loop) is straight-line code in a loop around the clock
    reads; the default rule would take the retry loop between two reads (one USETMAXREG: claim fails)."""
    (case,) = [c for c in CASES if c.id == "setmaxnreg"]
    code = sass.code(sass.dump(compiled("sm_90a", "scheduler", "setmaxnreg"), "sm_90a"))
    kernel = next(k for name, k in code.items() if name.startswith("maxnreg_pair<") and name.endswith(",1>"))
    assert sass.timed_loop(kernel, around=True)[2] == "loop around the clock reads"
    assert sass.count(sass.loop_opcodes(kernel, around=True), "USETMAXREG") == 2
    assert sass.count(sass.loop_opcodes(kernel), "USETMAXREG") == 1  # the retry loop alone
    assert case.sass_loop == "around"


def test_sass_check_can_fail(compiled: Callable[[str, str, str], Path]) -> None:
    counts = sass.opcodes(sass.dump(compiled("sm_90a", "scheduler", "scoreboard"), "sm_90a"))
    case = next(c for c in CASES if c.id == "scoreboard_depth")
    rows = sass.check(case, counts["loads_then_use<12>"], 13)
    assert any(r["verdict"] == "disagree" for r in rows)


UNITS = {
    "throughput": "warp_inst/cycle/warp",
    "pair_throughput": "warp_inst/cycle",
    "partner_warpid": "id",
    "same_subpartition": "fraction",
    "subpartition_match": "fraction",
    "warpid_equal": "fraction",
    "warp0_warpid": "id",
    "resident_warps": "warp",
    "max_resident_warps": "warp",
    "max_resident_ctas": "cta",
    "cycles_per_iteration": "cycle",
    "dec_cost": "cycle",
    "inc_cost": "cycle",
    "wrong_results": "thread",
    "lost_steps": "step",
    "cycles_per_ffma": "cycle",
    "latency": "cycle",
    "api_warps": "warp",
    "registers": "reg/thread",
}
# reg_occupancy on sm_90a: live values -> ptxas's registers a thread (cuobjdump -res-usage of regfile.cu)
REGS_SM90 = {8: 30, 24: 36, 32: 41, 40: 49, 48: 57, 56: 65, 64: 73, 72: 80, 80: 89, 96: 113, 112: 122, 128: 137}

WOBBLE = (0.0, 0.001, -0.001, 0.002, -0.002, 0.0, 0.0005, -0.0005, 0.0)  # relative, one per repeat (nine)


def h200_warps(regs: int, granule: int = 256) -> int:
    """Warps an H200 SM holds at `regs` registers a thread: 64K registers in 4 partitions, a warp's rounded up to
    `granule`, at most 64 warps."""
    return min(64, int(registers.predicted_warps(regs, np.array([65536]), granule, 4)[0]))


def _raw(scoreboard_step: bool = True, granule: int = 256) -> pd.DataFrame:
    """Raw rows shaped like the run stage's (nine samples per point, each metric in its binary's unit), with values
    as a sub-core-bound H200 gives them."""
    rows: dict[str, list] = {}

    def add(case: str, params: dict[str, int], metric: str, value: float, exact: bool = False) -> None:
        timed = case.startswith(("warps_", "reuse_")) and metric == "throughput"
        unit = "warp_inst/cycle/SM" if timed else UNITS[metric]
        samples = [value] * len(WOBBLE) if exact else [value * (1 + w) for w in WOBBLE]
        rows.setdefault(unit, []).append((case, params, metric, samples))

    for case, alone in (("subcore_ffma", 0.85), ("subcore_mufu", 0.124)):
        for p in range(8):
            same = p % 4 == 0
            add(case, {"partner": p}, "throughput", alone * (0.58 if same and p else 1))
            add(case, {"partner": p}, "pair_throughput", alone * (1.16 if same and p else 2 if p else 1))
            add(case, {"partner": p}, "same_subpartition", float(same), exact=True)
            add(case, {"partner": p}, "partner_warpid", float((p + 3) % 8), exact=True)
    for w in (4, 8, 32):
        add("warpid_map", {"warps": w}, "subpartition_match", 1.0, exact=True)
        add("warpid_map", {"warps": w}, "warpid_equal", 0.0, exact=True)
        add("warpid_map", {"warps": w}, "warp0_warpid", 1.0, exact=True)
    for case, per_warp, peak in (("warps_ffma", 0.245, 1.99), ("warps_mufu", 0.0586, 0.4997)):
        for w in (1, 2, 4, 8, 12, 16, 32, 64):
            add(case, {"warps": w}, "throughput", min(peak, per_warp * w))
            add(case, {"warps": w}, "resident_warps", w, exact=True)
    for cta, warps, ctas in ((1, 32, 32), (2, 64, 32), (4, 64, 16)):
        add("max_resident", {"cta_warps": cta}, "max_resident_warps", warps, exact=True)
        add("max_resident", {"cta_warps": cta}, "max_resident_ctas", ctas, exact=True)
    for n in (1, 2, 4, 8, 12, 16, 20, 24, 28, 32):
        add(
            "scoreboard_depth",
            {"loads": n},
            "cycles_per_iteration",
            276 + 8 * n + (200 if scoreboard_step and n >= 24 else 0),
        )
    for low, inc in ((32, 48.0), (64, 47.0), (96, 46.0)):
        add("setmaxnreg", {"low": low}, "dec_cost", 83.0)
        add("setmaxnreg", {"low": low}, "inc_cost", inc)
    for k in (1, 2, 3, 4, 5, 6, 8, 12):
        add("stall_patch", {"stall": k}, "wrong_results", 128 if k < 4 else 0, exact=True)
        add("stall_patch", {"stall": k}, "lost_steps", 4032 if k < 4 else 0, exact=True)
        add("stall_patch", {"stall": k}, "cycles_per_ffma", max(2.17, k + 0.12))
        add("stall_patch", {"stall": k}, "latency", 4.12)
    for w in (1, 4, 8):
        for f in (0, 1):
            add("yield_patch", {"flipped": f, "warps": w}, "cycles_per_iteration", 528 * (1.5 if f and w == 8 else 1))
            add("yield_patch", {"flipped": f, "warps": w}, "wrong_results", 0, exact=True)
    for live, regs in REGS_SM90.items():
        add("reg_occupancy", {"live": live}, "resident_warps", h200_warps(regs, granule), exact=True)
        add("reg_occupancy", {"live": live}, "api_warps", h200_warps(regs), exact=True)
        add("reg_occupancy", {"live": live}, "registers", regs, exact=True)
    for w in (4, 16, 32):
        for c in (0, 1):
            add("reuse_patch", {"warps": w, "cleared": c}, "throughput", min(3.9, 0.25 * w) * (0.5 if c else 1))
            add("reuse_patch", {"warps": w, "cleared": c}, "wrong_results", 0, exact=True)
    return pd.concat(
        [raw_frame(r, unit=u, arch="sm_90a", category="scheduler") for u, r in rows.items()], ignore_index=True
    )


def _figures(raw: pd.DataFrame) -> list[Figure]:
    """Every figure of the scheduler category on `raw`, judged as the figures stage judges them."""
    return figures.compute(CASES, {"raw": raw}, {}, "sm_90a", "NVIDIA H200")


def _table(raw: pd.DataFrame) -> pd.DataFrame:
    return tables.frame("figures", figures.rows(_figures(raw), {"category": "scheduler", "arch": "sm_90a"}))


def _codes() -> pd.DataFrame:
    chain = [
        {
            "kernel": "ffma_chain",
            "offset": 16 * i,
            "opcode": "FFMA",
            "stall": 4,
            "yield_": 1,
            "wrbar": 7,
            "rdbar": 7,
            "waitmask": 0,
            "reuse": 0,
        }
        for i in range(128)
    ]
    return pd.DataFrame(chain, columns=controlcodes.COLUMNS)


def test_subcore_figures_say_each_warp_is_bound_to_its_subpartition() -> None:
    figs = {f.name: f for f in _figures(_raw())}
    assert figs["subcore_ffma warp 0 alone"].value == pytest.approx(0.85)
    assert figs["subcore_ffma warp 0 beside a warp of its own sub-partition"].value == pytest.approx(0.85 * 0.58)
    assert figs["subcore_ffma same-sub-partition slowdown"].value == pytest.approx(1 / 0.58)
    assert figs["subcore_ffma same-sub-partition slowdown"].spread > 0  # from the samples' extremes
    assert figs["subcore_mufu sub-partition binding"].value == 1
    assert figs["subcore_ffma pair rate on one sub-partition"].value == pytest.approx(0.85 * 1.16)
    assert figs["subcore_ffma warp 0 beside a warp of its own sub-partition"].points == ('{"partner":4}',)
    assert not any(n.startswith("subcore_ffma peak") or "partner_warpid" in n for n in figs)  # rules: none
    assert "warpid_map warp0_warpid at warps=4" not in figs and "warpid_map warpid_equal at warps=4" in figs


def test_binding_falls_when_the_slowdown_ignores_warpid() -> None:
    rate = {"a": 0.5, "b": 0.95, "c": 0.5}  # c shares no sub-partition with warp 0, yet is slowed
    assert subcore.binding(rate, 1.0, same=["a"], other=["b", "c"]) == pytest.approx(2 / 3)
    assert subcore.binding(rate, 1.0, same=["a", "c"], other=["b"]) == 1


def test_warp_scaling_gives_the_warps_to_saturate_and_the_residency_limits() -> None:
    figs = {f.name: f for f in _figures(_raw())}
    assert figs["warps_ffma warps to saturate"].value == 8  # 8 x 0.245 = 1.96 >= 0.9 x 1.99; 4 warps: 0.98
    assert figs["warps_mufu warps to saturate"].value == 8  # 8 x 0.0586 = 0.469 >= 0.9 x 0.4997
    assert figs["warps_mufu warps to saturate"].paper == "sfu_saturation_warps_sm120"
    assert figs["warps_ffma warps to saturate"].paper == ""  # the paper has no FFMA figure
    peak = figs["warps_ffma peak throughput"]
    plateau = [c for c in peak.checks if c.name == "plateau"]
    assert [c.verdict for c in plateau] == ["agree"], plateau  # saturate: [warps] judges the 32 -> 64 step
    (ceiling,) = [c for c in peak.checks if c.name == "ceiling"]  # half the fma pipe's 4: one chain a warp
    assert ceiling.verdict == "disagree" and ceiling.explained and judge(peak.checks)[0] != "contradicted"
    assert figs["max_resident peak max_resident_warps"].value == 64
    assert figs["max_resident peak max_resident_ctas"].value == 32
    assert not any("resident_warps at" in n for n in figs if n.startswith("warps_"))
    assert chains.saturation_warps({1: 0.1, 2: 0.2, 4: 0.4}) == 4  # still rising: the last point


def test_scoreboard_depth_is_one_number() -> None:
    (depth,) = [f for f in _figures(_raw()) if f.name == "scoreboard depth"]
    assert depth.value == 20 and depth.unit == "loads" and depth.kind == "derived"
    assert depth.paper == "scoreboard_depth_min_sm120"  # the paper's one number (>= 12 on sm_120) beside it
    assert "20 loads" in depth.derivation and "24 loads" in depth.derivation and len(depth.points) == 10
    (flat,) = [f for f in _figures(_raw(scoreboard_step=False)) if f.name == "scoreboard depth"]
    assert flat.value == 32 and "no step up to 32 loads" in flat.derivation  # a lower bound: the sweep's end
    assert latency.scoreboard_depth({1: 100.0, 2: 110.0, 4: 200.0}) == (2, 4)


def test_setmaxnreg_and_patching_figures() -> None:
    figs = {f.name: f for f in _figures(_raw())}
    assert figs["setmaxnreg.dec cost"].value == pytest.approx(83) and figs["setmaxnreg.dec cost"].metric == "dec_cost"
    assert figs["setmaxnreg.inc cost"].value == pytest.approx(47, rel=1e-2)
    assert (figs["setmaxnreg.dec cost"].paper, figs["setmaxnreg.inc cost"].paper) == (
        "setmaxnreg_dec_latency_sm120",
        "setmaxnreg_inc_latency_sm120",
    )
    assert "TRY_ALLOC" in figs["setmaxnreg.inc cost"].method  # the manifest's method, kept by a derived figure
    assert figs["setmaxnreg.inc cost"].spread == pytest.approx(48 * 1.002 - 46 * 0.998)
    assert not any(n.startswith("setmaxnreg dec_cost at") for n in figs)
    assert figs["stall_patch smallest safe stall count"].value == 4
    assert figs["stall_patch cycles per stall count"].value == pytest.approx(1.0)
    assert figs["yield_patch inverted yield at warps=8"].value == pytest.approx(1.5)
    assert figs["yield_patch inverted yield at warps=4"].value == pytest.approx(1.0)
    assert figs["yield_patch wrong results"].value == 0
    assert control_codes.safe_stall({1: 5, 2: 0, 3: 7, 4: 0, 8: 0}) == 4  # a wrong stall above 2 resets it
    assert control_codes.safe_stall({1: 5, 12: 3}) is None
    same = [c for c in figs["stall_patch latency at stall=4"].checks if c.name == "same work"]
    assert [c.verdict for c in same] == ["n/a"]  # pipelines/ffma not given here: cannot agree or disagree


def test_view_renders_every_section_from_the_figures() -> None:
    raw = _raw()
    frames = {
        "raw": raw,
        "figures": _table(raw),
        "controlcodes": _codes(),
        "sass": pd.DataFrame({"case": ["stall_patch"], "kernel": ["ffma_chain"]}),
    }
    out = dict(scheduler.sections(frames))
    assert len(out) == 7
    regfile = out["Register file: occupancy and operand reuse"]
    assert regfile.count("<svg") == 2 and "reg_occupancy registers per SM" in regfile and "65,536" in regfile
    assert "reuse_patch cleared reuse at warps=32" in regfile
    assert all("<svg" in out[t] for t in ("Sub-core binding (warpid % 4)", "Scoreboard depth", "Binary patching"))
    assert "subcore_ffma same-sub-partition slowdown" in out["Sub-core binding (warpid % 4)"]
    assert "warps_ffma warps to saturate" in out["Latency hiding: throughput vs resident warps"]
    assert "scoreboard depth" in out["Scoreboard depth"] and "20.00" in out["Scoreboard depth"]
    codes = out["Control codes of the chain kernels"]
    assert "ffma_chain" in codes and "4.120" in codes  # the chain's stall count beside its measured latency
    assert "stall_patch smallest safe stall count" in out["Binary patching"] and "128.0" in out["Binary patching"]
    assert "setmaxnreg.dec cost" in out["setmaxnreg cost"] and "83.00" in out["setmaxnreg cost"]
    assert all('class="s-' in html for t, html in out.items() if t != "Control codes of the chain kernels")


def test_chain_stalls_picks_the_mode() -> None:
    codes = _codes()
    codes.loc[:2, "stall"] = 1
    summary = scheduler.chain_stalls(codes)
    assert summary.to_dict("records")[0] | {"yield_share": 1.0} == {
        "kernel": "ffma_chain",
        "opcode": "FFMA",
        "count": 128,
        "stall": 4,
        "yield_share": 1.0,
    }
    assert scheduler.chain_stalls(codes.head(10)).empty
    both = pd.concat([codes.assign(arch="sm_90a"), codes.assign(arch="sm_120a", stall=2)])
    assert scheduler.chain_stalls(both).set_index("arch")["stall"].to_dict() == {"sm_90a": 4, "sm_120a": 2}


def test_control_code_figures_where_the_figures_stage_has_the_table() -> None:
    checks = pd.DataFrame({"case": ["stall_patch"], "params": ["{}"], "kernel": ["ffma_chain"], "arch": ["sm_90a"]})
    found = control_codes.control_code_figures(
        {"controlcodes": _codes().assign(arch="sm_90a"), "sass_checks": checks}, []
    )
    assert [(f.name, f.value, f.case) for f in found] == [("ffma_chain compiler stall count", 4.0, "stall_patch")]
    assert control_codes.control_code_figures({"controlcodes": _codes()}, []) == []


@pytest.mark.parametrize("frames", [{}, {"raw": pd.DataFrame()}, {"raw": _raw().head(0), "controlcodes": _codes()}])
def test_view_without_data_says_so(frames: dict[str, pd.DataFrame]) -> None:
    out = scheduler.sections(frames)
    assert len(out) == 7 and all(html for _, html in out)


@pytest.mark.gpu
def test_patched_run_counts_wrong_results(compiled: Callable[[str, str, str], Path]) -> None:
    """On a GPU: the unpatched chain is exact, a stall count of 1 corrupts results."""
    binary = compiled(ARCHS[0], "scheduler", "patched")
    controlcodes.prepare(
        KERNELS / "scheduler" / "patch_targets.cu", binary, ARCHS[0], "nvcc", KERNELS / "common", FLAGS
    )
    proc = subprocess.run(
        [str(binary), "--case", "stall_patch", "--param", "stall=1,4", "--repeats", "1"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    recs = {
        (json.loads(x)["params"]["stall"], json.loads(x)["metric"]): json.loads(x)["value"]
        for x in proc.stdout.splitlines()
    }
    assert recs[(4, "wrong_results")] == 0
    assert recs[(1, "wrong_results")] > 0


def test_register_file_fit_gives_the_documented_file() -> None:
    """H200-shaped occupancy: one fit, 64K registers in 4 partitions, 256 a warp, each documented value agreeing."""
    figs = {f.name: f for f in _figures(_raw())}
    for name, value in (("registers per SM", 65536), ("register allocation unit per warp", 256)):
        fig = figs[f"reg_occupancy {name}"]
        assert fig.value == value and judge(fig.checks)[0] == "verified", fig.checks
    assert figs["reg_occupancy register-file partitions"].value == 4
    each = figs["reg_occupancy resident_warps at live=64"]
    assert each.value == 24 and judge(each.checks)[0] == "verified"  # the occupancy API agrees
    assert [c.verdict for c in each.checks if c.name == "same work"] == ["agree"]


def test_register_file_fit_contradicts_a_finer_allocation() -> None:
    """Warps as if registers were allocated one a thread: the API disagrees at each point it rounds, and no fit holds
    the documented 256-register unit."""
    figs = {f.name: f for f in _figures(_raw(granule=32))}
    unit = figs["reg_occupancy register allocation unit per warp"]
    assert unit.value < 256 and judge(unit.checks)[0] == "contradicted"
    assert judge(figs["reg_occupancy resident_warps at live=24"].checks)[0] == "contradicted"  # 36 regs: 56 vs 48


def test_register_fits_need_two_points_and_say_when_none_fits() -> None:
    assert registers.regfile_figures(_raw().head(0), []) == []
    assert registers.register_fits([(30, 64.0), (41, 64.0), (137, 12.0), (36, 60.0)]) == []


def test_reuse_figures() -> None:
    figs = {f.name: f for f in _figures(_raw())}
    assert figs["reuse_patch cleared reuse at warps=32"].value == pytest.approx(0.5, rel=1e-2)
    assert figs["reuse_patch wrong results"].value == 0


def _ffma_operands(cubin: Path) -> list[tuple[int, ...]]:
    """(d, a, b, c) register numbers of every FFMA of ffma_operands in a cubin."""
    text = subprocess.run([sass.cuobjdump(), "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    body = text.split("Function : ffma_operands")[1].split("Function :")[0]
    ffma = re.compile(r"FFMA R(\d+), R(\d+)(?:\.reuse)?, R(\d+)(?:\.reuse)?, R(\d+)(?:\.reuse)?")
    return [tuple(int(r) for r in m.groups()) for m in ffma.finditer(body)]


@pytest.mark.parametrize("arch", ARCHS)
def test_reuse_patch_clears_only_the_reuse_flags(tmp_path: Path, arch: str) -> None:
    """The cleared cubin differs from the compiler's only in the .reuse flags of ffma_operands' FFMAs, which read one
    shared a and b from the two banks (register number mod 2): each FFMA's x, a third register, shares one's bank."""
    controlcodes.prepare(
        KERNELS / "scheduler" / "patch_targets.cu", tmp_path / "patched", arch, "nvcc", KERNELS / "common", FLAGS
    )
    out = tmp_path / "patched.cubins"
    original, cleared = (
        (out / controlcodes.ORIGINAL).read_bytes(),
        (out / "patched" / controlcodes.REUSE_CLEARED).read_bytes(),
    )
    before, after = controlcodes.decode(original), controlcodes.decode(cleared)
    ffma = (before["kernel"] == "ffma_operands") & (before["opcode"] == "FFMA")
    assert ffma.sum() >= 128 and (before.loc[ffma, "reuse"] > 0).mean() > 0.9
    assert (after.loc[ffma, "reuse"] == 0).all()
    others = [c for c in controlcodes.COLUMNS if c != "reuse"]
    assert before[others].equals(after[others]) and before.loc[~ffma].equals(after.loc[~ffma])
    ops = _ffma_operands(out / controlcodes.ORIGINAL)
    shared = {(a, c) for _, a, _, c in ops}
    assert len(shared) == 1, shared  # one a, one b for every FFMA
    ((a, b),) = shared
    assert a % 2 != b % 2 and all(x not in (a, b) for _, _, x, _ in ops)


@pytest.mark.gpu
def test_register_file_occupancy_on_the_gpu(compiled: Callable[[str, str, str], Path]) -> None:
    """On a GPU (sm_90: 64 warps, 64K registers an SM): the warps resident hold at most the SM's registers, fill them
    to within one warp a partition where registers bind, and fill every warp slot at 8 live values."""
    binary = compiled(ARCHS[0], "scheduler", "regfile")
    proc = subprocess.run(
        [str(binary), "--case", "reg_occupancy", "--param", "live=8,64,192", "--repeats", "3"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    recs = [json.loads(x) for x in proc.stdout.splitlines()]
    got = {(r["params"]["live"], r["metric"]): r["value"] for r in recs}
    held = {live: 32 * (-(-got[(live, "registers")] // 8) * 8) for live in (8, 64, 192)}  # registers a warp
    assert got[(8, "resident_warps")] == 64
    for live in (64, 192):
        warps = got[(live, "resident_warps")]
        assert got[(live, "registers")] >= live
        assert warps * held[live] <= 65536 < (warps + 4) * held[live], (live, warps, held[live])
    assert got[(192, "resident_warps")] < got[(64, "resident_warps")]


@pytest.mark.gpu
def test_cleared_reuse_keeps_results_and_costs_throughput(compiled: Callable[[str, str, str], Path]) -> None:
    """On a GPU: clearing the .reuse flags changes no result and never speeds the FFMAs up."""
    binary = compiled(ARCHS[0], "scheduler", "patched")
    controlcodes.prepare(
        KERNELS / "scheduler" / "patch_targets.cu", binary, ARCHS[0], "nvcc", KERNELS / "common", FLAGS
    )
    proc = subprocess.run(
        [str(binary), "--case", "reuse_patch", "--param", "warps=32", "--param", "cleared=0,1", "--repeats", "3"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    got = {
        (json.loads(x)["params"]["cleared"], json.loads(x)["metric"]): json.loads(x)["value"]
        for x in proc.stdout.splitlines()
    }
    assert got[(0, "wrong_results")] == 0 and got[(1, "wrong_results")] == 0
    assert got[(1, "throughput")] <= got[(0, "throughput")] * 1.02
