"""The async category: manifest, real builds for sm_90a and sm_120a, their SASS against the manifest, one-line errors,
and the report view on frames shaped like a real run."""

from __future__ import annotations

import importlib
import itertools
import json
import math
import re
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from conftest import ARCHS, ROOT, assert_profile_budget, assert_sass_claims, listing, raw_frame
from smdissect import catalog, sass

view = importlib.import_module("smdissect.views.async")  # `async` is a keyword: no plain import
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


LINE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P(?:T|\d)\s+)?([A-Z][A-Z0-9_.]*)\s*([^;]*);")
MOVES = {"IMAD.U32", "MOV"}  # how ptxas moves ELECT's uniform lane id to a vector register (sm_90a, sm_120a)


def timed_loops(text: str, kernel: str) -> list[Counter[str] | None]:
    """Per region between consecutive SR_CLOCKLO reads of `kernel`, in order: the opcode counts of its loop (from a
    backward branch's target to the branch), or None where the region holds no loop."""
    code, inside = [], False
    for line in text.splitlines():
        if m := sass.FUNCTION.match(line):
            inside = sass.demangle(m.group(1)) == kernel
        elif inside and (m := LINE.match(line)):
            target = re.search(r"0x([0-9a-f]+)", m.group(3)) if m.group(2).startswith("BRA") else None
            code.append((int(m.group(1), 16), m.group(2), m.group(3), int(target.group(1), 16) if target else None))
    reads = [addr for addr, _, operands, _ in code if "SR_CLOCKLO" in operands]
    loops: list[Counter[str] | None] = []
    for start, end in itertools.pairwise(reads):
        back = [(to, addr) for addr, _, _, to in code if start < addr < end and to is not None and start < to < addr]
        assert len(back) <= 1, f"{kernel}: more than one loop between the clock reads at {start:#x} and {end:#x}"
        loops.append(Counter(op for addr, op, _, _ in code if back[0][0] <= addr <= back[0][1]) if back else None)
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


def test_first_depth_within_ninety_percent() -> None:
    curve = pd.DataFrame({"outstanding": list(DEPTH), "value": list(DEPTH.values())})
    assert view.first_reaching(curve, "outstanding") == 8  # 3900 >= 0.9 x 4250 = 3825; 3000 is not
    assert view.first_reaching(curve, "outstanding", 0.99) == 32
    assert math.isnan(view.first_reaching(curve.iloc[0:0], "outstanding"))


def test_ratio_sentence_states_the_verdict() -> None:
    assert "0.950" in view.ratio_sentence(3800.0, 4000.0) and "meets" in view.ratio_sentence(3800.0, 4000.0)
    assert "is below the 0.90 target" in view.ratio_sentence(3000.0, 4000.0)
    assert "missing" in view.ratio_sentence(math.nan, 4000.0)


def test_levels_of_footprints() -> None:
    assert [view.level(kb) for kb in (16, 4096, 1048576)] == ["L1", "L2", "DRAM"]


ELECT = {"step": [31.0, 31.0], "control": [22.0, 21.8], "cost": [9.0, 9.2]}  # the one point's metrics, in cycles


def real_shaped_rows(ldg_best: float) -> list[tuple[str, dict[str, int], str, list[float]]]:
    rows = [
        ("bulk_depth", {"bytes": 4096, "ctas": 0, "outstanding": n}, "bandwidth", [v, v + 10]) for n, v in DEPTH.items()
    ]
    rows += [("bulk_ctas", {"bytes": 4096, "ctas": c, "outstanding": 16}, "bandwidth", [min(c, 76) * 55.0])
             for c in (16, 32, 66, 76, 132)]  # fmt: skip
    rows += [("ldg_stream", {"ctas_per_sm": k, "loads": 8}, "bandwidth", [ldg_best / k]) for k in (1, 2, 4)]
    rows += [
        ("bulk_latency", {"bytes": 4096, "footprint_kb": kb}, "latency", [v])
        for kb, v in ((4096, 900.0), (1048576, 1500.0))
    ]
    rows += [("cp_async_ca_latency", {"bytes": 16, "footprint_kb": 16}, "latency", [60.0])]
    rows += [("bulk_l2_hint", {"policy": p}, "bandwidth", [v]) for p, v in ((0, 2000.0), (1, 6000.0))]
    rows += [("fence_proxy_async_cost", {}, "cost", [31.0, 33.0])]
    rows += [("elect_sync_cost", {}, metric, samples) for metric, samples in ELECT.items()]
    return rows


def test_view_on_a_real_shaped_run() -> None:
    html = dict(view.sections({"raw": raw_frame(real_shaped_rows(4500.0))}))
    depth = html["TMA bandwidth versus copies in flight per CTA"]
    assert "<svg" in depth and '<td class="num">8</td>' in depth
    assert '<td class="num">76</td>' in html["TMA bandwidth versus CTAs"]  # 4180 GB/s from 76 CTAs on
    versus = html["TMA bulk versus LDG.128 (same run)"]
    assert "4255 GB/s / LDG.128 best 4500 GB/s = 0.946" in versus and "meets" in versus
    latency = html["Dependent copy latency (L1 / L2 / DRAM)"]
    assert "DRAM (cycle)" in latency and "1500" in latency and "60" in latency
    assert "evict_last working set" in html["L2 cache hints"] and '<td class="num">3</td>' in html["L2 cache hints"]
    costs = html["Synchronisation costs"]
    assert "fence_proxy_async" in costs and '<td class="num">32</td>' in costs
    assert "<td>elect_sync</td>" in costs and '<td class="num">9.1</td>' in costs  # the one-warp cost among the rest
    # one warp: 31 - 21.9 cycles
    assert "step without it 21.9: ELECT and the move of its lane id to a register add 9.1 cycles" in costs


def test_elect_table_is_the_medians_and_the_cost_spread() -> None:
    table = view.elect_table(raw_frame(real_shaped_rows(4500.0)))
    assert table.round(2).to_dict("records") == [
        {"step (cycle)": 31.0, "control (cycle)": 21.9, "elect.sync adds (cycle)": 9.1, "spread": 0.2}
    ]
    assert view.elect_table(raw_frame(real_shaped_rows(4500.0)[:-1])).empty  # no cost samples: no table


def test_view_says_why_the_ratio_is_low() -> None:
    versus = dict(view.sections({"raw": raw_frame(real_shaped_rows(6000.0))}))["TMA bulk versus LDG.128 (same run)"]
    assert "0.709 (same binary" in versus and "is below" in versus and "is still rising" in versus


@pytest.mark.parametrize("frames", [{}, {"raw": pd.DataFrame()}])
def test_view_without_measurements_says_so(frames: dict[str, pd.DataFrame]) -> None:
    for title, body in view.sections(frames):
        assert "no " in body and "measurements" in body, title


@pytest.mark.gpu
def test_costs_run_and_are_steady(compiled: Callable[[str, str, str], Path]) -> None:
    binary = compiled("sm_90a", "async", "costs")
    out = subprocess.run([str(binary), "--case", "mbarrier_try_wait_cost", "--repeats", "5"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    (record,) = [json.loads(line) for line in out.splitlines()]
    assert 0.5 < record["value"] < 200 and max(record["samples"]) - min(record["samples"]) < 2


@pytest.mark.gpu
def test_elect_cost_is_step_minus_control_and_steady(compiled: Callable[[str, str, str], Path]) -> None:
    binary = compiled("sm_90a", "async", "costs")
    out = subprocess.run([str(binary), "--case", "elect_sync_cost", "--repeats", "5"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
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
    bulk = subprocess.run([*run, "--case", "bulk_ctas", "--param", "ctas=264", "--param", "outstanding=16",
                           "--param", "bytes=4096"], capture_output=True, text=True, check=True).stdout  # fmt: skip
    ldg = subprocess.run([*run, "--case", "ldg_stream", "--param", "ctas_per_sm=4", "--param", "loads=8"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    (b,), (g,) = [json.loads(x) for x in bulk.splitlines()], [json.loads(x) for x in ldg.splitlines()]
    step = 264 * 4096  # the window is the 4 GiB buffer cut to whole steps of every CTA's copy: 3971 x 264 x 4 KB
    assert b["expect"]["dram__bytes_read.sum"] == (4 << 30) // step * step
    # On the H200 one CTA per SM (bulk_depth) reached 0.49 of LDG; 264 CTAs x 16 copies in flight reached 0.90.
    assert 0.85 < b["value"] / g["value"] < 1.2
