"""Faults, each from a real failing input: one line that names the fix, never a traceback, and no lost work."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import FIXTURES, NO_GPU, ROOT, copy_workflow, one_line, run_cli, snakemake
from smdissect.core import catalog, tables
from smdissect.core.errors import SmdissectError
from smdissect.measure import device, ncu, run
from smdissect.stages import gpu as gpu_stage

SMD = [sys.executable, "-m", "smdissect"]
REPORT = FIXTURES / "captured" / "latency-float-ffma.ncu-rep"
# What ncu 2025 prints when the driver keeps the counters for admins (its exit status may still be 0).
NCU_REFUSED = """==PROF== Connected to process 113001 (/tmp/bench)
==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the \
target device 0. For instructions on enabling permissions and to get more information see \
https://developer.nvidia.com/ERR_NVGPUCTRPERM
==PROF== Disconnected from process 113001
==WARNING== No kernels were profiled.
"""


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_workflow(tmp_path_factory.mktemp("wf"))


def test_no_nvcc(workdir: Path) -> None:
    path = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep) if not (Path(d) / "nvcc").exists())
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", "--dry-run"],
        cwd=workdir,
        capture_output=True,
        text=True,
        env=os.environ | {"PATH": path},
    )
    line = one_line(proc)
    assert line == "smdissect: nvcc not found: install the CUDA toolkit or set nvcc: in config/config.yaml"


@pytest.mark.parametrize(
    ("setting", "key"),
    [
        ("categories=[latency;rm -rf /]", "config.categories[0]"),
        ("categories=[$(touch PWNED)]", "config.categories[0]"),
        ("nvcc_flags=[-O3;touch PWNED]", "config.nvcc_flags[0]"),
        ("nvcc_flags=[-O3 `touch PWNED`]", "config.nvcc_flags[0]"),
        ("nvcc=nvcc;touch PWNED", "config.nvcc"),
        ("ncu=$(touch PWNED)", "config.ncu"),
        ("gpu=h200;touch PWNED", "config.gpu"),
        ("cluster_gpus={h200: sm_90a;touch PWNED}", "config.cluster_gpus.h200"),
    ],
)
def test_shell_in_config_is_rejected(workdir: Path, setting: str, key: str) -> None:
    proc = snakemake(workdir, "--dry-run", "--config", setting)
    line = one_line(proc)
    assert line.startswith(f"smdissect: {key}: ") and line.endswith("(fix config/config.yaml or --config)")
    assert "does not match" in line
    assert not (workdir / "PWNED").exists()


@pytest.mark.parametrize("keep", [100, REPORT.stat().st_size // 2, REPORT.stat().st_size - 416])
def test_truncated_ncu_report(tmp_path: Path, keep: int) -> None:
    report = tmp_path / "profile.ncu-rep"
    report.write_bytes(REPORT.read_bytes()[:keep])
    (tmp_path / "profile.json").write_text('{"chip": "gh100"}')
    proc = run_cli(
        *SMD,
        "parse",
        "--report",
        str(report),
        "--meta",
        str(tmp_path / "profile.json"),
        "--out-ncu",
        str(tmp_path / "n.parquet"),
        "--out-stalls",
        str(tmp_path / "s.parquet"),
        "--out-pipes",
        str(tmp_path / "p.parquet"),
    )
    line = one_line(proc)
    assert "truncated or corrupt" in line and line.endswith("delete it and re-run its profile job")
    assert not list(tmp_path.glob("*.parquet"))


@pytest.mark.parametrize("damage", ["truncate", "zero_middle"])
def test_corrupted_parquet(tmp_path: Path, damage: str) -> None:
    good = tmp_path / "good.parquet"
    tables.write("raw", tables.frame("raw", []), good)
    data = good.read_bytes()
    bad = tmp_path / "raw.parquet"
    bad.write_bytes(data[: len(data) // 2] if damage == "truncate" else data[:4] + bytes(len(data) - 8) + data[-4:])
    proc = run_cli(
        *SMD,
        "crossval",
        "--kernels",
        str(ROOT / "kernels"),
        "--category",
        "latency",
        "--out",
        str(tmp_path / "crossval.parquet"),
        "--raw",
        str(bad),
    )
    line = one_line(proc)
    assert line.startswith(f"smdissect: {bad} is not a readable raw table") and line.endswith("delete it and re-run")
    assert not (tmp_path / "crossval.parquet").exists()


def test_source_that_does_not_compile(tmp_path: Path) -> None:
    kernels = tmp_path / "kernels"
    shutil.copytree(ROOT / "kernels", kernels)
    source = kernels / "latency" / "float.cu"
    source.write_text(source.read_text() + "\nint broken = ;\n")
    binary = tmp_path / "build" / "float"
    proc = run_cli(
        *SMD,
        "build",
        "--source",
        str(source),
        "--binary",
        str(binary),
        "--listing",
        str(binary.with_suffix(".json")),
        "--arch",
        "sm_90a",
        "--include",
        str(kernels / "common"),
        "--nvcc",
        "nvcc",
        "--flags=-O3 -std=c++17",
    )
    line = one_line(proc)
    assert line.startswith(f"smdissect: nvcc failed on {source} for sm_90a: ") and "error" in line
    assert not binary.exists() and not list(binary.parent.glob(".float.*"))  # no half-written binary left


def test_counters_refused(tmp_path: Path) -> None:
    params = tmp_path / "params"
    params.write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\nEnableMSI: 1\n")
    assert "NVreg_RestrictProfilingToAdminUsers=0" in device.counters_permitted(params, euid=1000)
    fake = tmp_path / "ncu"
    fake.write_text(f"#!/bin/sh\ncat <<'EOF'\n{NCU_REFUSED}EOF\n")
    fake.chmod(0o755)
    with pytest.raises(SmdissectError) as err:
        ncu.profile(str(fake), ["sm__cycles_active.max"], tmp_path / "p.ncu-rep", ["true"], 30)
    message = str(err.value)
    assert "\n" not in message and "ERR_NVGPUCTRPERM" in message and "NVreg_RestrictProfilingToAdminUsers=0" in message


@pytest.mark.skipif(not NO_GPU, reason="checks the no-GPU path; this machine has a GPU")
def test_gpu_job_without_gpu(tmp_path: Path) -> None:
    proc = run_cli(
        *SMD,
        "run",
        "--binary",
        "build/sm_90a/latency/float",
        "--arch",
        "sm_90a",
        "--cuda",
        "13.0",
        "--out",
        str(tmp_path / "raw.parquet"),
        "--out-status",
        str(tmp_path / "status.parquet"),
        "--kernels",
        "kernels",
        "--category",
        "latency",
        "--family",
        "float",
        "--repeats",
        "3",
        "--device",
        "0",
    )
    assert one_line(proc).startswith("smdissect: this job needs a GPU: ")
    assert device.snapshot("GPU-00000000-0000-0000-0000-000000000000")["nvml"].startswith("NVML unavailable")


def test_interrupted_run_resumes_and_keeps_finished_results(tmp_path: Path) -> None:
    copy_workflow(tmp_path)
    fams = ("float", "sfu")
    outputs = [f"build/sm_90a/latency/{f}{ext}" for f in fams for ext in ("", ".json")]
    outputs += [f"results/static/sm_90a/latency/{f}/{t}.parquet" for f in fams for t in ("sass", "sass_checks")]
    targets = [o for o in outputs if o.endswith("sass.parquet")]
    args = [sys.executable, "-m", "snakemake", "--cores", "1", *targets, "--config", "static_archs=[sm_90a]"]
    with (tmp_path / "first.err").open("w") as err:
        first = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        deadline = time.monotonic() + 180
        while not re.search(r"\b[1-3] of 4 steps", (tmp_path / "first.err").read_text()):
            assert first.poll() is None and time.monotonic() < deadline, (tmp_path / "first.err").read_text()
            time.sleep(0.2)
        # Stopped as a user stops a background run: SIGTERM (a SIGINT would be ignored where the test itself was
        # started in the background, since a background job inherits SIGINT ignored), to snakemake and its job.
        os.killpg(first.pid, signal.SIGTERM)
        first.wait(60)
    # The results of jobs snakemake finished (a job killed mid-way may have written some of its outputs: those
    # are redone, rightly); snakemake's log names each job's outputs and says which jobs finished.
    log = (tmp_path / "first.err").read_text()
    jobs = dict(re.findall(r"output: ([^\n]+)\n(?:\s+\w+: [^\n]*\n)*?\s+jobid: (\d+)", log))
    done = set(re.findall(r"Finished jobid: (\d+)", log))
    finished = {o.strip() for outs, job in jobs.items() if job in done for o in outs.split(",")}
    kept = {o: (tmp_path / o).stat().st_mtime_ns for o in outputs if o in finished}
    assert kept and len(kept) < len(outputs), (kept, jobs, done)
    second = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr[-3000:]
    assert all((tmp_path / o).exists() for o in outputs)
    assert {o: (tmp_path / o).stat().st_mtime_ns for o in kept} == kept  # finished results were not redone


FAMILY = """#!{python}
import os, sys, time
sys.path.insert(0, {workflow!r})
from smdissect.measure import protocol

def ok(case, point, repeats, device):
    if os.environ.get("TRACE"):  # which points ran, in how many processes
        with open(os.environ["TRACE"], "a") as trace:
            trace.write(f"{{case}} {{point['n']}}\\n")
    protocol.emit(case, point, "latency", "cycle", [float(point["n"])] * repeats)

def crash(case, point, repeats, device):
    protocol.fail("illegal memory access (a crashing case)")

def hang(case, point, repeats, device):
    if os.environ.get("PIDS"):  # which processes hang, to check that they are ended
        with open(os.environ["PIDS"], "a") as pids:
            pids.write(f"{{os.getpid()}}\\n")
    time.sleep(60)

def dies_late(case, point, repeats, device):
    if point["n"] == 2:
        protocol.fail("launch failed after the first point")
    ok(case, point, repeats, device)

def static(case, point, repeats, device):
    if point["n"] == 2:
        print(f"static: {{case}} {{protocol.params_json(point)}}: needs 2 GPUs", file=sys.stderr)
    else:
        ok(case, point, repeats, device)

protocol.main({{"first": ok, "crash": crash, "hang": hang, "static": static, "dies_late": dies_late, "last": ok}})
"""


# A manifest whose one family (FAMILY, as kernels/faults/family.py) hangs, for a whole stage's command line.
HANGING = """category: faults
title: a family that hangs
families:
  family: {timeout: 60}
cases:
  - {id: hang, source: family.py, ptx: none, measures: [latency], sweep: {n: [1]}, sass: {expect: {}}}
"""
# ncu's launcher path: past its options and the report, the target runs as its child. It ignores SIGTERM, as does
# a target that sets no handler of its own (an ignored signal is inherited), so only SIGKILL ends those.
FAKE_NCU = """#!/bin/sh
while [ "$1" != --export ]; do shift; done
shift 2
trap '' TERM
"$@"
"""


def ends(pid: int, within_s: float = 5.0) -> bool:
    """Whether process `pid` has ended within `within_s` (a zombie that nobody reaped has ended; a killed process
    takes a moment to)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("through_exec", [False, True], ids=["binary", "exec-launcher"])
def test_an_ncu_timeout_ends_everything_ncu_launched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, through_exec: bool
) -> None:
    """A hang under ncu, in the binary ncu launched or in `smdissect exec` (the fallback, which starts each binary
    in a process group of its own): the timeout is one line, and ncu, the launcher and the binary all end."""
    kernels = tmp_path / "kernels"
    (kernels / "faults").mkdir(parents=True)
    (kernels / "faults" / "cases.yaml").write_text(HANGING)
    binary = kernels / "faults" / "family.py"
    binary.write_text(FAMILY.format(python=sys.executable, workflow=str(ROOT / "workflow")))
    binary.chmod(0o755)
    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU)
    fake.chmod(0o755)
    monkeypatch.setenv("PIDS", str(tmp_path / "pids"))
    monkeypatch.setattr(ncu, "STOP_GRACE_S", 2.0)
    cases = catalog.load(kernels, "faults")
    target = (
        ncu.launcher(gpu_stage.exec_args(binary, cases, "sm_90a", 0, kernels))
        if through_exec
        else gpu_stage.profiled_target(binary, cases, "sm_90a", 0)
    )
    started = time.monotonic()
    with pytest.raises(SmdissectError, match=r"^profiling p.ncu-rep was killed after 6 s: raise the family's"):
        ncu.profile(str(fake), ["sm__cycles_active.max"], tmp_path / "p.ncu-rep", target, 6)
    assert time.monotonic() - started < 6 + 2 + 3
    hung = [int(pid) for pid in (tmp_path / "pids").read_text().split()]
    assert len(hung) == 1 and ends(hung[0])


def test_a_hang_is_silence_not_length() -> None:
    """A process is killed once it has printed nothing for the timeout, however long it has run before."""
    talks = "import time\nfor i in range(6):\n    print(i, flush=True); time.sleep(0.4)"
    started = time.monotonic()
    proc, why = run.attempt([sys.executable, "-c", talks], timeout=1)
    assert why == "" and proc is not None and proc.stdout.split() == list("012345")
    assert time.monotonic() - started > 2  # it ran past the timeout and was not killed
    started = time.monotonic()
    hangs = "import subprocess, time; print('one', flush=True); subprocess.Popen(['sleep', '60']); time.sleep(60)"
    proc, why = run.attempt([sys.executable, "-c", hangs], 1)  # with a child that holds the pipes too
    assert why.startswith("killed after 1 s without output") and proc.stdout == "one\n"  # what it printed is kept
    assert time.monotonic() - started < 10


def test_crashing_and_hung_cases_do_not_take_their_process_group_with_them(tmp_path: Path) -> None:
    """A family's cases share one process (`--then` between sweeps); one that crashes or hangs is rerun alone and
    fails by itself."""
    binary = tmp_path / "family"
    binary.write_text(FAMILY.format(python=sys.executable, workflow=str(ROOT / "workflow")))
    binary.chmod(0o755)
    cases = [
        catalog.Case("faults", c, "family.py", "", ("latency",), {"n": [1, 3] if c == "last" else [1, 2]}, {})
        for c in ("first", "crash", "hang", "static", "dies_late", "last")
    ]
    assert run.items(cases, lambda c: [c.sweep]) == [(c, c.sweep) for c in cases]
    assert run.invocation(binary, run.items(cases, lambda c: [c.sweep]), 3, 0).count("--then") == 1
    started = time.monotonic()
    out = run.execute(binary, cases, "sm_90a", 3, 0, timeout=3)
    assert time.monotonic() - started < 15  # the group ends at the crash; the hang alone is killed after 3 s
    status = {(s["case"], s["params"]): (s["status"], s["reason"]) for s in out.status}
    for case, n in (("first", 2), ("last", 3)):
        assert [status[(case, f'{{"n":{m}}}')][0] for m in (1, n)] == ["measured", "measured"]
    assert status[("crash", '{"n":1}')] == ("failed", "error: illegal memory access (a crashing case)")
    assert status[("hang", '{"n":2}')][0] == "failed" and "killed after 3 s" in status[("hang", '{"n":2}')][1]
    assert status[("static", '{"n":2}')] == ("static", 'static: static {"n":2}: needs 2 GPUs')
    # a case whose process dies after some of its records failed as a whole, as it does alone
    assert {status[("dies_late", p)] for p in ('{"n":1}', '{"n":2}')} == {
        ("failed", "error: launch failed after the first point")
    }
    late = run.execute(binary, [cases[0], cases[4], cases[5]], "sm_90a", 3, 0, timeout=3)  # dies after a record
    assert [(s["case"], s["status"]) for s in late.status] == [
        ("first", "measured"),
        ("first", "measured"),
        ("dies_late", "failed"),
        ("dies_late", "failed"),
        ("last", "measured"),
        ("last", "measured"),
    ]
    assert sorted({(r["case"], r["value"]) for r in out.records}) == [
        ("first", 1.0),
        ("first", 2.0),
        ("last", 1.0),
        ("last", 3.0),
        ("static", 1.0),
    ]


def test_a_hang_in_the_shared_process_keeps_what_finished_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The family's process is killed at the hang; cases that finished before the last one it printed are kept,
    that one (it may have died in it) and the rest run again alone."""
    binary = tmp_path / "family"
    binary.write_text(FAMILY.format(python=sys.executable, workflow=str(ROOT / "workflow")))
    binary.chmod(0o755)
    monkeypatch.setenv("TRACE", str(tmp_path / "trace"))
    cases = [
        catalog.Case("faults", c, "family.py", "", ("latency",), {"n": [1, 2]}, {})
        for c in ("first", "last", "hang", "static")
    ]
    out = run.execute(binary, cases, "sm_90a", 3, 0, timeout=2)
    status = {(s["case"], s["params"]): s["status"] for s in out.status}
    assert [status[(c, '{"n":1}')] for c in ("first", "last", "hang", "static")] == [
        "measured",
        "measured",
        "failed",
        "measured",
    ]
    ran = (tmp_path / "trace").read_text().splitlines()
    assert ran.count("first 1") == 1  # kept from the killed process
    assert ran.count("last 1") == 2  # the last case it printed: run again alone
    assert ran.count("static 1") == 1  # never reached there: run once, alone


def test_what_ncu_launches_is_the_binary_once_over_every_profiled_sweep(tmp_path: Path) -> None:
    """ncu starts the binary itself (no Python launcher), once: `--then` separates the profiled sweeps."""
    binary = tmp_path / "family"
    binary.write_text(FAMILY.format(python=sys.executable, workflow=str(ROOT / "workflow")))
    binary.chmod(0o755)
    narrow = [{"n": [1]}, {"n": [3]}]
    cases = [
        catalog.Case("faults", c, "family.py", "", ("latency",), {"n": [1, 2, 3]}, {}, profile_sweep=narrow)
        for c in ("first", "last")
    ]
    narrowed = [dataclasses.replace(c, profile_sweep={"n": [1]}) for c in cases]
    one = gpu_stage.profiled_target(binary, narrowed, "sm_90a", 0)
    assert one[0] == str(binary) and one.count("--case") == 2 and "n=1" in one and "--then" not in one
    two = gpu_stage.profiled_target(binary, cases, "sm_90a", 0)
    assert two[0] == str(binary) and two.count("--then") == 1 and two.count("--case") == 4
    proc = subprocess.run(two, capture_output=True, text=True, check=True)
    seen = sorted((r["case"], r["params"]["n"], len(r["samples"])) for r in run.parse_records(proc.stdout))
    assert seen == [("first", 1, 1), ("first", 3, 1), ("last", 1, 1), ("last", 3, 1)]  # --repeats 1, no n=2
