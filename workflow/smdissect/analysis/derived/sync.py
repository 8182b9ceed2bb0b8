"""Figures the sync category derives over several points: bar.sync's cost per added warp (a least-squares line over
the warps sweep), what __syncwarp adds, grid.sync in us, nanosleep's shortest sleep and its overshoot, what the first
and each further store in flight add to a fence and the fence with N stores against the stores alone, acquire and
release against relaxed, the remote hop of a cluster atomic, and red against atom throughput by contention."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...core.tables import canonical_params, parse_params
from ..figure_model import Check, Figure
from . import samples as s

CATEGORY = "sync"
METRICS = frozenset(
    {
        "acquire_cost",
        "fence_cost",
        "first_store",
        "fixed",
        "overshoot",
        "per_store",
        "per_warp",
        "red_over_atom",
        "release_cost",
        "remote_hop",
        "shortest_sleep",
        "syncwarp_cost",
        "time_us",
    }
)  # every metric a figure of this deriver can have

BOUND_FROM = 1000  # ns: the shortest request whose sleep PTX's bound is held to (see bound)
CONTENTION = {0: "a word per thread", 1: "one word", 2: "a word per warp"}
# Fences with stores in flight: the case with N stores and the store-free fence it extends (N = 0).
FENCE_FITS = {
    "fence_stores_gpu": ("fence_acq_rel_gpu", "fence.acq_rel.gpu"),
    "fence_stores_cta": ("fence_acq_rel_cta", "fence.acq_rel.cta"),
}
# (case, metric, its baseline case) -> what the difference is: the same work with and without one thing.
DIFFERENCES = {
    ("ld_acquire_gpu", "acquire_cost"): ("ld_relaxed_gpu", "ld.acquire.gpu minus ld.relaxed.gpu latency"),
    ("st_release_gpu", "release_cost"): ("st_relaxed_gpu", "st.release.gpu minus st.relaxed.gpu cost per store"),
    ("atom_add_cluster_latency", "remote_hop"): (
        "atom_add_shared_latency",
        "atom.shared::cluster.add on the peer CTA minus atom.shared.add on the own CTA",
    ),
}


def fit(xs: np.ndarray, ys: tuple[float, ...]) -> tuple[float, float]:
    """Least-squares (slope, intercept) of ys over xs."""
    slope, intercept = np.polyfit(xs, np.asarray(ys, float), 1)
    return float(slope), float(intercept)


def line(
    case: str, pts: list[tuple[float, str, np.ndarray]], what: str, unit: str, method: str, names: tuple[str, str]
) -> list[Figure]:
    """The slope and intercept of a least-squares line through (x, samples at x), each a figure whose spread is the
    range of the line over the samples' extremes; none where fewer than two x's were measured."""
    pts = [p for p in pts if len(p[2])]
    if len(pts) < 2:
        return []
    xs = np.array([x for x, _, _ in pts], float)
    parts, params = [v for _, _, v in pts], [p for _, p, _ in pts]
    at = ", ".join(f"{x:g}" for x in xs)
    how = f"least squares over {what} = {at} (medians; spread: the fit over the samples' extremes)"
    out = [
        s.make(case, metric, u, name, lambda *ys, i=i: fit(xs, ys)[i], parts, how, params, method)
        for i, (metric, u, name) in enumerate(((f"per_{what}", f"{unit}/{what}", names[0]), ("fixed", unit, names[1])))
    ]
    return s.keep(out)


def barriers(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """bar.sync's cost per added warp and at zero warps (the line over the warps sweep), and what bar.warp.sync adds
    to a step (sync 1 minus sync 0)."""
    pts = [
        (float(parse_params(p)["warps"]), p, s.samples(raw, "bar_sync", "latency", p))
        for p in s.params_of(raw, "bar_sync", "latency")
    ]
    out = line(
        "bar_sync",
        pts,
        "warp",
        "cycle",
        methods.get("bar_sync", ""),
        ("bar.sync cost per added warp", "bar.sync fixed cost (the line at 0 warps)"),
    )
    with_sync, without = (canonical_params({"sync": n}) for n in (1, 0))
    out.append(
        s.make(
            "syncwarp",
            "syncwarp_cost",
            "cycle",
            "what __syncwarp() adds to a step",
            lambda a, b: a - b,
            [s.samples(raw, "syncwarp", "latency", with_sync), s.samples(raw, "syncwarp", "latency", without)],
            "cycles per step with bar.warp.sync -1 after each IMAD minus without (ptxas emits no instruction for it)",
            [with_sync, without],
            methods.get("syncwarp", ""),
        )
    )
    return s.keep(out)


def grid(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """grid.sync() in us at one CTA per SM and at full occupancy."""
    out = []
    for full, label in ((0, "one CTA per SM"), (1, "full occupancy")):
        params = canonical_params({"full": full})
        out.append(
            s.from_values(
                "grid_sync",
                "time_us",
                "us",
                f"grid.sync() at {label}",
                s.samples(raw, "grid_sync", "time", params) / 1e3,
                "ns per grid.sync() (cycles over the launch's clock64 per %globaltimer) / 1000",
                [params],
                methods.get("grid_sync", ""),
                params,
            )
        )
    return s.keep(out)


def bound(slept: float, request: int) -> Check:
    """PTX's promise for nanosleep (a sleep in [0, 2 x request]) against the sleep measured: it can only rule a figure
    out, and only from BOUND_FROM ns, where a call's own issue and wake-up are a small share of the sleep."""
    detail = f"{slept:.4g} ns slept, PTX: in [0, {2 * request}] ns"
    if request < BOUND_FROM:
        return Check("documented bound", "n/a", f"{detail}; below {BOUND_FROM} ns a call's own cost is a large share")
    return Check("documented bound", "agree" if 0 <= slept <= 2 * request else "disagree", detail)


def sleeps(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """nanosleep's shortest sleep (request 0) and, per nonzero request, its overshoot (measured minus requested), each
    checked against PTX's bound: a sleep lies in [0, 2 x request]."""
    out = []
    for params in s.params_of(raw, "nanosleep", "sleep_ns"):
        request = parse_params(params)["request_ns"]
        values = s.samples(raw, "nanosleep", "sleep_ns", params)
        if request == 0:
            fig = s.from_values(
                "nanosleep", "shortest_sleep", "ns", "nanosleep shortest sleep (request 0)", values,
                "ns per nanosleep(0) by %globaltimer: the floor under every request", [params],
                methods.get("nanosleep", ""), params,
            )  # fmt: skip
            out.append(fig)
            continue
        fig = s.from_values(
            "nanosleep", "overshoot", "ns", f"nanosleep overshoot at {request} ns", values - request,
            f"ns per nanosleep({request}) by %globaltimer minus the {request} ns requested", [params],
            methods.get("nanosleep", ""), params,
        )  # fmt: skip
        if fig is not None:
            fig.checks.append(bound(fig.value + request, request))
        out.append(fig)
    return s.keep(out)


def fences(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per fence with stores: what the first store in flight adds to the fence (N = 1 against the store-free fence),
    what each further store adds (the line over N >= 1: the fenced step is a step in N, not a line through N = 0), and,
    at each N, the step with the fence minus the same N stores unfenced."""
    out = []
    for case, (alone, ptx) in FENCE_FITS.items():
        pts = [
            (float(parse_params(p)["stores"]), p, s.samples(raw, case, "latency", p))
            for p in s.params_of(raw, case, "latency")
        ]
        fitted = line(
            case,
            [p for p in pts if p[0] >= 1],
            "store",
            "cycle",
            methods.get(case, ""),
            (f"{ptx} cost per further store in flight", f"{ptx} step with stores (the line at 0)"),
        )
        out += [f for f in fitted if f.metric == "per_store"]
        one = canonical_params({"stores": 1})
        out.append(
            s.make(
                case,
                "first_store",
                "cycle",
                f"what one store in flight adds to {ptx}",
                lambda a, b: a - b,
                [s.samples(raw, case, "latency", one), s.samples(raw, alone, "latency", "{}")],
                f"cycles per step of 1 store + {ptx} minus {ptx} alone ({alone})",
                [one],
                methods.get(case, ""),
                one,
            )
        )
        for params in s.params_of(raw, case, "latency"):
            n = parse_params(params)["stores"]
            stores = f"{n} store{'s' if n != 1 else ''}"
            out.append(
                s.make(
                    case,
                    "fence_cost",
                    "cycle",
                    f"{ptx} after {stores}",
                    lambda a, b: a - b,
                    [s.samples(raw, case, "latency", params), s.samples(raw, "stores_unfenced", "latency", params)],
                    f"cycles per step of {stores} + {ptx} minus {stores} alone (stores_unfenced): not additive,"
                    " the unfenced stores' drain overlaps the fence's wait",
                    [params],
                    methods.get(case, ""),
                    params,
                )
            )
    return s.keep(out)


def differences(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """acquire and release against relaxed, and the cluster atomic's remote hop: case minus its baseline."""
    out = []
    for (case, metric), (base, what) in DIFFERENCES.items():
        mine, theirs = s.params_of(raw, case, "latency"), s.params_of(raw, base, "latency")
        if not mine or not theirs:
            continue
        out.append(
            s.make(
                case,
                metric,
                "cycle",
                what,
                lambda a, b: a - b,
                [s.samples(raw, case, "latency", mine[0]), s.samples(raw, base, "latency", theirs[0])],
                f"{case} latency minus {base} latency (medians)",
                [mine[0]],
                methods.get(case, ""),
            )
        )
    return s.keep(out)


def red_vs_atom(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """red.global.add over atom.global.add throughput (result used) at each contention."""
    red = {parse_params(p)["contention"]: p for p in s.params_of(raw, "red_add", "throughput")}
    out = []
    for params in s.params_of(raw, "atom_add", "throughput"):
        contention = parse_params(params)["contention"]
        if contention not in red:
            continue
        out.append(
            s.make(
                "red_add",
                "red_over_atom",
                "ratio",
                f"red / atom add throughput, {CONTENTION.get(contention, contention)}",
                lambda a, b: a / b,
                [
                    s.samples(raw, "red_add", "throughput", red[contention]),
                    s.samples(raw, "atom_add", "throughput", params),
                ],
                "red.global.add.u32 (no result) over atom.global.add.u32 (result used), atomics per cycle per SM",
                [red[contention]],
                methods.get("red_add", ""),
                red[contention],
            )
        )
    return s.keep(out)


figures = s.of_parts(barriers, grid, sleeps, fences, differences, red_vs_atom)  # every derived figure of sync
