"""The stages that write the GPU as data and the documents made from the manifests: the model file, the simulator
configuration, the paper map, the arch coverage and the kernels' feature header."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..analysis import coverage, model, paper_structure
from ..core import archs, catalog, features, files
from ..pages import simconfig
from .options import Command, Options


def cmd_export(args: argparse.Namespace) -> None:
    """Write the model of a run's figures (model.json: every field of the seed paper's appendix, with evidence)."""
    model.export(Path(args.tables), Path(args.out), Path(args.kernels))


def cmd_simconfig(args: argparse.Namespace) -> None:
    """Write a GPGPU-Sim gpgpusim.config and trace.config from a model file, and their diff against Accel-Sim's."""
    simconfig.write(Path(args.model), Path(args.out), Path(args.kernels))


def cmd_paper_map(args: argparse.Namespace) -> None:
    """Write the page of the seed paper's sections against smdissect's categories (docs/paper-map.md)."""
    files.write_text(Path(args.out), paper_structure.markdown(Path(args.kernels)))


def cmd_archs(args: argparse.Namespace) -> None:
    """Print the planned points each arch can run and the static ones with why, or write it into --readme."""
    cases = catalog.load_all(Path(args.kernels), catalog.categories(Path(args.kernels)))
    block = coverage.arch_markdown(coverage.arch_plan(cases, args.archs))
    if args.readme:
        files.replace_block(Path(args.readme), "archs", block)
    else:
        print(block)


def cmd_features(args: argparse.Namespace) -> None:
    """Write the kernels' arch feature tests (kernels/common/features.cuh) from the arch table (features.FEATURES)."""
    files.write_text(Path(args.out), features.features_header())


OPTIONS: dict[Command, Options] = {
    cmd_export: ["tables", "out", ("kernels", {"default": "kernels"})],
    cmd_simconfig: ["model", "out", ("kernels", {"default": "kernels"})],
    cmd_paper_map: ["out", ("kernels", {"default": "kernels"})],
    cmd_archs: [
        ("archs", {"nargs": "+", "default": list(archs.CHECKED_ARCHS)}),
        ("readme", {"default": ""}),
        ("kernels", {"default": "kernels"}),
    ],
    cmd_features: [("out", {"default": features.FEATURES_HEADER})],
}
READS: dict[Command, tuple[str, ...]] = {}
