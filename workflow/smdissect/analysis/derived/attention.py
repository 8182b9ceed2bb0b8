"""Derived figures of the attention category: per (head_dim, ctas_per_sm) point the split of the FlashAttention-2
tile loop's cycles into softmax and tensor-core time from its variants (and what a second softmax or QK stage
adds), and per shape this kernel's TFLOPS over PyTorch SDPA's."""

from __future__ import annotations

import pandas as pd

from ...core.catalog import Case
from ..figure_model import Figure
from .samples import at, keep, make, params_of, samples

CATEGORY = "attention"
METRICS = frozenset(
    {"over_torch_sdpa", "qk_pv_removed", "second_qk_adds", "second_softmax_adds", "softmax_share", "tensor_share"}
)  # every metric a figure of this deriver can have

METRIC = "cycles_per_tile"
# name -> (title, variants (after tile_) whose per-tile cycles it stands on, fn of their medians in that order, how)
SPLITS = {
    "softmax_share": (
        "softmax share",
        ("full", "no_softmax"),
        lambda f, s: 100 * (f - s) / f,
        "(full - no_softmax) / full",
    ),
    "tensor_share": (
        "tensor-core share",
        ("full", "no_qk_no_pv"),
        lambda f, n: 100 * (f - n) / f,
        "(full - no_qk_no_pv) / full",
    ),
    "qk_pv_removed": (
        "QK + PV removed",
        ("full", "no_qk", "no_pv"),
        lambda f, q, p: 100 * ((f - q) + (f - p)) / f,
        "((full - no_qk) + (full - no_pv)) / full",
    ),
    "second_softmax_adds": (
        "second softmax adds",
        ("full", "double_softmax"),
        lambda f, d: 100 * (d - f) / f,
        "(double_softmax - full) / full",
    ),
    "second_qk_adds": (
        "second QK adds",
        ("full", "double_qk"),
        lambda f, d: 100 * (d - f) / f,
        "(double_qk - full) / full",
    ),
}


def _splits(raw: pd.DataFrame, params: str) -> list[Figure | None]:
    out = []
    for metric, (title, variants, fn, how) in SPLITS.items():
        parts = [samples(raw, f"tile_{v}", METRIC, params) for v in variants]
        out.append(
            make(
                "tile_full",
                metric,
                "%",
                f"tile_full {title}{at(params)}",
                fn,
                parts,
                f"{how} per-tile cycles (medians of one wave of CTAs each, 64 tiles of 64 keys)",
                [params],
            )
        )
    return out


def _over_torch(raw: pd.DataFrame, params: str) -> Figure | None:
    return make(
        "flash_tflops",
        "over_torch_sdpa",
        "x",
        f"flash_tflops over torch_sdpa{at(params)}",
        lambda a, b: a / b,
        [samples(raw, "flash_tflops", "tflops", params), samples(raw, "torch_sdpa", "tflops", params)],
        "this kernel's TFLOPS / torch SDPA's at the same shape (medians; 4 bh seqlen^2 d FLOP each)",
        [params],
    )


def figures(frames: dict[str, pd.DataFrame], generic: list[Figure], cases: dict[str, Case]) -> list[Figure]:
    """Every derived figure of the attention category's run."""
    raw = frames.get("raw")
    if raw is None or raw.empty:
        return []
    found = [f for p in params_of(raw, "tile_full", METRIC) for f in _splits(raw, p)]
    found += [_over_torch(raw, p) for p in params_of(raw, "flash_tflops", "tflops")]
    return keep(found)
