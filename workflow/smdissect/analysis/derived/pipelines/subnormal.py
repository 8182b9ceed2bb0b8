"""The subnormal-operand penalties: per instruction, its latency and peak throughput with subnormal operands against
normal ones."""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

from ....core.tables import point_text
from ...figure_model import Figure
from ..sweeps import derived, method_of, num, ratio_spread, series

SUBNORMAL = re.compile(r"^(?P<op>[a-z0-9]+?)_(?P<operands>normal|subnormal|ftz_subnormal)$")


def subnormal_ops(cases: Iterable[str]) -> dict[str, dict[str, str]]:
    """op -> operands class -> case, for the cases named <op>_normal / _subnormal / _ftz_subnormal."""
    out: dict[str, dict[str, str]] = {}
    for case in cases:
        if m := SUBNORMAL.match(case):
            out.setdefault(m.group("op"), {})[m.group("operands")] = case
    return out


def subnormal_figures(raw: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """Per instruction with normal and subnormal rows: subnormal latency / normal latency, and normal peak
    throughput / subnormal peak throughput (1.00 = no penalty)."""
    out = []
    for op, by in subnormal_ops(raw["case"].unique() if len(raw) else []).items():
        normal, sub = by.get("normal"), by.get("subnormal")
        if not normal or not sub:
            continue
        method = method_of(generic, sub)
        lat_n, lat_s = series(raw, normal, "latency"), series(raw, sub, "latency")
        if lat_n and lat_s:
            (pn, a), (ps, b) = next(iter(lat_n.items())), next(iter(lat_s.items()))
            out.append(
                derived(
                    sub,
                    "latency_penalty",
                    "x",
                    f"{op} subnormal latency penalty",
                    np.median(b) / np.median(a),
                    ratio_spread(b, a),
                    len(a) + len(b),
                    f"{sub} latency / {normal} latency: {num(np.median(b))} / {num(np.median(a))} cycles",
                    (pn, ps),
                    params=ps,
                    method=method,
                )
            )
        thr_n, thr_s = series(raw, normal, "throughput"), series(raw, sub, "throughput")
        if thr_n and thr_s:
            best_n = max(thr_n, key=lambda p: np.median(thr_n[p]))
            best_s = max(thr_s, key=lambda p: np.median(thr_s[p]))
            a, b = thr_n[best_n], thr_s[best_s]
            out.append(
                derived(
                    sub,
                    "throughput_penalty",
                    "x",
                    f"{op} subnormal throughput penalty",
                    np.median(a) / np.median(b),
                    ratio_spread(a, b),
                    len(a) + len(b),
                    f"{normal} peak throughput / {sub} peak throughput: {num(np.median(a))} (at "
                    f"{point_text(best_n)}) / {num(np.median(b))} (at {point_text(best_s)}) "
                    "warp_inst/cycle/SM",
                    (best_n, best_s),
                    method=method,
                )
            )
    return out
