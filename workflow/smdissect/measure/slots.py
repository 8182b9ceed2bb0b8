"""Device slots: concurrent GPU jobs on one host each get a GPU of their own, never one another's.

One lock file per GPU UUID (UUIDs are what NVML and every CUDA_VISIBLE_DEVICES setting agree on), in one folder
per host that every checkout and user shares, held with fcntl.flock for the job's GPU work (its Python start and
table writes stay outside, so a second admitted job overlaps them): the kernel releases it when the holder exits or
dies, so a crashed job never leaves a GPU locked. A job that also uses other GPUs (interconnect's peers) holds
their locks too, so no two jobs measure one link at once.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path

from ..core.errors import SmdissectError

# One folder per host, whatever the checkout, the user or $TMPDIR, so that two snakemake runs never share a GPU.
LOCK_DIR = Path("/tmp/smdissect-gpu-locks")
LOCK_DIR_ENV = "SMDISSECT_GPU_LOCKS"  # overrides LOCK_DIR (a folder every user of the GPUs can write)
WAIT_S = 3600.0  # how long a job waits for a free GPU before it fails
POLL_S = 0.02  # a waiting job takes the GPU within this of its release


def lock_dir() -> Path:
    """Where the per-GPU lock files live: $SMDISSECT_GPU_LOCKS, else /tmp/smdissect-gpu-locks/."""
    return Path(os.environ.get(LOCK_DIR_ENV) or LOCK_DIR)


def _make_folder(folder: Path) -> None:
    """The lock folder where it is missing; the host's default one writable by every user (sticky, as /tmp)."""
    try:
        folder.mkdir(parents=True)
    except FileExistsError:
        return
    except PermissionError as err:
        raise SmdissectError(
            f"cannot make the GPU lock folder {folder} ({err.strerror}): set {LOCK_DIR_ENV} to a "
            "folder every user of this host's GPUs can write"
        ) from None
    if folder == LOCK_DIR:
        folder.chmod(0o1777)


def _try_lock(path: Path) -> int | None:
    """An open descriptor holding the exclusive lock on `path`, or None if another process holds it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError as err:
        raise SmdissectError(
            f"cannot open the GPU lock {path} ({err.strerror}): set {LOCK_DIR_ENV} to a folder "
            "every user of this host's GPUs can write"
        ) from None
    with suppress(PermissionError):  # another user's lock file stays as it is
        os.fchmod(fd, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())  # who holds it, for the timeout message
    return fd


def _holders(paths: list[Path]) -> str:
    return ", ".join(f"{p.stem} (pid {p.read_text().strip() or '?'})" for p in paths if p.exists())


def _touched(gpu: str | Collection[str]) -> list[str]:
    """The UUIDs a job on one device holds, in the one order every job takes them (sorted)."""
    return [gpu] if isinstance(gpu, str) else sorted(set(gpu))


def _first(
    candidates: list[tuple[int, list[Path]]], held: ExitStack, deadline: float, wait_s: float, poll_s: float
) -> tuple[int, list[Path]]:
    """Take the first lock of a candidate device's locks as soon as one is free: (its index, the locks left)."""
    while True:
        for index, paths in candidates:
            fd = _try_lock(paths[0])
            if fd is not None:
                held.callback(os.close, fd)  # closing the last descriptor releases the flock
                return index, paths[1:]
        if time.monotonic() >= deadline:
            raise SmdissectError(
                f"no free GPU after {wait_s:.0f} s, all {len(candidates)} held: "
                f"{_holders([p[0] for _, p in candidates])}; lower --resources gpu= or wait for those jobs"
            )
        time.sleep(poll_s)


def _wait(path: Path, held: ExitStack, deadline: float, wait_s: float, poll_s: float) -> None:
    """Take the lock of a further GPU the job touches, holding the ones before it, as soon as it is free."""
    while (fd := _try_lock(path)) is None:
        if time.monotonic() >= deadline:
            raise SmdissectError(
                f"GPU {path.stem}, which this job also uses, still held after {wait_s:.0f} s: {_holders([path])}; "
                "wait for that job"
            )
        time.sleep(poll_s)
    held.callback(os.close, fd)


@contextmanager
def acquire(
    gpus: Sequence[str | Collection[str] | None],
    locks: Path | None = None,
    wait_s: float = WAIT_S,
    poll_s: float = POLL_S,
) -> Iterator[int]:
    """Hold a free GPU for the block and yield its CUDA index: `gpus[i]` is what a job on CUDA device i holds, its
    UUID or the UUIDs of every GPU it touches there, its peers' too (None: not eligible).

    A job touching several GPUs takes their locks in sorted UUID order, waiting for each while holding the ones
    before it, so no two jobs deadlock; all are released together. Waits up to `wait_s` seconds, then fails with
    one line.
    """
    folder = locks or lock_dir()
    _make_folder(folder)
    candidates = [(i, [folder / f"{u}.lock" for u in _touched(g)]) for i, g in enumerate(gpus) if g]
    if not candidates:
        raise SmdissectError("no GPU of the configured model is visible: check CUDA_VISIBLE_DEVICES and nvidia-smi")
    deadline = time.monotonic() + wait_s
    with ExitStack() as held:
        index, rest = _first(candidates, held, deadline, wait_s, poll_s)
        for path in rest:
            _wait(path, held, deadline, wait_s, poll_s)
        yield index
