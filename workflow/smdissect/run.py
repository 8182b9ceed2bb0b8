"""Run a family's cases on the GPU (clock64 timing, JSON lines): every sample into raw.parquet, and what
became of every planned point (measured, static with the reason, failed with the error) into status.parquet."""

from __future__ import annotations

import json
import math
import os
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import device
from .catalog import Case
from .device import Gpu
from .tables import canonical_params, frame, write

# A clock move beyond this (MHz) between the start and the end of a GPU job flags its rows.
CLOCK_DRIFT_MHZ = 15.0
# NVML throttle reasons that mean the card ran below its clocks (gpu_idle and applications clocks do not).
SLOWDOWNS = {"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
             "board_limit", "reliability"}  # fmt: skip


def slowdowns(reasons: str) -> list[str]:
    """The reasons of a comma-separated list of NVML throttle reason names that held the clocks down (SLOWDOWNS)."""
    return [r for r in reasons.split(",") if r in SLOWDOWNS]


@dataclass
class Outcome:
    """What running a family produced: the records, and the fate of each planned point."""

    records: list[dict[str, Any]] = field(default_factory=list)
    status: list[dict[str, str]] = field(default_factory=list)

    def mark(self, case: Case, status: str, reason: str = "") -> None:
        """The same status for every planned point of `case`."""
        self.status += [{"case": case.id, "params": canonical_params(p), "status": status, "reason": reason}
                        for p in case.points()]  # fmt: skip


def invocation(
    binary: Path, cases: list[Case], repeats: int, device_index: int, sweep: dict[str, list[int]] | None = None
) -> list[str]:
    """The protocol's command line for `cases` (one process) over `sweep` (default: their shared sweep)."""
    argv = [str(binary.resolve())]
    for case in cases:
        argv += ["--case", case.id]
    argv += ["--repeats", str(repeats), "--device", str(device_index)]
    for key, values in sorted((sweep or cases[0].sweep).items()):
        argv += ["--param", f"{key}={','.join(str(v) for v in values)}"]
    return argv


def point_keys(case: Case, sweep: dict[str, list[int]] | None = None) -> list[str]:
    """The canonical parameter strings of a case's points over `sweep` (default: its whole sweep)."""
    return [canonical_params(p) for p in case.points(sweep)]


def batches(
    cases: list[Case], sweeps: Callable[[Case], list[dict[str, list[int]]]]
) -> list[tuple[dict[str, list[int]], list[Case]]]:
    """(sweep, cases) for every distinct sweep of `cases` (manifest order kept): one process per sweep spares a
    CUDA context and a warm-up per case, which is most of a small case's time under ncu."""
    groups: dict[str, tuple[dict[str, list[int]], list[Case]]] = {}
    for case in cases:
        for sweep in sweeps(case):
            groups.setdefault(json.dumps(sweep, sort_keys=True), (sweep, []))[1].append(case)
    return list(groups.values())


def failure(proc: subprocess.CompletedProcess[str]) -> str:
    """The one line a failed binary gave (its last stderr line), or its exit status."""
    return (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]


def attempt(argv: list[str], timeout: int) -> tuple[subprocess.CompletedProcess[str] | None, str]:
    """Run one command: (the process, why it failed or ''); the process is None when a hang was killed after
    `timeout` s."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"killed after {timeout} s (hung kernel?): raise the family's timeout in cases.yaml if needed"
    return proc, "" if proc.returncode == 0 else failure(proc)


def finished(proc: subprocess.CompletedProcess[str], case: Case, points: list[str]) -> bool:
    """Whether a process accounted for every point of `case`: a record or a stderr line naming it."""
    seen = {canonical_params(r["params"]) for r in parse_records(proc.stdout) if r["case"] == case.id}
    return all(p in seen or point_lines(proc.stderr, case.id, p) for p in points)


def started(proc: subprocess.CompletedProcess[str], case: Case) -> bool:
    """Whether a process printed anything of `case` (a record, or a stderr line naming one of its points)."""
    return any(r["case"] == case.id for r in parse_records(proc.stdout)) or bool(point_lines(proc.stderr, case.id))


def point_lines(stderr: str, case_id: str, params: str = "{") -> list[str]:
    """The stderr lines that name one point of one case ('<case> <params>: why', 'static: <case> ...'); by default
    those naming any of its points (every params JSON starts with '{')."""
    key = f"{case_id} {params}"
    return [ln.strip() for ln in stderr.splitlines() if ln.startswith(key) or f" {key}" in ln]


def each_alone(
    group: list[Case], argv: Callable[[list[Case]], list[str]], timeout: int, points: Callable[[Case], list[str]]
) -> Iterator[tuple[Case, subprocess.CompletedProcess[str] | None, str]]:
    """(case, process, why it failed or '') for every case of `group`, run in one process; when that process
    fails, each case it left unfinished (`points`) gets a process of its own, so a case that crashes or hangs
    takes no other case with it."""
    proc, why = attempt(argv(group), timeout * len(group))
    if not why or len(group) == 1:
        yield from ((case, proc, why) for case in group)
        return
    # The process died in the last case it printed something of (or in a later, silent one): the cases before
    # that one are done, that one and the rest run again, each alone.
    last = max((i for i, case in enumerate(group) if proc is not None and started(proc, case)), default=-1)
    for i, case in enumerate(group):
        if i < last and finished(proc, case, points(case)):
            yield case, proc, ""
        else:
            yield case, *attempt(argv([case]), timeout)


def execute(binary: Path, cases: list[Case], arch: str, repeats: int, device_index: int, timeout: int) -> Outcome:
    """Run every case the arch supports, one process per shared sweep; unsupported cases are static, a failed
    one does not stop the others."""
    out = Outcome()
    runnable = []
    for case in cases:
        reason = case.unsupported(arch)
        if reason:
            out.mark(case, "static", f"not run: {reason}")
        else:
            runnable.append(case)

    def argv(group: list[Case]) -> list[str]:
        return invocation(binary, group, repeats, device_index)

    for _, group in batches(runnable, lambda c: [c.sweep]):
        for case, proc, why in each_alone(group, argv, timeout, point_keys):
            if why or proc is None:
                out.mark(case, "failed", why)
                continue
            records = [r for r in parse_records(proc.stdout) if r["case"] == case.id]
            out.records += records
            seen = {canonical_params(r["params"]) for r in records}
            for p in point_keys(case):
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


def parse_records(stdout: str) -> list[dict[str, Any]]:
    """The protocol's JSON-lines records in a binary's output."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


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
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()  # fmt: skip
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
    binary: Path, cases: list[Case], gpu: Gpu, arch: str, cuda: str, repeats: int, timeout: int, out: Path,
    out_status: Path, root: Path,
) -> None:  # fmt: skip
    """Time every case of one family: raw.parquet (one row per repeat) and status.parquet (one row per point)."""
    before = device.snapshot(gpu.uuid)
    outcome = execute(binary, cases, arch, repeats, gpu.index, timeout)
    after = device.snapshot(gpu.uuid)
    base = provenance(gpu, arch, cuda, cases[0].category, root) | gpu_state(before, after) | {"family": cases[0].family}
    write("raw", frame("raw", sample_rows(outcome.records, base)), out)
    write("status", frame("status", [base | row for row in outcome.status]), out_status)
