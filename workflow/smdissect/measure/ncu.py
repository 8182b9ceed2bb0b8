"""Nsight Compute: pick each chip's metrics by name, profile the timed launches, explain failures in one line."""

from __future__ import annotations

import contextlib
import gzip
import os
import re
import signal
import subprocess
import sys
import time
from functools import cache
from pathlib import Path

from ..core.errors import SmdissectError
from .device import COUNTERS_FIX

METRICS_DIR = Path(__file__).parent / "metrics"
# What every cross-check needs, on every chip.
BASE = [
    "sm__cycles_active.max",
    "sm__cycles_elapsed.max",
    "smsp__inst_executed.sum",
    "smsp__average_warp_latency_per_inst_issued.ratio",
]
# The same counter under another name on some chips: canonical (gh100) name -> other spellings. Profiles ask
# for the chip's spelling; parsed tables always hold the canonical one.
ALIASES = {"dram__bytes_read": ("dram__bytes_op_read",), "dram__bytes_write": ("dram__bytes_op_write",)}
PIPE = re.compile(r"^sm__inst_executed_pipe_([a-z0-9]+(?:_type_fp16)?)$")
STALL = re.compile(r"^smsp__average_warps_issue_stalled_([a-z0-9_]+)_per_issue_active$")
NVTX_FILTER = "regex:^smd:/"  # the harness's one push/pop range per timed launch
REPLAY_SLOWDOWN = 3  # a whole profile may take this many times the family's timeout (a wall clock, where the
# run stage's timeout is a silence: see run.attempt)
STOP_GRACE_S = 5.0  # how long a stopped ncu and what it launched get to end on SIGTERM before SIGKILL


def catalogue(text: str) -> dict[str, str]:
    """Metric name -> unit, from the table `ncu --query-metrics` prints."""
    out = {}
    for line in text.splitlines():
        if re.match(r"^[A-Za-z][\w.]*__\w", line):
            fields = re.split(r"\s{2,}", line.strip())  # name, type, unit (may be blank), description
            out[fields[0]] = fields[2] if len(fields) >= 4 else ""
    return out


@cache
def available(chip: str, ncu: str = "ncu") -> dict[str, str]:
    """Base metrics of `chip` with their units: the packaged query output, else `ncu --query-metrics --chip`."""
    packaged = METRICS_DIR / f"{chip}.txt.gz"
    if packaged.exists():
        return catalogue(gzip.decompress(packaged.read_bytes()).decode())
    proc = subprocess.run([ncu, "--query-metrics", "--chip", chip], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SmdissectError(f"ncu --query-metrics --chip {chip} failed: {error_line(proc.stdout + proc.stderr)}")
    return catalogue(proc.stdout)


def unit(chip: str, metric: str, ncu: str = "ncu") -> str:
    """The unit of a collected metric (`base.sum`, `base.ratio`, `base.avg.pct_of_peak_...`) on `chip`."""
    if ".pct_of_peak" in metric:
        return "%"
    return available(chip, ncu).get(metric.split(".")[0], "")


def pipes(names: dict[str, str]) -> list[str]:
    """Instruction pipes this chip counts (alu, fma, fmaheavy, xu, ...)."""
    return sorted(m.group(1) for n in names if (m := PIPE.match(n)))


def stall_reasons(names: dict[str, str]) -> list[str]:
    """Warp stall reasons this chip reports (wait, short_scoreboard, math_pipe_throttle, ...)."""
    return sorted(m.group(1) for n in names if (m := STALL.match(n)))


def pipe_metric(pipe: str) -> str:
    """Instructions executed on one pipe, summed over SMs."""
    return f"sm__inst_executed_pipe_{pipe}.sum"


def stall_metric(reason: str) -> str:
    """Warp cycles per issued instruction spent stalled for one reason."""
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


def metrics(chip: str, ncu: str = "ncu", extra: list[str] | None = None) -> tuple[list[str], list[str]]:
    """(metrics to collect on `chip`, extra ones the chip lacks): cycles, instructions, every pipe, every stall
    reason, and the category's `extra` metrics where the chip has them."""
    names = available(chip, ncu)
    out = list(BASE)
    for pipe in pipes(names):
        out += [pipe_metric(pipe), f"sm__inst_executed_pipe_{pipe}.avg.pct_of_peak_sustained_active"]
    out += [stall_metric(r) for r in stall_reasons(names)]
    wanted = [(m, spelled(m, names)) for m in extra or [] if m not in out]
    return out + [s for _, s in wanted if s], [m for m, s in wanted if not s]


def spelled(metric: str, names: dict[str, str]) -> str | None:
    """`metric` as the chip with metric catalogue `names` spells it (its own name or an alias), or None."""
    base, _, rollup = metric.partition(".")
    for candidate in (base, *ALIASES.get(base, ())):
        if candidate in names:
            return f"{candidate}.{rollup}" if rollup else candidate
    return None


def canonical(metric: str) -> str:
    """The canonical name of a collected metric (an alias mapped back)."""
    base, dot, rollup = metric.partition(".")
    for name, others in ALIASES.items():
        if base in others:
            return name + dot + rollup
    return metric


def command(ncu: str, metric_list: list[str], report: Path, target: list[str]) -> list[str]:
    """ncu with the card's clocks left alone, only the timed (NVTX) launches, named metrics only."""
    return [
        ncu,
        "--clock-control",
        "none",
        "--nvtx",
        "--nvtx-include",
        NVTX_FILTER,
        "--metrics",
        ",".join(metric_list),
        "--force-overwrite",
        "--export",
        str(report),
        *target,
    ]


def error_line(output: str) -> str:
    """The one line that says why ncu failed, with the fix where it is known."""
    if "ERR_NVGPUCTRPERM" in output:
        return f"ncu was refused the GPU performance counters (ERR_NVGPUCTRPERM): {COUNTERS_FIX}"
    if "No kernels were profiled" in output:
        return "ncu profiled no kernel: the binary made no launch inside an 'smd:' NVTX range"
    errors = [ln.strip() for ln in output.splitlines() if "==ERROR==" in ln]
    return errors[0] if errors else (output.strip().splitlines() or ["no output"])[-1]


def profile(ncu: str, metric_list: list[str], report: Path, target: list[str], timeout: int) -> None:
    """Profile `target` into `report` (.ncu-rep); any failure, a hang past `timeout` s included, is one line. ncu
    runs in a process group of its own, which a hang or this job's end stops whole: the binary it launched too."""
    report.parent.mkdir(parents=True, exist_ok=True)
    with subprocess.Popen(
        command(ncu, metric_list, report, target),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise SmdissectError(
                f"profiling {report.name} was killed after {timeout} s: raise the family's "
                "timeout in cases.yaml or trim its profile_sweep"
            ) from None
        finally:
            if proc.poll() is None:  # past the timeout, or this job interrupted
                stop_group(proc)
    output = stdout + stderr
    if proc.returncode != 0 or "==ERROR==" in output or not report.exists():
        raise SmdissectError(f"profiling {report.name} failed: {error_line(output)}")


def stop_group(proc: subprocess.Popen[str]) -> None:
    """End the process group that `proc` leads: SIGTERM first (a launcher, `smdissect exec`, then ends its binaries'
    own groups), SIGKILL to whatever is left after STOP_GRACE_S."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    while time.monotonic() < deadline:
        proc.poll()  # reap the leader, so that an ended group reads as empty
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def version(exe: str) -> str:
    """Nsight Compute's version line (`Version 2025.3.1.0 (build ...)`), or '' when it prints none."""
    out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    return out[-1] if out else ""


def launcher(args: list[str]) -> list[str]:
    """A command that runs this package's CLI with the same interpreter (what ncu launches)."""
    return [sys.executable, "-m", "smdissect", *args]
