"""Derived figures of the gemm category: each library's TFLOPS per shape as a share of the tensor peak at the SM
clock that launch ran at (the power cap lowers it at the large shapes), and CUTLASS's peak over cuBLAS's."""

from __future__ import annotations

import pandas as pd

from ...core import archs
from ...core.catalog import Case
from ..figure_model import Figure
from .samples import at, column, from_values, keep, make, params_of, point_of, run_of, samples

CATEGORY = "gemm"
METRICS = frozenset(
    {"cutlass_over_cublas", "pct_of_peak_at_clock_cublas", "pct_of_peak_at_clock_cutlass"}
)  # every metric a figure of this deriver can have

FORMATS = {"gemm_bf16": "bf16", "gemm_nvfp4": "e2m1"}  # the tensor format each GEMM case runs
# metric of each library's TFLOPS per case (gemm_nvfp4 has CUTLASS only)
LIBRARIES = {"gemm_bf16": {"cutlass": "tflops_cutlass", "cublas": "tflops_cublas"}, "gemm_nvfp4": {"cutlass": "tflops"}}


def peak_at_clock(arch: str, gpu: str, case: str) -> tuple[float, int, str] | None:
    """(dense FLOP/cycle/SM of the case's format, the product's SMs, where they come from), None for a GPU whose SM
    count or format rate no datasheet gives."""
    model = archs.gpu_model(gpu)
    per_cycle = archs.tensor_peak(arch, FORMATS.get(case, "bf16"), gpu=gpu) if model else None
    if model is None or not model.sms or per_cycle is None:
        return None
    return per_cycle, model.sms, model.name


def _at_clock(raw: pd.DataFrame, case: str, lib: str, metric: str, arch: str, gpu: str) -> list[Figure | None]:
    found = peak_at_clock(arch, gpu, case)
    if found is None:
        return []
    per_cycle, sms, name = found
    out = []
    for params in params_of(raw, case, metric):
        tflops, mhz = samples(raw, case, metric, params), column(raw, case, metric, params, "clock_mhz")
        pct = 100 * tflops * 1e12 / (sms * per_cycle * mhz * 1e6)
        out.append(
            from_values(
                case,
                f"pct_of_peak_at_clock_{lib}",
                "%",
                f"{case} pct_of_peak_at_clock_{lib}{at(params)}",
                pct,
                f"per sample: 100 x TFLOPS / ({sms} SMs x {per_cycle:g} FLOP/cycle/SM ({FORMATS[case]}, "
                f"{name}) x the SM clock read after that launch, {pd.Series(mhz).median():.0f} MHz "
                f"median)",
                [params],
            )
        )
    return out


def _ratio(raw: pd.DataFrame, generic: list[Figure]) -> Figure | None:
    ours, theirs = point_of(generic, "gemm_bf16", "tflops_cutlass"), point_of(generic, "gemm_bf16", "tflops_cublas")
    if ours is None or theirs is None:
        return None
    return make(
        "gemm_bf16",
        "cutlass_over_cublas",
        "x",
        "gemm_bf16 CUTLASS over cuBLAS at their peaks",
        lambda a, b: a / b,
        [samples(raw, "gemm_bf16", "tflops_cutlass", ours), samples(raw, "gemm_bf16", "tflops_cublas", theirs)],
        f"peak CUTLASS TFLOPS{at(ours)} / peak cuBLAS TFLOPS{at(theirs)} (medians; ratio_to_cublas is the "
        "per-launch-pair ratio at each shape)",
        [ours, theirs],
        params=ours if ours == theirs else "",
    )


def figures(frames: dict[str, pd.DataFrame], generic: list[Figure], cases: dict[str, Case]) -> list[Figure]:
    """Every derived figure of the gemm category's run."""
    raw = frames.get("raw")
    if raw is None or raw.empty:
        return []
    arch, gpu = run_of(raw)
    found = [
        f
        for case, libs in LIBRARIES.items()
        for lib, metric in libs.items()
        for f in _at_clock(raw, case, lib, metric, arch, gpu)
    ]
    return keep([*found, _ratio(raw, generic)])
