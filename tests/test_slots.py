"""Device slots (concurrent GPU jobs never share a device, all finish, a dead holder frees its GPU; a job using a
peer GPU holds both, without deadlock) and the GPU state each job records (throttle reasons by name, NVML absent)."""

from __future__ import annotations

import importlib.machinery
import json
import math
import multiprocessing
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
import types
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pynvml
import pytest
from helpers import ROOT
from smdissect.core.errors import SmdissectError
from smdissect.measure import device, gputime, run, slots
from smdissect.stages import gpu as gpu_stage
from smdissect.stages import static as static_stage

UUIDS = [f"GPU-{i:08x}-0000-0000-0000-000000000000" for i in range(3)]


def job(locks: str, busy: str, uuids: list[str | None]) -> None:
    """One GPU job: hold a slot, mark its device busy (failing if already marked), work, unmark."""
    with slots.acquire(uuids, Path(locks), wait_s=60, poll_s=0.01) as index:
        marker = Path(busy) / str(index)
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # FileExistsError: device held twice
        os.write(fd, f"{os.getpid()}".encode())
        os.close(fd)
        time.sleep(0.2)  # long enough that, on a loaded host too, three jobs hold at once
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
            "import time; from pathlib import Path; from smdissect.measure import slots\n"
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


def fake_gpus(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, uuids: list[str]) -> None:
    """`uuids` as this host's GPUs in CUDA order, all of one model, their locks under tmp_path."""
    gpus = [device.Gpu(i, "NVIDIA H200", u, (9, 0), "580.00", 132) for i, u in enumerate(uuids)]
    monkeypatch.setattr(device, "all_gpus", lambda: gpus)
    monkeypatch.setattr(device, "uuids_like", lambda index=0: [g.uuid for g in gpus])
    monkeypatch.setenv(slots.LOCK_DIR_ENV, str(tmp_path / "locks"))


def family_offsets(category: str, family: str) -> set[int]:
    return run.gpu_offsets(static_stage.family_cases(ROOT / "kernels", category, family))


def gpu_job(index: int, offsets: set[int], records: str, start: Barrier, meet: Barrier | None) -> None:
    """One GPU job of a family using `offsets` on CUDA device `index`, started with the others: while it holds its
    GPUs it meets the other jobs at `meet` (failing unless all hold theirs at once), else works 0.05 s; it records
    when it held them."""
    start.wait(10)
    with gpu_stage._device(str(index), offsets):
        began = time.monotonic()
        if meet:
            meet.wait(10)  # BrokenBarrierError unless every job holds its GPUs now
        else:
            time.sleep(0.05)
        ended = time.monotonic()
    Path(records, str(os.getpid())).write_text(json.dumps([index, sorted(offsets), began, ended]))


def run_gpu_jobs(tmp_path: Path, jobs: list[tuple[int, set[int]]], meet: bool = False) -> list[list]:
    """Run GPU jobs (CUDA index, GPU offsets) all at once in separate processes; each one's record."""
    records = tmp_path / "records"
    records.mkdir(parents=True)
    ctx = multiprocessing.get_context("fork")
    start, together = ctx.Barrier(len(jobs)), ctx.Barrier(len(jobs)) if meet else None
    procs = [ctx.Process(target=gpu_job, args=(i, o, str(records), start, together)) for i, o in jobs]
    for p in procs:
        p.start()
    deadline = time.monotonic() + 60
    for p in procs:
        p.join(max(deadline - time.monotonic(), 0))
    hung = [p for p in procs if p.exitcode is None]
    for p in hung:
        p.kill()
    assert not hung, f"{len(hung)} of {len(jobs)} jobs still waiting after 60 s: deadlocked"
    assert [p.exitcode for p in procs] == [0] * len(jobs), "a job failed (see its stderr)"
    return [json.loads(r.read_text()) for r in records.iterdir()]


def test_jobs_on_one_link_never_hold_their_gpus_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """device: all on two GPUs: the interconnect job of each GPU uses the other one too, so it excludes the other
    GPU's interconnect job and every job on either GPU; started together, none deadlocks, although GPU 0's UUID
    sorts after GPU 1's (a job taking its own GPU first, then its peer, would)."""
    uuids = [UUIDS[2], UUIDS[1]]
    fake_gpus(monkeypatch, tmp_path, uuids)
    peers, alone = family_offsets("interconnect", "peer_copy"), family_offsets("latency", "float")
    assert peers == {0, 1} and alone == {0}
    records = run_gpu_jobs(tmp_path, [(i, peers) for i in (0, 1)] * 3 + [(i, alone) for i in (0, 1)] * 2)
    used = [({(i + o) % 2 for o in offsets}, began, ended) for i, offsets, began, ended in records]
    clashes = [(a, b) for n, a in enumerate(used) for b in used[n + 1 :] if a[0] & b[0] and a[1] < b[2] and b[1] < a[2]]
    assert len(used) == 10 and not clashes, f"jobs held one GPU at once: {clashes}"


def test_jobs_on_different_gpus_still_run_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A one-GPU job on each GPU holds only its own: both hold theirs at once; so does an interconnect job on GPUs 0
    and 1 beside a one-GPU job on GPU 2."""
    fake_gpus(monkeypatch, tmp_path, UUIDS)
    peers, alone = family_offsets("interconnect", "peer_latency"), family_offsets("latency", "float")
    run_gpu_jobs(tmp_path / "alone", [(0, alone), (1, alone)], meet=True)
    run_gpu_jobs(tmp_path / "beside", [(0, peers), (2, alone)], meet=True)


def test_a_job_uses_its_peers_counted_from_its_own_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Peer GPUs wrap around the host's devices, one of another model included; a peer index the host lacks is a
    static point, which uses no GPU."""
    fake_gpus(monkeypatch, tmp_path, UUIDS)
    mixed = [UUIDS[0], None, UUIDS[2]]  # device 1 of another model: no job runs there, a peer may use it
    assert gpu_stage._used_gpus(mixed, {0, 1}) == [set(UUIDS[:2]), None, {UUIDS[2], UUIDS[0]}]
    assert gpu_stage._used_gpus(mixed, {0}) == [{UUIDS[0]}, None, {UUIDS[2]}]
    fake_gpus(monkeypatch, tmp_path, UUIDS[:1])
    assert gpu_stage._used_gpus(UUIDS[:1], {0, 1}) == [{UUIDS[0]}]


def test_a_held_peer_is_waited_for_then_named(tmp_path: Path) -> None:
    """A job that also uses a GPU another job holds waits for it holding its own, then fails naming the holder
    and releases its own GPU; once the peer is free it holds both."""
    with slots.acquire(UUIDS[1:2], tmp_path) as index:
        assert index == 0
        held = rf"GPU {UUIDS[1]}, which this job also uses, still held after 0 s: {UUIDS[1]} \(pid {os.getpid()}\)"
        with pytest.raises(SmdissectError, match=held), slots.acquire([UUIDS[:2]], tmp_path, wait_s=0.3):
            pass
        with slots.acquire(UUIDS[:1], tmp_path, wait_s=0) as index:
            assert index == 0
    with slots.acquire([UUIDS[:2]], tmp_path, wait_s=0) as index:
        assert index == 0


HOLD = """import sys, time
from smdissect.measure import slots
from smdissect.core.errors import exit_on_error

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


class FakeNvml:
    """pynvml as device reads clocks through it: a handle per UUID, a clock per NVML_CLOCK_* constant."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2

    def __init__(self, known: bool = True) -> None:
        self.known, self.asked = known, []

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> int:
        self.asked.append(uuid)
        if not self.known:
            raise LookupError("NVML_ERROR_NOT_FOUND")  # no such GPU
        return 7

    def nvmlDeviceGetClockInfo(self, handle: int, clock: int) -> int:
        self.asked.append((handle, clock))
        return {1: 1755, 2: 2619}[clock]


def test_clocks_are_read_through_nvml_by_uuid(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    assert device.sm_clock_mhz(UUIDS[1]) == 1755.0 and device.mem_clock_mhz(UUIDS[1]) == 2619.0
    assert nvml.asked == [UUIDS[1], (7, 1), UUIDS[1], (7, 2)]
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(known=False))
    assert math.isnan(device.sm_clock_mhz(UUIDS[1]))
    assert device.nvml_uuid(bytes(range(16))) == "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"


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
    with gpu_stage._device("0") as index:
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
