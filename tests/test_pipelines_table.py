"""The pipelines instruction table: every family compiles for sm_90a and sm_120a, lists its kernels, and its
SASS is what the manifest claims on both archs (real nvcc and cuobjdump); the frozen H200 run's table figures
(ILP knees, latencies judged against the parts they are built from)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import ARCHS, ROOT, RUN
from smdissect.analysis import checks, figures
from smdissect.analysis.figure_model import Figure, judge
from smdissect.core import catalog, tables
from smdissect.measure import sass

CASES = catalog.load(ROOT / "kernels", "pipelines")
FAMILIES = ["convert", "fastmath", "fp32", "fp64", "half", "integer", "predicate", "sfu", "simd", "uniform", "warp"]
TABLE = [c for c in CASES if c.family in FAMILIES]


def test_the_table_has_sixty_instruction_rows() -> None:
    assert len(TABLE) >= 60
    assert all(c.profile_sweep == [{"ilp": [1], "warps": [1]}, {"ilp": [8], "warps": [32]}] for c in TABLE)


def test_sm120_only_rows_say_why_they_do_not_run_on_sm90() -> None:
    narrow = [c for c in TABLE if "cvt_narrow" in c.features]
    assert narrow and all(c.unsupported("sm_90a") and not c.unsupported("sm_120a") for c in narrow)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("arch", ARCHS)
def test_family_sass_matches_the_manifest(compiled: Callable[[str, str, str], Path], arch: str, family: str) -> None:
    binary = compiled(arch, "pipelines", family)
    listing = {e["case"]: e["kernels"] for e in json.loads(binary.with_suffix(".json").read_text())}
    text = sass.dump(binary, arch)
    counts, code = sass.opcodes(text), sass.code(text)
    cases = [c for c in TABLE if c.family == family]
    assert set(listing) == {c.id for c in cases}
    failed = []
    for case in cases:
        assert len(listing[case.id]) == 8, "four ILPs x two body lengths"
        if case.unsupported(arch):  # compiled out on this arch: only the kernel's existence is claimed
            assert all(k["symbol"] in counts for k in listing[case.id])
            continue
        for k in listing[case.id]:
            rows = sass.claims(case, code[k["symbol"]], k["ops"])
            failed += [(case.id, k["symbol"], r) for r in rows if r["verdict"] != "agree"]
            assert any(r["scope"] == "loop" for r in rows), f"{case.id}: no claim per pass of the timed loop"
    assert not failed, "\n".join(map(str, failed))


@pytest.mark.parametrize("arch", ARCHS)
def test_software_sequences_are_not_one_instruction(compiled: Callable[[str, str, str], Path], arch: str) -> None:
    counts = sass.opcodes(sass.dump(compiled(arch, "pipelines", "integer"), arch))
    div = counts["chain_kernel<DivU64,1,512>"]
    assert not any(op == "DIV" or op.startswith("DIV.") for op in div)
    assert sass.count(div, "CALL.REL.NOINC") == 512


def test_fmin_is_one_fmnmx_on_sm120(compiled: Callable[[str, str, str], Path]) -> None:
    counts = sass.opcodes(sass.dump(compiled("sm_120a", "pipelines", "fp32"), "sm_120a"))["chain_kernel<Fmin,1,512>"]
    assert sass.count(counts, "FMNMX") == 512
    assert sass.count(counts, "FADD") == 0, "the negation must ride on FMNMX, not cost an FADD"


def _timed_region(text: str, kernel: str) -> list[str]:
    """Opcodes of one pass of the kernel's timed loop (sass.timed_loop, as the pipeline counts it), in order."""
    instructions = sass.code(text)[kernel]
    first, last, _ = sass.timed_loop(instructions)
    return [ins.opcode for ins in instructions if first <= ins.offset <= last]


@pytest.mark.parametrize("arch", ARCHS)
def test_uniform_chains_run_on_the_uniform_datapath(compiled: Callable[[str, str, str], Path], arch: str) -> None:
    binary = compiled(arch, "pipelines", "uniform")
    text = sass.dump(binary, arch)
    listing = {e["case"]: e["kernels"] for e in json.loads(binary.with_suffix(".json").read_text())}
    for case in (c for c in TABLE if c.family == "uniform"):
        op = next(iter(case.sass_expect))
        for k in listing[case.id]:
            region = _timed_region(text, k["symbol"])
            assert sum(sass.matches(o, op) for o in region) >= k["ops"], f"{k['symbol']}: {op} not in the loop"
            vector = [o for o in region if not o.startswith(("U", "BRA", "CS2R", "S2UR", "NOP", "LDC"))]
            # at most the loop's entry and exit compares (sm_90a keeps the trip count in a vector register)
            assert all(o.startswith("ISETP") for o in vector) and len(vector) <= 2, (
                f"{arch} {k['symbol']}: vector instructions in the timed loop: {vector}"
            )


@pytest.mark.parametrize("arch", ARCHS)
def test_shuffles_are_one_shfl_per_step(compiled: Callable[[str, str, str], Path], arch: str) -> None:
    counts = sass.opcodes(sass.dump(compiled(arch, "pipelines", "warp"), arch))
    for op, mode in (("ShflIdx", "IDX"), ("ShflBfly", "BFLY"), ("ShflUp", "UP"), ("ShflDown", "DOWN")):
        kernel = counts[f"chain_kernel<{op},1,512>"]
        assert sass.count(kernel, f"SHFL.{mode}") == 512
        assert sass.count(kernel, "SHFL") == 512, "no other shuffle (and no shuffle folded away)"


# --- the frozen H200 run's reference-table figures ---------------------------------------------------------------

PIPELINES = RUN / "sm_90a" / "pipelines"


@pytest.fixture(scope="module")
def committed() -> list[Figure]:
    """Every figure of the frozen H200 run's pipelines tables (no SASS checks: those are rebuilt elsewhere)."""
    frames = {
        "raw": tables.read("raw", sorted(PIPELINES.glob("*/raw.parquet"))),
        "crossval": tables.read("crossval", [PIPELINES / "crossval.parquet"]),
    }
    return figures.compute(CASES, frames, {}, "sm_90a", "NVIDIA H200")


def test_every_measured_chain_row_has_its_knees(committed: list[Figure]) -> None:
    names = {f.name: f for f in committed}
    for case in (c for c in TABLE if not c.unsupported("sm_90a")):
        for warps in (min(case.sweep["warps"]), max(case.sweep["warps"])):
            knee = names.get(f"{case.id} ILP knee at warps={warps}")
            if f"{case.id} latency" not in names:
                continue
            assert knee is not None, f"{case.id}: no knee at warps={warps}"
            assert knee.value in case.sweep["ilp"] and len(knee.points) == len(case.sweep["ilp"])
    # FFMA: three sources from two register banks at ILP 1, so 32 warps of one chain each reach half the pipe
    assert names["ffma ILP knee at warps=32"].value == 4 and names["ffma ILP knee at warps=1"].value == 4
    assert names["iadd3 ILP knee at warps=32"].value == 1  # the ALU pipe (2/cycle/SM) is full at ILP 1


def test_a_latency_below_a_part_it_is_built_from_is_contradicted(committed: list[Figure]) -> None:
    latency = {f.case: f for f in committed if f.metric == "latency" and f.kind == "point"}
    cases = {c.id: c for c in CASES}
    judged = 0
    for case, fig in latency.items():
        for part in cases[case].built_from:
            if part in latency:
                judged += 1
                below = fig.value < latency[part].value * (1 - checks.BOUND_TOLERANCE)
                assert (judge(fig.checks)[0] == "contradicted") >= below, (case, part)
                assert any(c.name == "built from" for c in fig.checks), case
    assert judged >= 20
