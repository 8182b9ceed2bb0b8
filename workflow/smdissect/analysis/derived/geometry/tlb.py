"""The TLB staircase of the geometry category (tlb_chase, tlb_chase_wide, tlb_chase_huge): per stride each latency
level, each miss step with the reach it brackets and what a load pays past it, the reach's lower bound where the sweep
ends on a level, and the steps in plain terms."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ....core.tables import parse_params
from ...figure_model import REFERENCE, Check, Figure
from ..memory.levels import runs
from ..samples import keep, make, samples
from .curves import curve, level_figure, with_checks

TLB_CASES = ("tlb_chase", "tlb_chase_wide", "tlb_chase_huge")  # strides 2 MB, 32 MB, 1 GB
# a TLB latency level: points within 1% of its median (~3 cycles at an L2 hit's ~280): the L2 slices a page count's
# lines fall in move a point by about 1 cycle, a TLB level's miss by more
TLB_NEAR = 0.01
NO_TLB_DOC = "NVIDIA documents no TLB sizes; 4 KB and 64 KB pages cannot be isolated: cudaMalloc maps 2 MB pages"


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
        found = runs(pts["value"].tolist(), TLB_NEAR)
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
