"""The L2 of the geometry category: its bandwidth level and the footprint it falls off at (l2_bandwidth), the camping
ratios of odd over power-of-two strides (l2_camping), the persisting window's gain (l2_persist), and per SM slot the
far share, the partition interleave and the lines placed alike of consecutive lines (l2_address_map)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from ....core.tables import canonical_params, parse_params
from ... import latency_modes
from ...figure_model import REFERENCE, Check, Figure
from ..memory.device import BRACKET, CAPACITY_TOLERANCE
from ..samples import keep, make, samples
from .curves import attributes, curve, level_figure, levels
from .sector import LINE


def l2(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """The L2 bandwidth level and the footprint it falls off at, the camping ratios and the persisting gain."""
    out: list[Figure | None] = []
    pts = curve(raw, "l2_bandwidth", "bandwidth", "footprint_mb")
    found = levels(pts)
    if found and found[0][0] == 0:
        span = found[0]
        out.append(
            level_figure(
                raw,
                "l2_bandwidth",
                "bandwidth",
                pts,
                span,
                "L2 read bandwidth (L2-resident windows)",
                f"the first bandwidth level: {pts['footprint_mb'].iloc[0]:g} to "
                f"{pts['footprint_mb'].iloc[span[1]]:g} MB",
                "GB/s",
            )
        )
        if span[1] + 1 < len(pts):
            out.append(falloff(raw, pts, found, methods.get("l2_bandwidth", "")))
    out += camping(raw, methods) + [persisting(raw, methods)]
    return keep(out)


def falloff(raw: pd.DataFrame, pts: pd.DataFrame, found: list[tuple[int, int]], method: str) -> Figure:
    """The L2 level's last footprint, bracketed by the next level's first (or the next point where the sweep ends
    in no level): it stands on those two plateau ends only, the transition points between them (at the cliff, where
    launches alternate between mostly hits and mostly misses) named with their spread but not stood on."""
    i = found[0][1]
    j = found[1][0] if len(found) > 1 else i + 1
    last, beyond = float(pts["footprint_mb"].iloc[i]), float(pts["footprint_mb"].iloc[j])
    between = [
        f"{pts['footprint_mb'].iloc[k]:g} MB: {pts['value'].iloc[k]:.4g} GB/s, launches from "
        f"{np.min(x):.4g} to {np.max(x):.4g}"
        for k in range(i + 1, j)
        for x in [samples(raw, "l2_bandwidth", "bandwidth", pts["params"].iloc[k])]
    ]
    nxt = "the DRAM level's first" if len(found) > 1 else "the sweep's next point (no level after it)"
    fig = Figure(
        case="l2_bandwidth",
        metric="falloff_mb",
        unit="MB",
        kind="derived",
        name="L2 bandwidth fall-off footprint",
        value=last,
        spread=math.nan,
        samples=len(pts),
        derivation=f"the last footprint on the L2 bandwidth level ({pts['value'].iloc[i]:.4g} GB/s); {beyond:g} MB is "
        f"{nxt} ({pts['value'].iloc[j]:.4g} GB/s): the window falls off between {last:g} and {beyond:g} MB"
        + (
            f"; transition between them, stood on by no figure (at the cliff a launch's window is mostly hits or "
            f"mostly misses): {'; '.join(between)}"
            if between
            else ""
        ),
        points=(pts["params"].iloc[i], pts["params"].iloc[j]),
        method=method,
    )
    fig.checks = falloff_checks(raw, last, beyond)
    return fig


def falloff_checks(raw: pd.DataFrame, last: float, beyond: float) -> list[Check]:
    """The fall-off against the device's L2 size (l2_capacity): a bound (the L2 level cannot last past it), and a
    verification where the bracket holds it (every SM's reads keep about the whole L2 resident)."""
    size = attributes(raw).get("l2_capacity")
    if size is None:
        return [Check("device size", "n/a", "device_geometry not measured in this run", evidence=REFERENCE)]
    whole = size / 2**20
    tol = CAPACITY_TOLERANCE
    bound = Check(
        "device bound",
        "disagree" if last > whole * (1 + tol) else "agree",
        f"{last:g} MB vs the device's {whole:g} MB L2 (l2_capacity)",
    )
    inside = last * (1 - tol) <= whole <= beyond * (1 + tol) and beyond <= last * BRACKET
    if inside:
        detail = (
            f"falls off between {last:g} and {beyond:g} MB, which holds the device's whole {whole:g} MB L2 "
            "(l2_capacity): the window every SM reads stays L2-resident up to about the whole L2, not half of it"
        )
    elif beyond > last * BRACKET:
        detail = f"falls off between {last:g} and {beyond:g} MB: too coarse a bracket to confirm the {whole:g} MB L2"
    else:
        detail = (
            f"falls off between {last:g} and {beyond:g} MB, short of the device's whole {whole:g} MB L2 "
            "(l2_capacity): the SMs' reads keep less than the whole L2 resident"
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
        base = far_share(params, where, m, len(x) // per, per, methods.get("l2_address_map", ""))
        out.append(base)
        if tied(m):
            out.append(interleave(base, placed))
        if first is None:
            first = (params, placed)
        elif tied(m):
            out.append(same_sides(base, where, first, placed))
    return keep(out)


def tied(m: latency_modes.Modes) -> bool:
    """Whether a slot's lines split into two latency clusters that every launch agrees on (a partition split)."""
    return m.clusters == 2 and m.agreement >= latency_modes.ADDRESS_BOUND


def far_share(params: str, where: str, m: latency_modes.Modes, launches: int, per: int, method: str) -> Figure:
    """One slot's far share: the upper latency cluster's share of its L2 hits, with how well the launches agree on
    which lines are far."""
    fig = Figure(
        case="l2_address_map",
        metric="far_share",
        unit="fraction",
        kind="derived",
        name=f"L2 far share of consecutive lines ({where})",
        value=float(m.far_share),
        spread=math.nan,
        samples=m.loads,
        derivation=f"{m.loads} loads ({launches} launches of {per} consecutive lines); {latency_modes.reading(m)}: "
        "the upper cluster's share of the L2 hits",
        params=params,
        points=(params,),
        method=method,
    )
    fig.checks = [
        Check(
            "line agreement",
            "agree" if tied(m) else "disagree" if m.clusters == 2 else "n/a",
            f"{m.agreement:.0%} of the lines on one side of the cut in every launch (partitions need >= "
            f"{latency_modes.ADDRESS_BOUND:.0%})"
            if m.clusters == 2
            else "one latency cluster: no partition split",
        )
    ]
    return fig


def same_sides(base: Figure, where: str, first: tuple[str, np.ndarray], placed: np.ndarray) -> Figure | None:
    """Of the lines both this slot and the first place, the share on the same side (None where none is placed by
    both)."""
    same = latency_modes.same_sides(first[1], placed)
    if not math.isfinite(same):
        return None
    return replace(
        base,
        metric="same_sides",
        name=f"L2 lines placed as slot {parse_params(first[0])['sm_slot']} places them ({where})",
        value=same,
        derivation="of the lines both slots place, the share on the same side: about 1 for an SM of "
        "the same partition, 0 for one of the other (each one's far lines the other's near)",
        points=(first[0], base.params),
        checks=list(base.checks),
    )


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
