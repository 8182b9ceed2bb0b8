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
FAMILIES = ["convert", "fastmath", "fp32", "fp64", "half", "integer", "predicate", "sfu", "simd", "warp"]
TABLE = [c for c in CASES if c.family in FAMILIES]


def test_the_table_has_sixty_instruction_rows() -> None:
    assert len(TABLE) >= 60
    assert all(c.profile_sweep == {"ilp": [1, 8], "warps": [1, 32]} for c in TABLE)


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
