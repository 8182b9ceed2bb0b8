"""Device slots (concurrent GPU jobs never share a device, all finish, a dead holder frees its GPU) and the
GPU state each job records (throttle reasons by name, NVML absent)."""

from __future__ import annotations

import importlib.machinery
import multiprocessing
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
import types
from pathlib import Path

import pynvml
import pytest
from conftest import ROOT
from smdissect import cli, device, gputime, slots
from smdissect.errors import SmdissectError

UUIDS = [f"GPU-{i:08x}-0000-0000-0000-000000000000" for i in range(3)]


def job(locks: str, busy: str, uuids: list[str | None]) -> None:
    """One GPU job: hold a slot, mark its device busy (failing if already marked), work, unmark."""
    with slots.acquire(uuids, Path(locks), wait_s=60, poll_s=0.01) as index:
        marker = Path(busy) / str(index)
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # FileExistsError: device held twice
        os.write(fd, f"{os.getpid()}".encode())
        os.close(fd)
        time.sleep(0.05)
        (Path(busy) / f"done-{os.getpid()}-{index}").touch()
        marker.unlink()


def run_jobs(tmp_path: Path, uuids: list[str | None], count: int) -> list[int]:
    """Run `count` jobs at once in separate processes; the device index each one got."""
    busy = tmp_path / "busy"
    busy.mkdir()
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=job, args=(str(tmp_path / "locks"), str(busy), uuids)) for _ in range(count)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * count, "a job failed: a device was held twice, or it timed out"
    return sorted(int(p.name.rsplit("-", 1)[1]) for p in busy.glob("done-*"))


def test_concurrent_jobs_never_share_a_device(tmp_path: Path) -> None:
    indices = run_jobs(tmp_path, UUIDS, 12)
    assert len(indices) == 12
    assert set(indices) == {0, 1, 2}  # the jobs spread over every device


def test_only_eligible_devices_are_handed_out(tmp_path: Path) -> None:
    assert set(run_jobs(tmp_path, [None, UUIDS[1], None], 4)) == {1}


def test_no_eligible_device_is_one_line(tmp_path: Path) -> None:
    with (
        pytest.raises(SmdissectError, match="no GPU of the configured model is visible"),
        slots.acquire([None, None], tmp_path),
    ):
        pass


def test_a_killed_holder_releases_its_device(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; from pathlib import Path; from smdissect import slots\n"
            f"with slots.acquire({UUIDS[:1]!r}, Path({str(tmp_path)!r})) as i:\n"
            "    print('held', i, flush=True); time.sleep(120)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ | {"PYTHONPATH": str(ROOT / "workflow")},
    )
    try:
        assert holder.stdout.readline().split() == ["held", "0"]
        held = rf"no free GPU after 0 s, all 1 held: .*pid {holder.pid}\)"
        with pytest.raises(SmdissectError, match=held), slots.acquire(UUIDS[:1], tmp_path, wait_s=0.3):
            pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with slots.acquire(UUIDS[:1], tmp_path, wait_s=5) as index:
        assert index == 0


HOLD = """import sys, time
from smdissect import slots
from smdissect.errors import exit_on_error

@exit_on_error
def job():
    with slots.acquire([sys.argv[1]], wait_s=float(sys.argv[2])) as index:
        print("held", index, flush=True)
        time.sleep(float(sys.argv[3]))

job()
"""


def test_two_checkouts_share_the_hosts_gpu_locks(tmp_path: Path) -> None:
    """Jobs of two checkouts of the repository (their own cwd and package), with no lock setting: while one holds a
    GPU, the other cannot take it."""
    uuid = f"GPU-{os.getpid():08x}-{time.time_ns() % 2**32:08x}-0000-000000000000"  # no other run's GPU
    env = {k: v for k, v in os.environ.items() if k != slots.LOCK_DIR_ENV}
    checkouts = [tmp_path / name for name in ("one", "two")]
    for checkout in checkouts:
        shutil.copytree(ROOT / "workflow" / "smdissect", checkout / "workflow" / "smdissect")

    def job(checkout: Path, wait_s: float, hold_s: float) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", HOLD, uuid, str(wait_s), str(hold_s)],
            cwd=checkout,
            env=env | {"PYTHONPATH": str(checkout / "workflow")},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    holder = job(checkouts[0], 0, 120)
    try:
        assert holder.stdout.readline().split() == ["held", "0"], holder.stderr.read()
        other = job(checkouts[1], 0.3, 0)
        _, err = other.communicate(timeout=60)
        assert other.returncode == 1 and err.strip() == (
            f"smdissect: no free GPU after 0 s, all 1 held: {uuid} (pid {holder.pid}); lower --resources gpu= or "
            "wait for those jobs"
        )
    finally:
        holder.kill()
        holder.wait()
    (slots.LOCK_DIR / f"{uuid}.lock").unlink()


def test_lock_folder_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(slots.LOCK_DIR_ENV, str(tmp_path / "shared"))
    with slots.acquire(UUIDS[:1]) as index:
        assert index == 0 and (tmp_path / "shared" / f"{UUIDS[0]}.lock").exists()
    monkeypatch.delenv(slots.LOCK_DIR_ENV)
    assert slots.lock_dir() == slots.LOCK_DIR
    monkeypatch.setattr(slots, "LOCK_DIR", tmp_path / "host")  # the host's folder, made here: every user's
    with slots.acquire(UUIDS[:1]):
        assert stat.S_IMODE((tmp_path / "host").stat().st_mode) == 0o1777
        assert stat.S_IMODE((tmp_path / "host" / f"{UUIDS[0]}.lock").stat().st_mode) == 0o666


def test_throttle_reasons_by_name() -> None:
    assert device.throttle_names(pynvml.nvmlClocksEventReasonNone) == ""
    mask = pynvml.nvmlClocksEventReasonGpuIdle | pynvml.nvmlClocksEventReasonSwPowerCap
    assert device.throttle_names(mask) == "gpu_idle,sw_power_cap"
    mask = pynvml.nvmlClocksEventReasonHwThermalSlowdown | pynvml.nvmlClocksThrottleReasonBoardLimit | 0x10000
    assert device.throttle_names(mask) == "hw_thermal_slowdown,board_limit,0x10000"
    assert len(device.throttle_names(pynvml.nvmlClocksThrottleReasonAll).split(",")) == 11


@pytest.mark.skipif(not isinstance(device.query(0), str), reason="checks the no-GPU path; this machine has a GPU")
def test_snapshot_without_nvml() -> None:
    state = device.snapshot(UUIDS[0])
    assert state["nvml"].startswith(f"NVML unavailable for {UUIDS[0]} (") and "\n" not in state["nvml"]
    assert state["throttle"] == "" and state["processes"] == []
    assert state["sm_clock_mhz"] != state["sm_clock_mhz"] and state["mem_clock_mhz"] != state["mem_clock_mhz"]  # NaN
    assert device.uuids_like() == device.query(0)


@pytest.mark.gpu
def test_snapshot_and_slots_on_this_gpu(tmp_path: Path) -> None:
    gpu = device.query(0)
    state = device.snapshot(gpu.uuid)
    assert state["nvml"] == "" and state["sm_clock_mhz"] > 0 and state["mem_clock_mhz"] > 0
    assert os.getpid() not in state["processes"]
    uuids = device.uuids_like(0)
    assert uuids[0] == gpu.uuid
    with slots.acquire(uuids, tmp_path) as index:
        assert device.query(index).uuid == uuids[index]


def test_a_gpu_job_logs_its_wait_and_hold_as_stage_times_sums_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The line a GPU job leaves in its log is what .ci/stage-times reads (gputime.HELD), and the tool sums it per
    stage."""
    loader = importlib.machinery.SourceFileLoader("stage_times", str(ROOT / ".ci" / "stage-times"))
    stage_times = types.ModuleType(loader.name)
    stage_times.__file__ = loader.path
    loader.exec_module(stage_times)
    monkeypatch.setattr(device, "uuids_like", lambda index=0: [UUIDS[0]])
    monkeypatch.setenv(slots.LOCK_DIR_ENV, str(tmp_path / "locks"))
    with cli._device("0") as index:
        time.sleep(0.2)
    line = capsys.readouterr().err
    assert index == 0 and len(gputime.HELD.findall(line)) == 1 and float(gputime.HELD.findall(line)[0][0]) >= 0.2
    for stage, held in (("run", line), ("profile", line.replace("held 0.", "held 1."))):
        job = Path(stage, "h200", "sm_90a", "latency", "float")
        (tmp_path / "benchmarks" / job).parent.mkdir(parents=True)
        (tmp_path / "benchmarks" / job).with_suffix(".tsv").write_text("s\th:m:s\n2.50\t0:00:02\n")
        (tmp_path / "logs" / job).parent.mkdir(parents=True)
        (tmp_path / "logs" / job).with_suffix(".log").write_text(held)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["stage-times"])
    stage_times.main()
    out = capsys.readouterr().out
    assert "| run | 1 | 2 s | 0 s |" in out and "| profile | 1 | 2 s | 1 s |" in out, out
