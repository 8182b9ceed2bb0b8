"""The interconnect category: manifest, real builds for sm_90a and sm_120a, their SASS against the manifest, what
the binaries do without a second GPU, and the report view on frames shaped like a real run."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from helpers import ARCHS, ROOT, assert_profile_budget, assert_sass_claims, listing, raw_frame
from smdissect.analysis import figures
from smdissect.analysis.derived import interconnect as derived
from smdissect.core import catalog, tables
from smdissect.core.tables import canonical_params
from smdissect.measure import run
from smdissect.pages import markup
from smdissect.pages.views import interconnect as view

CASES = catalog.load(ROOT / "kernels", "interconnect")
FAMILIES = sorted(catalog.families(CASES))
GPU_KEYS = {"src", "dst", "gpu", "mem"}


def test_manifest_sweeps_cover_both_gpus_and_stay_small() -> None:
    for case in CASES:
        gpu_axes = GPU_KEYS & set(case.sweep)
        assert gpu_axes, case.id
        assert all(case.sweep[k] == [0, 1] for k in gpu_axes), case.id
    assert_profile_budget("interconnect", CASES, 40)


def test_families_that_cannot_be_profiled_are_not() -> None:
    settings = {f: catalog.family_settings(ROOT / "kernels", "interconnect", f) for f in FAMILIES}
    assert not settings["peer_copy"]["profile"] and not settings["ping_pong"]["profile"]
    assert not settings["links"]["profile"] and settings["peer_kernel_copy"]["profile"]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("family", FAMILIES)
def test_family_lists_its_cases_and_its_sass_holds(
    compiled: Callable[[str, str, str], Path], arch: str, family: str
) -> None:
    assert_sass_claims(compiled(arch, "interconnect", family), arch, catalog.families(CASES)[family])


def test_every_case_is_listed_without_a_gpu(compiled: Callable[[str, str, str], Path]) -> None:
    """On a machine with 0 or 1 GPU the listing (what the SASS stage and the coverage index read) still names every
    case of the manifest; the static rows for missing peers come from the run stage, which needs a GPU."""
    listed = set()
    for family in FAMILIES:
        listed |= set(listing(compiled(ARCHS[0], "interconnect", family)))
    assert listed == {c.id for c in CASES}


@pytest.mark.parametrize("argv", [["--case", "nope"], ["--param", "src=x"], ["--repeats", "0"], ["--bogus"]])
def test_bad_arguments_fail_with_one_line(compiled: Callable[[str, str, str], Path], argv: list[str]) -> None:
    proc = subprocess.run([str(compiled(ARCHS[0], "interconnect", "peer_copy")), *argv], capture_output=True, text=True)
    assert proc.returncode != 0 and len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("error:")


def test_static_lines_become_static_rows() -> None:
    """The binary's smd::static_point line for a missing peer maps to a static status naming the reason."""
    point = canonical_params({"dst": 1, "size_mb": 16, "src": 0})
    stderr = f"static: memcpy_peer {point}: needs 2 GPUs with peer access; 1 present\n"
    status, reason = run.skipped_why(stderr, "memcpy_peer", point)
    assert status == "static" and reason.endswith("needs 2 GPUs with peer access; 1 present")
    assert run.skipped_why(stderr, "memcpy_peer", canonical_params({"dst": 0, "size_mb": 16, "src": 0}))[0] == "failed"


PAIRS = [(0, 0), (0, 1), (1, 0), (1, 1)]


def run_rows() -> list[tuple[str, dict[str, int], str, list[float]]]:
    """A 2-GPU run: local copies at 2000 GB/s, peer at 400 (bidir 750), peer latency 10x local."""
    rows = []
    for s, d in PAIRS:
        for mb in (1, 16, 256, 1024):
            uni = (2000.0 if s == d else 400.0) * mb / (mb + 1)
            rows.append(("memcpy_peer", {"src": s, "dst": d, "size_mb": mb}, "bandwidth", [uni, uni + 2]))
            rows.append(("memcpy_peer_bidir", {"src": s, "dst": d, "size_mb": mb}, "bandwidth", [uni * 1.875]))
        rows.append(
            ("kernel_copy_peer", {"src": s, "dst": d, "size_mb": 1024}, "bandwidth", [3000.0 if s == d else 360.0])
        )
        rows.append(("atomic_sys_latency", {"gpu": s, "mem": d}, "latency", [198.0 if s == d else 1980.0]))
        rows.append(("ping_pong", {"src": s, "dst": d}, "round_trip", [700.0 if s == d else 2500.0]))
        for mb in (4, 1024):
            local = 270.0 if mb == 4 else 600.0
            rows.append(
                ("peer_chase", {"gpu": s, "mem": d, "footprint_mb": mb}, "latency", [local * (1 if s == d else 4)])
            )
    for s, d in [(0, 1), (1, 0)]:
        for metric, v in [
            ("cuda_peer_access", 1),
            ("cuda_native_atomics", 1),
            ("cuda_performance_rank", 0),
            ("nvml_p2p_read", 1),
            ("nvml_p2p_nvlink", 1),
            ("topology_level", 10),
        ]:
            rows.append(("p2p_link", {"src": s, "dst": d}, metric, [float(v)]))
    for g in (0, 1):
        rows += [("nvlink_state", {"gpu": g}, "nvlinks_active", [18.0])]
        rows += [("nvlink_state", {"gpu": g}, "nvlink_version", [6.0])]
    return rows


UNITS = {"bandwidth": "GB/s", "latency": "cycle", "round_trip": "ns", "nvlinks_active": "links"}
PEER_1G, LOCAL_1G = 400.0 * 1024 / 1025, 2000.0 * 1024 / 1025  # run_rows' 1024 MB copies


def judged(
    rows: list[tuple[str, dict[str, int], str, list[float]]], status: pd.DataFrame | None = None
) -> dict[str, pd.DataFrame]:
    """The frames a page of a run of these rows gets: raw (each metric in its unit), status and judged figures."""
    raw = raw_frame(rows)
    raw = raw.assign(unit=raw["metric"].map(UNITS).fillna(""))
    found = figures.compute(CASES, {"raw": raw}, {}, "sm_90a", "NVIDIA H200")
    frames = {"raw": raw, "figures": tables.frame("figures", figures.rows(found, {"category": "interconnect"}))}
    return frames | ({"status": status} if status is not None else {})


def by_name(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return frames["figures"].set_index("figure")


def test_peer_figures_divide_by_the_same_gpus_local_point() -> None:
    f = by_name(judged(run_rows()))
    chase = f[f["case"].eq("peer_chase") & f["metric"].eq("vs_local")]
    assert len(chase) == 4 and chase["value"].tolist() == pytest.approx([4.0] * 4)
    assert f.loc["kernel_copy_peer 0 -> 1 / local, size_mb=1024", "value"] == pytest.approx(0.12)  # 360 / 3000
    uni = f.loc["memcpy_peer 1 -> 0 / local, size_mb=1024"]  # the largest size only: medians of uni and uni + 2
    assert uni["value"] == pytest.approx((PEER_1G + 1) / (LOCAL_1G + 1)) and uni["kind"] == "derived"
    assert json.loads(uni["points"]) == [
        canonical_params({"dst": 0, "size_mb": 1024, "src": 1}),
        canonical_params({"dst": 1, "size_mb": 1024, "src": 1}),
    ]
    assert f.loc["atomic_sys_latency 0 -> 1 / local", "value"] == pytest.approx(10.0)
    assert f.loc["ping_pong 1 -> 0 / local", "value"] == pytest.approx(2500.0 / 700.0)
    assert f.loc["atomic_sys_latency latency in ns at gpu=0, mem=1", "value"] == pytest.approx(1000.0)  # 1980 MHz


def test_nvlink_share_from_the_drivers_links() -> None:
    f = by_name(judged(run_rows()))
    share = f.loc["memcpy_peer 0 -> 1 / NVLink peak"]
    assert share["value"] == pytest.approx(100 * (PEER_1G + 1) / 450.0)  # 18 links x 25 GB/s each way
    assert "18 active NVLink 4.0 links" in share["derivation"]
    assert f.loc["memcpy_peer_bidir 1 -> 0 / NVLink peak", "value"] == pytest.approx(100 * PEER_1G * 1.875 / 900.0)
    assert derived.nvlink_peak(raw_frame(run_rows()), 0, 1)[0] == 450.0
    no_nvlink = [r for r in run_rows() if not (r[0] == "p2p_link" and r[2] == "nvml_p2p_nvlink")]
    assert derived.nvlink_peak(raw_frame(no_nvlink), 0, 1) is None
    assert "memcpy_peer 0 -> 1 / NVLink peak" not in by_name(judged(no_nvlink)).index


def one_gpu() -> tuple[list[tuple[str, dict[str, int], str, list[float]]], pd.DataFrame]:
    """The same run on a host with one GPU: the local points only, every peer point a static row."""
    rows = [r for r in run_rows() if len({v for k, v in r[1].items() if k in GPU_KEYS}) == 1]
    why = "needs 2 GPUs with peer access; 1 present"
    static = [
        {"case": c, "params": canonical_params(p), "status": "static", "reason": f"static: {c} {why}"}
        for c, p, _, _ in run_rows()
        if len({v for k, v in p.items() if k in GPU_KEYS}) > 1
    ]
    return rows, pd.DataFrame(static).drop_duplicates()


def test_one_gpu_has_no_peer_figure_and_says_why() -> None:
    rows, status = one_gpu()
    frames = judged(rows, status)
    assert not frames["figures"]["metric"].isin(["vs_local", "link_share"]).any()
    html = dict(view.sections(frames))
    for title in (
        "Peer-to-peer copy bandwidth",
        "Cross-GPU atomic latency: local vs peer",
        "Peer memory access latency (pointer chase)",
        "GPU-to-GPU ping-pong round trip",
    ):
        assert "no peer point measured" in html[title] and "needs 2 GPUs with peer access" in html[title], title
    # the local figures keep their per-pair names on one GPU
    assert "atomic_sys_latency latency at gpu=0, mem=0" in set(frames["figures"]["figure"])


def test_view_on_a_real_shaped_run() -> None:
    frames = judged(run_rows())
    html = dict(view.sections(frames))
    bandwidth = html["Peer-to-peer copy bandwidth"]
    assert "<svg" in bandwidth and "memcpy_peer bandwidth at dst=1, size_mb=1024, src=0" in bandwidth
    assert "<td>0.1200</td>" in bandwidth and "Peer against local" in bandwidth  # kernel copy 360 / 3000 GB/s
    atomics = html["Cross-GPU atomic latency: local vs peer"]
    assert "<td>1000</td>" in atomics and "<td>10.00</td>" in atomics  # 1980 cycles at 1980 MHz = 1000 ns, 10x
    chase = html["Peer memory access latency (pointer chase)"]
    assert "<td>2400</td>" in chase and "<td>4.000</td>" in chase  # 4x the local 600 cycles
    assert "<td>3.571</td>" in html["GPU-to-GPU ping-pong round trip"]  # 2500 ns over the local 700
    links = html["Links reported by CUDA and NVML"]
    assert "<td>single switch</td>" in links and "<td>4.0</td>" in links and "<td>18.00</td>" in links
    shown = set(re.findall(r"<td(?: class=\"num\")?>(-?[0-9][0-9.e+]*)</td>", "".join(html.values())))
    assert shown and shown <= {markup.number(v) for v in frames["figures"]["value"]} | {"4.0"}  # NVLink 4.0's name


@pytest.mark.parametrize("frames", [{}, {"raw": pd.DataFrame()}])
def test_view_without_measurements_says_so(frames: dict[str, pd.DataFrame]) -> None:
    for title, body in view.sections(frames):
        assert "no " in body and "measurements" in body, title


def run_case(binary: Path, case: str, *params: str) -> subprocess.CompletedProcess[str]:
    """One case of a family on device 0, three repeats."""
    argv = [str(binary), "--case", case, "--repeats", "3", "--device", "0"]
    for p in params:
        argv += ["--param", p]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def gpu_count() -> int:
    """CUDA devices visible to this process (0 where there is no driver)."""
    proc = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return len(proc.stdout.splitlines()) if proc.returncode == 0 else 0


@pytest.mark.gpu
def test_local_and_peer_copies_and_latency_run(compiled: Callable[[str, str, str], Path]) -> None:
    """Local points always measure; peer points measure on 2 GPUs and are static with the reason on 1."""
    proc = run_case(compiled(ARCHS[0], "interconnect", "peer_latency"), "atomic_sys_latency", "gpu=0", "mem=0,1")
    assert proc.returncode == 0, proc.stderr
    records = {canonical_params(r["params"]): r for r in run.parse_records(proc.stdout)}
    local = records[canonical_params({"gpu": 0, "mem": 0})]
    assert 100 < local["value"] < 5000 and max(local["samples"]) - min(local["samples"]) < 0.1 * local["value"]
    peer = canonical_params({"gpu": 0, "mem": 1})
    if gpu_count() >= 2:
        assert records[peer]["value"] > local["value"]
    else:
        assert run.skipped_why(proc.stderr, "atomic_sys_latency", peer)[0] == "static"


@pytest.mark.gpu
def test_ping_pong_returns_within_its_timeout(compiled: Callable[[str, str, str], Path]) -> None:
    proc = run_case(compiled(ARCHS[0], "interconnect", "ping_pong"), "ping_pong", "src=0", "dst=0,1")
    assert proc.returncode == 0, proc.stderr
    (local,) = [r for r in run.parse_records(proc.stdout) if r["params"] == {"src": 0, "dst": 0}]
    assert 50 < local["value"] < 20000
