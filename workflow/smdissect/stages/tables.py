"""The stages that turn a category's tables into its judged results: cross-validation (clock64 against counters and
SASS) and the reported figures."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..analysis import crossval, figures
from ..core import catalog, tables
from .options import MANY, Command, Options, inputs


def kernel_ops(listings: list[Path]) -> dict[tuple[str, str, str], int]:
    """(case, kernel params, variant) -> instructions in the chain body, from the binaries' --list."""
    ops = {}
    for listing in listings:
        for entry in json.loads(Path(listing).read_text()):
            for k in entry["kernels"]:
                ops[(entry["case"], tables.canonical_params(k["params"]), k["variant"])] = k["ops"]
    return ops


def crossval_table(
    kernels: Path,
    category: str,
    raw: list[Path],
    ncu_tables: list[Path],
    stalls: list[Path],
    sass_checks: list[Path],
    listings: list[Path],
    out: Path,
) -> None:
    """Every cross-check of a category, each with its numbers and a verdict."""
    raw_df = tables.read("raw", raw)
    cases = catalog.load(kernels, category)
    rows = crossval.crossval(
        cases,
        raw_df,
        tables.read("ncu", ncu_tables),
        tables.read("stalls", stalls),
        tables.read("sass_checks", sass_checks),
        kernel_ops(listings),
        {f for f in catalog.families(cases) if catalog.family_settings(kernels, category, f)["profile"]},
    )
    prov = raw_df.iloc[0][[n for n, _ in tables.PROVENANCE if n not in ("case", "params")]].to_dict()
    tables.write("crossval", tables.frame("crossval", [prov | r for r in rows]), out)


def figures_table(kernels: Path, category: str, inputs: dict[str, list[Path]], refs: list[Path], out: Path) -> None:
    """Every reported figure of a category with its status, from its tables (`inputs`: raw, crossval, and the run
    arch's sass_checks and controlcodes); `refs`: raw tables of the categories its cases name in `built_from` /
    `same_as`."""
    frames = {kind: tables.read(kind, paths) for kind, paths in inputs.items()}
    others = {}
    for other, group in tables.read("raw", refs).groupby("category"):
        by_point = figures.points(group)
        others[str(other)] = [
            f for c in catalog.load(kernels, str(other)) for f in figures.case_figures(c, group, by_point)
        ]
        figures.set_clocks(others[str(other)], figures.point_clocks(group))
    rows: list[dict[str, Any]] = []
    if len(frames["raw"]):
        first = frames["raw"].iloc[0]
        found = figures.compute(catalog.load(kernels, category), frames, others, str(first["arch"]), str(first["gpu"]))
        prov = first[[n for n, _ in tables.PROVENANCE if n not in ("case", "params")]].to_dict()
        rows = figures.rows(found, prov)
    tables.write("figures", tables.frame("figures", rows), out)


def cmd_crossval(args: argparse.Namespace) -> None:
    """Cross-validate a category's clock64 results against its counters and SASS."""
    paths = inputs(args)
    crossval_table(
        Path(args.kernels),
        args.category,
        paths["raw"],
        paths["ncu"],
        paths["stalls"],
        paths["sass_checks"],
        [Path(p) for p in args.listings],
        Path(args.out),
    )


def cmd_figures(args: argparse.Namespace) -> None:
    """Compute a category's reported figures and judge each one."""
    refs = [Path(p) for p in args.refs]
    figures_table(Path(args.kernels), args.category, inputs(args), refs, Path(args.out))


OPTIONS: dict[Command, Options] = {
    cmd_crossval: ["kernels", "category", "out", ("listings", MANY)],
    cmd_figures: ["kernels", "category", "out", ("refs", MANY)],
}
READS: dict[Command, tuple[str, ...]] = {
    cmd_crossval: ("raw", "ncu", "stalls", "sass_checks"),
    cmd_figures: ("raw", "crossval", "sass_checks", "controlcodes"),
}
