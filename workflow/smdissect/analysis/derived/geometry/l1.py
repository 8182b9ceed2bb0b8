"""The L1's size, line and ways of the geometry category: per shared-memory carveout and stride the L1-hit level's last
footprint, checked against the carveouts the guide documents (l1_capacity, l1_line), the line size from how that
footprint grows with the stride (l1_line), and the ways with the hit share one line past them (l1_ways)."""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd

from ....core import archs
from ....core.tables import kb_text, parse_params
from ...figure_model import REFERENCE, Check, Figure
from ..memory.device import BRACKET, CAPACITY_TOLERANCE, L1_SHARED_KB
from ..samples import keep, run_of
from .curves import attributes, axis_values, curve, levels
from .sector import DOCUMENTED, LINE

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


def version(raw: pd.DataFrame) -> int:
    """The SM version of the run's arch (-1 where unknown)."""
    return archs.arch_version(run_of(raw)[0]) or -1


def carveout_l1(raw: pd.DataFrame, percent: float) -> tuple[float, str] | None:
    """The L1 (KB) the guide's carveouts leave at `percent`: the total less the smallest shared-memory capacity that
    holds percent of the largest (at least the runtime's per-block reserve); None where the arch is not documented."""
    v = version(raw)
    total, table = L1_SHARED_KB.get(v), CARVEOUTS_KB.get(v)
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
    total = float(L1_SHARED_KB[version(raw)][0])
    tol = CAPACITY_TOLERANCE
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
    same = [s for s in strides if held[s] <= base * BRACKET and held[s] >= base / BRACKET]
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


def held_lines(raw: pd.DataFrame) -> dict[float, tuple[pd.DataFrame, int]]:
    """Per l1_ways stride whose curve starts on the L1-hit level: the curve and the index of the level's last point."""
    held: dict[float, tuple[pd.DataFrame, int]] = {}
    for stride in axis_values(raw, "l1_ways", "latency", "stride_kb"):
        pts = curve(raw, "l1_ways", "latency", "lines", stride_kb=stride)
        found = levels(pts)
        if found and found[0][0] == 0:
            held[stride] = (pts, found[0][1])
    return held


def ways_reason(most: float, off: float, room: float | None) -> tuple[bool, str]:
    """Whether the line count past the level (`off`) is a conflict miss: it leaves the level short of the `room` lines
    the L1 holds; and why, in words."""
    conflict = room is not None and off <= room
    if math.isnan(off):
        why = f"the sweep ends on the level at {most:g} lines: no line count left it"
    elif conflict:
        why = f"{off:g} lines leave it, short of the {room:g} lines the L1 holds (l1_capacity, carveout 0): a conflict"
    elif room is None:
        why = f"{off:g} lines leave it; without l1_capacity a conflict cannot be told from the L1 filling up"
    else:
        why = f"{off:g} lines leave it only past the {room:g} lines the L1 holds (l1_capacity, carveout 0): capacity"
    return conflict, why


def ways(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per stride the most lines on the L1-hit level; the fewest over the strides (where every line shares one set)
    bound the ways from below, and are the ways where the next count leaves the level short of the L1's capacity in
    lines (a conflict miss), with the hit share one point past them (0: every line evicted before its turn, LRU)."""
    held = held_lines(raw)
    if not held:
        return []
    stride, (pts, j) = min(held.items(), key=lambda kv: kv[1][0]["lines"].iloc[kv[1][1]])
    most = float(pts["lines"].iloc[j])
    text = "; ".join(
        f"{s:g} KB: {p['lines'].iloc[i]:g}" + (f" ({p['lines'].iloc[i + 1]:g} off it)" if i + 1 < len(p) else "")
        for s, (p, i) in held.items()
    )
    off = float(pts["lines"].iloc[j + 1]) if j + 1 < len(pts) else math.nan
    conflict, why = ways_reason(most, off, capacity_lines(raw))
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
    return keep([fig, hit_share_past(fig, pts, j, off, stride)]) if conflict else [fig]


def hit_share_past(fig: Figure, pts: pd.DataFrame, j: int, off: float, stride: float) -> Figure | None:
    """The L1 hit share one line past the ways (`fig`): where the latency there lies between the L1-hit level's and
    that at the most lines (all misses); None where the two are not apart."""
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
    return share if math.isfinite(share.value) else None


def capacity_lines(raw: pd.DataFrame) -> float | None:
    """The 128 B lines the L1 holds at carveout 0: l1_capacity's last footprint on the L1-hit level (None: not
    measured, or the sweep never left the level)."""
    pts = curve(raw, "l1_capacity", "latency", "footprint_kb", carveout=0)
    found = levels(pts)
    if not found or found[0][0] != 0 or found[0][1] + 1 >= len(pts):
        return None
    return float(pts["footprint_kb"].iloc[found[0][1]]) * 1024 / LINE
