"""Command line of the stages: `smdissect <stage> ...` (or `python -m smdissect`); every failure is one line. A stage's
command lives in the module of its layer (smdissect.stages), and only that module is imported to run it."""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Iterable

from . import __version__
from .core import tables
from .core.errors import exit_on_error
from .stages.options import MANY

# Each stage and the module of smdissect.stages whose `cmd_<stage>` runs it (with its OPTIONS and READS).
STAGES = {
    "build": "static",
    "sass": "static",
    "run": "gpu",
    "exec": "gpu",
    "profile": "gpu",
    "parse": "gpu",
    "crossval": "tables",
    "figures": "tables",
    "headlines": "pages",
    "report": "pages",
    "index": "pages",
    "gpus": "pages",
    "compare": "pages",
    "export": "data",
    "simconfig": "data",
    "roofline": "pages",
    "paper_map": "data",
    "features": "data",
    "archs": "data",
}
# Every other option's help: by name, or by "<stage>.<name>" where a stage means something else by it.
HELP = {
    "a": "a result folder holding figures.parquet tables (results/<gpu>/ or reports/<gpu>/tables/), or a model file "
    "(model.json)",
    "b": "what --a is set against: paper (the seed paper's sm_120 figures; the default), a second result folder or a "
    "model file",
    "compare.categories": "only these categories (default: every category --a holds)",
    "report.categories": "the run's categories, which the page header links (default: this one)",
    "index.categories": "the run's categories, one row and one link each",
    "arch": "the arch the binary is built for (sm_90a, sm_120a, ...)",
    "build.arch": "the archs to build for (sm_90a, sm_120a, ...), one or more",
    "archs": "every arch the run builds (the coverage table's columns)",
    "binary": "the family's benchmark binary",
    "build.binary": "where to write the family's benchmark binary, one path per --arch (each a copy)",
    "category": "the category: a folder of --kernels holding a cases.yaml",
    "cuda": "the CUDA toolkit version the binary was built with (recorded as provenance)",
    "device": "the CUDA index of the GPU to use, or any (a free GPU of device 0's model)",
    "exec.device": "the CUDA index of the GPU to use",
    "family": "the case family: its source file's name without the extension",
    "flags": "nvcc flags as one string (--flags='-O3 -lineinfo')",
    "folders": "the result folders, one per GPU (results/<gpu>/)",
    "gpu": "the name of the GPU's result folder (h200, static, ...)",
    "include": "the folder of shared headers (kernels/common)",
    "kernels": "the kernels/ folder of category manifests (default: kernels)",
    "listing": "the family's kernel listing (the JSON of the binary's --list)",
    "build.listing": "where to write the family's kernel listing (JSON), one path per --arch",
    "listings": "kernel listings (the .json beside each binary), any number",
    "meta": "the profile's provenance JSON",
    "roofline.out": "where to write the roofline file (reports/<gpu>/roofline.json)",
    "page": "where to write the roofline page drawn from it (reports/<gpu>/roofline.html; default: none)",
    "model": "a model file (reports/<gpu>/model.json, from smdissect export)",
    "export.out": "where to write the model (reports/<gpu>/model.json)",
    "simconfig.out": "the folder to write gpgpusim.config, trace.config and gpgpusim-diff.html into",
    "profile.meta": "where to write the profile's provenance JSON",
    "profile.ncu": "the Nsight Compute executable",
    "ncu_version": "ncu's version line, recorded as provenance (default: asked from --ncu)",
    "nvcc": "the nvcc executable",
    "out": "the file to write",
    "run.out": "where to write the timing samples (raw.parquet)",
    "out_checks": "where to write the SASS checks (sass_checks.parquet)",
    "out_controls": "where to write the SASS control codes (controlcodes.parquet)",
    "out_ncu": "where to write the long ncu metrics (ncu.parquet)",
    "out_pipes": "where to write the pipe counts (pipes.parquet)",
    "out_sass": "where to write the opcode counts (sass.parquet)",
    "out_stalls": "where to write the stall reasons (stalls.parquet)",
    "out_status": "where to write each planned point's status (status.parquet)",
    "provenance": "the run's provenance as a JSON object (GPU, driver, commit, ...)",
    "readme": "a README whose headlines block to rewrite (default: print the table)",
    "refs": "raw tables of the other categories this one's checks refer to, any number",
    "repeats": "samples per point",
    "report": "the Nsight Compute report to read (.ncu-rep)",
    "profile.report": "where to write the Nsight Compute report (.ncu-rep)",
    "run_arch": "the arch of the GPU the run measured (empty without one)",
    "skipped": "the stages the plan skipped, each with why, as a JSON object",
    "source": "the family's source (.cu)",
    "tables": "a folder whose figures.parquet tables to read, searched recursively (reports/h200/tables)",
    "export.tables": "a folder whose figures and status tables to read, searched recursively (results/<gpu>/)",
}


def parser(stages: Iterable[str] = STAGES) -> argparse.ArgumentParser:
    """The command line of `stages` (default: every stage), importing only their modules."""
    top = argparse.ArgumentParser(prog="smdissect", description=__doc__)
    top.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = top.add_subparsers(dest="stage", required=True)
    for stage in stages:
        module = importlib.import_module(f"{__package__}.stages.{STAGES[stage]}")
        func = getattr(module, f"cmd_{stage}")
        p = sub.add_parser(stage, help=func.__doc__, description=func.__doc__)
        reads = module.READS.get(func, ())
        p.set_defaults(func=func, reads=reads)
        for opt in module.OPTIONS[func]:
            name, kw = (opt, {}) if isinstance(opt, str) else opt
            p.add_argument(
                f"--{name.replace('_', '-')}",
                dest=name,
                required=not {"nargs", "default"} & set(kw),
                help=HELP.get(f"{stage}.{name}") or HELP.get(name),
                **kw,
            )
        for kind in reads:
            p.add_argument(f"--{kind.replace('_', '-')}", dest=kind, help=tables.TABLES[kind].help, **MANY)
    return top


def _terminated(signum: int, _frame: object) -> None:
    """SIGTERM (snakemake stopping, ncu's group stopped) as an exit, so that the stage's cleanup runs: a binary that
    run.attempt started in a process group of its own is ended with it."""
    raise SystemExit(128 + signum)


@exit_on_error
def main(argv: list[str] | None = None) -> None:
    """Parse the command line and run one stage."""
    signal.signal(signal.SIGTERM, _terminated)
    words = sys.argv[1:] if argv is None else argv
    asked = next((w for w in words if not w.startswith("-")), "")
    args = parser([asked] if asked in STAGES else STAGES).parse_args(words)
    args.func(args)
