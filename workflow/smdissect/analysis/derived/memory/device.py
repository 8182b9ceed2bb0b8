"""What the run's card reports of itself (device_attributes, the L2 partitions chase_near_far tells apart) and a
chase level's capacity checked against it."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ....core import archs
from ....core.tables import kb_text
from ...figure_model import REFERENCE, Check, Figure
from ..samples import run_of

CAPACITY_TOLERANCE = 0.05  # a footprint a little past a cache's size stays within the level's NEAR while few lines miss
BRACKET = 1.5  # a level's last footprint and the next point further apart than this are too coarse to confirm a size
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
