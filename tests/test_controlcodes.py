"""The SASS control-code codec and patcher on cubins nvcc builds here, for sm_90a and sm_120a."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from helpers import ARCHS, FLAGS, ROOT, RUN
from smdissect.core.errors import SmdissectError
from smdissect.measure import controlcodes, sass

TARGETS = ROOT / "kernels" / "scheduler" / "patch_targets.cu"


@pytest.fixture(scope="module", params=ARCHS)
def prepared(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """prepare() run for real: (arch, the cubin folder it wrote)."""
    binary = tmp_path_factory.mktemp(request.param) / "patched"
    controlcodes.prepare(TARGETS, binary, request.param, "nvcc", ROOT / "kernels" / "common", FLAGS + ["-lcuda"])
    return request.param, Path(str(binary) + ".cubins")


def test_round_trip_is_byte_identical(prepared: tuple[str, Path]) -> None:
    _, folder = prepared
    original = (folder / controlcodes.ORIGINAL).read_bytes()
    assert controlcodes.reencode(original) == original


def test_decoded_fields_match_cuobjdump_hex(prepared: tuple[str, Path]) -> None:
    """cuobjdump prints each instruction's high word; its top bits must decode to the same fields."""
    _, folder = prepared
    path = folder / controlcodes.ORIGINAL
    text = subprocess.run([sass.cuobjdump(), "-sass", "-fun", "ffma_chain", str(path)], capture_output=True, text=True)
    words = [
        int(w, 16) for w in pd.Series(text.stdout.splitlines()).str.extract(r"^\s+/\* (0x[0-9a-f]{16}) \*/")[0].dropna()
    ]
    decoded = [c for _, c in controlcodes.controls(path.read_bytes(), "ffma_chain")]
    assert len(words) == len(decoded) > 100
    assert [controlcodes.Control.from_word(w) for w in words] == decoded


def test_chain_ffma_stall_is_four(prepared: tuple[str, Path]) -> None:
    _, folder = prepared
    table = controlcodes.decode((folder / controlcodes.ORIGINAL).read_bytes())
    ffma = table[(table["kernel"] == "ffma_chain") & (table["opcode"] == "FFMA")]
    assert len(ffma) == 128
    assert ffma["stall"].mode().iloc[0] == 4


def test_prepare_patches_only_the_chain(prepared: tuple[str, Path]) -> None:
    _, folder = prepared
    original = (folder / controlcodes.ORIGINAL).read_bytes()
    chain = set(controlcodes.chain_offsets(original, "ffma_chain", "FFMA"))
    before = dict(controlcodes.controls(original, "ffma_chain"))
    for k in (1, 3, 8):
        patched = (folder / "patched" / f"stall_{k}.patched.cubin").read_bytes()
        after = dict(controlcodes.controls(patched, "ffma_chain"))
        assert {o for o in before if before[o] != after[o]} == {o for o in chain if before[o].stall != k}
        assert all(after[o].stall == k for o in chain)
        assert len(patched) == len(original)
    flipped = dict(controlcodes.controls((folder / "patched" / "yield.patched.cubin").read_bytes(), "ffma_chain"))
    assert all(flipped[o].yield_ == 1 - before[o].yield_ for o in chain)
    assert not list(folder.glob("*.patched.cubin")), "patched cubins must stay out of the original's folder"


def test_patch_one_field(prepared: tuple[str, Path]) -> None:
    cubin = (prepared[1] / controlcodes.ORIGINAL).read_bytes()
    offset = controlcodes.chain_offsets(cubin, "ffma_chain", "FFMA")[0]
    out = controlcodes.patch(cubin, "ffma_chain", offset, "wrbar", 2)
    diff = [i for i, (a, b) in enumerate(zip(cubin, out, strict=True)) if a != b]
    assert diff and max(diff) - min(diff) < 8
    assert dict(controlcodes.controls(out, "ffma_chain"))[offset].wrbar == 2
    with pytest.raises(SmdissectError):
        controlcodes.patch(cubin, "ffma_chain", offset, "stall", 16)
    with pytest.raises(SmdissectError):
        controlcodes.patch(cubin, "ffma_chain", offset, "colour", 1)
    with pytest.raises(SmdissectError):
        controlcodes.controls(cubin, "no_such_kernel")


def test_compiler_stall_equals_measured_ffma_latency(compiled: Callable[[str, str, str], Path]) -> None:
    """The FFMA stall count ptxas gives a dependent chain equals the H200's measured FFMA latency."""
    binary = compiled("sm_90a", "latency", "float")
    cubin = controlcodes.extract_cubins(binary, "sm_90a")[0]
    assert controlcodes.reencode(cubin) == cubin
    codes = controlcodes.decode_binary(binary, "sm_90a")
    chain = codes[(codes["kernel"] == "chain_kernel<Ffma,1,256>") & (codes["opcode"] == "FFMA")]
    raw = pd.read_parquet(RUN / "sm_90a" / "latency" / "float" / "raw.parquet")
    measured = raw[(raw["case"] == "ffma") & (raw["metric"] == "latency")]["value"].median()
    assert list(codes.columns) == controlcodes.COLUMNS
    assert chain["stall"].mode().iloc[0] == round(measured) == 4
