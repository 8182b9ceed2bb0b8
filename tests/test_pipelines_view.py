"""Pipe topology families (coissue, subnormal, dispatch): real builds for sm_90a and sm_120a, their listings and
SASS claims; the pipelines report view on synthetic frames shaped like the pipeline's tables (test data only)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from conftest import ARCHS, ROOT, assert_sass_claims, listing, run_cli
from smdissect import catalog, sass
from smdissect.views import pipelines

FAMILIES = ["coissue", "subnormal", "dispatch"]
CASES = catalog.load(ROOT / "kernels", "pipelines")


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("family", FAMILIES)
def test_family_lists_every_case_and_holds_its_sass_claims(
    compiled: Callable[[str, str, str], Path], arch: str, family: str
) -> None:
    mine = [c for c in CASES if c.family == family]
    assert mine
    assert_sass_claims(compiled(arch, "pipelines", family), arch, mine)


def test_coissue_sweeps_every_unordered_pair_once() -> None:
    pairs = [(p["x"], p["y"]) for c in CASES if c.family == "coissue" for p in c.points()]
    classes = len([c for c in CASES if c.family == "coissue"])
    assert sorted(pairs) == [(x, y) for x in range(classes) for y in range(x, classes)]
    assert len(pairs) < 150  # one profiled launch per point


def _instructions(text: str, kernel: str) -> list[str]:
    """The SASS lines of one kernel, in order."""
    lines, inside = [], False
    for line in text.splitlines():
        if m := sass.FUNCTION.match(line):
            inside = sass.demangle(m.group(1)) == kernel
        elif inside and sass.INSTRUCTION.match(line):
            lines.append(line)
    return lines


@pytest.mark.parametrize("arch", ARCHS)
def test_dispatch_pairs_time_the_same_clock_reads_around_exactly_n_ops(
    compiled: Callable[[str, str, str], Path], arch: str
) -> None:
    binary = compiled(arch, "pipelines", "dispatch")
    text = sass.dump(binary, arch)
    for case, kernels in listing(binary).items():
        op = next(iter(next(c for c in CASES if c.id == case).sass_expect))
        for kernel in kernels:
            lines = _instructions(text, kernel["symbol"])
            reads = [i for i, ln in enumerate(lines) if "SR_CLOCKLO" in ln]
            assert len(reads) == 4, f"{kernel['symbol']}: {len(reads)} clock reads"
            kinds = [sass.INSTRUCTION.match(lines[i]).group(1) for i in reads]
            assert kinds[:2] == kinds[2:], f"{kernel['symbol']}: bare pair {kinds[:2]} vs timed pair {kinds[2:]}"
            between = [sass.INSTRUCTION.match(ln).group(1) for ln in lines[reads[2] + 1 : reads[3]]]
            assert sum(sass.matches(o, op) for o in between) == kernel["ops"], f"{kernel['symbol']}: {between}"


# --- the report view on synthetic frames -------------------------------------------------------------------------

PROVENANCE = {"gpu": "NVIDIA H200", "gpu_uuid": "GPU-test", "arch": "sm_90a", "driver": "580.159.04",
              "cuda": "13.0.88", "run_id": "test", "category": "pipelines", "sm_clock_before_mhz": 1980.0,
              "sm_clock_after_mhz": 1980.0, "family": "test", "unit": "", "cycles": 1e6, "iterations": 256,
              "clock_mhz": 1980.0, "smid": 0}  # fmt: skip


def _raw(rows: list[tuple[str, dict, str, float]]) -> pd.DataFrame:
    """Raw-table rows, three repeats each (value, value + 0.01, value - 0.01)."""
    return pd.DataFrame(
        [
            PROVENANCE
            | {
                "case": case,
                "params": json.dumps(p, sort_keys=True, separators=(",", ":")),
                "metric": metric,
                "repeat": i,
                "value": value + d,
            }
            for case, p, metric, value in rows
            for i, d in enumerate((0.0, 0.01, -0.01))
        ]
    )


# Synthetic co-issue classes: index, alone rate (warp_inst/cycle/SM), ops per body. In a pair every warp runs one
# body of each, so the paired rates keep the ops ratio; SCENARIO picks the pair's total rate: the shared-pipe
# expectation, the issue limit (4), or (default) 98% of the issue-limited expectation. A class paired with itself
# stays at its alone rate (saturated).
CLASSES = {"ffma": (0, 3.9, 128), "hfma2": (1, 3.8, 128), "imad": (3, 1.95, 128), "fp64": (4, 1.8, 64),
           "xu": (5, 0.5, 32)}  # fmt: skip
SCENARIO = {("imad", "fp64"): "shared", ("ffma", "fp64"): "issue"}


def _pair_total(nx: str, ny: str) -> tuple[float, float]:
    """The synthetic pair's rates of x and y."""
    (x, ax, ox), (y, ay, oy) = CLASSES[nx], CLASSES[ny]
    fx = ox / (ox + oy)
    if x == y:
        return ax / 2, ay / 2
    issue = min(4.0, ax / fx, ay / (1 - fx))
    total = {"shared": 1 / (fx / ax + (1 - fx) / ay), "issue": 0.99 * issue}.get(
        SCENARIO.get((nx, ny), ""), 0.98 * issue
    )
    return total * fx, total * (1 - fx)


def _coissue_rows() -> list[tuple[str, dict, str, float]]:
    rows = []
    for nx, (x, ax, _) in CLASSES.items():
        for ny, (y, ay, _) in CLASSES.items():
            if y < x:
                continue
            px, py = _pair_total(nx, ny)
            p = {"x": x, "y": y, "warps": 16}
            rows += [(f"coissue_{nx}", p, m, v) for m, v in [
                ("throughput_x", px), ("throughput_y", py), ("throughput_x_alone", ax),
                ("throughput_y_alone", ay), ("slowdown_x", ax / px), ("slowdown_y", ay / py)]]  # fmt: skip
    return rows


def _chain_rows() -> list[tuple[str, dict, str, float]]:
    thr = {(1, 1): 0.25, (8, 1): 0.96, (1, 32): 2.0, (2, 32): 2.67, (4, 32): 3.6, (8, 32): 3.96}
    rows = [("ffma_normal", {"ilp": i, "warps": w}, "throughput", v) for (i, w), v in thr.items()]
    rows += [("ffma_subnormal", {"ilp": i, "warps": w}, "throughput", v / 2) for (i, w), v in thr.items()]
    rows += [("ffma_ftz_subnormal", {"ilp": i, "warps": w}, "throughput", v) for (i, w), v in thr.items()]
    lat = {"ffma_normal": 4.04, "ffma_subnormal": 8.08, "ffma_ftz_subnormal": 4.04}
    return rows + [(case, {"ilp": 1, "warps": 1}, "latency", v) for case, v in lat.items()]


def _dispatch_rows() -> list[tuple[str, dict, str, float]]:
    rows = []
    for n in (0, 1, 2, 4, 8):
        elapsed = 2.0 + (0 if n == 0 else 3.0 + 4.0 * (n - 1))
        rows += [("dispatch_iadd3", {"n": n}, m, v) for m, v in
                 [("clock_to_clock", 2.0), ("elapsed", elapsed), ("dispatch", elapsed - 2.0)]]  # fmt: skip
    return rows


def _frames() -> dict[str, pd.DataFrame]:
    cases = pd.DataFrame(
        {
            "case": ["ffma_normal", "ffma_subnormal", "ffma_ftz_subnormal", "cvt_e2m1", "coissue_ffma"],
            "ptx": ["fma.rn.f32", "fma.rn.f32", "fma.rn.ftz.f32", "cvt.rn.satfinite.e2m1x2.f32", "fma.rn.f32"],
            "pipe": ["fma", "fma", "fma", "alu", None],
            "kind": ["chain"] * 4 + ["timed"],
        }
    )
    sass_rows = [
        {
            "arch": a,
            "case": "ffma_normal",
            "params": '{"ilp":1}',
            "variant": "long",
            "kernel": "k",
            "ops": 512,
            "opcode": op,
            "count": n,
        }
        for a in ARCHS
        for op, n in (("FFMA", 512), ("BRA", 4))
    ]
    sass_rows += [{"arch": "sm_120a", "case": "cvt_e2m1", "params": '{"ilp":1}', "variant": "long", "kernel": "k",
                   "ops": 512, "opcode": "F2FP.E2M1", "count": 512}]  # fmt: skip
    pipes = pd.DataFrame(
        [
            {
                "case": "ffma_normal",
                "params": '{"ilp":1,"warps":32}',
                "variant": "long",
                "pipe": p,
                "inst_executed": n,
                "pct_of_peak": 50.0,
            }
            for p, n in (
                ("fma", 4194336),
                ("fmaheavy", 2097184),
                ("fmalite", 2097152),
                ("alu", 8448),
                ("uniform", 8192),
            )
        ]
    )
    status = pd.DataFrame({"case": ["cvt_e2m1"], "params": ['{"ilp":1,"warps":1}'], "status": ["static"],
                           "reason": ["not run: sm_90a lacks cvt_narrow"]})  # fmt: skip
    raw = _raw(_chain_rows() + _coissue_rows() + _dispatch_rows())
    return {"raw": raw, "cases": cases, "sass": pd.DataFrame(sass_rows), "pipes": pipes, "status": status}


def test_reference_table_has_sass_latency_knee_pipes_and_static_rows() -> None:
    table = pipelines.reference_table(_frames()).set_index("case")
    assert "coissue_ffma" not in table.index  # timed cases are not instruction rows
    ffma = table.loc["ffma_normal"]
    assert ffma["SASS sm_90a"] == ffma["SASS sm_120a"] == "FFMA x1"
    assert ffma["latency (cycle)"] == pytest.approx(4.04)
    assert ffma["best throughput (warp_inst/cycle/SM)"] == pytest.approx(3.96)
    assert json.loads(ffma["at"]) == {"ilp": 8, "warps": 32}
    assert ffma["ILP knee"] == 4  # 3.6 >= 0.9 * 3.96 at 32 warps; 2.67 is not
    assert ffma["ncu pipes (long, ilp 1)"] == "fma (100%), fmaheavy (50%), fmalite (50%)"
    static = table.loc["cvt_e2m1"]
    assert static["latency (cycle)"] == "not run: sm_90a lacks cvt_narrow"
    assert static["SASS sm_120a"] == "F2FP.E2M1 x1" and pd.isna(static["SASS sm_90a"])


def test_topology_separates_shared_pipe_from_issue_limited_pairs() -> None:
    evidence, groups = pipelines.topology(pipelines.coissue_pairs(_frames()["raw"]))
    ev = evidence.set_index(["name_x", "name_y"])
    # ffma + fp64 (mix 2:1): alone rates allow 5.85 and 5.4 in total, the dispatch port 4; measured 3.96
    issue = ev.loc[("ffma", "fp64")]
    assert issue["issue-limited expectation"] == pytest.approx(4.0)
    assert issue["shared-pipe expectation"] == pytest.approx(1 / (2 / 3 / 3.9 + 1 / 3 / 1.8), rel=1e-3)
    assert issue["verdict"] == "issue-limited" and issue["sharing index"] < 0.05
    assert min(issue["slowdown_x"], issue["slowdown_y"]) > 1.3  # slowed against alone, yet no pipe shared
    # imad + fp64 (mix 2:1): at the shared-pipe expectation, well below the issue-limited 2.925
    shared = ev.loc[("imad", "fp64")]
    assert shared["issue-limited expectation"] == pytest.approx(2.925, rel=1e-3)
    assert shared["verdict"] == "shared pipe" and shared["sharing index"] == pytest.approx(1.0, abs=0.02)
    assert shared["slowdown beyond issue"] == pytest.approx(2.925 * (2 / 3 / 1.95 + 1 / 3 / 1.8), rel=1e-2)
    # xu beside anything: 98% of what the alone rates allow (below the issue limit): independent
    assert ev.loc[("imad", "xu"), "verdict"] == ev.loc[("fp64", "xu"), "verdict"] == "independent"
    # ffma + hfma2 each fill the issue slots alone: shared (3.85) and issue-limited (4) cannot be told apart
    assert ev.loc[("ffma", "hfma2"), "verdict"] == "cannot tell"
    assert ev.loc[("xu", "xu"), "verdict"] == "same class"
    assert ev.loc[("xu", "xu"), "sharing index"] == pytest.approx(1.0)  # saturated alone: the pipe's own rate
    assert sorted(map(sorted, groups)) == [["ffma"], ["fp64", "imad"], ["hfma2"], ["xu"]]


def test_the_rule_does_not_read_issue_starvation_as_a_shared_pipe() -> None:
    """The previous run's measurement starved the stalling class (ffma 3.25 + imad 0.25 of 4): a fair mix at the
    issue limit is not a shared pipe, but the same total at the shared-pipe expectation is."""
    base = {"x": 0, "y": 3, "name_x": "ffma", "name_y": "imad", "throughput_x_alone": 3.9, "throughput_y_alone": 1.95}
    at_issue = pd.DataFrame([base | {"throughput_x": 1.95, "throughput_y": 1.95}])  # 3.9 = min(4, 3.9/.5, 1.95/.5)
    at_shared = pd.DataFrame([base | {"throughput_x": 1.3, "throughput_y": 1.3}])  # 2.6 = 1/(.5/3.9 + .5/1.95)
    assert pipelines.pair_model(at_issue)["verdict"].item() == "independent"
    assert pipelines.pair_model(at_shared)["verdict"].item() == "shared pipe"


def test_sections_render_every_part_with_the_numbers() -> None:
    sections = dict(pipelines.sections(_frames()))
    assert list(sections) == ["Instruction reference table", "Co-issue matrix", "Pipe topology",
                              "Subnormal operands", "Dispatch latency"]  # fmt: skip
    assert "<svg" in sections["Co-issue matrix"] and "2.00" in sections["Co-issue matrix"]
    assert "{imad, fp64}" in sections["Pipe topology"]
    assert "4 separately loaded pipe groups among 5 classes" in sections["Pipe topology"]
    assert "issue-limited: 2" in sections["Pipe topology"] and "shared pipe: 1" in sections["Pipe topology"]
    assert "3.00 cycles beyond a back-to-back clock read" in sections["Dispatch latency"]
    assert "each further dependent op 4.00 cycles" in sections["Dispatch latency"]
    sub = pipelines.subnormal_table(_frames()["raw"]).set_index("instruction").loc["ffma"]
    assert sub["latency penalty (x)"] == pytest.approx(2.0)
    assert sub["best throughput penalty (x)"] == pytest.approx(2.0)
    assert sub["latency ftz_subnormal"] == pytest.approx(4.04)


@pytest.mark.parametrize("missing", ["all", "raw"])
def test_sections_say_what_is_missing_without_raising(missing: str) -> None:
    frames = {} if missing == "all" else {k: v for k, v in _frames().items() if k != "raw"}
    sections = dict(pipelines.sections(frames))
    assert len(sections) == 5
    assert "no co-issue rows" in sections["Co-issue matrix"]
    assert "no dispatch rows" in sections["Dispatch latency"]
    if missing == "raw":
        assert "not run" in sections["Instruction reference table"]


# --- on a GPU: the binaries' records ----------------------------------------------------------------------------


def _records(binary: Path, *args: str) -> list[dict]:
    proc = run_cli(str(binary), *args, "--repeats", "2")
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


@pytest.mark.gpu
def test_coissue_records_throughputs_slowdowns_and_pipe_counts(compiled: Callable[[str, str, str], Path]) -> None:
    binary = compiled("sm_90a", "pipelines", "coissue")
    recs = _records(binary, "--case", "coissue_ffma", "--param", "x=0", "--param", "y=0,5", "--param",
                    "warps=16")  # fmt: skip
    by = {(r["params"]["y"], r["metric"]): r for r in recs}
    assert by[(0, "slowdown_x")]["value"] > 1.5  # 32 warps of FFMA share what 16 saturate
    assert "sm__inst_executed_pipe_xu.sum" in by[(5, "throughput_x")]["expect"]


@pytest.mark.gpu
def test_dispatch_and_subnormal_run(compiled: Callable[[str, str, str], Path]) -> None:
    dispatch = _records(compiled("sm_90a", "pipelines", "dispatch"), "--case", "dispatch_iadd3", "--param", "n=1")
    assert {r["metric"] for r in dispatch} == {"clock_to_clock", "elapsed", "dispatch"}
    sub = _records(compiled("sm_90a", "pipelines", "subnormal"), "--case", "ffma_subnormal", "--param", "ilp=1",
                   "--param", "warps=1")  # fmt: skip
    assert any(r["metric"] == "latency" and r["value"] > 0 for r in sub)


@pytest.mark.gpu
def test_a_point_of_another_class_is_one_line(compiled: Callable[[str, str, str], Path]) -> None:
    binary = compiled("sm_90a", "pipelines", "coissue")
    argv = [str(binary), "--case", "coissue_ffma", "--param", "x=1", "--param", "y=1", "--param", "warps=1"]
    proc = subprocess.run(argv, capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.strip() == "error: coissue_ffma measures class x=0, got x=1"
