"""Figures the async category derives over several points: the best TMA bulk, tensor and cp.async streams against the
best LDG.128 stream of the same run, the first copies in flight / CTA count that reaches 90% of a curve's best, the
L2 hint effect (each policy's re-read over no hint), the per-KB cost of one bulk / tensor copy (the slope of the
dependent latency over the copy size, at L2 and at DRAM) and each cluster size's best multicast stream over its best
unicast stream. `async` is a Python keyword: this module is `async_`,
registered as "async"."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...core.tables import canonical_params, parse_params, point_text
from ..checks import PLATEAU
from ..figure_model import Check, Figure
from . import samples as s

CATEGORY = "async"
METRICS = frozenset(
    {"ctas_for_90pct", "cycles_per_kb", "outstanding_for_90pct", "vs_ldg", "vs_no_hint", "vs_unicast"}
)  # every metric a figure of this deriver can have

NEAR_PEAK = 0.90  # a curve's knee: the first point within 10% of its best
TARGET = 0.90  # TMA bulk best over LDG best that the bulk path should reach
POLICIES = {1: "evict_last working set", 2: "evict_first streaming set", 3: "evict_last + persisting set-aside"}
STREAMS = {
    "bulk": ("bulk_depth", "bulk_ctas"),
    "tensor": ("tensor_depth", "tensor_ctas"),
    "cp.async": ("cp_async_stream",),
}
SLOPES = {"bulk_latency": "bulk", "tensor_latency": "tensor"}
MULTICAST = ("multicast_depth", "multicast_unicast_depth")  # the same clusters and tiles, multicast and unicast
L1_KB = 256  # cp.async.ca chases footprints up to this from the L1 (.cg and the bulk-copy engine go to the L2)
L2_WARM_KB = 32768  # the latency kernels chase footprints up to half the L2 warm (read first): L2; above it, DRAM


def level(case: str, footprint_kb: float) -> str:
    """Where a chase footprint lives for a case: L1 (up to L1_KB, cp.async.ca only), L2 (up to L2_WARM_KB) or DRAM."""
    if footprint_kb <= L1_KB and case == "cp_async_ca_latency":
        return "L1"
    return "L2" if footprint_kb <= L2_WARM_KB else "DRAM"


def _best(
    raw: pd.DataFrame, cases: tuple[str, ...], metric: str = "bandwidth", at: dict[str, int] | None = None
) -> tuple[str, str, np.ndarray] | None:
    """(case, params, samples) of the highest median over the points of `cases` (those with the axis values `at`)."""
    found = [(c, p, s.samples(raw, c, metric, p)) for c in cases for p in s.params_of(raw, c, metric)]
    found = [f for f in found if len(f[2]) and (at or {}).items() <= parse_params(f[1]).items()]
    return max(found, key=lambda f: float(np.median(f[2]))) if found else None


def rising(raw: pd.DataFrame, case: str, params: str, axes: tuple[str, ...]) -> str:
    """Where a case's point is the last of an axis and beats the point before it by more than PLATEAU: 'axis +N%
    from a to b' (the sweep ends still rising), else ''."""
    point = parse_params(params)
    median = float(np.median(s.samples(raw, case, "bandwidth", params)))
    for axis in (a for a in axes if a in point):
        values = sorted({parse_params(p)[axis] for p in s.params_of(raw, case, "bandwidth") if axis in parse_params(p)})
        if len(values) < 2 or point[axis] != values[-1]:
            continue
        before = s.samples(raw, case, "bandwidth", canonical_params(point | {axis: values[-2]}))
        if len(before) and median / float(np.median(before)) - 1 > PLATEAU:
            return f"{axis} {median / float(np.median(before)) - 1:+.0%} from {values[-2]} to {values[-1]}"
    return ""


def versus_ldg(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Each async stream's best over the best LDG.128 stream of the same binary and buffer."""
    ldg = _best(raw, ("ldg_stream",))
    if ldg is None:
        return []
    out = []
    for label, cases in STREAMS.items():
        best = _best(raw, cases)
        if best is None:
            continue
        case, params, num = best
        target = f"; the bulk path's target is {TARGET:.2f}" if label == "bulk" else ""
        still = rising(raw, case, params, ("ctas", "outstanding", "bytes", "stages", "ctas_per_sm"))
        if still:
            target += f"; a lower bound: that best is the end of a sweep still rising ({still})"
        out.append(
            s.make(
                case,
                "vs_ldg",
                "ratio",
                f"TMA {label} best / LDG.128 best" if label != "cp.async" else "cp.async best / LDG.128 best",
                lambda a, b: a / b,
                [num, ldg[2]],
                f"best {label} point ({case}{s.at(params)}: {np.median(num):.0f} GB/s, median of {len(num)}) over the "
                f"best ldg_stream point ({s.at(ldg[1]).strip()}: {np.median(ldg[2]):.0f} GB/s, median of "
                f"{len(ldg[2])}): same binary, same 4 GiB buffer, same run{target}; the LDG point's checks are "
                "ldg_stream's figure's",
                [params],
                methods.get(case, ""),
            )
        )
    return s.keep(out)


def first_reaching(values: dict[int, float], fraction: float = NEAR_PEAK) -> int | None:
    """The smallest axis value whose median is within `fraction` of the best, None for no curve."""
    if not values:
        return None
    best = max(values.values())
    return min(x for x, v in values.items() if v >= fraction * best)


def _knee(
    raw: pd.DataFrame, case: str, axis: str, fixed: dict[str, int], what: str, unit: str, methods: dict[str, str]
) -> Figure | None:
    """The first `axis` value reaching NEAR_PEAK of the best of one curve of `case` (the other axes at `fixed`); its
    spread the range of that value over the curve taken at each point's slowest and fastest sample. Where the best
    sits at the end of a curve still rising by more than PLATEAU, the value is only a lower bound, and says so."""
    curve = {}
    for params in s.params_of(raw, case, "bandwidth"):
        point = parse_params(params)
        if axis in point and all(point.get(k) == v for k, v in fixed.items()):
            curve[point[axis]] = (params, s.samples(raw, case, "bandwidth", params))
    if len(curve) < 2:
        return None
    medians = {x: float(np.median(v)) for x, (_, v) in curve.items()}
    knee = first_reaching(medians)
    lows = first_reaching({x: float(v.min()) for x, (_, v) in curve.items()})
    highs = first_reaching({x: float(v.max()) for x, (_, v) in curve.items()})
    axis_values = sorted(curve)
    top = max(medians, key=medians.get)
    rise = medians[top] / medians[axis_values[-2]] - 1 if top == axis_values[-1] else 0.0
    bound = rise > PLATEAU
    fixed_text = point_text(canonical_params(fixed))
    derivation = (
        f"smallest {axis} whose median bandwidth is >= {NEAR_PEAK:.0%} of the curve's best "
        f"({medians[top]:.0f} GB/s at {axis}={top}; {fixed_text}); spread: the same on each point's slowest "
        f"and fastest sample"
    )
    checks = []
    if bound:
        derivation += (
            f"; a lower bound: the best is the last point and still {rise:+.0%} on the one before, so the "
            f"curve has not levelled and its true best (and knee) lies beyond the sweep"
        )
        checks = [
            Check(
                "plateau",
                "disagree",
                f"not saturated: the curve still rises {rise:+.1%} from {axis}={axis_values[-2]} to {axis_values[-1]}",
            )
        ]
    spread = float(abs(highs - lows)) if lows is not None and highs is not None else math.nan
    total = int(sum(len(v) for _, v in curve.values()))
    fig = Figure(
        case=case,
        metric=f"{axis}_for_90pct",
        unit=unit,
        kind="derived",
        name=f"{case} {what} for {NEAR_PEAK:.0%} of its best, {fixed_text}",
        value=float(knee),
        spread=spread,
        samples=total,
        derivation=derivation,
        points=tuple(p for p, _ in curve.values()),
        method=methods.get(case, ""),
    )
    fig.checks = checks  # the check only the deriver can make; figures.compute replaces a deriver's checks today
    return fig


def knees(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Copies in flight (per copy size) and CTAs (per copies in flight) for 90% of each curve's best."""
    out = []
    for case in ("bulk_depth", "tensor_depth"):
        for b in sorted({parse_params(p).get("bytes") for p in s.params_of(raw, case, "bandwidth")} - {None}):
            out.append(_knee(raw, case, "outstanding", {"bytes": b}, "copies in flight per CTA", "copies", methods))
    for case in ("bulk_ctas", "tensor_ctas"):
        for o in sorted({parse_params(p).get("outstanding") for p in s.params_of(raw, case, "bandwidth")} - {None}):
            out.append(_knee(raw, case, "ctas", {"outstanding": o}, "CTAs", "CTAs", methods))
    return s.keep(out)


def hints(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Each L2 policy's timed re-read of the working set over the same re-read with no hint."""
    base = canonical_params({"policy": 0})
    none = s.samples(raw, "bulk_l2_hint", "bandwidth", base)
    out = []
    for policy, what in POLICIES.items():
        params = canonical_params({"policy": policy})
        got = s.samples(raw, "bulk_l2_hint", "bandwidth", params)
        out.append(
            s.make(
                "bulk_l2_hint",
                "vs_no_hint",
                "ratio",
                f"bulk_l2_hint re-read with {what} / no hint",
                lambda a, b: a / b,
                [got, none],
                f"re-read bandwidth at policy={policy} over policy=0 (medians of {len(got)} and {len(none)} "
                "samples): above 1 where the hint kept the working set in the L2",
                [params, base],
                methods.get("bulk_l2_hint", ""),
                params,
            )
        )
    return s.keep(out)


def slopes(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """The cycles one more KB adds to a dependent bulk / tensor copy: the latency slope from the smallest to the
    largest copy, at the L2 and at the DRAM footprint."""
    out = []
    for case, label in SLOPES.items():
        pts = [parse_params(p) for p in s.params_of(raw, case, "latency")]
        for footprint in sorted({p["footprint_kb"] for p in pts if "footprint_kb" in p}):
            sizes = sorted(p["bytes"] for p in pts if p.get("footprint_kb") == footprint)
            if len(sizes) < 2:
                continue
            lo, hi = (canonical_params({"bytes": b, "footprint_kb": footprint}) for b in (sizes[0], sizes[-1]))
            kb = (sizes[-1] - sizes[0]) / 1024
            where = level(case, footprint)
            out.append(
                s.make(
                    case,
                    "cycles_per_kb",
                    "cycle/KB",
                    f"{case} cost per KB of one {label} copy, {where}",
                    lambda a, b, kb=kb: (b - a) / kb,
                    [s.samples(raw, case, "latency", lo), s.samples(raw, case, "latency", hi)],
                    f"(latency at {sizes[-1]} B - latency at {sizes[0]} B) / {kb:g} KB, footprint {footprint} KB "
                    f"({where}): the transfer time of one copy per KB, without its issue and completion",
                    [lo, hi],
                    methods.get(case, ""),
                )
            )
    return s.keep(out)


def multicast(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Each cluster size's best multicast stream (bytes landed in every CTA) over its best unicast stream."""
    out = []
    clusters = {parse_params(p).get("cluster") for p in s.params_of(raw, MULTICAST[0], "bandwidth")} - {None}
    for cluster in sorted(clusters):
        found = [_best(raw, (case,), at={"cluster": cluster}) for case in MULTICAST]
        if None in found:
            continue
        (case, params, mine), (_, theirs, unicast) = found
        out.append(
            s.make(
                case,
                "vs_unicast",
                "ratio",
                f"multicast_depth best / unicast best, cluster={cluster}",
                lambda a, b: a / b,
                [mine, unicast],
                f"best multicast_depth point{s.at(params)} ({np.median(mine):.0f} GB/s landed, median of {len(mine)}) "
                f"over the best multicast_unicast_depth point{s.at(theirs)} ({np.median(unicast):.0f} GB/s, median of "
                f"{len(unicast)}): the same clusters, tiles and window, each tile requested once per cluster "
                "against once per CTA",
                [params],
                methods.get(case, ""),
            )
        )
    return s.keep(out)


figures = s.of_parts(versus_ldg, knees, hints, slopes, multicast)  # every derived figure of the async category
