"""The case manifests (kernels/<category>/cases.yaml): load, validate, expand sweeps, check arch support."""

from __future__ import annotations

import importlib.util
import itertools
import re
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import jsonschema
import yaml

from .config import load_yaml
from .errors import SmdissectError
from .features import FEATURES
from .manifest_schema import CASE_REQUIRED, HEADER_PACKAGES, MANIFEST_SCHEMA

KERNELS = Path(__file__).resolve().parents[3] / "kernels"  # the checkout's manifests


@dataclass(frozen=True)
class Case:
    """One manifest entry: everything the pipeline knows about a case."""

    category: str
    id: str
    source: str
    ptx: str
    measures: tuple[str, ...]
    sweep: dict[str, list[int]]
    sass_expect: dict[str, list[str]]
    sass_forbid: tuple[str, ...] = ()
    sass_loop: str = "between"
    sass_arch: dict[str, dict[str, Any]] = field(default_factory=dict)  # arch -> its own expect/forbid and why
    kind: str = "chain"
    profile_sweep: dict[str, list[int]] | list[dict[str, list[int]]] | None = None
    unprofiled: str = ""
    min_sm: int = 0
    features: tuple[str, ...] = ()
    pipe: str | None = None
    stall: str | None = None
    tolerance: float = 0.05
    paper: str | None = None
    explain: dict[str, str] = field(default_factory=dict)
    method: str = ""
    figures: dict[str, str | dict[str, str]] = field(default_factory=dict)
    saturate: tuple[str, ...] = ()
    peak: str | None = None
    rate: str | None = None
    built_from: tuple[str, ...] = ()
    same_as: tuple[dict[str, Any], ...] = ()

    @property
    def ref(self) -> str:
        """'<category>/<id>': how another category's manifest names this case."""
        return f"{self.category}/{self.id}"

    def refer(self, name: str) -> str:
        """A case reference of this manifest (`id` or `category/id`) as '<category>/<id>'."""
        return name if "/" in name else f"{self.category}/{name}"

    @property
    def family(self) -> str:
        """The binary this case lives in: its .cu file's stem."""
        return Path(self.source).stem

    def points(self, sweep: dict[str, list[int]] | None = None) -> list[dict[str, int]]:
        """The cross product of `sweep` (default: the case's own), as parameter dicts in a stable order."""
        sweep = sweep or self.sweep
        keys = sorted(sweep)
        return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(sweep[k] for k in keys))]

    def profiled_sweeps(self) -> list[dict[str, list[int]]]:
        """The sweeps the ncu run uses: each `profile_sweep` narrowing over the full sweep's axes, else the sweep."""
        narrowing = self.profile_sweep or {}
        return [self.sweep | n for n in (narrowing if isinstance(narrowing, list) else [narrowing])]

    def profiled_points(self) -> list[dict[str, int]]:
        """Every point ncu profiles, over all of the case's profiled sweeps."""
        return [p for sweep in self.profiled_sweeps() for p in self.points(sweep)]

    def on(self, arch: str) -> Case:
        """This case's SASS claims as they stand on `arch`: its manifest's `sass.arch` entry for it sets the count
        of each opcode it names (null: none expected) and replaces the forbidden opcodes where it gives them."""
        own = self.sass_arch.get(arch)
        if own is None:
            return self
        expect = {k: v for k, v in (self.sass_expect | _expectations(own.get("expect", {}))).items() if v}
        return replace(self, sass_expect=expect, sass_forbid=tuple(own.get("forbid", self.sass_forbid)))

    def unsupported(self, arch: str) -> str | None:
        """Why this case cannot run on `arch`, or None when it can."""
        sm = sm_version(arch)
        if sm < self.min_sm:
            return f"needs sm_{self.min_sm} or newer, {arch} is older"
        missing = [f for f in self.features if sm not in FEATURES[f]]
        if missing:
            return f"{arch} lacks {', '.join(missing)}"
        return None


def sm_version(arch: str) -> int:
    """90 for 'sm_90a', 120 for 'sm_120a'."""
    match = re.fullmatch(r"sm_(\d+)[af]?", arch)
    if not match:
        raise SmdissectError(f"arch '{arch}' is not of the form sm_XX[a] (e.g. sm_90a, sm_120a)")
    return int(match.group(1))


def categories(kernels: Path) -> list[str]:
    """Every category: a folder of `kernels` holding a cases.yaml."""
    return sorted(p.parent.name for p in kernels.glob("*/cases.yaml"))


@cache
def manifest(kernels: Path, category: str) -> dict[str, Any]:
    """A category's cases.yaml, validated against MANIFEST_SCHEMA, its cases merged with their defaults; a bad one
    is a one-line error."""
    path = kernels / category / "cases.yaml"
    if not path.exists():
        known = ", ".join(categories(kernels)) or "none"
        raise SmdissectError(f"unknown category '{category}' (known: {known}): fix categories in config/config.yaml")
    try:
        data = load_yaml(path.read_text())
    except yaml.YAMLError as err:
        raise SmdissectError(f"{path} is not valid YAML ({str(err).splitlines()[0]})") from err
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(MANIFEST_SCHEMA).iter_errors(data))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path)
        raise SmdissectError(f"{path}: {where}: {error.message}")
    if data["category"] != category:
        raise SmdissectError(f"{path}: category is '{data['category']}', expected the folder name '{category}'")
    stray = sorted(set(data.get("families", {})) - {Path(c["source"]).stem for c in data["cases"]})
    if stray:
        raise SmdissectError(f"{path}: families: {', '.join(stray)} name no case's source (its file's stem)")
    cases = [merged(data, entry) for entry in data["cases"]]
    for i, case in enumerate(cases):
        missing = [k for k in CASE_REQUIRED if k not in case]
        if missing:
            raise SmdissectError(f"{path}: cases/{i} ({case['id']}): '{missing[0]}' is a required property")
        _says_why_unprofiled(path, data, i, case)
    return data | {"cases": cases}


def _says_why_unprofiled(path: Path, data: dict[str, Any], i: int, case: dict[str, Any]) -> None:
    """A case of a family that is not profiled says why no counter can check it (`unprofiled`), or a one-line error."""
    family = Path(case["source"]).stem
    if data.get("families", {}).get(family, {}).get("profile", True) or "unprofiled" in case:
        return
    raise SmdissectError(
        f"{path}: cases/{i} ({case['id']}): family {family} is not profiled: say why no counter can check it in "
        "'unprofiled' (the case's or its family's defaults)"
    )


def merged(data: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """A case entry over its family's defaults over the category's: each key it sets replaces the default whole,
    and null takes a default back (the key is then as if never given)."""
    family = data.get("families", {}).get(Path(entry["source"]).stem, {})
    keys = data.get("defaults", {}) | family.get("defaults", {}) | entry
    return {k: v for k, v in keys.items() if v is not None}


def load(kernels: Path, category: str) -> list[Case]:
    """The cases of one category, each checked for a unique id and an existing source."""
    path = kernels / category / "cases.yaml"
    cases = [_case(category, entry) for entry in manifest(kernels, category)["cases"]]
    ids = [c.id for c in cases]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:
        raise SmdissectError(f"{path}: case ids repeated: {', '.join(duplicated)}")
    for case in cases:
        if not (kernels / category / case.source).exists():
            raise SmdissectError(f"{path}: case {case.id}: source {case.source} does not exist")
    return cases


def _expectations(expect: dict[str, str | list[str] | None]) -> dict[str, list[str]]:
    """A manifest's expectations with every bound as a list (none for null)."""
    return {k: [v] if isinstance(v, str) else list(v or ()) for k, v in expect.items()}


def _case(category: str, entry: dict[str, Any]) -> Case:
    requires = entry.get("requires", {})
    by_arch = {arch: own for archs, own in entry["sass"].get("arch", {}).items() for arch in archs.split(",")}
    return Case(
        category=category,
        id=entry["id"],
        source=entry["source"],
        kind=entry.get("kind", "chain"),
        profile_sweep=entry.get("profile_sweep"),
        unprofiled=entry.get("unprofiled", ""),
        ptx=entry["ptx"],
        measures=tuple(entry["measures"]),
        sweep=entry["sweep"],
        sass_expect=_expectations(entry["sass"]["expect"]),
        sass_forbid=tuple(entry["sass"].get("forbid", ())),
        sass_loop=entry["sass"].get("loop", "between"),
        sass_arch=by_arch,
        min_sm=requires.get("min_sm", 0),
        features=tuple(requires.get("features", ())),
        pipe=entry.get("pipe"),
        stall=entry.get("stall"),
        tolerance=entry.get("tolerance", 0.05),
        paper=entry.get("paper"),
        explain=entry.get("explain", {}),
        method=entry.get("method", ""),
        figures=entry.get("figures", {}),
        saturate=tuple(entry.get("saturate", ("ilp", "warps") if entry.get("kind", "chain") == "chain" else ())),
        peak=entry.get(
            "peak", f"pipe:{entry['pipe']}" if entry.get("pipe") and entry.get("kind", "chain") == "chain" else None
        ),
        rate=entry.get("rate"),
        built_from=tuple(entry.get("built_from", ())),
        same_as=tuple(entry.get("same_as", ())),
    )


def ids(
    category: str, *, family: str | None = None, measure: str | None = None, kernels: Path = KERNELS
) -> tuple[str, ...]:
    """The ids of a category's cases, of one family or measuring one metric, in manifest order: how a view or a
    deriver names a group of cases without spelling each id."""
    return tuple(
        c.id
        for c in load(kernels, category)
        if family in (None, c.family) and (measure is None or measure in c.measures)
    )


def load_all(kernels: Path, categories: list[str]) -> list[Case]:
    """The cases of several categories, in order."""
    return [case for category in categories for case in load(kernels, category)]


def referenced_families(kernels: Path, category: str) -> dict[str, list[str]]:
    """The families of other categories whose figures a category's checks compare against (`built_from`,
    `same_as`), by category: only those run for a category's figures, not the whole other category."""
    named: dict[str, set[str]] = {}
    for c in load(kernels, category):
        for r in (*c.built_from, *(s["case"] for s in c.same_as)):
            other, case_id = c.refer(r).split("/")
            if other != category:
                named.setdefault(other, set()).add(case_id)
    return {
        other: sorted({x.family for x in load(kernels, other) if x.id in ids}) for other, ids in sorted(named.items())
    }


def referenced_categories(kernels: Path, category: str) -> list[str]:
    """The other categories whose figures a category's checks compare against (`built_from`, `same_as`)."""
    return list(referenced_families(kernels, category))


def families(cases: list[Case]) -> dict[str, list[Case]]:
    """Cases grouped by the binary (family) they live in."""
    out: dict[str, list[Case]] = {}
    for case in cases:
        out.setdefault(case.family, []).append(case)
    return out


def family_source(kernels: Path, category: str, family: str) -> Path:
    """The file a family is built from: kernels/<category>/<family>.cu, or .py for a Python family."""
    return kernels / category / families(load(kernels, category))[family][0].source


def title(kernels: Path, category: str) -> str:
    """The manifest's one-line title of a category."""
    return manifest(kernels, category)["title"]


def coded_values(kernels: Path, category: str) -> list[tuple[str, int, str]]:
    """(axis, value, meaning) of each coded value the manifest names (`values:`): one named value is a special value
    of a numeric axis (ctas 0), several an enumeration, which must name every swept value (else a one-line error)."""
    named = manifest(kernels, category).get("values", {})
    swept: dict[str, set[int]] = {}
    for case in load(kernels, category):
        for axis, values in case.sweep.items():
            swept.setdefault(axis, set()).update(values)
    path = kernels / category / "cases.yaml"
    for axis, meanings in named.items():
        if axis not in swept:
            raise SmdissectError(f"{path}: values: no case sweeps '{axis}': remove it or fix the axis name")
        unnamed = sorted(swept[axis] - {int(v) for v in meanings}) if len(meanings) > 1 else []
        if unnamed:
            raise SmdissectError(f"{path}: values: {axis} {unnamed[0]} is swept but not named: add what it means")
    return [(axis, int(v), text) for axis, meanings in named.items() for v, text in meanings.items()]


class Finding(NamedTuple):
    """A key finding a manifest names (`findings:`): a figure of its category as a reader calls it, and its place in
    the index's headline table (0: not there)."""

    category: str
    figure: str
    label: str
    headline: int


def findings(kernels: Path, categories: list[str]) -> list[Finding]:
    """The key findings of `categories`, each category's in its manifest's order; two findings placed at one
    headline position are a one-line error."""
    found = [
        Finding(c, f["figure"], f["label"], f.get("headline", 0))
        for c in categories
        for f in manifest(kernels, c).get("findings", [])
    ]
    placed = [f.headline for f in found if f.headline]
    twice = sorted({n for n in placed if placed.count(n) > 1})
    if twice:
        raise SmdissectError(f"kernels/*/cases.yaml: findings: headline {twice[0]} is given twice: number them apart")
    return found


def family_settings(kernels: Path, category: str, family: str) -> dict[str, Any]:
    """A family's manifest settings with defaults: nvcc flags, libraries, timeout (s), profiled or not."""
    given = manifest(kernels, category).get("families", {}).get(family, {})
    settings = {k: v for k, v in given.items() if k != "defaults"}  # its case defaults are the cases' (merged)
    return {"flags": [], "link": [], "timeout": 600, "profile": True} | settings


def family_flags(kernels: Path, category: str, family: str) -> list[str]:
    """The nvcc flags a family adds to the configured ones: its own, -I for each header library, -l for each
    library it links."""
    settings = family_settings(kernels, category, family)
    includes = [f"-I{folder}" for name in settings.get("include", []) for folder in header_folders(name)]
    return list(settings["flags"]) + includes + [f"-l{lib}" for lib in settings["link"]]


@cache
def header_folders(name: str) -> list[str]:
    """The include folders of a header-only library installed as a pip package; missing is a one-line error."""
    package, folders = HEADER_PACKAGES[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SmdissectError(f"{name} headers not found (package {package}): pip install -e '.[gemm]' in the checkout")
    root = Path(next(iter(spec.submodule_search_locations)))
    return [str(root / folder) for folder in folders]


def metrics(kernels: Path, category: str) -> list[str]:
    """The extra ncu metrics a category's manifest asks for."""
    return list(manifest(kernels, category).get("metrics", []))
