"""The stages that hold a GPU: time a family's cases (run), launch them under ncu (profile, exec), and read a
report into the ncu, stalls and pipes tables (parse)."""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from ..analysis import crossval
from ..core import catalog, files, tables
from ..core.errors import SmdissectError
from ..measure import build, device, ncu, parse, run, slots
from .options import Command, Options, inputs
from .static import ROOT, family_of

Points = dict[str, list[dict[str, int]]]  # case id -> parameter points (crossval.figure_points)


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


def gpu_here(index: int) -> device.Gpu:
    """The GPU a GPU job runs on; its absence is a one-line error."""
    gpu = device.query(index)
    if isinstance(gpu, str):
        raise SmdissectError(f"this job needs a GPU: {gpu}")
    return gpu


def profile(
    binary: Path,
    cases: list[catalog.Case],
    gpu: device.Gpu,
    arch: str,
    cuda: str,
    ncu_exe: str,
    ncu_version: str,
    report: Path,
    meta: Path,
    kernels: Path,
    raw: list[Path],
    extra: Points,
) -> None:
    """Profile a family's timed launches once under ncu, over its profiled sweeps and the figure points `extra` (of
    its `raw` tables), and record how and on what."""
    reason = device.counters_permitted()
    if reason:
        raise SmdissectError(reason)
    exe = build.find_tool(ncu_exe, "install Nsight Compute or set ncu: in config/config.yaml")
    category, family = cases[0].category, cases[0].family
    metric_list, dropped = ncu.metrics(gpu.chip, exe, catalog.metrics(kernels, category))
    timeout = catalog.family_settings(kernels, category, family)["timeout"] * ncu.REPLAY_SLOWDOWN
    before = device.snapshot(gpu.uuid)
    # One ncu process collects one metric set for every kernel it profiles, so the figure points get the full set
    # too: a second process per family for a smaller set costs more (about 2 s) than the passes it saves (~55 ms a
    # kernel, and most families add under 20 figure points).
    target = profiled_target(binary, cases, arch, gpu.index, extra)
    try:
        ncu.profile(exe, metric_list, report, target, timeout)
    except SmdissectError:  # a case failed (or hung) under ncu: again through `exec`, which runs it alone
        target = ncu.launcher(exec_args(binary, cases, arch, gpu.index, kernels, raw))
        ncu.profile(exe, metric_list, report, target, timeout)
    after = device.snapshot(gpu.uuid)
    info = (
        run.provenance(gpu, arch, cuda, category, ROOT)
        | run.gpu_state(before, after)
        | {
            "family": family,
            "chip": gpu.chip,
            "ncu": ncu_version or ncu.version(exe),
            "metrics_dropped": dropped,
            "figure_points": sum(len(points) for points in extra.values()),
            "command": " ".join(ncu.command(exe, metric_list, report, target)),
        }
    )
    files.write_text(meta, json.dumps(info, indent=1))


def exec_args(
    binary: Path, cases: list[catalog.Case], arch: str, index: int, kernels: Path, raw: list[Path] | None = None
) -> list[str]:
    """The `exec` stage's arguments for a family: every case under ncu, a failed one alone; with the family's `raw`
    tables, each figure point too (figure_points)."""
    return [
        "exec",
        "--binary",
        str(binary),
        "--kernels",
        str(kernels),
        "--category",
        cases[0].category,
        "--arch",
        arch,
        "--family",
        cases[0].family,
        "--device",
        str(index),
        *(["--raw", *map(str, raw)] if raw else []),
    ]


def figure_points(cases: list[catalog.Case], raw: list[Path]) -> Points:
    """Case id -> the points beside its profiled sweeps that ncu profiles: where a figure of its own is taken and
    counters can check it (crossval.figure_points), from the family's raw tables (none before its run)."""
    return crossval.figure_points(cases, tables.read("raw", raw))


def profiled_items(cases: list[catalog.Case], arch: str, extra: Points | None = None) -> list[run.Item]:
    """Every (case, sweep) ncu profiles of the cases `arch` runs, in the order one process runs them: each case's
    profiled sweeps, then each of its `extra` points (figure_points) as a sweep of its own."""

    def sweeps(case: catalog.Case) -> list[run.Sweep]:
        points = (extra or {}).get(case.id, [])
        return [*case.profiled_sweeps(), *({k: [v] for k, v in p.items()} for p in points)]

    return run.items([c for c in cases if not c.unsupported(arch)], sweeps)


def profiled_target(
    binary: Path, cases: list[catalog.Case], arch: str, index: int, extra: Points | None = None
) -> list[str]:
    """What ncu launches first: the binary itself over every profiled sweep and `extra` point (one process, no
    Python launcher)."""
    return run.invocation(binary, profiled_items(cases, arch, extra), 1, index)


def parse_report(report: Path, meta: Path, out_ncu: Path, out_stalls: Path, out_pipes: Path) -> None:
    """Long metrics, stall reasons and pipe counts of one report, each row with the profile job's provenance."""
    info = json.loads(meta.read_text())
    long = pd.DataFrame(parse.metric_rows(report, info["chip"]))
    for key in tables.SCHEMAS["ncu"].names:
        if key in info and key not in long.columns:
            long[key] = info[key]
    tables.write("ncu", long, out_ncu)
    tables.write("stalls", parse.stalls(long), out_stalls)
    tables.write("pipes", parse.pipes(long), out_pipes)


def cmd_run(args: argparse.Namespace) -> None:
    """Time a family's cases on the GPU into raw.parquet."""
    timeout = catalog.family_settings(Path(args.kernels), args.category, args.family)["timeout"]
    cases = family_of(args)
    offsets = run.gpu_offsets(cases)
    with _device(args.device, offsets) as index:  # the GPU phase; tables are written after the GPU is free again
        gpu = gpu_here(index)
        raw, status = run.measure(Path(args.binary), cases, gpu, args.arch, args.cuda, args.repeats, timeout, ROOT)
    tables.write("raw", raw, Path(args.out))
    tables.write("status", status, Path(args.out_status))


def cmd_exec(args: argparse.Namespace) -> None:
    """Launch every case the arch supports once over its profiled sweeps and figure points (what ncu profiles), in
    one process; a failed case is reported on stderr and skipped, so the others are still profiled."""
    binary = Path(args.binary)
    timeout = catalog.family_settings(Path(args.kernels), args.category, args.family)["timeout"]
    argv = functools.partial(run.invocation, binary, repeats=1, device_index=args.device)
    ran: set[str] = set()
    cases = family_of(args)
    items = profiled_items(cases, args.arch, figure_points(cases, inputs(args)["raw"]))
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
    cases = family_of(args)
    raw = inputs(args)["raw"]
    extra = figure_points(cases, raw)  # before the GPU is held
    with _device(args.device, run.gpu_offsets(cases)) as index:
        gpu = gpu_here(index)
        profile(
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
    parse_report(Path(args.report), Path(args.meta), Path(args.out_ncu), Path(args.out_stalls), Path(args.out_pipes))


OPTIONS: dict[Command, Options] = {
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
}
READS: dict[Command, tuple[str, ...]] = {cmd_exec: ("raw",), cmd_profile: ("raw",)}
