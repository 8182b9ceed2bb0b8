"""The geometry category: manifest, real builds for every checked arch and their SASS against the manifest, one-line
errors, the derived figures (TLB levels, L1 sector, capacity per carveout, line, ways, L2 fall-off, camping,
persisting gain) and the view on frames shaped like an H200 run, and on a GPU the physical facts they stand on."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import BUILD_ARCHS, ROOT, assert_profile_budget, assert_sass_claims, raw_frame
from smdissect import catalog, figures, tables
from smdissect.derived import geometry as derived
from smdissect.views import geometry as view

CASES = catalog.load(ROOT / "kernels", "geometry")
FAMILIES = sorted(catalog.families(CASES))
Compiled = Callable[[str, str, str], Path]
L2 = 62_914_560  # the H200's cudaDevAttrL2CacheSize
RNG = np.random.default_rng(7)


def test_profile_sweeps_narrow_the_sweep_and_stay_within_the_ncu_budget() -> None:
    assert_profile_budget("geometry", CASES, 30)


def test_every_point_fits_the_budget_of_the_run() -> None:
    assert sum(len(c.points()) for c in CASES) < 260  # ~60 s of GPU time at under 0.2 s a point
    assert {c.family for c in CASES} == {"tlb", "l1", "l2"}


@pytest.mark.parametrize("arch", BUILD_ARCHS)
@pytest.mark.parametrize("family", FAMILIES)
def test_family_lists_its_cases_and_its_sass_holds(compiled: Compiled, arch: str, family: str) -> None:
    assert_sass_claims(compiled(arch, "geometry", family), arch, catalog.families(CASES)[family])


@pytest.mark.parametrize(
    ("family", "args", "says"),
    [
        ("l2", ["--case", "nope"], "unknown case 'nope'"),
        ("tlb", ["--case", "tlb_chase", "--param", "pages"], "--param wants k=v1,v2"),
        ("l1", ["--case", "l1_sector", "--param", "stride_b=eight"], "is not an integer"),
    ],
)
def test_bad_arguments_fail_with_one_line(compiled: Compiled, family: str, args: list[str], says: str) -> None:
    proc = subprocess.run([str(compiled("sm_90a", "geometry", family)), *args], capture_output=True, text=True)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and says in lines[0], proc.stderr


# --- frames shaped like an H200 run -------------------------------------------------------------------------------


def noisy(value: float, n: int = 5) -> list[float]:
    """n samples within 0.2% of value."""
    return list(value * (1 + RNG.uniform(-0.002, 0.002, n)))


def tlb_rows() -> list[tuple]:
    """TLB hit 300 cycles to 16 pages, 420 from 64 to 1024 (32 is a transition), rising past 2048."""
    steps = {1: 300, 2: 300, 4: 301, 8: 300, 16: 302, 32: 360, 64: 420, 128: 421, 256: 420, 512: 422, 1024: 421}
    steps |= {2048: 600, 4096: 700}
    rows = [("tlb_chase", {"pages": p, "stride_mb": 2}, "latency", noisy(v)) for p, v in steps.items()]
    return rows + [
        ("tlb_chase_wide", {"pages": p, "stride_mb": 32}, "latency", noisy(v)) for p, v in steps.items() if p <= 1024
    ]


def sector_frames() -> list[pd.DataFrame]:
    """Per stride: 3 launches of the cold lap (a miss, 300 cycles, at every 32 B sector start; else an L1 hit)."""
    out = []
    for stride in (8, 16, 32, 64, 128, 256):
        lap = 4096 // stride
        one = [300.0 if (k * stride) % 32 == 0 else 34.0 for k in range(lap)]
        p = {"stride_b": stride}
        out.append(raw_frame([("l1_sector", p, "load_latency", one * 3)], iterations=lap))
        out.append(
            raw_frame([("l1_sector", p, "latency", noisy(33.0, 3)), ("l1_sector", p, "timing_overhead", [40.0] * 3)])
        )
    return out


FOOTPRINTS = [8, 16, 24, 32, 48, 64, 96, 128, 160, 192, 224, 256, 320]
L1_KB = {0: 248, 50: 124, 100: 28}  # what the guide's carveouts leave of the H200's 256 KB L1+shared


def chase(kb: float, held_kb: float) -> float:
    """An L1 hit up to the capacity, an L2 hit beyond."""
    return 33.0 if kb <= held_kb else 280.0


def l1_rows() -> list[tuple]:
    rows = [
        ("l1_capacity", {"footprint_kb": kb, "stride_b": 128, "carveout": c}, "latency", noisy(chase(kb, held)))
        for c, held in L1_KB.items()
        for kb in FOOTPRINTS
    ]
    for stride in (64, 256):
        for kb in (64, 96, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640):
            held = 248 * max(1, stride // 128)
            rows.append(("l1_line", {"footprint_kb": kb, "stride_b": stride, "carveout": 0}, "latency",
                         noisy(chase(kb, held))))  # fmt: skip
    for stride in (4, 8, 16, 32, 64, 128):
        held = 4 * max(1, 64 // stride)  # 4 ways; below the 64 KB set span the lines spread over sets
        for lines in (2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 20, 24, 32, 48, 64):
            rows.append(("l1_ways", {"lines": lines, "stride_kb": stride, "carveout": 0}, "latency",
                         noisy(chase(lines, held))))  # fmt: skip
    return rows


def l2_rows() -> list[tuple]:
    bw = {8: 10000, 16: 10050, 24: 9980, 32: 7000, 40: 5200, 48: 5000, 56: 4900, 64: 4800, 80: 4200, 96: 4000}
    bw |= {128: 3900, 256: 3850, 1024: 3800}
    rows = [("l2_bandwidth", {"footprint_mb": mb}, "bandwidth", noisy(v)) for mb, v in bw.items()]
    camp = {1: 9000, 2: 9000, 3: 9000, 64: 3000, 65: 9000, 256: 1500, 257: 9000, 1024: 900, 1025: 8800}
    rows += [("l2_camping", {"stride_lines": s}, "bandwidth", noisy(v)) for s, v in camp.items()]
    rows += [("l2_persist", {"persist": p}, "bandwidth", noisy(v)) for p, v in ((0, 3500), (1, 4200))]
    attrs = {"l2_capacity": L2, "persisting_l2_max": 47185920, "access_policy_max_window": 134213632}
    attrs |= {"smem_per_sm": 233472, "smem_per_block_optin": 232448, "smem_reserved_per_block": 1024}
    return rows + [("device_geometry", {}, m, [float(v)] * 3) for m, v in attrs.items()]


def near(line: int) -> bool:
    """A partition hash of consecutive lines that changes side at most every 4 lines (512 B)."""
    return bin((line >> 2) & 0b101101).count("1") % 2 == 0


def map_frames() -> list[pd.DataFrame]:
    """Two SM slots, 3 launches of 512 lines: near lines ~260 cycles, far ~450, each slot's near the other's far."""
    out = []
    for slot, smid in ((0, 0), (8, 66)):
        one = [(260.0 if near(k) == (slot == 0) else 450.0) + RNG.uniform(-3, 3) for k in range(512)]
        p = {"sm_slot": slot}
        out.append(raw_frame([("l2_address_map", p, "load_latency", one * 3)], iterations=512, smid=smid))
    return out


def real_shaped() -> pd.DataFrame:
    """A raw table like a geometry run on an H200."""
    parts = [raw_frame(tlb_rows() + l1_rows() + l2_rows()), *sector_frames(), *map_frames()]
    return pd.concat(parts, ignore_index=True)


def judged(raw: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The frames a page of this run gets: its raw table and its judged figures."""
    found = figures.compute(CASES, {"raw": raw}, {}, "sm_90a", "NVIDIA H200")
    return {"raw": raw, "figures": tables.frame("figures", figures.rows(found, {"category": "geometry"}))}


@pytest.fixture(scope="module")
def run() -> dict[str, pd.DataFrame]:
    return judged(real_shaped())


def row(frames: dict[str, pd.DataFrame], name: str) -> pd.Series:
    f = frames["figures"].set_index("figure")
    assert name in f.index, sorted(f.index)
    return f.loc[name]


def test_tlb_levels_reach_and_penalty(run: dict[str, pd.DataFrame]) -> None:
    assert row(run, "TLB level 0 latency (2 MB stride)")["value"] == pytest.approx(300.5, abs=1)
    assert row(run, "TLB level 1 latency (2 MB stride)")["value"] == pytest.approx(421, abs=1)
    assert row(run, "TLB level 1 reach in 2 MB pages (2 MB stride)")["value"] == 16
    assert row(run, "TLB level 1 reach (2 MB stride)")["value"] == 32  # MB
    assert row(run, "TLB level 1 miss penalty (2 MB stride)")["value"] == pytest.approx(120, abs=2)
    assert row(run, "TLB level 2 reach in 2 MB pages (2 MB stride)")["value"] == 1024
    assert row(run, "TLB levels the sweep shows (2 MB stride)")["value"] == 2  # one step, and still rising after
    reach = row(run, "TLB level 1 reach (2 MB stride)")
    assert reach["status"] == "unverified" and "4 KB and 64 KB pages cannot be isolated" in reach["reason"]
    assert row(run, "TLB levels the sweep shows (32 MB stride)")["value"] == 1  # its sweep ends on the level


def test_l1_sector_is_the_granularity_of_the_cold_misses(run: dict[str, pd.DataFrame]) -> None:
    sector = row(run, "L1 fill granularity (sector size)")
    assert sector["value"] == 32 and sector["status"] == "verified", sector["reason"]
    assert "miss offsets: agree (100.0% of the cold misses" in sector["checks"]
    assert row(run, "L1 bytes per cold miss at stride 128 B")["value"] == 128
    assert row(run, "L1 hit latency (warmed .ca chase)")["value"] == pytest.approx(33, abs=0.2)
    assert row(run, "L1 cold-miss latency (L2 hit)")["value"] == 300
    # misses every 64 B (a 64 B fill) contradict the documented sector
    raw = real_shaped()
    mine = (raw["case"] == "l1_sector") & (raw["metric"] == "load_latency")
    strides = raw.loc[mine, "params"].map(lambda p: json.loads(p)["stride_b"])
    offsets = raw.loc[mine].groupby("params").cumcount() % raw.loc[mine, "iterations"] * strides
    raw.loc[mine, "value"] = np.where(offsets % 64 == 0, 300.0, 34.0)
    wider = row(judged(raw), "L1 fill granularity (sector size)")
    assert wider["value"] == 64 and wider["status"] == "contradicted"


def test_l1_capacity_per_carveout_line_and_ways(run: dict[str, pd.DataFrame]) -> None:
    for carveout, (last, l1) in {0: (224, 248), 50: (96, 124), 100: (24, 28)}.items():
        fig = row(run, f"L1 capacity footprint (carveout {carveout}%)")
        assert fig["value"] == last and fig["status"] == "verified", fig["reason"]
        assert f"holds {l1} KB" in fig["reason"]
    line = row(run, "L1 line size (capacity against stride)")
    assert line["value"] == 128 and line["status"] == "verified", line["reason"]
    ways = row(run, "L1 associativity (ways)")
    assert ways["value"] == 4 and ways["status"] == "unverified"
    assert row(run, "L1 hit share one line past the ways (replacement)")["value"] == pytest.approx(0, abs=0.01)


def test_a_capacity_over_the_documented_total_is_contradicted() -> None:
    rows = [
        ("l1_capacity", {"footprint_kb": kb, "stride_b": 128, "carveout": 0}, "latency", noisy(chase(kb, 330)))
        for kb in [*FOOTPRINTS, 384]
    ]
    fig = row(judged(raw_frame(rows)), "L1 capacity footprint (carveout 0%)")
    assert fig["value"] == 320 and fig["status"] == "contradicted" and "device bound" in fig["reason"]


def test_l2_falloff_camping_and_persisting(run: dict[str, pd.DataFrame]) -> None:
    level = row(run, "L2 read bandwidth (L2-resident windows)")
    assert level["value"] == pytest.approx(10000, rel=0.01)
    falloff = row(run, "L2 bandwidth fall-off footprint")
    assert falloff["value"] == 24 and falloff["status"] == "verified" and "holds 30 MB" in falloff["reason"]
    assert row(run, "L2 camping ratio, stride 1025 over 1024 lines")["value"] == pytest.approx(8800 / 900, rel=0.01)
    assert row(run, "L2 camping ratio, stride 65 over 64 lines")["value"] == pytest.approx(3, rel=0.01)
    gain = row(run, "L2 persisting-window gain")
    assert gain["value"] == pytest.approx(1.2, rel=0.01) and "bound: agree" in gain["checks"]
    l2 = row(run, "device_geometry l2_capacity")
    assert l2["status"] == "verified", l2["reason"]


def test_a_persisting_gain_past_what_the_hot_reads_can_spare_is_contradicted() -> None:
    rows = [r for r in l2_rows() if r[0] != "l2_persist"]
    rows += [("l2_persist", {"persist": p}, "bandwidth", noisy(v)) for p, v in ((0, 3000), (1, 4500))]
    gain = row(judged(raw_frame(rows)), "L2 persisting-window gain")
    assert gain["status"] == "contradicted" and "bound" in gain["reason"]


def test_l2_address_map_places_consecutive_lines(run: dict[str, pd.DataFrame]) -> None:
    share = row(run, "L2 far share of consecutive lines (SM slot 0, SM 0)")
    assert share["value"] == pytest.approx(np.mean([not near(k) for k in range(512)]), abs=0.01)
    assert "line agreement: agree" in share["checks"]
    assert row(run, "L2 partition interleave (SM slot 0, SM 0)")["value"] == 512
    assert row(run, "L2 lines placed as slot 0 places them (SM slot 8, SM 66)")["value"] == 0


def test_view_on_a_real_shaped_run(run: dict[str, pd.DataFrame]) -> None:
    html = dict(view.sections(run))
    assert set(html) == {"TLB reach and miss penalty", "L1 sector, line, capacity and ways", "L2 geometry"}
    tlb = html["TLB reach and miss penalty"]
    assert tlb.count("<svg") == 1 and "TLB level 1 reach" in tlb and "cannot be isolated" in tlb
    l1 = html["L1 sector, line, capacity and ways"]
    assert l1.count("<svg") == 2 and "L1 fill granularity (sector size)" in l1
    l2 = html["L2 geometry"]
    assert l2.count("<svg") == 2 and "L2 camping ratio" in l2 and "L2 partition interleave" in l2
    assert "e+" not in "".join(html.values())  # no scientific notation


@pytest.mark.parametrize("frames", [{}, {"raw": pd.DataFrame()}, {"raw": raw_frame([])}])
def test_view_without_measurements_says_so(frames: dict[str, pd.DataFrame]) -> None:
    for title, body in view.sections(frames):
        assert "no " in body and "measurements" in body, title


# --- on a GPU ------------------------------------------------------------------------------------------------------


def records(binary: Path, case: str, *params: str) -> list[dict]:
    """The records of one case run with 3 repeats."""
    argv = [str(binary), "--case", case, "--repeats", "3"] + [a for p in params for a in ("--param", p)]
    proc = subprocess.run(argv, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("family", "args", "says"),
    [
        ("tlb", ["--case", "tlb_chase", "--param", "pages=0", "--param", "stride_mb=2"], "pages must be"),
        ("tlb", ["--case", "tlb_chase", "--param", "pages=4", "--param", "stride_mb=3"], "stride_mb must be"),
        ("l1", ["--case", "l1_sector", "--param", "stride_b=12"], "stride_b must be"),
        ("l1", ["--case", "l1_capacity", "--param", "footprint_kb=8", "--param", "stride_b=128"], "--param carveout"),
        ("l2", ["--case", "l2_bandwidth", "--param", "footprint_mb=12"], "footprint_mb must be"),
    ],
)
def test_bad_parameters_fail_with_one_line(compiled: Compiled, family: str, args: list[str], says: str) -> None:
    proc = subprocess.run([str(compiled("sm_90a", "geometry", family)), *args], capture_output=True, text=True)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and len(lines) == 1 and says in lines[0], proc.stderr


@pytest.mark.gpu
def test_tlb_chase_reads_the_l2_and_pays_for_pages(compiled: Compiled) -> None:
    binary = compiled("sm_90a", "geometry", "tlb")
    one, many = (records(binary, "tlb_chase", f"pages={p}", "stride_mb=2")[0]["value"] for p in (1, 4096))
    assert 100 < one < 1000  # an L2 hit, not an L1 hit (~35) nor a DRAM miss
    assert many > one * 1.05  # 4096 pages (8 GB) cannot all stay translated in the first TLB level


@pytest.mark.gpu
def test_l1_sector_misses_once_per_32_bytes(compiled: Compiled) -> None:
    by = {r["metric"]: r for r in records(compiled("sm_90a", "geometry", "l1"), "l1_sector", "stride_b=8")}
    hit = by["latency"]["value"]
    loads = np.array(by["load_latency"]["samples"])
    assert 15 < hit < 60 and (loads > derived.MISS * hit).mean() == pytest.approx(0.25, abs=0.03)


@pytest.mark.gpu
def test_l2_window_is_faster_than_dram_and_persisting_restores_the_limit(compiled: Compiled) -> None:
    binary = compiled("sm_90a", "geometry", "l2")
    small, big = (records(binary, "l2_bandwidth", f"footprint_mb={mb}")[0]["value"] for mb in (8, 1024))
    assert small > 1.5 * big
    off, on = (records(binary, "l2_persist", f"persist={p}")[0]["value"] for p in (0, 1))
    assert on > off
    loads = next(r for r in records(binary, "l2_address_map", "sm_slot=0") if r["metric"] == "load_latency")
    assert len(loads["samples"]) == 3 * 512 and 100 < loads["value"] < 1000  # L2 hits of one SM, every one kept
