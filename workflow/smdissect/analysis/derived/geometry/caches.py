"""Derived figures of the geometry category's other caches and operators: the constant caches' levels and sizes and
a divergent constant load's cost per address (const_*), the read-only and texture paths' levels and sizes
(nc_footprint, tex_footprint), the L1 hit share a load finds after each store operator (reload_*), the latency a
prefetch saves (prefetch_*), and the constant memory the device reports (cache_attributes)."""

from __future__ import annotations

import math

import pandas as pd

from ....core.tables import canonical_params, kb_text
from ...figure_model import REFERENCE, Check, Figure
from ..samples import keep, make, samples
from .curves import curve, level_figure, levels

CONSTANT_MEMORY = 65536  # B: CUDA C++ Programming Guide, Technical Specifications, "constant memory size" (64 KB)
CONSTANT_WORKING_SET = 8192  # B: the same table's "cache working set per SM for constant memory" (8 KB)
GUIDE = "CUDA C++ Programming Guide, Technical Specifications per compute capability"
FOOTPRINTS = {  # case: (axis, bytes per axis unit, what it reads)
    "const_footprint": ("footprint_b", 1, "ld.const"),
    "nc_footprint": ("footprint_kb", 1024, "ld.global.nc"),
    "tex_footprint": ("footprint_kb", 1024, "tex1Dfetch"),
}
STORES = {
    "wb": "st.global.wb",
    "cg": "st.global.cg",
    "cs": "st.global.cs",
    "wt": "st.global.wt",
    "na": "st.global.L1::no_allocate",
}
PREFETCHES = {"l2": "prefetch.global.L2", "l1": "prefetch.global.L1"}
LEVEL_NAMES = {2: "L2-resident chain", 3: "DRAM chain"}


def byte_text(b: float) -> str:
    """A size as a person writes it: 768 B, 2 KB, 1.5 KB."""
    return f"{b:g} B" if b < 1024 else kb_text(b / 1024)


def footprint_levels(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per footprint case: each level's latency and, where a point past it is off the level, the level's last
    footprint (a cache's size, bracketed by the next point)."""
    out: list[Figure | None] = []
    for case, (axis, unit, reads) in FOOTPRINTS.items():
        pts = curve(raw, case, "latency", axis)
        found = levels(pts)
        for k, span in enumerate(found):
            fig = level_figure(
                raw,
                case,
                "latency",
                pts,
                span,
                f"{reads} level {k + 1} latency",
                "the median of the level's points",
                "cycle",
            )
            if fig is not None:
                fig.method = methods.get(case, "")
                fig.metric = f"level{k + 1}_latency"
            out.append(fig)
            if span[1] + 1 < len(pts):
                out.append(size_figure(raw, case, pts, span, k, unit, reads, methods.get(case, "")))
    return keep(out)


def size_figure(
    raw: pd.DataFrame, case: str, pts: pd.DataFrame, span: tuple[int, int], k: int, unit: int, reads: str, method: str
) -> Figure:
    """The last footprint of level k (KB) with the next point as its bracket, and its checks."""
    axis = FOOTPRINTS[case][0]
    last, beyond = float(pts[axis].iloc[span[1]]) * unit, float(pts[axis].iloc[span[1] + 1]) * unit
    fig = Figure(
        case=case,
        metric=f"level{k + 1}_capacity",
        unit="KB",
        kind="derived",
        name=f"{reads} level {k + 1} capacity footprint",
        value=last / 1024,
        spread=math.nan,
        samples=len(pts),
        derivation=f"the last footprint on level {k + 1} ({byte_text(last)}); {byte_text(beyond)} is off it",
        points=tuple(pts["params"].iloc[span[0] : span[1] + 2]),
        method=method,
    )
    fig.checks = const_checks(last, beyond) if case == "const_footprint" else [l1_check(raw, last, beyond)]
    return fig


def const_checks(last: float, beyond: float) -> list[Check]:
    """A constant cache's size: within the 64 KB of constant memory; the guide's 8 KB working set where the bracket
    holds it (another level's bracket says nothing of it)."""
    bound = Check(
        "device bound",
        "disagree" if last > CONSTANT_MEMORY else "agree",
        f"{byte_text(last)} vs 64 KB of constant memory",
    )
    holds = last <= CONSTANT_WORKING_SET < beyond
    detail = (
        f"the level ends between {byte_text(last)} and {byte_text(beyond)}: "
        f"{'holds' if holds else 'not'} the 8 KB constant working set per SM ({GUIDE})"
    )
    return [bound, Check("documented", "agree" if holds else "n/a", detail, evidence=REFERENCE)]


def l1_check(raw: pd.DataFrame, last: float, beyond: float) -> Check:
    """The read-only or texture path's first level against the L1's (l1_capacity at carveout 0, ld.global.ca): one
    unified L1/texture cache since Volta, so the two brackets must overlap."""
    pts = curve(raw, "l1_capacity", "latency", "footprint_kb", carveout=0.0)
    found = levels(pts)
    if not found or found[0][1] + 1 >= len(pts):
        return Check("same cache", "n/a", "l1_capacity at carveout 0 gives no L1 bracket here", evidence=REFERENCE)
    lo, hi = (
        float(pts["footprint_kb"].iloc[found[0][1]]) * 1024,
        float(pts["footprint_kb"].iloc[found[0][1] + 1]) * 1024,
    )
    overlap = last < hi and lo < beyond
    return Check(
        "same cache",
        "agree" if overlap else "disagree",
        f"ends between {byte_text(last)} and {byte_text(beyond)}; the ld.global.ca L1 level between {byte_text(lo)} "
        f"and {byte_text(hi)} (the unified L1/texture cache)",
        evidence=REFERENCE,
    )


def divergent(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Cycles each further distinct address adds to a warp's constant load: (t(32) - t(1)) / 31."""
    one, all_ = (canonical_params({"distinct": d}) for d in (1, 32))
    parts = [samples(raw, "const_divergent", "latency", p) for p in (all_, one)]
    fig = make(
        "const_divergent",
        "per_address",
        "cycle",
        "divergent ld.const: cycles per further distinct address",
        lambda a, b: (a - b) / 31,
        parts,
        "(cycles per warp load with 32 distinct addresses less with 1) / 31: the guide serialises a constant "
        "load per distinct address",
        [one, all_],
        methods.get("const_divergent", ""),
    )
    if fig is not None:
        fig.checks = [
            Check(
                "serialised",
                "agree" if fig.value > 0 else "disagree",
                f"{fig.value:.3g} cycles per address: the guide splits the load per distinct address",
            )
        ]
    return keep([fig])


def reload_shares(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per store operator: the share of the chase's loads that still hit the L1 after the store, between the L1 hit
    (reload_none) and the L2 hit (prefetch_none on its L2-resident chain): 1 kept, 0 evicted or invalidated."""
    none = canonical_params({"footprint_kb": 4, "stride_b": 128})
    hit = samples(raw, "reload_none", "latency", none)
    miss = samples(raw, "prefetch_none", "latency", canonical_params({"level": 2}))
    out: list[Figure | None] = []
    for op, ptx in STORES.items():
        fig = make(
            f"reload_{op}",
            "l1_hit_share",
            "fraction",
            f"L1 hit share of a load after {ptx} to its line",
            lambda s, h, m: (m - s) / (m - h),
            [samples(raw, f"reload_{op}", "latency", none), hit, miss],
            "(L2-hit latency - latency after the store) / (L2-hit latency - L1-hit latency): the L1 hit from "
            "reload_none, the L2 hit from prefetch_none's L2-resident chain (ld.global.ca past the L1)",
            [none],
            methods.get(f"reload_{op}", ""),
            none,
        )
        if fig is not None:
            inside = -0.1 <= fig.value <= 1.1
            fig.checks = [
                Check(
                    "between levels",
                    "agree" if inside else "disagree",
                    f"{fig.value:.3g}: a load after the store costs between an L1 and an L2 hit",
                )
            ]
        out.append(fig)
    return keep(out)


def prefetch_savings(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per prefetch and chain: cycles per load without it less with it."""
    out: list[Figure | None] = []
    for level, where in LEVEL_NAMES.items():
        params = canonical_params({"level": level})
        base = samples(raw, "prefetch_none", "latency", params)
        for op, ptx in PREFETCHES.items():
            out.append(
                make(
                    f"prefetch_{op}",
                    "latency_saved",
                    "cycle",
                    f"latency saved by {ptx} ({where})",
                    lambda a, b: a - b,
                    [base, samples(raw, f"prefetch_{op}", "latency", params)],
                    f"cycles per load without a prefetch less with {ptx} 16 lines ahead",
                    [params],
                    methods.get(f"prefetch_{op}", ""),
                    params,
                )
            )
    return keep(out)


def constant_memory(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """The constant memory the device reports, against the guide's 64 KB."""
    rows = raw[(raw["case"] == "cache_attributes") & (raw["metric"] == "constant_memory")]
    if rows.empty:
        return []
    fig = make(
        "cache_attributes",
        "constant_memory",
        "B",
        "constant memory (cudaDevAttrTotalConstantMemory)",
        lambda v: v,
        [rows["value"].to_numpy(float)],
        "the device attribute's median",
        list(dict.fromkeys(rows["params"])),
        methods.get("cache_attributes", ""),
    )
    if fig is not None:
        fig.checks = [
            Check(
                "documented",
                "agree" if fig.value == CONSTANT_MEMORY else "disagree",
                f"{byte_text(fig.value)} vs 64 KB ({GUIDE})",
                evidence=REFERENCE,
            )
        ]
    return keep([fig])


# joined into derived.geometry's parts
PARTS = (footprint_levels, divergent, reload_shares, prefetch_savings, constant_memory)
