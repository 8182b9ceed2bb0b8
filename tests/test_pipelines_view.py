"""Pipe topology families (coissue, subnormal, dispatch): real builds for sm_90a and sm_120a, their listings and
SASS claims; the derived figures of the pipelines category (ILP knees, co-issue pair model and pipe groups,
subnormal penalties, dispatch) and the view that renders them, on raw tables shaped like a real run's."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from helpers import ARCHS, ROOT, assert_sass_claims, listing, raw_frame, run_cli
from smdissect.analysis import figures
from smdissect.analysis.derived import chains, sweeps
from smdissect.analysis.derived.pipelines import coissue
from smdissect.analysis.figure_model import Figure, judge
from smdissect.core import catalog, tables
from smdissect.measure import sass
from smdissect.pages.views import pipelines

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


@pytest.mark.parametrize("arch", ARCHS)
def test_dispatch_pairs_time_the_same_clock_reads_around_exactly_n_ops(
    compiled: Callable[[str, str, str], Path], arch: str
) -> None:
    binary = compiled(arch, "pipelines", "dispatch")
    code = sass.code(sass.dump(binary, arch))
    for case, kernels in listing(binary).items():
        op = next(iter(next(c for c in CASES if c.id == case).sass_expect))
        for kernel in kernels:
            lines = code[kernel["symbol"]]
            regions = sass.timed_regions(lines)  # bare pair | to the timed pair | the timed ops
            assert len(regions) == 3, f"{kernel['symbol']}: {len(regions) + 1} clock reads"
            at = {ins.offset: ins.opcode for ins in lines}
            kinds = [at[regions[0][0]], at[regions[0][1]], at[regions[2][0]], at[regions[2][1]]]
            assert kinds[:2] == kinds[2:], f"{kernel['symbol']}: bare pair {kinds[:2]} vs timed pair {kinds[2:]}"
            start, end = regions[2]
            between = [ins.opcode for ins in lines if start < ins.offset < end]
            assert sum(sass.matches(o, op) for o in between) == kernel["ops"], f"{kernel['symbol']}: {between}"
            # and the timed loop the pipeline counts in is the rep loop around those reads (sass.timed_loop)
            first, last, what = sass.timed_loop(lines)
            assert what == "loop timing each pass" and first <= regions[0][0] and end <= last, kernel["symbol"]


def test_manifest_names_the_parts_twins_and_sweeps_the_checks_need() -> None:
    by_id = {c.id: c for c in CASES}
    assert by_id["iadd64"].built_from == ("iadd3",) and "fset" in by_id["fsetp_sel"].built_from
    assert {"fmul", "ex2"} <= set(by_id["sin"].built_from) and {"rcp", "ffma"} <= set(by_id["div_rn"].built_from)
    assert {s["case"] for s in by_id["ffma_normal"].same_as} == {"ffma"}
    assert all(by_id[f"coissue_{n}"].figures["throughput_x_alone"] == "none" for n in ("ffma", "xu", "tensor"))
    assert by_id["dispatch_iadd3"].measures[0] == "dispatch" and by_id["dispatch_iadd3"].paper
    for case in ("mul_hi", "h2f", "redux_add", "vote_ballot", "ddiv"):  # peaks the plateau check could not judge
        assert 16 in by_id[case].sweep["warps"], case
    assert by_id["dfma_subnormal"].sweep == {"ilp": [1, 4, 8], "warps": [1, 4, 32]}
    assert by_id["mul_hi"].profile_sweep == [{"ilp": [1], "warps": [1]}, {"ilp": [8], "warps": [32]}]


# --- derived figures and the view, on raw tables shaped like a real run's -----------------------------------------

REPEATS = 9
WOBBLE = (0.0, 0.002, -0.002, 0.001, -0.001, 0.003, -0.003, 0.0005, -0.0005)  # relative, one per repeat
UNITS = {
    "latency": "cycle",
    "throughput": "warp_inst/cycle/SM",
    "throughput_x": "warp_inst/cycle/SM",
    "throughput_y": "warp_inst/cycle/SM",
    "throughput_x_alone": "warp_inst/cycle/SM",
    "throughput_y_alone": "warp_inst/cycle/SM",
    "slowdown_x": "ratio",
    "slowdown_y": "ratio",
    "clock_to_clock": "cycle",
    "elapsed": "cycle",
    "dispatch": "cycle",
}


def _samples(value: float) -> list[float]:
    return [value * (1 + w) for w in WOBBLE[:REPEATS]]


def _raw(rows: list[tuple[str, dict, str, float]]) -> pd.DataFrame:
    """A raw table as the run stage writes it: nine samples per point, each metric in the unit its binary prints."""
    by_unit: dict[str, list] = {}
    for case, point, metric, value in rows:
        by_unit.setdefault(UNITS[metric], []).append((case, point, metric, _samples(value)))
    return pd.concat(
        [raw_frame(r, unit=u, arch="sm_90a", category="pipelines") for u, r in by_unit.items()], ignore_index=True
    )


# Synthetic co-issue classes (the real case ids and class indices): alone rate (warp_inst/cycle/SM) and ops per body.
# In a pair every warp runs one body of each, so the paired rates keep the ops ratio; SCENARIO picks the pair's total:
# the shared-pipe expectation, 99% of the issue limit, or (default) 98% of the issue-limited expectation. A class
# paired with itself runs at half its alone rate each (its pipe saturated).
CLASSES = {
    "ffma": (0, 3.9, 128),
    "hfma2": (1, 3.8, 128),
    "imad": (3, 1.95, 128),
    "fp64": (4, 1.8, 64),
    "xu": (5, 0.5, 32),
}
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
            rows += [
                (f"coissue_{nx}", p, m, v)
                for m, v in [
                    ("throughput_x", px),
                    ("throughput_y", py),
                    ("throughput_x_alone", ax),
                    ("throughput_y_alone", ay),
                    ("slowdown_x", ax / px),
                    ("slowdown_y", ay / py),
                ]
            ]
    return rows


THROUGHPUT = {(1, 1): 0.25, (8, 1): 0.96, (1, 32): 2.0, (2, 32): 2.67, (4, 32): 3.6, (8, 32): 3.96}


def _chain_rows() -> list[tuple[str, dict, str, float]]:
    rows = [("ffma_normal", {"ilp": i, "warps": w}, "throughput", v) for (i, w), v in THROUGHPUT.items()]
    rows += [("ffma_subnormal", {"ilp": i, "warps": w}, "throughput", v / 2) for (i, w), v in THROUGHPUT.items()]
    rows += [("ffma_ftz_subnormal", {"ilp": i, "warps": w}, "throughput", v) for (i, w), v in THROUGHPUT.items()]
    lat = {"ffma_normal": 4.04, "ffma_subnormal": 8.08, "ffma_ftz_subnormal": 4.04}
    return rows + [(case, {"ilp": 1, "warps": 1}, "latency", v) for case, v in lat.items()]


def _dispatch_rows() -> list[tuple[str, dict, str, float]]:
    rows = []
    for n in (0, 1, 2, 4, 8):
        elapsed = 2.0 + (0 if n == 0 else 3.0 + 4.0 * (n - 1))
        rows += [
            ("dispatch_iadd3", {"n": n}, m, v)
            for m, v in [("clock_to_clock", 2.0), ("elapsed", elapsed), ("dispatch", elapsed - 2.0)]
        ]
    return rows


def _run(raw: pd.DataFrame) -> list[Figure]:
    """Every figure of the pipelines category on `raw`, judged as the figures stage judges them."""
    return figures.compute(CASES, {"raw": raw}, {}, "sm_90a", "NVIDIA H200")


def _frames() -> dict[str, pd.DataFrame]:
    cases = pd.DataFrame(
        {
            "case": ["ffma_normal", "ffma_subnormal", "ffma_ftz_subnormal", "e2m1_pack", "coissue_ffma"],
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
    sass_rows += [
        {
            "arch": "sm_120a",
            "case": "e2m1_pack",
            "params": '{"ilp":1}',
            "variant": "long",
            "kernel": "k",
            "ops": 512,
            "opcode": "F2FP.SATFINITE.E2M1",
            "count": 512,
        }
    ]
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
    status = pd.DataFrame(
        {
            "case": ["e2m1_pack"],
            "params": ['{"ilp":1,"warps":1}'],
            "status": ["static"],
            "reason": ["not run: sm_90a lacks cvt_narrow"],
        }
    )
    raw = _raw(_chain_rows() + _coissue_rows() + _dispatch_rows())
    found = figures.rows(_run(raw), {"category": "pipelines", "gpu": "NVIDIA H200", "arch": "sm_90a"})
    return {
        "raw": raw,
        "cases": cases,
        "sass": pd.DataFrame(sass_rows),
        "pipes": pipes,
        "status": status,
        "figures": tables.frame("figures", found),
    }


def _by_name(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return frames["figures"].set_index("figure")


def test_ilp_knees_are_figures_at_the_fewest_and_most_warps() -> None:
    figs = _by_name(_frames())
    assert figs.loc["ffma_normal ILP knee at warps=32", "value"] == 4  # 3.6 >= 0.9 * 3.96 at 32 warps; 2.67 is not
    assert figs.loc["ffma_normal ILP knee at warps=1", "value"] == 8  # 0.25 < 0.9 * 0.96
    knee = figs.loc["ffma_normal ILP knee at warps=32"]
    assert knee["kind"] == "derived" and knee["unit"] == "ilp" and knee["spread"] == 0
    assert set(json.loads(knee["points"])) == {tables.canonical_params({"ilp": i, "warps": 32}) for i in (1, 2, 4, 8)}
    assert "ilp 2: 2.67" in knee["derivation"] and knee["status"] in tables.FIGURE_STATUSES


def test_ilp_knee_and_its_spread_follow_the_repeats() -> None:
    assert chains.ilp_knee({1: 1.0, 2: 1.0, 4: 1.0}) == 1 and chains.ilp_knee({1: 0.2, 2: 0.5, 4: 0.95, 8: 1.0}) == 4
    flat = {1: [1.0, 1.0], 2: [1.0, 1.0]}
    torn = {1: [0.95, 0.80], 2: [1.0, 1.0]}  # the second repeat falls below the knee share at ilp 1
    assert sweeps.robust(chains.ilp_knee, {k: pd.Series(v).to_numpy() for k, v in flat.items()}) == (1, 0)
    assert sweeps.robust(chains.ilp_knee, {k: pd.Series(v).to_numpy() for k, v in torn.items()})[1] == 1


def test_topology_separates_shared_pipe_from_issue_limited_pairs() -> None:
    evidence, groups = coissue.topology(coissue.coissue_pairs(_frames()["raw"]))
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
    assert coissue.pair_model(at_issue)["verdict"].item() == "independent"
    assert coissue.pair_model(at_shared)["verdict"].item() == "shared pipe"


def test_coissue_figures_carry_the_pair_model_and_the_pipe_groups() -> None:
    figs = _by_name(_frames())
    index = figs.loc["coissue imad+fp64 sharing index"]
    assert index["value"] == pytest.approx(1.0, abs=0.02) and index["derivation"].endswith(": shared pipe")
    assert index["case"] == "coissue_imad" and json.loads(index["points"]) == [index["params"]]
    assert figs.loc["coissue ffma+fp64 sharing index", "derivation"].endswith(": issue-limited")
    assert "coissue ffma+hfma2 sharing index" not in figs.index  # cannot tell: no index, only the slowdown
    assert "cannot tell" in figs.loc["coissue ffma+hfma2 slowdown beyond issue", "derivation"]
    assert figs.loc["coissue imad+fp64 paired total", "value"] == pytest.approx(
        1 / (2 / 3 / 1.95 + 1 / 3 / 1.8), rel=1e-3
    )
    assert figs.loc["coissue xu alone rate", "value"] == pytest.approx(0.5, rel=1e-2)
    groups = figs.loc["pipe groups"]
    assert groups["value"] == 4 and "{imad, fp64}" in groups["derivation"]
    assert "issue-limited: 2" in groups["derivation"] and "shared pipe: 1" in groups["derivation"]
    assert not any(n.startswith("coissue_ffma peak") or " slowdown_x at " in n for n in figs.index)  # rules: none


def test_subnormal_penalties_and_dispatch_are_derived_figures() -> None:
    figs = _by_name(_frames())
    assert figs.loc["ffma subnormal latency penalty", "value"] == pytest.approx(2.0)
    assert figs.loc["ffma subnormal throughput penalty", "value"] == pytest.approx(2.0)
    assert figs.loc["ffma subnormal latency penalty", "spread"] > 0  # from the samples' extremes
    assert figs.loc["dispatch_iadd3 dispatch latency", "value"] == pytest.approx(3.0)
    assert figs.loc["dispatch_iadd3 cycles per further dependent op", "value"] == pytest.approx(4.0)
    assert figs.loc["dispatch_iadd3 dispatch latency", "paper"] == "dispatch_latency_sm120"
    assert "dispatch_iadd3 dispatch at n=1" not in figs.index  # the derived figure stands for it


def test_a_derived_figure_is_contradicted_by_a_counter_at_a_point_it_stands_on() -> None:
    frames = _frames()
    at = tables.canonical_params({"ilp": 4, "warps": 32})
    crossval = pd.DataFrame(
        [
            {
                "case": "ffma_normal",
                "params": at,
                "check": "cycles: clock64 span vs x",
                "clock64_value": 1.0,
                "counter_value": 2.0,
                "verdict": "disagree",
                "note": "",
            }
        ]
    )
    found = figures.compute(CASES, {"raw": frames["raw"], "crossval": crossval}, {}, "sm_90a", "NVIDIA H200")
    (knee,) = [f for f in found if f.name == "ffma_normal ILP knee at warps=32"]
    status, reason = judge(knee.checks)
    assert status == "contradicted" and "cycles" in reason, reason
    (one,) = [f for f in found if f.name == "ffma_normal ILP knee at warps=1"]  # stands on other points
    assert judge(one.checks)[0] != "contradicted"


def test_reference_table_shows_the_figures_with_sass_pipes_and_static_rows() -> None:
    table = pipelines.reference_table(_frames()).set_index("case")
    assert "coissue_ffma" not in table.index  # timed cases are not instruction rows
    ffma = table.loc["ffma_normal"]
    assert ffma["SASS sm_90a"] == ffma["SASS sm_120a"] == "FFMA x1"
    assert ffma["latency (cycle)"] == pytest.approx(4.04)
    assert ffma["best throughput (warp_inst/cycle/SM)"] == pytest.approx(3.96)
    assert ffma["at"] == "ilp=8, warps=32"
    assert ffma["ILP knee (warps=32)"] == 4 and ffma["ILP knee (warps=1)"] == 8
    assert "s-verified" in ffma["latency status"] or "s-unverified" in ffma["latency status"]
    assert ffma["ncu pipes (long, ilp 1)"] == "fma (100%), fmaheavy (50%), fmalite (50%)"
    static = table.loc["e2m1_pack"]
    assert static["latency (cycle)"] == "not run: sm_90a lacks cvt_narrow"
    assert static["SASS sm_120a"] == "F2FP.SATFINITE.E2M1 x1" and pd.isna(static["SASS sm_90a"])


def test_sections_render_every_part_from_the_figures() -> None:
    sections = dict(pipelines.sections(_frames()))
    assert list(sections) == [
        "Instruction reference table",
        "Co-issue matrix",
        "Pipe topology",
        "Subnormal operands",
        "Dispatch latency",
    ]
    assert "<svg" in sections["Co-issue matrix"] and "2.00" in sections["Co-issue matrix"]
    assert "coissue xu alone rate" in sections["Co-issue matrix"]
    topo = sections["Pipe topology"]
    assert "{imad, fp64}" in topo and "4 separately loaded pipe groups among 5 classes" in topo
    assert "issue-limited: 2" in topo and "shared pipe: 1" in topo and "coissue imad+fp64 sharing index" in topo
    assert "3.000 cycles beyond a back-to-back clock read" in sections["Dispatch latency"]
    assert "each further dependent op 4.000 cycles" in sections["Dispatch latency"]
    assert "ffma subnormal latency penalty" in sections["Subnormal operands"]
    assert all('class="s-' in html for title, html in sections.items()), "every number shows its status"


@pytest.mark.parametrize("missing", ["all", "figures"])
def test_sections_say_what_is_missing_without_raising(missing: str) -> None:
    frames = {} if missing == "all" else {k: v for k, v in _frames().items() if k != "figures"}
    sections = dict(pipelines.sections(frames))
    assert len(sections) == 5
    assert "no co-issue figures" in sections["Co-issue matrix"]
    assert "no dispatch figures" in sections["Dispatch latency"]
    if missing == "figures":
        assert "not run" in sections["Instruction reference table"]


# --- on a GPU: the binaries' records ----------------------------------------------------------------------------


def _records(binary: Path, *args: str) -> list[dict]:
    proc = run_cli(str(binary), *args, "--repeats", "2")
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


@pytest.mark.gpu
def test_coissue_records_throughputs_slowdowns_and_pipe_counts(compiled: Callable[[str, str, str], Path]) -> None:
    binary = compiled("sm_90a", "pipelines", "coissue")
    recs = _records(binary, "--case", "coissue_ffma", "--param", "x=0", "--param", "y=0,5", "--param", "warps=16")
    by = {(r["params"]["y"], r["metric"]): r for r in recs}
    assert by[(0, "slowdown_x")]["value"] > 1.5  # 32 warps of FFMA share what 16 saturate
    assert "sm__inst_executed_pipe_xu.sum" in by[(5, "throughput_x")]["expect"]


@pytest.mark.gpu
def test_dispatch_and_subnormal_run(compiled: Callable[[str, str, str], Path]) -> None:
    dispatch = _records(compiled("sm_90a", "pipelines", "dispatch"), "--case", "dispatch_iadd3", "--param", "n=1")
    assert {r["metric"] for r in dispatch} == {"clock_to_clock", "elapsed", "dispatch"}
    sub = _records(
        compiled("sm_90a", "pipelines", "subnormal"),
        "--case",
        "ffma_subnormal",
        "--param",
        "ilp=1",
        "--param",
        "warps=1",
    )
    assert any(r["metric"] == "latency" and r["value"] > 0 for r in sub)


@pytest.mark.gpu
def test_a_point_of_another_class_is_one_line(compiled: Callable[[str, str, str], Path]) -> None:
    binary = compiled("sm_90a", "pipelines", "coissue")
    argv = [str(binary), "--case", "coissue_ffma", "--param", "x=1", "--param", "y=1", "--param", "warps=1"]
    proc = subprocess.run(argv, capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.strip() == "error: coissue_ffma measures class x=0, got x=1"
