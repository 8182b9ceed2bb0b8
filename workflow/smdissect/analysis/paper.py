"""The seed paper's map: each of its figures (reference/seed_sm120.csv) accounted for by a tie to the figure
measuring its counterpart on the running GPU, a derivation over measured figures (paper_formulas), or a reason
(reference/paper_map.yaml and the manifests' `paper:`), read and checked against the manifests and derivers."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pandas as pd
import yaml

from ..core import catalog
from ..core.config import load_yaml
from ..core.errors import SmdissectError
from . import derived
from .paper_formulas import FORMULAS

MAP = "reference/paper_map.yaml"
REFERENCE = "reference/seed_sm120.csv"

# Why a row of the paper has no counterpart here: the only reasons a map entry may give.
REASONS = {
    "sm_120-only feature": "a feature of sm_120 parts with no case here: nothing on another arch measures it",
    "needs two GPUs": "a path between two GPUs that no case can choose on a machine's topology",
    "property of the paper": "a number about the paper's own study (its counts, coverage, precision, advice)",
    "another GPU's column": "the paper's column for another GPU: set beside the running GPU's own figure, if any",
    "not measurable by software": "a design rating of the board that no API, counter or kernel reads",
    "fixed by the instruction encoding": "what the encoding or the compiler makes of the code, read from the SASS, "
    "not measured on the GPU",
}
COMPARED = "another GPU's column"  # the one reason that keeps a counterpart (the cross-generation finding)

_REF = {
    "type": "object",
    "additionalProperties": False,
    "required": ["case", "metric"],
    "properties": {
        "case": {"type": "string", "pattern": "^[a-z][a-z0-9_]*/[a-z][a-z0-9_]*$"},
        "metric": {"type": "string"},
        "figure": {"type": "string"},
        "at": {"type": "object", "additionalProperties": {"type": "integer"}},
    },
}
MAP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["sections", "rows"],
    "properties": {
        "sections": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["title"],
                "properties": {
                    "title": {"type": "string"},
                    "sec": {"type": "string"},
                    "sources": {"type": "array", "items": {"type": "string"}},
                    "ids": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
        "rows": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "tie": _REF,
                    "derived": {"type": "string"},
                    "of": {"type": "array", "items": _REF},
                    "factor": {"type": "number"},
                    "reason": {"type": "string"},
                    "note": {"type": "string"},
                },
            },
        },
    },
}


@dataclass(frozen=True)
class Ref:
    """One figure of the running GPU: a case's metric, narrowed to a point (`at`) or a figure name where it has
    several."""

    category: str
    case: str
    metric: str
    at: tuple[tuple[str, int], ...] = ()
    figure: str = ""

    def text(self) -> str:
        """'pipelines/ffma ilp_knee at warps=1' (or the figure's name)."""
        where = f" at {', '.join(f'{k}={v}' for k, v in self.at)}" if self.at else ""
        return self.figure or f"{self.category}/{self.case} {self.metric}{where}"


@dataclass(frozen=True)
class Entry:
    """How one row of the paper is accounted for: tied to a figure (one ref), derived (a formula over refs), or a
    reason (with a counterpart only for another GPU's column); `where` is the file that says so."""

    id: str
    where: str
    refs: tuple[Ref, ...] = ()
    formula: str = ""
    factor: float = 1.0
    reason: str = ""
    note: str = ""
    category: str = ""  # a deriver's row: the category whose figure stands for it (its refs are the figure's)

    @property
    def how(self) -> str:
        """tied, derived or reason."""
        return "reason" if self.reason else "derived" if self.formula else "tied"


def reference(kernels: Path) -> pd.DataFrame:
    """The paper's published figures (reference/seed_sm120.csv beside the kernels folder)."""
    path = kernels.parent / REFERENCE
    if not path.exists():
        raise SmdissectError(
            f"{path} not found: point --kernels at the checkout's kernels/ folder ({REFERENCE} lies beside it)"
        )
    return pd.read_csv(path)


def read_map(path: Path, schema: dict[str, Any] = MAP_SCHEMA) -> dict[str, Any]:
    """A map file (the paper's, or another `schema` describes), checked against it; a bad one is a one-line
    error."""
    try:
        data = load_yaml(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise SmdissectError(f"{path} is not readable YAML ({str(err).splitlines()[0]}): fix it") from err
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    if error is not None:
        raise SmdissectError(f"{path}: {'/'.join(map(str, error.absolute_path))}: {error.message}")
    return data


def named(cases: Iterable[catalog.Case]) -> dict[str, Entry]:
    """The rows a manifest (`paper:`) or a deriver (its PAPER dict: figure name -> row) ties: id -> its entry (a row
    several manifests name has the first metric of each of their cases)."""
    out: dict[str, Entry] = {}
    for c in (c for c in cases if c.paper):
        had = out.get(c.paper, Entry(c.paper, ""))
        where = ", ".join(w for w in (had.where, f"kernels/{c.category}/cases.yaml") if w)
        out[c.paper] = Entry(c.paper, where, (*had.refs, Ref(c.category, c.id, c.measures[0])))
    for category, module in derived.modules().items():
        where = f"workflow/{Path(module.__file__ or '').relative_to(Path(__file__).parents[1]).as_posix()}"
        for row in getattr(module, "PAPER", {}).values():
            out.setdefault(row, Entry(row, where, category=category))
    return out


def _ref(spec: dict[str, Any], cases: dict[str, catalog.Case], where: str) -> Ref:
    """One `{case, metric, at, figure}` of the map, checked against the manifests and the derivers."""
    case = cases.get(spec["case"])
    if case is None:
        raise SmdissectError(f"{where}: case {spec['case']} is in no kernels/*/cases.yaml: fix the case name")
    metric = spec["metric"]
    if metric not in case.measures and not derived.declares(case.category, metric):
        raise SmdissectError(
            f"{where}: {case.ref} has no metric {metric} (it measures {', '.join(case.measures)}, and "
            f"the {case.category} deriver declares none by that name): fix the metric"
        )
    for axis, value in spec.get("at", {}).items():
        if value not in case.sweep.get(axis, ()):
            raise SmdissectError(f"{where}: {case.ref} has no point {axis}={value} (its sweep: {case.sweep}): fix at")
    return Ref(case.category, case.id, metric, tuple(sorted(spec.get("at", {}).items())), spec.get("figure", ""))


def _entry(row: str, spec: dict[str, Any], cases: dict[str, catalog.Case], path: Path) -> Entry:
    """One row of the map, checked: exactly one of tie, derived, reason (another GPU's column may keep a tie or a
    derivation), a known reason, a known formula with as many refs as it takes."""
    where = f"{path.name}: {row}"
    reason, formula = spec.get("reason", ""), spec.get("derived", "")
    if reason and reason not in REASONS:
        raise SmdissectError(f"{where}: reason '{reason}' is not one of: {'; '.join(REASONS)}: use one of them")
    if "tie" in spec and formula:
        raise SmdissectError(f"{where}: gives both tie and derived: keep one")
    if not reason and "tie" not in spec and not formula:
        raise SmdissectError(f"{where}: is neither tied, derived nor given a reason: add a tie, derived or reason")
    if reason and reason != COMPARED and ("tie" in spec or formula):
        raise SmdissectError(f"{where}: only '{COMPARED}' keeps a counterpart: drop the reason or the counterpart")
    if formula and formula not in FORMULAS:
        raise SmdissectError(f"{where}: formula '{formula}' is not one of {', '.join(FORMULAS)}: use one of them")
    if "of" in spec and not formula:
        raise SmdissectError(f"{where}: `of` without `derived`: name the formula")
    specs = [spec["tie"]] if "tie" in spec else spec.get("of", [])
    arity = FORMULAS[formula].arity if formula else None
    if formula and (not specs or (arity is not None and len(specs) != arity)):
        raise SmdissectError(f"{where}: {formula} takes {arity or 'one or more'} figures, `of` lists {len(specs)}")
    refs = tuple(_ref(s, cases, where) for s in specs)
    return Entry(row, MAP, refs, formula, float(spec.get("factor", 1.0)), reason, spec.get("note", ""))


def load(kernels: Path, path: Path | None = None) -> dict[str, Entry]:
    """Every row of the paper's csv, in its order, with how it is accounted for: where a manifest or deriver ties
    it, else the map's entry; every row must be accounted for exactly once."""
    path = path or kernels.parent / MAP
    rows = read_map(path)["rows"]
    cases = {c.ref: c for c in catalog.load_all(kernels, catalog.categories(kernels))}
    tied = named(cases.values())
    ids = list(reference(kernels)["id"])
    twice = [f"{r} ({tied[r].where})" for r in rows if r in tied]
    if twice:
        raise SmdissectError(
            f"{path.name} repeats rows a manifest or deriver ties: {', '.join(twice)}: a fact lives "
            "in one place, drop them from the map"
        )
    unknown = sorted(set(rows) - set(ids))
    if unknown:
        raise SmdissectError(f"{path.name} names rows that are not in {REFERENCE}: {', '.join(unknown)}: fix the ids")
    missing = [r for r in ids if r not in rows and r not in tied]
    if missing:
        raise SmdissectError(
            f"{len(missing)} rows of {REFERENCE} are accounted for nowhere ({', '.join(missing[:5])}"
            f"{' ...' if len(missing) > 5 else ''}): add each to {path.name} with a tie, derived or "
            "reason"
        )
    mapped = {r: _entry(r, spec, cases, path) for r, spec in rows.items()}
    return {r: tied.get(r) or mapped[r] for r in ids}
