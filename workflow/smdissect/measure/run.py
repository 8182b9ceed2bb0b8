"""Run a family's cases on the GPU (clock64 timing, JSON lines): every sample into raw.parquet, and what
became of every planned point (measured, static with the reason, failed with the error) into status.parquet."""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import pandas as pd

from ..core.catalog import Case
from ..core.tables import canonical_params, frame
from . import device, protocol
from .device import Gpu

# A clock move beyond this (MHz) between the start and the end of a GPU job flags its rows.
CLOCK_DRIFT_MHZ = 15.0
# NVML throttle reasons that mean the card ran below its clocks (gpu_idle and applications clocks do not).
SLOWDOWNS = {
    "sw_power_cap",
    "hw_slowdown",
    "sw_thermal_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "board_limit",
    "reliability",
}
# Per category, the parameters whose values are GPU indices counted from the job's GPU (interconnect.cuh: index i
# is CUDA device (--device + i) mod the device count).
GPU_PARAMS = {"interconnect": ("src", "dst", "gpu", "mem")}


def gpu_offsets(cases: list[Case]) -> set[int]:
    """The GPU indices a family's points use, counted from the job's GPU: 0 alone unless it reaches peers."""
    params = [(c, k) for c in cases for k in GPU_PARAMS.get(c.category, ())]
    return {0} | {i for c, k in params for sweep in (c.sweep, *c.profiled_sweeps()) for i in sweep.get(k, ())}


def slowdowns(reasons: str) -> list[str]:
    """The reasons of a comma-separated list of NVML throttle reason names that held the clocks down (SLOWDOWNS)."""
    return [r for r in reasons.split(",") if r in SLOWDOWNS]


@dataclass
class Outcome:
    """What running a family produced: the records, and the fate of each planned point."""

    records: list[dict[str, Any]] = field(default_factory=list)
    status: list[dict[str, str]] = field(default_factory=list)

    def mark(self, case: Case, status: str, reason: str = "", sweep: Sweep | None = None) -> None:
        """The same status for every point of `case` over `sweep` (default: every planned point)."""
        self.status += [
            {"case": case.id, "params": canonical_params(p), "status": status, "reason": reason}
            for p in case.points(sweep)
        ]


Sweep = dict[str, list[int]]
Item = tuple[Case, Sweep]  # one case over one sweep: what a failed process reruns alone


def invocation(binary: Path, items: list[Item], repeats: int, device_index: int) -> list[str]:
    """The protocol's command line running `items` in order in one process: consecutive items of one sweep share
    a group, and `--then` starts the next."""
    groups: list[tuple[Sweep, list[str]]] = []
    for case, sweep in items:
        if groups and groups[-1][0] == sweep:
            groups[-1][1].append(case.id)
        else:
            groups.append((sweep, [case.id]))
    argv = [str(binary.resolve())]
    for i, (sweep, ids) in enumerate(groups):
        argv += ["--then"] if i else []
        for case_id in ids:
            argv += ["--case", case_id]
        for key, values in sorted(sweep.items()):
            argv += ["--param", f"{key}={','.join(str(v) for v in values)}"]
    return argv + ["--repeats", str(repeats), "--device", str(device_index)]


def point_keys(case: Case, sweep: Sweep) -> list[str]:
    """The canonical parameter strings of a case's points over `sweep`."""
    return [canonical_params(p) for p in case.points(sweep)]


def items(cases: list[Case], sweeps: Callable[[Case], list[Sweep]]) -> list[Item]:
    """Every (case, sweep) of `cases`, the cases of one sweep together (in manifest order): one process runs them
    all, sparing a CUDA context and a warm-up per case, which is most of a small case's time under ncu."""
    groups: dict[str, tuple[Sweep, list[Case]]] = {}
    for case in cases:
        for sweep in sweeps(case):
            groups.setdefault(json.dumps(sweep, sort_keys=True), (sweep, []))[1].append(case)
    return [(case, sweep) for sweep, group in groups.values() for case in group]


def failure(proc: subprocess.CompletedProcess[str]) -> str:
    """The one line a failed binary gave (its last stderr line), or its exit status."""
    return (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]


def attempt(argv: list[str], timeout: int) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run one command: (the process with what it printed, why it failed or ''). A process that printed nothing
    for `timeout` s (a hang) is killed with its process group, and keeps what it printed before, so a family's
    process may run long as long as its points keep coming."""
    out: dict[str, list[str]] = {"stdout": [], "stderr": []}
    heard = [time.monotonic()]

    def pump(stream: IO[str], lines: list[str]) -> None:
        for line in stream:
            lines.append(line)
            heard[0] = time.monotonic()

    why = ""
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True
    ) as proc:
        readers = [threading.Thread(target=pump, args=(getattr(proc, k), v), daemon=True) for k, v in out.items()]
        for reader in readers:
            reader.start()
        try:
            while proc.poll() is None or any(r.is_alive() for r in readers):  # a child may hold the pipes on
                if time.monotonic() - heard[0] >= timeout:
                    why = (
                        f"killed after {timeout} s without output (hung kernel?): raise the family's timeout "
                        "in cases.yaml if needed"
                    )
                    break
                for reader in readers:
                    reader.join(timeout=0.05)
        finally:  # a hang, or this job interrupted (Ctrl-C): the process and its children stop with it
            if why or proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for reader in readers:
            reader.join(timeout=1)
    done = subprocess.CompletedProcess(argv, proc.returncode, "".join(out["stdout"]), "".join(out["stderr"]))
    return done, why or ("" if done.returncode == 0 else failure(done))


def _seen(proc: subprocess.CompletedProcess[str], item: Item) -> list[bool]:
    """For each point of `item`: whether the process accounted for it (a record or a stderr line naming it)."""
    case, sweep = item
    recorded = {canonical_params(r["params"]) for r in parse_records(proc.stdout, proc.args[0]) if r["case"] == case.id}
    return [p in recorded or bool(point_lines(proc.stderr, case.id, p)) for p in point_keys(case, sweep)]


def finished(proc: subprocess.CompletedProcess[str], item: Item) -> bool:
    """Whether a process accounted for every point of `item`."""
    return all(_seen(proc, item))


def started(proc: subprocess.CompletedProcess[str], item: Item) -> bool:
    """Whether a process printed anything of `item` (a record, or a stderr line naming one of its points)."""
    return any(_seen(proc, item))


def point_lines(stderr: str, case_id: str, params: str) -> list[str]:
    """The stderr lines that name one point of one case ('<case> <params>: why', 'static: <case> <params>: why')."""
    key = f"{case_id} {params}"
    return [ln.strip() for ln in stderr.splitlines() if ln.startswith(key) or f" {key}" in ln]


def each_alone(
    items: list[Item], argv: Callable[[list[Item]], list[str]], timeout: int
) -> Iterator[tuple[Item, subprocess.CompletedProcess[str], str]]:
    """(item, process, why it failed or '') for every item, all run in one process; when that process fails, each
    item it left unfinished gets a process of its own, so a case that crashes or hangs takes no other with it."""
    proc, why = attempt(argv(items), timeout)
    if not why or len(items) == 1:
        yield from ((item, proc, why) for item in items)
        return
    # The process died in the last item it printed something of (or in a later, silent one): the items before
    # that one are done, that one and the rest run again, each alone.
    last = max((i for i, item in enumerate(items) if started(proc, item)), default=-1)
    for i, item in enumerate(items):
        if i < last and finished(proc, item):
            yield item, proc, ""
        else:
            yield item, *attempt(argv([item]), timeout)


def execute(binary: Path, cases: list[Case], arch: str, repeats: int, device_index: int, timeout: int) -> Outcome:
    """Run every case the arch supports, all in one process; unsupported cases are static, a failed one does not
    stop the others."""
    out = Outcome()
    runnable = []
    for case in cases:
        reason = case.unsupported(arch)
        if reason:
            out.mark(case, "static", f"not run: {reason}")
        else:
            runnable.append(case)
    if not runnable:
        return out

    def argv(some: list[Item]) -> list[str]:
        return invocation(binary, some, repeats, device_index)

    for (case, sweep), proc, why in each_alone(items(runnable, lambda c: [c.sweep]), argv, timeout):
        if why:
            out.mark(case, "failed", why, sweep)
            continue
        points = point_keys(case, sweep)
        records = [
            r
            for r in parse_records(proc.stdout, proc.args[0])
            if r["case"] == case.id and canonical_params(r["params"]) in points
        ]
        out.records += records
        seen = {canonical_params(r["params"]) for r in records}
        for p in points:
            status, reason = ("measured", "") if p in seen else skipped_why(proc.stderr, case.id, p)
            out.status.append({"case": case.id, "params": p, "status": status, "reason": reason})
    return out


def skipped_why(stderr: str, case_id: str, params: str) -> tuple[str, str]:
    """(status, reason) of a point with no record: its stderr line naming the case and point, `static` when the
    binary said the device cannot run it (smd::static_point), else `failed`."""
    lines = point_lines(stderr, case_id, params)
    if not lines:
        return "failed", "the binary emitted no record for this point"
    return ("static" if lines[-1].startswith("static:") else "failed"), lines[-1]


@functools.lru_cache(maxsize=4)
def parse_records(stdout: str, binary: str = "the family's binary") -> tuple[dict[str, Any], ...]:
    """The protocol's records in a binary's output (protocol.read: of this version), parsed once per output: every
    item of a family's shared process reads the same output, inside the job's hold on the GPU."""
    return tuple(protocol.read(stdout, binary))


def sample_rows(records: list[dict[str, Any]], base: dict[str, Any]) -> list[dict[str, Any]]:
    """One raw-table row per sample of every record, each with the job's provenance `base`."""
    return [
        base
        | {
            "case": rec["case"],
            "params": canonical_params(rec["params"]),
            "metric": rec["metric"],
            "unit": rec["unit"],
            "repeat": i,
            "value": sample,
            "cycles": rec["cycles"],
            "iterations": rec["iterations"],
            "clock_mhz": rec["clock_mhz"],
            "smid": rec["smid"],
            "variant": rec.get("variant", ""),
            "expect": json.dumps(rec.get("expect", {}), sort_keys=True),
        }
        for rec in records
        for i, sample in enumerate(rec["samples"])
    ]


def run_id(gpu: Gpu) -> str:
    """Identifies the job that measured a row: UTC time and the GPU."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{gpu.uuid[4:12]}"


def commit(root: Path) -> str:
    """The pipeline's commit: $SMDISSECT_COMMIT when set (a copied tree whose .git is not the source's), else
    git's HEAD ('-dirty' with uncommitted edits), else 'unknown'."""
    if os.environ.get("SMDISSECT_COMMIT"):
        return os.environ["SMDISSECT_COMMIT"]
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        return "unknown"
    dirty = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
    ).stdout.strip()
    return head.stdout.strip() + ("-dirty" if dirty else "")


def provenance(gpu: Gpu, arch: str, cuda: str, category: str, root: Path) -> dict[str, Any]:
    """The provenance columns shared by every row a GPU job writes."""
    return {
        "gpu": gpu.name,
        "gpu_uuid": gpu.uuid,
        "arch": arch,
        "driver": gpu.driver,
        "cuda": cuda,
        "run_id": run_id(gpu),
        "category": category,
        "commit": commit(root),
    }


def gpu_state(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The CLOCKS columns from NVML snapshots around a job, with a flag when clocks moved or the GPU was shared."""
    cols = {
        "sm_clock_before_mhz": before.get("sm_clock_mhz", math.nan),
        "sm_clock_after_mhz": after.get("sm_clock_mhz", math.nan),
        "mem_clock_before_mhz": before.get("mem_clock_mhz", math.nan),
        "mem_clock_after_mhz": after.get("mem_clock_mhz", math.nan),
        "throttle_before": str(before.get("throttle", "")),
        "throttle_after": str(after.get("throttle", "")),
        "other_processes": ", ".join(sorted({str(p) for s in (before, after) for p in s.get("processes", []) or []})),
    }
    flags = []
    idle = "gpu_idle" in cols["throttle_before"]  # an idle card clocks down between jobs: not a drift
    for clock in ("sm", "mem"):
        drift = abs(cols[f"{clock}_clock_after_mhz"] - cols[f"{clock}_clock_before_mhz"])
        if drift > CLOCK_DRIFT_MHZ and not idle:
            flags.append(f"{clock} clock moved {drift:.0f} MHz during the job")
    slowed = sorted({r for s in (before, after) for r in slowdowns(str(s.get("throttle", "")))})
    if slowed:
        flags.append(f"clocks held down by {', '.join(slowed)}")
    if cols["other_processes"]:
        flags.append(f"GPU shared with: {cols['other_processes']}")
    return cols | {"flag": "; ".join(flags)}


def measure(
    binary: Path, cases: list[Case], gpu: Gpu, arch: str, cuda: str, repeats: int, timeout: int, root: Path
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Time every case of one family: the raw table (one row per repeat) and the status table (one per point)."""
    before = device.snapshot(gpu.uuid)
    outcome = execute(binary, cases, arch, repeats, gpu.index, timeout)
    after = device.snapshot(gpu.uuid)
    base = provenance(gpu, arch, cuda, cases[0].category, root) | gpu_state(before, after) | {"family": cases[0].family}
    return frame("raw", sample_rows(outcome.records, base)), frame("status", [base | row for row in outcome.status])
