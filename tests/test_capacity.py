"""Capacities against what the device reports: the chase's levels count 128 B lines (a strided chain holds one per
slot, not its footprint), a capacity beyond the device's attribute is contradicted, one SM's L2 level is checked
against one partition, and the device's attributes against the product's datasheet row."""

from __future__ import annotations

import pandas as pd
import pytest
from helpers import ROOT, RUN, raw_frame
from smdissect.analysis import figures
from smdissect.analysis.derived.memory.reports import SMEM_RESERVED
from smdissect.analysis.figure_model import Figure, judge
from smdissect.core import catalog, tables

CASES = catalog.load(ROOT / "kernels", "memory")
MEMORY = RUN / "sm_90a" / "memory"
H200 = {  # what the committed H200 reports (device_attributes)
    "sm_count": 132.0,
    "l2_capacity": 62_914_560.0,
    "dram_capacity": 150_109_880_320.0,
    "dram_bus_width": 6016.0,
    "memory_clock": 3201.0,
    "smem_per_sm": 233_472.0,
}
FOOTPRINTS = [1, 16, 64, 128, 256, 512, 1024, 2048, 4096, 16384, 65536, 131072, 262144, 524288, 1048576, 2097152]


def reports(gpu: str = "NVIDIA H200", **values: float) -> pd.DataFrame:
    """device_attributes rows of one card: the H200's report unless `values` say otherwise."""
    rows = [("device_attributes", {}, metric, [value] * 3) for metric, value in (H200 | values).items()]
    return raw_frame(rows, gpu=gpu)


def chase(levels: dict[int, float], stride: int = 0) -> pd.DataFrame:
    """Chase rows of one stride over FOOTPRINTS: each footprint at the latency of the first level (footprint KB ->
    latency) at or beyond it, 9 samples 0.2 cycle apart."""
    curve = {kb: next(v for edge, v in sorted(levels.items()) if kb <= edge) for kb in FOOTPRINTS}
    rows = [
        ("chase", {"footprint_kb": kb, "stride_b": stride}, "latency", [v, v + 0.2] * 4 + [v + 0.1])
        for kb, v in curve.items()
    ]
    return raw_frame(rows, iterations=32768)


def judged(raw: pd.DataFrame, gpu: str = "NVIDIA H200") -> dict[str, tuple[Figure, str, str]]:
    """Every memory figure of `raw` by name, with its status and reason from all its checks."""
    return {f.name: (f, *judge(f.checks)) for f in figures.compute(CASES, {"raw": raw}, {}, "sm_90a", gpu)}


def test_a_capacity_beyond_the_device_is_contradicted_naming_the_attribute() -> None:
    # an L1 level up to 512 KB and an L2 level up to 128 MB: beyond 256 KB of L1+shared and the 60 MB L2
    impossible = chase({512: 32.0, 1024: 150.0, 131072: 280.0, 262144: 420.0, 2097152: 650.0})
    found = judged(pd.concat([reports(), impossible]))
    l1, status, reason = found["chase L1 capacity detected (random)"]
    assert l1.value == 512 and status == "contradicted"
    assert "device bound" in reason and "L1+shared total per SM, 256 KB" in reason and "smem_per_sm" in reason
    l2, status, reason = found["chase L2 capacity detected (random)"]
    assert l2.value == 131072 and status == "contradicted"
    assert "above the device's L2, 60 MB (l2_capacity: cudaDevAttrL2CacheSize" in reason
    bigger = judged(pd.concat([reports(l2_capacity=256 * 2**20), impossible]))  # a card with a 256 MB L2 holds it
    assert bigger["chase L2 capacity detected (random)"][1] != "contradicted"


def test_a_strided_chain_counts_the_lines_it_touches_not_its_footprint() -> None:
    # at 2048 B a slot per 16 lines: on the L1 level up to 2 MB of footprint (128 KB of lines), on the L2 to 256 MB
    strided = chase({2048: 32.0, 4096: 100.0, 262144: 280.0, 524288: 320.0, 2097152: 650.0}, stride=2048)
    found = judged(pd.concat([reports(), strided]))
    l1, status, _ = found["chase L1 capacity detected (stride 2048 B)"]
    assert l1.value == 128 and status != "contradicted"
    assert "128 KB of distinct 128 B lines: one line per 2048 B slot of 2 MB" in l1.derivation
    assert "4 MB (256 KB of lines), is off it" in l1.derivation and "1/16 of the footprint" in l1.method
    l2, status, reason = found["chase L2 capacity detected (stride 2048 B)"]
    assert l2.value == 16384 and status == "unverified"  # 16 to 32 MB of lines: within 60 MB, too coarse to confirm
    assert "2x apart: too coarse (over 1.5x) to confirm the device's L2, 60 MB" in reason
    bound = [c for c in l2.checks if c.name == "device bound"]
    assert [c.verdict for c in bound] == ["agree"] and "16 MB of lines is within the device's L2" in bound[0].detail


def test_the_l2_level_of_one_sm_is_checked_against_one_partition() -> None:
    run = tables.read("raw", sorted(MEMORY.glob("*/raw.parquet")))
    found = judged(run)
    l2, status, reason = found["chase L2 capacity detected (random)"]
    assert l2.value == 24576 and status == "verified"  # 24 to 32 MB of lines holds 30 MB, half the 60 MB
    assert "holds 30 MB, one partition of the device's L2, 60 MB" in reason and "2 partitions" in reason
    whole = judged(run[run["case"] != "chase_near_far"])  # no partitions told apart: the whole L2, not in 24-32 MB
    l2, status, reason = whole["chase L2 capacity detected (random)"]
    assert status == "unverified" and "does not hold the device's L2, 60 MB" in reason
    l1, status, reason = found["chase L1 capacity detected (random)"]
    assert l1.value == 224 and status == "unverified" and "no attribute gives the L1's own size" in reason


def test_no_committed_capacity_is_beyond_the_device() -> None:
    found = judged(tables.read("raw", sorted(MEMORY.glob("*/raw.parquet"))))
    bound = {"l1_capacity": 256, "l2_capacity": H200["l2_capacity"] / 1024}  # KB: L1+shared per SM, the device's L2
    capacities = [(f, status) for f, status, _ in found.values() if f.case == "chase" and f.metric in bound]
    assert len(capacities) == 8  # L1 and L2 of each of the four strides
    for f, status in capacities:
        assert f.value <= bound[f.metric] and status != "contradicted", f.name
        assert [c.verdict for c in f.checks if c.name == "device bound"] == ["agree"], f.name
    assert found["chase L1 capacity detected (stride 2048 B)"][0].value == 128  # was 2048 KB: its footprint
    assert found["chase L2 capacity detected (stride 2048 B)"][0].value == 16384  # was 256 MB
    smem, status, reason = found["smem_capacity capacity_per_block"]
    assert smem.value == H200["smem_per_sm"] - 1024 and status == "verified" and "smem_per_sm" in reason


def test_the_device_attributes_agree_with_the_datasheet_in_its_units() -> None:
    found = judged(reports())
    for metric in ("sm_count", "dram_capacity", "dram_bus_width", "memory_clock", "smem_per_sm"):
        assert found[f"device_attributes {metric}"][1] == "verified", metric
    _, _, reason = found["device_attributes dram_capacity"]
    assert "141 GB read as GiB" in reason and "-0.85%" in reason  # 139.8 GiB: as 1e9 B the card would have more
    assert "= 4814.3 GB/s vs the H200 datasheet's 4800 GB/s (+0.3%" in found["device_attributes memory_clock"][2]
    h100 = {"sm_count": 132.0, "l2_capacity": 50 * 2**20, "dram_capacity": 85_031_714_816.0, "memory_clock": 2619.0}
    same = judged(reports("NVIDIA H100 80GB HBM3", **h100, dram_bus_width=5120.0))
    assert {same[f"device_attributes {m}"][1] for m in h100} == {"verified"}  # 50 MB of L2 is 50 MiB
    more = judged(reports("NVIDIA H100 80GB HBM3", **h100 | {"l2_capacity": 60 * 2**20, "dram_capacity": 81 * 2**30}))
    for metric, said in (("l2_capacity", "60 MiB vs the H100 row's 50 MB"), ("dram_capacity", "80 GB read as GiB")):
        _, status, reason = more[f"device_attributes {metric}"]
        assert status == "contradicted" and said in reason, metric


@pytest.mark.parametrize(("launched", "status"), [(232_448.0, "verified"), (234_496.0, "contradicted")])
def test_the_shared_memory_probe_is_checked_against_the_device(launched: float, status: str) -> None:
    probe = raw_frame([("smem_capacity", {}, "capacity_per_block", [launched] * 3)])
    smem, found, reason = judged(pd.concat([reports(), probe]))["smem_capacity capacity_per_block"]
    assert found == status and "cudaDevAttrMaxSharedMemoryPerMultiprocessor" in reason
    assert SMEM_RESERVED == 1024 and smem.value == launched
