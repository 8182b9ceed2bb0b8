"""The stages that need the toolkit but no GPU: build a family, and read its SASS into the sass, sass_checks and
controlcodes tables."""

from __future__ import annotations

import argparse
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from ..core import catalog, files, tables
from ..core.errors import SmdissectError
from ..measure import build, controlcodes, run, sass
from .options import Command, Options

ROOT = Path(__file__).resolve().parents[3]  # the checkout: its git commit is every row's `commit`
# Builds and SASS dumps yield the cores to the GPU jobs that run beside them: a GPU job's host thread spins
# in every synchronize, and a starved one stretches the run and profile stages.
CPU_STAGE_NICENESS = 10


def family_cases(kernels: Path, category: str, family: str) -> list[catalog.Case]:
    """The manifest entries that live in one .cu file."""
    cases = catalog.families(catalog.load(kernels, category)).get(family)
    if not cases:
        raise SmdissectError(f"kernels/{category}/cases.yaml has no case with source {family}.cu")
    return cases


def family_of(args: argparse.Namespace) -> list[catalog.Case]:
    """The cases of the family a stage's --kernels, --category and --family name."""
    return family_cases(Path(args.kernels), args.category, args.family)


def sass_tables(
    binary: Path,
    listing: Path,
    cases: list[catalog.Case],
    arch: str,
    cuda: str,
    out_sass: Path,
    out_checks: Path,
    out_controls: Path,
) -> None:
    """Opcode counts of every kernel of a binary, the manifest's expectations checked on them, and every
    instruction's control codes (stall count, yield, barriers, wait mask, reuse) decoded from the cubin."""
    base, rows, checks, text = sass_rows(binary, listing, cases, arch, cuda)
    tables.write("sass", tables.frame("sass", rows), out_sass)
    tables.write("sass_checks", tables.frame("sass_checks", checks), out_checks)
    codes = controlcodes.decode_binary(binary, arch, text) if rows else pd.DataFrame(columns=controlcodes.COLUMNS)
    controls = codes.assign(**base, case="", params="")
    tables.write("controlcodes", controls, out_controls)


def sass_rows(
    binary: Path, listing: Path, cases: list[catalog.Case], arch: str, cuda: str
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], str]:
    """The provenance of a binary's static tables, its sass rows (opcode counts per kernel, in all and in one pass
    of the timed loop), its sass_checks rows (each case's claims on each of its kernels) and the SASS text read."""
    by_id = {c.id: c for c in cases}
    entries = json.loads(listing.read_text())
    has_kernels = any(e["kernels"] for e in entries)  # a Python family lists none: it has no SASS of its own
    text = sass.dump(binary, arch) if has_kernels else ""
    counts, code = sass.opcodes(text), sass.code(text)
    base = {
        "gpu": "none",
        "gpu_uuid": "",
        "arch": arch,
        "driver": "",
        "cuda": cuda,
        "category": cases[0].category,
        "run_id": f"static-{datetime.now(UTC):%Y%m%dT%H%M%SZ}",
        "family": cases[0].family,
        "commit": run.commit(ROOT),
    }
    rows, checks = [], []
    for entry in entries:
        case = by_id.get(entry["case"])
        if case is None:
            continue
        for k in entry["kernels"]:
            if k["symbol"] not in counts:
                raise SmdissectError(f"{binary}: kernel {k['symbol']} is listed but not in the SASS: rebuild it")
            key = base | {
                "case": case.id,
                "params": tables.canonical_params(k["params"]),
                "variant": k["variant"],
                "kernel": k["symbol"],
            }
            observed = counts[k["symbol"]]
            loop = sass.loop_opcodes(code[k["symbol"]], around=case.sass_loop == "around")
            rows += [
                key | {"ops": k["ops"], "opcode": op, "count": n, "loop_count": loop.get(op, 0)}
                for op, n in sorted(observed.items())
            ]
            applies = case.unsupported(arch) is None  # compiled out on this arch: the kernel exists without it
            checks += [
                key | row | ({} if applies else {"verdict": "not-applicable"})
                for row in sass.claims(case.on(arch), code[k["symbol"]], k["ops"])
            ]
    return base, rows, checks, text


def cmd_build(args: argparse.Namespace) -> None:
    """Compile a family once for one or more archs (their SASS in one binary, copied to each arch's path) and save
    its kernel listing beside each copy."""
    os.nice(CPU_STAGE_NICENESS)
    source, flags = Path(args.source), args.flags.split()
    binaries, listings = [Path(b) for b in args.binary], [Path(li) for li in args.listing]
    if not len(args.arch) == len(binaries) == len(listings):
        raise SmdissectError("build: give one --binary and one --listing per --arch, in the same order")
    build.compile_family(args.nvcc, source, binaries[0], args.arch, Path(args.include), flags)
    for copy in binaries[1:]:
        build.copy_binary(binaries[0], copy)
    targets = catalog.family_settings(source.parent.parent, source.parent.name, source.stem).get("patched")
    for arch, binary in zip(args.arch, binaries, strict=True):
        if targets:  # the family runs patched cubins: make them beside the binary, from their own source
            controlcodes.prepare(source.parent / targets, binary, arch, args.nvcc, Path(args.include), flags)
        else:  # the build rule's cubins folder, empty: the family runs none
            Path(str(binary) + controlcodes.CUBIN_DIR).mkdir(exist_ok=True)
    build.write_listing(binaries[0], listings[0])
    for listing in listings[1:]:
        files.write_text(listing, listings[0].read_text())


def cmd_sass(args: argparse.Namespace) -> None:
    """Opcode counts and SASS checks of a built family."""
    os.nice(CPU_STAGE_NICENESS)
    sass_tables(
        Path(args.binary),
        Path(args.listing),
        family_of(args),
        args.arch,
        args.cuda,
        Path(args.out_sass),
        Path(args.out_checks),
        Path(args.out_controls),
    )


OPTIONS: dict[Command, Options] = {
    cmd_build: [
        "source",
        ("binary", {"nargs": "+"}),
        ("listing", {"nargs": "+"}),
        ("arch", {"nargs": "+"}),
        "include",
        "nvcc",
        "flags",
    ],
    cmd_sass: [
        "binary",
        "listing",
        "arch",
        "cuda",
        "out_sass",
        "out_checks",
        "out_controls",
        "kernels",
        "category",
        "family",
    ],
}
READS: dict[Command, tuple[str, ...]] = {}
