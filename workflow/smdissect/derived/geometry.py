"""Derived figures of the geometry category: each TLB level's latency, reach and miss penalty (tlb_chase), the L1's
fill granularity (l1_sector), capacity per shared-memory carveout, line size (l1_capacity, l1_line) and ways
(l1_ways), and the L2's bandwidth level and fall-off footprint, camping ratios and persisting gain (l2_*). Levels
are memory's: runs of at least MIN_POINTS consecutive points within NEAR of their median (derived.memory.runs)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .. import archs, latency_modes
from ..catalog import Case
from ..figure_model import REFERENCE, Check, Figure
from ..tables import canonical_params, kb_text, parse_params
from . import geometry_caches, memory
from .curves import axis_values, curve, level_figure, levels, with_checks
from .samples import checkout_cases, keep, make, run_of, samples

CATEGORY = "geometry"
METRICS = frozenset(
    {
        "bandwidth",
        "bytes_per_miss",
        "camping_ratio",
        "constant_memory",
        "falloff_mb",
        "far_share",
        "hit_latency",
        "hit_share_past_ways",
        "interleave_bytes",
        "l1_capacity",
        "l1_hit_share",
        "latency_saved",
        "level*_capacity",
        "level*_latency",
        "level0_latency",
        "level1_latency",
        "line_bytes",
        "miss_latency",
        "per_address",
        "persisting_gain",
        "reach_at_least",
        "same_sides",
        "sector_bytes",
        "tlb1_entries",
        "tlb1_miss_penalty",
        "tlb1_reach",
        "tlb_steps",
        "ways",
        "ways_at_least",
    }
)  # every metric a figure of this deriver can have

TLB_CASES = ("tlb_chase", "tlb_chase_wide", "tlb_chase_huge")  # strides 2 MB, 32 MB, 1 GB
# a TLB latency level: points within 1% of its median (~3 cycles at an L2 hit's ~280): the L2 slices a page count's
# lines fall in move a point by about 1 cycle, a TLB level's miss by more
TLB_NEAR = 0.01
MISS = 2.0  # a cold-lap load is an L1 miss where it takes over twice the chased L1-hit latency
SECTOR, LINE = 32, 128  # bytes: Nsight Compute Kernel Profiling Guide, "Memory Tables": 4 sectors of 32 B per line
ON_SECTOR = 0.95  # share of the fine strides' cold misses that must fall at multiples of the granularity
DOCUMENTED = "Nsight Compute Kernel Profiling Guide (a line is 128 B, four 32 B sectors)"
NO_TLB_DOC = "NVIDIA documents no TLB sizes; 4 KB and 64 KB pages cannot be isolated: cudaMalloc maps 2 MB pages"
# CUDA C++ Programming Guide, the compute capability sections: the shared-memory capacities (KB) a carveout can select
CARVEOUTS_KB: dict[int, tuple[int, ...]] = {
    80: (0, 8, 16, 32, 64, 100, 132, 164),
    86: (0, 8, 16, 32, 64, 100),
    87: (0, 8, 16, 32, 64, 100, 132, 164),
    89: (0, 8, 16, 32, 64, 100),
    90: (0, 8, 16, 32, 64, 100, 132, 164, 196, 228),
    100: (0, 8, 16, 32, 64, 100, 132, 164, 196, 228),
    120: (0, 8, 16, 32, 64, 100),
    121: (0, 8, 16, 32, 64, 100),
}
GROWTH = 0.25  # past the line, the capacity footprint grows with the stride to within the footprints' steps


def methods() -> dict[str, str]:
    """Each geometry case's `method:` from the manifest (samples.checkout_cases)."""
    return {k: c.method for k, c in checkout_cases("geometry").items()}


def version(raw: pd.DataFrame) -> int:
    """The SM version of the run's arch (-1 where unknown)."""
    return archs.arch_version(run_of(raw)[0]) or -1


def attributes(raw: pd.DataFrame) -> dict[str, float]:
    """device_geometry's attributes (medians), empty where it did not run."""
    rows = raw[raw["case"] == "device_geometry"]
    return {str(m): float(g.median()) for m, g in rows.groupby("metric")["value"]}


# --- TLB -------------------------------------------------------------------------------------------------------------


def flat_runs(values: list[float], near: float) -> list[tuple[int, int]]:
    """memory.runs with its own tolerance: maximal runs of at least memory.MIN_POINTS consecutive points, each within
    `near` of the run's median, found left to right, as (first, last) index pairs."""
    out, i = [], 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and all(
            abs(v - np.median(values[i : j + 2])) <= near * np.median(values[i : j + 2]) for v in values[i : j + 2]
        ):
            j += 1
        if j - i + 1 >= memory.MIN_POINTS:
            out.append((i, j))
            i = j + 1
        else:
            i += 1
    return out


def size_text(mb: float) -> str:
    """MB as '512 MB' or, from 1024 MB on, '8 GB'."""
    return f"{mb / 1024:g} GB" if mb >= 1024 else f"{mb:g} MB"


@dataclass(frozen=True)
class Staircase:
    """One TLB stride's curve: its points (pages, value), its latency levels and the stride in MB."""

    case: str
    pts: pd.DataFrame
    found: list[tuple[int, int]]
    stride: float

    @property
    def where(self) -> str:
        return f"{size_text(self.stride)} stride"

    def pages(self, i: int) -> float:
        return float(self.pts["pages"].iloc[i])

    def span(self, i: int) -> str:
        """Point i's pages and the bytes they span."""
        n = self.pages(i)
        return f"{n:g} page{'s' * (n != 1)} ({size_text(n * self.stride)})"

    def level(self, k: int) -> float:
        i, j = self.found[k]
        return float(np.median(self.pts["value"].iloc[i : j + 1]))

    def steps(self) -> list[str]:
        """Each step between levels in plain terms: from which page count to which, by how many cycles."""
        return [
            f"+{self.level(k + 1) - self.level(k):.3g} cycles between {self.span(a[1])} and {self.span(b[0])}"
            for k, (a, b) in enumerate(zip(self.found, self.found[1:], strict=False))
        ]


def staircases(raw: pd.DataFrame) -> list[Staircase]:
    """The TLB cases' curves that show at least one latency level, in stride order."""
    out = []
    for case in TLB_CASES:
        pts = curve(raw, case, "latency", "pages")
        found = flat_runs(pts["value"].tolist(), TLB_NEAR)
        if found:
            out.append(Staircase(case, pts, found, float(parse_params(pts["params"].iloc[0])["stride_mb"])))
    return sorted(out, key=lambda c: c.stride)


def tlb(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per stride: each latency level, each miss step with the reach bracket it gives (pages held, bytes spanned) and
    what a load pays past it, the reach's lower bound where the sweep ends on a level, and the steps in plain terms."""
    out: list[Figure | None] = []
    doc = [Check("documented", "n/a", NO_TLB_DOC, evidence=REFERENCE)]
    found = staircases(raw)
    for c in found:
        figs: list[Figure | None] = []
        for k, span in enumerate(c.found):
            what = "before any miss step" if k == 0 else f"after miss step {k}"
            fig = level_figure(
                raw,
                c.case,
                "latency",
                c.pts,
                span,
                f"TLB chase latency {what} ({c.where})",
                f"latency level {k} of the chase: the median of its points' medians, {c.span(span[0])} to "
                f"{c.span(span[1])}; every load an L2 hit (.cg), only the pages change",
                "cycle",
            )
            figs.append(_named(fig, f"level{k}_latency"))
            if k + 1 < len(c.found):
                figs += step(raw, c, k)
        figs += [reach_bound(raw, c, found), tlb_steps(c)]
        out += [with_checks(doc, f) for f in figs]
    return keep(out)


def _named(fig: Figure | None, metric: str) -> Figure | None:
    if fig is not None:
        fig.metric = metric
    return fig


def step(raw: pd.DataFrame, c: Staircase, k: int) -> list[Figure | None]:
    """Miss step k+1 between levels k and k+1: the pages level k still holds (the reach bracket, in pages and bytes)
    and what a load pays past it (level k+1's latency less level k's, all their samples)."""
    (i0, last), (first, j1) = c.found[k], c.found[k + 1]
    held, off = c.pages(last), c.pages(first)
    params = c.pts["params"].iloc[i0 : j1 + 1].tolist()
    bracket = (
        f"the latency stays within {TLB_NEAR:.0%} of {c.level(k):.4g} cycles up to {c.span(last)} and is "
        f"{c.level(k + 1):.4g} cycles from {c.span(first)}: what translates these pages at {c.where} holds at least "
        f"{held:g} and fewer than {off:g} of them, a reach of {size_text(held * c.stride)} to "
        f"{size_text(off * c.stride)}"
    )
    entries = Figure(
        case=c.case,
        metric=f"tlb{k + 1}_entries",
        unit="pages",
        kind="derived",
        name=f"TLB miss step {k + 1}: pages held ({c.where})",
        value=held,
        spread=math.nan,
        samples=sum(len(samples(raw, c.case, "latency", p)) for p in params),
        derivation=bracket,
        points=tuple(params),
    )
    mb = replace(
        entries,
        metric=f"tlb{k + 1}_reach",
        unit="MB",
        value=held * c.stride,
        name=f"TLB miss step {k + 1}: reach ({c.where})",
        checks=[],
    )
    ours = np.concatenate([samples(raw, c.case, "latency", p) for p in c.pts["params"].iloc[i0 : last + 1]])
    theirs = np.concatenate([samples(raw, c.case, "latency", p) for p in c.pts["params"].iloc[first : j1 + 1]])
    penalty = make(
        c.case,
        f"tlb{k + 1}_miss_penalty",
        "cycle",
        f"TLB miss step {k + 1}: cycles per load ({c.where})",
        lambda a, b: b - a,
        [ours, theirs],
        f"latency level {k + 1} less level {k} (all their samples): what each load pays at {c.where} once the level "
        f"that held {held:g} pages misses and another translates; consecutive loads are in different pages, but at a "
        "stride below what one entry covers they share entries, so this is a miss cost per load, not per miss",
        params,
    )
    return [entries, mb, penalty]


def reach_bound(raw: pd.DataFrame, c: Staircase, every: list[Staircase]) -> Figure | None:
    """Where the sweep ends on a level: no miss step from that level's first point to the last page count, a lower
    bound of the reach of what translates them at this stride (the other strides' first steps for comparison)."""
    i, j = c.found[-1]
    if j + 1 < len(c.pts):
        return None
    others = [
        f"{o.where}: first step between {o.span(o.found[0][1])} and {o.span(o.found[1][0])}"
        for o in every
        if o is not c and len(o.found) > 1
    ]
    after = "" if len(c.found) == 1 else f" after miss step {len(c.found) - 1}"
    return Figure(
        case=c.case,
        metric="reach_at_least",
        unit="MB",
        kind="derived",
        name=f"TLB reach, lower bound ({c.where})",
        value=c.pages(j) * c.stride,
        spread=math.nan,
        samples=sum(len(samples(raw, c.case, "latency", p)) for p in c.pts["params"].iloc[i : j + 1]),
        derivation=f"no miss step{after} to the sweep's end: the latency stays within {TLB_NEAR:.0%} of "
        f"{c.level(len(c.found) - 1):.4g} cycles from {c.span(i)} to {c.span(j)}, so what translates them at "
        f"{c.where} reaches at least {size_text(c.pages(j) * c.stride)} (a lower bound: the sweep found no end)"
        + (f"; other strides: {'; '.join(others)}" if others else ""),
        points=tuple(c.pts["params"].iloc[i : j + 1]),
    )


def tlb_steps(c: Staircase) -> Figure:
    """How many miss steps the sweep shows, in plain terms: the levels, the steps between them and how it ends."""
    levels_text = "; ".join(
        f"{c.level(k):.4g} cycles from {c.span(i)} to {c.span(j)}" for k, (i, j) in enumerate(c.found)
    )
    end = c.found[-1][1] + 1 < len(c.pts)
    n = len(c.found) - 1
    fig = Figure(
        case=c.case,
        metric="tlb_steps",
        unit="steps",
        kind="derived",
        name=f"TLB miss steps the sweep shows ({c.where})",
        value=float(n),
        spread=math.nan,
        samples=len(c.pts),
        derivation=f"latency levels (points within {TLB_NEAR:.0%} of their median): {levels_text}. "
        + (f"Steps: {', '.join(c.steps())}. " if n else "")
        + (
            f"Past {c.span(c.found[-1][1])} the latency leaves the last level and the sweep ends before another."
            if end
            else f"No miss step from {c.span(c.found[-1][0])} up to {c.span(len(c.pts) - 1)}."
        ),
        points=tuple(c.pts["params"]),
    )
    return fig


# --- L1 --------------------------------------------------------------------------------------------------------------


def sector(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per stride: the cold lap's miss share and bytes per miss; over the fine strides the fill granularity (sector),
    with the share of misses at its starts; the chased L1-hit latency and the cold misses' latency."""
    loads = raw[(raw["case"] == "l1_sector") & (raw["metric"] == "load_latency")]
    if loads.empty:
        return []
    out: list[Figure | None] = []
    fine: list[ColdLap] = []
    hits, misses = [], []
    for params, g in loads.groupby("params", sort=False):
        stride = float(parse_params(params)["stride_b"])
        hit = float(np.median(samples(raw, "l1_sector", "latency", str(params))))
        x = g.sort_values("repeat")["value"].to_numpy(float)
        per = int(g["iterations"].iloc[0])
        grid = x[: len(x) // per * per].reshape(-1, per)
        missed = grid > MISS * hit
        shares = missed.mean(axis=1)
        per_miss = stride / shares[shares > 0]
        hits.append(samples(raw, "l1_sector", "latency", str(params)))
        misses.append(grid[missed])
        fig = make(
            "l1_sector",
            "bytes_per_miss",
            "B",
            f"L1 bytes per cold miss at stride {stride:g} B",
            lambda v: v,
            [per_miss],
            f"stride / the share of the cold lap's {per} loads over {MISS:g}x the L1-hit latency ({hit:.4g} "
            f"cycles), per launch ({len(grid)}); median {np.median(shares):.3g} of the loads missed",
            [str(params)],
            methods.get("l1_sector", ""),
            str(params),
        )
        out.append(fig)
        if stride < SECTOR and len(per_miss):
            fine.append(ColdLap(stride, per_miss, missed, np.arange(per) * stride, str(params)))
    out.append(granularity(fine, methods))
    method = methods.get("l1_sector", "")
    pts = tuple(loads["params"].unique())
    out.append(
        make(
            "l1_sector",
            "hit_latency",
            "cycle",
            "L1 hit latency (warmed .ca chase)",
            lambda v: v,
            [np.concatenate(hits)],
            "the chased loads of every stride (3n L1 hits per launch)",
            pts,
            method,
        )
    )
    out.append(
        make(
            "l1_sector",
            "miss_latency",
            "cycle",
            "L1 cold-miss latency (L2 hit)",
            lambda v: v,
            [np.concatenate(misses)],
            f"every cold-lap load over {MISS:g}x the L1-hit latency, all strides",
            pts,
            method,
        )
    )
    return keep(out)


@dataclass(frozen=True)
class ColdLap:
    """The cold laps of one l1_sector stride: each launch's bytes per miss, which loads missed (launch x load) and
    each load's byte offset from the chain's start."""

    stride: float
    per_miss: np.ndarray
    missed: np.ndarray
    offsets: np.ndarray
    params: str


def granularity(fine: list[ColdLap], methods: dict[str, str]) -> Figure | None:
    """The L1's fill granularity: bytes per miss over the strides below a sector, checked against the documented
    sector and by where the misses fall (each at a multiple of it)."""
    if not fine:
        return None
    fig = make(
        "l1_sector",
        "sector_bytes",
        "B",
        "L1 fill granularity (sector size)",
        lambda v: v,
        [np.concatenate([f.per_miss for f in fine])],
        f"bytes per cold miss at strides {', '.join(f'{f.stride:g}' for f in fine)} B (each launch's stride / miss "
        "share)",
        [f.params for f in fine],
        methods.get("l1_sector", ""),
    )
    if fig is None:
        return None
    unit = max(1, round(fig.value))
    on = sum(int(f.missed[:, f.offsets % unit == 0].sum()) for f in fine)
    share = on / max(1, sum(int(f.missed.sum()) for f in fine))
    placed = Check(
        "miss offsets",
        "agree" if share >= ON_SECTOR else "disagree",
        f"{share:.1%} of the cold misses at a multiple of {unit} B from the chain's start (at least {ON_SECTOR:.0%})",
    )
    documented = Check(
        "documented",
        "agree" if abs(fig.value - SECTOR) <= 0.1 * SECTOR else "disagree",
        f"{fig.value:.4g} B vs the {SECTOR} B sector of the {DOCUMENTED}",
        evidence=REFERENCE,
    )
    fig.checks = [placed, documented]
    return fig


def carveout_l1(raw: pd.DataFrame, percent: float) -> tuple[float, str] | None:
    """The L1 (KB) the guide's carveouts leave at `percent`: the total less the smallest shared-memory capacity that
    holds percent of the largest (at least the runtime's per-block reserve); None where the arch is not documented."""
    v = version(raw)
    total, table = memory.L1_SHARED_KB.get(v), CARVEOUTS_KB.get(v)
    if total is None or table is None:
        return None
    attr = attributes(raw)
    biggest = attr.get("smem_per_sm", table[-1] * 1024) / 1024
    reserved = attr.get("smem_reserved_per_block", 1024) / 1024
    config = next((c for c in table if c >= max(percent / 100 * biggest, reserved)), table[-1])
    what = (
        f"{total[0]} KB L1+shared less the {config} KB shared-memory capacity that first holds {percent:g}% of "
        f"{biggest:g} KB (and the {reserved:g} KB reserved per block): CUDA C++ Programming Guide, carveouts of sm_{v}"
    )
    return float(total[0] - config), what


def capacity(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per carveout (l1_capacity) and stride (l1_line): the L1-hit level's last footprint; the carveout's L1 checked
    against the guide's; the line size from how the capacity footprint grows with the stride."""
    out: list[Figure | None] = []
    held: dict[float, float] = {}
    for case, axis in (("l1_capacity", "carveout"), ("l1_line", "stride_b")):
        for value in axis_values(raw, case, "latency", axis):
            pts = curve(raw, case, "latency", "footprint_kb", **{axis: value})
            found = levels(pts)
            if not found or found[0][1] + 1 >= len(pts):
                continue
            last, beyond = pts["footprint_kb"].iloc[found[0][1]], pts["footprint_kb"].iloc[found[0][1] + 1]
            stride = float(parse_params(pts["params"].iloc[0])["stride_b"])
            if (case == "l1_capacity" and value == 0) or case == "l1_line":
                held[stride] = last
            label = f"carveout {value:g}%" if case == "l1_capacity" else f"stride {value:g} B, carveout 0%"
            fig = Figure(
                case=case,
                metric="l1_capacity",
                unit="KB",
                kind="derived",
                name=f"L1 capacity footprint ({label})",
                value=float(last),
                spread=math.nan,
                samples=len(pts),
                derivation=f"the last footprint on the L1-hit level ({kb_text(last)}); {kb_text(beyond)} is off it",
                points=tuple(pts["params"].iloc[: found[0][1] + 2]),
                method=methods.get(case, ""),
            )
            if case == "l1_capacity":
                fig.checks = carveout_checks(raw, value, last, beyond)
            out.append(fig)
    out.append(line_size(held, methods))
    return keep(out)


def carveout_checks(raw: pd.DataFrame, percent: float, last: float, beyond: float) -> list[Check]:
    """The L1 a carveout leaves by the guide: above the total contradicts; inside the measured bracket verifies."""
    found = carveout_l1(raw, percent)
    if found is None:
        return [Check("documented", "n/a", f"no documented carveouts for {run_of(raw)[0]}", evidence=REFERENCE)]
    l1, what = found
    total = float(memory.L1_SHARED_KB[version(raw)][0])
    tol = memory.CAPACITY_TOLERANCE
    bound = Check("device bound", "disagree" if last > total * (1 + tol) else "agree", f"{kb_text(last)} vs {what}")
    inside = last * (1 - tol) <= l1 <= beyond * (1 + tol)
    detail = (
        f"the level ends between {kb_text(last)} and {kb_text(beyond)}: {'holds' if inside else 'does not hold'} "
        f"{kb_text(l1)} ({what}; the carveout is a preference the driver may round)"
    )
    return [bound, Check("documented", "agree" if inside else "n/a", detail, evidence=REFERENCE)]


def line_size(held: dict[float, float], methods: dict[str, str]) -> Figure | None:
    """The line: the largest stride whose capacity footprint equals the finest stride's, where the next stride's is
    about twice it (a chain past the line touches one line per stride)."""
    strides = sorted(held)
    if len(strides) < 3:
        return None
    base = held[strides[0]]
    same = [s for s in strides if held[s] <= base * memory.BRACKET and held[s] >= base / memory.BRACKET]
    line = max(same)
    after = [s for s in strides if s > line]
    ratio = held[after[0]] / held[line] if after else math.nan
    text = ", ".join(f"{s:g} B: {kb_text(held[s])}" for s in strides)
    fig = Figure(
        case="l1_line",
        metric="line_bytes",
        unit="B",
        kind="derived",
        name="L1 line size (capacity against stride)",
        value=float(line),
        spread=math.nan,
        samples=len(strides),
        derivation=f"the L1 capacity footprint per stride at carveout 0% ({text}): the same up to {line:g} B, "
        + (f"{ratio:.3g}x at {after[0]:g} B" if after else "no larger stride measured"),
        method=methods.get("l1_line", ""),
    )
    doubles = bool(after) and abs(ratio / (after[0] / line) - 1) <= GROWTH
    fig.checks = [
        Check(
            "growth past the line",
            "agree" if doubles else "disagree",
            f"capacity footprint {ratio:.3g}x one stride past it, where the stride grows {after[0] / line:.3g}x"
            if after
            else "no stride past it measured",
        ),
        Check(
            "documented",
            "agree" if line == LINE else "disagree",
            f"{line:g} B vs the {LINE} B line of the {DOCUMENTED}",
            evidence=REFERENCE,
        ),
    ]
    return fig


def ways(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per stride the most lines on the L1-hit level; the fewest over the strides (where every line shares one set)
    bound the ways from below, and are the ways where the next count leaves the level short of the L1's capacity in
    lines (a conflict miss), with the hit share one point past them (0: every line evicted before its turn, LRU)."""
    held = {}
    for stride in axis_values(raw, "l1_ways", "latency", "stride_kb"):
        pts = curve(raw, "l1_ways", "latency", "lines", stride_kb=stride)
        found = levels(pts)
        if found and found[0][0] == 0:
            held[stride] = (pts, found[0][1])
    if not held:
        return []
    stride, (pts, j) = min(held.items(), key=lambda kv: kv[1][0]["lines"].iloc[kv[1][1]])
    most = float(pts["lines"].iloc[j])
    text = "; ".join(
        f"{s:g} KB: {p['lines'].iloc[i]:g}" + (f" ({p['lines'].iloc[i + 1]:g} off it)" if i + 1 < len(p) else "")
        for s, (p, i) in held.items()
    )
    room = capacity_lines(raw)
    off = float(pts["lines"].iloc[j + 1]) if j + 1 < len(pts) else math.nan
    conflict = room is not None and off <= room
    if math.isnan(off):
        why = f"the sweep ends on the level at {most:g} lines: no line count left it"
    elif conflict:
        why = f"{off:g} lines leave it, short of the {room:g} lines the L1 holds (l1_capacity, carveout 0): a conflict"
    elif room is None:
        why = f"{off:g} lines leave it; without l1_capacity a conflict cannot be told from the L1 filling up"
    else:
        why = f"{off:g} lines leave it only past the {room:g} lines the L1 holds (l1_capacity, carveout 0): capacity"
    fig = Figure(
        case="l1_ways",
        metric="ways" if conflict else "ways_at_least",
        unit="lines",
        kind="derived",
        name="L1 associativity (ways)" if conflict else "L1 associativity (ways), lower bound",
        value=most,
        spread=math.nan,
        samples=len(pts),
        derivation=f"most lines on the L1-hit level per stride ({text}); the fewest, {most:g} at {stride:g} KB, "
        + (
            f"where every line shares a set; {why} miss"
            if conflict
            else f"held without a conflict miss, so a set holds at least {most:g} lines at every stride measured; {why}"
        ),
        points=tuple(pts["params"].iloc[: j + 2]),
        method=methods.get("l1_ways", ""),
    )
    fig.checks = [Check("documented", "n/a", "NVIDIA documents no L1 associativity", evidence=REFERENCE)]
    if not conflict:
        return [fig]
    hit, past, worst = (pts["value"].iloc[: j + 1].median(), pts["value"].iloc[j + 1], pts["value"].iloc[-1])
    share = replace(
        fig,
        metric="hit_share_past_ways",
        unit="fraction",
        name="L1 hit share one line past the ways (replacement)",
        value=float((worst - past) / (worst - hit)) if worst > hit else math.nan,
        derivation=f"at {off:g} lines {stride:g} KB apart: ({worst:.4g} - {past:.4g}) / "
        f"({worst:.4g} - {hit:.4g}), the latency at the most lines ({pts['lines'].iloc[-1]:g}: all misses) less this, "
        "over it less the L1-hit level's; 0 where the cycle evicts every line before its turn (LRU)",
        checks=list(fig.checks),
    )
    return keep([fig, share if math.isfinite(share.value) else None])


def capacity_lines(raw: pd.DataFrame) -> float | None:
    """The 128 B lines the L1 holds at carveout 0: l1_capacity's last footprint on the L1-hit level (None: not
    measured, or the sweep never left the level)."""
    pts = curve(raw, "l1_capacity", "latency", "footprint_kb", carveout=0)
    found = levels(pts)
    if not found or found[0][0] != 0 or found[0][1] + 1 >= len(pts):
        return None
    return float(pts["footprint_kb"].iloc[found[0][1]]) * 1024 / LINE


# --- L2 --------------------------------------------------------------------------------------------------------------


def l2(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """The L2 bandwidth level and the footprint it falls off at, the camping ratios and the persisting gain."""
    out: list[Figure | None] = []
    pts = curve(raw, "l2_bandwidth", "bandwidth", "footprint_mb")
    found = levels(pts)
    if found and found[0][0] == 0:
        span = found[0]
        out.append(
            level_figure(
                raw,
                "l2_bandwidth",
                "bandwidth",
                pts,
                span,
                "L2 read bandwidth (L2-resident windows)",
                f"the first bandwidth level: {pts['footprint_mb'].iloc[0]:g} to "
                f"{pts['footprint_mb'].iloc[span[1]]:g} MB",
                "GB/s",
            )
        )
        if span[1] + 1 < len(pts):
            out.append(falloff(raw, pts, found, methods.get("l2_bandwidth", "")))
    out += camping(raw, methods) + [persisting(raw, methods)]
    return keep(out)


def falloff(raw: pd.DataFrame, pts: pd.DataFrame, found: list[tuple[int, int]], method: str) -> Figure:
    """The L2 level's last footprint, bracketed by the next level's first (or the next point where the sweep ends
    in no level): it stands on those two plateau ends only, the transition points between them (at the cliff, where
    launches alternate between mostly hits and mostly misses) named with their spread but not stood on."""
    i = found[0][1]
    j = found[1][0] if len(found) > 1 else i + 1
    last, beyond = float(pts["footprint_mb"].iloc[i]), float(pts["footprint_mb"].iloc[j])
    between = [
        f"{pts['footprint_mb'].iloc[k]:g} MB: {pts['value'].iloc[k]:.4g} GB/s, launches from "
        f"{np.min(x):.4g} to {np.max(x):.4g}"
        for k in range(i + 1, j)
        for x in [samples(raw, "l2_bandwidth", "bandwidth", pts["params"].iloc[k])]
    ]
    nxt = "the DRAM level's first" if len(found) > 1 else "the sweep's next point (no level after it)"
    fig = Figure(
        case="l2_bandwidth",
        metric="falloff_mb",
        unit="MB",
        kind="derived",
        name="L2 bandwidth fall-off footprint",
        value=last,
        spread=math.nan,
        samples=len(pts),
        derivation=f"the last footprint on the L2 bandwidth level ({pts['value'].iloc[i]:.4g} GB/s); {beyond:g} MB is "
        f"{nxt} ({pts['value'].iloc[j]:.4g} GB/s): the window falls off between {last:g} and {beyond:g} MB"
        + (
            f"; transition between them, stood on by no figure (at the cliff a launch's window is mostly hits or "
            f"mostly misses): {'; '.join(between)}"
            if between
            else ""
        ),
        points=(pts["params"].iloc[i], pts["params"].iloc[j]),
        method=method,
    )
    fig.checks = falloff_checks(raw, last, beyond)
    return fig


def falloff_checks(raw: pd.DataFrame, last: float, beyond: float) -> list[Check]:
    """The fall-off against the device's L2 size (l2_capacity): a bound (the L2 level cannot last past it), and a
    verification where the bracket holds it (every SM's reads keep about the whole L2 resident)."""
    size = attributes(raw).get("l2_capacity")
    if size is None:
        return [Check("device size", "n/a", "device_geometry not measured in this run", evidence=REFERENCE)]
    whole = size / 2**20
    tol = memory.CAPACITY_TOLERANCE
    bound = Check(
        "device bound",
        "disagree" if last > whole * (1 + tol) else "agree",
        f"{last:g} MB vs the device's {whole:g} MB L2 (l2_capacity)",
    )
    inside = last * (1 - tol) <= whole <= beyond * (1 + tol) and beyond <= last * memory.BRACKET
    if inside:
        detail = (
            f"falls off between {last:g} and {beyond:g} MB, which holds the device's whole {whole:g} MB L2 "
            "(l2_capacity): the window every SM reads stays L2-resident up to about the whole L2, not half of it"
        )
    elif beyond > last * memory.BRACKET:
        detail = f"falls off between {last:g} and {beyond:g} MB: too coarse a bracket to confirm the {whole:g} MB L2"
    else:
        detail = (
            f"falls off between {last:g} and {beyond:g} MB, short of the device's whole {whole:g} MB L2 "
            "(l2_capacity): the SMs' reads keep less than the whole L2 resident"
        )
    return [bound, Check("device size", "agree" if inside else "n/a", detail, evidence=REFERENCE)]


def camping(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure | None]:
    """GB/s at each odd stride over GB/s at the power of two below it."""
    pts = curve(raw, "l2_camping", "bandwidth", "stride_lines")
    by = dict(zip(pts["stride_lines"], pts["params"], strict=True))
    out: list[Figure | None] = []
    for s, params in by.items():
        if s >= 2 and int(s) & (int(s) - 1) == 0 and s + 1 in by:
            out.append(
                make(
                    "l2_camping",
                    "camping_ratio",
                    "ratio",
                    f"L2 camping ratio, stride {s + 1:g} over {s:g} lines",
                    lambda odd, even: odd / even,
                    [
                        samples(raw, "l2_camping", "bandwidth", by[s + 1]),
                        samples(raw, "l2_camping", "bandwidth", params),
                    ],
                    f"GB/s at stride {s + 1:g} lines over GB/s at {s:g} (the same pages; a power of two may map "
                    "every line to few L2 slices)",
                    [params, by[s + 1]],
                    methods.get("l2_camping", ""),
                )
            )
    return out


def persisting(raw: pd.DataFrame, methods: dict[str, str]) -> Figure | None:
    """GB/s with the persisting window over without; at most what removing the hot buffer's DRAM reads can give."""
    on, off = canonical_params({"persist": 1}), canonical_params({"persist": 0})
    parts = [samples(raw, "l2_persist", "bandwidth", p) for p in (on, off)]
    fig = make(
        "l2_persist",
        "persisting_gain",
        "ratio",
        "L2 persisting-window gain",
        lambda a, b: a / b,
        parts,
        "GB/s with a 16 MiB persisting access-policy window over the hot buffer over GB/s without",
        [off, on],
        methods.get("l2_persist", ""),
    )
    size = attributes(raw).get("l2_capacity")
    if fig is None or size is None:
        return fig
    chunk = math.ceil(size / 2**23) * 8  # MiB: the streamed chunk per pass, the L2 rounded up to 8 MiB rounds
    most = (chunk + 16) / chunk
    fig.checks = [
        Check(
            "bound",
            "disagree" if fig.value > most * 1.05 else "agree",
            f"{fig.value:.3g} vs {most:.3g}: each pass "
            f"reads 16 MiB hot and {chunk:g} MiB streamed, so hot hits in L2 can at most spare the hot DRAM reads",
        )
    ]
    return fig


def address_map(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per SM slot of l2_address_map: latency_modes over its loads (consecutive lines, address order), the far share
    and the interleave of near and far lines; for the second slot, the share of lines placed as the first places
    them."""
    loads = raw[(raw["case"] == "l2_address_map") & (raw["metric"] == "load_latency")]
    out: list[Figure | None] = []
    first: tuple[str, np.ndarray] | None = None
    for params in sorted(loads["params"].unique(), key=lambda p: parse_params(p)["sm_slot"]):
        g = loads[loads["params"] == params].sort_values("repeat")
        x, per = g["value"].to_numpy(float), int(g["iterations"].iloc[0])
        if len(x) % per or len(x) // per < 2:
            continue
        m = latency_modes.modes(x, per)
        placed = latency_modes.sides(x, per, m)
        where = f"SM slot {parse_params(params)['sm_slot']}, SM {int(g['smid'].iloc[0])}"
        stem = f"{m.loads} loads ({len(x) // per} launches of {per} consecutive lines); {latency_modes.reading(m)}"
        tied = m.clusters == 2 and m.agreement >= latency_modes.ADDRESS_BOUND
        base = Figure(
            case="l2_address_map",
            metric="far_share",
            unit="fraction",
            kind="derived",
            name=f"L2 far share of consecutive lines ({where})",
            value=float(m.far_share),
            spread=math.nan,
            samples=m.loads,
            derivation=f"{stem}: the upper cluster's share of the L2 hits",
            params=params,
            points=(params,),
            method=methods.get("l2_address_map", ""),
        )
        agreement = Check(
            "line agreement",
            "agree" if tied else "disagree" if m.clusters == 2 else "n/a",
            f"{m.agreement:.0%} of the lines on one side of the cut in every launch (partitions need >= "
            f"{latency_modes.ADDRESS_BOUND:.0%})"
            if m.clusters == 2
            else "one latency cluster: no partition split",
        )
        base.checks = [agreement]
        out.append(base)
        if tied:
            out.append(interleave(base, placed))
        if first is None:
            first = (params, placed)
        elif tied:
            same = latency_modes.same_sides(first[1], placed)
            out.append(
                replace(
                    base,
                    metric="same_sides",
                    name=f"L2 lines placed as slot {parse_params(first[0])['sm_slot']} places them ({where})",
                    value=same,
                    derivation="of the lines both slots place, the share on the same side: about 1 for an SM of "
                    "the same partition, 0 for one of the other (each one's far lines the other's near)",
                    points=(first[0], params),
                    checks=[agreement],
                )
                if math.isfinite(same)
                else None
            )
    return keep(out)


def interleave(base: Figure, placed: np.ndarray) -> Figure | None:
    """The interleave of near and far lines: the largest power of two (in 128 B lines) that divides every run of
    consecutive lines on one side, runs cut by the window's ends or an unplaced line left out."""
    runs, start = [], 0
    for k in range(1, len(placed) + 1):
        if k == len(placed) or placed[k] != placed[start]:
            if start > 0 and k < len(placed) and placed[start] >= 0:
                runs.append(k - start)
            start = k
    if not runs:
        return None
    unit = min(r & -r for r in runs)  # the lowest set bit common to all: the largest power of two dividing each
    return replace(
        base,
        metric="interleave_bytes",
        unit="B",
        name=base.name.replace("L2 far share of consecutive lines", "L2 partition interleave"),
        value=float(unit * LINE),
        derivation=f"{len(runs)} whole runs of consecutive lines on one side of the cut, {min(runs)} to {max(runs)} "
        f"lines long: each a multiple of {unit} line{'s' * (unit != 1)} ({unit * LINE} B); the partition of an address "
        "changes at most every that many bytes",
        checks=list(base.checks),
    )


def figures(frames: dict[str, pd.DataFrame], generic: list[Figure], cases: dict[str, Case]) -> list[Figure]:
    """Every derived figure of the geometry category's run."""
    raw = frames.get("raw")
    if raw is None or raw.empty:
        return []
    parts = (tlb, sector, capacity, ways, l2, address_map, geometry_caches.figures)
    return [f for part in parts for f in part(raw, methods())]
