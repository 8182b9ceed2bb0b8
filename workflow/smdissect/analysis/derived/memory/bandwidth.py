"""Bandwidth: each DRAM case's best against the GPU's datasheet DRAM bandwidth, and dram_copy's best against the
library copies of the same run, each standing on its peak's plateau."""

from __future__ import annotations

import pandas as pd

from ....core import archs
from ....core.catalog import Case
from ...checks import limit, on_plateau, plateau_check
from ...figure_model import Check, Figure, points
from ..samples import at, keep, make, point_of, samples
from .common import with_checks

DRAM_CASES = ("dram_read", "dram_write", "dram_copy", "memcpy_d2d", "torch_copy")
LIBRARIES = ("memcpy_d2d", "torch_copy")  # library copies of the same run: the references of dram_copy


def plateau(
    raw: pd.DataFrame, generic: list[Figure], cases: dict[str, Case], case: str, arch: str, gpu: str
) -> tuple[str, tuple[str, ...], list[Check]] | None:
    """The point of a case's best bandwidth, the points of the plateau it stands on (checks.on_plateau: within PLATEAU
    of it), whose counters check a figure derived from it as they check the peak, and the peak's own plateau check
    where it fails (a figure derived from a peak that has not levelled has not either: it then stands on the peak's
    point alone; checked only where `cases` has the case); None where the case has no best bandwidth."""
    found = [f for f in generic if f.case == case and f.metric == "bandwidth" and f.kind in ("point", "peak")]
    if not found:
        return None
    peak, pts = found[0], points(raw).get((case, "bandwidth"), [])
    manifest = cases.get(case)
    against = []
    if manifest is not None:
        against = [
            Check("plateau of the peak", c.verdict, c.detail)
            for c in plateau_check(peak, manifest, pts, limit(peak, manifest, arch, gpu))
            if c.verdict == "disagree"
        ]
    level = (peak.params,) if against else tuple(on_plateau(peak, pts))
    return peak.params, level, against


def bandwidth(raw: pd.DataFrame, generic: list[Figure], cases: dict[str, Case], arch: str, gpu: str) -> list[Figure]:
    """Each DRAM case's best bandwidth as a share of the GPU's datasheet DRAM bandwidth (L2 and on-chip rates are not
    DRAM traffic: no datasheet share), and dram_copy's best over each library copy of the same run."""
    sheet = archs.dram_peak_gbs(gpu)
    out: list[Figure | None] = []
    for case in DRAM_CASES:
        best = plateau(raw, generic, cases, case, arch, gpu)
        if best is None or not sheet:
            continue
        point, level, against = best
        how = (
            f"the best bandwidth point's GB/s (bytes read + written){at(point)} / {sheet:g} GB/s, the {gpu} "
            f"datasheet's DRAM bandwidth; {_checked(level, against)}"
        )
        share = make(
            case,
            "of_datasheet",
            "fraction",
            f"{case} best bandwidth, share of datasheet DRAM",
            lambda v: v / sheet,
            [samples(raw, case, "bandwidth", point)],
            how,
            level,
            cases[case].method if case in cases else "",
            point,
        )
        out.append(with_checks(against, share))
    ours = plateau(raw, generic, cases, "dram_copy", arch, gpu)
    for library in LIBRARIES:
        theirs = point_of(generic, library, "bandwidth")
        if ours is None or theirs is None:
            continue
        point, level, against = ours
        how = (
            f"dram_copy's best GB/s{at(point)} over {library}'s (both count every byte read plus every byte written "
            "of a device-to-device copy; a read or a write alone is other work and is not compared); "
            f"{_checked(level, against)}"
        )
        ratio = make(
            "dram_copy",
            f"over_{library}",
            "ratio",
            f"dram_copy best bandwidth over {library}",
            lambda a, b: a / b,
            [samples(raw, "dram_copy", "bandwidth", point), samples(raw, library, "bandwidth", theirs)],
            how,
            level,
            cases["dram_copy"].method if "dram_copy" in cases else "",
            point,
        )
        out.append(with_checks(against, ratio))
    return keep(out)


def _checked(level: tuple[str, ...], against: list[Check]) -> str:
    """How a figure derived from a peak is checked: on the peak's plateau, or at its point alone (not levelled)."""
    if against:
        return "its peak has not levelled (see the peak's plateau check): it stands on the peak's point alone"
    return f"checked as the peak is, on its plateau ({len(level)} point{'s' * (len(level) != 1)})"
