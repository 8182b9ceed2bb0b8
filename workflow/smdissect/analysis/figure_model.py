"""The figure model: a reported figure, the points it stands on, the checks of it and the judgement of its status from
them. It imports none of the stages, so that the figures stage, the checks and every deriver can share it."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import pandas as pd

from ..core import stats

# What a check's agreement is evidence of: REFERENCE is independent of the measuring kernel (a documented value or
# ceiling of the arch, a second method: another case or category, a library, NVML, the device's attributes) and
# verifies a figure; SELF is the same launch's counters, which make it consistent; a check with neither (SASS, a
# bound, the plateau, the parts it is built from, the spread) can only contradict.
REFERENCE, SELF = "reference", "self"


@dataclass(frozen=True)
class Check:
    """One check of a figure: its name, verdict (agree / disagree / n/a), what it saw, and what an agreement is
    evidence of (REFERENCE verifies, SELF makes consistent, '' only rules out)."""

    name: str
    verdict: str
    detail: str
    evidence: str = ""
    explained: str = ""  # why a disagreement is expected (the manifest's explain): it then contradicts nothing

    def text(self) -> str:
        """'name: verdict (detail)' as pages and the table show it."""
        note = f"; expected: {self.explained}" if self.explained and self.verdict == "disagree" else ""
        return f"{self.name}: {self.verdict} ({self.detail}{note})"


def judge(checks: list[Check]) -> tuple[str, str]:
    """A figure's status and its reason from all its checks: contradicted by any unexplained disagreement, verified
    by an agreeing REFERENCE check, consistent by agreeing counters of the same launch alone, else unverified with
    which independent reference is missing (tables.STATUS_MEANING)."""
    against = [c for c in checks if c.verdict == "disagree" and not c.explained]
    if against:
        return "contradicted", "; ".join(f"{c.name}: {c.detail}" for c in against)
    confirmed = [c for c in checks if c.verdict == "agree" and c.evidence == REFERENCE]
    if confirmed:
        return "verified", "; ".join(f"{c.name}: {c.detail}" for c in _first_per_name(confirmed))
    limits = [f"{c.name}: {c.detail} ({c.explained})" for c in checks if c.verdict == "disagree"]
    missing = [f"{c.name}: {c.detail}" for c in checks if c.evidence == REFERENCE and c.verdict == "n/a"]
    why = "; ".join(dict.fromkeys([*limits, *missing][:3])) or NO_REFERENCE
    own = [c.name for c in checks if c.verdict == "agree" and c.evidence == SELF]
    if own:
        return "consistent", f"the launch's own counters agree ({', '.join(dict.fromkeys(own))}); {why}"
    return "unverified", why


NO_REFERENCE = "no independent reference: no documented value, library or other case measures this quantity"


def _first_per_name(checks: list[Check]) -> list[Check]:
    """One check of each name, the first, in order."""
    first: dict[str, Check] = {}
    for c in checks:
        first.setdefault(c.name, c)
    return list(first.values())


@dataclass
class Figure:
    """One reported number: what it is, its value and spread, how it was derived, and what checked it."""

    case: str
    metric: str
    unit: str
    kind: str  # point (the case's only point), peak (best over the sweep), each (one point of a sweep), derived
    name: str
    value: float
    spread: float  # max - min of the samples it stands on (absolute, in its unit)
    samples: int
    derivation: str
    params: str = ""  # the point it was taken at (canonical JSON); "" for a figure derived over a sweep
    points: tuple[str, ...] = ()  # every point it stands on (the checks of those points apply to it)
    method: str = ""
    paper: str = ""
    checks: list[Check] = field(default_factory=list)
    companion: str = ""  # the metric at whose peak this figure was taken ({at: metric}): not a peak of its own
    resolution: float = math.nan  # the smallest step its measurement resolves (a host timer's): no digit below it
    clock_mhz: float = math.nan  # the SM clock its timed launches ran at (clock64 over %globaltimer), NaN if untimed
    inner_spread: float = math.nan  # its point's spread less the lowest and highest sample (stats.inner_spread)


@dataclass(frozen=True)
class Point:
    """The samples of one metric at one parameter point of a case."""

    params: str
    value: float  # median
    spread: float
    samples: int


def points(raw: pd.DataFrame) -> dict[tuple[str, str], list[Point]]:
    """(case, metric) -> its points in sweep order, each with the median, spread and count of its samples."""
    if raw.empty:
        return {}
    out: dict[tuple[str, str], list[Point]] = {}
    for r in stats.summary(raw, ["case", "metric", "params"], sort=False).itertuples(index=False):
        out.setdefault((r.case, r.metric), []).append(Point(r.params, float(r.value), float(r.spread), int(r.samples)))
    return out


def figure_for(figures: Iterable[Figure], case: str, metric: str, params: str = "") -> Figure | None:
    """The figure of a case's metric: its point or peak (or, for a metric with one figure per point, the one at
    `params`)."""
    found = [f for f in figures if f.case == case and f.metric == metric and f.kind != "derived"]
    exact = [f for f in found if f.kind in ("point", "peak") or f.params == params]
    return exact[0] if exact else None
