"""The cluster category: manifest, real builds for sm_90a and sm_120a, their SASS against the manifest, one-line
errors for bad parameters, and the report view on frames shaped like a real run."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from helpers import ARCHS, ROOT, assert_profile_budget, assert_sass_claims, raw_frame
from smdissect.analysis import figures
from smdissect.analysis.derived.cluster.placement import sm_groups
from smdissect.analysis.figure_model import Figure
from smdissect.core import catalog, tables
from smdissect.core.tables import canonical_params
from smdissect.measure import sass
from smdissect.pages import markup
from smdissect.pages.views import cluster as view

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
        ("topology", ["--case", "cta_order", "--param", "per_sm=9"], "per_sm must be"),
        ("topology", ["--case", "cta_order"], "--param"),
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
    rows += [
        ("sm_pingpong", {"sm_a": a, "sm_b": b}, "round_trip", [1000.0 + 10 * abs(a - b) + (300 if a == b else 0)])
        for a in (0, 16)
        for b in range(0, 35, 5)
    ]
    for c, active in ((2, 66.0), (8, 15.0)):
        p = {"cluster": c}
        rows += [("cluster_placement", p, "max_active_clusters", [active]), ("cluster_placement", p, "nsmid", [132.0])]
        rows += [
            ("cluster_placement", p, m, [v, v])
            for m, v in (
                ("active_sms", active * c),
                ("distinct_sms_per_cluster", c),
                ("smid_span", c + 1.0),
                ("sm_groups", 132.0 / c),
            )
        ]
        # SMs 0..15 and 18..33 in groups of c; 16, 17 never used
        group_of = [float(sm - sm % c) if sm < 16 else -1.0 for sm in range(18)]
        group_of += [float(18 + (sm - 18) // c * c) for sm in range(18, 34)]
        rows.append(("cluster_placement", p, "group_of_sm", group_of))
    return rows + topology_rows()


GPC_SIZES = (18, 18, 18, 18, 16, 16, 14, 14)  # 132 SMs, numbered GPC after GPC


def topology_rows() -> list[tuple[str, dict[str, int], str, list[float]]]:
    """sm_topology and cta_order on a 132-SM chip of GPC_SIZES: SMs 2k and 2k + 1 always pair except 130 and 131,
    CTAs land on SMs in blockIdx order."""
    starts = [sum(GPC_SIZES[:g]) for g in range(len(GPC_SIZES))]
    group_of = [float(max(s for s in starts if s <= sm)) for sm in range(132)]
    partner = [float(sm ^ 1) if sm < 130 else -2.0 for sm in range(132)]
    active = [132.0 // n if n < 10 else float(sum(g >= n for g in GPC_SIZES)) for n in range(1, 17)]
    t = {}
    rows = [
        ("sm_topology", t, "max_cluster_size", [16.0]),
        ("sm_topology", t, "sm_count_attribute", [132.0]),
        ("sm_topology", t, "nsmid", [132.0]),
        ("sm_topology", t, "active_clusters_by_size", active),
        ("sm_topology", t, "resident_at_once", [1.0] * 6),
        ("sm_topology", t, "group_of_sm", group_of),
        ("sm_topology", t, "partner_of_sm", partner),
    ]
    for per in (1, 2):
        p = {"per_sm": per}
        rows += [
            ("cta_order", p, "sm_count_attribute", [132.0]),
            ("cta_order", p, "distinct_sms", [132.0] * 3),
            ("cta_order", p, "ctas_per_sm", [float(per)] * 3),
            ("cta_order", p, "dispatch_span", [1500.0, 1600.0, 1550.0]),
            ("cta_order", p, "sm_stride", [1.0] * 3),
            ("cta_order", p, "same_sm_as_first", [1.0] * 3),
            ("cta_order", p, "start_in_order", [0.9] * 3),
            ("cta_order", p, "sm_of_cta", [float(i % 132) for i in range(132 * per)]),
            ("cta_order", p, "start_of_cta", [float(10 * i) for i in range(132 * per)]),
        ]
    return rows


UNITS = {
    "latency": "cycle",
    "bandwidth_per_sm": "B/cycle/SM",
    "round_trip": "cycle",
    "max_active_clusters": "cluster",
    "nsmid": "sm",
    "active_sms": "sm",
    "distinct_sms_per_cluster": "sm",
    "smid_span": "sm",
    "sm_groups": "group",
    "group_of_sm": "sm",
    "max_cluster_size": "cta",
    "sm_count_attribute": "sm",
    "active_clusters_by_size": "cluster",
    "resident_at_once": "fraction",
    "partner_of_sm": "sm",
    "distinct_sms": "sm",
    "ctas_per_sm": "cta",
    "dispatch_span": "ns",
    "sm_stride": "sm",
    "same_sm_as_first": "fraction",
    "start_in_order": "fraction",
    "sm_of_cta": "sm",
    "start_of_cta": "ns",
}
SMEM_READ = Figure(
    case="smem_read",
    metric="bandwidth_per_sm",
    unit="B/cycle/SM",
    kind="point",
    name="smem_read bandwidth_per_sm",
    value=126.8,
    spread=0.1,
    samples=9,
    derivation="",
    params="{}",
)


def judged(
    rows: list[tuple[str, dict[str, int], str, list[float]]],
    memory: list[Figure] | None = None,
    status: pd.DataFrame | None = None,
) -> dict[str, pd.DataFrame]:
    """The frames a page of a run of these rows gets: raw (each metric in its unit), status and judged figures
    (memory's figures, for smem_read_local's same-work check, default to an H200's smem_read)."""
    raw = raw_frame(rows, variant="timed")
    raw = raw.assign(unit=raw["metric"].map(UNITS))
    known = {"memory": [SMEM_READ] if memory is None else memory}
    found = figures.compute(CASES, {"raw": raw}, known, "sm_90a", "NVIDIA H200")
    frames = {"raw": raw, "figures": tables.frame("figures", figures.rows(found, {"category": "cluster"}))}
    return frames | ({"status": status} if status is not None else {})


def by_name(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return frames["figures"].set_index("figure")


def test_manifest_fields_of_the_derived_figures() -> None:
    by_id = {c.id: c for c in CASES}
    assert by_id["sm_pingpong"].figures == {"round_trip": "none"}  # the pair summaries stand for the 108 pairs
    assert {"group_of_sm", "nsmid"} <= set(by_id["cluster_placement"].figures)
    for case in ("dsmem_read", "dsmem_write", "smem_read_local", "smem_write_local"):
        assert by_id[case].peak == "smem" and by_id[case].figures == {"bandwidth_per_sm": "each"}, case
    (same,) = by_id["smem_read_local"].same_as
    assert same["case"] == "memory/smem_read" and catalog.referenced_categories(ROOT / "kernels", "cluster") == [
        "memory"
    ]


def test_dsmem_hop_and_ratios() -> None:
    f = by_name(judged(run_rows()))
    hop = f.loc["DSMEM remote hop at cluster=8"]
    assert hop["value"] == pytest.approx(168.0) and hop["case"] == "dsmem_latency" and hop["unit"] == "cycle"
    assert json.loads(hop["points"]) == [canonical_params({"cluster": 8})]
    assert f.loc["DSMEM peer chase / local ld.shared chase at cluster=2", "value"] == pytest.approx(202.0 / 30.0)
    assert f.loc["shared::cluster path to the own CTA minus ld.shared at cluster=4", "value"] == pytest.approx(10.0)
    assert f.loc["DSMEM read / local read bandwidth at cluster=4", "value"] == pytest.approx(0.25)
    assert f.loc["DSMEM write / local write bandwidth at cluster=4", "value"] == pytest.approx(0.25)


def test_one_barrier_figure_over_cluster_sizes() -> None:
    f = by_name(judged(run_rows()))
    over = f.loc["cluster_barrier latency over cluster sizes"]
    # sizes 2 and 8 (cluster 1 is one CTA on one SM; 16 was refused): medians 381 and 421
    assert over["value"] == pytest.approx(401.0) and over["spread"] == pytest.approx(40.0)
    assert over["paper"] == "cluster_barrier_latency_sm120"  # the figure the paper's 408 cycles is compared with
    assert f.loc["cluster_barrier growth from 2 to 8 CTAs per cluster", "value"] == pytest.approx(40.0)
    assert f.loc["cluster barrier release cost (arrive minus arrive.relaxed)", "value"] == pytest.approx(201.0)
    assert (f["metric"] == "latency").sum() > 0 and len(f.filter(like="cluster_barrier latency over", axis=0)) == 1


def test_pingpong_summary_and_groups() -> None:
    f = by_name(judged(run_rows()))
    assert f.loc["sm_pingpong round trip within SM 0", "value"] == 1300.0
    assert f.loc["sm_pingpong round trip, fastest pair", "value"] == 1010.0  # SMs 16 and 15
    near = f.loc["sm_pingpong round trip from SM 16, nearest SM"]
    assert near["value"] == 1010.0 and "to SM 15" in near["derivation"]
    assert f.loc["sm_pingpong round trip from SM 0, farthest SM", "value"] == 1300.0  # SM 30
    assert not (f["case"] == "sm_pingpong").loc[f["kind"] != "derived"].any()  # no per-pair figure: evidence only
    papered = f[(f["case"] == "sm_pingpong") & (f["paper"].fillna("") != "")]
    assert list(papered.index) == ["sm_pingpong round trip, median pair"]  # beside the paper's pair-uniform 1240
    assert "one group" in f.loc["sm_pingpong round trip from SM 0, median SM", "derivation"]
    # SM 66: five near partners at 700 cycles, the rest at 1400: two groups
    rows = [
        ("sm_pingpong", {"sm_a": 66, "sm_b": b}, "round_trip", [700.0 + b % 3 if b < 25 else 1400.0 + b % 7])
        for b in range(0, 130, 5)
    ]
    g = by_name(judged(rows))
    assert g.loc["sm_pingpong round trip from SM 66, near group", "value"] == pytest.approx(701.0)
    assert "SMs 0, 5, 10, 15, 20" in g.loc["sm_pingpong round trip from SM 66, near group", "derivation"]
    assert g.loc["sm_pingpong round trip from SM 66, far group", "value"] == pytest.approx(1403.0)


def test_placement_groups_over_all_launches() -> None:
    f = by_name(judged(run_rows()))
    assert f.loc["cluster_placement SM groups over all launches at cluster=8", "value"] == 4
    assert f.loc["cluster_placement largest SM group at cluster=8", "value"] == 8
    assert f.loc["cluster_placement SM groups over all launches at cluster=2", "value"] == 16
    assert "cluster_placement group_of_sm at cluster=8" not in f.index  # a map, not a figure
    assert view.sm_ranges([7, 0, 1, 2, 5, 8]) == "0-2, 5, 7-8"
    found = sm_groups(raw_frame(run_rows()), canonical_params({"cluster": 8}))
    assert sorted(found) == [0, 8, 18, 26] and found[18] == list(range(18, 26))


def test_local_shared_bandwidth_agrees_with_memory_or_is_contradicted() -> None:
    f = by_name(judged(run_rows()))
    local = f.loc["smem_read_local bandwidth_per_sm at cluster=2"]
    assert local["status"] == "verified" and "same work: agree" in local["checks"]  # 128 vs 126.8 B/cycle/SM
    slow = Figure(**(SMEM_READ.__dict__ | {"value": 100.0, "checks": []}))
    off = by_name(judged(run_rows(), memory=[slow])).loc["smem_read_local bandwidth_per_sm at cluster=2"]
    assert off["status"] == "contradicted" and "memory/smem_read" in off["reason"]


def test_view_on_a_real_shaped_run() -> None:
    status = pd.DataFrame(
        [
            {
                "case": "cluster_barrier",
                "params": canonical_params({"cluster": 16}),
                "status": "static",
                "reason": "no cluster of 16 CTAs fits on this GPU (max active clusters 0)",
            }
        ]
    )
    frames = judged(run_rows(), status=status)
    html = dict(view.sections(frames))
    barrier = html["Cluster barrier cost versus cluster size"]
    assert "<svg" in barrier and "max active clusters 0" in barrier
    assert "cluster_barrier latency over cluster sizes" in barrier and "<td>401.0</td>" in barrier
    assert "<td>191.0</td>" in barrier  # median of the two cluster-1 samples
    dsmem = html["Distributed shared memory versus local shared memory"]
    assert dsmem.count("<svg") == 2 and "<td>168.0</td>" in dsmem and "<td>0.2500</td>" in dsmem
    heat = html["SM-to-SM round trip through global memory (ping-pong heatmap)"]
    assert "<svg" in heat and "<td>1300</td>" in heat and "s-unverified" in heat
    placement = html["Cluster placement: SM ids per cluster and SM groups"]
    assert "18-25" in placement and "largest SM group at cluster=8" in placement
    shown = set(re.findall(r"<td(?: class=\"num\")?>(-?[0-9][0-9.e+]*)</td>", "".join(html.values())))
    stated = {markup.number(v) for v in frames["figures"]["value"]}
    assert shown and shown <= stated | {"0", "8", "18", "26"}, shown - stated  # group ids of the SM map


@pytest.mark.parametrize("arch", ARCHS)
def test_topology_reads_the_special_registers(compiled: Callable[[str, str, str], Path], arch: str) -> None:
    text = sass.dump(compiled(arch, "cluster", "topology"), arch)
    bodies = {k: "\n".join(f"{i.opcode} {i.operands}" for i in v) for k, v in sass.code(text).items()}
    order = next(v for k, v in bodies.items() if k.startswith("order_kernel"))
    topology = next(v for k, v in bodies.items() if k.startswith("topology_kernel"))
    for body in (order, topology):
        assert "SR_VIRTUALSMID" in body and "SR_GLOBALTIMERLO" in body and "SR_CTAID.X" in body
    assert "SR_CgaCtaId" in topology and "SR_CgaCtaId" not in order  # %cluster_ctarank only where clusters are
    # the start is stamped before the SM id and thread checks: the first special-register read is the timer
    assert order.index("SR_GLOBALTIMERLO") < order.index("SR_VIRTUALSMID")


def test_topology_figures_on_a_real_shaped_run() -> None:
    f = by_name(judged(run_rows()))
    sms = f.loc["SMs that ran a CTA (one CTA per SM)"]
    assert sms["value"] == 132 and sms["status"] == "verified" and "cudaDevAttrMultiProcessorCount" in sms["reason"]
    gpcs = f.loc["GPCs (SM groups linked by shared clusters)"]
    # 8 groups above, 8 clusters of 10 CTAs (over half an 18-SM GPC) below: the count is isolated
    assert gpcs["value"] == 8 and gpcs["status"] == "verified" and "GPCs at least 8" in gpcs["reason"]
    assert "8 by cudaOccupancyMaxActiveClusters at 10 CTAs, 8 by packing" in gpcs["reason"]
    assert "18-35 (18 SMs)" in gpcs["derivation"]
    assert (
        f.loc["SMs in the largest GPC group", "value"] == 18 and f.loc["SMs in the smallest GPC group", "value"] == 14
    )
    assert f.loc["SMs in the smallest GPC group", "status"] == "verified"
    tpcs = f.loc["TPCs (SM pairs always together in 2-CTA clusters, inferred)"]
    assert tpcs["value"] == 65 and tpcs["status"] == "unverified" and "65 of the 65 pairs" in tpcs["derivation"]
    # blockIdx in SM order: 124 of 131 steps stay in a GPC (7 boundaries), 65 of 129 paired steps in a TPC
    assert f.loc["cta_order blockIdx i and i + 1 on one GPC group at per_sm=1", "value"] == pytest.approx(124 / 131)
    assert f.loc["cta_order blockIdx i and i + 1 on one inferred TPC at per_sm=1", "value"] == pytest.approx(65 / 129)
    assert f.loc["cta_order blockIdx i and i + 1 on one GPC group at per_sm=2", "value"] == pytest.approx(248 / 263)
    # ping-pong pairs from SMs 0 and 16: partners 0-15 share GPC 0-17, 20-30 lie in GPC 18-35
    assert f.loc["sm_pingpong round trip within one GPC group", "value"] == 1100.0
    assert f.loc["sm_pingpong round trip across GPC groups", "value"] == 1170.0
    assert f.loc["sm_pingpong within minus across GPC groups", "value"] == pytest.approx(-70.0)


def test_topology_bounds_that_do_not_meet_stay_unverified() -> None:
    """Groups never linked (SMs 0-8 and 9-17 of one GPC apart) exceed the occupancy bound: not isolated, and a group
    larger than [H100-WP]'s 18-SM GPC contradicts."""
    rows = [r for r in topology_rows() if r[0] == "sm_topology" and r[2] != "group_of_sm"]
    group_of = [float(sm - sm % 9) if sm < 18 else float(18 if sm < 40 else 40) for sm in range(132)]
    g = by_name(judged([*rows, ("sm_topology", {}, "group_of_sm", group_of)]))
    gpcs = g.loc["GPCs (SM groups linked by shared clusters)"]
    assert gpcs["value"] == 4 and gpcs["status"] == "contradicted" and "bounds below the groups" in gpcs["reason"]
    largest = g.loc["SMs in the largest GPC group"]
    assert largest["value"] == 92 and largest["status"] == "contradicted" and "documented bound" in largest["reason"]
    split = [
        float(sm - sm % 9) if sm < 18 else float(max(s for s in (18, 36, 54, 72, 90, 106, 122) if s <= sm))
        for sm in range(132)
    ]
    h = by_name(judged([*rows, ("sm_topology", {}, "group_of_sm", split)]))
    nine = h.loc["GPCs (SM groups linked by shared clusters)"]
    assert nine["value"] == 9 and nine["status"] == "unverified" and "the bounds do not meet" in nine["reason"]
    assert h.loc["SMs in the smallest GPC group", "status"] == "unverified"
    # size 10 refused (-1): the bound comes from 11 CTAs, still 8 clusters
    refused = [
        (c, p, m, [-1.0 if i == 9 else v for i, v in enumerate(x)] if m == "active_clusters_by_size" else x)
        for c, p, m, x in run_rows()
    ]
    gpcs = by_name(judged(refused)).loc["GPCs (SM groups linked by shared clusters)"]
    assert gpcs["status"] == "verified" and "8 by cudaOccupancyMaxActiveClusters at 11 CTAs" in gpcs["reason"]


def test_topology_view() -> None:
    html = dict(view.sections(judged(run_rows())))["Chip topology: GPCs, TPCs and the order CTAs land on SMs"]
    assert html.count("<svg") == 2 and "0-17 (18 SMs)" in html and "122-131 (10 SMs)" not in html
    assert "118-131 (14 SMs)" in html and "TPCs are an inference" in html and "within minus across" in html


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
    (barrier,) = gpu_records(
        compiled("sm_90a", "cluster", "barrier"), "--case", "cluster_barrier", "--param", "cluster=2"
    )
    assert 10 < barrier["value"] < 5000
    dsmem = compiled("sm_90a", "cluster", "dsmem")
    (peer,) = gpu_records(dsmem, "--case", "dsmem_latency", "--param", "cluster=2")
    (local,) = gpu_records(dsmem, "--case", "smem_latency_local", "--param", "cluster=2")
    assert local["value"] < peer["value"] < 2000 and max(local["samples"]) - min(local["samples"]) < 2


@pytest.mark.gpu
def test_pingpong_same_and_other_sm(compiled: Callable[[str, str, str], Path]) -> None:
    records = gpu_records(
        compiled("sm_90a", "cluster", "pingpong"),
        "--case",
        "sm_pingpong",
        "--param",
        "sm_a=0",
        "--param",
        "sm_b=0,1,100",
    )
    assert [r["params"]["sm_b"] for r in records] == [0, 1, 100]
    assert all(100 < r["value"] < 20000 for r in records)


@pytest.mark.gpu
def test_topology_on_the_gpu(compiled: Callable[[str, str, str], Path]) -> None:
    """Physical facts: a cluster of 1 per SM fills every SM, clusters fit no better as they grow, every launch was
    resident at once, each SM's group is an SM no larger than it, and no group outgrows a full GH100 GPC (18 SMs)."""
    got = {r["metric"]: r for r in gpu_records(compiled("sm_90a", "cluster", "topology"), "--case", "sm_topology")}
    sms, nsmid = got["sm_count_attribute"]["value"], got["nsmid"]["value"]
    active = got["active_clusters_by_size"]["samples"]
    # the CUDA guide: Hopper takes non-portable clusters of 16; the check below needs sizes up to 10
    assert nsmid >= sms and len(active) == got["max_cluster_size"]["value"] >= 10
    taken = [a for a in active if a >= 0]  # -1: a size the runtime refused
    assert active[0] == sms and all(a >= b for a, b in itertools.pairwise(taken))
    assert all(n * a <= sms for n, a in enumerate(active, 1)) and set(got["resident_at_once"]["samples"]) == {1.0}
    group_of = got["group_of_sm"]["samples"]
    assert len(group_of) == nsmid and all(-1 <= g <= sm for sm, g in enumerate(group_of))
    sizes = [group_of.count(g) for g in set(group_of) - {-1}]
    assert 2 <= max(sizes) <= 18 and len(sizes) >= max(active[9:])  # groups bound the GPCs from above
    partner = got["partner_of_sm"]["samples"]
    assert all(p < 0 or partner[int(p)] in (sm, -2) for sm, p in enumerate(partner))


@pytest.mark.gpu
def test_cta_order_on_the_gpu(compiled: Callable[[str, str, str], Path]) -> None:
    """One and two CTAs per SM: every SM gets exactly that many, and each blockIdx lands on a real SM."""
    records = gpu_records(compiled("sm_90a", "cluster", "topology"), "--case", "cta_order", "--param", "per_sm=1,2")
    for per in (1, 2):
        got = {r["metric"]: r for r in records if r["params"]["per_sm"] == per}
        sms = got["sm_count_attribute"]["value"]
        assert set(got["distinct_sms"]["samples"]) == {sms} and set(got["ctas_per_sm"]["samples"]) == {per}
        sm_of = got["sm_of_cta"]["samples"]
        assert len(sm_of) == per * sms and len(set(sm_of)) == sms
        assert all(0 <= span < 200000 for span in got["dispatch_span"]["samples"])  # inside one CTA's 200 us hold
