"""Report view of the sync category: CTA barriers against warps, the grid barrier and nanosleep, fences by scope and
with stores in flight, acquire / release against relaxed, and atomics by operation and contention. Every number is a
row of the figures table shown with its status (analysis.derived.sync derives the fits, differences and ratios);
the barrier chart is drawn from the samples."""

from __future__ import annotations

import pandas as pd

from smdissect.analysis.derived.sync import CONTENTION
from smdissect.pages import charts, evidence, markup

CATEGORY = "sync"

COLUMNS = ("figure", "value", "unit", "spread", "status", "reason")
BARRIERS = {"bar_sync": "bar.sync 0, all warps", "bar_named": "bar.sync 1, half the warps (2 barriers at once)"}
SCOPES = ("cta", "cluster", "gpu", "sys")
SEMANTICS = ("acq_rel", "sc")
ORDERING = ("ld_acquire_gpu", "ld_relaxed_gpu", "st_release_gpu", "st_relaxed_gpu")
FENCE_STORES = ("fence_stores_gpu", "fence_stores_cta", "stores_unfenced")
# atomics table rows: operation -> (its latency case, its throughput case)
ATOMICS = {
    "add u32 (red)": ("", "red_add"),
    "add u32 (atom, result used)": ("atom_add_latency", "atom_add"),
    "min u32": ("atom_min_latency", "red_min"),
    "max u32": ("atom_max_latency", "red_max"),
    "exch b32": ("atom_exch_latency", "atom_exch"),
    "and b32": ("atom_and_latency", "red_and"),
    "or b32": ("atom_or_latency", "red_or"),
    "add f16x2": ("atom_add_f16x2_latency", "red_add_f16x2"),
    "add bf16x2": ("atom_add_bf16x2_latency", "red_add_bf16x2"),
    "add v2.f32 (red)": ("", "red_add_v2_f32"),
    "add v4.f32 (red)": ("", "red_add_v4_f32"),
    "add u32, own shared memory": ("atom_add_shared_latency", "red_add_shared"),
    "add u32, peer CTA's shared memory": ("atom_add_cluster_latency", "red_add_cluster"),
}


def _cell(figs: pd.DataFrame, case: str, metric: str, contention: int | None = None) -> tuple[str, str]:
    """(value, status badge) of one figure (at `contention` where given), ('', '') where there is none."""
    rows = figs[(figs["case"] == case) & (figs["metric"] == metric) & (figs["kind"] != "derived")]
    if contention is not None:
        rows = rows[[evidence.param(p, "contention") == contention for p in rows["params"]]]
    if rows.empty:
        return "", ""
    row = rows.iloc[0]
    return markup.number(row["value"]), markup.badge(row["status"])


def _barriers(frames: dict[str, pd.DataFrame]) -> str:

    data = evidence.points(frames.get("raw"), list(BARRIERS), "latency", ["warps"])
    cases = (*BARRIERS, "bar_arrive", "syncwarp")
    figs = evidence.figures_of(frames, cases=cases)
    if data.empty and figs.empty:
        return markup.empty("no CTA barrier measurements") + evidence.not_measured(frames, list(cases))
    chart = ""
    if not data.empty:
        chart = charts.log2_lines(
            data.assign(barrier=data["case"].map(BARRIERS)),
            "warps",
            "warps per CTA",
            "cycles per barrier",
            "barrier",
            "Cycles per CTA barrier against warps per CTA (log 2), one line per barrier form (bar.sync 0 by every "
            "warp; named barriers of half the warps each).",
            "CTA barrier cost over warps per CTA",
        )
    note = markup.empty(
        "thread 0's clock64 slope over 256 and 512 back-to-back barriers, every thread of the CTA taking part; "
        "bar.sync compiles to BAR.SYNC.DEFER_BLOCKING on every arch here; __syncwarp() (bar.warp.sync -1) compiles to "
        "nothing, so its row is the difference of two IMAD chains"
    )
    return (
        chart
        + note
        + evidence.figure_table(figs, (*COLUMNS, "derivation"))
        + evidence.not_measured(frames, list(cases))
    )


def _grid_and_sleep(frames: dict[str, pd.DataFrame]) -> str:
    figs = evidence.figures_of(frames, cases=("grid_sync", "nanosleep"))
    if figs.empty:
        return markup.empty("no grid-barrier or nanosleep measurements") + evidence.not_measured(
            frames, ["grid_sync", "nanosleep"]
        )
    return evidence.figure_table(figs, (*COLUMNS, "derivation")) + evidence.not_measured(
        frames, ["grid_sync", "nanosleep"]
    )


def fence_rows(figs: pd.DataFrame) -> pd.DataFrame:
    """One row per scope: each semantics' cycles per fence and its status badge (empty where not measured)."""
    rows = []
    for scope in SCOPES:
        row: dict[str, str] = {"scope": scope}
        for sem in SEMANTICS:
            row[f"fence.{sem} (cycles)"], row[f"{sem} status"] = _cell(figs, f"fence_{sem}_{scope}", "latency")
        rows.append(row)
    return pd.DataFrame(rows)


def _fences(frames: dict[str, pd.DataFrame]) -> str:
    cases = [f"fence_{sem}_{scope}" for scope in SCOPES for sem in SEMANTICS]
    figs = evidence.figures_of(frames, cases=tuple(cases))
    stores = evidence.figures_of(frames, cases=FENCE_STORES)
    if figs.empty and stores.empty:
        return markup.empty("no fence measurements") + evidence.not_measured(frames, cases)
    note = markup.empty(
        "cycles per fence of one thread's back-to-back fences, nothing in flight; cta scope is MEMBAR.*.CTA alone, gpu "
        "and sys add ERRBAR + CCTL.IVALL (+ CGAERRBAR from sm_90), and the cluster scope compiles to the gpu scope's "
        "SASS; the second table is a fence after N stores to distinct lines, whose acks a gpu-scope fence waits for "
        "(they return in parallel, so the first store costs a round trip and each further one little)"
    )
    table = markup.table(fence_rows(figs), raw=tuple(f"{sem} status" for sem in SEMANTICS)) if len(figs) else ""
    derived = stores[stores["kind"] == "derived"]
    return (
        note
        + table
        + (evidence.figure_table(derived, (*COLUMNS, "derivation")) if len(derived) else "")
        + evidence.not_measured(frames, cases)
    )


def _ordering(frames: dict[str, pd.DataFrame]) -> str:
    figs = evidence.figures_of(frames, cases=ORDERING)
    if figs.empty:
        return markup.empty("no acquire / release measurements") + evidence.not_measured(frames, list(ORDERING))
    return evidence.figure_table(figs, (*COLUMNS, "method"))


def atomic_rows(figs: pd.DataFrame) -> pd.DataFrame:
    """One row per operation: its latency and its throughput at each contention, each with its status badge."""
    rows = []
    for op, (latency, rate) in ATOMICS.items():
        row: dict[str, str] = {"operation": op}
        row["latency (cycles)"], row["latency status"] = _cell(figs, latency, "latency") if latency else ("", "")
        for contention, label in CONTENTION.items():
            row[f"{label} (atom/cycle/SM)"], row[f"{label} status"] = _cell(figs, rate, "throughput", contention)
        rows.append(row)
    return pd.DataFrame(rows)


def _atomics(frames: dict[str, pd.DataFrame]) -> str:
    cases = [c for pair in ATOMICS.values() for c in pair if c]
    figs = evidence.figures_of(frames, cases=tuple(cases))
    if figs.empty:
        return markup.empty("no atomic measurements") + evidence.not_measured(frames, cases)
    note = markup.empty(
        "latency: one thread's dependent chain over 32 global words 4 KB apart (the mean over near and far L2 "
        "partitions) or one shared word; throughput: 4 CTAs of 256 threads per SM, 64 atomics per thread, with a word "
        "per thread, one word for all, or a word per warp"
    )
    statuses = ("latency status", *(f"{label} status" for label in CONTENTION.values()))
    ratios = figs[figs["kind"] == "derived"]
    return (
        note
        + markup.table(atomic_rows(figs), raw=statuses)
        + (evidence.figure_table(ratios, (*COLUMNS, "derivation")) if len(ratios) else "")
        + evidence.not_measured(frames, cases)
    )


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The sync category's charts and tables, each saying so when its measurements are missing."""
    return [
        ("CTA barriers against warps", _barriers(frames)),
        ("Grid-wide barrier and nanosleep", _grid_and_sleep(frames)),
        ("Fences by scope", _fences(frames)),
        ("Acquire and release against relaxed", _ordering(frames)),
        ("Atomics by operation and contention", _atomics(frames)),
    ]
