"""A category's Python found, not listed: the modules of a package that declare the CATEGORY they serve."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from types import ModuleType

from .errors import SmdissectError


def declared(package: str, path: Iterable[str]) -> dict[str, ModuleType]:
    """Each module (or subpackage) of `package` that declares a CATEGORY, by that category; two declaring one
    category are a one-line error."""
    found: dict[str, ModuleType] = {}
    for info in sorted(pkgutil.iter_modules(path), key=lambda i: i.name):
        module = importlib.import_module(f"{package}.{info.name}")
        category = getattr(module, "CATEGORY", None)
        if category is None:
            continue
        if category in found:
            raise SmdissectError(
                f"{module.__name__} and {found[category].__name__} both declare CATEGORY = {category!r}: keep one"
            )
        found[category] = module
    return found
