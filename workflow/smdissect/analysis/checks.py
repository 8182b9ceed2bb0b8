"""The checks that can fail a figure: the timed loop's SASS, the counters at its points, the arch's physical bounds,
the plateau of the sweep it was taken from, the parts it is built from, and other cases running the same work."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import pandas as pd

from ..core import archs
from ..core.catalog import Case
from ..core.tables import canonical_params, parse_params, point_text
from ..measure.run import CLOCK_DRIFT_MHZ
from .figure_model import REFERENCE, SELF, Check, Figure, Point, figure_for

BOUND_TOLERANCE = 0.02  # a rate may exceed its peak (or a latency undercut its parts) by this share: timing noise
PLATEAU = 0.05  # a peak at the end of an axis has levelled when the point before it is within this share
SPREAD = 0.10  # a figure's samples (max - min) may spread by this share of its value: wider, it is not one number
SAME_WORK = 0.05  # two cases running the same work agree within this share unless the manifest says otherwise
# crossval checks that read the same launch's counters: they show the kernel did what its manifest says
SAME_LAUNCH = {"cycles", "slope", "pipe", "instructions", "cpi", "counter"}


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
            out.append(Check("counters", "n/a", f"{point_text(r.params)} not profiled", evidence=SELF))
        if kind not in SAME_LAUNCH:
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
                evidence=SELF,
                explained=explained if verdict == "disagree" else "",
            )
        )
    return out or [Check("counters", "n/a", "no counter check at this point", evidence=SELF)]


def _num(value: float) -> str:
    """A counter or clock64 value in a reason: 4 significant figures, thousands grouped rather than an exponent."""
    if value is None or math.isnan(value):
        return "-"
    return f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:.4g}"


@dataclass(frozen=True)
class Ceiling:
    """The documented ceiling of a rate figure: its value in the figure's unit, what it is, and whether a peak is
    expected to reach it (the instruction's or format's own documented rate) or it only bounds the figure from above
    (the issue limit, a pipe shared by a slower instruction)."""

    value: float
    what: str
    reachable: bool
    share: float = 0.95


# The share of its documented ceiling a peak must reach to be the hardware's: one instruction per lane per cycle is
# a design rate a saturating kernel meets within timing noise; a datasheet DRAM rate counts every memory clock, of
# which refresh and row/bank turnarounds leave 85-95% to any access stream (STREAM-type copies on HBM and GDDR).
CEILING_SHARE = {"pipe": 0.95, "tensor": 0.95, "smem": 0.95, "dram": 0.85}


def limit(figure: Figure, case: Case, arch: str, gpu: str) -> Ceiling | None:
    """The documented ceiling of a rate figure (archs: the programming guide's rows, the whitepapers' tensor rates,
    the datasheet's DRAM bandwidth), None where none applies."""
    unit, peak = figure.unit, case.peak or ""
    if unit == "warp_inst/cycle/SM":
        issue = Ceiling(archs.ISSUE_RATE, f"issue limit {archs.ISSUE_RATE:g} warp-inst/cycle/SM", False)
        pipe = peak.removeprefix("pipe:") if peak.startswith("pipe:") else None
        row = archs.instruction_rate(arch, case.rate) if case.rate else None
        if row:
            return Ceiling(row, f"{arch} documented {case.rate} rate {row:g} warp-inst/cycle/SM", True)
        rate = archs.pipe_rate(arch, pipe) if pipe else None
        if rate and rate <= issue.value:
            return Ceiling(rate, f"{arch} {pipe} pipe peak {rate:g} warp-inst/cycle/SM", True)
        return issue
    if unit in ("FLOP/cycle/SM", "OP/cycle/SM") and peak.startswith("tensor:"):
        fmt = peak.removeprefix("tensor:")
        rate = archs.tensor_peak(arch, fmt, sparse="sp" in case.id.split("_"))
        return Ceiling(rate, f"{arch} {fmt} tensor peak {rate:g} {unit}", True) if rate else None
    if unit == "GB/s" and peak == "dram":
        rate = archs.dram_peak_gbs(gpu)
        return Ceiling(rate, f"{gpu} datasheet DRAM {rate:g} GB/s", True, CEILING_SHARE["dram"]) if rate else None
    if unit == "B/cycle/SM" and (peak == "smem" or figure.metric == "smem_bytes"):
        rate = archs.SMEM_BYTES_PER_CYCLE
        return Ceiling(rate, f"shared-memory peak {rate:g} B/cycle/SM", True)
    return None


def ceiling_check(figure: Figure, case: Case, ceiling: Ceiling | None) -> list[Check]:
    """A rate against its documented ceiling: above it contradicts; a peak (or a case's only point) within the
    ceiling's share of a reachable one agrees with the documentation (a REFERENCE); one under it is the kernel's
    limit, not the GPU's, unless the case says what limits it or a second method agrees."""
    if ceiling is None:
        return []
    ratio = figure.value / ceiling.value
    detail = f"{ratio:.1%} of the {ceiling.what}"
    if ratio > 1 + BOUND_TOLERANCE:
        return [Check("ceiling", "disagree", f"{detail}: above the documented ceiling")]
    if not ceiling.reachable or figure.kind not in ("peak", "point") or figure.companion:
        return [Check("bound", "agree", detail)]
    if ratio >= ceiling.share:
        return [Check("ceiling", "agree", f"{detail} (documented)", evidence=REFERENCE)]
    return [
        expected(
            case, "ceiling", f"{detail}: under {ceiling.share:.0%} of it, so the kernel's limit, not the GPU's peak"
        )
    ]


def expected(case: Case, name: str, detail: str, key: str = "") -> Check:
    """A disagreement of check `name`, which the case's manifest may expect (explain.<key>, default `name`)."""
    return Check(name, "disagree", detail, explained=case.explain.get(key or name, ""))


def second_method(checks: list[Check]) -> list[Check]:
    """A peak under its ceiling stands where a second method measuring the same quantity agrees with it."""
    agree = next((c for c in checks if c.name == "same work" and c.verdict == "agree"), None)
    if agree is None:
        return checks
    return [
        replace(c, explained=c.explained or f"a second method agrees: {agree.detail}")
        if c.name == "ceiling" and c.verdict == "disagree" and "under" in c.detail
        else c
        for c in checks
    ]


def on_plateau(figure: Figure, pts: list[Point]) -> list[str]:
    """The points of a peak's sweep within PLATEAU of it (the peak's own first): the level it stands on."""
    if figure.kind != "peak" or not figure.value:
        return list(figure.points)
    near = [p.params for p in pts if p.params not in figure.points and abs(p.value / figure.value - 1) <= PLATEAU]
    return [*figure.points, *near]


def _neighbour(at: dict[str, int], axis: str, value: int) -> str:
    return canonical_params(at | {axis: value})


def plateau_check(figure: Figure, case: Case, pts: list[Point], ceiling: Ceiling | None) -> list[Check]:
    """A peak taken where its sweep has levelled: along every saturating axis, some point of its plateau (within
    PLATEAU of it) was measured beyond on that axis, or the point before it on that axis is on the plateau too; a
    peak at the hardware peak has levelled whatever its sweep. Otherwise the curve is still rising at the end of
    its sweep: not saturated."""
    if figure.kind != "peak" or figure.companion or not case.saturate or not figure.params:
        return []
    if ceiling and figure.value >= (1 - BOUND_TOLERANCE) * ceiling.value:
        return [Check("plateau", "agree", f"at the {ceiling.what}")]
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
        return [expected(case, "plateau", f"not saturated: still rising at the end of its sweep ({steps})")]
    if not seen:
        return [Check("plateau", "n/a", "no second point on a saturating axis beside the peak")]
    return [Check("plateau", "agree", f"levelled: {'; '.join(seen)}")]


def spread_check(figure: Figure, case: Case) -> list[Check]:
    """The repeated samples of a measured point, less the lowest and highest (stats.inner_spread), agree within SPREAD
    of their median (or the timer's resolution): a wider spread is not one number, whatever the median says. A
    derived figure's spread is its deriver's own."""
    spread = figure.inner_spread if math.isfinite(figure.inner_spread) else figure.spread
    if figure.kind == "derived" or figure.samples < 2 or not figure.value or not math.isfinite(spread):
        return []
    allowed = max(SPREAD * abs(figure.value), figure.resolution if math.isfinite(figure.resolution) else 0.0)
    if spread <= allowed:
        return []
    which = "less the lowest and highest" if figure.samples >= 5 else "(max - min)"
    detail = f"its {figure.samples} samples {which} spread {spread / abs(figure.value):.0%} of its value"
    return [expected(case, "spread", f"{detail}, over the {SPREAD:.0%} a figure allows")]


def state_check(figure: Figure, case: Case, flags: dict[tuple[str, str], str]) -> list[Check]:
    """The GPU was the run's alone and its clocks held during the figure's points (run.gpu_state's flags): a shared
    GPU or a moved clock contradicts what it measured, unless the case measures exactly that (power under its cap)."""
    seen = sorted({flags[(figure.case, p)] for p in figure.points if flags.get((figure.case, p))})
    if not seen:
        return []
    return [expected(case, "gpu state", "; ".join(seen), "gpu_state")]


def point_clocks(raw: pd.DataFrame) -> dict[tuple[str, str], float]:
    """(case, params) -> the median SM clock (MHz, clock64 over %globaltimer in the timed launches) of a point, where
    its kernels measured one."""
    timed = raw[raw["clock_mhz"] > 0] if "clock_mhz" in raw else raw.iloc[0:0]
    medians = timed.groupby(["case", "params"])["clock_mhz"].median()
    return {(str(c), str(p)): float(v) for (c, p), v in medians.items()}


def run_flags(raw: pd.DataFrame, clocks: dict[tuple[str, str], float]) -> dict[tuple[str, str], str]:
    """(case, params) -> the run's flags on the GPU's state during that point's job ('' where none). NVML's
    throttle reasons are device-wide and linger after a job at the power cap: a 'clocks held down' flag stands
    only where the point's own launches (`clocks`: point_clocks) did not run within CLOCK_DRIFT_MHZ of the run's
    top SM clock."""
    if raw.empty or "flag" not in raw:
        return {}
    flagged = raw[raw["flag"].astype("string").fillna("") != ""]
    top = max(clocks.values(), default=math.nan)
    out = {}
    for (c, p), g in flagged.groupby(["case", "params"]):
        full_speed = clocks.get((str(c), str(p)), 0.0) >= top - CLOCK_DRIFT_MHZ
        kept = sorted({f for flag in g["flag"] for f in str(flag).split("; ")})
        kept = [f for f in kept if not (full_speed and f.startswith("clocks held down"))]
        if kept:
            out[(str(c), str(p))] = "; ".join(kept)
    return out


def point_checks(
    figure: Figure,
    case: Case,
    frames: dict[str, pd.DataFrame],
    arch: str,
    gpu: str,
    pts: list[Point],
    flags: dict[tuple[str, str], str],
) -> list[Check]:
    """The checks a figure's own category can make: SASS, counters (at its point, else at a profiled point of the
    plateau it stands on), its documented ceiling, plateau, spread and the GPU's state."""
    ceiling = limit(figure, case, arch, gpu)
    return (
        sass_check(figure, case, frames.get("sass_checks", pd.DataFrame()))
        + crossval_checks(figure, case, frames.get("crossval", pd.DataFrame()), on_plateau(figure, pts))
        + ceiling_check(figure, case, ceiling)
        + plateau_check(figure, case, pts, ceiling)
        + spread_check(figure, case)
        + state_check(figure, case, flags)
    )


def reference_checks(figure: Figure, case: Case, known: dict[str, list[Figure]]) -> list[Check]:
    """Checks against other cases' figures: no latency below the parts it is built from, and the same rate as a
    case running the same work (`known`: figures by category)."""
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
        field = same.get("field", "value")
        if same.get("as", same["metric"]) != figure.metric or (figure.kind == "derived" and field == "value"):
            continue
        if "at" in same and not applies(canonical_params(same["at"]), figure.params or "{}"):
            continue
        category, other = case.refer(same["case"]).split("/")
        theirs = figure_for(known.get(category, []), other, same["metric"], figure.params)
        floor = same.get("relation") == "at_least"
        name = "floor" if floor else "same work"
        # a floor is a bound (a library under the peak says nothing of how far under): it rules out, never verifies
        evidence = "" if floor else REFERENCE
        if theirs is None:
            out.append(Check(name, "n/a", f"{same['case']} {same['metric']} not measured here", evidence=evidence))
            continue
        tol = same.get("tolerance", SAME_WORK)
        value, unit = (theirs.clock_mhz, "MHz (its SM clock)") if field == "clock_mhz" else (theirs.value, theirs.unit)
        scale = same.get("scale", 1)
        off = scale * figure.value / value - 1 if value and math.isfinite(value) else math.inf
        ours = f"{scale:g} x {figure.value:.4g}" if scale != 1 else f"{figure.value:.4g}"
        convention = f"; {same['why']}" if "why" in same else ""
        verdict = "agree" if (off >= -tol if floor else abs(off) <= tol) else "disagree"
        relation = "at least" if floor else "tolerance"
        out.append(
            Check(
                name,
                verdict,
                f"{ours} vs {same['case']} {value:.4g} {unit} ({off:+.1%}, {relation} {tol:.0%}){convention}",
                evidence=evidence,
                explained=case.explain.get(name.replace(" ", "_"), "") if verdict == "disagree" else "",
            )
        )
    return out
