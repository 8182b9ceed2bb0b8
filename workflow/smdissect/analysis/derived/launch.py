"""Figures the launch category derives over several points: the kernel-to-kernel gaps of each launch mode on its longest
chain, rounded to the digits %globaltimer has, what graphs and PDL save against serial launches, the host link's
PCIe peak (from the link speed and width the GPU reports) with each copy direction's share of it, and the host-side
costs: what a cold launch adds to a warm one, cudaMalloc/cudaFree per GiB, and unified memory's page-fault cost."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...core.tables import parse_params
from ..figure_model import Check, Figure
from . import samples as s

CATEGORY = "launch"
METRICS = frozenset(
    {
        "dependent_gap",
        "encoded_peak",
        "fault_per_page",
        "fault_rate",
        "free_per_gib",
        "link_share",
        "load_cost",
        "malloc_per_gib",
        "pair_per_gib",
        "per_kernel",
        "prefetch_rate",
        "prefetch_speedup",
        "raw_peak",
        "saves_vs_serial",
        "start_gap",
        "vs_pinned",
    }
)  # every metric a figure of this deriver can have

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


def raw_link_peak(raw: pd.DataFrame) -> float:
    """The host link's raw peak per direction (GB/s) from the speed and width pcie_link read, NaN where it was not."""
    speed, width = (s.samples(raw, "pcie_link", m, "{}") for m in ("link_speed", "link_width"))
    return link_peak(float(np.median(speed)), float(np.median(width)))[0] if len(speed) and len(width) else math.nan


def _timer_note(step: float | None, digit: float | None) -> str:
    """What a gap's derivation says of the timer's resolution: the step %globaltimer advances in and the digit the
    value is rounded to, or that it was not measured."""
    if not digit:
        return "; globaltimer_step was not measured: the timer's resolution is unknown, the value is not rounded"
    return (
        f"; %globaltimer advances in {step:g} ns steps (globaltimer_step), so the value is rounded to {digit:g} us: "
        "digits below it are not measured"
    )


def _to_timer(fig: Figure, digit: float | None) -> Figure:
    """A gap figure's value and spread rounded to the timer's digit, which it carries as its resolution."""
    fig.value, fig.spread = rounded(fig.value, digit), rounded(fig.spread, digit)
    fig.resolution = digit if digit else math.nan
    return fig


def _longest_chains(raw: pd.DataFrame, case: str, metric: str) -> dict[float, tuple[int, str]]:
    """Per grid (ctas) of a launch mode's gap metric: its longest chain's kernel count and point."""
    chains: dict[float, tuple[int, str]] = {}
    for params in s.params_of(raw, case, metric):
        point = parse_params(params)
        if "ctas" in point and point.get("kernels", 0) >= chains.get(point["ctas"], (0, ""))[0]:
            chains[point["ctas"]] = (int(point["kernels"]), params)
    return chains


def gaps(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per launch mode, grid and gap metric: the value on the longest chain (the mean over the most gaps), rounded to
    the timer's digit; and per grid what each mode saves on the dependent gap against serial launches."""
    step = timer_step_ns(raw)
    digit = resolution_us(step)
    note = _timer_note(step, digit)
    out, longest = [], {}
    for case, mode in MODES.items():
        for metric, what in GAPS.items():
            for ctas, (kernels, params) in sorted(_longest_chains(raw, case, metric).items(), reverse=True):
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
                out.append(_to_timer(fig, digit))
                if metric == "dependent_gap":
                    longest[(case, ctas)] = (kernels, params, values)
    return out + _savings(longest, methods, note, digit)


def _savings(
    longest: dict[tuple[str, float], tuple[int, str, np.ndarray]],
    methods: dict[str, str],
    note: str,
    digit: float | None,
) -> list[Figure]:
    """Per mode and grid, the serial dependent gap minus the mode's on chains of the same length (`longest`: (mode,
    ctas) -> the kernels, point and samples of its longest chain)."""
    out = []
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
            out.append(_to_timer(fig, digit))
    return out


def _link_peaks(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """The host link's raw peak per direction, from the speed and width the GPU reports, and its peak after the line
    encoding of its generation (none where pcie_link was not read)."""
    speed, width = (s.samples(raw, "pcie_link", m, "{}") for m in ("link_speed", "link_width"))
    if not len(speed) or not len(width):
        return []
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
    out = [Figure(metric="raw_peak", name="PCIe link raw peak per direction", value=peak, derivation=how, **base)]
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
    return out


def host_link(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """The link's raw and encoded peak per direction, each pinned direction's best against the raw peak (both ways:
    against twice it), and pageable against pinned host-to-device copies of the same size."""
    out = _link_peaks(raw, methods)
    peak = raw_link_peak(raw)
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


PAGE_KIB = 4  # the host's page, the unit the touch kernel strides by
MIB_PER_GIB = 1024
LOADING = {  # launch_cold's lazy_loading record (cuModuleGetLoadingMode)
    1.0: "lazy loading (the first launch loads the function)",
    0.0: "eager loading (every function was loaded with the module)",
}


def cold_launch(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """What a first launch costs over a warm one of the same kernel, saying which module loading mode the driver ran."""
    out = []
    for params in s.params_of(raw, "launch_cold", "cold_launch"):
        lazy = s.samples(raw, "launch_cold", "lazy_loading", params)
        mode = LOADING.get(float(lazy[0]) if len(lazy) else None, "the loading mode not recorded")
        out.append(
            s.make(
                "launch_cold",
                "load_cost",
                "us",
                f"cold launch minus warm launch{s.at(params)}",
                lambda c, w: c - w,
                [s.samples(raw, "launch_cold", m, params) for m in ("cold_launch", "warm_launch")],
                "median first launch of a never-launched instantiation minus the median launch of it after its first; "
                f"the driver ran with {mode}",
                [params],
                methods.get("launch_cold", ""),
                params,
            )
        )
    return s.keep(out)


ALLOC_CALLS = {"malloc": "cudaMalloc", "free": "cudaFree", "pair": "cudaMalloc + cudaFree"}  # malloc_free's metrics


def alloc_slopes(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """cudaMalloc's, cudaFree's and the pair's cost per GiB: the slope between the two largest sizes measured."""
    sizes = sorted((parse_params(p)["size_kb"], p) for p in s.params_of(raw, "malloc_free", "malloc") if "size_kb" in p)
    if len(sizes) < 2:
        return []
    (small_kb, small), (big_kb, big) = sizes[-2], sizes[-1]
    gib = (big_kb - small_kb) / (MIB_PER_GIB * 1024)
    out = []
    for metric, call in ALLOC_CALLS.items():
        out.append(
            s.make(
                "malloc_free",
                f"{metric}_per_gib",
                "us/GiB",
                f"{call} cost per GiB",
                lambda b, a: (b - a) / gib,
                [s.samples(raw, "malloc_free", metric, big), s.samples(raw, "malloc_free", metric, small)],
                f"(cost at {big_kb} KiB - cost at {small_kb} KiB) / {gib:g} GiB: the slope between the two largest "
                "sizes measured",
                [big, small],
                methods.get("malloc_free", ""),
            )
        )
    return s.keep(out)


def _link_bound(fig: Figure, peak: float) -> Figure:
    """A migration rate can only stay under the host link's raw peak per direction (pcie_link): a bound, which rules
    out and never verifies."""
    if peak > 0:
        over = fig.value > peak
        fig.checks.append(
            Check(
                "link bound",
                "disagree" if over else "agree",
                f"{fig.value:.4g} GB/s vs the PCIe raw peak {peak:.4g} GB/s per direction (pcie_link)",
            )
        )
    else:
        fig.checks.append(Check("link bound", "n/a", "pcie_link not measured here"))
    return fig


def managed(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per size: the page-fault cost per 4 KiB page over resident pages, the fault-driven and prefetched migration
    rates (under the link's raw peak), and how much faster the prefetch makes the first touch."""
    peak = raw_link_peak(raw)
    method = methods.get("managed_fault", "")
    out: list[Figure | None] = []
    for params in s.params_of(raw, "managed_fault", "faulted"):
        faulted, prefetched, resident = (
            s.samples(raw, "managed_fault", m, params) for m in ("faulted", "prefetched", "resident")
        )
        out.append(
            s.make(
                "managed_fault",
                "fault_per_page",
                "us",
                f"GPU page fault cost per 4 KiB page{s.at(params)}",
                lambda f, r: (f - r) * PAGE_KIB / 1024,
                [faulted, resident],
                "(faulted - resident) us per MiB x 4 KiB: the touch of host-resident pages over the same touch of "
                "resident ones, per host page (the driver migrates in larger chunks: this is the cost per page moved)",
                [params],
                method,
                params,
            )
        )
        out.append(
            s.make(
                "managed_fault",
                "prefetch_speedup",
                "x",
                f"first touch faulted / prefetched{s.at(params)}",
                lambda f, p: f / p,
                [faulted, prefetched],
                "faulted over prefetched time per MiB (cudaMemPrefetchAsync to the GPU, then the same touch)",
                [params],
                method,
                params,
            )
        )
        for metric, values, what in (
            ("fault_rate", faulted, "faulted"),
            ("prefetch_rate", prefetched, "prefetched (cudaMemPrefetchAsync + touch)"),
        ):
            fig = s.from_values(
                "managed_fault",
                metric,
                "GB/s",
                f"migration rate, {what.split(' ')[0]}{s.at(params)}",
                1.048576e6 / 1e3 / values,
                f"1 MiB (1.048576 MB) over the {what} time per MiB",
                [params],
                method,
                params,
            )
            out.append(_link_bound(fig, peak) if fig is not None else None)
    return s.keep(out)


figures = s.of_parts(gaps, host_link, cold_launch, alloc_slopes, managed)  # every derived figure of the category
