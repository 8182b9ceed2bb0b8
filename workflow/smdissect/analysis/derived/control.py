"""Figures the control category derives over several points: what a branch path, a divergent if/else, a predicated one
and a call add to the dependent IMAD chain (branch_chain), the instruction-cache levels of the straight-line footprint
sweep (each level's cycles per instruction, the largest footprint on it, and what missing it costs), and what local
memory and a forced spill add."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...core.tables import canonical_params, parse_params
from ..figure_model import Figure
from . import samples as s

CATEGORY = "control"
METRICS = frozenset(
    {
        "call_cost",
        "divergence_cost",
        "divergent_cost",
        "level0_cpi",
        "level0_holds_kb",
        "level0_miss_cost",
        "level1_cpi",
        "level1_holds_kb",
        "level1_miss_cost",
        "level2_cpi",
        "level2_holds_kb",
        "node_overhead",
        "not_taken_cost",
        "per_arm_imad",
        "spill_cost",
        "store_cost",
        "taken_cost",
        "taken_minus_not_taken",
        "uniform_cost",
    }
)  # every metric a figure of this deriver can have

CHAIN = ("branch_chain", "step", "{}")  # 8 dependent IMADs a step: what every branch and call step is measured against
ARM = 8  # IMADs of the chain step and of each branch_divergence leaf
SHORT_ARM = 4  # IMADs of each branch_predicated arm
ACCUMULATORS = 64  # FFMAs a spill_forced / spill_free step
LEVEL_TOLERANCE = 0.1  # a footprint stays on a level while within 10% of the level's first cycles per instruction
MIN_LEVEL_POINTS = 2  # points a level needs; a lone point between two levels is a transition


def chain(raw: pd.DataFrame) -> np.ndarray:
    """branch_chain's samples: cycles per 8 dependent IMADs."""
    return s.samples(raw, *CHAIN)


def branches(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """What each path of the uniform if/else adds to the 8-IMAD step, and taken less not taken."""
    base, pt = chain(raw), "{}"
    taken, not_taken = (s.samples(raw, "branch_uniform", m, pt) for m in ("taken", "not_taken"))
    how = "branch_uniform's {} step less branch_chain's step (the same 8 dependent IMADs, no branch)"
    method = methods.get("branch_uniform", "")
    return s.keep(
        [
            s.make("branch_uniform", "taken_cost", "cycle", "uniform branch, taken path: cycles it adds a step",
                   lambda a, b: a - b, [taken, base], how.format("taken"), [pt], method, pt),
            s.make("branch_uniform", "not_taken_cost", "cycle",
                   "uniform branch, fall-through path (and its jump to the join): cycles it adds a step",
                   lambda a, b: a - b, [not_taken, base], how.format("not_taken"), [pt], method, pt),
            s.make("branch_uniform", "taken_minus_not_taken", "cycle", "uniform branch: taken less not taken",
                   lambda a, b: a - b, [taken, not_taken],
                   "branch_uniform's taken step less its not_taken step (the same SASS, the path chosen by argument)",
                   [pt], method, pt),
        ]
    )  # fmt: skip


def divergence(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per nesting depth: what divergence adds to the uniform step, and per if/else node what it adds beyond running
    the other leaves' IMADs one after another."""
    base, out, method = chain(raw), [], methods.get("branch_divergence", "")
    for pt in s.params_of(raw, "branch_divergence", "divergent"):
        depth = int(parse_params(pt).get("depth", 0))
        if depth < 1:
            continue
        nodes = 2**depth - 1
        div, uni = (s.samples(raw, "branch_divergence", m, pt) for m in ("divergent", "uniform"))
        out.append(
            s.make("branch_divergence", "divergence_cost", "cycle", f"divergence cost at depth {depth}",
                   lambda a, b: a - b, [div, uni],
                   f"divergent less uniform step at depth {depth} ({2**depth} lane groups, {2**depth} leaves of "
                   f"{ARM} IMADs serialized against one)", [pt], method, pt)
        )  # fmt: skip
        out.append(
            s.make("branch_divergence", "node_overhead", "cycle",
                   f"divergent if/else overhead per node at depth {depth}",
                   lambda a, b, c, n=nodes: (a - b - n * c) / n, [div, uni, base],
                   f"(divergent - uniform - {nodes} x branch_chain) / {nodes} if/else nodes: what each adds beyond "
                   f"the {nodes} more leaves of {ARM} dependent IMADs", [pt, CHAIN[2]], method, pt)
        )  # fmt: skip
    return s.keep(out)


def predication(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Cycles per arm IMAD of a divergent if/else that ptxas predicates (4-IMAD arms) and of one it branches (8-IMAD
    arms, branch_divergence at depth 1)."""
    branched = canonical_params({"depth": 1})
    return s.keep(
        [
            s.make("branch_predicated", "per_arm_imad", "cycle", "predicated divergent if/else: cycles per arm IMAD",
                   lambda a: a / (2 * SHORT_ARM), [s.samples(raw, "branch_predicated", "divergent", "{}")],
                   f"branch_predicated's divergent step / {2 * SHORT_ARM} IMADs (both arms, every lane issuing both)",
                   ["{}"], methods.get("branch_predicated", ""), "{}"),
            s.make("branch_divergence", "per_arm_imad", "cycle", "branched divergent if/else: cycles per arm IMAD",
                   lambda a: a / (2 * ARM), [s.samples(raw, "branch_divergence", "divergent", branched)],
                   f"branch_divergence's divergent step at depth 1 / {2 * ARM} IMADs (two arms, one after the other)",
                   [branched], methods.get("branch_divergence", ""), branched),
        ]
    )  # fmt: skip


def calls(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """What a direct and an indirect call add to the callee's one IMAD."""
    base, out = chain(raw), []
    for case, metric, label in (
        ("call_direct", "step", "direct call"),
        ("call_indirect", "uniform", "indirect call, one target"),
        ("call_indirect", "divergent", "indirect call, two targets in the warp"),
    ):
        out.append(
            s.make(case, f"{metric}_cost" if case == "call_indirect" else "call_cost", "cycle",
                   f"{label}: cycles it adds to the callee's IMAD", lambda a, b: a - b / ARM,
                   [s.samples(raw, case, metric, "{}"), base],
                   f"{case}'s {metric} cycles per call less one IMAD (branch_chain's step / {ARM})",
                   ["{}", CHAIN[2]], methods.get(case, ""), "{}")
        )  # fmt: skip
    return s.keep(out)


@dataclass(frozen=True)
class Level:
    """Consecutive footprints with about the same cycles per instruction: one instruction-cache level."""

    params: tuple[str, ...]
    footprints: tuple[float, ...]
    values: tuple[float, ...]


def levels(points: list[tuple[float, str, float]]) -> list[Level]:
    """The levels of (footprint, params, median) points in footprint order: a new level starts where a point is
    more than LEVEL_TOLERANCE above the current level's first; a level of fewer than MIN_LEVEL_POINTS is a
    transition, not a level."""
    runs: list[list[tuple[float, str, float]]] = []
    for p in sorted(points):
        if runs and p[2] <= runs[-1][0][2] * (1 + LEVEL_TOLERANCE):
            runs[-1].append(p)
        else:
            runs.append([p])
    return [
        Level(tuple(p[1] for p in r), tuple(p[0] for p in r), tuple(p[2] for p in r))
        for r in runs
        if len(r) >= MIN_LEVEL_POINTS
    ]


def icache(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per warp count: each level's cycles per instruction (its points' samples pooled), the largest footprint on it
    (the level holds at least that much code), and what the step to the next level costs. A warp count without the
    case's smallest footprint has no figures (its first level need not be level 0), nor a sweep with no cliff a
    largest footprint (nothing in it sizes a level)."""
    case, metric, method = "icache_footprint", "cycles_per_instruction", methods.get("icache_footprint", "")
    by_warps: dict[int, list[tuple[float, str, float]]] = {}
    for pt in s.params_of(raw, case, metric):
        p = parse_params(pt)
        values = s.samples(raw, case, metric, pt)
        if len(values):
            by_warps.setdefault(int(p["warps"]), []).append((float(p["footprint_kb"]), pt, float(np.median(values))))
    out: list[Figure | None] = []
    smallest = min((p[0] for pts in by_warps.values() for p in pts), default=0.0)
    for warps, pts in sorted(by_warps.items()):
        found, who = levels(pts), f"{warps} warp{'s' * (warps != 1)}"
        sweep = sorted(p[0] for p in pts)
        if sweep[0] > smallest:
            continue
        for i, lv in enumerate(found):
            pooled = np.concatenate([s.samples(raw, case, metric, p) for p in lv.params])
            span = f"{lv.footprints[0]:g}-{lv.footprints[-1]:g} KB of code"
            out.append(
                s.from_values(case, f"level{i}_cpi", "cycle", f"i-cache level {i}, {who}: cycles per instruction",
                              pooled, f"every sample of the {len(lv.params)} footprints on the level ({span})",
                              lv.params, method, canonical_params({"warps": warps}))
            )  # fmt: skip
            if len(found) == 1:
                continue
            beyond = [f for f in sweep if f > lv.footprints[-1]]
            out.append(
                s.make(case, f"level{i}_holds_kb", "KB", f"i-cache level {i}, {who}: largest footprint on it",
                       lambda _, kb=lv.footprints[-1]: kb, [pooled],
                       f"the largest footprint on the level ({lv.footprints[-1]:g} KB); "
                       + (f"the next, {beyond[0]:g} KB, is off it: the level holds between the two"
                          if beyond else "the sweep ends on it: the level holds at least this"),
                       lv.params, method, canonical_params({"warps": warps}))
            )  # fmt: skip
            if i + 1 < len(found):
                nxt = found[i + 1]
                upper = np.concatenate([s.samples(raw, case, metric, p) for p in nxt.params])
                out.append(
                    s.make(case, f"level{i}_miss_cost", "cycle",
                           f"i-cache level {i} miss, {who}: cycles per instruction it adds", lambda a, b: a - b,
                           [upper, pooled], f"level {i + 1}'s cycles per instruction less level {i}'s",
                           lv.params + nxt.params, method, canonical_params({"warps": warps}))
                )  # fmt: skip
    return s.keep(out)


def spills(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """What the store adds to a local load's round trip, and what the forced spill adds per accumulator update."""
    pt = canonical_params({"footprint_kb": 4, "stride_b": 128})
    return s.keep(
        [
            s.make("stl_ldl_round_trip", "store_cost", "cycle", "local store before a dependent load: cycles it adds",
                   lambda a, b: a - b,
                   [s.samples(raw, "stl_ldl_round_trip", "latency", "{}"), s.samples(raw, "ldl_chase", "latency", pt)],
                   "stl_ldl_round_trip's latency less ldl_chase's (the load alone, L1-resident)", ["{}", pt],
                   methods.get("stl_ldl_round_trip", ""), "{}"),
            s.make("spill_forced", "spill_cost", "cycle", "forced spill: cycles it adds per accumulator update",
                   lambda a, b: (a - b) / ACCUMULATORS,
                   [s.samples(raw, "spill_forced", "step", "{}"), s.samples(raw, "spill_free", "step", "{}")],
                   f"(spill_forced - spill_free) step / {ACCUMULATORS} accumulators (the SASS: 53-54 of them "
                   "reloaded and stored each step)", ["{}"], methods.get("spill_forced", ""), "{}"),
        ]
    )  # fmt: skip


figures = s.of_parts(branches, divergence, predication, calls, icache, spills)
