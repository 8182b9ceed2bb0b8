"""The measured GPU as data: every field of the seed paper's machine-readable appendix filled from a run's figures
(reference/model_fields.yaml says from which) into reports/<gpu>/model.json, checked against model.schema.json."""

from __future__ import annotations

import fnmatch
import json
import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pandas as pd

from .. import __version__
from ..core import archs, catalog, tables
from ..core.appendix import APPENDIX, APPENDIX_SOURCE, Field, appendix
from ..core.errors import SmdissectError
from ..core.files import write_text
from . import paper, paper_accounting, paper_formulas

FIELDS = "reference/model_fields.yaml"
SCHEMA_PATH = Path(__file__).with_name("model.schema.json")
ABSENT = "not measured"  # the status of a field that the map gives a reason

# Why a field has no value: the paper map's reasons that apply to a parameter, and two of the model's own.
REASONS = {
    **{k: paper.REASONS[k] for k in ("sm_120-only feature", "property of the paper", "not measurable by software")},
    "fixed by the instruction encoding": paper.REASONS["fixed by the instruction encoding"],
    "no case measures it": "no smdissect case measures this quantity on any arch yet",
    "label or formula": "the appendix gives a name, formula or yes/no here, not a measured number",
}
# Formulas a field may be derived by: the paper map's, and the conversions of a rate to the appendix's intervals.
FORMULAS: dict[str, paper_formulas.Formula] = {
    **paper_formulas.FORMULAS,
    "per_scheduler": paper_formulas.Formula(
        1, False, lambda f: archs.SCHEDULERS / float(f[0]["value"].iloc[0]), f"{archs.SCHEDULERS} schedulers / {{0}}"
    ),
    "per_sm": paper_formulas.Formula(
        1, False, lambda f: float(f[0]["value"].iloc[0]) / archs.SCHEDULERS, f"{{0}} / {archs.SCHEDULERS} schedulers"
    ),
    "reciprocal": paper_formulas.Formula(1, False, lambda f: 1 / float(f[0]["value"].iloc[0]), "1 / {0}"),
}
_ENTRY = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "tie": paper._REF,
        "derived": {"enum": list(FORMULAS)},
        "of": {"type": "array", "items": paper._REF, "minItems": 1},
        "factor": {"type": "number"},
        "unit": {"type": "string"},
        "reason": {"enum": list(REASONS)},
        "note": {"type": "string"},
    },
    "oneOf": [{"required": ["tie"]}, {"required": ["derived", "of"]}, {"required": ["reason"]}],
}
FIELDS_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["fields"],
    "properties": {"fields": {"type": "object", "additionalProperties": _ENTRY}},
}
# A check's text starts 'name: verdict (' (figure_model.Check.text); the figures table joins them with '; '.
_CHECK = re.compile(r"; (?=[\w .,/()+-]+: (?:agree|disagree|n/a) \()")


# --- the map: appendix field -> figures ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """How the map fills one field: a figure (one ref), a formula over refs times a factor in a unit, or a reason."""

    key: str
    refs: tuple[paper.Ref, ...] = ()
    formula: str = ""
    factor: float = 1.0
    unit: str = ""
    reason: str = ""
    note: str = ""


def _entry(key: str, spec: dict[str, Any], cases: dict[str, catalog.Case]) -> Entry:
    """One entry of the map, its refs checked against the manifests and derivers."""
    where = f"{Path(FIELDS).name}: {key}"
    rule = FORMULAS.get(spec.get("derived", ""))
    specs = [spec["tie"]] if "tie" in spec else spec.get("of", [])
    if rule and rule.arity is not None and len(specs) != rule.arity:
        raise SmdissectError(f"{where}: {spec['derived']} takes {rule.arity} figures, `of` lists {len(specs)}")
    refs = tuple(paper._ref(s, cases, where) for s in specs)
    return Entry(
        key,
        refs,
        spec.get("derived", ""),
        float(spec.get("factor", 1.0)),
        spec.get("unit", ""),
        spec.get("reason", ""),
        spec.get("note", ""),
    )


def entries(kernels: Path, path: Path | None = None) -> dict[str, Entry]:
    """Every appendix field with its entry in the map (`path`, default reference/model_fields.yaml): its own key,
    else the longest pattern that matches it. A field no entry covers, a key no field has and a pattern that
    matches nothing are one-line errors."""
    path = path or kernels.parent / FIELDS
    spec = paper.read_map(path, FIELDS_SCHEMA)
    cases = {c.ref: c for c in catalog.load_all(kernels, catalog.categories(kernels))}
    mapped = {k: _entry(k, v, cases) for k, v in spec["fields"].items()}
    fields = list(appendix(kernels.parent))
    patterns = [k for k in mapped if any(ch in k for ch in "*?[")]
    unknown = [k for k in mapped if k not in patterns and k not in fields]
    unused = [p for p in patterns if not fnmatch.filter(fields, p)]
    if unknown or unused:
        raise SmdissectError(f"{path.name} names no field of {APPENDIX}: {', '.join(unknown + unused)}: fix the keys")
    out = {}
    for f in fields:
        key = f if f in mapped else max((p for p in patterns if fnmatch.fnmatchcase(f, p)), key=len, default=None)
        if key is None:
            raise SmdissectError(f"{f} of {APPENDIX} is in no entry of {path.name}: add a tie, derived or reason")
        out[f] = mapped[key]
    return out


# --- one parameter -----------------------------------------------------------------------------------------------

PROVENANCE = {"runs": "run_id", "commits": "commit", "cards": "gpu_uuid"}  # a parameter's provenance: figure column


def _figure(f: pd.Series) -> dict[str, Any]:
    """One figure as a parameter's evidence: what it is, its value, status, method and checks."""
    return {
        "category": str(f["category"]),
        "case": str(f["case"]),
        "figure": str(f["figure"]),
        "metric": str(f["metric"]),
        "params": str(f["params"]),
        "value": float(f["value"]),
        "unit": str(f["unit"]),
        "spread": _number(f["spread"]),
        "status": str(f["status"]),
        "method": str(f["method"]),
        "derivation": str(f["derivation"]),
        "checks": [c for c in _CHECK.split(str(f["checks"] or "")) if c],
        "clock_mhz": _number(f["clock_mhz"]),
    }


def _number(value: object) -> float | None:
    """A finite float, or None."""
    return float(value) if value is not None and pd.notna(value) and math.isfinite(float(value)) else None


def _scaled_spread(found: list[pd.DataFrame], value: float) -> float | None:
    """A formula over one figure keeps that figure's spread as a share of its value; over several, no one spread."""
    if len(found) != 1 or len(found[0]) != 1:
        return None
    base, spread = float(found[0]["value"].iloc[0]), _number(found[0]["spread"].iloc[0])
    return None if spread is None or base == 0 or not math.isfinite(value) else abs(value) * spread / abs(base)


def _names(found: list[pd.DataFrame], column: str) -> list[str]:
    """The distinct values of a provenance column over the figures."""
    return sorted({str(v) for f in found for v in f[column]})


def parameter(
    entry: Entry, field: Field, figures: pd.DataFrame, status: pd.DataFrame | None, arch: str, kernels: Path
) -> dict[str, Any]:
    """One field's parameter: the figure (or formula over figures) that measures it, in the appendix's unit where
    the two convert, with spread, status, evidence and provenance; or null with why."""
    note = {"note": entry.note} if entry.note else {}
    if entry.reason:
        why = f"{entry.reason}: {REASONS[entry.reason]}"
        return {"value": None, "unit": field.unit, "status": ABSENT, "reason": why} | note
    rule = FORMULAS.get(entry.formula)
    found = [paper_accounting.matches(figures, r) for r in entry.refs]
    for ref, f in zip(entry.refs, found, strict=True):
        if f.empty:
            state, why = paper_accounting.absent(ref, status, arch, kernels)
            return {"value": None, "unit": field.unit, "status": state, "reason": why} | note
        if len(f) > 1 and not (rule and rule.many):
            raise SmdissectError(
                f"{field.id}: {len(f)} figures match {ref.text()}: name one with `at` or `figure` in {FIELDS}"
            )
    first = found[0].iloc[0]
    if rule is None:
        value, spread, unit = float(first["value"]), _number(first["spread"]), str(first["unit"])
        factor = paper_accounting.UNIT_FACTORS.get((unit, field.unit)) if field.unit and unit != field.unit else None
        if factor is not None:
            value, spread, unit = value * factor, None if spread is None else spread * factor, field.unit
        state, why = str(first["status"]), str(first["reason"])
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            value = rule.compute(found) * entry.factor
        unit = entry.unit or field.unit
        if not math.isfinite(value):
            why = f"{evidence_text(entry)} gives no finite number on this run's figures"
            return {"value": None, "unit": field.unit, "status": "missing", "reason": why} | note
        spread = _scaled_spread(found, value)
        statuses = [str(s) for f in found for s in f["status"]]
        state = tables.worst_status(statuses)
        why = f"the worst status of the {len(statuses)} figures it stands on"
    evidence: dict[str, Any] = {
        "how": "derived" if rule else "tie",
        "figures": [_figure(r) for f in found for _, r in f.iterrows()],
    }
    if rule:
        evidence["formula"] = evidence_text(entry)
    return {
        "value": value,
        "unit": unit,
        "spread": spread,
        "status": state,
        "reason": why,
        **note,
        "evidence": evidence,
        "provenance": {k: _names(found, c) for k, c in PROVENANCE.items()},
    }


def evidence_text(entry: Entry) -> str:
    """How a derived field is computed, its refs named: 'lowest of a, b, x 100'."""
    names = [r.text() for r in entry.refs]
    factor = f", x {entry.factor:g}" if entry.factor != 1 else ""
    return FORMULAS[entry.formula].text.format(*names, all=", ".join(names)) + factor


# --- the model -----------------------------------------------------------------------------------------------------


def build(figures: pd.DataFrame, status: pd.DataFrame | None, where: str, kernels: Path) -> dict[str, Any]:
    """The model of the GPU whose figures these are (`where` names the tables in its provenance)."""
    if figures.empty:
        raise SmdissectError(f"{where} holds no figures: run `snakemake --cores all tables` for that GPU first")
    fields = appendix(kernels.parent)
    arch = str(figures["arch"].iloc[0])
    sections: dict[str, dict[str, Any]] = {}
    for fid, entry in entries(kernels).items():
        field = fields[fid]
        sections.setdefault(field.group, {})[field.name] = parameter(entry, field, figures, status, arch, kernels)
    params = [p for s in sections.values() for p in s.values()]
    first = figures.iloc[0]
    return {
        "schema": schema()["$id"],
        "gpu": {k: str(first[k]) for k in ("arch", "driver", "cuda")} | {"name": str(first["gpu"])},
        "provenance": {
            "exporter": f"smdissect {__version__} export",
            "tables": where,
            "fields": FIELDS,
            "appendix": f"{APPENDIX} ({APPENDIX_SOURCE})",
            **{k: sorted(set(figures[c].astype(str))) for k, c in PROVENANCE.items()},
        },
        "counts": {s: sum(p["status"] == s for p in params) for s in dict.fromkeys(p["status"] for p in params)},
        "sections": sections,
    }


@cache
def schema() -> dict[str, Any]:
    """The model's JSON Schema (model.schema.json beside this module)."""
    return json.loads(SCHEMA_PATH.read_text())


def version() -> str:
    """The schema version a model file names ('1.0.0'), the last part of its $id."""
    return schema()["$id"].rsplit(":", 1)[1]


def validate(model: Any, where: str = "model") -> None:
    """Check a model against the schema; the first error is one line naming where it is."""
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema()).iter_errors(model))
    if error is not None:
        at = "/".join(map(str, error.absolute_path)) or "(top)"
        raise SmdissectError(f"{where}: {at}: {error.message} (it does not follow {schema()['$id']}): re-export it")


def read(path: Path) -> dict[str, Any]:
    """A model file, validated; an unreadable or invalid one is a one-line error."""
    try:
        model = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise SmdissectError(f"{path} is not a readable model file ({err}): re-run `smdissect export`") from err
    validate(model, str(path))
    return model


def export(folder: Path, out: Path, kernels: Path) -> dict[str, Any]:
    """Write the model of the figures under `folder` (results/<gpu>/ or reports/<gpu>/tables/) to `out`."""
    figures = tables.read("figures", tables.find("figures", folder))
    status = tables.read("status", tables.find("status", folder))
    model = build(figures, status, folder.as_posix(), kernels)
    validate(model, str(out))
    write_text(out, json.dumps(model, indent=1, allow_nan=False) + "\n")
    return model


def parameters(model: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every parameter of a model by field id (section.name)."""
    return {f"{s}.{name}": p for s, params in model["sections"].items() for name, p in params.items()}
