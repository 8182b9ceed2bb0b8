"""The protocol's version: the harness and smdissect.measure.protocol write the same one in every JSON line, and the one
reader (protocol.read, behind the run stage and the build's listing) refuses a line of another version or of none
with one line naming both versions and the fix; a Python family's timed calls each sit behind a GPU spin, with the
SM clock read after each. No GPU needed."""

from __future__ import annotations

import json
import math
import sys
import types
from pathlib import Path

import pytest
from helpers import ROOT
from smdissect.core import catalog
from smdissect.core.errors import SmdissectError
from smdissect.measure import build, protocol, run

# A binary of one case whose --list is the harness's, and which with no argument prints one record through the
# harness's own printer without touching a GPU.
TINY = """#include "harness.cuh"

std::vector<smd::KernelInfo> kernels() { return {{{{"n", 1}}, "long", 2, 3, "tiny_kernel"}}; }

int main(int argc, char** argv) {
  if (argc == 1) {
    smd::emit({"tiny", {{"n", 1}}, "latency", "cycle", {1.0, 2.0, 4.0}});
    return 0;
  }
  return smd::family_main(argc, argv, {{"tiny", kernels, nullptr}});
}
"""

# A family built before the protocol's version (or of another one): its lines carry `version`'s fields.
STALE = """#!{python}
import json, sys
record = {{"case": "old", "params": {{"n": 1}}, "metric": "latency", "unit": "cycle", "value": 1.0, "samples": [1.0],
          "cycles": 0, "iterations": 0, "clock_mhz": 0, "smid": -1}}
print(json.dumps({version} | ({{"case": "old", "kernels": []}} if "--list" in sys.argv else record)))
"""


def test_the_harness_writes_this_version_in_records_and_listings(tmp_path: Path) -> None:
    source, binary = tmp_path / "tiny.cu", tmp_path / "tiny"
    source.write_text(TINY)
    build.compile_family("nvcc", source, binary, ["sm_90a"], ROOT / "kernels" / "common", ["-O0", "-std=c++17"])
    assert build.list_kernels(binary) == [
        {
            "protocol": protocol.VERSION,
            "case": "tiny",
            "kernels": [{"params": {"n": 1}, "variant": "long", "ops": 2, "iterations": 3, "symbol": "tiny_kernel"}],
        }
    ]
    proc, why = run.attempt([str(binary)], timeout=30)
    assert why == ""
    (record,) = run.parse_records(proc.stdout, str(binary))
    assert record["protocol"] == protocol.VERSION and record["samples"] == [1.0, 2.0, 4.0] and record["value"] == 2.0


def test_a_python_family_writes_this_version(capsys: pytest.CaptureFixture[str]) -> None:
    protocol.main(
        {"lib_call": lambda case, point, *_: protocol.emit(case, point, "ms", "ms", [1.0])},
        ["--case", "lib_call", "--param", "n=1"],
    )
    protocol.main({"lib_call": lambda *_: None}, ["--list"])
    record, listing = protocol.read(capsys.readouterr().out, "lib")
    assert record["protocol"] == listing["protocol"] == protocol.VERSION
    assert record["case"] == listing["case"] == "lib_call" and listing["kernels"] == []


STALE_VERSIONS = [({}, '0 (its lines have no "protocol" field)'), ({"protocol": 0}, "0"), ({"protocol": "1"}, '"1"')]


@pytest.fixture(params=STALE_VERSIONS, ids=["missing", "older", "a string"])
def stale(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    """A stale family's executable, and the one line its output must give."""
    version, theirs = request.param
    binary = tmp_path.resolve() / "old"  # as the run stage names it
    binary.write_text(STALE.format(python=sys.executable, version=json.dumps(version)))
    binary.chmod(0o755)
    why = f"rebuild the family: its binary speaks protocol {theirs}, this smdissect reads {protocol.VERSION}"
    return binary, f"{binary}: {why}"


def test_the_run_stage_refuses_a_stale_record(stale: tuple[Path, str]) -> None:
    binary, line = stale
    case = catalog.Case("t", "old", "old.py", "", ("latency",), {"n": [1]}, {})
    with pytest.raises(SmdissectError) as err:
        run.execute(binary, [case], "sm_90a", 1, 0, timeout=30)
    assert str(err.value) == line


def test_the_build_refuses_a_stale_listing(stale: tuple[Path, str]) -> None:
    binary, line = stale
    with pytest.raises(SmdissectError) as err:
        build.list_kernels(binary)
    assert str(err.value) == line and "\n" not in line


def fake_torch(log: list[str]) -> types.SimpleNamespace:
    """torch as protocol.time_calls uses it, logging each step; every pair of events is 2 ms apart."""

    class Event:
        def __init__(self, enable_timing: bool) -> None:
            assert enable_timing

        def record(self) -> None:
            log.append("event")

        def synchronize(self) -> None:
            log.append("sync")

        def elapsed_time(self, end: Event) -> float:
            return 2.0

    push, pop = (lambda name: log.append(f"push {name}")), (lambda: log.append("pop"))
    nvtx = types.SimpleNamespace(range_push=push, range_pop=pop)
    props = types.SimpleNamespace(uuid=types.SimpleNamespace(bytes=list(range(16))))
    cuda = types.SimpleNamespace(Event=Event, _sleep=lambda cycles: log.append(f"sleep {cycles}"), nvtx=nvtx,
                                 current_device=lambda: 0, get_device_properties=lambda index: props)  # fmt: skip
    return types.SimpleNamespace(cuda=cuda)


def test_each_timed_call_waits_behind_a_spin_and_reads_the_clock_after(monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    clocks = iter([1755.0, math.nan, 1740.0])  # NaN: NVML could not say, left out of the median
    monkeypatch.setattr(protocol, "sm_clock_mhz", lambda uuid: log.append(f"clock {uuid}") or next(clocks))
    ms, mhz = protocol.time_calls(fake_torch(log), lambda: log.append("call"), 3, "smd:x")
    assert ms == [2.0] * 3 and mhz == 1747.5
    one = [f"sleep {protocol.HOLD_CYCLES}", "push smd:x", "event", "call", "event", "pop", "sync"]
    one.append("clock GPU-00010203-0405-0607-0809-0a0b0c0d0e0f")  # NVML's spelling of the device's UUID
    assert log == ["call"] * protocol.WARM_CALLS + one * 3
    monkeypatch.setattr(protocol, "sm_clock_mhz", lambda uuid: math.nan)
    assert protocol.time_calls(fake_torch([]), lambda: None, 2, "smd:x")[1] == 0  # no clock read: 0, as before
