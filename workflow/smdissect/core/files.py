"""Atomic file writes: an output appears whole or not at all, so a failed or killed job never leaves half a file."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import SmdissectError


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[str]:
    """Yield a temp file beside `path`; it replaces `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; results are as readable as any other output
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write a text file atomically, like every output."""
    with atomic_path(path) as tmp:
        Path(tmp).write_text(text)


def markers(name: str) -> tuple[str, str]:
    """The comment lines that enclose a generated block of a Markdown file."""
    return f"<!-- {name}: start -->", f"<!-- {name}: end -->"


def replace_block(path: Path, name: str, block: str) -> bool:
    """Put `block` between the `<!-- name: start -->` and `<!-- name: end -->` markers of a text file; whether the
    file changed (a missing marker is a one-line error)."""
    start, end = markers(name)
    text = path.read_text()
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(text):
        raise SmdissectError(f"{path} has no {start} ... {end} block: add the two markers where the table goes")
    new = pattern.sub(lambda _: f"{start}\n{block}\n{end}", text)
    if new != text:
        write_text(path, new)
    return new != text
