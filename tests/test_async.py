"""The async category: manifest, real builds for sm_90a and sm_120a, their SASS against the manifest, one-line errors,
and the report view on frames shaped like a real run."""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from conftest import ARCHS, ROOT, assert_profile_budget, assert_sass_claims, listing, raw_frame
from smdissect import catalog, figures, markup, sass, tables
from smdissect.checks import judge
from smdissect.derived import async_ as derived
from smdissect.tables import canonical_params
from smdissect.views import async_ as view

CASES = catalog.load(ROOT / "kernels", "async")
FAMILIES = sorted(catalog.families(CASES))


def test_profile_sweeps_narrow_the_sweep_and_stay_within_the_ncu_budget() -> None:
    assert_profile_budget("async", CASES, 40)


def test_dram_bandwidth_metric_is_collected() -> None:
    assert "dram__bytes_read.sum" in catalog.metrics(ROOT / "kernels", "async")


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("family", FAMILIES)
def test_family_lists_its_cases_and_its_sass_holds(
    compiled: Callable[[str, str, str], Path], arch: str, family: str
) -> None:
    assert_sass_claims(compiled(arch, "async", family), arch, catalog.families(CASES)[family])


@pytest.mark.parametrize(
    ("family", "args"),
    [
        ("costs", ["--case", "nope"]),
        ("stream", ["--param", "ctas=x"]),
        ("latency", ["--case", "bulk_latency", "--param", "bytes=1"]),
    ],
)
def test_bad_parameters_fail_with_one_line(
    compiled: Callable[[str, str, str], Path], family: str, args: list[str]
) -> None:
    proc = subprocess.run([str(compiled("sm_90a", "async", family)), *args], capture_output=True, text=True)
    assert proc.returncode != 0 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


MOVES = {"IMAD.U32", "MOV"}  # how ptxas moves ELECT's uniform lane id to a vector register (sm_90a, sm_120a)


def timed_loops(text: str, kernel: str) -> list[Counter[str] | None]:
    """Per region between consecutive SR_CLOCKLO reads of `kernel` (sass.timed_regions), in order: the opcode counts of
    its loop (sass.loops: from a backward branch's target to the branch), or None where the region holds no loop."""
    code = sass.code(text)[kernel]
    loops: list[Counter[str] | None] = []
    for start, end in sass.timed_regions(code):
        inside = [(a, b) for a, b in sass.loops(code) if start < a and b < end]
        assert len(inside) <= 1, f"{kernel}: more than one loop between the clock reads at {start:#x} and {end:#x}"
        loops.append(Counter(i.opcode for i in code if inside[0][0] <= i.offset <= inside[0][1]) if inside else None)
    return loops


@pytest.mark.parametrize("arch", ARCHS)
def test_elect_is_one_per_step_inside_its_timed_loops(compiled: Callable[[str, str, str], Path], arch: str) -> None:
    binary = compiled(arch, "async", "costs")
    (kernel,) = listing(binary)["elect_sync_cost"]
    loops = timed_loops(sass.dump(binary, arch), kernel["symbol"])
    # clock reads: | n ELECT steps | 2n ELECT steps | barrier | n control steps | 2n control steps |
    assert len(loops) == 5 and loops[2] is None, loops
    elect, control = loops[0:2], loops[3:5]
    assert all(c is not None for c in elect + control), loops
    for e, c in zip(elect, control, strict=True):
        assert e["ELECT"] == kernel["ops"] == 1 and c["ELECT"] == 0
        # the same step but for ELECT and the move of its lane id: step minus control is the ELECT's
        extra, missing = e - c, c - e
        assert not missing and extra["ELECT"] == 1 and sum(extra.values()) == 2, (e, c)
        assert {op for op in extra if op != "ELECT"} <= MOVES, extra
        assert sass.count(c, "SHF") == sass.count(c, "LOP3") == 1, c  # the chain: shift, then xor into the counter


DEPTH = {1: 900.0, 2: 1700.0, 4: 3000.0, 8: 3900.0, 16: 4150.0, 32: 4250.0}
BANDWIDTH = [c for c in CASES if list(c.measures) == ["bandwidth"] and c.id != "bulk_l2_hint"]


def test_streams_are_bounded_by_dram_and_must_level_off_along_their_sweeps() -> None:
    assert {c.id for c in BANDWIDTH} == {
        "bulk_depth",
        "bulk_ctas",
        "tensor_depth",
        "tensor_ctas",
        "cp_async_stream",
        "ldg_stream",
    }
    for case in BANDWIDTH:
        assert case.peak == "dram" and case.saturate, case.id
        assert set(case.saturate) <= set(case.sweep), case.id  # an axis the case does not sweep saturates nothing
        assert all(len(case.sweep[a]) > 1 for a in case.saturate), case.id
    latency = {c.id: c for c in CASES}
    assert latency["bulk_latency"].same_as[0]["case"] == "tensor_latency"
    assert latency["tensor_latency"].same_as[0]["case"] == "bulk_latency"
    assert latency["bulk_l2_hint"].figures == {"bandwidth": "each"}


def test_first_depth_within_ninety_percent() -> None:
    assert derived.first_reaching(DEPTH) == 8  # 3900 >= 0.9 x 4250 = 3825; 3000 is not
    assert derived.first_reaching(DEPTH, 0.99) == 32
    assert derived.first_reaching({}) is None


def test_levels_of_footprints() -> None:
    assert [derived.level("cp_async_ca_latency", kb) for kb in (16, 4096, 1048576)] == ["L1", "L2", "DRAM"]
    assert derived.level("cp_async_cg_latency", 16) == "L2"  # .cg and the bulk-copy engine bypass the L1
    assert derived.level("bulk_latency", 16) == "L2"


ELECT = {"step": [31.0, 31.0], "control": [22.0, 21.8], "cost": [9.0, 9.2]}  # the one point's metrics, in cycles


def real_shaped_rows(ldg_best: float) -> list[tuple[str, dict[str, int], str, list[float]]]:
    rows = [
        ("bulk_depth", {"bytes": 4096, "ctas": 0, "outstanding": n}, "bandwidth", [v, v + 10]) for n, v in DEPTH.items()
    ]
    rows += [
        ("bulk_ctas", {"bytes": 4096, "ctas": c, "outstanding": 16}, "bandwidth", [min(c, 76) * 55.0])
        for c in (16, 32, 66, 76, 132)
    ]
    rows += [("ldg_stream", {"ctas_per_sm": k, "loads": 8}, "bandwidth", [ldg_best / k]) for k in (1, 2, 4)]
    rows += [
        ("bulk_latency", {"bytes": b, "footprint_kb": kb}, "latency", [v + (b - 4096) / 1024 * 10])
        for kb, v in ((4096, 900.0), (1048576, 1500.0))
        for b in (4096, 16384)
    ]
    rows += [("tensor_latency", {"bytes": 4096, "footprint_kb": 4096}, "latency", [910.0])]
    rows += [("cp_async_ca_latency", {"bytes": 16, "footprint_kb": 16}, "latency", [60.0])]
    rows += [("bulk_l2_hint", {"policy": p}, "bandwidth", [v]) for p, v in ((0, 2000.0), (1, 6000.0))]
    rows += [("fence_proxy_async_cost", {}, "cost", [31.0, 33.0])]
    rows += [("elect_sync_cost", {}, metric, samples) for metric, samples in ELECT.items()]
    return rows


UNITS = {"bandwidth": "GB/s", "latency": "cycle", "cost": "cycle", "step": "cycle", "control": "cycle"}


def with_units(rows: list[tuple[str, dict[str, int], str, list[float]]]) -> pd.DataFrame:
    """raw_frame of the rows, each metric in the unit the binaries print it in."""
    raw = raw_frame(rows)
    return raw.assign(unit=raw["metric"].map(UNITS))


def judged(rows: list[tuple[str, dict[str, int], str, list[float]]]) -> dict[str, pd.DataFrame]:
    """The frames a page of a run of these rows gets: its raw table and its judged figures."""
    raw = with_units(rows)
    found = figures.compute(CASES, {"raw": raw}, {}, "sm_90a", "NVIDIA H200")
    return {"raw": raw, "figures": tables.frame("figures", figures.rows(found, {"category": "async"}))}


def by_name(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return frames["figures"].set_index("figure")


def test_derived_figures_on_a_real_shaped_run() -> None:
    f = by_name(judged(real_shaped_rows(4500.0)))
    ratio = f.loc["TMA bulk best / LDG.128 best"]
    assert ratio["value"] == pytest.approx(4255.0 / 4500.0) and ratio["kind"] == "derived"
    assert ratio["case"] == "bulk_depth" and json.loads(ratio["points"]) == [
        canonical_params({"bytes": 4096, "ctas": 0, "outstanding": 32})
    ]
    assert ratio["spread"] == pytest.approx(4260.0 / 4500.0 - 4250.0 / 4500.0)  # over both parts' extremes
    knee = f.loc["bulk_depth copies in flight per CTA for 90% of its best, bytes=4096"]
    assert knee["value"] == 8 and len(json.loads(knee["points"])) == 6 and "lower bound" not in knee["derivation"]
    ctas = f.loc["bulk_ctas CTAs for 90% of its best, outstanding=16"]
    assert ctas["value"] == 76  # 4180 GB/s from 76 CTAs on: 66 CTAs give 3630 < 0.9 x 4180
    hint = f.loc["bulk_l2_hint re-read with evict_last working set / no hint"]
    assert hint["value"] == pytest.approx(3.0) and hint["params"] == canonical_params({"policy": 1})
    slope = f.loc["bulk_latency cost per KB of one bulk copy, L2"]
    assert slope["value"] == pytest.approx(10.0) and slope["unit"] == "cycle/KB"  # 120 cycles more for 12 KB more
    assert "bulk_latency cost per KB of one bulk copy, DRAM" in f.index
    assert "tensor_latency cost per KB of one tensor copy, L2" not in f.index  # one copy size: no slope


def test_a_knee_at_the_end_of_a_rising_sweep_is_a_lower_bound() -> None:
    rising = [
        ("bulk_ctas", {"bytes": 4096, "ctas": c, "outstanding": 16}, "bandwidth", [c * 20.0])
        for c in (16, 66, 132, 264)
    ]
    raw = with_units([(case, p, m, [v[0] / 2]) for case, p, m, v in rising])  # below the DRAM peak
    (knee,) = derived.knees(raw, {})
    assert knee.value == 264 and "a lower bound" in knee.derivation
    assert [(c.name, c.verdict) for c in knee.checks] == [("plateau", "disagree")]
    peak = next(f for f in figures.compute(CASES, {"raw": raw}, {}, "sm_90a", "NVIDIA H200") if f.kind == "peak")
    status, reason = judge(peak.checks)
    assert status == "contradicted" and "ctas=132 to 264" in reason  # the peak itself is not saturated


def test_tma_and_bulk_latency_check_each_other() -> None:
    f = by_name(judged(real_shaped_rows(4500.0)))
    bulk = f.loc["bulk_latency latency at bytes=4096, footprint_kb=4096"]
    assert "same work: agree" in bulk["checks"] and bulk["status"] == "verified"  # 900 vs 910 cycles: within 5%
    rows = [r for r in real_shaped_rows(4500.0) if r[0] != "tensor_latency"]
    rows.append(("tensor_latency", {"bytes": 4096, "footprint_kb": 4096}, "latency", [1200.0]))
    off = by_name(judged(rows)).loc["bulk_latency latency at bytes=4096, footprint_kb=4096"]
    assert off["status"] == "contradicted" and "tensor_latency" in off["reason"]


def test_view_on_a_real_shaped_run() -> None:
    html = dict(view.sections(judged(real_shaped_rows(4500.0))))
    depth = html["TMA bandwidth versus copies in flight per CTA"]
    assert "<svg" in depth and "copies in flight per CTA for 90% of its best, bytes=4096" in depth
    assert "<td>8.000</td>" in depth and "s-unverified" in depth  # the knee, with its status
    assert "CTAs for 90% of its best, outstanding=16" in html["TMA bandwidth versus CTAs"]
    assert "TMA bulk best / LDG.128 best" not in html["TMA bandwidth versus CTAs"]  # stated once, in its section
    versus = html["TMA bulk versus LDG.128 (same run)"]
    assert "TMA bulk best / LDG.128 best" in versus and "<td>0.9456</td>" in versus
    latency = html["Dependent copy latency (L1 / L2 / DRAM)"]
    assert "<td>DRAM</td>" in latency and "<td>1500</td>" in latency and "<td>L1</td>" in latency
    assert "cost per KB of one bulk copy, L2" in latency
    hints = html["L2 cache hints"]
    assert "evict_last working set" in hints and "<td>3.000</td>" in hints and "method: " in hints
    costs = html["Synchronisation costs"]
    assert "fence_proxy_async_cost cost" in costs and "<td>32.00</td>" in costs
    assert "elect_sync_cost cost" in costs and "<td>9.100</td>" in costs  # the one-warp cost
    assert "elect_sync_cost control" in costs and "<td>21.90</td>" in costs


def test_every_number_of_the_view_is_a_figure() -> None:
    frames = judged(real_shaped_rows(4500.0))
    html = "".join(body for _, body in view.sections(frames))
    shown = set(re.findall(r"<td(?: class=\"num\")?>(-?[0-9][0-9.e+]*)</td>", html))
    stated = {markup.number(v) for v in frames["figures"]["value"]}
    assert shown and shown <= stated, shown - stated


@pytest.mark.parametrize("frames", [{}, {"raw": pd.DataFrame()}])
def test_view_without_measurements_says_so(frames: dict[str, pd.DataFrame]) -> None:
    for title, body in view.sections(frames):
        assert "no " in body and "measurements" in body, title


@pytest.mark.gpu
def test_costs_run_and_are_steady(compiled: Callable[[str, str, str], Path]) -> None:
    binary = compiled("sm_90a", "async", "costs")
    out = subprocess.run(
        [str(binary), "--case", "mbarrier_try_wait_cost", "--repeats", "5"], capture_output=True, text=True, check=True
    ).stdout
    (record,) = [json.loads(line) for line in out.splitlines()]
    assert 0.5 < record["value"] < 200 and max(record["samples"]) - min(record["samples"]) < 2


@pytest.mark.gpu
def test_elect_cost_is_step_minus_control_and_steady(compiled: Callable[[str, str, str], Path]) -> None:
    binary = compiled("sm_90a", "async", "costs")
    out = subprocess.run(
        [str(binary), "--case", "elect_sync_cost", "--repeats", "5"], capture_output=True, text=True, check=True
    ).stdout
    records = {r["metric"]: r for r in map(json.loads, out.splitlines())}
    assert sorted(records) == ["control", "cost", "step"]
    step, control, cost = (records[m]["value"] for m in ("step", "control", "cost"))
    assert abs(cost - (step - control)) < 1 and control > 0, (step, control, cost)  # medians of per-launch values
    one = records["cost"]
    # ELECT and the move of its lane id lie on the one warp's dependent chain: at least the move's latency
    assert 2 <= one["value"] < 100 and max(one["samples"]) - min(one["samples"]) < 1, one


@pytest.mark.gpu
def test_bulk_streams_near_ldg(compiled: Callable[[str, str, str], Path]) -> None:
    binary = compiled("sm_90a", "async", "stream")
    run = [str(binary), "--repeats", "3"]
    bulk = subprocess.run(
        [*run, "--case", "bulk_ctas", "--param", "ctas=264", "--param", "outstanding=16", "--param", "bytes=4096"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    ldg = subprocess.run(
        [*run, "--case", "ldg_stream", "--param", "ctas_per_sm=4", "--param", "loads=8"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (b,), (g,) = [json.loads(x) for x in bulk.splitlines()], [json.loads(x) for x in ldg.splitlines()]
    step = 264 * 4096  # the window is the 4 GiB buffer cut to whole steps of every CTA's copy: 3971 x 264 x 4 KB
    assert b["expect"]["dram__bytes_read.sum"] == (4 << 30) // step * step
    # On the H200 one CTA per SM (bulk_depth) reached 0.49 of LDG; 264 CTAs x 16 copies in flight reached 0.90.
    assert 0.85 < b["value"] / g["value"] < 1.2
