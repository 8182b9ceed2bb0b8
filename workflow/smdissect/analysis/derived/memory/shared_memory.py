"""Shared memory: LDS latency and broadcast latency by load width, and the bank-conflict penalty per extra way."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ....core.tables import canonical_params
from ...figure_model import Figure
from ..samples import from_values, keep, samples
from .common import param

WIDTHS = {32: "32-bit LDS", 64: "64-bit LDS.64", 128: "128-bit LDS.128"}


def shared(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
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
                    methods.get(case, ""),
                )
            )
    out += conflicts(raw, methods)
    return keep(out)


def conflicts(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure | None]:
    """The bank-conflict penalty (cycles per extra way) and the latency at the most ways of smem_bank_conflict."""
    rows = raw[(raw["case"] == "smem_bank_conflict") & (raw["metric"] == "latency")]
    if rows.empty:
        return []
    rows = rows.assign(ways=rows["params"].map(lambda p: param(p, "ways")))
    med = rows.groupby("ways")["value"].median()
    if len(med) < 2:
        return []
    method = methods.get("smem_bank_conflict", "")
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
