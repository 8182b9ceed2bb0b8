"""Report view of the gemm category: CUTLASS and cuBLAS TFLOPS per shape against the datasheet peak, and the ncu
stall-reason and pipe breakdown of the profiled shape's launches."""

from __future__ import annotations

import altair as alt
import pandas as pd

from smdissect import report

# Dense bf16 tensor FLOP per cycle per SM and SM count, by GPU name: 989.4 TFLOPS (H200 SXM datasheet, dense)
# = 132 SMs x 4096 FLOP/cycle x 1830 MHz, so the peak at the clock a launch ran at is 132 x 4096 x that clock.
TENSOR_BF16 = {"H200": (132, 4096.0), "H100": (132, 4096.0)}
LIBRARIES = {"cutlass": "CUTLASS", "cublas": "cuBLAS"}
TOP_STALLS = 6  # stall reasons shown per launch, largest first
TOP_PIPES = 8  # pipes shown per launch, busiest first


def _shape(params: object) -> str:
    """'8192x8192x4096' (M x N x K) from a point's params (M = N = mn)."""
    mn, k = report.param(params, "mn"), report.param(params, "k")
    return f"{mn}x{mn}x{k}"


def throughput(raw: pd.DataFrame) -> pd.DataFrame:
    """One row per (arch, case, shape, library): median TFLOPS, % of the datasheet peak, the SM clock, and, for
    CUTLASS, the ratio of cuBLAS's time to CUTLASS's and the output's max relative error."""
    med = raw.groupby(["gpu", "arch", "case", "params", "metric"], as_index=False).agg(
        value=("value", "median"), clock_mhz=("clock_mhz", "median")
    )
    rows = []
    for (gpu, arch, case, params), g in med.groupby(["gpu", "arch", "case", "params"]):
        values = dict(zip(g["metric"], g["value"], strict=True))
        clocks = dict(zip(g["metric"], g["clock_mhz"], strict=True))
        for lib, name in LIBRARIES.items():
            metric = f"tflops_{lib}" if case == "gemm_bf16" else ("tflops" if lib == "cutlass" else None)
            if metric not in values:
                continue
            mn, k = report.param(params, "mn"), report.param(params, "k")
            rows.append({"arch": arch, "case": case, "shape": _shape(params), "flop": 2.0 * mn * mn * k,
                         "library": name, "TFLOPS": values[metric],
                         "% of datasheet peak": values.get(f"pct_of_peak_{lib}"),
                         "% of peak at its clock": _pct_at_clock(gpu, values[metric], clocks[metric]),
                         "SM clock (MHz)": clocks[metric],
                         "cuBLAS time / CUTLASS time": values.get("ratio_to_cublas") if lib == "cutlass" else None,
                         "max rel err": values.get("max_rel_err") if lib == "cutlass" else None})  # fmt: skip
    out = pd.DataFrame(rows)
    return out.sort_values(["arch", "case", "flop", "library"]).drop(columns="flop").reset_index(drop=True)


def _pct_at_clock(gpu: str, tflops: float, mhz: float) -> float | None:
    """TFLOPS as a percentage of the dense bf16 peak at the SM clock the launch ran at (known GPUs only)."""
    spec = next((v for name, v in TENSOR_BF16.items() if name in str(gpu)), None)
    if spec is None or not mhz or pd.isna(mhz):
        return None
    sms, per_cycle = spec
    return 100 * tflops * 1e12 / (sms * per_cycle * mhz * 1e6)


def _throughput(raw: pd.DataFrame | None) -> str:
    if raw is None or raw.empty or not raw["case"].isin(["gemm_bf16", "gemm_nvfp4"]).any():
        return report.empty("no GEMM measurements")
    table = throughput(raw[raw["case"].isin(["gemm_bf16", "gemm_nvfp4"])])
    chart = (
        alt.Chart(table)
        .mark_bar()
        .encode(
            x=alt.X("shape:N", title="M x N x K", sort=None),
            xOffset=alt.XOffset("library:N"),
            y=alt.Y("TFLOPS:Q"),
            color=alt.Color("library:N"),
            column=alt.Column("case:N", title=None),
        )
        .properties(width=320, height=260)
    )
    note = report.empty(
        "TFLOPS = 2 M N K over the median launch time (CUDA events); datasheet peak of the H200: 989.4 TFLOPS dense "
        "bf16 (its tensor figures assume 1830 MHz); the clock column is the SM clock read right after each launch. "
        "cuBLAS time / CUTLASS time above 1: CUTLASS is faster. max rel err: max |D_CUTLASS - D_ref| / max |D_ref| "
        "(ref: cuBLAS for bf16, an exact device GEMM for NVFP4)"
    )
    return report.svg(chart) + note + report.table(table)


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
    found = stall_breakdown(stalls) if stalls is not None else pd.DataFrame()
    busy = pipe_breakdown(pipes) if pipes is not None else pd.DataFrame()
    if found.empty and busy.empty:
        return report.empty("no ncu measurements of the GEMM launches (profile stage not run or skipped)")
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
        out += report.svg(chart) + report.table(
            found.rename(columns={"value": "warp cycles per issued inst", "share": "share"})
        )
    else:
        out += report.empty("no stall-reason measurements")
    if not busy.empty:
        out += report.table(busy.rename(columns={"pct_of_peak": "% of peak issue rate"}))
    else:
        out += report.empty("no pipe measurements")
    return out


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The gemm category's TFLOPS table and chart, and the profiled launches' stall and pipe breakdown."""
    return [
        ("GEMM throughput: CUTLASS vs cuBLAS", _throughput(frames.get("raw"))),
        (
            "Profiled GEMM launches: stall reasons and pipes (ncu)",
            _stalls_and_pipes(frames.get("stalls"), frames.get("pipes")),
        ),
    ]
