"""Report view of the gemm category: CUTLASS and cuBLAS TFLOPS per shape against the datasheet peak, and the ncu
stall-reason and pipe breakdown of the profiled shape's launches."""

from __future__ import annotations

import pandas as pd

from smdissect.core import archs, stats
from smdissect.pages import charts, evidence, markup

CATEGORY = "gemm"

LIBRARIES = {"cutlass": "CUTLASS", "cublas": "cuBLAS"}
TOP_STALLS = 6  # stall reasons shown per launch, largest first
TOP_PIPES = 8  # pipes shown per launch, busiest first
CASES = ("gemm_bf16", "gemm_nvfp4")
# The figures of the throughput table, in the order each shape shows them.
METRICS = (
    "tflops_cutlass",
    "tflops_cublas",
    "tflops",
    "pct_of_peak_cutlass",
    "pct_of_peak_cublas",
    "pct_of_peak_at_clock_cutlass",
    "pct_of_peak_at_clock_cublas",
    "ratio_to_cublas",
    "cutlass_over_cublas",
    "max_rel_err",
)


def _shape(params: object) -> str:
    """'8192x8192x4096' (M x N x K) from a point's params (M = N = mn)."""
    mn, k = evidence.param(params, "mn"), evidence.param(params, "k")
    return f"{mn}x{mn}x{k}"


def throughput(figures: pd.DataFrame) -> pd.DataFrame:
    """The GEMM figures (TFLOPS peaks, % of the datasheet peak and of the peak at the launch's clock per shape,
    CUTLASS against cuBLAS, the output's error), case by case, shape by shape (by FLOP), metric by metric."""
    rows = figures[figures["case"].isin(CASES) & figures["metric"].isin(METRICS)].copy()
    if rows.empty:
        return rows
    flop = rows["params"].map(lambda p: 2.0 * (evidence.param(p, "mn") or 0) ** 2 * (evidence.param(p, "k") or 0))
    rows["_flop"], rows["_metric"] = flop, rows["metric"].map(METRICS.index)
    rows["_whole"] = rows["kind"].isin(("peak", "point")) | (rows["params"] == "")
    return rows.sort_values(
        ["case", "_whole", "_flop", "_metric"], ascending=[True, False, True, True], kind="stable"
    ).drop(columns=["_flop", "_metric", "_whole"])


def _chart(raw: pd.DataFrame) -> str:
    """TFLOPS per shape and library, from the raw samples (median of each point)."""
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    rows = raw[raw["case"].isin(CASES) & raw["metric"].isin(("tflops_cutlass", "tflops_cublas", "tflops"))]
    data = stats.summary(rows, ["case", "params", "metric"])
    data["shape"] = data["params"].map(_shape)
    data["library"] = data["metric"].map(lambda m: LIBRARIES["cublas" if m.endswith("cublas") else "cutlass"])
    chart = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("shape:N", title="M x N x K", sort=None),
            xOffset=alt.XOffset("library:N"),
            y=alt.Y("value:Q", title="TFLOPS"),
            color=alt.Color("library:N"),
            column=alt.Column("case:N", title=None),
        )
        .properties(width=320, height=260)
    )
    described = (
        f"TFLOPS of CUTLASS and cuBLAS side by side per shape (M x N x K), one panel per case "
        f"({', '.join(sorted(data['case'].unique()))}); median of each point's launches."
    )
    return charts.svg(chart, described, "GEMM TFLOPS per shape: CUTLASS and cuBLAS")


def _throughput(frames: dict[str, pd.DataFrame]) -> str:
    raw = frames.get("raw")
    if raw is None or raw.empty or not raw["case"].isin(CASES).any():
        return markup.empty("no GEMM measurements")
    table = throughput(evidence.figures_of(frames, cases=CASES))
    gpu = str(raw["gpu"].iloc[0]) if "gpu" in raw.columns else ""
    model = archs.gpu_model(gpu)
    peak = (
        f"datasheet peak of the {model.name}: {model.tensor_tflops['bf16']:g} TFLOPS dense bf16 (its tensor figures "
        f"assume {model.tensor_mhz:g} MHz)"
        if model and "bf16" in model.tensor_tflops and model.tensor_mhz
        else f"no datasheet bf16 peak recorded for {gpu}"
    )
    note = markup.empty(
        f"TFLOPS = 2 M N K over the median launch time (CUDA events); {peak}; pct_of_peak_at_clock divides by the "
        "peak at the SM clock each launch ran at (the power cap lowers it at the large shapes). ratio_to_cublas: "
        "cuBLAS time / CUTLASS time per launch pair, above 1: CUTLASS is faster. max_rel_err: max |D_CUTLASS - D_ref| "
        "/ max |D_ref| (ref: cuBLAS for bf16, an exact device GEMM for NVFP4)"
    )
    return _chart(raw) + note + evidence.figure_table(table)


def _profiled(frame: pd.DataFrame | None) -> pd.DataFrame:
    """The gemm rows of an ncu-derived table, with shape and library columns."""
    if frame is None or frame.empty:
        return pd.DataFrame()
    rows = frame[frame["case"].isin(["gemm_bf16", "gemm_nvfp4"])].copy()
    rows["shape"] = rows["params"].map(_shape)
    rows["library"] = rows["variant"].map(lambda v: LIBRARIES.get(v, v))
    return rows


def stall_breakdown(stalls: pd.DataFrame) -> pd.DataFrame:
    """The TOP_STALLS largest stall reasons per profiled launch (warp cycles per issued instruction, share)."""
    rows = _profiled(stalls)
    if rows.empty:
        return rows
    keys = ["arch", "case", "shape", "library", "kernel"]
    rows = rows.sort_values([*keys, "value"], ascending=[True] * len(keys) + [False])
    return rows.groupby(keys, as_index=False).head(TOP_STALLS)[[*keys, "reason", "value", "share"]]


def pipe_breakdown(pipes: pd.DataFrame) -> pd.DataFrame:
    """The TOP_PIPES busiest pipes (percent of peak issue rate) per profiled launch, with instruction counts."""
    rows = _profiled(pipes)
    if rows.empty:
        return rows
    keys = ["arch", "case", "shape", "library", "kernel"]
    rows = rows.sort_values([*keys, "pct_of_peak"], ascending=[True] * len(keys) + [False], na_position="last")
    return rows.groupby(keys, as_index=False).head(TOP_PIPES)[[*keys, "pipe", "inst_executed", "pct_of_peak"]]


def _stalls_and_pipes(stalls: pd.DataFrame | None, pipes: pd.DataFrame | None) -> str:
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    found = stall_breakdown(stalls) if stalls is not None else pd.DataFrame()
    busy = pipe_breakdown(pipes) if pipes is not None else pd.DataFrame()
    if found.empty and busy.empty:
        return markup.empty("no ncu measurements of the GEMM launches (profile stage not run or skipped)")
    out = ""
    if not found.empty:
        chart = (
            alt.Chart(found)
            .mark_bar()
            .encode(
                y=alt.Y("reason:N", sort="-x", title=None),
                x=alt.X("share:Q", title="share of stall cycles", axis=alt.Axis(format="%")),
                color=alt.Color("library:N"),
                yOffset=alt.YOffset("library:N"),
                row=alt.Row("shape:N", title=None),
            )
            .properties(width=420)
        )
        described = (
            f"Share of stall cycles of the {TOP_STALLS} largest stall reasons per profiled launch, largest first, "
            "CUTLASS and cuBLAS side by side, one row of panels per shape."
        )
        out += charts.svg(chart, described, "Stall reasons of the profiled GEMM launches") + markup.table(
            found.rename(columns={"value": "warp cycles per issued inst", "share": "share"})
        )
    else:
        out += markup.empty("no stall-reason measurements")
    if not busy.empty:
        out += markup.table(busy.rename(columns={"pct_of_peak": "% of peak issue rate"}))
    else:
        out += markup.empty("no pipe measurements")
    return out


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The gemm category's TFLOPS table and chart, and the profiled launches' stall and pipe breakdown."""
    return [
        ("GEMM throughput: CUTLASS vs cuBLAS", _throughput(frames)),
        (
            "Profiled GEMM launches: stall reasons and pipes (ncu)",
            _stalls_and_pipes(frames.get("stalls"), frames.get("pipes")),
        ),
    ]
