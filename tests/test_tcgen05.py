"""The tcgen05 family (sm_100a): its descriptors against the PTX ISA tables, its SASS on sm_100a (one UTC*MMA per MMA
in the timed loop, commit and mbarrier wait only where the case waits), its kernels compiled out on the other checked
archs (static rows there), and on a B200 a run whose accumulators hold the exact sums."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from helpers import BUILD_ARCHS, FLAGS, ROOT, assert_sass_claims, listing, run_cli
from smdissect.core import archs, catalog, features
from smdissect.measure import build, device, run, sass

CASES = catalog.families(catalog.load(ROOT / "kernels", "tensorcore"))["tcgen05"]
MMA_CASES = [c for c in CASES if "n" in c.sweep]
OTHER_ARCHS = [a for a in BUILD_ARCHS if catalog.sm_version(a) not in features.FEATURES["tcgen05"]]
TCGEN05_OPCODES = re.compile(r"^(UTC|LDTM|STTM)")

# Instruction descriptors derived by hand from PTX ISA 9.1 9.7.16.4.2. Table 42 (f16/tf32/f8f6f4/i8): dtype F32 = 1,
# S32 = 2 at bit 4; atype at 7 and btype at 10 (F16 0, TF32 2, E4M3 0, signed 8b 1); N >> 3 at 17; M >> 4 at 24.
# Table 43 (mxf8f6f4): E4M3 0, UE8M0 = 1 at bit 23, M >> 7 at 27. Table 44 (mxf4nvf4): E2M1 = 1 at 7 and 10, UE4M3 = 0.
N_BITS = {64: 8 << 17, 128: 16 << 17, 256: 32 << 17}
IDESC = {
    "F16": 0x0800_0010,  # F32 D, F16 A and B, M = 128
    "Tf32": 0x0800_0910,  # F32 D, TF32 (2) A and B
    "E4m3": 0x0800_0010,  # F32 D, E4M3 (0) A and B: the kind (f8f6f4) tells it from f16
    "S8": 0x0800_04A0,  # S32 D, signed 8b A and B
    "Mxf8": 0x0880_0000,  # UE8M0 scales, E4M3 A and B, M >> 7 = 1
    "Nvf4": 0x0800_0480,  # UE4M3 scales, E2M1 A and B
    "F16Pair": 0x1000_0010,  # F32 D, F16 A and B, M = 256
}
MMA_OPCODE = {"F16": "UTCHMMA", "Tf32": "UTCHMMA", "E4m3": "UTCQMMA", "S8": "UTCIMMA", "Mxf8": "UTCQMMA",
              "Nvf4": "UTCOMMA.4X", "F16Pair": "UTCHMMA.2CTA"}  # fmt: skip
KERNEL = re.compile(r"tcgen05_kernel<([A-Za-z0-9]+?)N(\d+),(\d),(\d+)>")


@pytest.fixture(scope="module")
def sm100(compiled) -> tuple[Path, dict]:
    binary = compiled("sm_100a", "tensorcore", "tcgen05")
    return binary, sass.code(sass.dump(binary, "sm_100a"))


def test_every_case_holds_its_sass_claims_on_sm_100a(compiled) -> None:
    assert_sass_claims(compiled("sm_100a", "tensorcore", "tcgen05"), "sm_100a", CASES)


def test_each_mma_waits_only_where_its_case_says(sm100) -> None:
    """wait=1: per MMA one commit (UTCBAR) and one mbarrier wait in the loop; wait=0: the MMAs alone, one commit and
    wait after the loop."""
    binary, code = sm100
    kernels = [k for entries in listing(binary).values() for k in entries if "wait" in k["params"]]
    assert len(kernels) == 2 * 2 * 3 * len(MMA_CASES)
    for k in kernels:
        form, _, wait, _ = KERNEL.fullmatch(k["symbol"]).groups()
        loop, ops = sass.loop_opcodes(code[k["symbol"]]), k["ops"]
        bar = "UTCBAR.2CTA" if form == "F16Pair" else "UTCBAR"
        assert sass.count(loop, MMA_OPCODE[form]) == ops, (k["symbol"], loop)
        assert sass.count(loop, bar) == sass.count(loop, "SYNCS.PHASECHK.TRANS64.TRYWAIT") == int(wait) * ops, loop
        whole = [i.opcode for i in code[k["symbol"]]]  # the setup's commit, then the loop's or the one after it
        assert sum(sass.matches(op, bar) for op in whole) == 1 + (ops if wait == "1" else 1), k["symbol"]


def test_the_sass_loads_the_hand_derived_instruction_descriptors(sm100) -> None:
    """Each MMA's idesc operand is a uniform register that the loop loads with the value of the PTX tables."""
    binary, code = sm100
    seen = set()
    for entries in listing(binary).values():
        for k in entries:
            if "wait" not in k["params"]:
                continue
            form, n, _, _ = KERNEL.fullmatch(k["symbol"]).groups()
            first, last, _ = sass.timed_loop(code[k["symbol"]])
            loop = [i for i in code[k["symbol"]] if first <= i.offset <= last]
            [reg] = {re.search(r"idesc\[(UR\d+)\]", i.operands).group(1) for i in loop if "MMA" in i.opcode}
            moves = [i.operands.split(",") for i in loop if i.opcode == "UMOV"]
            loaded = {int(value, 16) for dest, value in moves if dest == reg}
            assert loaded == {IDESC[form] | N_BITS[int(n)]}, (k["symbol"], [hex(v) for v in loaded])
            seen.add(form)
    assert seen == set(IDESC)


HOST = r"""
#include <cstdio>
#include "tcgen05.cuh"
using namespace tcg;
int main() {
  std::printf("%x %x %x %x\n", idesc(kF32, kF16, kF16, 128, 64), idesc(kF32, kTf32, kTf32, 128, 128),
              idesc(kS32, kS8, kS8, 128, 256), idesc(kF32, kF16, kF16, 256, 256));
  std::printf("%x %x\n", idesc_scaled(kE4m3, kE4m3, 1, 128, 256), idesc_scaled(kNvf4E2m1, kNvf4E2m1, 0, 128, 64));
  std::printf("%llx %llx %llx\n", (unsigned long long)smem_desc(0x400, kLbo, kSbo),
              (unsigned long long)smem_desc(0x2c80, kLbo, kSbo), (unsigned long long)smem_desc(0x40400, kLbo, kSbo));
  std::printf("%x %x\n", tmem_at(0x10, 32, 255), tile_bytes(128));
}
"""


def test_descriptor_encoders_match_the_ptx_tables(tmp_path: Path) -> None:
    """The constexpr encoders of tcgen05.cuh, run on the host, against Tables 40, 42, 43 and 44 read by hand."""
    source, binary = tmp_path / "encoders.cu", tmp_path / "encoders"
    source.write_text(HOST)
    proc = run_cli("nvcc", "-std=c++17", "-I", str(ROOT / "kernels" / "tensorcore"), "-o", str(binary), str(source))
    assert proc.returncode == 0, proc.stderr
    out = subprocess.run([binary], capture_output=True, text=True, check=True).stdout.split()
    # Table 40: start >> 4 at bit 0, LBO 128 >> 4 = 8 at 16, SBO 256 >> 4 = 16 at 32, 0b001 at 46; address bits above
    # 17 dropped ((x & 0x3FFFF) >> 4), so 0x40400 encodes as 0x400
    smem = 8 << 16 | 16 << 32 | 1 << 46
    want = [0x0810_0010, 0x0820_0910, 0x0840_04A0, 0x1040_0010, 0x08C0_0000, 0x0810_0480,
            smem | 0x40, smem | 0x2C8, smem | 0x40, 0x0020_010F, 4096]  # fmt: skip
    assert [int(x, 16) for x in out] == want


@pytest.mark.parametrize("arch", OTHER_ARCHS)
def test_other_archs_build_the_kernels_without_tcgen05(compiled, arch: str) -> None:
    """sm_80, sm_89, sm_90a and sm_120a: every listed kernel exists (the SASS stage finds it) and holds no tensor-memory
    or tcgen05 instruction; every case is a static row there, run nowhere."""
    binary = compiled(arch, "tensorcore", "tcgen05")
    kernels = sass.opcodes(sass.dump(binary, arch))
    for case_id, entries in listing(binary).items():
        for k in entries:
            assert not [op for op in kernels[k["symbol"]] if TCGEN05_OPCODES.match(op)], (case_id, k["symbol"])
    out = run.execute(binary, CASES, arch, repeats=1, device_index=0, timeout=10)
    assert not out.records and {s["status"] for s in out.status} == {"static"}
    assert all(s["reason"].startswith(f"not run: {arch} lacks tcgen05") for s in out.status)


def test_int8_is_static_on_sm_103a_only() -> None:
    """.kind::i8 is in the PTX ISA target notes of sm_100a and sm_110a, not of sm_103a."""
    s8 = next(c for c in CASES if c.id == "tcgen05_s8_s32")
    assert s8.unsupported("sm_100a") is None and s8.unsupported("sm_110a") is None
    assert s8.unsupported("sm_103a") == "sm_103a lacks tcgen05_i8"
    assert all(c.unsupported("sm_103a") is None for c in CASES if c is not s8)


@pytest.mark.gpu
def test_b200_runs_every_case_to_exact_sums(tmp_path: Path) -> None:
    """On sm_100 only: every case runs (the binary fails where D is not the exact sum of its MMAs); back-to-back MMAs
    beat committed-and-waited ones; f16 stays under the B200 datasheet's dense rate."""
    gpu = device.query(0)
    if isinstance(gpu, str) or gpu.compute_capability != (10, 0):
        reason = gpu if isinstance(gpu, str) else f"{gpu.name} is {gpu.arch}"
        print(f"skipped: tcgen05 needs a B200 (sm_100), {reason}")
        pytest.skip(f"tcgen05 needs a B200 (sm_100): {reason}")
    binary = tmp_path / "tcgen05"
    build.compile_family("nvcc", ROOT / "kernels" / "tensorcore" / "tcgen05.cu", binary, ["sm_100a"],
                         ROOT / "kernels" / "common", FLAGS)  # fmt: skip
    records = []
    for case in CASES:
        params = [f"{k}={','.join(map(str, v))}" for k, v in case.sweep.items()]
        proc = run_cli(str(binary), "--case", case.id, *(a for p in params for a in ("--param", p)), "--repeats", "3")
        assert proc.returncode == 0, proc.stderr
        records += [json.loads(line) for line in proc.stdout.splitlines()]
    assert {(r["case"], json.dumps(r["params"], sort_keys=True)) for r in records} == {
        (c.id, json.dumps(p, sort_keys=True)) for c in CASES for p in c.points()
    }
    flops = {(r["case"], r["params"]["n"], r["params"]["wait"]): r["value"] for r in records if r["metric"] == "flops"}
    for case, n, wait in flops:
        if wait == 0:
            assert flops[case, n, 0] > flops[case, n, 1], (case, n)
    model = archs.gpu_model(gpu.name) or archs.gpu_model("B200")
    tflops = [r["value"] for r in records if r["case"] == "tcgen05_f16_f32" and r["metric"] == "tflops"]
    assert max(tflops) <= 1.05 * model.tensor_tflops["f16"]
