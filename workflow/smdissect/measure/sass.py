"""SASS of a built binary (cuobjdump): opcode counts per kernel, checked against the manifest."""

from __future__ import annotations

import importlib.util
import itertools
import operator
import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..core.catalog import Case
from ..core.errors import SmdissectError

FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
LINE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P(?:T|\d)\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)\s*([^;]*);")
BRANCH_TARGET = re.compile(r"0x([0-9a-f]+)\s*$")
INSTRUCTION_BYTES = 16  # every SASS instruction from sm_70 on
CLOCK = "SR_CLOCKLO"  # what a clock64 (CS2R) or clock (S2R/S2UR) read names: the edges of a timed region
EXPECTATION = re.compile(r"^\s*(==|>=|<=|>|<)\s*(?:(\d+)\s*\*\s*)?(ops|\d+)\s*(?:([+-])\s*(\d+))?\s*$")
COMPARE = {"==": operator.eq, ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}


def cuobjdump() -> str:
    """cuobjdump from PATH, else from the nvidia-cuda-cuobjdump wheel (the `toolkit` extra)."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    spec = importlib.util.find_spec("nvidia")
    for root in spec.submodule_search_locations if spec and spec.submodule_search_locations else []:
        for candidate in sorted(Path(root).glob("cu*/bin/cuobjdump")):
            return str(candidate)
    raise SmdissectError("cuobjdump not found: pip install 'smdissect[toolkit]' or put the CUDA toolkit's bin on PATH")


def dump(binary: Path, arch: str) -> str:
    """The SASS text of every kernel `binary` holds for `arch` (a binary may carry several archs)."""
    proc = subprocess.run([cuobjdump(), "--dump-sass", "-arch", arch, str(binary)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SmdissectError(f"cuobjdump failed on {binary}: {proc.stderr.strip().splitlines()[-1:]}")
    if "Function :" not in proc.stdout:
        raise SmdissectError(f"{binary} holds no {arch} SASS: rebuild it for {arch}")
    return proc.stdout


@dataclass(frozen=True)
class Instruction:
    """One SASS instruction: its offset, opcode (with modifiers), operands and, for a branch, its target."""

    offset: int
    opcode: str
    operands: str
    target: int | None


@lru_cache(maxsize=2)  # opcodes() and the callers of both parse one dump once (a family's is 4-33 MB: ~1 s each)
def code(text: str) -> dict[str, list[Instruction]]:
    """Every kernel's instructions in address order, keyed by demangled name (shared between callers: read only)."""
    kernels: dict[str, list[Instruction]] = {}
    current: list[Instruction] | None = None
    for line in text.splitlines():
        if m := FUNCTION.match(line):
            current = kernels.setdefault(demangle(m.group(1)), [])
        elif current is not None and (m := LINE.match(line)):
            to = BRANCH_TARGET.search(m.group(3)) if m.group(2).startswith(("BRA", "CALL.REL")) else None
            target = int(to.group(1), 16) if to else None
            current.append(Instruction(int(m.group(1), 16), m.group(2), m.group(3), target))
    return kernels


def opcodes(text: str) -> dict[str, Counter[str]]:
    """Opcode counts (with modifiers, e.g. MUFU.EX2) per kernel, keyed by demangled name."""
    return {kernel: Counter(i.opcode for i in instructions) for kernel, instructions in code(text).items()}


def loops(instructions: list[Instruction]) -> list[tuple[int, int]]:
    """Every loop as (first, last offset): a backward branch and the code from its target to it (the trap `BRA` to
    itself after EXIT is none)."""
    return [
        (i.target, i.offset)
        for i in instructions
        if i.opcode.startswith("BRA") and i.target is not None and i.target < i.offset
    ]


def timed_regions(instructions: list[Instruction]) -> list[tuple[int, int]]:
    """The spans between consecutive clock reads, in order (none where the kernel reads the clock once or never)."""
    reads = [i.offset for i in instructions if CLOCK in i.operands]
    return list(itertools.pairwise(reads))


def timed_loop(instructions: list[Instruction], around: bool = False) -> tuple[int, int, str] | None:
    """The code one timed step repeats, as (first, last offset, what it is): the outermost loop of the first
    timed region that holds one; else the innermost loop around a clock read (each pass timed on its own); else
    the timed span itself; a kernel that reads no clock (timed by the host) gives its outermost loop. None for
    straight-line code timed by the host. `around` (a case whose step is straight-line code with a retry loop in
    it, manifest `sass: {loop: around}`) takes the innermost loop holding every clock read first."""
    found = loops(instructions)
    reads = [i.offset for i in instructions if CLOCK in i.operands]
    holding = [(a, b) for a, b in found if around and len(reads) >= 2 and a <= reads[0] and reads[-1] <= b]
    if holding:
        a, b = min(holding, key=lambda loop: loop[1] - loop[0])
        return a, b, "loop around the clock reads"
    for start, end in timed_regions(instructions):
        inside = [(a, b) for a, b in found if start < a and b < end]
        if inside:
            a, b = max(inside, key=lambda loop: loop[1] - loop[0])
            return a, b, "loop between the clock reads"
    around_a_read = [(a, b) for a, b in found if any(a <= r <= b for r in reads)]
    if around_a_read:
        a, b = min(around_a_read, key=lambda loop: loop[1] - loop[0])
        return a, b, "loop timing each pass"
    if len(reads) >= 2:
        return reads[0], reads[-1], "timed span (no loop)"
    if found:
        a, b = max(found, key=lambda loop: loop[1] - loop[0])
        return a, b, "outermost loop (timed by the host)"
    return None


def loop_opcodes(instructions: list[Instruction], around: bool = False) -> Counter[str]:
    """Opcode counts of one pass through the timed loop (empty where the kernel has none)."""
    span = timed_loop(instructions, around)
    if span is None:
        return Counter()
    # sm_80/sm_89 ptxas leaves some loops through a predicated CALL.REL.NOINC to the instruction after the loop's
    # backward branch: a branch out of the loop, not a call of a routine (those lie past the kernel's EXIT)
    leaves = span[1] + INSTRUCTION_BYTES
    return Counter(
        i.opcode
        for i in instructions
        if span[0] <= i.offset <= span[1] and not (i.opcode.startswith("CALL.REL") and i.target == leaves)
    )


def demangle(name: str) -> str:
    """'chain_kernel<Ffma,1,256>' from its Itanium mangling (namespaces dropped); other names unchanged."""
    pos = 2 if name.startswith("_Z") else None
    if pos is None:
        return name
    nested = name.startswith("N", pos)
    pos += nested
    ident = ""
    try:
        while name[pos].isdigit():
            length = re.match(r"\d+", name[pos:]).group(0)
            pos += len(length)
            ident = name[pos : pos + int(length)]
            pos += int(length)
            if not nested:  # a plain name: what follows are its parameter types
                break
        if name[pos] != "I":
            return ident or name
        args, pos = _template_args(name, pos + 1)
    except (IndexError, AttributeError, ValueError):
        return name
    return f"{ident}<{','.join(args)}>"


def _template_args(name: str, pos: int) -> tuple[list[str], int]:
    args = []
    while name[pos] != "E":
        if m := re.match(r"L[a-z](n?)(\d+)E", name[pos:]):
            args.append(("-" if m.group(1) else "") + m.group(2))
        elif m := re.match(r"(\d+)", name[pos:]):
            length = int(m.group(1))
            args.append(name[pos + len(m.group(1)) : pos + len(m.group(1)) + length])
            pos += len(m.group(1)) + length
            continue
        else:
            raise ValueError(name)
        pos += len(m.group(0))
    return args, pos + 1


def matches(opcode: str, key: str) -> bool:
    """An expectation key names an opcode and all its modified forms: FFMA matches FFMA.FTZ."""
    return opcode == key or opcode.startswith(key + ".")


def count(counts: Counter[str], key: str) -> int:
    """How many instructions in `counts` the key matches; 'HMMA|QMMA' matches either opcode."""
    return sum(n for op, n in counts.items() if any(matches(op, k) for k in key.split("|")))


def holds(expect: str, observed: int, ops: int) -> bool:
    """Whether `observed` satisfies an expectation like '== ops', '>= 2*ops', '<= ops + 16', '>=256'."""
    m = EXPECTATION.match(expect)
    if not m:
        raise SmdissectError(f"SASS expectation '{expect}' is not like '== ops', '>= 256' or '<= ops + 8'")
    cmp, factor, base, sign, offset = m.groups()
    bound = (int(factor) if factor else 1) * (ops if base == "ops" else int(base))
    bound += (int(offset) if sign == "+" else -int(offset)) if sign else 0
    return COMPARE[cmp](observed, bound)


def in_loop(expect: str) -> bool:
    """Whether an expectation is about the timed loop: one in terms of `ops` (the instructions one pass of the
    timed loop issues) is checked on that loop's own SASS; an absolute one ('== 2', '>= 256') on the whole kernel."""
    return "ops" in expect


def check(case: Case, counts: Counter[str], ops: int, loop: Counter[str] | None = None) -> list[dict[str, Any]]:
    """One row per expectation and forbidden opcode of `case`, with the count, its scope and a verdict: expectations
    in terms of `ops` are counted in one pass of the timed loop (`loop`; the kernel's counts where none is given),
    the others and every forbidden opcode in the whole kernel."""
    rows = []
    for key, expectations in case.sass_expect.items():
        for expect in expectations:
            scope, seen = ("loop", loop) if in_loop(expect) and loop is not None else ("kernel", counts)
            n = count(seen, key)
            rows.append(
                {
                    "opcode": key,
                    "expect": expect,
                    "scope": scope,
                    "count": n,
                    "verdict": _verdict(holds(expect, n, ops)),
                }
            )
    for key in case.sass_forbid:
        n = count(counts, key)
        rows.append({"opcode": key, "expect": "== 0", "scope": "kernel", "count": n, "verdict": _verdict(n == 0)})
    return rows


def claims(case: Case, instructions: list[Instruction], ops: int) -> list[dict[str, Any]]:
    """`check` of one kernel's SASS: its whole-kernel counts and one pass of the loop the case times."""
    loop = loop_opcodes(instructions, around=case.sass_loop == "around")
    return check(case, Counter(i.opcode for i in instructions), ops, loop)


def _verdict(ok: bool) -> str:
    return "agree" if ok else "disagree"
