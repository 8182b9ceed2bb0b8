"""The dispatch latency: the cycles from a clock read to the next with one dependent op between, and what each
further dependent op adds."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...figure_model import Figure
from ..sweeps import derived, method_of, num, param, robust, series, slope


def dispatch_figures(raw: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """Per dispatch case: the dispatch latency (elapsed - clock_to_clock at n = 1) and the cycles each further
    dependent op adds (the least-squares slope of dispatch over n >= 1)."""
    out = []
    cases = sorted({str(c) for c in raw.loc[raw["metric"] == "dispatch", "case"]}) if len(raw) else []
    for case in cases:
        found = series(raw, case, "dispatch").items()
        pts = {int(param(p, "n")): (p, v) for p, v in found if param(p, "n") is not None}
        method = method_of(generic, case)
        if 1 in pts:
            at, v = pts[1]
            out.append(
                derived(
                    case,
                    "dispatch",
                    "cycle",
                    f"{case} dispatch latency",
                    np.median(v),
                    np.ptp(v),
                    len(v),
                    "elapsed - clock_to_clock of the same launch at n = 1: cycles from a clock read to the "
                    f"next clock read with one dependent op on the value between ({len(v)} launches, each "
                    "the median of 64 timed pairs)",
                    (at,),
                    params=at,
                    method=method,
                )
            )
        chain = {n: v for n, (_, v) in pts.items() if n >= 1}
        fit, spread = robust(lambda m: slope(m.keys(), m.values()), chain)
        if fit is not None:
            listed = ", ".join(f"n={n}: {num(np.median(v))}" for n, v in sorted(chain.items()))
            out.append(
                derived(
                    case,
                    "dispatch_slope",
                    "cycle",
                    f"{case} cycles per further dependent op",
                    fit,
                    spread,
                    sum(len(v) for v in chain.values()),
                    f"least-squares slope of dispatch over n ({listed}); spread: over the repeats",
                    (pts[n][0] for n in sorted(chain)),
                    method=method,
                )
            )
    return out
