"""SASS of a built binary (cuobjdump): opcode counts per kernel, checked against the manifest."""

from __future__ import annotations

import importlib.util
import operator
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from .catalog import Case
from .errors import SmdissectError

FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P(?:T|\d)\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")
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


def opcodes(text: str) -> dict[str, Counter[str]]:
    """Opcode counts (with modifiers, e.g. MUFU.EX2) per kernel, keyed by demangled name."""
    kernels: dict[str, Counter[str]] = {}
    current: Counter[str] | None = None
    for line in text.splitlines():
        if m := FUNCTION.match(line):
            current = kernels.setdefault(demangle(m.group(1)), Counter())
        elif current is not None and (m := INSTRUCTION.match(line)):
            current[m.group(1)] += 1
    return kernels


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
    """How many instructions in `counts` the key matches."""
    return sum(n for op, n in counts.items() if matches(op, key))


def holds(expect: str, observed: int, ops: int) -> bool:
    """Whether `observed` satisfies an expectation like '== ops', '>= 2*ops', '<= ops + 16', '>=256'."""
    m = EXPECTATION.match(expect)
    if not m:
        raise SmdissectError(f"SASS expectation '{expect}' is not like '== ops', '>= 256' or '<= ops + 8'")
    cmp, factor, base, sign, offset = m.groups()
    bound = (int(factor) if factor else 1) * (ops if base == "ops" else int(base))
    bound += (int(offset) if sign == "+" else -int(offset)) if sign else 0
    return COMPARE[cmp](observed, bound)


def check(case: Case, counts: Counter[str], ops: int) -> list[dict[str, Any]]:
    """One row per expectation and forbidden opcode of `case`, with the count and a verdict."""
    rows = []
    for key, expectations in case.sass_expect.items():
        n = count(counts, key)
        for expect in expectations:
            rows.append({"opcode": key, "expect": expect, "count": n, "verdict": _verdict(holds(expect, n, ops))})
    for key in case.sass_forbid:
        n = count(counts, key)
        rows.append({"opcode": key, "expect": "== 0", "count": n, "verdict": _verdict(n == 0)})
    return rows


def _verdict(ok: bool) -> str:
    return "agree" if ok else "disagree"
