"""Each category's own sections of its page: one module per category, found here by the CATEGORY it declares, whose
`sections` meets one contract, `View`: a function of the category's tables that returns its titled sections, placed
after the findings. A category without a module has the sections every page has, and no others."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Protocol

import pandas as pd

from ...core.categories import declared
from ...core.errors import SmdissectError

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


@functools.cache
def views() -> dict[str, View]:
    """Every view module's `sections`, checked against View, by the category the module declares (CATEGORY)."""
    return {category: checked(module.sections) for category, module in declared(__name__, __path__).items()}


def view_of(category: str) -> View:
    """The view of a category: its module's sections, or only the common ones where it has no module."""
    return views().get(category, common_only)
