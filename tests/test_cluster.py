"""The cluster category: manifest, real builds for sm_90a and sm_120a, their SASS against the manifest, one-line
errors for bad parameters, and the report view on frames shaped like a real run."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from conftest import ARCHS, ROOT, assert_profile_budget, assert_sass_claims, raw_frame
from smdissect import catalog, report, sass
from smdissect.tables import canonical_params
from smdissect.views import cluster as view

CASES = catalog.load(ROOT / "kernels", "cluster")
FAMILIES = sorted(catalog.families(CASES))


def test_manifest_sweeps_and_profile_budget() -> None:
    assert_profile_budget("cluster", CASES, 40)
    clusters = {c.id: c for c in CASES if "cluster" in c.sweep}
    assert all(c.features == ("cluster",) for c in clusters.values())
    assert clusters["cluster_barrier"].sweep["cluster"] == [1, 2, 4, 8, 16]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("family", FAMILIES)
def test_family_lists_its_cases_and_its_sass_holds(
    compiled: Callable[[str, str, str], Path], arch: str, family: str
) -> None:
    assert_sass_claims(compiled(arch, "cluster", family), arch, catalog.families(CASES)[family])


@pytest.mark.parametrize("arch", ARCHS)
def test_release_barrier_fences_and_relaxed_does_not(compiled: Callable[[str, str, str], Path], arch: str) -> None:
    counts = sass.opcodes(sass.dump(compiled(arch, "cluster", "barrier"), arch))
    release, relaxed = counts["barrier_kernel<0>"], counts["barrier_kernel<1>"]
    assert sass.count(release, "MEMBAR") >= 64 > sass.count(relaxed, "MEMBAR")
    assert sass.count(release, "UCGABAR_ARV") == sass.count(relaxed, "UCGABAR_ARV")


@pytest.mark.parametrize(
    ("family", "args", "words"),
    [
        ("barrier", ["--case", "nope"], "unknown case"),
        ("barrier", ["--case", "cluster_barrier", "--param", "cluster=3"], "cluster must be"),
        ("dsmem", ["--case", "dsmem_read", "--param", "cluster=x"], "not an integer"),
        ("pingpong", ["--case", "sm_pingpong", "--param", "sm_a=0"], "--param"),
    ],
)
def test_bad_parameters_fail_with_one_line(
    compiled: Callable[[str, str, str], Path], family: str, args: list[str], words: str
) -> None:
    proc = subprocess.run([str(compiled("sm_90a", "cluster", family)), *args], capture_output=True, text=True)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and len(lines) == 1, proc.stderr
    gpu_error = "cudaGetDeviceCount" in lines[0]  # no GPU here: the device is selected before the case runs
    assert gpu_error or words in lines[0], proc.stderr


def run_rows() -> list[tuple[str, dict[str, int], str, list[float]]]:
    """Rows of a plausible H200 run of every case (cluster 16 refused: no rows)."""
    rows = [("cluster_barrier", {"cluster": c}, "latency", [v, v + 2]) for c, v in ((1, 190.0), (2, 380.0), (8, 420.0))]
    rows += [
        ("cluster_barrier_relaxed", {"cluster": c}, "latency", [v]) for c, v in ((1, 40.0), (2, 180.0), (8, 220.0))
    ]
    rows += [("dsmem_latency", {"cluster": c}, "latency", [200.0 + c]) for c in (2, 4, 8)]
    rows += [("dsmem_latency_own", {"cluster": c}, "latency", [40.0]) for c in (2, 4, 8)]
    rows += [("smem_latency_local", {"cluster": c}, "latency", [30.0]) for c in (2, 4, 8)]
    rows += [("dsmem_read", {"cluster": c}, "bandwidth_per_sm", [32.0]) for c in (2, 4, 8)]
    rows += [("smem_read_local", {"cluster": c}, "bandwidth_per_sm", [128.0]) for c in (2, 4, 8)]
    rows += [("dsmem_write", {"cluster": c}, "bandwidth_per_sm", [24.0]) for c in (2, 4, 8)]
    rows += [("smem_write_local", {"cluster": c}, "bandwidth_per_sm", [96.0]) for c in (2, 4, 8)]
    rows += [("sm_pingpong", {"sm_a": a, "sm_b": b}, "round_trip", [1000.0 + 10 * abs(a - b) + (300 if a == b else 0)])
             for a in (0, 16) for b in range(0, 35, 5)]  # fmt: skip
    for c, active in ((2, 66.0), (8, 15.0)):
        p = {"cluster": c}
        rows += [("cluster_placement", p, "max_active_clusters", [active]), ("cluster_placement", p, "nsmid", [132.0])]
        rows += [("cluster_placement", p, m, [v, v]) for m, v in
                 (("active_sms", active * c), ("distinct_sms_per_cluster", c), ("smid_span", c + 1.0),
                  ("sm_groups", 132.0 / c))]  # fmt: skip
        # SMs 0..15 and 18..33 in groups of c; 16, 17 never used
        group_of = [float(sm - sm % c) if sm < 16 else -1.0 for sm in range(18)]
        group_of += [float(18 + (sm - 18) // c * c) for sm in range(18, 34)]
        rows.append(("cluster_placement", p, "group_of_sm", group_of))
    return rows


def test_dsmem_tables_compute_hop_and_ratios() -> None:
    raw = raw_frame(run_rows(), variant="timed")
    latency = report.points(raw, list(view.CHASES), "latency", ["cluster"])
    hop = view.remote_hop(latency).set_index("cluster")
    assert hop.loc[8, "remote hop (cycle)"] == pytest.approx(168.0)
    assert hop.loc[2, "peer / local"] == pytest.approx(202.0 / 30.0)
    streams = report.points(raw, list(view.STREAMS), "bandwidth_per_sm", ["cluster"])
    ratio = view.bandwidth_ratio(streams).set_index(["cluster", "direction"])
    assert ratio.loc[(4, "read"), "DSMEM / local"] == pytest.approx(0.25)
    assert ratio.loc[(4, "write"), "DSMEM / local"] == pytest.approx(0.25)


def test_pair_summary_and_groups() -> None:
    raw = raw_frame(run_rows(), variant="timed")
    pairs = report.points(raw, ["sm_pingpong"], "round_trip", ["sm_a", "sm_b"])
    summary = view.pair_summary(pairs).set_index("sm_a")
    assert summary.loc[0, "same SM (cycle)"] == 1300.0
    assert summary.loc[16, "nearest sm_b"] == 15 and summary.loc[16, "nearest (cycle)"] == 1010.0
    assert summary.loc[0, "farthest sm_b"] == 30
    assert view.sm_ranges([7, 0, 1, 2, 5, 8]) == "0-2, 5, 7-8"
    found = view.groups(raw, canonical_params({"cluster": 8}))
    assert sorted(found) == [0, 8, 18, 26] and found[18] == list(range(18, 26))


def test_view_on_a_real_shaped_run() -> None:
    status = pd.DataFrame([{"case": "cluster_barrier", "params": canonical_params({"cluster": 16}), "status": "static",
                            "reason": "no cluster of 16 CTAs fits on this GPU (max active clusters 0)"}])  # fmt: skip
    html = dict(view.sections({"raw": raw_frame(run_rows(), variant="timed"), "status": status}))
    barrier = html["Cluster barrier cost versus cluster size"]
    assert "<svg" in barrier and "arrive.relaxed + wait (cycle)" in barrier and "max active clusters 0" in barrier
    assert ">191<" in barrier  # median of the two cluster-1 samples
    dsmem = html["Distributed shared memory versus local shared memory"]
    assert dsmem.count("<svg") == 2 and ">168<" in dsmem and ">0.25<" in dsmem
    heat = html["SM-to-SM round trip through global memory (ping-pong heatmap)"]
    assert "<svg" in heat and ">1300<" in heat
    placement = html["Cluster placement: SM ids per cluster and SM groups"]
    assert "18-25" in placement and "4 x 8 SMs" in placement and "16 x 2 SMs" in placement


@pytest.mark.parametrize("frames", [{}, {"raw": pd.DataFrame()}])
def test_view_without_measurements_says_so(frames: dict[str, pd.DataFrame]) -> None:
    for title, body in view.sections(frames):
        assert "no " in body and "measurements" in body, title


def gpu_records(binary: Path, *args: str) -> list[dict]:
    """The records a real run of the binary prints."""
    out = subprocess.run([str(binary), *args, "--repeats", "3"], capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.gpu
def test_cluster_barrier_and_dsmem_on_the_gpu(compiled: Callable[[str, str, str], Path]) -> None:
    (barrier,) = gpu_records(compiled("sm_90a", "cluster", "barrier"), "--case", "cluster_barrier",
                             "--param", "cluster=2")  # fmt: skip
    assert 10 < barrier["value"] < 5000
    dsmem = compiled("sm_90a", "cluster", "dsmem")
    (peer,) = gpu_records(dsmem, "--case", "dsmem_latency", "--param", "cluster=2")
    (local,) = gpu_records(dsmem, "--case", "smem_latency_local", "--param", "cluster=2")
    assert local["value"] < peer["value"] < 2000 and max(local["samples"]) - min(local["samples"]) < 2


@pytest.mark.gpu
def test_pingpong_same_and_other_sm(compiled: Callable[[str, str, str], Path]) -> None:
    records = gpu_records(compiled("sm_90a", "cluster", "pingpong"), "--case", "sm_pingpong",
                          "--param", "sm_a=0", "--param", "sm_b=0,1,100")  # fmt: skip
    assert [r["params"]["sm_b"] for r in records] == [0, 1, 100]
    assert all(100 < r["value"] < 20000 for r in records)
