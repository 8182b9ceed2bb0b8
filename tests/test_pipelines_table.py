"""The pipelines instruction table: every family compiles for sm_90a and sm_120a, lists its kernels, and its
SASS is what the manifest claims on both archs (real nvcc and cuobjdump)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import ARCHS, ROOT
from smdissect import catalog, sass

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
    counts = sass.opcodes(sass.dump(binary, arch))
    cases = [c for c in TABLE if c.family == family]
    assert set(listing) == {c.id for c in cases}
    failed = []
    for case in cases:
        assert len(listing[case.id]) == 8, "four ILPs x two body lengths"
        if case.unsupported(arch):  # compiled out on this arch: only the kernel's existence is claimed
            assert all(k["symbol"] in counts for k in listing[case.id])
            continue
        for k in listing[case.id]:
            rows = sass.check(case, counts[k["symbol"]], k["ops"])
            failed += [(case.id, k["symbol"], r) for r in rows if r["verdict"] != "agree"]
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
    """Opcodes of one kernel between its first two SR_CLOCKLO reads (the timed loop), in order."""
    opcodes, inside, reads = [], False, 0
    for line in text.splitlines():
        if m := sass.FUNCTION.match(line):
            inside = sass.demangle(m.group(1)) == kernel
        elif inside and (m := sass.INSTRUCTION.match(line)):
            if "SR_CLOCKLO" in line:
                reads += 1
            elif reads == 1:
                opcodes.append(m.group(1))
    return opcodes


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
