"""One-line errors that name the fix: raised anywhere, printed once by the CLI or the Snakefile."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., object])


# What installs a module the package imports where its name is not its distribution's, and the pyproject extra
# ("" for the main dependencies) that brings it.
DISTRIBUTIONS = {
    "vl_convert": ("vl-convert-python", ""),
    "yaml": ("pyyaml", ""),
    "pynvml": ("nvidia-ml-py", ""),
    "cuda": ("cuda-bindings", ""),
    "ncu_report": ("ncu-report", ""),
    "torch": ("torch", "torch"),
    "cutlass_library": ("nvidia-cutlass", "gemm"),
}


class SmdissectError(Exception):
    """A user-facing failure: its message is one line that says what is wrong and how to fix it."""


def missing_module(name: str) -> str:
    """The one line for a dependency `name` this interpreter cannot import: the pip command that installs it."""
    top = name.split(".")[0]
    dist, extra = DISTRIBUTIONS.get(top, (top, ""))
    spec = f"'.[{extra}]'" if extra else "."
    return (
        f"the Python module {top} ({dist}) is missing from {sys.executable}: run `{sys.executable} -m pip "
        f"install -e {spec}` in the smdissect checkout"
    )


def exit_on_error(func: F) -> F:
    """Run `func`; on SmdissectError, or a missing dependency, print `smdissect: <message>` and exit 1, never a
    traceback."""

    @wraps(func)
    def wrapper(*args: object, **kwargs: object) -> object:
        try:
            return func(*args, **kwargs)
        except SmdissectError as err:
            sys.exit(f"smdissect: {' '.join(str(err).split())}")
        except ModuleNotFoundError as err:
            if not err.name or err.name.split(".")[0] == "smdissect":  # a module of this package: a bug, not setup
                raise
            sys.exit(f"smdissect: {missing_module(err.name)}")

    return wrapper  # type: ignore[return-value]
