"""Report view of the attention category: per-tile cycles of every FlashAttention-2 variant, their split into
softmax (ALU/SFU) and tensor-core time against the paper's sm_120 figures, and whole-kernel TFLOPS beside
PyTorch's fused attention."""

from __future__ import annotations

import pandas as pd

from smdissect.pages import charts, evidence, markup

CATEGORY = "attention"

VARIANTS = ["full", "no_softmax", "no_qk", "no_pv", "no_qk_no_pv", "double_softmax", "double_qk"]
PAPER = {"softmax": "flashattn_softmax_share_sm120", "tensor core": "flashattn_tc_share_sm120"}  # reference ids
POINT = ["head_dim", "ctas_per_sm"]
SPLITS = ("softmax_share", "tensor_share", "qk_pv_removed", "second_softmax_adds", "second_qk_adds")
ALTERNATING = ("softmax_share", "tensor_share")  # cases measuring a share with the two variants launched alternately


def _order(rows: pd.DataFrame, metrics: tuple[str, ...]) -> pd.DataFrame:
    """Figures sorted by their point (POINT's axes), then by metric in `metrics` order."""
    out = rows.copy()
    for key in POINT:
        out[f"_{key}"] = pd.to_numeric(out["params"].map(lambda p, k=key: evidence.param(p, k)), errors="coerce")
    out["_metric"] = out["metric"].map(lambda m: metrics.index(m) if m in metrics else len(metrics))
    keys = [f"_{k}" for k in POINT]
    return out.sort_values([*keys, "_metric", "case"], kind="stable").drop(columns=[*keys, "_metric"])


def decomposition(figures: pd.DataFrame) -> pd.DataFrame:
    """Per (head_dim, ctas_per_sm) point: the split of the full tile loop's per-tile cycles derived from its
    variants (softmax, tensor core, the QK and PV stages' removals, what a second softmax or QK stage adds) beside
    the share cases' own alternating measurements, and every variant's cycles per tile."""
    derived = figures[(figures["case"] == "tile_full") & figures["metric"].isin(SPLITS)]
    alternating = figures[figures["case"].isin(ALTERNATING) & figures["metric"].isin(ALTERNATING)]
    return _order(pd.concat([derived, alternating]), SPLITS)


def tiles(figures: pd.DataFrame) -> pd.DataFrame:
    """Cycles per tile of every variant at every point."""
    rows = figures[figures["case"].isin([f"tile_{v}" for v in VARIANTS]) & (figures["metric"] == "cycles_per_tile")]
    return _order(rows, ("cycles_per_tile",))


def paper_split(frames: dict[str, pd.DataFrame]) -> dict[str, float]:
    """The paper's sm_120 per-tile split (% of cycles per part), from the reference table the page was given."""
    ref = frames.get("reference")
    values = ref.set_index("id")["value"] if ref is not None and len(ref) else pd.Series(dtype=float)
    return {part: float(values[i]) for part, i in PAPER.items() if i in values.index}


def _split_chart(table: pd.DataFrame, paper: dict[str, float]) -> str:
    """Stacked bars: softmax, tensor core and the rest of the per-tile cycles, per head dim and CTAs per SM (the
    derived figures), with the paper's sm_120 split as its own bar."""
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    bars = []
    mine = table[table["case"] == "tile_full"]
    for params, g in mine.groupby("params", sort=False):
        values = dict(zip(g["metric"], g["value"], strict=True))
        if "softmax_share" not in values or "tensor_share" not in values:
            continue
        label = f"d={evidence.param(params, 'head_dim')}, {evidence.param(params, 'ctas_per_sm')} CTA/SM"
        soft, tensor = values["softmax_share"], values["tensor_share"]
        bars += [(label, "softmax", soft), (label, "tensor core", tensor), (label, "other", 100 - soft - tensor)]
    bars += [("paper sm_120", part, share) for part, share in paper.items()]
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
    described = (
        "Stacked share of the full per-tile cycles spent in softmax, in the tensor cores and elsewhere, per head "
        "dimension and CTAs per SM, beside the paper's sm_120 split (another GPU)."
    )
    return charts.svg(chart, described, "FlashAttention-2 tile: where the cycles go")


def _decomposition_section(frames: dict[str, pd.DataFrame]) -> str:
    figures = evidence.figures_of(frames)
    table = decomposition(figures)
    if table.empty:
        return markup.empty("no per-tile attention measurements")
    paper = paper_split(frames)
    note = markup.empty(
        "shares from one wave of CTAs over 4096 keys (64 tiles): softmax = (full - no_softmax) / full, tensor core "
        "= (full - no_qk_no_pv) / full; they need not add to 100%: the K/V streaming, loop and what the two stages "
        "overlap make the rest (negative where they overlap). softmax_share and tensor_share measure the same two "
        "shares with the two variants launched alternately. Paper, sm_120 (another GPU): "
        + ", ".join(f"{part} {share:g}%" for part, share in paper.items())
    )
    cycles = tiles(figures)
    return (
        _split_chart(table, paper)
        + note
        + evidence.figure_table(table)
        + "<h3>Cycles per tile of every variant</h3>"
        + evidence.figure_table(cycles)
    )


def throughput(figures: pd.DataFrame) -> pd.DataFrame:
    """Whole-kernel TFLOPS of the flash kernel and of torch SDPA per shape, with their ratio (figures)."""
    rows = figures[
        (figures["case"].isin(["flash_tflops", "torch_sdpa"]) & (figures["metric"] == "tflops"))
        | (figures["metric"] == "over_torch_sdpa")
    ].copy()
    if rows.empty:
        return rows
    for key in ("dtype", "head_dim", "seqlen"):
        rows[f"_{key}"] = pd.to_numeric(rows["params"].map(lambda p, k=key: evidence.param(p, k)), errors="coerce")
    rows["_m"] = rows["metric"].map({"tflops": 0, "over_torch_sdpa": 1})
    keys = ["_dtype", "_head_dim", "_seqlen", "_m", "case"]
    return rows.sort_values(keys, kind="stable").drop(columns=keys[:-1])


def _throughput_section(frames: dict[str, pd.DataFrame]) -> str:
    table = throughput(evidence.figures_of(frames))
    if table.empty:
        return markup.empty("no whole-kernel attention measurements")
    note = markup.empty(
        "4 bh seqlen^2 d FLOP per forward call (causal=False), CUDA events, median of the repeats; dtype 0 bf16, 1 f16"
    )
    return note + evidence.figure_table(table)


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The attention category's charts and tables, each saying so when its measurements are missing."""
    return [
        ("FlashAttention-2 tile loop: softmax vs tensor core per tile", _decomposition_section(frames)),
        ("Whole-kernel TFLOPS: this kernel and PyTorch SDPA", _throughput_section(frames)),
    ]
