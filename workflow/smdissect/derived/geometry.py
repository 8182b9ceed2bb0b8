"""Derived figures of the geometry category: each TLB level's latency, reach and miss penalty (tlb_chase), the L1's
fill granularity (l1_sector), capacity per shared-memory carveout, line size (l1_capacity, l1_line) and ways
(l1_ways), and the L2's bandwidth level and fall-off footprint, camping ratios and persisting gain (l2_*). Levels
are memory's: runs of at least MIN_POINTS consecutive points within NEAR of their median (derived.memory.runs)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .. import archs, catalog, latency_modes, stats
from ..figure_model import REFERENCE, Check, Figure
from ..tables import canonical_params, kb_text, parse_params
from . import memory
from .samples import keep, make, run_of, samples

PAGE_MB = 2  # cudaMalloc's page: one TLB entry per page the chase touches
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
# A100 and H100 whitepapers: the L2 is two partitions, each caching the data its own GPCs' SMs read, so data that
# every SM reads is held in both: the footprint all SMs keep L2-resident is about half the L2
L2_PARTITIONS = {80: 2, 90: 2}
GROWTH = 0.25  # past the line, the capacity footprint grows with the stride to within the footprints' steps


@functools.cache
def methods() -> dict[str, str]:
    """Each geometry case's `method:` from the manifest (none where it cannot be read: a method is a note)."""
    try:
        return {c.id: c.method for c in catalog.load(catalog.KERNELS, "geometry")}
    except Exception:  # any manifest problem: the figures come without their method
        return {}


def curve(raw: pd.DataFrame, case: str, metric: str, axis: str, **fixed: float) -> pd.DataFrame:
    """One case's median per point along `axis` (other axes at `fixed`): params, the axis and value, in axis order."""
    rows = raw[(raw["case"] == case) & (raw["metric"] == metric)]
    if rows.empty:
        return pd.DataFrame(columns=["params", axis, "value"])
    out = stats.summary(rows, ["params"], sort=False)[["params", "value"]]
    for key in (axis, *fixed):
        out[key] = out["params"].map(lambda p, k=key: float(parse_params(p).get(k, math.nan)))
    for key, want in fixed.items():
        out = out[out[key] == want]
    return out.sort_values(axis, ignore_index=True)


def axis_values(raw: pd.DataFrame, case: str, metric: str, axis: str) -> list[float]:
    """The distinct values of one axis of a case's points, in order."""
    rows = raw[(raw["case"] == case) & (raw["metric"] == metric)]
    return sorted({float(parse_params(p).get(axis, math.nan)) for p in rows["params"].unique()})


def levels(pts: pd.DataFrame) -> list[tuple[int, int]]:
    """memory's levels of a curve (index ranges of its runs)."""
    return memory.runs(pts["value"].tolist())


def level_figure(
    raw: pd.DataFrame, case: str, metric: str, pts: pd.DataFrame, span: tuple[int, int], name: str, how: str, unit: str
) -> Figure | None:
    """A level's value: the median of its points' medians, its spread the range of all their samples."""
    i, j = span
    params = pts["params"].iloc[i : j + 1].tolist()
    parts = [samples(raw, case, metric, p) for p in params]
    fig = make(case, metric, unit, name, lambda *m: float(np.median(m)), parts, how, params)
    if fig is not None:
        fig.spread = float(np.ptp(np.concatenate(parts)))
    return fig


def with_checks(checks: list[Check], fig: Figure | None) -> Figure | None:
    """`fig` carrying checks its deriver made."""
    if fig is not None:
        fig.checks = [*checks, *fig.checks]
    return fig


def version(raw: pd.DataFrame) -> int:
    """The SM version of the run's arch (-1 where unknown)."""
    return archs.arch_version(run_of(raw)[0]) or -1


def attributes(raw: pd.DataFrame) -> dict[str, float]:
    """device_geometry's attributes (medians), empty where it did not run."""
    rows = raw[raw["case"] == "device_geometry"]
    return {str(m): float(g.median()) for m, g in rows.groupby("metric")["value"]}


# --- TLB -------------------------------------------------------------------------------------------------------------


def tlb(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per stride: each latency level over the page count, the reach of the TLB level that ends with it (entries = its
    last page count, bounded by the next point) and the penalty of missing it (the next level's latency less its)."""
    out: list[Figure | None] = []
    doc = [Check("documented", "n/a", NO_TLB_DOC, evidence=REFERENCE)]
    for case in ("tlb_chase", "tlb_chase_wide"):
        pts = curve(raw, case, "latency", "pages")
        found = levels(pts)
        if not found:
            continue
        stride = int(parse_params(pts["params"].iloc[0]).get("stride_mb", PAGE_MB))
        where = f"{stride} MB stride"
        figs = []
        for k, span in enumerate(found):
            first, last = pts["pages"].iloc[span[0]], pts["pages"].iloc[span[1]]
            what = "every page translated by the first TLB level" if k == 0 else f"past TLB level {k}"
            figs.append(
                level_figure(
                    raw,
                    case,
                    "latency",
                    pts,
                    span,
                    f"TLB level {k} latency ({where})",
                    f"latency level {k} of the chase ({what}): the median of its points' medians, {first:g} to "
                    f"{last:g} pages; every load an L2 hit (.cg, 4096 lines per lap)",
                    "cycle",
                )
            )
            figs[-1] = _named(figs[-1], f"level{k}_latency")
            if k + 1 < len(found) or span[1] + 1 < len(pts):
                figs += reach(raw, case, pts, span, k, where, found[k + 1] if k + 1 < len(found) else None)
        out += [with_checks(doc, f) for f in figs]
        out.append(tlb_levels(pts, found, case, where))
    return keep(out)


def _named(fig: Figure | None, metric: str) -> Figure | None:
    if fig is not None:
        fig.metric = metric
    return fig


def reach(
    raw: pd.DataFrame,
    case: str,
    pts: pd.DataFrame,
    span: tuple[int, int],
    k: int,
    where: str,
    nxt: tuple[int, int] | None,
) -> list[Figure | None]:
    """The reach of TLB level k+1 (the pages level k still holds) and, where a next level follows, its miss penalty."""
    last, beyond = pts["pages"].iloc[span[1]], pts["pages"].iloc[span[1] + 1]
    params = pts["params"].iloc[span[0] : span[1] + 2].tolist()
    n = sum(len(samples(raw, case, "latency", p)) for p in params)
    entries = Figure(
        case=case,
        metric=f"tlb{k + 1}_entries",
        unit="pages",
        kind="derived",
        name=f"TLB level {k + 1} reach in 2 MB pages ({where})",
        value=float(last),
        spread=math.nan,
        samples=n,
        derivation=f"the last page count on latency level {k}; at {beyond:g} pages the latency has left it: the "
        f"level holds between {last:g} and {beyond:g} translations ({last * PAGE_MB:g} to {beyond * PAGE_MB:g} MB of "
        "2 MB pages)",
        params="",
        points=tuple(params),
    )
    mb = replace(
        entries,
        metric=f"tlb{k + 1}_reach",
        unit="MB",
        value=float(last * PAGE_MB),
        checks=[],
        name=f"TLB level {k + 1} reach ({where})",
    )
    out: list[Figure | None] = [entries, mb]
    if nxt is not None:
        ours = [samples(raw, case, "latency", p) for p in pts["params"].iloc[span[0] : span[1] + 1]]
        theirs = [samples(raw, case, "latency", p) for p in pts["params"].iloc[nxt[0] : nxt[1] + 1]]
        penalty = make(
            case,
            f"tlb{k + 1}_miss_penalty",
            "cycle",
            f"TLB level {k + 1} miss penalty ({where})",
            lambda a, b: b - a,
            [np.concatenate(ours), np.concatenate(theirs)],
            f"latency level {k + 1} less level {k} (all their samples): what a load pays where TLB level {k + 1} "
            "misses and the next level (or the page walk) translates",
            pts["params"].iloc[span[0] : nxt[1] + 1].tolist(),
        )
        out.append(penalty)
    return out


def tlb_levels(pts: pd.DataFrame, found: list[tuple[int, int]], case: str, where: str) -> Figure:
    """How many TLB levels the sweep shows: one per step between latency levels, and one more where it ends off a
    level (still rising: a level it does not reach)."""
    steps = len(found) - 1
    tail = found[-1][1] + 1 < len(pts)
    fig = Figure(
        case=case,
        metric="tlb_levels_seen",
        unit="levels",
        kind="derived",
        name=f"TLB levels the sweep shows ({where})",
        value=float(steps + tail),
        spread=math.nan,
        samples=len(pts),
        derivation=f"{len(found)} latency levels over {pts['pages'].iloc[0]:g} to {pts['pages'].iloc[-1]:g} pages: "
        f"{steps} step{'s' * (steps != 1)} between them"
        + (", and the latency still moves past the last level (one more level, not reached)" if tail else ""),
        points=tuple(pts["params"]),
    )
    fig.checks = [Check("documented", "n/a", NO_TLB_DOC, evidence=REFERENCE)]
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
    """Per stride the most lines on the L1-hit level; the ways: the fewest over the strides (where every line shares
    one set), and the hit share one line past them (0: every line evicted before its turn, as LRU on a cycle)."""
    held = {}
    for stride in axis_values(raw, "l1_ways", "latency", "stride_kb"):
        pts = curve(raw, "l1_ways", "latency", "lines", stride_kb=stride)
        found = levels(pts)
        if found and found[0][0] == 0 and found[0][1] + 1 < len(pts):
            held[stride] = (pts, found[0][1])
    if not held:
        return []
    stride, (pts, j) = min(held.items(), key=lambda kv: kv[1][0]["lines"].iloc[kv[1][1]])
    text = "; ".join(f"{s:g} KB: {p['lines'].iloc[i]:g}" for s, (p, i) in held.items())
    method = methods.get("l1_ways", "")
    fig = Figure(
        case="l1_ways",
        metric="ways",
        unit="lines",
        kind="derived",
        name="L1 associativity (ways)",
        value=float(pts["lines"].iloc[j]),
        spread=math.nan,
        samples=len(pts),
        derivation=f"most lines on the L1-hit level per stride ({text}); the fewest, at {stride:g} KB, where every "
        f"line shares a set; {pts['lines'].iloc[j + 1]:g} lines leave it",
        points=tuple(pts["params"].iloc[: j + 2]),
        method=method,
    )
    fig.checks = [Check("documented", "n/a", "NVIDIA documents no L1 associativity", evidence=REFERENCE)]
    hit, past, worst = (pts["value"].iloc[: j + 1].median(), pts["value"].iloc[j + 1], pts["value"].iloc[-1])
    share = replace(
        fig,
        metric="hit_share_past_ways",
        unit="fraction",
        name="L1 hit share one line past the ways (replacement)",
        value=float((worst - past) / (worst - hit)) if worst > hit else math.nan,
        derivation=f"at {pts['lines'].iloc[j + 1]:g} lines {stride:g} KB apart: ({worst:.4g} - {past:.4g}) / "
        f"({worst:.4g} - {hit:.4g}), the latency at the most lines ({pts['lines'].iloc[-1]:g}: all misses) less this, "
        "over it less the L1-hit level's; 0 where the cycle evicts every line before its turn (LRU)",
        checks=list(fig.checks),
    )
    return keep([fig, share if math.isfinite(share.value) else None])


# --- L2 --------------------------------------------------------------------------------------------------------------


def l2(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """The L2 bandwidth level and the footprint it falls off at, the camping ratios and the persisting gain."""
    out: list[Figure | None] = []
    pts = curve(raw, "l2_bandwidth", "bandwidth", "footprint_mb")
    found = levels(pts)
    method = methods.get("l2_bandwidth", "")
    if found and found[0][0] == 0:
        span = found[0]
        last = pts["footprint_mb"].iloc[span[1]]
        out.append(
            level_figure(
                raw,
                "l2_bandwidth",
                "bandwidth",
                pts,
                span,
                "L2 read bandwidth (L2-resident windows)",
                f"the first bandwidth level: {pts['footprint_mb'].iloc[0]:g} to {last:g} MB",
                "GB/s",
            )
        )
        if span[1] + 1 < len(pts):
            beyond = pts["footprint_mb"].iloc[span[1] + 1]
            fig = Figure(
                case="l2_bandwidth",
                metric="falloff_mb",
                unit="MB",
                kind="derived",
                name="L2 bandwidth fall-off footprint",
                value=float(last),
                spread=math.nan,
                samples=len(pts),
                derivation=f"the last footprint on the L2 bandwidth level; at {beyond:g} MB the bandwidth has "
                f"left it ({pts['value'].iloc[span[1] + 1] / pts['value'].iloc[span[1]] - 1:+.1%})",
                points=tuple(pts["params"].iloc[: span[1] + 2]),
                method=method,
            )
            fig.checks = falloff_checks(raw, last, beyond)
            out.append(fig)
    out += camping(raw, methods) + [persisting(raw, methods)]
    return keep(out)


def falloff_checks(raw: pd.DataFrame, last: float, beyond: float) -> list[Check]:
    """The fall-off against the device's L2 (a bound) and the share of it every SM's reads can keep (a partition's,
    where the whitepaper documents partitions)."""
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
    parts = L2_PARTITIONS.get(version(raw))
    if parts is None:
        return [bound, Check("device size", "n/a", f"no documented L2 partitions for {run_of(raw)[0]}", REFERENCE)]
    share = whole / parts
    inside = last * (1 - tol) <= share <= beyond * (1 + tol)
    detail = (
        f"falls off between {last:g} and {beyond:g} MB: {'holds' if inside else 'does not hold'} {share:g} MB, "
        f"one of the {parts} partitions of the {whole:g} MB L2 (A100/H100 whitepapers: each partition caches what "
        "its own SMs read)"
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


def check_attributes(generic: list[Figure], raw: pd.DataFrame) -> None:
    """device_geometry's L2 size and shared memory per SM against the datasheet and guide (memory's checks)."""
    arch, gpu = run_of(raw)
    device = memory.Device(attributes(raw), arch, gpu)
    for f in generic:
        if f.case == "device_geometry" and f.metric in ("l2_capacity", "smem_per_sm"):
            f.checks = [*memory.datasheet_checks(f, device), *f.checks]


def figures(frames: dict[str, pd.DataFrame], generic: list[Figure]) -> list[Figure]:
    """Every derived figure of the geometry category's run (and device_geometry's checks on the generic figures)."""
    raw = frames.get("raw")
    if raw is None or raw.empty:
        return []
    check_attributes(generic, raw)
    return [f for part in (tlb, sector, capacity, ways, l2, address_map) for f in part(raw, methods())]
