"""Command line of the stages: `smdissect <stage> ...` (or `python -m smdissect`); every failure is one line."""

from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from . import __version__, archs, build, catalog, controlcodes, device, files, pipeline, run, slots, tables
from .errors import SmdissectError, exit_on_error

# Builds and SASS dumps yield the cores to the GPU jobs that run beside them: a GPU job's host thread spins
# in every synchronize, and a starved one stretches the run and profile stages.
CPU_STAGE_NICENESS = 10


@contextmanager
def _device(arg: str, offsets: Collection[int] = (0,)) -> Iterator[int]:
    """The CUDA index a GPU job runs on, held (one lock per GPU UUID) for the job's GPU work so that no other job
    shares it: the given index, or with `any` a free GPU of device 0's model. A job whose points use other GPUs
    (`offsets`, run.gpu_offsets) holds theirs too. The job's log gets how long it waited for the GPU and held it
    (`.ci/stage-times` sums them per stage)."""
    index = None if arg == "any" else int(arg)
    uuids = device.uuids_like(index or 0)
    if isinstance(uuids, str):
        raise SmdissectError(f"this job needs a GPU: {uuids}")
    if index is not None:
        uuids = [u if i == index else None for i, u in enumerate(uuids)]
    asked = time.monotonic()
    with slots.acquire(_used_gpus(uuids, offsets)) as held:
        got = time.monotonic()
        yield held
    print(
        f"smdissect: GPU {held} held {time.monotonic() - got:.2f} s after a {got - asked:.2f} s wait", file=sys.stderr
    )


def _used_gpus(uuids: list[str | None], offsets: Collection[int]) -> list[set[str] | None]:
    """Per eligible CUDA device i, the UUIDs of the GPUs a job there uses: device (i + offset) mod the device count
    for each offset the host has (interconnect.cuh's GPU indices; a larger one is a static point)."""
    every = [g.uuid for g in device.all_gpus()] if set(offsets) - {0} else uuids
    n = len(every)
    return [{every[(i + o) % n] for o in offsets if o < n} if u else None for i, u in enumerate(uuids)]


def _device_arg(value: str) -> str:
    """A --device value: a CUDA index or `any`."""
    if value != "any" and not value.isdigit():
        raise argparse.ArgumentTypeError("a CUDA index or any")
    return value


def _family(args: argparse.Namespace) -> list[catalog.Case]:
    return pipeline.family_cases(Path(args.kernels), args.category, args.family)


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
    pipeline.sass_tables(
        Path(args.binary),
        Path(args.listing),
        _family(args),
        args.arch,
        args.cuda,
        Path(args.out_sass),
        Path(args.out_checks),
        Path(args.out_controls),
    )


def cmd_run(args: argparse.Namespace) -> None:
    """Time a family's cases on the GPU into raw.parquet."""
    timeout = catalog.family_settings(Path(args.kernels), args.category, args.family)["timeout"]
    cases = _family(args)
    offsets = run.gpu_offsets(cases)
    with _device(args.device, offsets) as index:  # the GPU phase; tables are written after the GPU is free again
        gpu = pipeline.gpu_here(index)
        raw, status = run.measure(
            Path(args.binary), cases, gpu, args.arch, args.cuda, args.repeats, timeout, pipeline.ROOT
        )
    tables.write("raw", raw, Path(args.out))
    tables.write("status", status, Path(args.out_status))


def cmd_exec(args: argparse.Namespace) -> None:
    """Launch every case the arch supports once over its profiled sweeps and figure points (what ncu profiles), in
    one process; a failed case is reported on stderr and skipped, so the others are still profiled."""
    binary = Path(args.binary)
    timeout = catalog.family_settings(Path(args.kernels), args.category, args.family)["timeout"]
    argv = functools.partial(run.invocation, binary, repeats=1, device_index=args.device)
    ran: set[str] = set()
    cases = _family(args)
    items = pipeline.profiled_items(cases, args.arch, pipeline.figure_points(cases, _tables(args)["raw"]))
    # each case's silence limit is the family's timeout, so within ncu's limit (3x) a hang is killed and the
    # rest still run alone
    for (case, _), _, why in run.each_alone(items, argv, timeout):
        if why:
            print(f"smdissect: {case.id} failed under ncu: {why}", file=sys.stderr)
        else:
            ran.add(case.id)
    if not ran:
        raise SmdissectError(f"{args.family}: no case ran under ncu (see the run stage's status table)")


def cmd_profile(args: argparse.Namespace) -> None:
    """Profile a family under ncu into a .ncu-rep and its provenance JSON."""
    cases = _family(args)
    raw = _tables(args)["raw"]
    extra = pipeline.figure_points(cases, raw)  # before the GPU is held
    with _device(args.device, run.gpu_offsets(cases)) as index:
        gpu = pipeline.gpu_here(index)
        pipeline.profile(
            Path(args.binary),
            cases,
            gpu,
            args.arch,
            args.cuda,
            args.ncu,
            args.ncu_version,
            Path(args.report),
            Path(args.meta),
            Path(args.kernels),
            raw,
            extra,
        )


def cmd_parse(args: argparse.Namespace) -> None:
    """Turn a .ncu-rep into the ncu, stalls and pipes tables."""
    pipeline.parse_report(
        Path(args.report), Path(args.meta), Path(args.out_ncu), Path(args.out_stalls), Path(args.out_pipes)
    )


def _tables(args: argparse.Namespace) -> dict[str, list[Path]]:
    """The files of each table kind the stage reads (READS), from its --<kind> options."""
    return {kind: [Path(p) for p in getattr(args, kind)] for kind in args.reads}


def cmd_crossval(args: argparse.Namespace) -> None:
    """Cross-validate a category's clock64 results against its counters and SASS."""
    paths = _tables(args)
    pipeline.crossval_table(
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
    pipeline.figures_table(Path(args.kernels), args.category, _tables(args), refs, Path(args.out))


def cmd_headlines(args: argparse.Namespace) -> None:
    """Print the headline figures of a run's figures tables as the README's table, or write it into --readme."""
    from . import headlines, paper

    figures = tables.read("figures", tables.find("figures", Path(args.tables)))
    block = headlines.markdown(headlines.table(figures, paper.reference(Path(args.kernels))), figures)
    if args.readme:
        headlines.update(Path(args.readme), block)
    else:
        print(block)


def cmd_report(args: argparse.Namespace) -> None:
    """Write a category's HTML page."""
    pipeline.report_page(
        Path(args.kernels),
        args.category,
        _tables(args),
        json.loads(args.skipped),
        Path(args.out),
        json.loads(args.provenance),
        args.categories or [args.category],
    )


def cmd_index(args: argparse.Namespace) -> None:
    """Write the index page of one GPU's reports."""
    pipeline.index_page(
        Path(args.kernels),
        args.gpu,
        args.categories,
        _tables(args),
        args.archs,
        args.run_arch or None,
        json.loads(args.skipped),
        json.loads(args.provenance),
        Path(args.out),
    )


def cmd_gpus(args: argparse.Namespace) -> None:
    """Write the page over several GPUs' result folders (device: all)."""
    pipeline.gpus_page([Path(f) for f in args.folders], Path(args.out))


def cmd_compare(args: argparse.Namespace) -> None:
    """Write the diff page of two result sets (folders of figures.parquet tables), or of one against the paper."""
    pipeline.compare_page(Path(args.a), args.b, Path(args.kernels), args.categories, Path(args.out))


def cmd_export(args: argparse.Namespace) -> None:
    """Write the model of a run's figures (model.json: every field of the seed paper's appendix, with evidence)."""
    from . import model

    model.export(Path(args.tables), Path(args.out), Path(args.kernels))


def cmd_simconfig(args: argparse.Namespace) -> None:
    """Write a GPGPU-Sim gpgpusim.config and trace.config from a model file, and their diff against Accel-Sim's."""
    from . import simconfig

    simconfig.write(Path(args.model), Path(args.out), Path(args.kernels))


def cmd_roofline(args: argparse.Namespace) -> None:
    """Write the roofline file of a run's figures (roofline.json: each ceiling measured and documented) and, with
    --page, the roofline page drawn from it."""
    from . import markup, roofline, roofline_page

    found = tables.find("figures", Path(args.tables))
    if not found:
        raise SmdissectError(f"--tables {args.tables} holds no figures.parquet: give results/<gpu>/ or its copy")
    figures = tables.read("figures", found)
    data = roofline.build(figures)
    roofline.write(data, Path(args.out))
    if args.page:
        nav = markup.navigation(sorted(figures["category"].unique()), "roofline")
        roofline_page.render(Path(args.page), data, nav)


def cmd_paper_map(args: argparse.Namespace) -> None:
    """Write the page of the seed paper's sections against smdissect's categories (docs/paper-map.md)."""
    from . import files, paper

    files.write_text(Path(args.out), paper.markdown(Path(args.kernels)))


def cmd_archs(args: argparse.Namespace) -> None:
    """Print the planned points each arch can run and the static ones with why, or write it into --readme."""
    from . import coverage, files

    cases = catalog.load_all(Path(args.kernels), catalog.categories(Path(args.kernels)))
    block = coverage.arch_markdown(coverage.arch_plan(cases, args.archs))
    if args.readme:
        files.replace_block(Path(args.readme), "archs", block)
    else:
        print(block)


def cmd_features(args: argparse.Namespace) -> None:
    """Write the kernels' arch feature tests (kernels/common/features.cuh) from the arch table (archs.FEATURES)."""
    from . import files

    files.write_text(Path(args.out), archs.features_header())


# The tables each stage reads: one --<kind> option each, named as the registry (tables.TABLES) names the kind.
READS: dict[Callable[[argparse.Namespace], None], tuple[str, ...]] = {
    cmd_exec: ("raw",),
    cmd_profile: ("raw",),
    cmd_crossval: ("raw", "ncu", "stalls", "sass_checks"),
    cmd_figures: ("raw", "crossval", "sass_checks", "controlcodes"),
    cmd_report: tuple(tables.TABLES),
    cmd_index: ("raw", "status", "figures"),
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


def parser() -> argparse.ArgumentParser:
    """Every stage and its arguments."""
    top = argparse.ArgumentParser(prog="smdissect", description=__doc__)
    top.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = top.add_subparsers(dest="stage", required=True)
    many = {"nargs": "*", "default": []}
    spec = {
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
        cmd_run: [
            "binary",
            "arch",
            "cuda",
            "out",
            "out_status",
            "kernels",
            "category",
            "family",
            ("repeats", {"type": int}),
            ("device", {"type": _device_arg}),
        ],
        cmd_exec: ["binary", "kernels", "category", "family", "arch", ("device", {"type": int})],
        cmd_profile: [
            "binary",
            "arch",
            "cuda",
            "ncu",
            ("ncu_version", {"default": ""}),
            "report",
            "meta",
            "kernels",
            "category",
            "family",
            ("device", {"type": _device_arg}),
        ],
        cmd_parse: ["report", "meta", "out_ncu", "out_stalls", "out_pipes"],
        cmd_crossval: ["kernels", "category", "out", ("listings", many)],
        cmd_figures: ["kernels", "category", "out", ("refs", many)],
        cmd_headlines: ["tables", ("readme", {"default": ""}), ("kernels", {"default": "kernels"})],
        cmd_report: ["kernels", "category", "out", "skipped", "provenance", ("categories", many)],
        cmd_index: [
            "kernels",
            "gpu",
            "out",
            "skipped",
            "provenance",
            ("run_arch", {"default": ""}),
            *((k, many) for k in ("categories", "archs")),
        ],
        cmd_gpus: ["out", ("folders", many)],
        cmd_compare: [
            "a",
            ("b", {"default": "paper"}),
            "out",
            ("kernels", {"default": "kernels"}),
            ("categories", many),
        ],
        cmd_export: ["tables", "out", ("kernels", {"default": "kernels"})],
        cmd_simconfig: ["model", "out", ("kernels", {"default": "kernels"})],
        cmd_roofline: ["tables", "out", ("page", {"default": ""})],
        cmd_paper_map: ["out", ("kernels", {"default": "kernels"})],
        cmd_features: [("out", {"default": archs.FEATURES_HEADER})],
        cmd_archs: [
            ("archs", {"nargs": "+", "default": list(archs.CHECKED_ARCHS)}),
            ("readme", {"default": ""}),
            ("kernels", {"default": "kernels"}),
        ],
    }
    for func, options in spec.items():
        stage = func.__name__.removeprefix("cmd_")
        p = sub.add_parser(stage, help=func.__doc__, description=func.__doc__)
        p.set_defaults(func=func, reads=READS.get(func, ()))
        for opt in options:
            name, kw = (opt, {}) if isinstance(opt, str) else opt
            p.add_argument(
                f"--{name.replace('_', '-')}",
                dest=name,
                required=not {"nargs", "default"} & set(kw),
                help=HELP.get(f"{stage}.{name}") or HELP.get(name),
                **kw,
            )
        for kind in READS.get(func, ()):
            p.add_argument(f"--{kind.replace('_', '-')}", dest=kind, help=tables.TABLES[kind].help, **many)
    return top


def _terminated(signum: int, _frame: object) -> None:
    """SIGTERM (snakemake stopping, ncu's group stopped) as an exit, so that the stage's cleanup runs: a binary that
    run.attempt started in a process group of its own is ended with it."""
    raise SystemExit(128 + signum)


@exit_on_error
def main(argv: list[str] | None = None) -> None:
    """Parse the command line and run one stage."""
    signal.signal(signal.SIGTERM, _terminated)
    args = parser().parse_args(argv)
    args.func(args)
