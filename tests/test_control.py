"""The control category: manifest, real builds, their listings and SASS against the manifest (branches kept as
branches, one BSSY/BSYNC pair a divergent step, predicated short arms, indirect calls, the icache bodies' FFMA counts,
the forced spill's LDL/STL), one-line errors, the deriver and the view on frames shaped like a real run, and on a GPU
the physical facts (a branch costs cycles, divergence serializes, a bigger body is slower, a spill costs)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from helpers import ARCHS, ROOT, assert_profile_budget, assert_sass_claims, raw_frame
from smdissect.analysis import figures
from smdissect.analysis.derived import control as derived
from smdissect.core import catalog, tables
from smdissect.core.tables import canonical_params
from smdissect.measure import sass
from smdissect.pages.views import control as view

CASES = catalog.load(ROOT / "kernels", "control")
FAMILIES = sorted(catalog.families(CASES))
Compiled = Callable[[str, str, str], Path]


def test_profile_sweeps_narrow_the_sweep_and_stay_within_the_ncu_budget() -> None:
    assert_profile_budget("control", CASES, 20)


def test_the_local_chase_is_memorys_load_ca_point() -> None:
    chase = next(c for c in CASES if c.id == "ldl_chase")
    (load_ca,) = [c for c in catalog.load(ROOT / "kernels", "memory") if c.id == "load_ca"]
    assert chase.same_as[0]["case"] == "memory/load_ca" and chase.sweep["footprint_kb"] == [4]
    assert all(set(v) <= set(load_ca.sweep[k]) for k, v in chase.sweep.items())  # its figure meets load_ca's


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("family", FAMILIES)
def test_family_lists_its_cases_and_its_sass_holds(compiled: Compiled, arch: str, family: str) -> None:
    assert_sass_claims(compiled(arch, "control", family), arch, catalog.families(CASES)[family])


def loop_counts(binary: Path, arch: str, symbol: str) -> dict[str, int]:
    """One pass of a kernel's timed loop, by opcode."""
    return dict(sass.loop_opcodes(sass.code(sass.dump(binary, arch))[symbol]))


@pytest.mark.parametrize("arch", ARCHS)
def test_divergent_steps_reconverge_once_and_short_arms_are_predicated(compiled: Compiled, arch: str) -> None:
    binary = compiled(arch, "control", "branch")
    for depth in range(5):
        loop = loop_counts(binary, arch, f"nested_kernel<{depth},8>")
        assert sass.count(loop, "BSSY") == sass.count(loop, "BSYNC") == min(depth, 1), (depth, loop)
        assert sass.count(loop, "BRA") == 2 * (2**depth - 1) + 1
    short = loop_counts(binary, arch, "nested_kernel<1,4>")
    assert sass.count(short, "BSSY") == 0 and sass.count(short, "BRA") == 1 and sass.count(short, "IMAD") == 8
    uniform = loop_counts(binary, arch, "uniform_kernel<4>")
    assert sass.count(uniform, "BSSY") == 0 and sass.count(uniform, "BRA") == 9
    indirect = loop_counts(binary, arch, "call_kernel<1,4>")
    assert indirect["CALL.REL.NOINC"] == 4  # through a register: not a direct call to an offset


@pytest.mark.parametrize("arch", ARCHS)
def test_the_spill_is_in_the_timed_loop_and_the_free_loop_has_none(compiled: Compiled, arch: str) -> None:
    binary = compiled(arch, "control", "spill")
    forced, free = (loop_counts(binary, arch, k) for k in ("spilled_kernel", "registers_kernel"))
    assert sass.count(forced, "LDL") >= 32 and sass.count(forced, "STL") >= 32 and forced["FFMA"] == 64
    assert sass.count(free, "LDL") == sass.count(free, "STL") == 0 and free["FFMA"] == 64
    assert loop_counts(binary, arch, "local_kernel<0>")["LDL"] == 8


@pytest.mark.parametrize(
    ("family", "args", "says"),
    [
        ("branch", ["--case", "branch_divergence", "--param", "depth=one"], "is not an integer"),
        ("icache", ["--case", "icache_footprint", "--bogus"], "unknown argument"),
        ("spill", ["--case", "no_such_case"], "unknown case"),
    ],
)
def test_bad_arguments_fail_with_one_line(compiled: Compiled, family: str, args: list[str], says: str) -> None:
    proc = subprocess.run([str(compiled("sm_90a", "control", family)), *args], capture_output=True, text=True)
    assert proc.returncode != 0 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("error: ") and says in proc.stderr


CHAIN = 32.0  # cycles per 8 dependent IMADs (4 a step on an H200)
ICACHE = {
    4: 1.0,
    8: 1.0,
    16: 1.02,
    24: 1.01,
    32: 1.6,
    48: 2.5,
    64: 2.6,
    96: 2.55,
    128: 2.6,
    192: 6.0,
    256: 9.0,
    512: 9.2,
}


def real_shaped() -> pd.DataFrame:
    """A raw table like a control run on an H200: every case, its points, a few samples each."""
    one = {}
    rows = [("branch_chain", one, "step", [CHAIN, CHAIN + 0.1])]
    rows += [("branch_uniform", one, "taken", [44.0, 44.2]), ("branch_uniform", one, "not_taken", [40.0, 40.1])]
    for depth in range(5):
        leaves = 2**depth
        rows += [("branch_divergence", {"depth": depth}, "uniform", [CHAIN + 6.0 * depth])]
        rows += [("branch_divergence", {"depth": depth}, "divergent", [leaves * CHAIN + 14.0 * (leaves - 1)])]
    rows += [("branch_predicated", one, "divergent", [18.0]), ("branch_predicated", one, "uniform", [18.0])]
    rows += [("call_direct", one, "step", [24.0]), ("call_indirect", one, "uniform", [40.0])]
    rows += [("call_indirect", one, "divergent", [80.0])]
    for warps, scale in ((1, 1.0), (16, 1.1)):
        rows += [
            ("icache_footprint", {"footprint_kb": kb, "warps": warps}, "cycles_per_instruction", [v * scale] * 3)
            for kb, v in ICACHE.items()
        ]
    rows += [("ldl_chase", {"footprint_kb": 4, "stride_b": 128}, "latency", [33.0, 33.0])]
    rows += [("stl_ldl_round_trip", one, "latency", [41.0, 41.0])]
    rows += [("spill_forced", one, "step", [64.0 + 64 * 3.0]), ("spill_free", one, "step", [64.5])]
    return raw_frame(rows, arch="sm_90a", category="control", unit="cycle")


def judged(raw: pd.DataFrame, others: dict | None = None) -> dict[str, pd.DataFrame]:
    """The frames a page of this run gets: its raw table and its judged figures."""
    found = figures.compute(CASES, {"raw": raw}, others or {}, "sm_90a", "NVIDIA H200")
    return {"raw": raw, "figures": tables.frame("figures", figures.rows(found, {"category": "control"}))}


def by_name(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return frames["figures"].set_index("figure")


def test_branch_divergence_and_call_costs() -> None:
    f = by_name(judged(real_shaped()))
    assert f.loc["uniform branch, taken path: cycles it adds a step", "value"] == pytest.approx(44.1 - 32.05)
    assert f.loc["uniform branch: taken less not taken", "value"] == pytest.approx(44.1 - 40.05)
    assert f.loc["divergence cost at depth 3", "value"] == pytest.approx(8 * CHAIN + 14 * 7 - CHAIN - 18)
    # (divergent - uniform - 7 x chain) / 7 nodes: 14 a node less the uniform path's own 6 a level spread over them
    node = f.loc["divergent if/else overhead per node at depth 3", "value"]
    assert node == pytest.approx((8 * CHAIN + 14 * 7 - (CHAIN + 18) - 7 * (CHAIN + 0.05)) / 7)  # chain: 32.05
    assert "divergence cost at depth 0" not in f.index
    assert f.loc["predicated divergent if/else: cycles per arm IMAD", "value"] == pytest.approx(18.0 / 8)
    assert f.loc["branched divergent if/else: cycles per arm IMAD", "value"] == pytest.approx((2 * CHAIN + 14) / 16)
    assert f.loc["direct call: cycles it adds to the callee's IMAD", "value"] == pytest.approx(24.0 - 32.05 / 8)


def test_icache_levels_sizes_and_miss_costs() -> None:
    f = by_name(judged(real_shaped()))
    assert f.loc["i-cache level 0, 1 warp: cycles per instruction", "value"] == pytest.approx(1.005)
    assert f.loc["i-cache level 0, 1 warp: largest footprint on it", "value"] == 24
    assert "the next, 32 KB, is off it" in f.loc["i-cache level 0, 1 warp: largest footprint on it", "derivation"]
    assert f.loc["i-cache level 1, 1 warp: largest footprint on it", "value"] == 128  # 32 KB is a transition
    assert f.loc["i-cache level 0 miss, 1 warp: cycles per instruction it adds", "value"] == pytest.approx(
        2.575 - 1.005
    )
    assert f.loc["i-cache level 2, 16 warps: largest footprint on it", "value"] == 512
    assert "the sweep ends on it" in f.loc["i-cache level 2, 16 warps: largest footprint on it", "derivation"]
    assert not any(n.startswith("icache_footprint cycles_per_instruction") for n in f.index)  # the levels stand


def test_a_warp_count_missing_small_footprints_or_without_a_cliff_sizes_no_level() -> None:
    raw = real_shaped()
    sixteen = raw["params"].str.contains('"warps":16')
    small = raw["params"].str.contains('"footprint_kb":(?:4|8|16|24|32|48|64|96|128),', regex=True)
    f = by_name(judged(raw[~(sixteen & small)]))  # the 16-warp points below 192 KB left out by the binary
    assert not any("16 warps" in n for n in f.index) and "i-cache level 2, 1 warp: cycles per instruction" in f.index
    flat = raw.copy()
    flat.loc[flat["params"].str.contains('"warps":16'), "value"] = 1.5  # misses hidden: one level, no cliff
    f = by_name(judged(flat))
    assert f.loc["i-cache level 0, 16 warps: cycles per instruction", "value"] == pytest.approx(1.5)
    assert not any(n.startswith("i-cache level 0, 16 warps: largest") for n in f.index)


def test_levels_need_two_points_and_a_rise_over_the_tolerance() -> None:
    flat = [(kb, canonical_params({"footprint_kb": kb}), 1.0 + 0.01 * i) for i, kb in enumerate((4, 8, 16, 32))]
    assert len(derived.levels(flat)) == 1
    cliff = flat + [(64, "{}", 3.0)]
    assert len(derived.levels(cliff)) == 1  # a lone point past the cliff is no level
    assert len(derived.levels(cliff + [(128, "{}", 3.1)])) == 2


def test_spill_costs_and_the_local_chase_against_memory() -> None:
    raw = real_shaped()
    f = by_name(judged(raw))
    assert f.loc["forced spill: cycles it adds per accumulator update", "value"] == pytest.approx(3.0 - 0.5 / 64)
    assert f.loc["local store before a dependent load: cycles it adds", "value"] == pytest.approx(8.0)
    chase = f.loc["ldl_chase latency"]
    assert chase["status"] == "unverified" and "memory/load_ca latency not measured here" in chase["reason"]
    point = {"footprint_kb": 4, "stride_b": 128}
    memory = raw_frame([("load_ca", point, "latency", [32.0, 32.0])], arch="sm_90a", category="memory", unit="cycle")
    memory_cases = catalog.load(ROOT / "kernels", "memory")
    others = {"memory": [x for c in memory_cases for x in figures.case_figures(c, memory, figures.points(memory))]}
    assert by_name(judged(raw, others)).loc["ldl_chase latency", "status"] == "verified"  # 33 vs 32: within 5%
    slow = raw.copy()
    slow.loc[slow["case"] == "ldl_chase", "value"] = 40.0
    slow_chase = by_name(judged(slow, others)).loc["ldl_chase latency"]  # a disagreement the manifest explains
    assert slow_chase["status"] == "unverified" and "32-bit offset" in slow_chase["reason"]
    under = raw.copy()
    under.loc[under["case"] == "stl_ldl_round_trip", "value"] = 20.0  # below the load it is built from
    assert by_name(judged(under)).loc["stl_ldl_round_trip latency", "status"] == "contradicted"


def test_view_on_a_real_shaped_run() -> None:
    html = dict(view.sections(judged(real_shaped())))
    icache = html["Instruction cache levels"]
    assert "<svg" in icache and "i-cache level 1, 16 warps: largest footprint on it" in icache
    branches = html["Branches, divergence, predication and calls"]
    assert "divergence cost at depth 4" in branches and "branch_uniform taken" in branches
    assert "forced spill: cycles it adds per accumulator update" in html["Local memory and spills"]


@pytest.mark.parametrize("frames", [{}, {"raw": pd.DataFrame()}, {"raw": raw_frame([])}])
def test_view_without_measurements_says_so(frames: dict[str, pd.DataFrame]) -> None:
    for title, body in view.sections(frames):
        assert "no " in body and "measurements" in body, title


class Records(dict):
    """(metric, params json) -> value; a record the binary left out fails with the binary's stderr (its reason)."""

    def __init__(self, values: dict[tuple[str, str], float], stderr: str) -> None:
        super().__init__(values)
        self.stderr = stderr

    def __missing__(self, key: tuple[str, str]) -> float:
        raise AssertionError(f"no record {key}; the binary's stderr: {self.stderr.strip() or '(empty)'}")


def run_case(binary: Path, case: str, *params: str) -> Records:
    """(metric, params json) -> value of one case run with 3 repeats; a failed run fails with its stderr."""
    argv = [str(binary), "--case", case, "--repeats", "3"] + [a for p in params for a in ("--param", p)]
    proc = subprocess.run(argv, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()}"
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    return Records({(r["metric"], canonical_params(r["params"])): r["value"] for r in records}, proc.stderr)


def test_a_missing_record_names_the_binarys_stderr() -> None:
    with pytest.raises(AssertionError, match="phases disagree"):
        Records({}, "icache_footprint {}: cycles_per_instruction phases disagree")[("step", "{}")]


@pytest.mark.gpu
def test_branches_cost_cycles_and_divergence_serializes(compiled: Compiled) -> None:
    binary = compiled("sm_90a", "control", "branch")
    chain = run_case(binary, "branch_chain")[("step", "{}")]
    assert 8 * 2 <= chain <= 8 * 12  # 8 dependent IMADs: 2 to 12 cycles each on any checked arch
    uniform = run_case(binary, "branch_uniform")
    assert uniform[("taken", "{}")] > chain and uniform[("not_taken", "{}")] > chain
    nested = run_case(binary, "branch_divergence", "depth=0,2,4")
    at = {d: canonical_params({"depth": d}) for d in (0, 2, 4)}
    assert nested[("divergent", at[0])] == pytest.approx(nested[("uniform", at[0])], rel=0.02)  # no split at depth 0
    for d in (2, 4):  # 2^d leaves one after another: at least 2^d x one leaf's chain
        assert nested[("divergent", at[d])] >= 2**d * 0.9 * chain > nested[("uniform", at[d])]
    calls = run_case(binary, "call_indirect")
    assert calls[("divergent", "{}")] > calls[("uniform", "{}")] > 0


@pytest.mark.gpu
def test_a_bigger_body_is_slower_and_a_spill_costs(compiled: Compiled) -> None:
    binary = compiled("sm_90a", "control", "icache")
    cpi = run_case(binary, "icache_footprint", "footprint_kb=4,512", "warps=1,16")
    at = {(kb, w): cpi[("cycles_per_instruction", canonical_params({"footprint_kb": kb, "warps": w}))]
          for kb in (4, 512) for w in (1, 16)}  # fmt: skip
    assert 0.9 <= at[(4, 1)] <= 2.0  # an FFMA a cycle or two per sub-partition while the body is cached
    assert 0.9 <= at[(4, 16)] <= 2.0  # 4 warps a sub-partition, the CTA's span between barriers: the same issue rate
    # 512 KB misses every instruction cache level each pass (the sm_120 study: +31% per instruction past its L1 i-cache)
    assert at[(512, 1)] > 1.1 * at[(4, 1)] and at[(512, 16)] >= at[(4, 16)]
    spill = compiled("sm_90a", "control", "spill")
    point = canonical_params({"footprint_kb": 4, "stride_b": 128})
    chase = run_case(spill, "ldl_chase", "footprint_kb=4", "stride_b=128")[("latency", point)]
    assert 15 <= chase <= 60  # an L1 hit
    assert run_case(spill, "stl_ldl_round_trip")[("latency", "{}")] >= chase
    assert run_case(spill, "spill_forced")[("step", "{}")] > run_case(spill, "spill_free")[("step", "{}")]
