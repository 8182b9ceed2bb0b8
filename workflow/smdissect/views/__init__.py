"""Each category's own sections of its page, registered here by category against one contract, `View`: a function
of the category's tables that returns its titled sections, placed after the findings."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Protocol

import pandas as pd

from ..errors import SmdissectError
from . import (  # async_: a keyword
    async_,
    attention,
    cluster,
    control,
    gemm,
    geometry,
    interconnect,
    launch,
    memory,
    pipelines,
    power,
    scheduler,
    sync,
    tensorcore,
)

# A category's tables by kind (raw, status, ncu, stalls, pipes, crossval, figures, sass, sass_checks, controlcodes),
# with `cases` (its manifest entries) and `reference` (the paper's figures); a kind that was not made is absent.
Frames = dict[str, pd.DataFrame]
Section = tuple[str, str]  # (title, HTML body); a section with an empty body is left out of the page


class View(Protocol):
    """What a page asks of a category's view: its sections, from its tables."""

    def __call__(self, frames: Frames, /) -> list[Section]: ...


def checked(view: Callable[..., object]) -> View:
    """`view` where its signature is the contract's, `(frames: Frames) -> list[Section]`; else a one-line error."""
    params = list(inspect.signature(view).parameters.values())
    try:
        hints = typing.get_type_hints(view)
    except (NameError, TypeError):  # an annotation that names nothing importable
        hints = {}
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    takes = len(params) == 1 and params[0].kind in positional and hints.get(params[0].name) == Frames
    if not takes or hints.get("return") != list[Section]:
        raise SmdissectError(
            f"view {view.__module__}.{view.__qualname__}{inspect.signature(view)} does not match View: it takes "
            "(frames: dict[str, pd.DataFrame]) and returns list[tuple[str, str]]"
        )
    return typing.cast(View, view)


def common_only(frames: Frames) -> list[Section]:
    """The view of a category whose page has only the sections every page has (findings, ILP curve, evidence)."""
    return []


VIEWS: dict[str, View] = {
    "async": checked(async_.sections),
    "attention": checked(attention.sections),
    "cluster": checked(cluster.sections),
    "control": checked(control.sections),
    "gemm": checked(gemm.sections),
    "geometry": checked(geometry.sections),
    "interconnect": checked(interconnect.sections),
    "latency": checked(common_only),
    "launch": checked(launch.sections),
    "memory": checked(memory.sections),
    "pipelines": checked(pipelines.sections),
    "power": checked(power.sections),
    "scheduler": checked(scheduler.sections),
    "sync": checked(sync.sections),
    "tensorcore": checked(tensorcore.sections),
}


def view_of(category: str) -> View:
    """The registered view of a category; a category without one is a one-line error that names the fix."""
    if category not in VIEWS:
        raise SmdissectError(
            f"category {category!r} has no view: register one in VIEWS (workflow/smdissect/views/__init__.py; "
            "`common_only` where it has no sections of its own)"
        )
    return VIEWS[category]
