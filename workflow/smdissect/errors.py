"""One-line errors that name the fix: raised anywhere, printed once by the CLI or the Snakefile."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., object])


class SmdissectError(Exception):
    """A user-facing failure: its message is one line that says what is wrong and how to fix it."""


def exit_on_error(func: F) -> F:
    """Run `func`; on SmdissectError print `smdissect: <message>` and exit 1, never a traceback."""

    @wraps(func)
    def wrapper(*args: object, **kwargs: object) -> object:
        try:
            return func(*args, **kwargs)
        except SmdissectError as err:
            sys.exit(f"smdissect: {' '.join(str(err).split())}")

    return wrapper  # type: ignore[return-value]
