"""The frozen H200 run (fixtures/run): its latency numbers meet the foundation's bar, and crossval reproduces its
verdicts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
from helpers import ROOT, RUN
from smdissect.analysis import crossval
from smdissect.core import catalog, tables
from smdissect.stages import gpu as gpu_stage
from smdissect.stages import tables as tables_stage

GPU_DIR = RUN / "sm_90a" / "latency"


def read(kind: str, folder: Path = GPU_DIR) -> pd.DataFrame:
    paths = sorted(folder.rglob(f"{kind}.parquet"))
    assert paths, f"no {kind} table under {folder}"
    return tables.read(kind, paths)


def test_ffma_latency_is_four_cycles_with_sub_cycle_spread() -> None:
    raw = read("raw")
    latency = raw[raw.metric == "latency"]
    ffma = latency[latency.case == "ffma"].value
    assert 3.75 <= ffma.median() <= 4.25
    spread = latency.groupby("case").value.agg(lambda s: s.max() - s.min())
    assert (spread < 1.0).all(), spread[spread >= 1.0]
    assert set(latency.case) == {c.id for c in catalog.load(ROOT / "kernels", "latency")}


def test_ffma_pipe_counter_matches_the_chain_within_one_percent() -> None:
    cv = read("crossval")
    pipe = cv[(cv.case == "ffma") & cv.check.str.contains("sm__inst_executed_pipe_fma.sum")]
    # ncu profiles the latency point (ilp 1, one warp), the throughput point (ilp 8, 32 warps) and the point the
    # peak figure stands on (ilp 4, 32 warps): every point a figure is taken at
    assert set(pipe.params) == {'{"ilp":1,"warps":1}', '{"ilp":8,"warps":32}', '{"ilp":4,"warps":32}'}
    assert (pipe.rel_err <= 0.01).all() and (pipe.verdict == "agree").all()


def test_every_case_has_verdicts_and_every_disagree_an_explanation() -> None:
    cv = read("crossval")
    assert set(cv.verdict) <= set(tables.VERDICTS)
    assert set(cv.case) == {c.id for c in catalog.load(ROOT / "kernels", "latency")}
    unexplained = cv[(cv.verdict == "disagree") & (cv.note.fillna("").str.len() == 0)]
    assert unexplained.empty, unexplained
    not_applicable = cv[cv.verdict == "not-applicable"]
    assert (not_applicable.note.str.len() > 0).all()


def test_every_gpu_row_carries_provenance() -> None:
    for kind in ("raw", "ncu", "stalls", "pipes"):
        df = read(kind)
        assert (df.gpu == "NVIDIA H200").all() and df.gpu_uuid.str.startswith("GPU-").all(), kind
        assert df.driver.str.len().gt(0).all() and df.sm_clock_after_mhz.gt(0).all(), kind


def test_crossval_reproduces_the_committed_verdicts(compiled: Callable[[str, str, str], Path]) -> None:
    cases = catalog.load(ROOT / "kernels", "latency")
    listings = [compiled("sm_90a", "latency", f).with_suffix(".json") for f in catalog.families(cases)]
    rows = crossval.crossval(
        cases,
        read("raw"),
        read("ncu"),
        read("stalls"),
        read("sass_checks", RUN / "static" / "sm_90a" / "latency"),
        tables_stage.kernel_ops(listings),
        set(catalog.families(cases)),
    )
    ours = {(r["case"], r["params"], r["check"]): r["verdict"] for r in rows}
    committed = read("crossval")
    theirs = dict(
        zip(zip(committed.case, committed.params, committed.check, strict=True), committed.verdict, strict=True)
    )
    assert ours == theirs
    # a point without counters says why: a figure point the run did not profile, or the manifest's reason
    planned = crossval.planned_points(cases, read("raw"), set(catalog.families(cases)))
    by_id = {c.id: c for c in cases}
    for r in (r for r in rows if r["check"].startswith("profile:")):
        why = crossval.NO_KERNEL if (r["case"], r["params"]) in planned else by_id[r["case"]].unprofiled
        assert r["note"] == why and "not profiled" not in why, r


def test_ncu_also_profiles_each_peak_outside_the_profiled_sweeps() -> None:
    """The throughput peak of every chain case (best median over its sweep) is profiled: in its profile_sweep, or
    as a point of its own beside it, once, after the profiled sweeps."""
    cases, raw = catalog.load(ROOT / "kernels", "latency"), read("raw")
    extra = crossval.figure_points(cases, raw)
    medians = raw[raw.metric == "throughput"].groupby(["case", "params"]).value.median()
    for case in cases:
        peak = json.loads(medians[case.id].idxmax())
        inside = peak in case.profiled_points()
        assert extra.get(case.id, []) == ([] if inside else [peak]), case.id
    assert extra, "the committed run has a peak outside the profile sweep"
    items = gpu_stage.profiled_items(cases, "sm_90a", extra)
    key = tables.canonical_params
    swept = [(c.id, key(p)) for c, sweep in items for p in c.points(sweep)]
    assert len(swept) == len(set(swept))
    assert set(swept[-sum(map(len, extra.values())) :]) == {(c, key(p)) for c, ps in extra.items() for p in ps}
    assert {(c.id, key(p)) for c in cases for p in c.profiled_points()} <= set(swept)


def _point(kind: str, unprofiled: str = "", expect: str = "{}") -> tuple[catalog.Case, pd.DataFrame]:
    case = catalog.Case("x", "a", "a.cu", "", ("latency",), {"n": [1, 2]}, {}, kind=kind, unprofiled=unprofiled)
    return case, pd.DataFrame({"expect": [expect, ""]})


def test_a_point_without_counters_says_why_never_the_plan_alone() -> None:
    """No count to check (the manifest's reason, else a generic one), a planned launch ncu lost, or the manifest's
    account of the points ncu leaves out."""
    assert crossval.unprofiled_note(*_point("timed"), planned=True) == crossval.NO_CLAIM
    assert crossval.unprofiled_note(*_point("timed", "NVML power"), planned=False) == "NVML power"
    claims = _point("timed", "left", expect='{"dram__bytes_read.sum": 4096}')
    assert crossval.unprofiled_note(*claims, planned=True) == crossval.NO_KERNEL
    assert crossval.unprofiled_note(*claims, planned=False) == "left"
    assert crossval.unprofiled_note(*_point("chain"), planned=False) == crossval.DERIVED_ONLY
    assert crossval.unprofiled_note(*_point("chain", "left"), planned=True) == crossval.NO_KERNEL
