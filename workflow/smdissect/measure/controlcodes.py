"""SASS control codes (Volta and later): decode them from a cubin, re-encode them, and patch chosen fields.

Each 128-bit instruction keeps its scheduling control in bits 105..125 (bits 41..61 of its high 64-bit
word): stall count [4], yield [1], write barrier [3], read barrier [3], wait mask [6], reuse [4]
(maxas / CuAssembler layout). The raw yield bit is inverted: 0 lets the warp yield (CuAssembler's 'Y'),
so `yield_` here is 1 when the raw bit is 0. Barrier 7 means none.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, fields, replace
from pathlib import Path

import pandas as pd

from ..core.errors import SmdissectError
from . import sass

CONTROL_SHIFT = 41  # bit 105 of the instruction is bit 41 of its high word
INSTRUCTION_BYTES = 16
# field -> (bit offset inside the control code, width)
LAYOUT: dict[str, tuple[int, int]] = {
    "stall": (0, 4),
    "yield_": (4, 1),
    "wrbar": (5, 3),
    "rdbar": (8, 3),
    "waitmask": (11, 6),
    "reuse": (17, 4),
}
COLUMNS = ["kernel", "offset", "opcode", "stall", "yield_", "wrbar", "rdbar", "waitmask", "reuse"]
SASS_LINE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P(?:T|\d)\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")

# Files prepare() writes beside a patched family's binary; patched.cu reads the same names.
CUBIN_DIR = ".cubins"
ORIGINAL = "original.cubin"
PATCHED_DIR = "patched"
PATCH_KERNEL = "ffma_chain"
PATCH_OPCODE = "FFMA"
PATCH_STALLS = range(1, 16)
REUSE_KERNEL = "ffma_operands"  # its FFMAs read the same a and b: ptxas marks them .reuse
REUSE_CLEARED = "reuse.patched.cubin"


@dataclass(frozen=True)
class Control:
    """The control fields of one instruction, `yield_` as the semantic flag (1: the warp may yield)."""

    stall: int
    yield_: int
    wrbar: int
    rdbar: int
    waitmask: int
    reuse: int

    @classmethod
    def from_word(cls, high: int) -> Control:
        """The fields of an instruction's high 64-bit word."""
        code = high >> CONTROL_SHIFT
        raw = {name: (code >> lo) & ((1 << width) - 1) for name, (lo, width) in LAYOUT.items()}
        return cls(**(raw | {"yield_": 1 - raw["yield_"]}))

    def to_word(self, high: int) -> int:
        """`high` with its control bits replaced by these fields."""
        code = 0
        for name, (lo, width) in LAYOUT.items():
            value = getattr(self, name)
            value = 1 - value if name == "yield_" else value
            if not 0 <= value < (1 << width):
                raise SmdissectError(f"control field {name}={getattr(self, name)} does not fit in {width} bits")
            code |= value << lo
        mask = ((1 << 21) - 1) << CONTROL_SHIFT
        return (high & ~mask) | (code << CONTROL_SHIFT)


def text_sections(cubin: bytes) -> dict[str, tuple[int, int]]:
    """Mangled kernel name -> (file offset, size) of its `.text.<name>` section in an ELF64 cubin."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        raise SmdissectError("not an ELF64 cubin (bad magic or class)")
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]
    out = {}
    for name_off, _type, _flags, _addr, offset, size, *_ in headers:
        end = cubin.index(b"\0", names_at + name_off)
        name = cubin[names_at + name_off : end].decode()
        if name.startswith(".text."):
            out[name[len(".text.") :]] = (offset, size)
    return out


def controls(cubin: bytes, kernel: str) -> list[tuple[int, Control]]:
    """(offset in the kernel, control fields) of every instruction of a kernel (mangled name)."""
    sections = text_sections(cubin)
    if kernel not in sections:
        raise SmdissectError(f"kernel {kernel} not in the cubin (has {', '.join(sorted(sections)) or 'none'})")
    start, size = sections[kernel]
    return [
        (pos, Control.from_word(struct.unpack_from("<Q", cubin, start + pos + 8)[0]))
        for pos in range(0, size, INSTRUCTION_BYTES)
    ]


def _put(buf: bytearray, at: int, control: Control) -> None:
    """Write `control` into the instruction whose high word is at byte `at` of `buf`."""
    (high,) = struct.unpack_from("<Q", buf, at)
    struct.pack_into("<Q", buf, at, control.to_word(high))


def write_control(cubin: bytes, kernel: str, offset: int, control: Control) -> bytes:
    """A copy of `cubin` whose instruction at `offset` of `kernel` carries `control`."""
    start, size = text_sections(cubin)[kernel]
    if offset % INSTRUCTION_BYTES or not 0 <= offset < size:
        raise SmdissectError(f"offset {offset:#x} is not an instruction of {kernel} (size {size:#x})")
    out = bytearray(cubin)
    _put(out, start + offset + 8, control)
    return bytes(out)


def patch(cubin: bytes, kernel: str, offset: int, field: str, value: int) -> bytes:
    """A copy of `cubin` with one control field of one instruction set to `value`."""
    if field not in LAYOUT:
        raise SmdissectError(f"unknown control field '{field}' (known: {', '.join(LAYOUT)})")
    current = dict(controls(cubin, kernel))[offset]
    return write_control(cubin, kernel, offset, replace(current, **{field: value}))


def reencode(cubin: bytes) -> bytes:
    """Decode every instruction's control code and write it back: identical bytes when the codec is right."""
    out = bytearray(cubin)
    for kernel, (start, _) in text_sections(cubin).items():
        for offset, control in controls(cubin, kernel):
            _put(out, start + offset + 8, control)
    return bytes(out)


def disassemble(cubin: bytes) -> dict[str, dict[int, str]]:
    """Opcode (with modifiers) per offset per mangled kernel, from `cuobjdump -sass`."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(cubin)
        proc = subprocess.run([sass.cuobjdump(), "-sass", str(path)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SmdissectError(f"cuobjdump -sass failed: {proc.stderr.strip()[-200:]}")
    return opcodes_of(proc.stdout)


def opcodes_of(text: str) -> dict[str, dict[int, str]]:
    """Opcode (with modifiers) per offset per mangled kernel of a `cuobjdump -sass` listing."""
    out: dict[str, dict[int, str]] = {}
    current: dict[int, str] | None = None
    for line in text.splitlines():
        if m := sass.FUNCTION.match(line):
            current = out.setdefault(m.group(1), {})
        elif current is not None and (m := SASS_LINE.match(line)):
            current[int(m.group(1), 16)] = m.group(2)
    return out


def decode(cubin: bytes, opcodes: dict[str, dict[int, str]] | None = None) -> pd.DataFrame:
    """One row per instruction of every kernel: demangled kernel, offset, opcode and control fields; `opcodes`
    (opcodes_of the cubin's kernels' SASS) where given, else from disassembling the cubin."""
    opcodes = disassemble(cubin) if opcodes is None else opcodes
    names = [f.name for f in fields(Control)]
    rows = []
    for kernel in text_sections(cubin):
        demangled, ops = sass.demangle(kernel), opcodes.get(kernel, {})
        rows += [
            (demangled, offset, ops.get(offset, ""), *(getattr(control, n) for n in names))
            for offset, control in controls(cubin, kernel)
        ]
    return pd.DataFrame(rows, columns=COLUMNS)


def extract_cubins(binary: Path, arch: str) -> list[bytes]:
    """The `arch` cubins embedded in a host binary (`cuobjdump -xelf all`)."""
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [sass.cuobjdump(), "-xelf", "all", str(Path(binary).resolve())], cwd=tmp, capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise SmdissectError(f"cuobjdump -xelf failed on {binary}: {proc.stderr.strip()[-200:]}")
        return [p.read_bytes() for p in sorted(Path(tmp).glob(f"*.{arch}.cubin"))]


def decode_binary(binary: Path, arch: str, listing: str | None = None) -> pd.DataFrame:
    """The control codes of every kernel of every `arch` cubin in a built binary (columns: COLUMNS); `listing`:
    the binary's `arch` SASS (sass.dump), which saves disassembling each cubin again."""
    opcodes = None if listing is None else opcodes_of(listing)  # parsed once for every cubin
    frames = [decode(cubin, opcodes) for cubin in extract_cubins(binary, arch)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)


def chain_offsets(cubin: bytes, kernel: str, opcode: str) -> list[int]:
    """Offsets of the dependent-chain instructions: `opcode` with the kernel's most common stall count."""
    names = disassemble(cubin).get(kernel, {})
    picked = [(o, c) for o, c in controls(cubin, kernel) if sass.matches(names.get(o, ""), opcode)]
    if not picked:
        raise SmdissectError(f"{kernel} has no {opcode} instruction to patch")
    stall = Counter(c.stall for _, c in picked).most_common(1)[0][0]
    return [o for o, c in picked if c.stall == stall]


def patch_all(cubin: bytes, kernel: str, offsets: list[int], field: str, value: int) -> bytes:
    """`patch` applied at every offset."""
    for offset in offsets:
        cubin = patch(cubin, kernel, offset, field, value)
    return cubin


def prepare(source: Path, binary: Path, arch: str, nvcc: str, include: Path, flags: list[str]) -> None:
    """Compile the patch targets (`source`) to a cubin beside `binary` and write its patched variants.

    `<binary>.cubins/original.cubin` is the compiler's output; `<binary>.cubins/patched/` holds
    `stall_<k>.patched.cubin` (every chain FFMA's stall count set to k), `yield.patched.cubin`
    (every chain FFMA's yield flag inverted) and `reuse.patched.cubin` (every FFMA of REUSE_KERNEL without its
    .reuse flags), named so they are never taken for the original.
    """
    out = Path(str(binary) + CUBIN_DIR)
    compute = arch.replace("sm_", "compute_")
    kept = [f for f in flags if not f.startswith("-l")]  # link flags mean nothing to -cubin
    if out.exists():
        shutil.rmtree(out)
    (out / PATCHED_DIR).mkdir(parents=True)
    cmd = [nvcc, *kept, "-cubin", f"-gencode=arch={compute},code={arch}", "-I", str(include)]
    proc = subprocess.run([*cmd, "-o", str(out / ORIGINAL), str(source)], capture_output=True, text=True)
    if proc.returncode != 0:
        errors = [ln for ln in proc.stderr.splitlines() if "error" in ln] or proc.stderr.splitlines()[-1:]
        raise SmdissectError(f"nvcc -cubin failed on {source} for {arch}: {errors[0] if errors else 'no output'}")
    original = (out / ORIGINAL).read_bytes()
    offsets = chain_offsets(original, PATCH_KERNEL, PATCH_OPCODE)
    for k in PATCH_STALLS:
        (out / PATCHED_DIR / f"stall_{k}.patched.cubin").write_bytes(
            patch_all(original, PATCH_KERNEL, offsets, "stall", k)
        )
    flipped = original
    for offset in offsets:
        current = dict(controls(flipped, PATCH_KERNEL))[offset]
        flipped = patch(flipped, PATCH_KERNEL, offset, "yield_", 1 - current.yield_)
    (out / PATCHED_DIR / "yield.patched.cubin").write_bytes(flipped)
    (out / PATCHED_DIR / REUSE_CLEARED).write_bytes(clear_reuse(original, REUSE_KERNEL, PATCH_OPCODE))


def clear_reuse(cubin: bytes, kernel: str, opcode: str) -> bytes:
    """A copy of `cubin` whose `opcode` instructions in `kernel` carry no .reuse flag (the operands are read from the
    register file again: same results, only the operand reads change)."""
    names = disassemble(cubin).get(kernel, {})
    marked = [o for o, c in controls(cubin, kernel) if c.reuse and sass.matches(names.get(o, ""), opcode)]
    if not marked:
        raise SmdissectError(f"{kernel} has no {opcode} with a .reuse flag to clear")
    return patch_all(cubin, kernel, marked, "reuse", 0)
