"""The pointer-chase staircase's figures: each level's latency, the capacity where it ends (checked against the
device's report), and the latency at the sweep's end where the curve is on no level."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ....core.tables import kb_text
from ...figure_model import Check, Figure
from ..samples import from_values, keep, samples
from .common import with_checks
from .device import Device, capacity_checks
from .levels import LINE, NEAR, PAGE_KB, Level, curve, levels, line_kb, stride_label, strides

# A cache takes a whole 128 B line (tag and data slot; its 32 B sectors filled as read) for the one word a step reads
CAPACITY_METHOD = (
    "capacity: the KB of distinct 128 B lines the chain touches at the level's last footprint (a cache takes a whole "
    "line for the word a step reads: the footprint itself up to a 128 B stride, one line per slot beyond it, 1/16 of "
    "the footprint at 2048 B), the next point, off the level, bounding it; checked against what the device reports "
    "(device_attributes): a chase from one SM holds about one partition's share of an L2 in partitions "
    "(chase_near_far), each partition caching the data of the SMs wired to it (A100 whitepaper, L2 cache)"
)


def staircase(raw: pd.DataFrame, device: Device, methods: dict[str, str]) -> list[Figure]:
    """Per stride: each level's latency (the median of its points' medians, its spread the range of all their
    samples) and, where the sweep goes on past it, the capacity it shows (`capacity`, checked against `device`);
    beyond the last level a curve still moving gives the latency at its largest footprint, marked as no level."""
    out: list[Figure | None] = []
    method = methods.get("chase", "")
    for stride in strides(raw):
        pts = curve(raw, stride)
        label = stride_label(stride)
        found = levels(pts, stride)
        for lv in found:
            parts = [samples(raw, "chase", "latency", p) for p in lv.params]
            values = np.concatenate(parts)
            medians = [float(np.median(p)) for p in parts]
            metric = "latency" if lv.name == "L1" and stride == 0 else f"{lv.name.lower().replace(' ', '')}_latency"
            pages = math.ceil(lv.footprints[-1] / PAGE_KB)
            out.append(
                Figure(
                    case="chase",
                    metric=metric,
                    unit="cycle",
                    kind="derived",
                    name=f"chase {lv.name} latency ({label})",
                    value=float(np.median(medians)),
                    spread=float(values.max() - values.min()),
                    samples=len(values),
                    derivation=f"level {lv.name} of the {label} chase: the median of the medians of its "
                    f"{len(lv.params)} points, footprints {kb_text(lv.footprints[0])} to {kb_text(lv.footprints[-1])}, "
                    f"each within {NEAR:.0%} of it ({min(medians):.4g} .. {max(medians):.4g}; up to {pages} 2 MB "
                    f"page{'s' * (pages != 1)}, every slot read before the timed steps); spread: the range of all "
                    "their samples",
                    params="",
                    points=lv.params,
                    method=method,
                )
            )
            if lv.after or not math.isnan(lv.next_level):
                out.append(capacity(lv, int(sum(len(p) for p in parts)), method, device))
        tail = _tail(raw, pts, found, label, method)
        if tail is not None:
            out.append(tail)
    return keep(out)


def capacity(lv: Level, n_samples: int, method: str, device: Device) -> Figure:
    """The capacity a level shows: the KB of distinct 128 B lines its chain touches at its last footprint (a strided
    chain one line per slot), bounded by the next point, off the level; checked against the device's report."""
    label, last = stride_label(lv.stride), lv.footprints[-1]
    following = lv.after[0] if lv.after else lv.next_level
    span = " to ".join(dict.fromkeys(kb_text(kb) for kb in (lv.after[:1] + lv.after[-1:])))
    what = f"transition {span}" if lv.after else "no transition point"
    nxt = f", then level at {kb_text(lv.next_level)}" if not math.isnan(lv.next_level) else ""
    held, beyond = line_kb(last, lv.stride), line_kb(following, lv.stride)
    where = (
        f"{kb_text(held)} of distinct 128 B lines, the footprint itself"
        if lv.stride <= LINE
        else f"{kb_text(held)} of distinct 128 B lines: one line per {int(lv.stride)} B slot of {kb_text(last)}"
    )
    off = kb_text(following) if lv.stride <= LINE else f"{kb_text(following)} ({kb_text(beyond)} of lines)"
    fig = Figure(
        case="chase",
        metric=f"{lv.name.lower().replace(' ', '')}_capacity",
        unit="KB",
        kind="derived",
        name=f"chase {lv.name} capacity detected ({label})",
        value=held,
        spread=math.nan,
        samples=n_samples,
        derivation=f"the last footprint of the {lv.name} level of the {label} chase ({where}); the next point, "
        f"{off}, is off it: the capacity lies between the two ({what}{nxt})",
        params="",
        points=lv.params,
        method=f"{method}; {CAPACITY_METHOD}" if method else CAPACITY_METHOD,
    )
    fig.checks = capacity_checks(lv.name, held, beyond, device)
    return fig


def _tail(raw: pd.DataFrame, pts: pd.DataFrame, found: list[Level], label: str, method: str) -> Figure | None:
    """The latency at the largest footprint where it is on no level (the curve still moves at the sweep's end): its
    plateau check says not saturated, which the figure, named for its footprint, does not claim to be."""
    if pts.empty or (found and found[-1].params[-1] == pts["params"].iloc[-1]):
        return None
    last, before = pts.iloc[-1], pts.iloc[-2] if len(pts) > 1 else None
    rise = (
        f"{last['value'] / before['value'] - 1:+.1%} from {kb_text(before['footprint_kb'])} to "
        f"{kb_text(last['footprint_kb'])}"
        if before is not None
        else "one point"
    )
    pages = math.ceil(last["footprint_kb"] / PAGE_KB)
    fig = from_values(
        "chase",
        "tail_latency",
        "cycle",
        f"chase latency at the largest footprint ({label})",
        samples(raw, "chase", "latency", last["params"]),
        f"no level at the sweep's end: {kb_text(last['footprint_kb'])} ({pages} 2 MB pages, every slot "
        f"read before the timed steps) is on no plateau ({rise}): a mix of the last level's hits and "
        "misses (and TLB misses), not one level's latency",
        [last["params"]],
        method,
    )
    named = "named for the footprint it was read at, the figure claims no level: it bounds the next one from below"
    return with_checks(
        [Check("plateau", "disagree", f"not saturated: on no level at the end of the sweep ({rise})", explained=named)],
        fig,
    )
