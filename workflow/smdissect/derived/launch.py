"""Figures the launch category derives over several points: the kernel-to-kernel gaps of each launch mode on its longest
chain, rounded to the digits %globaltimer has, what graphs and PDL save against serial launches, and the host link's
PCIe peak (from the link speed and width the GPU reports) with each copy direction's share of it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..figure_model import Figure
from ..tables import parse_params
from . import samples as s

MODES = {"gap_serial": "serial", "gap_graph": "graph", "gap_pdl": "PDL", "gap_graph_pdl": "graph + PDL"}
GAPS = {"dependent_gap": "dependent gap", "start_gap": "start gap", "per_kernel": "per kernel"}
# PCIe generation by transfer rate (GT/s), and the share of the raw rate its line encoding leaves for data
# (8b/10b through gen 2, 128b/130b for gens 3-5, 242B/256B FLIT for gen 6: PCI-SIG base specifications).
GENERATIONS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
ENCODING = {1: 8 / 10, 2: 8 / 10, 3: 128 / 130, 4: 128 / 130, 5: 128 / 130, 6: 242 / 256}
DIRECTIONS = {"h2d_pinned": ("H2D pinned", 1), "d2h_pinned": ("D2H pinned", 1), "bidir_pinned": ("both ways pinned", 2)}


def grid_label(ctas: float) -> str:
    """'one CTA per SM' for the encoded ctas = 0, else the CTA count."""
    return "one CTA per SM" if ctas == 0 else f"{int(ctas)} CTA" + ("s" if ctas != 1 else "")


def timer_step_ns(raw: pd.DataFrame) -> float | None:
    """%globaltimer's smallest step as globaltimer_step measured it (ns), None where it was not measured."""
    step = s.samples(raw, "globaltimer_step", "step", "{}")
    return float(np.median(step)) if len(step) and float(np.median(step)) > 0 else None


def resolution_us(step_ns: float | None) -> float | None:
    """The digit a gap is rounded to (us): the power of ten at or below the timer's step (32 ns -> 0.01 us)."""
    return None if step_ns is None else 10.0 ** math.floor(math.log10(step_ns / 1e3))


def rounded(value: float, digit: float | None) -> float:
    """value rounded to a multiple of `digit` (unchanged for None)."""
    return value if digit is None else round(round(value / digit) * digit, 12)


def generation(speed_gts: float) -> float:
    """The PCIe generation of a link's transfer rate (GT/s), NaN for a rate no generation uses."""
    return float(next((g for r, g in GENERATIONS.items() if math.isclose(r, speed_gts, rel_tol=0.02)), math.nan))


def link_peak(speed_gts: float, lanes: float) -> tuple[float, float]:
    """Per-direction peak of a link in GB/s: raw (GT/s x lanes / 8) and after its generation's line encoding."""
    raw = speed_gts * lanes / 8
    gen = generation(speed_gts)
    return raw, raw * ENCODING[int(gen)] if not math.isnan(gen) else math.nan


def gaps(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per launch mode, grid and gap metric: the value on the longest chain (the mean over the most gaps), rounded to
    the timer's digit; and per grid what each mode saves on the dependent gap against serial launches."""
    step = timer_step_ns(raw)
    digit = resolution_us(step)
    note = (
        f"; %globaltimer advances in {step:g} ns steps (globaltimer_step), so the value is rounded to {digit:g} us: "
        "digits below it are not measured"
        if digit
        else "; globaltimer_step was not measured: the timer's resolution is unknown, the value is not rounded"
    )
    out, longest = [], {}
    for case, mode in MODES.items():
        for metric, what in GAPS.items():
            chains: dict[float, tuple[int, str]] = {}
            for params in s.params_of(raw, case, metric):
                point = parse_params(params)
                if "ctas" in point and point.get("kernels", 0) >= chains.get(point["ctas"], (0, ""))[0]:
                    chains[point["ctas"]] = (int(point["kernels"]), params)
            for ctas, (kernels, params) in sorted(chains.items(), reverse=True):
                values = s.samples(raw, case, metric, params)
                how = f"the {kernels}-kernel chain's {what} (mean over its kernels, median of {len(values)} samples)"
                fig = s.from_values(
                    case,
                    metric,
                    "us",
                    f"{mode} {what}, {grid_label(ctas)}",
                    values,
                    how + note,
                    [params],
                    methods.get(case, ""),
                    params,
                )
                if fig is None:
                    continue
                fig.value, fig.spread = rounded(fig.value, digit), rounded(fig.spread, digit)
                fig.resolution = digit if digit else math.nan
                out.append(fig)
                if metric == "dependent_gap":
                    longest[(case, ctas)] = (kernels, params, values)
    for (case, ctas), (kernels, params, values) in sorted(longest.items()):
        serial = longest.get(("gap_serial", ctas))
        if case == "gap_serial" or serial is None or serial[0] != kernels:
            continue
        fig = s.make(
            case,
            "saves_vs_serial",
            "us",
            f"{MODES[case]} saves against serial, {grid_label(ctas)}",
            lambda a, b: a - b,
            [serial[2], values],
            f"serial minus {MODES[case]} dependent gap on the {kernels}-kernel chain{note}",
            [params],
            methods.get(case, ""),
            params,
        )
        if fig is not None:
            fig.value, fig.spread = rounded(fig.value, digit), rounded(fig.spread, digit)
            fig.resolution = digit if digit else math.nan
            out.append(fig)
    return out


def host_link(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """The link's raw and encoded peak per direction, each pinned direction's best against the raw peak (both ways:
    against twice it), and pageable against pinned host-to-device copies of the same size."""
    speed, width = (s.samples(raw, "pcie_link", m, "{}") for m in ("link_speed", "link_width"))
    out = []
    peak = math.nan
    if len(speed) and len(width):
        peak, data_peak = link_peak(float(np.median(speed)), float(np.median(width)))
        gen = generation(float(np.median(speed)))
        how = f"{np.median(speed):g} GT/s x {np.median(width):g} lanes (/sys/bus/pci, read during a copy) / 8 bits" + (
            f", PCIe gen {gen:g}" if not math.isnan(gen) else ", a rate no PCIe generation uses"
        )
        base = {
            "case": "pcie_link",
            "unit": "GB/s",
            "kind": "derived",
            "spread": 0.0,
            "samples": len(speed),
            "params": "{}",
            "points": ("{}",),
            "method": methods.get("pcie_link", ""),
        }
        out.append(
            Figure(metric="raw_peak", name="PCIe link raw peak per direction", value=peak, derivation=how, **base)
        )
        if not math.isnan(data_peak):
            out.append(
                Figure(
                    metric="encoded_peak",
                    name="PCIe link peak per direction after line encoding",
                    value=data_peak,
                    derivation=f"{how}, x {ENCODING[int(gen)]:.4g} (its line encoding); "
                    "packet headers and flow control take more",
                    **base,
                )
            )
    for case, (label, ways) in DIRECTIONS.items():
        pts = s.params_of(raw, case, "bandwidth")
        if not pts or not peak > 0:
            continue
        best = max(pts, key=lambda p: float(np.median(s.samples(raw, case, "bandwidth", p))))
        values = s.samples(raw, case, "bandwidth", best)
        out.append(
            s.from_values(
                case,
                "link_share",
                "%",
                f"{label} best / PCIe raw peak",
                100 * values / (ways * peak),
                f"best copy size ({s.at(best).strip()}) over {ways} x the raw peak per direction "
                f"({peak:g} GB/s), the way published PCIe utilisation is given",
                [best],
                methods.get(case, ""),
                best,
            )
        )
    for params in s.params_of(raw, "h2d_pageable", "bandwidth"):
        pinned = s.samples(raw, "h2d_pinned", "bandwidth", params)
        out.append(
            s.make(
                "h2d_pageable",
                "vs_pinned",
                "ratio",
                f"pageable / pinned H2D{s.at(params)}",
                lambda a, b: a / b,
                [s.samples(raw, "h2d_pageable", "bandwidth", params), pinned],
                "h2d_pageable over h2d_pinned at the same size: the driver's staging through its own pinned buffer",
                [params],
                methods.get("h2d_pageable", ""),
                params,
            )
        )
    return s.keep(out)


figures = s.of_parts(gaps, host_link)  # every derived figure of the launch category
