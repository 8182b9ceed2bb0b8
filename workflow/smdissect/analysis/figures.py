"""The reported figures: one row per figure a page, the README or a comparison shows, computed once from the
samples, each with how it was derived and a status from the checks that can fail it."""

from __future__ import annotations

import json
import math
import statistics
from typing import Any

import pandas as pd

from ..core import stats
from ..core.catalog import Case
from ..core.tables import FIGURE_STATUSES, point_text
from . import derived
from .checks import point_checks, point_clocks, reference_checks, run_flags, second_method
from .figure_model import Check, Figure, Point, judge, points

RATE_UNITS = ("/cycle", "/s", "TFLOPS", "TOPS")  # a metric in such a unit peaks over its sweep by default
# How a chain case's figures are measured (kernels/common/chain.cuh), where its manifest says nothing more.
CHAIN_METHODS = {
    "latency": "dependent chain in one warp: the cycles per step between a 256- and a 512-step body (loop "
    "overhead and clock reads cancel), issue-to-result of the SASS it becomes",
    "throughput": "ILP independent chains x warps in one CTA on one SM: extra warp instructions per extra cycle "
    "between two body lengths",
}


def rule(case: Case, metric: str, unit: str, n_points: int) -> str | dict[str, str]:
    """Which figure a metric of a case gives: the manifest's choice, else its only point, its peak (a rate) or one
    figure per point."""
    if metric in case.figures:
        return case.figures[metric]
    if n_points == 1:
        return "point"
    return "peak" if any(u in unit for u in RATE_UNITS) else "each"


def _samples_text(p: Point) -> str:
    return f"median of {p.samples} sample{'s' * (p.samples != 1)}"


def headline(case: Case, metric: str, unit: str, pts: list[Point], peaks: dict[str, Point]) -> list[Figure]:
    """The figures one metric of one case gives by its rule (`peaks`: the peak point of each of its metrics)."""
    how = rule(case, metric, unit, len(pts))
    method = case.method or (CHAIN_METHODS.get(metric, "") if case.kind == "chain" else "")
    base = {"case": case.id, "metric": metric, "unit": unit, "method": method}
    if how == "none":
        return []
    if how == "each":
        return [_taken(p, "each", f"{case.id} {metric} at {point_text(p.params)}", _samples_text(p), base) for p in pts]
    if how == "point":
        p = pts[0]
        at = f" at {point_text(p.params)}" if len(pts) == 1 and p.params != "{}" else ""
        return [_taken(p, "point", f"{case.id} {metric}", _samples_text(p) + at, base)]
    if how == "peak":
        p = peaks[metric]
        best = f"best of {len(pts)} points, at {point_text(p.params)} ({_samples_text(p)})"
        return [_taken(p, "peak", f"{case.id} peak {metric}", best, base)]
    return _at_peak_of(how["at"], pts, peaks, base)


def _taken(p: Point, kind: str, name: str, derivation: str, base: dict[str, str], companion: str = "") -> Figure:
    """A figure taken at one point: its value, spread and samples there."""
    return Figure(
        kind=kind,
        name=name,
        value=p.value,
        spread=p.spread,
        samples=p.samples,
        derivation=derivation,
        params=p.params,
        points=(p.params,),
        companion=companion,
        **base,
    )


def _at_peak_of(other: str, pts: list[Point], peaks: dict[str, Point], base: dict[str, str]) -> list[Figure]:
    """A metric's figure at the point where another metric of its case peaks (none where that one has no peak)."""
    if other not in peaks:
        return []
    p = next((q for q in pts if q.params == peaks[other].params), None)
    if p is None:
        return []
    where = f"at the point of peak {other}: {point_text(p.params)} ({_samples_text(p)})"
    return [_taken(p, "peak", f"{base['case']} {base['metric']} at peak {other}", where, base, companion=other)]


def case_figures(case: Case, raw: pd.DataFrame, by_point: dict[tuple[str, str], list[Point]]) -> list[Figure]:
    """Every generic figure of one case, metric by metric in manifest order (metrics it printed but does not
    list come after)."""
    mine = raw[raw["case"] == case.id]
    if mine.empty:
        return []
    units = mine.groupby("metric")["unit"].first().to_dict()
    metrics = [m for m in case.measures if m in units] + sorted(set(units) - set(case.measures))
    peaks = {m: max(by_point[(case.id, m)], key=lambda p: p.value) for m in metrics}
    return [f for m in metrics for f in headline(case, m, units[m], by_point[(case.id, m)], peaks)]


def compute(
    cases: list[Case],
    frames: dict[str, pd.DataFrame],
    others: dict[str, list[Figure]],
    arch: str,
    gpu: str,
) -> list[Figure]:
    """Every figure of one category (generic and derived), each judged: `frames` holds the category's raw, crossval
    and the run arch's sass_checks tables; `others` the figures of the categories its cases refer to."""
    raw = frames.get("raw", pd.DataFrame())
    if raw.empty:
        return []
    by_point = points(raw)
    figures = [f for case in cases for f in case_figures(case, raw, by_point)]
    by_id = {c.id: c for c in cases}
    figures += derived.figures(cases[0].category, frames, figures, by_id)
    known = others | {cases[0].category: figures}
    stand_for_paper(figures, by_id)
    clocks = point_clocks(raw)
    flags = run_flags(raw, clocks)
    set_clocks(figures, clocks)
    inner = stats.inner_spread(raw, ["case", "metric", "params"])
    for f in figures:  # a deriver's own paper id, method and checks stand; the generic ones join them
        case = by_id[f.case]
        f.method = f.method or case.method
        f.inner_spread = inner.get((f.case, f.metric, f.params), math.nan) if f.kind != "derived" else math.nan
        f.checks = second_method(
            [
                *f.checks,
                *point_checks(f, case, frames, arch, gpu, by_point.get((f.case, f.metric), []), flags),
                *reference_checks(f, case, known),
            ]
        )
    inherit(figures)
    return figures


def set_clocks(figures: list[Figure], clocks: dict[tuple[str, str], float]) -> None:
    """Give each figure the median SM clock of the points it stands on (`clocks`: checks.point_clocks), where they
    measured one."""
    for f in figures:
        seen = [clocks[(f.case, p)] for p in f.points if (f.case, p) in clocks]
        f.clock_mhz = float(statistics.median(seen)) if seen else f.clock_mhz


def stand_for_paper(figures: list[Figure], cases: dict[str, Case]) -> None:
    """Give each case's paper figure to one figure of its first metric: the first derived one (a level, a figure
    over the sweep), else its point or peak, else its first point of a sweep; a paper id a deriver set stands."""
    claimed = {f.paper for f in figures if f.paper}
    for case in (c for c in cases.values() if c.paper and c.paper not in claimed and c.measures):
        mine = [f for f in figures if f.case == case.id and f.metric == case.measures[0]]
        ranked = [f for kind in ("derived", "point", "peak", "each") for f in mine if f.kind == kind]
        chosen = ranked[0] if ranked else None
        if chosen is not None:
            chosen.paper = case.paper


def inherit(figures: list[Figure]) -> None:
    """A derived figure is contradicted where a figure of its case at one of its points is: it stands on it."""
    against = {
        id(f): judge(f.checks)[1] for f in figures if f.kind != "derived" and judge(f.checks)[0] == "contradicted"
    }
    for f in (f for f in figures if f.kind == "derived"):
        for g in figures:
            if id(g) in against and g.case == f.case and set(g.points) & set(f.points):
                f.checks.append(Check("stands on", "disagree", f"{g.name}, contradicted: {against[id(g)][:160]}"))


def rows(figures: list[Figure], provenance: dict[str, Any]) -> list[dict[str, Any]]:
    """The figures as rows of the figures table, each with its status, reason and checks."""
    out = []
    for f in figures:
        status, reason = judge(f.checks)
        assert status in FIGURE_STATUSES
        out.append(
            provenance
            | {
                "case": f.case,
                "params": f.params,
                "figure": f.name,
                "metric": f.metric,
                "unit": f.unit,
                "kind": f.kind,
                "value": f.value,
                "spread": f.spread,
                "samples": f.samples,
                "derivation": f.derivation,
                "points": json.dumps(list(f.points)),
                "method": f.method,
                "paper": f.paper,
                "resolution": f.resolution,
                "clock_mhz": f.clock_mhz,
                "status": status,
                "reason": reason,
                "checks": "; ".join(c.text() for c in f.checks),
            }
        )
    return out
