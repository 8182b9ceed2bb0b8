"""The launch category: manifest, real builds for sm_90a and sm_120a, their listings and SASS against the manifest
(PDL's PREEXIT/ACQBULK on both archs, cluster launch control's UGETNEXTWORKID on sm_120a only), one-line errors,
the host-side costs' derived figures and checks (cold launch, allocation slopes, unified-memory faults under the
link), and the report view on frames shaped like a real run."""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from helpers import ARCHS, ROOT, assert_profile_budget, listing
from smdissect.analysis import figures
from smdissect.analysis.derived import launch as derived
from smdissect.analysis.figure_model import judge
from smdissect.core import catalog, tables
from smdissect.core.tables import canonical_params
from smdissect.measure import sass
from smdissect.pages.views import launch as view
from smdissect.stages import static as static_stage

CASES = catalog.load(ROOT / "kernels", "launch")
FAMILIES = sorted(catalog.families(CASES))
Compiled = Callable[[str, str, str], Path]


def sass_checks(compiled: Compiled, arch: str, family: str, tmp_path: Path) -> pd.DataFrame:
    """The sass_checks table of one family on one arch, made by the pipeline's own stage."""
    binary = compiled(arch, "launch", family)
    out = tmp_path / arch / family
    static_stage.sass_tables(
        binary,
        binary.with_suffix(".json"),
        catalog.families(CASES)[family],
        arch,
        "test",
        out / "s.parquet",
        out / "c.parquet",
        out / "controls.parquet",
    )
    return tables.read("sass_checks", out / "c.parquet")


def test_profile_sweeps_narrow_the_sweep_and_stay_within_the_ncu_budget() -> None:
    assert_profile_budget("launch", CASES, 40)


def test_paper_ids_exist_and_clc_is_static_on_hopper() -> None:
    reference = set(pd.read_csv(ROOT / "reference" / "seed_sm120.csv")["id"])
    assert all(c.paper in reference for c in CASES if c.paper)
    clc = next(c for c in CASES if c.id == "clc_try_cancel")
    assert clc.unsupported("sm_90a") and clc.unsupported("sm_120a") is None
    assert all(c.unsupported("sm_90a") is None for c in CASES if c.id != "clc_try_cancel")


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("family", FAMILIES)
def test_family_lists_its_cases_and_its_sass_holds(compiled: Compiled, arch: str, family: str, tmp_path: Path) -> None:
    binary = compiled(arch, "launch", family)
    kernels = listing(binary)
    cases = {c.id: c for c in catalog.families(CASES)[family]}
    assert set(kernels) == set(cases)
    counts = sass.opcodes(sass.dump(binary, arch))
    assert all(k["symbol"] in counts for entries in kernels.values() for k in entries)
    checks = sass_checks(compiled, arch, family, tmp_path)
    runnable = {i for i, c in cases.items() if c.unsupported(arch) is None}
    bad = checks[checks["case"].isin(runnable) & (checks["verdict"] != "agree")]
    assert bad.empty, bad[["case", "kernel", "opcode", "expect", "count"]].to_string()
    expected = sum(len(k) for i, k in kernels.items() if cases[i].sass_expect or cases[i].sass_forbid)
    assert checks.groupby(["case", "kernel"]).ngroups == expected


@pytest.mark.parametrize("arch", ARCHS)
def test_pdl_and_clc_instructions_are_where_each_arch_has_them(compiled: Compiled, arch: str) -> None:
    gap = sass.opcodes(sass.dump(compiled(arch, "launch", "gap"), arch))["chain_kernel"]
    assert gap["PREEXIT"] == 1 and gap["ACQBULK"] == 1  # griddepcontrol.launch_dependents / .wait
    clc = sass.opcodes(sass.dump(compiled(arch, "launch", "clc"), arch))["clc_kernel"]
    if arch == "sm_120a":
        assert sass.count(clc, "UGETNEXTWORKID") == 1 and sass.count(clc, "SYNCS.PHASECHK") >= 1
    else:  # compiled out below sm_100: the kernel exists and does nothing
        assert set(clc) <= {"LDC", "EXIT", "BRA", "NOP"}


@pytest.mark.parametrize(
    ("family", "args"),
    [
        ("gap", ["--case", "gap_pdl", "--param", "kernels=two"]),
        ("hostlink", ["--repeats", "0"]),
        ("overhead", ["--case", "launch_round_trip", "--bogus"]),
        ("clc", []),
        ("host", ["--case", "launch_cold", "--param", "ctas=one"]),
    ],
)
def test_bad_arguments_fail_with_one_line(compiled: Compiled, family: str, args: list[str]) -> None:
    proc = subprocess.run([str(compiled("sm_90a", "launch", family)), *args], capture_output=True, text=True)
    assert proc.returncode != 0 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("error: ")


def raw_frame(rows: list[tuple[str, dict[str, int], str, str, list[float]]]) -> pd.DataFrame:
    """A raw table as the run stage writes it: one row per sample."""
    out = []
    for case, params, metric, unit, samples in rows:
        for i, v in enumerate(samples):
            out.append(
                {
                    "gpu": "NVIDIA H200",
                    "arch": "sm_90a",
                    "category": "launch",
                    "case": case,
                    "params": tables.canonical_params(params),
                    "family": "",
                    "metric": metric,
                    "unit": unit,
                    "repeat": i,
                    "value": v,
                    "cycles": 0.0,
                    "iterations": 1,
                    "clock_mhz": 0.0,
                    "smid": -1,
                    "variant": "",
                    "expect": "{}",
                }
            )
    return tables.frame("raw", out)


GAPS = {"gap_serial": 1.2, "gap_graph": 0.9, "gap_pdl": 0.5}  # dependent gap (us) at every point


def real_shaped() -> pd.DataFrame:
    """A raw table like a launch run on an H200: every case, a few points each."""
    rows = [("launch_round_trip", {"ctas": c}, "latency", "us", [9.0, 10.0, 11.0]) for c in (0, 1)]
    rows += [
        ("launch_enqueue", {"ctas": 1}, "enqueue", "us", [2.0, 2.5]),
        ("launch_enqueue", {"ctas": 1}, "completed", "us", [2.6]),
    ]
    for case, gap in GAPS.items():
        for ctas in (0, 1):
            for n in (2, 16):
                p = {"ctas": ctas, "kernels": n}
                rows += [(case, p, "dependent_gap", "us", [gap, gap + 0.2]), (case, p, "per_kernel", "us", [3.0])]
                rows += [(case, p, "start_gap", "us", [gap - 2.0 if case == "gap_pdl" else gap - 0.01])]
    rows += [("globaltimer_step", {}, "step", "ns", [32.0]), ("globaltimer_step", {}, "update_interval", "ns", [32.0])]
    for case, top in (("h2d_pinned", 57.0), ("d2h_pinned", 55.0), ("bidir_pinned", 102.0)):
        rows += [
            (case, {"size_kb": kb}, "bandwidth", "GB/s", [top * f])
            for kb, f in ((4, 0.05), (1024, 0.8), (65536, 0.99), (262144, 1))
        ]
    rows += [("h2d_pageable", {"size_kb": 65536}, "bandwidth", "GB/s", [20.0])]
    rows += [
        ("pcie_link", {}, m, u, [v])
        for m, u, v in (
            ("link_speed", "GT/s", 32.0),
            ("link_width", "lanes", 16),
            ("max_link_speed", "GT/s", 32.0),
            ("max_link_width", "lanes", 16),
        )
    ]
    return raw_frame(rows)


def judged(raw: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The frames a page of this run gets: its raw table and its judged figures."""
    found = figures.compute(CASES, {"raw": raw}, {}, "sm_90a", "NVIDIA H200")
    return {"raw": raw, "figures": tables.frame("figures", figures.rows(found, {"category": "launch"}))}


def by_name(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return frames["figures"].set_index("figure")


def test_pcie_generation_and_peak() -> None:
    assert derived.generation(32.0) == 5 and derived.generation(16.0) == 4 and derived.generation(2.5) == 1
    assert math.isnan(derived.generation(12.0))
    raw, encoded = derived.link_peak(32.0, 16)
    assert raw == 64.0 and encoded == pytest.approx(64.0 * 128 / 130)
    assert derived.link_peak(5.0, 8) == (5.0, 4.0)


def test_gap_figures_are_the_longest_chain_rounded_to_the_timer() -> None:
    f = by_name(judged(real_shaped()))
    serial = f.loc["serial dependent gap, 1 CTA"]
    assert serial["value"] == pytest.approx(1.3) and serial["params"] == canonical_params({"ctas": 1, "kernels": 16})
    assert "rounded to 0.01 us" in serial["derivation"] and "32 ns steps" in serial["derivation"]
    assert f.loc["PDL start gap, one CTA per SM", "value"] == pytest.approx(-1.5)
    assert f.loc["PDL saves against serial, 1 CTA", "value"] == pytest.approx(0.7)  # 1.3 - 0.6
    # not one digit below the timer's: a gap of 1/3 of a 32 ns step prints as 0.01 us steps
    rows = [
        ("gap_serial", {"ctas": 1, "kernels": 64}, "dependent_gap", "us", [0.341333, 0.3466]),
        ("globaltimer_step", {}, "step", "ns", [32.0]),
    ]
    (gap,) = derived.gaps(raw_frame(rows), {})
    assert gap.value == 0.34 and gap.spread == 0.01
    unknown = derived.gaps(raw_frame(rows[:1]), {})[0]  # no timer step measured: not rounded, and it says so
    assert unknown.value == pytest.approx(0.3439665) and "not rounded" in unknown.derivation
    assert not any(n.startswith(("gap_serial", "gap_pdl")) for n in f.index)  # no generic per-point gap figure


def test_host_link_peak_and_shares() -> None:
    f = by_name(judged(real_shaped()))
    assert f.loc["PCIe link raw peak per direction", "value"] == 64.0
    assert f.loc["PCIe link peak per direction after line encoding", "value"] == pytest.approx(64.0 * 128 / 130)
    assert f.loc["H2D pinned best / PCIe raw peak", "value"] == pytest.approx(100 * 57.0 / 64.0)
    assert f.loc["both ways pinned best / PCIe raw peak", "value"] == pytest.approx(100 * 102.0 / 128.0)
    assert f.loc["pageable / pinned H2D at size_kb=65536", "value"] == pytest.approx(20.0 / (0.99 * 57.0))
    # the copy peaks stand on their size sweep: levelled (56.4 -> 57 GB/s) or not saturated (30 -> 57)
    assert f.loc["h2d_pinned peak bandwidth", "status"] == "unverified"
    rising = raw_frame(
        [
            ("h2d_pinned", {"size_kb": kb}, "bandwidth", "GB/s", [v])
            for kb, v in ((4, 3.0), (1024, 30.0), (262144, 57.0))
        ]
    )
    (peak,) = [x for x in figures.compute(CASES, {"raw": rising}, {}, "sm_90a", "NVIDIA H200") if x.kind == "peak"]
    assert judge(peak.checks)[0] == "contradicted" and "size_kb=1024 to 262144" in judge(peak.checks)[1]


def test_view_on_a_real_shaped_run() -> None:
    frames = judged(real_shaped())
    html = dict(view.sections(frames))
    overhead = html["Launch overhead"]
    assert "launch_round_trip latency at ctas=0" in overhead and "<td>10.00</td>" in overhead
    gaps = html["Kernel-to-kernel gaps: serial, graph, PDL"]
    assert "<svg" in gaps and "PDL saves against serial, 1 CTA" in gaps and "<td>0.70</td>" in gaps
    assert "<td>1.30</td>" in gaps and "<td>1.300</td>" not in gaps  # to the timer's 0.01 us, no further
    assert "globaltimer_step step" in gaps
    link = html["Host link (PCIe) bandwidth"]
    assert "<svg" in link and "h2d_pageable bandwidth" in link
    assert "<td>89.06</td>" in link and "<td>79.69</td>" in link  # 57 of 64 GB/s (Gen 5 x16), 102 of 2 x 64
    assert "no cluster-launch-control measurements" in html["Cluster launch control"]


def test_clc_table_when_measured() -> None:
    measured = (("round_trip", "cycle", 850.0), ("failed_round_trip", "cycle", 700.0), ("canceled_share", "", 0.75))
    rows = [("clc_try_cancel", {"ctas_per_sm": 4}, m, u, [v]) for m, u, v in measured]
    body = dict(view.sections(judged(raw_frame(rows))))["Cluster launch control"]
    assert "clc_try_cancel round_trip" in body and "<td>850.0</td>" in body and "<td>0.7500</td>" in body


@pytest.mark.parametrize("frames", [{}, {"raw": pd.DataFrame()}, {"raw": raw_frame([])}])
def test_view_without_measurements_says_so(frames: dict[str, pd.DataFrame]) -> None:
    for title, body in view.sections(frames):
        assert "no " in body and "measurements" in body, title


def host_shaped() -> pd.DataFrame:
    """A raw table like the host family's run on an H200, beside launch_round_trip and the PCIe link."""
    rows = [
        ("launch_round_trip", {"ctas": 1}, "latency", "us", [9.0, 10.0, 11.0]),
        ("launch_cold", {"ctas": 1}, "cold_launch", "us", [40.0, 41.0, 42.0]),
        ("launch_cold", {"ctas": 1}, "warm_launch", "us", [9.3, 9.4, 9.5]),
        ("launch_cold", {"ctas": 1}, "lazy_loading", "bool", [1.0]),
        ("stream_event_query", {}, "stream_query_idle", "us", [0.2, 0.2]),
        ("stream_event_query", {}, "stream_query_busy", "us", [0.5, 0.5]),
    ]
    for kb, m, f in ((4, 2.0, 1.0), (1024, 3.0, 2.0), (65536, 30.0, 50.0), (1048576, 330.0, 650.0)):
        rows += [
            ("malloc_free", {"size_kb": kb}, "malloc", "us", [m]),
            ("malloc_free", {"size_kb": kb}, "free", "us", [f]),
            ("malloc_free", {"size_kb": kb}, "pair", "us", [m + f]),
        ]
    for kb in (2048, 65536):  # 200 us/MiB faulted (5.2 GB/s), 25 us/MiB prefetched (42 GB/s), 1 us/MiB resident
        at = {"size_kb": kb}
        rows += [
            ("managed_fault", at, m, "us/MiB", [v])
            for m, v in (("faulted", 200.0), ("prefetched", 25.0), ("resident", 1.0))
        ]
    rows += [("pcie_link", {}, m, u, [v]) for m, u, v in (("link_speed", "GT/s", 32.0), ("link_width", "lanes", 16))]
    return raw_frame(rows)


def test_cold_launch_costs_more_than_the_warm_one_it_agrees_with() -> None:
    f = by_name(judged(host_shaped()))
    cost = f.loc["cold launch minus warm launch at ctas=1"]
    assert cost["value"] == pytest.approx(41.0 - 9.4) and "lazy loading" in cost["derivation"]
    warm = f.loc["launch_cold warm_launch"]
    assert warm["status"] == "verified" and "launch_round_trip" in warm["reason"]  # 9.4 vs 10 us: within 10%
    far = host_shaped()
    far.loc[far["metric"] == "warm_launch", "value"] = 20.0
    assert by_name(judged(far)).loc["launch_cold warm_launch", "status"] == "contradicted"
    eager = host_shaped()
    eager.loc[eager["metric"] == "lazy_loading", "value"] = 0.0
    assert "eager loading" in by_name(judged(eager)).loc["cold launch minus warm launch at ctas=1", "derivation"]


def test_allocation_slopes_and_page_fault_cost() -> None:
    f = by_name(judged(host_shaped()))
    gib = (1048576 - 65536) / 1024**2
    assert f.loc["cudaMalloc cost per GiB", "value"] == pytest.approx((330 - 30) / gib)
    assert f.loc["cudaFree cost per GiB", "value"] == pytest.approx((650 - 50) / gib)
    assert f.loc["cudaMalloc + cudaFree cost per GiB", "value"] == pytest.approx((980 - 80) / gib)
    assert f.loc["GPU page fault cost per 4 KiB page at size_kb=65536", "value"] == pytest.approx(199 * 4 / 1024)
    assert f.loc["first touch faulted / prefetched at size_kb=2048", "value"] == pytest.approx(8.0)
    assert f.loc["migration rate, prefetched at size_kb=65536", "value"] == pytest.approx(1048.576 / 25)
    assert f.loc["launch_cold cold_launch", "value"] == 41.0 and f.loc["malloc_free free at size_kb=4", "value"] == 1.0
    # a migration faster than the link's raw peak (64 GB/s per direction) is ruled out, whatever else agrees
    fast = host_shaped()
    fast.loc[fast["metric"] == "prefetched", "value"] = 10.0  # 105 GB/s
    rate = by_name(judged(fast)).loc["migration rate, prefetched at size_kb=2048"]
    assert rate["status"] == "contradicted" and "PCIe raw peak" in rate["reason"]


def with_samples(raw: pd.DataFrame, metric: str, params: dict[str, int], values: list[float]) -> pd.DataFrame:
    """`raw` with one metric's samples at one point replaced by `values`."""
    at = (raw["metric"] == metric) & (raw["params"] == tables.canonical_params(params))
    row = raw[at].iloc[0]
    new = pd.DataFrame([row.to_dict() | {"repeat": i, "value": v} for i, v in enumerate(values)])
    return pd.concat([raw[~at], new])


def test_the_allocators_split_is_an_explained_spread_and_a_query_spread_is_not() -> None:
    # the H200's 64 MiB malloc samples: the driver moves work between a malloc and the free after it
    split = with_samples(host_shaped(), "malloc", {"size_kb": 65536}, [53.0, 55.0, 61.0, 69.0, 73.0, 77.0])
    malloc = by_name(judged(split)).loc["malloc_free malloc at size_kb=65536"]
    assert malloc["status"] == "unverified" and "moves work between a cudaMalloc" in malloc["reason"]
    noisy = with_samples(host_shaped(), "stream_query_idle", {}, [0.2, 0.22, 0.3, 0.4, 0.42])
    query = by_name(judged(noisy)).loc["stream_event_query stream_query_idle"]
    assert query["status"] == "contradicted" and "spread" in query["reason"]


def test_view_shows_the_host_costs() -> None:
    body = dict(view.sections(judged(host_shaped())))[
        "Host-side costs: cold launch, allocation, unified memory, queries"
    ]
    assert "<svg" in body and "cudaMalloc and cudaFree over size" in body
    assert "cold launch minus warm launch at ctas=1" in body and "GPU page fault cost per 4 KiB page" in body
    assert "stream_event_query stream_query_busy" in body and "<h3>Stream and event queries</h3>" in body


def run_case(binary: Path, case: str, *params: str) -> tuple[list[dict], str]:
    """The records and stderr of one case run with 3 repeats."""
    argv = [str(binary), "--case", case, "--repeats", "3"] + [a for p in params for a in ("--param", p)]
    proc = subprocess.run(argv, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


@pytest.mark.gpu
def test_gaps_run_and_pdl_overlaps(compiled: Compiled) -> None:
    binary = compiled("sm_90a", "launch", "gap")
    by = {}
    for case in ("gap_serial", "gap_pdl"):
        records, _ = run_case(binary, case, "kernels=16", "ctas=0")
        by[case] = {r["metric"]: r["value"] for r in records}
    assert 0 < by["gap_serial"]["dependent_gap"] < 50 and 0 < by["gap_pdl"]["dependent_gap"] < 50
    assert by["gap_pdl"]["start_gap"] < by["gap_serial"]["start_gap"]  # launched before its predecessor ended
    proc = subprocess.run(
        [str(binary), "--case", "gap_serial", "--param", "kernels=1", "--param", "ctas=1"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0 and proc.stderr.strip() == "error: kernels must be in 2..1024"


@pytest.mark.gpu
def test_launch_overhead_and_host_link_are_plausible(compiled: Compiled) -> None:
    (trip,), _ = run_case(compiled("sm_90a", "launch", "overhead"), "launch_round_trip", "ctas=1")
    assert trip["unit"] == "us" and 1 < trip["value"] < 1000 and trip["cycles"] == 0
    hostlink = compiled("sm_90a", "launch", "hostlink")
    (h2d,), _ = run_case(hostlink, "h2d_pinned", "size_kb=65536")
    assert h2d["unit"] == "GB/s" and 5 < h2d["value"] < 200
    link, stderr = run_case(hostlink, "pcie_link")
    assert {r["metric"] for r in link} == {"link_speed", "link_width", "max_link_speed", "max_link_width"} or (
        not link and stderr.startswith("static: pcie_link")
    )


@pytest.mark.gpu
def test_clc_is_static_below_sm100(compiled: Compiled) -> None:
    records, stderr = run_case(compiled("sm_90a", "launch", "clc"), "clc_try_cancel", "ctas_per_sm=4")
    assert not records and "static: clc_try_cancel" in stderr and "sm_100" in stderr


@pytest.mark.gpu
def test_host_costs_are_physical(compiled: Compiled) -> None:
    binary = compiled("sm_90a", "launch", "host")
    cold = {r["metric"]: r for r in run_case(binary, "launch_cold", "ctas=1")[0]}
    assert len(cold["cold_launch"]["samples"]) == 8 and 1 < cold["warm_launch"]["value"] < 1000
    if cold["lazy_loading"]["value"] == 1:  # the first launch loads the function: it costs more than a warm one
        assert cold["cold_launch"]["value"] > cold["warm_launch"]["value"]
    alloc = {
        (r["metric"], r["params"]["size_kb"]): r["value"]
        for r in run_case(binary, "malloc_free", "size_kb=4,1048576")[0]
    }
    assert alloc[("free", 1048576)] > 0 and alloc[("malloc", 1048576)] > 0
    assert alloc[("malloc", 1048576)] + alloc[("free", 1048576)] > alloc[("malloc", 4)] + alloc[("free", 4)]
    for kb in (4, 1048576):  # each pair's sum is over each of its calls, so the medians keep that order
        assert alloc[("pair", kb)] > max(alloc[("malloc", kb)], alloc[("free", kb)]), alloc
    managed, stderr = run_case(binary, "managed_fault", "size_kb=65536")
    by = {r["metric"]: r["value"] for r in managed}
    assert by["faulted"] > by["prefetched"] > 0 and by["faulted"] > by["resident"] > 0, stderr
    queries = {r["metric"]: r["value"] for r in run_case(binary, "stream_event_query")[0]}
    assert len(queries) == 6 and all(0 < v < 100 for v in queries.values()), queries
