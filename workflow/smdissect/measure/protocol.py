"""The binary protocol (docs/design.md) for Python families, which measure a library's own call (torch) and
speak to the pipeline exactly as a .cu family's binary does, and the one reader of every family's JSON lines."""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from ..core.errors import SmdissectError
from .device import nvml_uuid, sm_clock_mhz

# The protocol's version, the first field of every JSON line (records and --list); kernels/common/harness.cuh's
# kProtocol is the same number (tests/test_protocol.py). Raise both when a line changes meaning.
VERSION = 1
Point = dict[str, int]
Runner = Callable[[str, Point, int, int], None]
WARM_MS = 200.0  # keep the GPU busy this long before timing, so it leaves its idle clock
WARM_CALLS = 3  # untimed calls of a library's call before timing it: the first ones pick and load its kernels
# GPU cycles the stream spins before each timed call (~0.5 ms at 2 GHz): longer than the host takes to enqueue the
# start event, the call (tens of microseconds of Python dispatch) and the end event
HOLD_CYCLES = 1_000_000


def params_json(point: Point) -> str:
    """Canonical JSON of a parameter point: sorted keys, no spaces (as the harness writes it)."""
    return json.dumps(dict(sorted(point.items())), separators=(",", ":"))


def range_name(case: str, point: Point, variant: str) -> str:
    """The NVTX range that maps a profiled launch back to its case: smd:<case>:<params>:<variant>."""
    return f"smd:{case}:{params_json(point)}:{variant}"


def emit(
    case: str, point: Point, metric: str, unit: str, samples: list[float], variant: str = "", clock_mhz: float = 0
) -> None:
    """Print one record (host-timed: no cycles or SM of its own; `clock_mhz` the SM clock its calls ran at as NVML
    read it, 0 where unknown)."""
    record: dict[str, Any] = {
        "protocol": VERSION,
        "case": case,
        "params": dict(sorted(point.items())),
        "metric": metric,
        "unit": unit,
        "value": statistics.median(samples),
        "samples": samples,
        "cycles": 0,
        "iterations": 0,
        "clock_mhz": clock_mhz,
        "smid": -1,
    }
    if variant:
        record["variant"] = variant
    print(json.dumps(record), flush=True)


def fail(message: str, code: int = 1) -> NoReturn:
    """The protocol's only error path: one line on stderr and a non-zero exit."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(code)


class _Parser(argparse.ArgumentParser):
    """Argument errors are one line and exit status 2, like smd::fail."""

    def error(self, message: str) -> NoReturn:
        fail(message, 2)


def param(point: Point, key: str) -> int:
    """A swept parameter of the current point; its absence is a one-line error."""
    if key not in point:
        fail(f"missing --param {key}=...", 2)
    return point[key]


def _param(text: str) -> tuple[str, list[int]]:
    key, eq, values = text.partition("=")
    if not eq or not key:
        fail(f"--param wants k=v1,v2,..., got '{text}'", 2)
    try:
        return key, [int(v) for v in values.split(",")]
    except ValueError:
        fail(f"--param {key}: '{values}' is not a list of integers", 2)


def torch_on(device: int) -> Any:
    """torch on CUDA device `device`, warmed up (matrix products for WARM_MS); one-line errors otherwise."""
    try:
        import torch
    except ImportError:
        fail("torch is not installed: pip install -e '.[torch]' (PyTorch with CUDA) to measure the library reference")
    if not torch.cuda.is_available() or not 0 <= device < torch.cuda.device_count():
        fail(f"--device {device} out of range: {torch.cuda.device_count()} GPU(s) present", 2)
    torch.cuda.set_device(device)
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    while True:
        for _ in range(8):
            a = (a @ a).clamp_(-1, 1)
        end.record()
        end.synchronize()
        if start.elapsed_time(end) >= WARM_MS:
            return torch


def time_calls(torch: Any, call: Callable[[], object], repeats: int, name: str) -> tuple[list[float], float]:
    """(ms of each of `repeats` calls, their median SM clock in MHz) after WARM_CALLS untimed calls: each call alone
    between CUDA events in NVTX range `name`, queued behind a HOLD_CYCLES GPU spin so that the events time the GPU,
    not Python's dispatch; NVML reads the SM clock right after each (0 where NVML cannot)."""
    for _ in range(WARM_CALLS):
        call()
    uuid = nvml_uuid(bytes(torch.cuda.get_device_properties(torch.cuda.current_device()).uuid.bytes))
    ms, mhz = [], []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(HOLD_CYCLES)
        torch.cuda.nvtx.range_push(name)
        start.record()
        call()
        end.record()
        torch.cuda.nvtx.range_pop()
        end.synchronize()
        ms.append(start.elapsed_time(end))
        mhz.append(sm_clock_mhz(uuid))
    read = [m for m in mhz if m > 0]
    return ms, statistics.median(read) if read else 0


def main(cases: dict[str, Runner], argv: list[str] | None = None) -> None:
    """--list prints each case (no kernels of its own); else run each group's named cases over its sweep's product
    (`--then` starts the next group, as in the harness)."""
    parser = _Parser(add_help=False)
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--case", action="append", default=[])
    parser.add_argument("--param", action="append", default=[], type=_param)
    parser.add_argument("--repeats", type=int)
    parser.add_argument("--device", type=int)
    chunks: list[list[str]] = [[]]
    for word in sys.argv[1:] if argv is None else argv:
        if word == "--then":
            chunks.append([])
        else:
            chunks[-1].append(word)
    groups = [parser.parse_args(chunk) for chunk in chunks]
    if any(g.repeats is not None and g.repeats < 1 for g in groups):
        fail("--repeats must be >= 1", 2)
    repeats = next((g.repeats for g in reversed(groups) if g.repeats is not None), 9)
    device = next((g.device for g in reversed(groups) if g.device is not None), 0)
    if any(g.list for g in groups):
        for case in cases:
            print(json.dumps({"protocol": VERSION, "case": case, "kernels": []}))
        return
    for group in groups:
        if not group.case:
            fail("no --case given (see --list)", 2)
        unknown = [c for c in group.case if c not in cases]
        if unknown:
            fail(f"unknown case '{unknown[0]}' (see --list)", 2)
    for group in groups:
        axes = dict(sorted(group.param))
        for case in group.case:
            for combo in itertools.product(*axes.values()):
                cases[case](case, dict(zip(axes, combo, strict=True)), repeats, device)


def read(stdout: str, source: str) -> list[dict[str, Any]]:
    """The protocol's JSON lines in what `source` (a family's binary) printed: its lines that start with '{' (a
    library's own output is not the protocol's). A line of another version, or of none, is a one-line error."""
    lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    for line in lines:
        if line.get("protocol") != VERSION:
            theirs = json.dumps(line["protocol"]) if "protocol" in line else '0 (its lines have no "protocol" field)'
            why = f"its binary speaks protocol {theirs}, this smdissect reads {VERSION}"
            raise SmdissectError(f"{source}: rebuild the family: {why}")
    return lines
