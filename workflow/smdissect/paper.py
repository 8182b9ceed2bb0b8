"""The seed paper on the running GPU: each of its figures (reference/seed_sm120.csv) accounted for by a tie to the
figure measuring its counterpart, a derivation over measured figures, or a reason (reference/paper_map.yaml and the
manifests' `paper:`); its test sections mapped to smdissect's categories; and a run's coverage beside the paper's."""

from __future__ import annotations

import fnmatch
import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pandas as pd
import yaml

from . import catalog, derived
from .appendix import appendix_for
from .config import load_yaml
from .derived import pipelines as pipes
from .errors import SmdissectError
from .tables import STATUS_RANK, parse_params, worst_status

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
GENERATION_AGREE = 0.10  # a paper's other-GPU figure (often printed as ~N) agrees with this run's within this share
COMPARED = "another GPU's column"  # the one reason that keeps a counterpart (the cross-generation finding)
PAPER_GPUS = {
    "sm_120": "RTX PRO 5000 (sm_120a)",
    "sm_120a": "RTX PRO 5000 (sm_120a)",
    "sm_90": "H100 (paper's SM 90 column)",
    "sm_100": "B200 (paper's SM 100 column)",
}
SAME_LATENCY = 0.05  # formats_sharing: a format shares the pipeline within this share of the first one's latency
# A figure's unit -> the paper's: the factor that converts a value (units equal: 1; absent: not comparable).
UNIT_FACTORS: dict[tuple[str, str], float] = {
    ("fraction", "%"): 100.0,
    ("ratio", "x"): 1.0,
    ("byte", "KB"): 2.0**-10,
    ("byte", "MB"): 2.0**-20,
    ("byte", "GB"): 2.0**-30,
    ("KB", "MB"): 2.0**-10,
    ("MHz", "GHz"): 1e-3,
    ("ns", "us"): 1e-3,
    ("cycle/way", "cycle"): 1.0,
    **{(u, "count"): 1.0 for u in ("warp", "loads", "ilp", "groups", "sm", "copies", "CTAs")},
}
COLUMNS = [
    "id",
    "quantity",
    "paper",
    "unit",
    "appendix",
    "appendix_field",
    "paper_gpu",
    "source",
    "accounted",
    "reason",
    "where",
    "category",
    "counterpart",
    "measured",
    "measured_unit",
    "status",
    "status_reason",
    "ratio",
    "note",
]

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


@dataclass(frozen=True)
class Formula:
    """A derivation: how many refs it takes (None: any), whether a ref may stand for several figures, the value from
    the refs' figures, how it reads ({0}.. the refs, {all} all of them), and whether it counts over the refs this run
    measured (all but the first may be absent)."""

    arity: int | None
    many: bool
    compute: Callable[[list[pd.DataFrame]], float]
    text: str
    partial: bool = False


def _value(found: pd.DataFrame) -> float:
    return float(found["value"].iloc[0])


def _values(frames: list[pd.DataFrame]) -> list[float]:
    return [float(v) for f in frames for v in f["value"]]


def formats_sharing(frames: list[pd.DataFrame]) -> float:
    """How many of the measured formats' latencies lie within SAME_LATENCY of the first one's."""
    first = _value(frames[0])
    return float(sum(abs(_value(f) - first) <= SAME_LATENCY * first for f in frames if len(f)))


def coissuing_pairs(frames: list[pd.DataFrame]) -> float:
    """Pairs of two different instruction classes whose sharing index is under derived.pipelines.PARTLY_INDEX."""
    pairs = [pipes.pair_figure_names(name) for f in frames for name in f.loc[f["value"] < pipes.PARTLY_INDEX, "figure"]]
    return float(sum(1 for p in pairs if p is not None and p[0] != p[1]))


FORMULAS: dict[str, Formula] = {
    "ratio": Formula(2, False, lambda f: _value(f[0]) / _value(f[1]), "{0} / {1}"),
    "percent": Formula(2, False, lambda f: 100 * _value(f[0]) / _value(f[1]), "100 x {0} / {1}"),
    "difference": Formula(2, False, lambda f: _value(f[0]) - _value(f[1]), "{0} - {1}"),
    "sum": Formula(2, False, lambda f: _value(f[0]) + _value(f[1]), "{0} + {1}"),
    "scaled": Formula(1, False, lambda f: _value(f[0]), "{0}"),
    "efficiency_over": Formula(3, False, lambda f: _value(f[0]) / _value(f[1]) / _value(f[2]), "({0} / {1}) / {2}"),
    "median": Formula(None, False, lambda f: float(np.median(_values(f))), "median of {all}"),
    "min": Formula(None, True, lambda f: min(_values(f)), "lowest of {all}"),
    "max": Formula(None, True, lambda f: max(_values(f)), "highest of {all}"),
    "spread": Formula(1, False, lambda f: float(f[0]["spread"].iloc[0]), "max - min of the samples of {0}"),
    "formats_sharing": Formula(
        None,
        False,
        formats_sharing,
        f"formats within {SAME_LATENCY:.0%} of the first's latency among those measured of {{all}}",
        partial=True,
    ),
    "coissuing_pairs": Formula(
        None,
        True,
        coissuing_pairs,
        f"pairs of two classes under a sharing index of {pipes.PARTLY_INDEX:g} among {{all}}",
        partial=True,
    ),
}


# --- the map: load and check -------------------------------------------------------------------------------------


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
        where = f"workflow/smdissect/derived/{Path(module.__file__ or '').name}"
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


def load(kernels: Path = catalog.KERNELS, path: Path | None = None) -> dict[str, Entry]:
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


# --- accounting: each row against this run's figures -------------------------------------------------------------


def _at(params: str, at: tuple[tuple[str, int], ...]) -> bool:
    """Whether a canonical-JSON point holds every axis value of `at`."""
    point = parse_params(params)
    return all(point.get(k) == v for k, v in at)


def _stands_at(figure: pd.Series, at: tuple[tuple[str, int], ...]) -> bool:
    """Whether a figure is taken at `at`: its point holds it, or (a figure over several points) every point it
    stands on does."""
    if figure["params"]:
        return _at(str(figure["params"]), at)
    points = json.loads(figure["points"] or "[]")
    return bool(points) and all(_at(p, at) for p in points)


def matches(figures: pd.DataFrame, ref: Ref) -> pd.DataFrame:
    """The figures of this run a ref names."""
    mine = figures[
        (figures["category"] == ref.category) & (figures["case"] == ref.case) & (figures["metric"] == ref.metric)
    ]
    if ref.figure:
        mine = mine[mine["figure"] == ref.figure]
    return mine[[_stands_at(f, ref.at) for _, f in mine.iterrows()]] if ref.at else mine


def absent(ref: Ref, status: pd.DataFrame | None, arch: str, kernels: Path) -> tuple[str, str]:
    """(status, why) of a ref with no figure: static or failed where the run says so, else why none was made."""
    if status is not None and len(status):
        rows = status[(status["category"] == ref.category) & (status["case"] == ref.case)]
        rows = rows.loc[[_at(p, ref.at) for p in rows["params"]]] if ref.at else rows
        for state in ("failed", "static"):
            hit = rows[rows["status"] == state]
            if len(hit):
                return state, str(hit["reason"].iloc[0])
        if len(rows):
            return "missing", (
                f"measured, but this run's figures hold no {ref.text()}: re-run the figures stage "
                f"(snakemake tables), or fix {MAP}"
            )
    case = next((c for c in catalog.load(kernels, ref.category) if c.id == ref.case), None)
    why = case.unsupported(arch) if case is not None and arch else None
    if why:
        return "static", f"not run: {why}"
    return "not run", f"no status row for {ref.category}/{ref.case}: the case is newer than this run"


def _convert(value: float, unit: str, to: str) -> float | None:
    """A value in another unit, None where the two are not comparable."""
    factor = 1.0 if unit == to else UNIT_FACTORS.get((unit, to))
    return None if factor is None else value * factor


def _counterpart(
    entry: Entry, figures: pd.DataFrame, status: pd.DataFrame | None, arch: str, unit: str, kernels: Path
) -> dict[str, Any]:
    """The measured side of one row: its figure (or the formula over its figures), in the paper's unit, with
    status and why."""
    found = [matches(figures, r) for r in entry.refs]
    rule = FORMULAS.get(entry.formula)
    many, partial = (rule.many, rule.partial) if rule else (False, False)
    for i, (ref, f) in enumerate(zip(entry.refs, found, strict=True)):
        if f.empty and not (partial and i):
            state, why = absent(ref, status, arch, kernels)
            return {"status": state, "status_reason": why}
        if len(f) > 1 and not many:
            return {
                "status": "ambiguous",
                "status_reason": f"{len(f)} figures match {ref.text()}: name one with `at` or `figure` in {MAP}",
            }
    first = found[0].iloc[0]
    statuses = [str(s) for f in found for s in f["status"]]
    if rule is None:
        value = _convert(float(first["value"]), str(first["unit"]), unit)
        return {
            "category": first["category"],
            "counterpart": first["figure"],
            "status": first["status"],
            "status_reason": first["reason"],
            "measured": float(first["value"]) if value is None else value,
            "measured_unit": str(first["unit"]) if value is None else unit,
        }
    names = [r.text() for r in entry.refs]
    how = rule.text.format(*names, all=", ".join(names))
    with np.errstate(divide="ignore", invalid="ignore"):
        value = rule.compute([f for f in found if len(f)]) * entry.factor
    return {
        "category": entry.refs[0].category,
        "counterpart": how + (f", x {entry.factor:g}" if entry.factor != 1 else ""),
        "status": worst_status(statuses),
        "status_reason": f"the worst status of the {len(statuses)} figures it stands on",
        "measured": value,
        "measured_unit": unit,
    }


def _named_figure(row: str, figures: pd.DataFrame) -> pd.DataFrame:
    """The figures that stand for a row a manifest or deriver names (its `paper` column), verified first."""
    mine = figures[figures["paper"].fillna("") == row]
    return mine.iloc[sorted(range(len(mine)), key=lambda i: STATUS_RANK.get(mine["status"].iloc[i], len(STATUS_RANK)))]


def account(
    entry: Entry,
    ref_row: pd.Series,
    figures: pd.DataFrame,
    status: pd.DataFrame | None,
    arch: str,
    kernels: Path = catalog.KERNELS,
) -> dict[str, Any]:
    """One row of the accounting table."""
    unit, paper = str(ref_row["unit"]), float(ref_row["value"])
    out: dict[str, Any] = {
        "id": entry.id,
        "quantity": ref_row["quantity"],
        "paper": paper,
        "unit": unit,
        "appendix": math.nan,
        "appendix_field": "",
        "paper_gpu": PAPER_GPUS.get(str(ref_row["arch"]), str(ref_row["arch"])),
        "source": ref_row["source"],
        "accounted": entry.how,
        "reason": entry.reason,
        "where": entry.where,
        "category": "",
        "counterpart": "",
        "measured": math.nan,
        "measured_unit": "",
        "status": "no counterpart",
        "status_reason": "",
        "ratio": math.nan,
        "note": entry.note,
    }
    if entry.where != MAP:  # tied by a manifest or deriver: the figure carrying its id
        stand = _named_figure(entry.id, figures)
        if not len(stand) and not entry.refs:
            return out | {"status": "missing", "status_reason": f"no figure of this run stands for it ({entry.where})"}
        f = stand.iloc[0] if len(stand) else None
        ref = Ref(f["category"], f["case"], f["metric"], figure=f["figure"]) if f is not None else entry.refs[0]
        entry = Entry(entry.id, entry.where, (ref,))
    if entry.refs:
        out |= _counterpart(entry, figures, status, arch, unit, kernels)
    elif entry.reason:
        out["status_reason"] = REASONS[entry.reason]
    later = appendix_for(entry.id, kernels.parent)  # the full study's appendix states it too: its value in our unit
    same_unit = later is not None and later.unit == unit and isinstance(later.value, float)
    out |= {"appendix": later.value if same_unit else math.nan, "appendix_field": later.id if later else ""}
    comparable = out["measured_unit"] == unit and paper != 0 and math.isfinite(out["measured"])
    out["ratio"] = out["measured"] / paper if comparable else math.nan
    return out


def accounting(
    figures: pd.DataFrame, reference: pd.DataFrame, status: pd.DataFrame | None = None, kernels: Path = catalog.KERNELS
) -> pd.DataFrame:
    """One row per figure of the paper: its value and GPU, how it is accounted for, the counterpart measured on this
    run (in the paper's unit where the two compare) with its status, the ratio measured / paper and a note where the
    two measure different things. `status` (the run's status tables) says why a counterpart was not measured."""
    entries = load(kernels)
    arch = str(figures["arch"].iloc[0]) if len(figures) else ""
    rows = [
        account(entries[r["id"]], r, figures, status, arch, kernels)
        for _, r in reference.iterrows()
        if r["id"] in entries
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """How the rows are accounted for (tied, derived, each reason) and what became of their counterparts."""
    kind = table["accounted"].where(table["accounted"] != "reason", "reason: " + table["reason"])
    counts = table.assign(kind=kind).pivot_table(
        index="kind", columns="status", values="id", aggfunc="size", fill_value=0
    )
    counts["rows"] = counts.sum(axis=1)
    return counts.reset_index().rename_axis(columns=None)


def cross_generation(table: pd.DataFrame) -> pd.DataFrame:
    """The paper's other-GPU columns beside the running GPU's own figures: the cross-generation finding, each
    marked whether the two agree within GENERATION_AGREE."""
    mine = table[(table["reason"] == COMPARED) & table["counterpart"].ne("")]
    mine = mine[["id", "quantity", "paper", "unit", "paper_gpu", "counterpart", "measured", "status", "ratio"]]
    agree = (mine["ratio"] - 1).abs() <= GENERATION_AGREE
    return mine.assign(verdict=agree.map({True: "agrees", False: "differs"}).where(mine["ratio"].notna(), ""))


# --- the paper's structure and coverage ---------------------------------------------------------------------------


def _in_section(section: dict[str, Any], row: pd.Series) -> bool:
    """Whether a row of the csv belongs to a section of the map (by its source or its id)."""
    return any(re.search(s, str(row["source"])) for s in section.get("sources", ())) or any(
        fnmatch.fnmatch(str(row["id"]), p) for p in section.get("ids", ())
    )


def _coverage_word(entries: list[Entry]) -> str:
    """covered (every row about a GPU has a counterpart), partly, not covered, or n/a (no such row)."""
    about_gpu = [e for e in entries if e.reason not in ("property of the paper",) and (e.reason != COMPARED or e.refs)]
    with_counterpart = [e for e in about_gpu if e.refs or e.where != MAP]
    if not about_gpu:
        return "n/a"
    if len(with_counterpart) == len(about_gpu):
        return "covered"
    return "partly" if with_counterpart else "not covered"


def structure(kernels: Path = catalog.KERNELS) -> pd.DataFrame:
    """The paper's test sections (reference/paper_map.yaml) with their rows, the smdissect categories and cases
    that measure their counterparts, how the rows are accounted for and whether the section is covered."""
    entries = load(kernels)
    ref = reference(kernels)
    out = []
    for section in read_map(kernels.parent / MAP)["sections"]:
        mine = [entries[r["id"]] for _, r in ref.iterrows() if _in_section(section, r)]
        refs = [r for e in mine for r in e.refs]
        categories = [r.category for r in refs] + [e.category for e in mine if e.category]
        hows = pd.Series([e.how if e.how != "reason" else f"reason: {e.reason}" for e in mine]).value_counts()
        out.append(
            {
                "section": section["title"],
                "sec": section.get("sec", ""),
                "rows": len(mine),
                "categories": ", ".join(dict.fromkeys(categories)),
                "cases": ", ".join(dict.fromkeys(f"{r.category}/{r.case}" for r in refs)),
                "accounted": "; ".join(f"{k} {v}" for k, v in hows.items()),
                "coverage": _coverage_word(mine),
            }
        )
    return pd.DataFrame(out)


def coverage(status: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """This run's planned points (case x parameter point) measured, static (with a reason) and failed, beside the
    paper's own categories, cases, trace items and coverage (its csv's coverage rows)."""
    paper = reference.set_index("id")["value"]
    run = status.drop_duplicates(["category", "case", "params"])
    counts = run["status"].value_counts()
    who = f"{run['gpu'].iloc[0]} ({run['arch'].iloc[0]})" if len(run) else "this run"
    planned = len(run)
    return pd.DataFrame(
        [
            {
                "who": who,
                "categories": run["category"].nunique(),
                "cases": len(run.drop_duplicates(["category", "case"])),
                "items": planned,
                "measured": int(counts.get("measured", 0)),
                "static": int(counts.get("static", 0)),
                "failed": int(counts.get("failed", 0)),
                "coverage %": 100 * counts.get("measured", 0) / planned if planned else math.nan,
            },
            {
                "who": "seed paper (RTX PRO 5000)",
                "categories": paper.get("coverage_categories_sm120", math.nan),
                "cases": paper.get("coverage_cases_min_sm120", math.nan),
                "items": paper.get("coverage_trace_items_sm120", math.nan),
                "measured": math.nan,
                "static": math.nan,
                "failed": math.nan,
                "coverage %": paper.get("coverage_percent_sm120", math.nan),
            },
        ]
    )


def unmeasured(status: pd.DataFrame) -> pd.DataFrame:
    """The planned points not measured on this run, grouped by case and reason (the reason's per-point prefix
    dropped), with how many points each."""
    rest = status[status["status"] != "measured"]
    why = [re.sub(r"^static: \S+ \{[^}]*\}: ", "", str(r)) for r in rest["reason"]]
    return (
        rest.assign(reason=why)
        .groupby(["category", "case", "status", "reason"], as_index=False)
        .agg(points=("params", "size"))
    )


def markdown(kernels: Path = catalog.KERNELS) -> str:
    """docs/paper-map.md: the paper's sections against smdissect's categories and cases, and how its rows are
    accounted for."""
    table = structure(kernels)
    entries = load(kernels)
    counts = pd.Series([e.how if e.how != "reason" else f"reason: {e.reason}" for e in entries.values()])
    lines = [
        "# The seed paper's structure in smdissect",
        "",
        f"Generated by `python -m smdissect paper_map --out docs/paper-map.md` from `{MAP}` (do not edit by hand).",
        "",
        f"The paper reports 21 test categories; its text and its {len(entries)} figures in `{REFERENCE}` name the "
        f"sections below. Each figure is tied to the case that measures its counterpart on the running GPU "
        "(a manifest's `paper:` or the map), derived from measured figures, or given a reason "
        "(`smdissect.paper.REASONS`); `smdissect.paper.accounting()` sets each beside this run's value.",
        "",
        "| paper section | sec | figures | smdissect categories | accounted | coverage |",
        "|---|---|---|---|---|---|",
        *(
            f"| {r.section} | {r.sec} | {r.rows} | {r.categories or '-'} | {r.accounted} | {r.coverage} |"
            for r in table.itertuples()
        ),
        "",
        "Coverage: *covered* where every figure of the section that is about a GPU has a counterpart here, *partly* "
        "where some have, *not covered* where none has, *n/a* where the section's figures are all about the paper.",
        "",
        "## How the figures are accounted for",
        "",
        "| how | figures |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in counts.value_counts().items()),
        "",
        "## Cases per section",
        "",
        *(f"- **{r.section}**: {r.cases or 'none'}" for r in table.itertuples()),
        "",
    ]
    return "\n".join(lines)
