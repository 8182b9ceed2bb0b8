"""Derived figures of the memory category: the pointer-chase staircase's levels (each level's latency, the capacity
where it ends), the L2 latency modes of chase_near_far (latency_modes), shared-memory latency by width, broadcast and
the bank-conflict penalty, the memory-level-parallelism knee, and the bandwidth peaks against the datasheet and the
library copies.

A figure's `metric` names what it is. The one figure that stands for a case's `paper` figure carries the case's first
metric (the checks and the paper table look figures up by it): `latency` is the L1 hit latency of the random chase
(chase), the 32-bit LDS latency (smem_latency); every other level, width or statistic has a metric of its own."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import archs, catalog, latency_modes, stats
from ..catalog import Case
from ..checks import limit, on_plateau, plateau_check
from ..figure_model import REFERENCE, Check, Figure, points
from ..tables import canonical_params, kb_text, parse_params, point_text
from .samples import checkout_cases, from_values, keep, make, point_of, run_of, samples

CATEGORY = "memory"
METRICS = frozenset(
    {
        "clusters",
        "conflict_penalty",
        "dram_latency",
        "far_latency",
        "far_share",
        "knee",
        "l1_capacity",
        "l1_latency",
        "l2_capacity",
        "l2_latency",
        "latency",
        "latency_128bit",
        "latency_64bit",
        "latency_max_ways",
        "line_agreement",
        "near_latency",
        "of_datasheet",
        "over_memcpy_d2d",
        "over_torch_copy",
        "same_sides",
        "separation",
        "single_load_latency",
        "slow_share",
        "tail_latency",
        "timing_overhead",
    }
)  # every metric a figure of this deriver can have

NEAR = 0.05  # a level: at least MIN_POINTS consecutive footprints, each within 5% of their median
MIN_POINTS = 3  # two points 10% apart on a rising curve are no plateau
LEVELS = ("L1", "L2", "DRAM")  # the levels of a chase curve, in footprint order
LINE = 128  # bytes: a random chain's slot, and the cache line a chase step touches
PAGE_KB = 2048  # the driver's large page: how many pages a footprint spans (TLB reach)
KNEE = 1.2  # memory-level parallelism: the most loads in flight whose round stays within 20% of one load's
WIDTHS = {32: "32-bit LDS", 64: "64-bit LDS.64", 128: "128-bit LDS.128"}
DRAM_CASES = ("dram_read", "dram_write", "dram_copy", "memcpy_d2d", "torch_copy")
PARTITION = 0.9  # two SMs timing the same lines: one partition places >= 90% of them alike, two <= 10%
LIBRARIES = ("memcpy_d2d", "torch_copy")  # library copies of the same run: the references of dram_copy
ATOMIC_WORDS = ("atomic_add_global_latency", "atomic_add_system_latency", "atomic_cas_global_latency")  # per word
# A cache takes a whole 128 B line (tag and data slot; its 32 B sectors filled as read) for the one word a step reads
CAPACITY_METHOD = (
    "capacity: the KB of distinct 128 B lines the chain touches at the level's last footprint (a cache takes a whole "
    "line for the word a step reads: the footprint itself up to a 128 B stride, one line per slot beyond it, 1/16 of "
    "the footprint at 2048 B), the next point, off the level, bounding it; checked against what the device reports "
    "(device_attributes): a chase from one SM holds about one partition's share of an L2 in partitions "
    "(chase_near_far), each partition caching the data of the SMs wired to it (A100 whitepaper, L2 cache)"
)
CAPACITY_TOLERANCE = 0.05  # a footprint a little past a cache's size stays within the level's NEAR while few lines miss
BRACKET = 1.5  # a level's last footprint and the next point further apart than this are too coarse to confirm a size
SMEM_RESERVED = 1024  # bytes of shared memory the runtime keeps per block from CC 8.0 on (ReservedSharedMemoryPerBlock)
DATASHEET = 0.02  # a datasheet rounds its L2 size and DRAM bandwidth to 2-3 significant figures (4.8 TB/s)
DRAM_RESERVED = 0.03  # the DRAM a device reports is its datasheet's less what the driver keeps (H200: 0.9% less)
# device_attributes metric -> the archs.GpuModel field its datasheet check reads (the two DRAM ones: the bandwidth)
SHEET = {
    "sm_count": "sms",
    "dram_capacity": "memory_gb",
    "l2_capacity": "l2_mb",
    "memory_clock": "dram_gbs",
    "dram_bus_width": "dram_gbs",
}
# CUDA C++ Programming Guide, the compute capability 8.x, 9.0, 10.0 and 12.0 sections: the unified L1 data cache and
# shared memory of one SM, and the largest shared-memory carveout of it, in KB, by SM version.
L1_SHARED_KB: dict[int, tuple[int, int]] = {
    80: (192, 164),
    86: (128, 100),
    87: (192, 164),
    89: (128, 100),
    90: (256, 228),
    100: (256, 228),
    120: (128, 100),
    121: (128, 100),
}


def cases() -> dict[str, catalog.Case]:
    """The memory manifest's cases by id (samples.checkout_cases)."""
    return checkout_cases("memory")


def methods() -> dict[str, str]:
    """Each memory case's `method:` from the manifest."""
    return {k: c.method for k, c in cases().items()}


def stride_label(stride: float) -> str:
    """'random' for the permutation chain over 128 B lines (stride 0), else the stride in bytes."""
    return "random" if stride == 0 else f"stride {int(stride)} B"


def line_kb(footprint_kb: float, stride: float) -> float:
    """KB of distinct 128 B lines a chain of that footprint and stride touches (one per slot beyond 128 B)."""
    return footprint_kb if stride <= LINE else footprint_kb * LINE / stride


def param(params: str, key: str) -> float:
    """One axis of a canonical-JSON point (NaN where it lacks it)."""
    return float(parse_params(params).get(key, math.nan))


# --- the staircase -------------------------------------------------------------------------------------------------


def runs(values: list[float]) -> list[tuple[int, int]]:
    """The levels of a latency curve in footprint order, as (first, last) index pairs: maximal runs of at least
    MIN_POINTS consecutive points each within NEAR of the run's median, found left to right. The points between two
    levels are transitions (their latency mixes the two levels' hits)."""
    out, i = [], 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and _flat(values[i : j + 2]):
            j += 1
        if j - i + 1 >= MIN_POINTS:
            out.append((i, j))
            i = j + 1
        else:
            i += 1
    return out


def _flat(values: list[float]) -> bool:
    middle = float(np.median(values))
    return all(abs(v - middle) <= NEAR * middle for v in values)


@dataclass(frozen=True)
class Level:
    """One detected level of one stride's curve."""

    name: str  # L1, L2, DRAM, level 4...
    stride: float
    footprints: tuple[float, ...]  # its points' footprints (KB)
    params: tuple[str, ...]  # its points
    after: tuple[float, ...]  # the footprints after it up to the next level (its transition), or to the sweep's end
    next_level: float  # first footprint of the next level (NaN: none)


def curve(raw: pd.DataFrame, stride: float) -> pd.DataFrame:
    """One stride's chase curve: params, footprint_kb and the median latency per point, in footprint order."""
    mine = raw[(raw["case"] == "chase") & (raw["metric"] == "latency")]
    out = stats.summary(mine, ["params"], sort=False)[["params", "value"]]
    out["footprint_kb"] = out["params"].map(lambda p: param(p, "footprint_kb"))
    out["stride_b"] = out["params"].map(lambda p: param(p, "stride_b"))
    return out[out["stride_b"] == stride].sort_values("footprint_kb", ignore_index=True)


def levels(points: pd.DataFrame, stride: float) -> list[Level]:
    """The levels of one stride's curve (`curve`), named in footprint order (LEVELS)."""
    found = runs(points["value"].tolist())
    fp, params = points["footprint_kb"].tolist(), points["params"].tolist()
    out = []
    for k, (i, j) in enumerate(found):
        end = found[k + 1][0] if k + 1 < len(found) else len(fp)
        name = LEVELS[k] if k < len(LEVELS) else f"level {k + 1}"
        out.append(
            Level(
                name,
                stride,
                tuple(fp[i : j + 1]),
                tuple(params[i : j + 1]),
                tuple(fp[j + 1 : end]),
                fp[end] if end < len(fp) else math.nan,
            )
        )
    return out


def strides(raw: pd.DataFrame) -> list[float]:
    """The chase's strides, in sweep order."""
    mine = raw[(raw["case"] == "chase") & (raw["metric"] == "latency")]
    return list(dict.fromkeys(mine["params"].map(lambda p: param(p, "stride_b"))))


def staircase(raw: pd.DataFrame, device: Device) -> list[Figure]:
    """Per stride: each level's latency (the median of its points' medians, its spread the range of all their
    samples) and, where the sweep goes on past it, the capacity it shows (`capacity`, checked against `device`);
    beyond the last level a curve still moving gives the latency at its largest footprint, marked as no level."""
    out: list[Figure | None] = []
    method = methods().get("chase", "")
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
    return _with(
        [Check("plateau", "disagree", f"not saturated: on no level at the end of the sweep ({rise})", explained=named)],
        fig,
    )


def regions(raw: pd.DataFrame) -> dict[str, str]:
    """Chase point -> the level it is on ('L2') or 'transition' (from the derived levels)."""
    out = {}
    for stride in strides(raw):
        pts = curve(raw, stride)
        out |= dict.fromkeys(pts["params"], "transition")
        for lv in levels(pts, stride):
            out |= dict.fromkeys(lv.params, lv.name)
    return out


# --- capacities against what the device reports ----------------------------------------------------------------------


@dataclass(frozen=True)
class Device:
    """What the run's card reports of itself (device_attributes: each metric's median; empty where the case did not
    run), its arch and product name, and how many L2 partitions chase_near_far tells apart."""

    attributes: dict[str, float]
    arch: str
    gpu: str
    partitions: int = 1

    def bound(self, level: str) -> tuple[float, float, str] | None:
        """A cache level's most (KB), the size one SM's chase should show (KB; NaN: no attribute gives one) and what
        they are, from the device's report; None where neither it nor the documentation gives the level's size."""
        if level == "L2" and "l2_capacity" in self.attributes:
            whole = self.attributes["l2_capacity"] / 1024
            what = f"the device's L2, {kb_text(whole)} (l2_capacity: cudaDevAttrL2CacheSize)"
            if self.partitions > 1:
                return whole, whole / self.partitions, f"{what}, in {self.partitions} partitions (chase_near_far)"
            return whole, whole, what
        documented = L1_SHARED_KB.get(archs.arch_version(self.arch) or -1)
        if level != "L1" or documented is None:
            return None
        smem = self.attributes.get("smem_per_sm")
        carveout = (
            f"; the device's smem_per_sm (cudaDevAttrMaxSharedMemoryPerMultiprocessor), {kb_text(smem / 1024)}, "
            "is its largest shared-memory carveout"
            if smem
            else ""
        )
        return (
            float(documented[0]),
            math.nan,
            f"the L1+shared total per SM, {documented[0]} KB (CUDA C++ Programming Guide, {self.arch}: the L1 has no "
            f"attribute of its own{carveout})",
        )


def device_of(raw: pd.DataFrame, split: list[Figure]) -> Device:
    """The run's Device: the device_attributes medians of `raw` and the L2 partitions of chase_near_far's figures
    (`split`): two where an SM slot finds two latency clusters the lines' addresses set."""
    rows = raw[raw["case"] == "device_attributes"]
    attributes = {str(m): float(g.median()) for m, g in rows.groupby("metric")["value"]}
    two = [
        f
        for f in split
        if f.case == "chase_near_far"
        and f.metric == "clusters"
        and f.value == 2
        and any(c.name == "line agreement" and c.verdict == "agree" for c in f.checks)
    ]
    arch, gpu = run_of(raw)
    return Device(attributes, arch, gpu, 2 if two else 1)


def capacity_checks(level: str, held: float, beyond: float, device: Device) -> list[Check]:
    """A level's capacity (`held` KB of lines, `beyond` at the next point) against the device's report: above the
    level's most contradicts it; a bracket no wider than BRACKET that holds the size one SM's chase should show agrees
    (a second method: the device's attributes); anything else is within the bound but confirms no size."""
    if level not in ("L1", "L2"):
        return []
    found = device.bound(level)
    if found is None:
        why = "device_attributes not measured in this run" if level == "L2" else f"no documented L1 for {device.arch}"
        return [Check("device size", "n/a", why, evidence=REFERENCE)]
    most, share, what = found
    tol = f"tolerance {CAPACITY_TOLERANCE:.0%}"
    if held > most * (1 + CAPACITY_TOLERANCE):
        return [Check("device bound", "disagree", f"{kb_text(held)} of lines is above {what} ({tol})")]
    bound = Check("device bound", "agree", f"{kb_text(held)} of lines is within {what} ({tol})")
    between = f"the level ends between {kb_text(held)} and {kb_text(beyond)} of lines"
    if math.isnan(share):
        why = f"{between}; no attribute gives the L1's own size (the carveout the driver chose is not reported)"
        return [bound, Check("device size", "n/a", why, evidence=REFERENCE)]
    one = f"{kb_text(share)}, one partition of {what}" if share < most else what
    if beyond / held > BRACKET:
        why = f"{between}, {beyond / held:.3g}x apart: too coarse (over {BRACKET:g}x) to confirm {one}"
        return [bound, Check("device size", "n/a", why, evidence=REFERENCE)]
    inside = held * (1 - CAPACITY_TOLERANCE) <= share <= beyond * (1 + CAPACITY_TOLERANCE)
    verdict, word = ("agree", "holds") if inside else ("n/a", "does not hold")
    return [bound, Check("device size", verdict, f"{between}: {word} {one} ({tol})", evidence=REFERENCE)]


def smem_check(figure: Figure, device: Device) -> list[Check]:
    """smem_capacity's largest block against the device's shared memory per SM less the runtime's per-block reserve."""
    per_sm = device.attributes.get("smem_per_sm")
    if per_sm is None:
        return [Check("device size", "n/a", "device_attributes not measured in this run", evidence=REFERENCE)]
    short = per_sm - figure.value
    detail = (
        f"{figure.value:,.0f} B launched, {short:,.0f} B under the device's smem_per_sm "
        f"(cudaDevAttrMaxSharedMemoryPerMultiprocessor) {per_sm:,.0f} B; tolerance: 0 to the {SMEM_RESERVED:,} B "
        "the runtime keeps per block (cudaDevAttrReservedSharedMemoryPerBlock, CC 8.0 on)"
    )
    verdict = "agree" if 0 <= short <= SMEM_RESERVED else "disagree"
    return [Check("device size", verdict, detail, evidence=REFERENCE)]


def datasheet_checks(figure: Figure, device: Device) -> list[Check]:
    """A device attribute against the product's datasheet row (archs.MODELS), shared memory per SM against the
    programming guide: agreement within the stated tolerance is a documented value for this card."""
    if figure.metric == "smem_per_sm":
        return [_documented_smem(figure.value, device.arch)]
    if figure.metric not in SHEET:
        return []
    model = archs.gpu_model(device.gpu)
    if model is None or getattr(model, SHEET[figure.metric]) is None:
        why = f"archs.MODELS gives no {SHEET[figure.metric]} for {device.gpu}"
        return [Check("datasheet", "n/a", why, evidence=REFERENCE)]
    if figure.metric == "sm_count":
        verdict = "agree" if figure.value == model.sms else "disagree"
        detail = f"{figure.value:g} SMs vs the {model.name} datasheet's {model.sms} (exact)"
        return [Check("datasheet", verdict, detail, REFERENCE)]
    if figure.metric == "dram_capacity":
        return [_dram_capacity(figure.value, model)]
    if figure.metric == "l2_capacity":
        return [_l2_capacity(figure.value, model)]
    return [_dram_bandwidth(device.attributes, model)]


def _documented_smem(value: float, arch: str) -> Check:
    """The largest shared-memory carveout per SM against the programming guide's for the arch."""
    documented = L1_SHARED_KB.get(archs.arch_version(arch) or -1)
    if documented is None:
        return Check("documented", "n/a", f"no documented shared-memory carveout for {arch}", evidence=REFERENCE)
    verdict = "agree" if value == documented[1] * 1024 else "disagree"
    detail = (
        f"{value:,.0f} B vs the largest carveout the CUDA C++ Programming Guide gives {arch}, {documented[1]} KB "
        f"({documented[1] * 1024:,} B) of its {documented[0]} KB L1+shared (exact)"
    )
    return Check("documented", verdict, detail, REFERENCE)


def _l2_capacity(value: float, model: archs.GpuModel) -> Check:
    """The L2 the device reports against its product row's MB, which for a cache are MiB."""
    off = value / (model.l2_mb * 2**20) - 1
    verdict = "agree" if abs(off) <= DATASHEET else "disagree"
    detail = (
        f"{value / 2**20:.4g} MiB vs the {model.name} row's {model.l2_mb:g} MB (a cache's MB is MiB) "
        f"({off:+.1%}, tolerance {DATASHEET:.0%})"
    )
    return Check("datasheet", verdict, detail, REFERENCE)


def _dram_capacity(value: float, model: archs.GpuModel) -> Check:
    """The DRAM the device reports against its datasheet's GB, which are GiB: a card cannot report more than it has,
    and the driver keeps up to DRAM_RESERVED of it."""
    sheet = model.memory_gb * 2**30
    ratio = value / sheet
    decimal = "; as 1e9 B the card would report more than it has" if value > model.memory_gb * 1e9 else ""
    detail = (
        f"{value / 2**30:.4g} GiB ({value / 1e9:.4g}e9 B) vs the {model.name} datasheet's {model.memory_gb:g} GB read "
        f"as GiB, {sheet / 1e9:.4g}e9 B ({ratio - 1:+.2%}{decimal}): tolerance 0 to -{DRAM_RESERVED:.0%}, what the "
        "driver keeps"
    )
    verdict = "disagree" if ratio > 1 else "agree" if ratio >= 1 - DRAM_RESERVED else "n/a"
    return Check("datasheet", verdict, detail, REFERENCE)


def _dram_bandwidth(attributes: dict[str, float], model: archs.GpuModel) -> Check:
    """2 x memory clock x bus width, the bandwidth the attributes give, against the datasheet's DRAM bandwidth."""
    clock, width = attributes.get("memory_clock"), attributes.get("dram_bus_width")
    if not clock or not width:
        return Check("datasheet", "n/a", "memory_clock or dram_bus_width not measured in this run", evidence=REFERENCE)
    gbs = 2 * clock * 1e6 * width / 8 / 1e9
    off = gbs / model.dram_gbs - 1
    verdict = "agree" if abs(off) <= DATASHEET else "disagree"
    detail = (
        f"2 x memory_clock {clock:g} MHz x dram_bus_width {width:g} bit / 8 = {gbs:.5g} GB/s vs the {model.name} "
        f"datasheet's {model.dram_gbs:g} GB/s ({off:+.1%}, tolerance {DATASHEET:.0%})"
    )
    return Check("datasheet", verdict, detail, REFERENCE)


def check_reports(generic: list[Figure], device: Device) -> None:
    """Give the generic figures the device's report checks, once however often they are derived: each device attribute
    its datasheet check, smem_capacity its shared memory per SM (figures.compute adds the generic checks after them)."""
    for f in generic:
        if f.case == "device_attributes":
            mine = datasheet_checks(f, device)
        elif f.case == "smem_capacity" and f.metric == "capacity_per_block":
            mine = smem_check(f, device)
        else:
            continue
        f.checks = [*mine, *(c for c in f.checks if c not in mine)]


# --- L2 near and far ------------------------------------------------------------------------------------------------


def _launch_ranges(grid: np.ndarray, m: latency_modes.Modes) -> dict[str, float]:
    """Per launch (rows of `grid`) at the pooled cut: the range over launches of the near and far means and of the far
    and slow shares (NaN where a launch has none of a side)."""
    slow = grid > latency_modes.SLOW * m.median
    hit = ~slow
    far = hit & (grid >= m.cut) if m.clusters == 2 else np.zeros_like(hit)
    near = hit & ~far
    out = {}
    for key, side in (("near", near), ("far", far)):
        counts = side.sum(axis=1)
        means = np.where(side, grid, 0.0).sum(axis=1) / np.where(counts, counts, 1)
        out[key] = float(means.max() - means.min()) if counts.all() else math.nan
    hits = hit.sum(axis=1)
    out["far_share"] = float(np.ptp(far.sum(axis=1) / np.where(hits, hits, 1)))
    out["slow_share"] = float(np.ptp(slow.mean(axis=1)))
    return out


@dataclass(frozen=True)
class SlotFigures:
    """What every figure of one point split by latency_modes shares (chase_near_far's loads, the atomics' words): its
    case, point, modes, launch ranges and derivation stem."""

    case: str
    params: str
    where: str
    modes: latency_modes.Modes
    ranges: dict[str, float]
    stem: str
    method: str

    def figure(self, metric: str, unit: str, name: str, value: float, how: str, spread_of: str = "") -> Figure | None:
        """One figure of this point (None where the value is not defined, e.g. far with one cluster)."""
        if not math.isfinite(value):
            return None
        return Figure(
            case=self.case,
            metric=metric,
            unit=unit,
            kind="derived",
            name=f"{name} ({self.where})",
            value=float(value),
            spread=self.ranges.get(spread_of, math.nan),
            samples=self.modes.loads,
            derivation=f"{self.stem}; {how}",
            params=self.params,
            points=(self.params,),
            method=self.method,
        )


def _slot(samples: pd.DataFrame, params: str, where: str, what: str = "loads") -> tuple[SlotFigures, np.ndarray]:
    """The modes of one point's samples (`what`: `iterations` of them per launch, every launch in run order) and each
    sample slot's side of the cut."""
    g = samples[samples["params"] == params].sort_values("repeat")
    case, x, per_launch = str(g["case"].iloc[0]), g["value"].to_numpy(float), int(g["iterations"].iloc[0])
    m = latency_modes.modes(x, per_launch)
    whole = per_launch > 0 and len(x) % per_launch == 0
    launches = len(x) // per_launch if whole else 0
    ranges = _launch_ranges(x.reshape(-1, per_launch), m) if launches >= 2 else {}
    stem = (
        f"{m.loads} {what} ({launches} launches of {per_launch}) timed from SM {int(g['smid'].iloc[0])}; "
        f"latency_modes.modes: {latency_modes.reading(m)}"
    )
    placed = latency_modes.sides(x, per_launch, m) if whole else np.array([])
    return SlotFigures(case, params, where, m, ranges, stem, methods().get(case, "")), placed


def _tied(m: latency_modes.Modes) -> list[Check]:
    """Whether two clusters are two latencies of the lines' addresses (each line on one side in every launch)."""
    if m.clusters != 2:
        return []
    if math.isnan(m.agreement):
        return [Check("line agreement", "n/a", "one launch: the clusters are not checked against the lines")]
    verdict = "agree" if m.agreement >= latency_modes.ADDRESS_BOUND else "disagree"
    return [
        Check(
            "line agreement",
            verdict,
            f"{m.agreement:.0%} of the lines on one side of the cut in every launch "
            f"(partitions need >= {latency_modes.ADDRESS_BOUND:.0%}): {latency_modes.reading(m)}",
        )
    ]


def near_far(raw: pd.DataFrame) -> list[Figure]:
    """Per SM slot of chase_near_far: what latency_modes finds in all its loads (clusters, near and far latency, far
    and slow share, separation, line agreement), its timing overhead, and for every slot after the first, the share
    of lines it places on the same side of the cut as the first slot."""
    loads = raw[(raw["case"] == "chase_near_far") & (raw["metric"] == "load_latency")]
    if loads.empty:
        return []
    out: list[Figure | None] = []
    order = sorted(loads["params"].unique(), key=lambda p: (param(p, "footprint_kb"), param(p, "sm_slot")))
    first: tuple[str, np.ndarray] | None = None
    for params in order:
        s, placed = _slot(loads, params, f"SM slot {int(param(params, 'sm_slot'))}")
        m = s.modes
        hits = f"the L2 hits (loads within {latency_modes.SLOW:g}x the median {m.median:.4g})"
        out += [
            s.figure(
                "clusters",
                "count",
                "L2 latency clusters",
                m.clusters,
                f"two where the least-variance split of {hits} leaves each side >= "
                f"{latency_modes.MIN_SHARE:.0%} of them, >= {latency_modes.SEPARATION:g} rms widths and >= "
                f"{latency_modes.MIN_GAP:.0%} apart",
            ),
            s.figure(
                "near_latency",
                "cycle",
                "L2 near latency",
                m.near,
                "mean of the lower cluster" if m.clusters == 2 else f"one cluster: the mean of all {hits}",
                "near",
            ),
            s.figure(
                "far_latency",
                "cycle",
                "L2 far latency",
                m.far if m.clusters == 2 else math.nan,
                "mean of the upper cluster",
                "far",
            ),
            s.figure(
                "far_share",
                "fraction",
                "L2 far share",
                m.far_share,
                f"the upper cluster's share of {hits} (0 with one cluster)",
                "far_share",
            ),
            s.figure(
                "slow_share",
                "fraction",
                "L2 slow share",
                m.slow_share,
                f"share of all loads beyond {latency_modes.SLOW:g}x the median (L2 misses: DRAM, TLB)",
                "slow_share",
            ),
            s.figure(
                "separation",
                "rms widths",
                "L2 cluster separation",
                m.separation,
                f"gap between the two sides of the least-variance cut at {m.cut:.4g} cycles over their rms "
                "width (one mode cut in two gives 1.6-3.5)",
            ),
            s.figure(
                "line_agreement",
                "fraction",
                "L2 line agreement",
                m.agreement if m.clusters == 2 else math.nan,
                "share of lines on the same side of the cut in every launch (a latency set by the line's "
                f"address, its partition, needs >= {latency_modes.ADDRESS_BOUND:g})",
            ),
        ]
        tied = _tied(m)
        for f in out[-7:-3]:  # clusters, near, far, far share: two clusters stand only where the lines set them
            _with(tied, f)
        if first is None:
            first = (params, placed)
        elif len(placed) == len(first[1]) and param(params, "footprint_kb") == param(first[0], "footprint_kb"):
            ref, same = int(param(first[0], "sm_slot")), latency_modes.same_sides(first[1], placed)
            verdict = "agree" if same >= PARTITION or same <= 1 - PARTITION else "disagree"
            sides = (
                [
                    Check(
                        "partitions",
                        verdict,
                        f"{same:.0%} of the lines placed alike: one partition needs >= "
                        f"{PARTITION:.0%}, two <= {1 - PARTITION:.0%}",
                    )
                ]
                if math.isfinite(same)
                else []
            )
            out.append(
                _with(
                    sides,
                    s.figure(
                        "same_sides",
                        "fraction",
                        f"L2 same sides as slot {ref}",
                        same,
                        "of the lines both slots place (every slot times the same lines), the "
                        f"share placed on the same side of the cut as slot {ref}: about 1 in "
                        f"slot {ref}'s partition, about 0 in the other",
                    ),
                )
            )
        out.append(
            from_values(
                "chase_near_far",
                "timing_overhead",
                "cycle",
                f"timing overhead ({s.where})",
                samples(raw, "chase_near_far", "timing_overhead", params),
                "the fixed cost subtracted from every timed load: per launch, the timed loads' mean "
                "less its chased loads' mean (median and range over launches)",
                [params],
                s.method,
            )
        )
    return keep(out)


# --- atomics: the L2 home partition of each word ---------------------------------------------------------------------


def atomic_words(raw: pd.DataFrame) -> list[Figure]:
    """Per point of a global atomic latency case (samples: 32 words' latencies per repeat): what latency_modes finds
    over the words (clusters, near and far latency, far share, word agreement), as chase_near_far's lines."""
    out: list[Figure | None] = []
    latency = raw[(raw["metric"] == "latency") & raw["case"].isin(ATOMIC_WORDS)]
    for (case, params), point in latency.groupby(["case", "params"], sort=True):
        s, _ = _slot(point, str(params), point_text(str(params)), "words")
        m, name = s.modes, f"{case} L2"
        two = m.clusters == 2
        figures = [
            s.figure("clusters", "count", f"{name} latency clusters", m.clusters, "as chase_near_far's loads"),
            s.figure(
                "near_latency",
                "cycle",
                f"{name} near latency",
                m.near,
                "mean of the lower cluster" if two else "one cluster: the mean of every word",
                "near",
            ),
            s.figure("far_latency", "cycle", f"{name} far latency", m.far if two else math.nan, "upper cluster", "far"),
            s.figure(
                "far_share",
                "fraction",
                f"{name} far share",
                m.far_share,
                "the upper cluster's share of the words (0 with one cluster)",
                "far_share",
            ),
            s.figure(
                "line_agreement",
                "fraction",
                f"{name} word agreement",
                m.agreement if two else math.nan,
                "share of words on the same side of the cut in every repeat (a latency set by the word's address, "
                f"its L2 home, needs >= {latency_modes.ADDRESS_BOUND:g})",
            ),
        ]
        tied = _tied(m)
        out += [_with(tied, f) for f in figures[:4]] + figures[4:]
    return keep(out)


# --- shared memory ---------------------------------------------------------------------------------------------------


def shared(raw: pd.DataFrame) -> list[Figure]:
    """Shared-memory latency and broadcast latency by load width, the bank-conflict penalty per extra way (least
    squares over the ways sweep, its spread the range of the fits of each repeat) and the 32-way latency."""
    out: list[Figure | None] = []
    kinds = (("smem_latency", "lane l on element l, no conflict"), ("smem_broadcast", "all 32 lanes on one element"))
    for case, what in kinds:
        kind = "latency" if case == "smem_latency" else "broadcast latency"
        for bits, width in WIDTHS.items():
            params = canonical_params({"bits": bits})
            metric = "latency" if bits == 32 else f"latency_{bits}bit"
            out.append(
                from_values(
                    case,
                    metric,
                    "cycle",
                    f"shared-memory {kind}, {width} chase ({what})",
                    samples(raw, case, "latency", params),
                    f"one warp chases its own word (the loaded word is the next address: no address "
                    f"arithmetic on the chain), the slope between 2048 and 4096 steps per lane; median "
                    f"of the samples at bits={bits}",
                    [params],
                    methods().get(case, ""),
                )
            )
    out += conflicts(raw)
    return keep(out)


def conflicts(raw: pd.DataFrame) -> list[Figure | None]:
    """The bank-conflict penalty (cycles per extra way) and the latency at the most ways of smem_bank_conflict."""
    rows = raw[(raw["case"] == "smem_bank_conflict") & (raw["metric"] == "latency")]
    if rows.empty:
        return []
    rows = rows.assign(ways=rows["params"].map(lambda p: param(p, "ways")))
    med = rows.groupby("ways")["value"].median()
    if len(med) < 2:
        return []
    method = methods().get("smem_bank_conflict", "")
    slope, icept = np.polyfit(med.index.to_numpy(float), med.to_numpy(float), 1)
    worst = float(np.abs(med.to_numpy() - (slope * med.index.to_numpy() + icept)).max())
    fits = [np.polyfit(g["ways"], g["value"], 1)[0] for _, g in rows.groupby("repeat") if g["ways"].nunique() >= 2]
    params = list(dict.fromkeys(rows.sort_values("ways")["params"]))
    penalty = Figure(
        case="smem_bank_conflict",
        metric="conflict_penalty",
        unit="cycle/way",
        kind="derived",
        name="shared-memory bank-conflict penalty (cycles per extra way)",
        value=float(slope),
        spread=float(np.ptp(fits)) if fits else math.nan,
        samples=len(rows),
        derivation=f"least-squares slope of the median latency over {len(med)} conflict degrees "
        f"({med.index.min():g} to {med.index.max():g} ways; intercept {icept:.4g} cycles, largest "
        f"residual {worst:.2g} cycle); spread: the range of the slopes fitted to each repeat alone",
        params="",
        points=tuple(params),
        method=method,
    )
    most = rows.loc[rows["ways"] == rows["ways"].max(), "params"].iloc[0]
    top = from_values(
        "smem_bank_conflict",
        "latency_max_ways",
        "cycle",
        f"shared-memory latency, {int(rows['ways'].max())}-way bank conflict (32-bit LDS chase)",
        samples(raw, "smem_bank_conflict", "latency", most),
        f"median of the samples at {int(rows['ways'].max())} ways: lanes share banks in distinct rows",
        [most],
        method,
    )
    return [penalty, top]


# --- memory-level parallelism ---------------------------------------------------------------------------------------


def mlp(raw: pd.DataFrame) -> list[Figure]:
    """Per footprint: one load's round latency and the knee, the most independent loads in flight (in one thread)
    whose round latency stays within KNEE of it at that and every smaller count."""
    rows = raw[(raw["case"] == "mlp") & (raw["metric"] == "latency")]
    if rows.empty:
        return []
    method = methods().get("mlp", "")
    out: list[Figure | None] = []
    table = stats.summary(rows, ["params"], sort=False)[["params", "value"]]
    table["footprint_kb"] = table["params"].map(lambda p: param(p, "footprint_kb"))
    table["loads"] = table["params"].map(lambda p: param(p, "loads"))
    for kb, g in table.groupby("footprint_kb", sort=True):
        g = g.sort_values("loads", ignore_index=True)
        base = g.iloc[0]
        out.append(
            from_values(
                "mlp",
                "single_load_latency",
                "cycle",
                f"MLP round latency at {base['loads']:g} load ({kb_text(kb)} footprint)",
                samples(raw, "mlp", "latency", base["params"]),
                f"median round of {base['loads']:g} dependent chain in one thread",
                [base["params"]],
                method,
            )
        )
        within = (g["value"] <= KNEE * base["value"]).to_numpy()
        n = int(np.argmin(within)) if not within.all() else len(g)  # points before the first one beyond KNEE
        knee, beyond = g.iloc[n - 1], g.iloc[n] if n < len(g) else None
        after = (
            f"; at {beyond['loads']:g} it is {beyond['value'] / base['value'] - 1:+.1%}"
            if beyond is not None
            else f"; every count of the sweep stays within: the knee lies beyond {knee['loads']:g}"
        )
        out.append(
            Figure(
                case="mlp",
                metric="knee",
                unit="loads",
                kind="derived",
                name=f"MLP knee ({kb_text(kb)} footprint)",
                value=float(knee["loads"]),
                spread=math.nan,
                samples=int(rows["params"].isin(g["params"].iloc[: n + 1]).sum()),
                derivation=f"the most loads in flight whose round latency stays within {KNEE - 1:.0%} of "
                f"one load's ({base['value']:.4g} cycles) at that and every smaller count: at "
                f"{knee['loads']:g} loads {knee['value'] / base['value'] - 1:+.1%}{after}",
                params=knee["params"],
                points=tuple(g["params"].iloc[: n + 1]),
                method=method,
            )
        )
    return keep(out)


# --- bandwidth -------------------------------------------------------------------------------------------------------


def plateau(
    raw: pd.DataFrame, generic: list[Figure], case: str, arch: str, gpu: str
) -> tuple[str, tuple[str, ...], list[Check]] | None:
    """The point of a case's best bandwidth, the points of the plateau it stands on (checks.on_plateau: within PLATEAU
    of it), whose counters check a figure derived from it as they check the peak, and the peak's own plateau check
    where it fails (a figure derived from a peak that has not levelled has not either: it then stands on the peak's
    point alone); None where the case has no best bandwidth."""
    found = [f for f in generic if f.case == case and f.metric == "bandwidth" and f.kind in ("point", "peak")]
    if not found:
        return None
    peak, pts = found[0], points(raw).get((case, "bandwidth"), [])
    manifest = cases().get(case)
    against = []
    if manifest is not None:
        against = [
            Check("plateau of the peak", c.verdict, c.detail)
            for c in plateau_check(peak, manifest, pts, limit(peak, manifest, arch, gpu))
            if c.verdict == "disagree"
        ]
    level = (peak.params,) if against else tuple(on_plateau(peak, pts))
    return peak.params, level, against


def bandwidth(raw: pd.DataFrame, generic: list[Figure], arch: str, gpu: str) -> list[Figure]:
    """Each DRAM case's best bandwidth as a share of the GPU's datasheet DRAM bandwidth (L2 and on-chip rates are not
    DRAM traffic: no datasheet share), and dram_copy's best over each library copy of the same run."""
    sheet = archs.dram_peak_gbs(gpu)
    out: list[Figure | None] = []
    for case in DRAM_CASES:
        best = plateau(raw, generic, case, arch, gpu)
        if best is None or not sheet:
            continue
        at, level, against = best
        how = (
            f"the best bandwidth point's GB/s (bytes read + written){_at(at)} / {sheet:g} GB/s, the {gpu} "
            f"datasheet's DRAM bandwidth; {_checked(level, against)}"
        )
        share = make(
            case,
            "of_datasheet",
            "fraction",
            f"{case} best bandwidth, share of datasheet DRAM",
            lambda v: v / sheet,
            [samples(raw, case, "bandwidth", at)],
            how,
            level,
            methods().get(case, ""),
            at,
        )
        out.append(_with(against, share))
    ours = plateau(raw, generic, "dram_copy", arch, gpu)
    for library in LIBRARIES:
        theirs = point_of(generic, library, "bandwidth")
        if ours is None or theirs is None:
            continue
        at, level, against = ours
        how = (
            f"dram_copy's best GB/s{_at(at)} over {library}'s (both count every byte read plus every byte written "
            "of a device-to-device copy; a read or a write alone is other work and is not compared); "
            f"{_checked(level, against)}"
        )
        ratio = make(
            "dram_copy",
            f"over_{library}",
            "ratio",
            f"dram_copy best bandwidth over {library}",
            lambda a, b: a / b,
            [samples(raw, "dram_copy", "bandwidth", at), samples(raw, library, "bandwidth", theirs)],
            how,
            level,
            methods().get("dram_copy", ""),
            at,
        )
        out.append(_with(against, ratio))
    return keep(out)


def _checked(level: tuple[str, ...], against: list[Check]) -> str:
    """How a figure derived from a peak is checked: on the peak's plateau, or at its point alone (not levelled)."""
    if against:
        return "its peak has not levelled (see the peak's plateau check): it stands on the peak's point alone"
    return f"checked as the peak is, on its plateau ({len(level)} point{'s' * (len(level) != 1)})"


def _with(checks: list[Check], figure: Figure | None) -> Figure | None:
    """`figure` carrying checks its deriver made (the generic checks are added to them)."""
    if figure is not None:
        figure.checks = [*checks, *figure.checks]
    return figure


def _at(params: str) -> str:
    text = point_text(params)
    return f" at {text}" if text else ""


def figures(frames: dict[str, pd.DataFrame], generic: list[Figure], cases: dict[str, Case]) -> list[Figure]:
    """Every derived figure of the memory category's run; the generic figures of what the device reports get their
    checks against it here (check_reports)."""
    raw = frames.get("raw")
    if raw is None or raw.empty:
        return []
    arch, gpu = run_of(raw)
    split = near_far(raw)
    device = device_of(raw, split)
    check_reports(generic, device)
    chase = staircase(raw, device) + split
    return chase + atomic_words(raw) + shared(raw) + mlp(raw) + bandwidth(raw, generic, arch, gpu)
