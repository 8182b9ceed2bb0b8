"""What every stage's command shares: its options as the CLI declares them, and the tables it reads."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

Command = Callable[[argparse.Namespace], None]
# A command's options: a name (a required string), or (name, argparse keywords); `reads` adds a --<kind> option per
# table kind it reads (tables.TABLES).
Options = list[str | tuple[str, dict[str, Any]]]
MANY: dict[str, Any] = {"nargs": "*", "default": []}


def inputs(args: argparse.Namespace) -> dict[str, list[Path]]:
    """The files of each table kind the stage reads (its `reads`), from its --<kind> options."""
    return {kind: [Path(p) for p in getattr(args, kind)] for kind in args.reads}
