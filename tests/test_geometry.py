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
from helpers import BUILD_ARCHS, ROOT, assert_profile_budget, assert_sass_claims, raw_frame
from smdissect.analysis import figures
from smdissect.analysis.derived.geometry import sector, tlb
from smdissect.core import catalog, tables
from smdissect.pages.views import geometry as view

CASES = catalog.load(ROOT / "kernels", "geometry")
FAMILIES = sorted(catalog.families(CASES))
Compiled = Callable[[str, str, str], Path]
L2 = 62_914_560  # the H200's cudaDevAttrL2CacheSize
RNG = np.random.default_rng(7)


def test_profile_sweeps_narrow_the_sweep_and_stay_within_the_ncu_budget() -> None:
    assert_profile_budget("geometry", CASES, 30)


def test_every_point_fits_the_budget_of_the_run() -> None:
    assert sum(len(c.points()) for c in CASES) < 320  # ~60 s of GPU time at under 0.2 s a point
    assert {c.family for c in CASES} == {"tlb", "l1", "l2", "caches", "stores"}


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
        ("caches", ["--case", "const_divergent", "--param", "distinct=two"], "is not an integer"),
        ("stores", ["--case", "reload_cg", "--then", "--case", "nope"], "unknown case 'nope'"),
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


PAGES = [2**k for k in range(16)]  # 1 .. 32768


def tlb_rows() -> list[tuple]:
    """As the H200 showed: at 2 MB flat at ~281 cycles to 32768 pages (a 1.3-cycle bump from 256 pages, under the
    1% a level allows); at 32 MB 281 to 16 pages and 291 from 32 to 2048. At 1 GB (made up): 281 to 4 pages, 291 from
    8 to 32, 600 at 64 (the sweep ends off a level)."""
    narrow = {p: 280.9 + 1.3 * (p >= 256) for p in PAGES}
    wide = {p: 281.0 if p <= 16 else 291.0 for p in PAGES if p <= 2048}
    huge = {p: 281.0 if p <= 4 else 291.0 if p <= 32 else 600.0 for p in PAGES if p <= 64}
    return [
        (case, {"pages": p, "stride_mb": stride}, "latency", noisy(v))
        for case, stride, curve in (
            ("tlb_chase", 2, narrow),
            ("tlb_chase_wide", 32, wide),
            ("tlb_chase_huge", 1024, huge),
        )
        for p, v in curve.items()
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
    for stride in (4, 16, 64):
        held = 4 * max(1, 64 // stride)  # 4 ways; below the 64 KB set span the lines spread over sets
        rows += ways_rows(stride, lambda lines, held=held: chase(lines, held))
    return rows


WAYS_LINES = (2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048)


def ways_rows(stride: int, latency: Callable[[int], float]) -> list[tuple]:
    """l1_ways at one stride over the manifest's line counts."""
    return [
        ("l1_ways", {"lines": n, "stride_kb": stride, "carveout": 0}, "latency", noisy(latency(n))) for n in WAYS_LINES
    ]


CLIFF = [4800.0, 7400.0, 4850.0, 7350.0, 6400.0]  # the H200 at 56 MB: launches mostly hits or mostly misses


def l2_rows(bw: dict[int, float] | None = None) -> list[tuple]:
    """As the H200 showed: ~8900 GB/s to 48 MB, 56 MB at the cliff (bimodal), ~4600 from 64 MB on."""
    bw = bw or {8: 8760, 16: 8890, 24: 8920, 32: 8920, 40: 8920, 48: 8880, 64: 4675, 80: 4640, 96: 4615, 128: 4600}
    bw |= {256: 4580, 1024: 4583}
    rows = [("l2_bandwidth", {"footprint_mb": mb}, "bandwidth", noisy(v)) for mb, v in bw.items()]
    if 56 not in bw:
        rows.append(("l2_bandwidth", {"footprint_mb": 56}, "bandwidth", CLIFF))
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


CONST_B = (256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152, 65536)
NC_KB = (4, 16, 64, 128, 192, 224, 256, 320, 512, 8192)


def const_latency(b: int) -> float:
    """Made up: a 2 KB first constant cache (30 cycles), an 8 KB second (90), the L2 beyond (250)."""
    return 30.0 if b <= 2048 else 90.0 if b <= 8192 else 250.0


def cache_rows() -> list[tuple]:
    """caches.cu and stores.cu as an H200 might show them (made up where no run exists yet): the constant caches'
    steps, a divergent ld.const 4 cycles per address, the nc and texture paths leaving the L1 past 224 KB (as
    l1_capacity at carveout 0), stores of which cg and na drop the line from the L1, prefetches that save latency."""
    rows = [
        ("const_footprint", {"footprint_b": b, "stride_b": 64}, "latency", noisy(const_latency(b))) for b in CONST_B
    ]
    rows += [("const_divergent", {"distinct": d}, "latency", noisy(30.0 + 4 * (d - 1))) for d in (1, 2, 4, 8, 16, 32)]
    for case, hit in (("nc_footprint", 33.0), ("tex_footprint", 60.0)):
        rows += [(case, {"footprint_kb": kb, "stride_b": 128}, "latency", noisy(hit if kb <= 248 else 280.0))
                 for kb in NC_KB]  # fmt: skip
    reload = {"none": 33.0, "wb": 34.0, "cg": 281.0, "cs": 35.0, "wt": 34.0, "na": 157.0}
    rows += [(f"reload_{op}", {"footprint_kb": 4, "stride_b": 128}, "latency", noisy(v)) for op, v in reload.items()]
    rows += [(f"roundtrip_{op}", {}, "latency", noisy(300.0)) for op in ("wb", "cg", "cs", "wt", "na")]
    prefetch = {"none": (280.0, 700.0), "l2": (281.0, 300.0), "l1": (40.0, 320.0)}
    for op, (l2, dram) in prefetch.items():
        rows += [(f"prefetch_{op}", {"level": 2}, "latency", noisy(l2)), (f"prefetch_{op}", {"level": 3}, "latency",
                 noisy(dram))]  # fmt: skip
    rows += [(f"promote_{h}", {"footprint_mb": 512}, "bandwidth", noisy(900.0)) for h in ("none", "64", "128", "256")]
    rows += [("cache_attributes", {}, "constant_memory", [65536.0] * 3)]
    return rows + [("cache_attributes", {}, "l2_fetch_granularity", [64.0] * 3)]


def real_shaped() -> pd.DataFrame:
    """A raw table like a geometry run on an H200."""
    parts = [raw_frame(tlb_rows() + l1_rows() + l2_rows() + cache_rows()), *sector_frames(), *map_frames()]
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


def test_tlb_flat_stride_gives_a_lower_bound_of_the_reach(run: dict[str, pd.DataFrame]) -> None:
    assert row(run, "TLB chase latency before any miss step (2 MB stride)")["value"] == pytest.approx(281.5, abs=1)
    steps = row(run, "TLB miss steps the sweep shows (2 MB stride)")
    assert steps["value"] == 0 and "No miss step from 1 page (2 MB) up to 32768 pages (64 GB)" in steps["derivation"]
    bound = row(run, "TLB reach, lower bound (2 MB stride)")
    assert bound["value"] == 65536 and bound["unit"] == "MB"  # 64 GB: the sweep found no end
    assert "32 MB stride: first step between 16 pages (512 MB) and 32 pages (1 GB)" in bound["derivation"]
    assert bound["status"] == "unverified" and "4 KB and 64 KB pages cannot be isolated" in bound["reason"]
    assert "TLB miss step 1: pages held (2 MB stride)" not in set(run["figures"]["figure"])


def test_tlb_step_gives_a_reach_bracket_and_its_cost(run: dict[str, pd.DataFrame]) -> None:
    assert row(run, "TLB chase latency before any miss step (32 MB stride)")["value"] == pytest.approx(281, abs=1)
    assert row(run, "TLB chase latency after miss step 1 (32 MB stride)")["value"] == pytest.approx(291, abs=1)
    held = row(run, "TLB miss step 1: pages held (32 MB stride)")
    assert held["value"] == 16 and "a reach of 512 MB to 1 GB" in held["derivation"]
    assert row(run, "TLB miss step 1: reach (32 MB stride)")["value"] == 512  # MB
    assert row(run, "TLB miss step 1: cycles per load (32 MB stride)")["value"] == pytest.approx(10, abs=1)
    assert row(run, "TLB reach, lower bound (32 MB stride)")["value"] == 65536  # no second step to 2048 pages
    steps = row(run, "TLB miss steps the sweep shows (32 MB stride)")
    assert steps["value"] == 1 and "+10" in steps["derivation"]
    assert "cycles between 16 pages (512 MB) and 32 pages (1 GB)" in steps["derivation"]
    # at 1 GB the sweep ends off its last level: a step, then no lower bound
    huge = row(run, "TLB miss steps the sweep shows (1 GB stride)")
    assert huge["value"] == 1 and "leaves the last level" in huge["derivation"]
    assert "TLB reach, lower bound (1 GB stride)" not in set(run["figures"]["figure"])


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
    assert ways["value"] == 4 and ways["status"] == "unverified" and "a conflict miss" in ways["derivation"]
    assert row(run, "L1 hit share one line past the ways (replacement)")["value"] == pytest.approx(0, abs=0.01)


@pytest.mark.parametrize(
    ("held", "says"),
    [(1536, "2048 lines leave it only past the 1792 lines the L1 holds"), (4096, "the sweep ends on the level")],
)
def test_ways_without_a_conflict_miss_are_a_lower_bound(held: int, says: str) -> None:
    rows = [r for r in l1_rows() if r[0] != "l1_ways"]
    rows += [r for stride in (4, 64) for r in ways_rows(stride, lambda n: chase(n, held))]
    frames = judged(raw_frame(rows))
    bound = row(frames, "L1 associativity (ways), lower bound")
    assert bound["value"] == min(held, 2048) and says in bound["derivation"]
    names = set(frames["figures"]["figure"])
    assert "L1 associativity (ways)" not in names and "L1 hit share one line past the ways (replacement)" not in names


def test_a_capacity_over_the_documented_total_is_contradicted() -> None:
    rows = [
        ("l1_capacity", {"footprint_kb": kb, "stride_b": 128, "carveout": 0}, "latency", noisy(chase(kb, 330)))
        for kb in [*FOOTPRINTS, 384]
    ]
    fig = row(judged(raw_frame(rows)), "L1 capacity footprint (carveout 0%)")
    assert fig["value"] == 320 and fig["status"] == "contradicted" and "device bound" in fig["reason"]


def test_l2_falloff_camping_and_persisting(run: dict[str, pd.DataFrame]) -> None:
    level = row(run, "L2 read bandwidth (L2-resident windows)")
    assert level["value"] == pytest.approx(8900, rel=0.01)
    falloff = row(run, "L2 bandwidth fall-off footprint")
    assert falloff["value"] == 48 and falloff["status"] == "verified", falloff["reason"]
    assert "between 48 and 64 MB, which holds the device's whole 60 MB L2" in falloff["reason"]
    assert "56 MB: 6400 GB/s, launches from 4800 to 7400" in falloff["derivation"]
    assert json.loads(falloff["points"]) == ['{"footprint_mb":48}', '{"footprint_mb":64}']  # the plateau ends only
    assert row(run, "l2_bandwidth bandwidth at footprint_mb=56")["status"] == "contradicted"  # its own spread
    assert row(run, "L2 camping ratio, stride 1025 over 1024 lines")["value"] == pytest.approx(8800 / 900, rel=0.01)
    assert row(run, "L2 camping ratio, stride 65 over 64 lines")["value"] == pytest.approx(3, rel=0.01)
    gain = row(run, "L2 persisting-window gain")
    assert gain["value"] == pytest.approx(1.2, rel=0.01) and "bound: agree" in gain["checks"]
    names = set(run["figures"]["figure"])
    assert "device_geometry l2_capacity" not in names  # memory/device_attributes' figure: one answer per quantity
    assert "device_geometry persisting_l2_max" in names


def test_a_falloff_short_of_the_whole_l2_is_not_verified() -> None:
    bw = {8: 8900, 16: 8900, 24: 8900, 32: 4700, 40: 4650, 48: 4600, 56: 4600, 64: 4600}
    falloff = row(judged(raw_frame(l2_rows(bw))), "L2 bandwidth fall-off footprint")
    assert (
        falloff["value"] == 24
        and falloff["status"] != "verified"
        and "short of the device's whole" in falloff["reason"]
    )


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


def test_constant_caches_levels_sizes_and_divergence(run: dict[str, pd.DataFrame]) -> None:
    first, second = (row(run, f"ld.const level {k} capacity footprint") for k in (1, 2))
    assert first["value"] == 2 and first["status"] == "unverified"  # no documented size brackets 2 KB
    assert second["value"] == 8 and second["status"] == "verified"  # the guide's 8 KB working set
    assert row(run, "ld.const level 1 latency")["value"] == pytest.approx(30, rel=0.01)
    assert "ld.const level 3 capacity footprint" not in set(run["figures"]["figure"])  # the sweep ends on it
    per = row(run, "divergent ld.const: cycles per further distinct address")
    assert per["value"] == pytest.approx(4, rel=0.05) and per["status"] != "contradicted"
    memory_size = row(run, "constant memory (cudaDevAttrTotalConstantMemory)")
    assert memory_size["value"] == 65536 and memory_size["status"] == "verified"


def test_read_only_and_texture_paths_end_with_the_l1(run: dict[str, pd.DataFrame]) -> None:
    for reads in ("ld.global.nc", "tex1Dfetch"):
        size = row(run, f"{reads} level 1 capacity footprint")
        assert size["value"] == 224 and size["status"] == "verified", size["reason"]


def test_a_texture_cache_apart_from_the_l1_is_contradicted() -> None:
    raw = real_shaped()
    tex = (raw["case"] == "tex_footprint") & raw["params"].str.contains('"footprint_kb":(?:128|192|224)[,}]')
    raw.loc[tex, "value"] = 280.0  # the texture path leaves its first level past 64 KB, not with the L1 (224-256)
    size = row(judged(raw), "tex1Dfetch level 1 capacity footprint")
    assert size["value"] == 64 and size["status"] == "contradicted" and "same cache" in size["reason"]


def test_store_operators_place_the_next_load_and_prefetch_saves(run: dict[str, pd.DataFrame]) -> None:
    share = {op: row(run, f"L1 hit share of a load after st.global.{op} to its line")["value"] for op in ("wb", "cg")}
    assert share["wb"] == pytest.approx(1, abs=0.02) and share["cg"] == pytest.approx(0, abs=0.02)
    half = row(run, "L1 hit share of a load after st.global.L1::no_allocate to its line")
    assert half["value"] == pytest.approx(0.5, abs=0.02)
    saved = row(run, "latency saved by prefetch.global.L2 (DRAM chain)")
    assert saved["value"] == pytest.approx(400, rel=0.02) and saved["unit"] == "cycle"
    assert row(run, "latency saved by prefetch.global.L1 (L2-resident chain)")["value"] == pytest.approx(240, rel=0.03)


def test_a_load_after_a_store_outside_both_levels_is_contradicted() -> None:
    raw = real_shaped()
    raw.loc[raw["case"] == "reload_wt", "value"] = 600.0  # slower than an L2 hit: not a question of the L1
    fig = row(judged(raw), "L1 hit share of a load after st.global.wt to its line")
    assert fig["status"] == "contradicted" and "between levels" in fig["reason"]


def test_view_on_a_real_shaped_run(run: dict[str, pd.DataFrame]) -> None:
    html = dict(view.sections(run))
    assert set(html) == {
        "TLB reach and miss penalty",
        "L1 sector, line, capacity and ways",
        "L2 geometry",
        "Constant, read-only and texture caches",
        "Store cache operators, prefetch and L2 sector promotion",
    }
    caches = html["Constant, read-only and texture caches"]
    assert caches.count("<svg") == 1 and "ld.const level 2 capacity footprint" in caches
    stores = html["Store cache operators, prefetch and L2 sector promotion"]
    assert "L1 hit share of a load after st.global.cg" in stores and "latency saved by prefetch.global.L2" in stores
    tlb = html["TLB reach and miss penalty"]
    assert tlb.count("<svg") == 1 and "TLB miss step 1: reach" in tlb and "cannot be isolated" in tlb
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
    pages = "pages=1,64,1024"
    narrow, wide = (
        {r["params"]["pages"]: r["value"] for r in records(binary, case, pages, f"stride_mb={mb}")}
        for case, mb in (("tlb_chase", 2), ("tlb_chase_wide", 32))
    )
    first = narrow[1]
    assert 100 < first < 1000  # an L2 hit, not an L1 hit (~35) nor a DRAM miss
    # more pages never make a load cheaper than the first level (by more than the ~1% the L2 slices move a point)
    assert min([*narrow.values(), *wide.values()]) > first * (1 - tlb.TLB_NEAR)
    # lines 32 MB apart need at least as many translations as lines 2 MB apart at the same page count
    assert all(wide[p] > narrow[p] * (1 - tlb.TLB_NEAR) for p in (64, 1024))


@pytest.mark.gpu
def test_l1_sector_misses_once_per_32_bytes(compiled: Compiled) -> None:
    by = {r["metric"]: r for r in records(compiled("sm_90a", "geometry", "l1"), "l1_sector", "stride_b=8")}
    hit = by["latency"]["value"]
    loads = np.array(by["load_latency"]["samples"])
    assert 15 < hit < 60 and (loads > sector.MISS * hit).mean() == pytest.approx(0.25, abs=0.03)


@pytest.mark.gpu
def test_l2_window_is_faster_than_dram_and_persisting_restores_the_limit(compiled: Compiled) -> None:
    binary = compiled("sm_90a", "geometry", "l2")
    small, big = (records(binary, "l2_bandwidth", f"footprint_mb={mb}")[0]["value"] for mb in (8, 1024))
    assert small > 1.5 * big
    off, on = (records(binary, "l2_persist", f"persist={p}")[0]["value"] for p in (0, 1))
    assert on > off
    loads = next(r for r in records(binary, "l2_address_map", "sm_slot=0") if r["metric"] == "load_latency")
    assert len(loads["samples"]) == 3 * 512 and 100 < loads["value"] < 1000  # L2 hits of one SM, every one kept


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("family", "args", "says"),
    [
        ("caches", ["--case", "const_divergent", "--param", "distinct=33"], "distinct must be in 1..32"),
        ("caches", ["--case", "const_footprint", "--param", "footprint_b=131072", "--param", "stride_b=64"],
         "footprint_b must be"),
        ("stores", ["--case", "prefetch_l2", "--param", "level=4"], "level must be 2"),
        ("stores", ["--case", "promote_256", "--param", "footprint_mb=0"], "footprint_mb must be"),
    ],
)  # fmt: skip
def test_bad_cache_parameters_fail_with_one_line(compiled: Compiled, family: str, args: list[str], says: str) -> None:
    proc = subprocess.run([str(compiled("sm_90a", "geometry", family)), *args], capture_output=True, text=True)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and len(lines) == 1 and says in lines[0], proc.stderr


@pytest.mark.gpu
def test_constant_read_only_and_texture_paths(compiled: Compiled) -> None:
    binary = compiled("sm_90a", "geometry", "caches")
    const = {r["params"]["footprint_b"]: r["value"] for r in records(binary, "const_footprint", "footprint_b=256",
                                                                    "stride_b=64")}  # fmt: skip
    assert 5 < const[256] < 300  # a constant-cache hit: the chain is 4 lines
    one, every = (records(binary, "const_divergent", f"distinct={d}")[0]["value"] for d in (1, 32))
    assert every > one + 31  # each further distinct address is at least one more request of the warp
    for case in ("nc_footprint", "tex_footprint"):
        near, far = (records(binary, case, f"footprint_kb={kb}", "stride_b=128")[0]["value"] for kb in (4, 8192))
        assert far > 2 * near  # 4 KB stays in the SM's cache, 8 MB (past every L1) comes from the L2
    sizes = {r["metric"]: r["value"] for r in records(binary, "cache_attributes")}
    assert sizes["constant_memory"] == 65536 and sizes["l2_fetch_granularity"] in (0, 32, 64, 128)


@pytest.mark.gpu
def test_stores_prefetch_and_promotion_run_and_order(compiled: Compiled) -> None:
    binary = compiled("sm_90a", "geometry", "stores")
    hit = records(binary, "reload_none", "footprint_kb=4", "stride_b=128")[0]["value"]
    assert 15 < hit < 60  # the 4 KB chain is held by the L1
    for op in ("wb", "cg", "cs", "wt", "na"):
        # the load after the store waits for the stored word, and is no cheaper than a load alone
        assert records(binary, f"roundtrip_{op}")[0]["value"] > hit
        assert records(binary, f"reload_{op}", "footprint_kb=4", "stride_b=128")[0]["value"] > 0.9 * hit
    plain = {r["params"]["level"]: r["value"] for r in records(binary, "prefetch_none", "level=2,3")}
    assert plain[3] > plain[2] > 2 * hit  # the cold chain's loads reach DRAM, the warm one's the L2
    for op in ("l2", "l1"):
        with_it = {r["params"]["level"]: r["value"] for r in records(binary, f"prefetch_{op}", "level=2,3")}
        assert all(with_it[k] < 1.1 * plain[k] for k in (2, 3))  # a prefetch costs an issue slot, not a load's wait
    for hint in ("none", "64", "128", "256"):
        rec = records(binary, f"promote_{hint}", "footprint_mb=512")[0]  # every launch's word sum checked inside
        assert rec["value"] > 0 and rec["expect"]["dram__bytes_read.sum"] >= 32 * rec["iterations"]
