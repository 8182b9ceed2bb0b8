"""The seed paper's machine-readable appendix (its later, full public version): the RTX PRO 5000's value of each
field, read from reference/seed_sm120_appendix.csv."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .errors import SmdissectError

APPENDIX = "reference/seed_sm120_appendix.csv"  # the appendix's values for the RTX PRO 5000, field by field
# Where the appendix was read: the full public version of the seed paper (text in the shared seed folder).
APPENDIX_SOURCE = "zartbot/micro_arch, nvidia/sm_120/19_appendix_b_machine_readable.html (Appendix B)"


@dataclass(frozen=True)
class Field:
    """One field of the appendix: its id (section.name), the RTX PRO 5000's value and unit, where the appendix
    cites it, the rows of the earlier summary (reference/seed_sm120.csv) that state the same quantity, and its
    notes."""

    id: str
    value: float | str | bool | None
    unit: str
    section: str
    citation: str
    summary: tuple[str, ...]
    note: str

    @property
    def group(self) -> str:
        """The appendix's section key (topology, l1_cache, ...)."""
        return self.id.split(".", 1)[0]

    @property
    def name(self) -> str:
        """The field's name within its section (instructions: class.INSTRUCTION.quantity)."""
        return self.id.split(".", 1)[1]


def _typed(text: str) -> float | str | bool | None:
    """A value as the csv spells it: empty is null, true/false booleans, numbers numbers, the rest text."""
    if text == "":
        return None
    if text in ("true", "false"):
        return text == "true"
    try:
        return float(text)
    except ValueError:
        return text


@cache
def appendix(root: Path) -> dict[str, Field]:
    """Every field of the appendix (reference/seed_sm120_appendix.csv under `root`), in its order."""
    path = root / APPENDIX
    if not path.exists():
        raise SmdissectError(f"{path} not found: point --kernels at the checkout's kernels/ folder")
    with path.open(newline="") as f:
        return {
            r["field"]: Field(
                r["field"],
                _typed(r["value"]),
                r["unit"],
                r["section"],
                r["citation"],
                tuple(r["summary"].split()),
                r["note"],
            )
            for r in csv.DictReader(f)
        }


def appendix_value(field: str, root: Path) -> Field:
    """The appendix's RTX PRO 5000 value of one field, with its unit and source (compare-paper shows it beside the
    earlier summary's figure where the two differ)."""
    found = appendix(root).get(field)
    if found is None:
        raise SmdissectError(f"{field} is no field of {APPENDIX}: use section.name as its first column spells it")
    return found


def appendix_for(summary_id: str, root: Path) -> Field | None:
    """The appendix field that states the same quantity as a row of the earlier summary (reference/seed_sm120.csv),
    or None where the appendix has none."""
    return next((f for f in appendix(root).values() if summary_id in f.summary), None)
