"""The checks that can fail a figure: the timed loop's SASS, the counters at its points, the arch's physical bounds,
the plateau of the sweep it was taken from, the parts it is built from, and other cases running the same work."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from . import archs
from .catalog import Case
from .tables import canonical_params, parse_params, point_text

if TYPE_CHECKING:
    from .figures import Figure, Point

BOUND_TOLERANCE = 0.02  # a rate may exceed its peak (or a latency undercut its parts) by this share: timing noise
PLATEAU = 0.05  # a peak at the end of an axis has levelled when the point before it is within this share
SAME_WORK = 0.05  # two cases running the same work agree within this share unless the manifest says otherwise
# crossval checks that measure the figure's own number independently (the counters of the same launch)
INDEPENDENT = {"cycles", "slope", "pipe", "instructions", "cpi", "counter"}


@dataclass(frozen=True)
class Check:
    """One check of a figure: its name, verdict (agree / disagree / n/a), what it saw, and whether it measures the
    figure independently (an agreeing independent check verifies it; a bound or the SASS only rule it out)."""

    name: str
    verdict: str
    detail: str
    independent: bool = False
    explained: str = ""  # why a disagreement is expected (the manifest's explain): it then contradicts nothing

    def text(self) -> str:
        """'name: verdict (detail)' as pages and the table show it."""
        note = f"; expected: {self.explained}" if self.explained and self.verdict == "disagree" else ""
        return f"{self.name}: {self.verdict} ({self.detail}{note})"


def judge(checks: list[Check]) -> tuple[str, str]:
    """A figure's status and its reason: contradicted by any unexplained disagreement, verified by an agreeing
    independent check, else unverified with why no independent check applied."""
    against = [c for c in checks if c.verdict == "disagree" and not c.explained]
    if against:
        return "contradicted", "; ".join(f"{c.name}: {c.detail}" for c in against)
    confirmed = [c.name for c in checks if c.verdict == "agree" and c.independent]
    if confirmed:
        return "verified", "agrees with " + ", ".join(dict.fromkeys(confirmed))
    missing = list(dict.fromkeys(f"{c.name}: {c.detail}" for c in checks if c.independent and c.verdict != "agree"))
    if len(missing) > 3:
        missing = [*missing[:2], f"and {len(missing) - 2} more like them"]
    return "unverified", "; ".join(
        missing
    ) or "no independent check applies (not profiled, no counter or other case measures this quantity)"


def applies(kernel_params: str, point: str) -> bool:
    """Whether a kernel (by its compile-time parameters) is the one a run point launched."""
    kernel, at = parse_params(kernel_params), parse_params(point)
    return all(at.get(k) == v for k, v in kernel.items())


def sass_check(figure: Figure, case: Case, sass_checks: pd.DataFrame) -> list[Check]:
    """The case's SASS claims on the kernels the figure's points launched: every claim counted in the timed loop
    must hold there (hoisted, fused or deleted work fails it); a kernel-wide claim the case explains does not
    contradict."""
    mine = sass_checks[sass_checks["case"] == case.id] if len(sass_checks) else sass_checks
    mine = mine[[any(applies(k, p) for p in figure.points) for k in mine["params"]]] if len(mine) else mine
    if mine.empty:
        why = case.explain.get("sass", "no SASS claim on this case's kernels")
        return [Check("sass", "n/a", why)]
    loop = mine[mine["scope"] == "loop"]
    out = []
    for scope, rows in (("timed loop", loop), ("kernel", mine[mine["scope"] != "loop"])):
        if rows.empty:
            continue
        bad = rows[rows["verdict"] == "disagree"]
        if bad.empty:
            claims = sorted({f"{r.opcode} {r.expect}" for r in rows.itertuples()})
            out.append(
                Check(
                    f"sass {scope}",
                    "agree",
                    f"{len(rows)} claims hold: {', '.join(claims[:4])}" + (" ..." if len(claims) > 4 else ""),
                )
            )
            continue
        first = bad.iloc[0]
        detail = (
            f"{first['kernel']}: {first['count']} {first['opcode']} per pass of the timed loop, claimed "
            f"{first['expect']}"
            if scope == "timed loop"
            else f"{first['kernel']}: {first['count']} {first['opcode']}, claimed {first['expect']}"
        )
        explained = "" if scope == "timed loop" else case.explain.get("sass", "")
        out.append(
            Check(
                f"sass {scope}",
                "disagree",
                detail + (f" ({len(bad)} claims fail)" if len(bad) > 1 else ""),
                explained=explained,
            )
        )
    if loop.empty:
        out.append(
            Check(
                "sass timed loop", "n/a", case.explain.get("sass", "the case claims nothing per pass of its timed loop")
            )
        )
    return out


def kind_of(check: str) -> str:
    """The crossval kind of a check's text (its first words name it)."""
    if check.startswith("instructions: chain vs smsp__inst_executed"):
        return "instructions"
    if check.startswith("instructions:"):
        return "pipe"
    if check.startswith("latency: clock64 slope"):
        return "slope"
    return check.split(":")[0].split()[0].lower()


def crossval_checks(figure: Figure, case: Case, crossval: pd.DataFrame, plateau: list[str]) -> list[Check]:
    """The counter checks of the launches at the figure's points (a peak's own point unprofiled: those of a profiled
    point of its plateau): a disagreement the case does not explain contradicts it; an agreement verifies it."""
    if crossval.empty:
        return [Check("counters", "n/a", "no cross-validation table")]
    mine = crossval[crossval["case"] == case.id]
    profiled = mine[~mine["check"].str.startswith("profile:")]
    own = [p for p in figure.points if p in set(profiled["params"])]
    near = next((p for p in plateau if p in set(profiled["params"])), None)
    rows = mine[mine["params"].isin(figure.points)] if own or near is None else profiled[profiled["params"] == near]
    out = (
        []
        if own or near is None
        else [Check("counters", "n/a", f"checked at {point_text(near)}, on the plateau of the peak")]
    )
    for r in rows.itertuples():
        kind = kind_of(r.check)
        if kind == "profile":
            out.append(Check("counters", "n/a", f"{point_text(r.params)} not profiled", independent=True))
        if kind not in INDEPENDENT:
            continue
        verdict = {"agree": "agree", "disagree": "disagree"}.get(r.verdict, "n/a")
        explained = case.explain.get(kind, "") or (
            case.explain.get("instructions", "") if kind in ("pipe", "cpi") else ""
        )
        detail = r.check if verdict == "n/a" else f"{r.check}: {_num(r.clock64_value)} vs {_num(r.counter_value)}"
        out.append(
            Check(
                kind,
                verdict,
                detail if verdict != "n/a" else f"{detail} ({r.note})",
                independent=True,
                explained=explained if verdict == "disagree" else "",
            )
        )
    return out or [Check("counters", "n/a", "no counter check at this point", independent=True)]


def _num(value: float) -> str:
    """A counter or clock64 value in a reason: 4 significant figures, thousands grouped rather than an exponent."""
    if value is None or math.isnan(value):
        return "-"
    return f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:.4g}"


def limit(figure: Figure, case: Case, arch: str, gpu: str) -> tuple[float, str] | None:
    """The hardware peak that bounds a rate figure, and what it is; None where none applies."""
    unit = figure.unit
    if unit == "warp_inst/cycle/SM":
        bounds = [(archs.ISSUE_RATE, f"issue limit {archs.ISSUE_RATE:g} warp-inst/cycle/SM")]
        if case.peak and case.peak.startswith("pipe:"):
            rate = archs.pipe_rate(arch, case.peak.removeprefix("pipe:"))
            if rate:
                bounds.append((rate, f"{case.peak.removeprefix('pipe:')} pipe peak {rate:g} warp-inst/cycle/SM"))
        return min(bounds)
    if not case.peak:
        return None
    if unit == "FLOP/cycle/SM" and case.peak.startswith("tensor:"):
        fmt = case.peak.removeprefix("tensor:")
        peak = archs.tensor_peak(arch, fmt, sparse="sp" in case.id.split("_"))
        return (peak, f"{arch} {fmt} tensor peak {peak:g} FLOP/cycle/SM") if peak else None
    if unit == "GB/s" and case.peak == "dram":
        peak = archs.dram_peak_gbs(gpu)
        return (peak, f"{gpu} datasheet DRAM {peak:g} GB/s") if peak else None
    if unit == "B/cycle/SM" and case.peak == "smem":
        return archs.SMEM_BYTES_PER_CYCLE, f"shared-memory peak {archs.SMEM_BYTES_PER_CYCLE:g} B/cycle/SM"
    return None


def bound_check(figure: Figure, found: tuple[float, str] | None) -> list[Check]:
    """A rate at or below the peak of its pipe, format or memory (`found`: the limit and what it is)."""
    if found is None:
        return []
    peak, what = found
    ratio = figure.value / peak
    verdict = "disagree" if ratio > 1 + BOUND_TOLERANCE else "agree"
    return [Check("bound", verdict, f"{ratio:.1%} of the {what}")]


def on_plateau(figure: Figure, pts: list[Point]) -> list[str]:
    """The points of a peak's sweep within PLATEAU of it (the peak's own first): the level it stands on."""
    if figure.kind != "peak" or not figure.value:
        return list(figure.points)
    near = [p.params for p in pts if p.params not in figure.points and abs(p.value / figure.value - 1) <= PLATEAU]
    return [*figure.points, *near]


def _neighbour(at: dict[str, int], axis: str, value: int) -> str:
    return canonical_params(at | {axis: value})


def plateau_check(figure: Figure, case: Case, pts: list[Point], peak: tuple[float, str] | None) -> list[Check]:
    """A peak taken where its sweep has levelled: along every saturating axis, some point of its plateau (within
    PLATEAU of it) was measured beyond on that axis, or the point before it on that axis is on the plateau too; a
    peak at the hardware peak has levelled whatever its sweep. Otherwise the curve is still rising at the end of
    its sweep: not saturated."""
    if figure.kind != "peak" or figure.companion or not case.saturate or not figure.params:
        return []
    if peak and figure.value >= (1 - BOUND_TOLERANCE) * peak[0]:
        return [Check("plateau", "agree", f"at the {peak[1]}")]
    values = {p.params: p.value for p in pts}
    plateau = [parse_params(p) for p in on_plateau(figure, pts)]
    at, seen, rising = parse_params(figure.params), [], []
    for axis in (a for a in case.saturate if a in at):
        axis_values = sorted({parse_params(p)[axis] for p in values if axis in parse_params(p)})
        if len(axis_values) < 2:
            continue
        levelled = ""
        for point in plateau:
            i = axis_values.index(point[axis])
            if i + 1 < len(axis_values) and _neighbour(point, axis, axis_values[i + 1]) in values:
                levelled = f"measured beyond {point_text(_neighbour(point, axis, point[axis]))} along {axis}"
                break
            before = values.get(_neighbour(point, axis, axis_values[i - 1])) if i else None
            if before and before >= (1 - PLATEAU) * figure.value:
                levelled = f"{axis}={axis_values[i - 1]} and {point[axis]} both on the plateau"
                break
        if levelled:
            seen.append(levelled)
            continue
        i = axis_values.index(at[axis])
        before = values.get(_neighbour(at, axis, axis_values[i - 1])) if i else None
        if before:
            rising.append(f"{figure.value / before - 1:+.1%} from {axis}={axis_values[i - 1]} to {at[axis]}")
    if rising:
        steps = "; ".join(rising)
        return [Check("plateau", "disagree", f"not saturated: still rising at the end of its sweep ({steps})")]
    if not seen:
        return [Check("plateau", "n/a", "no second point on a saturating axis beside the peak")]
    return [Check("plateau", "agree", f"levelled: {'; '.join(seen)}")]


def point_checks(
    figure: Figure, case: Case, frames: dict[str, pd.DataFrame], arch: str, gpu: str, pts: list[Point]
) -> list[Check]:
    """The checks a figure's own category can make: SASS, counters (at its point, else at a profiled point of the
    plateau it stands on), bounds and plateau."""
    peak = limit(figure, case, arch, gpu)
    return (
        sass_check(figure, case, frames.get("sass_checks", pd.DataFrame()))
        + crossval_checks(figure, case, frames.get("crossval", pd.DataFrame()), on_plateau(figure, pts))
        + bound_check(figure, peak)
        + plateau_check(figure, case, pts, peak)
    )


def reference_checks(figure: Figure, case: Case, known: dict[str, list[Figure]]) -> list[Check]:
    """Checks against other cases' figures: no latency below the parts it is built from, and the same rate as a
    case running the same work (`known`: figures by category)."""
    from .figures import figure_for

    out = []
    if figure.metric == "latency" and figure.kind != "each":
        for ref in case.built_from:
            category, other = case.refer(ref).split("/")
            part = figure_for(known.get(category, []), other, "latency")
            if part is None:
                out.append(Check("built from", "n/a", f"{ref} not measured here"))
                continue
            verdict = "disagree" if figure.value < part.value * (1 - BOUND_TOLERANCE) else "agree"
            out.append(Check("built from", verdict, f"{figure.value:.4g} vs {ref} latency {part.value:.4g} cycles"))
    for same in case.same_as:
        if same.get("as", same["metric"]) != figure.metric or figure.kind == "derived":
            continue
        category, other = case.refer(same["case"]).split("/")
        theirs = figure_for(known.get(category, []), other, same["metric"], figure.params)
        if theirs is None:
            out.append(
                Check("same work", "n/a", f"{same['case']} {same['metric']} not measured here", independent=True)
            )
            continue
        tol = same.get("tolerance", SAME_WORK)
        off = figure.value / theirs.value - 1 if theirs.value else math.inf
        verdict = "agree" if abs(off) <= tol else "disagree"
        out.append(
            Check(
                "same work",
                verdict,
                f"{figure.value:.4g} vs {same['case']} {theirs.value:.4g} {theirs.unit} "
                f"({off:+.1%}, tolerance {tol:.0%})",
                independent=True,
                explained=case.explain.get("same_work", "") if verdict == "disagree" else "",
            )
        )
    return out
