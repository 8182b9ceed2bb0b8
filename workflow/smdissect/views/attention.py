"""Report view of the attention category: per-tile cycles of every FlashAttention-2 variant, their split into
softmax (ALU/SFU) and tensor-core time against the paper's sm_120 figures, and whole-kernel TFLOPS beside
PyTorch's fused attention."""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from smdissect import report

VARIANTS = ["full", "no_softmax", "no_qk", "no_pv", "no_qk_no_pv", "double_softmax", "double_qk"]
PAPER = {"softmax": 63.1, "tensor core": 36.9}  # % of per-tile cycles on sm_120 (reference/seed_sm120.csv)
DTYPES = {0: "bf16", 1: "f16"}
POINT = ["head_dim", "ctas_per_sm"]


def decomposition(raw: pd.DataFrame | None) -> pd.DataFrame:
    """Per (head_dim, ctas_per_sm): cycles per tile of each variant and the shares derived from them (in %):
    softmax (full - no_softmax), tensor core (full - no_qk_no_pv; and the sum of the QK and PV stages'
    removals), the cost of a second softmax or QK stage; the share cases' own alternating measurements beside."""
    tiles = report.points(raw, [f"tile_{v}" for v in VARIANTS], "cycles_per_tile", POINT)
    if tiles.empty:
        return pd.DataFrame()
    tiles["variant"] = tiles["case"].str.removeprefix("tile_")
    table = tiles.pivot_table(index=POINT, columns="variant", values="value").reindex(columns=VARIANTS)
    full = table["full"]
    out = pd.DataFrame(index=table.index)
    for v in VARIANTS:
        out[f"{v} (cycle/tile)"] = table[v]
    out["softmax share (%)"] = 100 * (full - table["no_softmax"]) / full
    out["tensor share (%)"] = 100 * (full - table["no_qk_no_pv"]) / full
    out["QK + PV removed (%)"] = 100 * ((full - table["no_qk"]) + (full - table["no_pv"])) / full
    out["2nd softmax adds (%)"] = 100 * (table["double_softmax"] - full) / full
    out["2nd QK adds (%)"] = 100 * (table["double_qk"] - full) / full
    for case, column in (("softmax_share", "softmax share, alternating (%)"),
                         ("tensor_share", "tensor share, alternating (%)")):  # fmt: skip
        shares = report.points(raw, [case], case, POINT)
        out[column] = shares.set_index(POINT)["value"].reindex(out.index) if len(shares) else math.nan
    return out.reset_index()


def _split_chart(table: pd.DataFrame) -> str:
    """Stacked bars: softmax, tensor core and the rest of the per-tile cycles, per head dim and CTAs per SM,
    with the paper's sm_120 split as its own bar."""
    bars = []
    for r in table.to_dict("records"):
        label = f"d={int(r['head_dim'])}, {int(r['ctas_per_sm'])} CTA/SM"
        soft, tensor = r["softmax share (%)"], r["tensor share (%)"]
        bars += [(label, "softmax", soft), (label, "tensor core", tensor), (label, "other", 100 - soft - tensor)]
    bars += [("paper sm_120", part, share) for part, share in PAPER.items()]
    data = pd.DataFrame(bars, columns=["point", "part", "share"]).dropna()
    chart = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("point:N", title=None),
            y=alt.Y("share:Q", title="% of full per-tile cycles", stack="zero"),
            color=alt.Color("part:N", sort=["softmax", "tensor core", "other"]),
        )
        .properties(width=420, height=260)
    )
    return report.svg(chart)


def _decomposition_section(raw: pd.DataFrame | None) -> str:
    table = decomposition(raw)
    if table.empty:
        return report.empty("no per-tile attention measurements")
    note = report.empty(
        "shares from one wave of CTAs over 4096 keys (64 tiles): softmax = (full - no_softmax) / full, tensor core "
        "= (full - no_qk_no_pv) / full; they need not add to 100%: the K/V streaming, loop and what the two stages "
        f"overlap make the rest (negative where they overlap). Paper, sm_120: softmax {PAPER['softmax']}%, "
        f"tensor core {PAPER['tensor core']}%"
    )
    return _split_chart(table) + note + report.table(table)


def throughput(raw: pd.DataFrame | None) -> pd.DataFrame:
    """Whole-kernel TFLOPS of the flash kernel and of torch SDPA per shape, with their ratio."""
    keys = ["bh", "seqlen", "head_dim", "dtype"]
    data = report.points(raw, ["flash_tflops", "torch_sdpa"], "tflops", keys)
    if data.empty:
        return pd.DataFrame()
    table = data.pivot_table(index=keys, columns="case", values="value").reindex(columns=["flash_tflops", "torch_sdpa"])
    table = table.reset_index()
    table["dtype"] = table["dtype"].map(DTYPES)
    table["flash / torch"] = table["flash_tflops"] / table["torch_sdpa"]
    return table.rename(columns={"flash_tflops": "flash (TFLOPS)", "torch_sdpa": "torch SDPA (TFLOPS)"})


def _throughput_section(raw: pd.DataFrame | None) -> str:
    table = throughput(raw)
    if table.empty:
        return report.empty("no whole-kernel attention measurements")
    note = report.empty("4 bh seqlen^2 d FLOP per forward call (causal=False), CUDA events, median of the repeats")
    return note + report.table(table)


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The attention category's charts and tables, each saying so when its measurements are missing."""
    raw = frames.get("raw")
    return [
        ("FlashAttention-2 tile loop: softmax vs tensor core per tile", _decomposition_section(raw)),
        ("Whole-kernel TFLOPS: this kernel and PyTorch SDPA", _throughput_section(raw)),
    ]
