"""Distributed shared memory against the own CTA's and local shared memory: the remote hop (peer minus own CTA through
shared::cluster), the peer and generic paths against the local ld.shared chase, and DSMEM over local bandwidth."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from ...figure_model import Figure
from .. import samples as s
from .sizes import by_size

STREAMS = {"dsmem_read": "smem_read_local", "dsmem_write": "smem_write_local"}


def _per_size(
    raw: pd.DataFrame,
    case: str,
    other: str,
    metric: str,
    out_metric: str,
    unit: str,
    name: str,
    fn: Callable[[float, float], float],
    what: str,
    methods: dict[str, str],
) -> list[Figure]:
    """fn(case, other) at every cluster size both measured, one figure each."""
    mine, theirs = by_size(raw, case, metric), by_size(raw, other, metric)
    return s.keep(
        s.make(
            case,
            out_metric,
            unit,
            f"{name} at cluster={n}",
            fn,
            [mine[n][1], theirs[n][1]],
            f"{what} at cluster={n} (medians of {len(mine[n][1])} and {len(theirs[n][1])} samples; "
            "spread: over their extremes)",
            [mine[n][0]],
            methods.get(case, ""),
            mine[n][0],
        )
        for n in sorted(set(mine) & set(theirs))
    )


def dsmem(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """The remote hop, the peer and generic paths against the local chase, and DSMEM over local bandwidth."""
    out = _per_size(
        raw,
        "dsmem_latency",
        "dsmem_latency_own",
        "latency",
        "remote_hop",
        "cycle",
        "DSMEM remote hop",
        lambda a, b: a - b,
        "dsmem_latency minus dsmem_latency_own (the same ld.shared::cluster chase in "
        "the peer's and in the own CTA's shared memory: the SM-to-SM network's share)",
        methods,
    )
    out += _per_size(
        raw,
        "dsmem_latency",
        "smem_latency_local",
        "latency",
        "vs_local",
        "ratio",
        "DSMEM peer chase / local ld.shared chase",
        lambda a, b: a / b,
        "dsmem_latency over smem_latency_local",
        methods,
    )
    out += _per_size(
        raw,
        "dsmem_latency_own",
        "smem_latency_local",
        "latency",
        "generic_path",
        "cycle",
        "shared::cluster path to the own CTA minus ld.shared",
        lambda a, b: a - b,
        "dsmem_latency_own minus smem_latency_local (the generic LD.E path and its MOV per step)",
        methods,
    )
    for case, local in STREAMS.items():
        direction = case.removeprefix("dsmem_")
        out += _per_size(
            raw,
            case,
            local,
            "bandwidth_per_sm",
            "vs_local",
            "ratio",
            f"DSMEM {direction} / local {direction} bandwidth",
            lambda a, b: a / b,
            f"{case} over {local} (B/cycle/SM)",
            methods,
        )
    return out
