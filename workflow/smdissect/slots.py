"""Device slots: concurrent GPU jobs on one host each get a GPU of their own, never one another's.

One lock file per GPU UUID (UUIDs are what NVML and every CUDA_VISIBLE_DEVICES setting agree on), in one folder
per host that every checkout and user shares, held with fcntl.flock for the job's GPU work (its Python start and
table writes stay outside, so a second admitted job overlaps them): the kernel releases it when the holder exits or
dies, so a crashed job never leaves a GPU locked.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from .errors import SmdissectError

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


@contextmanager
def acquire(
    uuids: Sequence[str | None], locks: Path | None = None, wait_s: float = WAIT_S, poll_s: float = POLL_S
) -> Iterator[int]:
    """Hold a free GPU for the block and yield its CUDA index: `uuids[i]` is CUDA device i (None: not eligible).

    Waits up to `wait_s` seconds while every eligible GPU is held by another job, then fails with one line.
    """
    folder = locks or lock_dir()
    _make_folder(folder)
    candidates = [(i, folder / f"{u}.lock") for i, u in enumerate(uuids) if u]
    if not candidates:
        raise SmdissectError("no GPU of the configured model is visible: check CUDA_VISIBLE_DEVICES and nvidia-smi")
    deadline = time.monotonic() + wait_s
    while True:
        for index, path in candidates:
            fd = _try_lock(path)
            if fd is not None:
                try:
                    yield index
                finally:
                    os.close(fd)  # closing the last descriptor releases the flock
                return
        if time.monotonic() >= deadline:
            raise SmdissectError(
                f"no free GPU after {wait_s:.0f} s, all {len(candidates)} held: "
                f"{_holders([p for _, p in candidates])}; lower --resources gpu= or wait for those jobs"
            )
        time.sleep(poll_s)
