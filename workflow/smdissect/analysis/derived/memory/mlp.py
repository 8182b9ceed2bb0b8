"""Memory-level parallelism: one load's round latency and the knee, the most independent loads in flight per thread
whose round stays near it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ....core import stats
from ....core.tables import kb_text
from ...figure_model import Figure
from ..samples import from_values, keep, samples
from .common import param

KNEE = 1.2  # memory-level parallelism: the most loads in flight whose round stays within 20% of one load's


def mlp(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per footprint: one load's round latency and the knee, the most independent loads in flight (in one thread)
    whose round latency stays within KNEE of it at that and every smaller count."""
    rows = raw[(raw["case"] == "mlp") & (raw["metric"] == "latency")]
    if rows.empty:
        return []
    method = methods.get("mlp", "")
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
