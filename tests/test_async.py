"""The async category: manifest, real builds for sm_90a and sm_120a, their SASS against the manifest, one-line errors,
and the report view on frames shaped like a real run."""

from __future__ import annotations

import importlib
import json
import math
import subprocess
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from conftest import ARCHS, ROOT, assert_profile_budget, assert_sass_claims, raw_frame
from smdissect import catalog

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
    assert (
        "fence_proxy_async" in html["Synchronisation costs"]
        and '<td class="num">32</td>' in html["Synchronisation costs"]
    )


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
def test_bulk_streams_near_ldg(compiled: Callable[[str, str, str], Path]) -> None:
    binary = compiled("sm_90a", "async", "stream")
    run = [str(binary), "--repeats", "3"]
    bulk = subprocess.run([*run, "--case", "bulk_ctas", "--param", "ctas=264", "--param", "outstanding=16",
                           "--param", "bytes=4096"], capture_output=True, text=True, check=True).stdout  # fmt: skip
    ldg = subprocess.run([*run, "--case", "ldg_stream", "--param", "ctas_per_sm=4", "--param", "loads=8"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    (b,), (g,) = [json.loads(x) for x in bulk.splitlines()], [json.loads(x) for x in ldg.splitlines()]
    assert b["expect"]["dram__bytes_read.sum"] == 4 << 30
    # On the H200 one CTA per SM (bulk_depth) reached 0.49 of LDG; 264 CTAs x 16 copies in flight reached 0.90.
    assert 0.85 < b["value"] / g["value"] < 1.2
