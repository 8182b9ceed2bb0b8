"""The roofline of a run: each compute ceiling (FLOP/s, OP/s for integer formats) and memory ceiling (bytes/s),
measured (the best figure of the run, with its id and status) beside documented (archs), as one small JSON file that
other tools read and the roofline page is drawn from."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..core import archs, files
from ..core.errors import SmdissectError

VERSION = 1
FORMAT = "smdissect-roofline"
SM_COUNT = ("memory", "device_attributes sm_count")  # the device attribute every per-SM rate is scaled by


@dataclass(frozen=True)
class Compute:
    """One compute ceiling: the figures that measure it (the best one counts), what one unit of them is worth in
    FLOP (OP) per SM per cycle, and where its documented rate comes from (an ARITHMETIC row or a tensor format)."""

    name: str
    label: str
    category: str
    cases: tuple[str, ...]
    metric: str  # the figures' name after the case: 'peak throughput' (warp instructions) or 'peak flops'
    per_unit: float  # FLOP (OP) per unit of the figure: lanes x operations per lane for an instruction
    row: str = ""  # archs.ARITHMETIC row of a CUDA-core pipe
    tensor: str = ""  # archs tensor format
    integer: bool = False


@dataclass(frozen=True)
class Memory:
    """One memory ceiling: the figure of its bandwidth (GB/s, or B/cycle/SM scaled by the SMs and its clock)."""

    name: str
    label: str
    category: str
    figure: str
    documented: str = ""  # 'smem': archs.SMEM_BYTES_PER_CYCLE per SM; 'dram': the datasheet's DRAM bandwidth


LANES = archs.WARP
COMPUTE: tuple[Compute, ...] = (
    Compute("fp64", "FP64 (DFMA)", "pipelines", ("dfma",), "peak throughput", 2 * LANES, row="fp64"),
    Compute("fp32", "FP32 (FFMA)", "pipelines", ("ffma",), "peak throughput", 2 * LANES, row="fp32"),
    Compute("fp16", "FP16x2 (HFMA2)", "pipelines", ("hfma2",), "peak throughput", 4 * LANES, row="fp16"),
    Compute("int32", "INT32 (IMAD)", "pipelines", ("imad",), "peak throughput", 2 * LANES, row="imad", integer=True),
    Compute(
        "tensor_f64",
        "FP64 tensor",
        "tensorcore",
        ("mma_f64_m16n8k4", "mma_f64_m16n8k8", "mma_f64_m16n8k16", "mma_f64_f64"),
        "peak flops",
        1,
        tensor="f64",
    ),
    Compute(
        "tensor_tf32",
        "TF32 tensor",
        "tensorcore",
        ("wgmma_tf32_f32_ss", "wgmma_tf32_f32_rs", "tcgen05_tf32_f32", "mma_tf32_f32"),
        "peak flops",
        1,
        tensor="tf32",
    ),
    Compute(
        "tensor_f16",
        "FP16 tensor",
        "tensorcore",
        ("wgmma_f16_f32_ss", "wgmma_f16_f32_rs", "tcgen05_f16_f32", "mma_f16_f32"),
        "peak flops",
        1,
        tensor="f16",
    ),
    Compute(
        "tensor_bf16",
        "BF16 tensor",
        "tensorcore",
        ("wgmma_bf16_f32_ss", "mma_bf16_f32"),
        "peak flops",
        1,
        tensor="bf16",
    ),
    Compute(
        "tensor_e4m3",
        "FP8 (e4m3) tensor",
        "tensorcore",
        ("wgmma_e4m3_f32_ss", "wgmma_e4m3_f32_rs", "tcgen05_e4m3_f32", "f8f6f4_e4m3", "mma_e4m3_f32"),
        "peak flops",
        1,
        tensor="e4m3",
    ),
    Compute(
        "tensor_s8",
        "INT8 tensor",
        "tensorcore",
        ("wgmma_s8_s32_ss", "wgmma_s8_s32_rs", "tcgen05_s8_s32", "mma_s8_s32"),
        "peak flops",
        1,
        tensor="s8",
        integer=True,
    ),
    Compute(
        "tensor_e2m1",
        "FP4 (e2m1) tensor, block-scaled",
        "tensorcore",
        ("mxf4nvf4_e2m1", "mxf4_e2m1", "tcgen05_mxf4nvf4_f32"),
        "peak flops",
        1,
        tensor="e2m1",
    ),
)
MEMORY: tuple[Memory, ...] = (
    Memory("shared", "shared memory", "memory", "smem_read bandwidth_per_sm", documented="smem"),
    Memory("l1", "L1", "memory", "l1_read bandwidth_per_sm", documented="smem"),
    Memory("l2", "L2", "memory", "l2_read peak bandwidth"),
    Memory("dram", "DRAM", "memory", "dram_read peak bandwidth", documented="dram"),
)


def _figure(figures: pd.DataFrame, category: str, names: list[str]) -> pd.Series | None:
    """The best (highest) figure of `names` in `category` that is not contradicted, None where none is."""
    hit = figures[
        (figures["category"] == category) & figures["figure"].isin(names) & (figures["status"] != "contradicted")
    ]
    return None if hit.empty else hit.loc[hit["value"].idxmax()]


def _source(f: pd.Series) -> dict[str, Any]:
    """Where a measured ceiling comes from: its figure's category, name, status and clock."""
    return {"category": f["category"], "figure": f["figure"], "status": f["status"], "value": float(f["value"])}


def _clock(f: pd.Series) -> float | None:
    """The SM clock a figure's launches ran at (MHz), None where it has none."""
    return None if pd.isna(f["clock_mhz"]) else float(f["clock_mhz"])


def _compute(spec: Compute, figures: pd.DataFrame, gpu: str, arch: str, sms: int | None) -> dict[str, Any]:
    """One compute ceiling, measured and documented (None where the run or the documents lack it)."""
    f = _figure(figures, spec.category, [f"{c} {spec.metric}" for c in spec.cases])
    measured = None
    if f is not None and sms and _clock(f):
        per_cycle = float(f["value"]) * spec.per_unit
        measured = {
            "per_second": per_cycle * sms * _clock(f) * 1e6,
            "per_cycle_per_sm": per_cycle,
            "clock_mhz": _clock(f),
        } | _source(f)
    documented = None
    model = archs.gpu_model(gpu)
    if spec.row:
        rate = archs.instruction_rate(arch, spec.row)
        mhz = model.boost_mhz if model and model.boost_mhz else None
        if rate and sms and mhz:
            per_cycle = rate * spec.per_unit
            documented = {
                "per_second": per_cycle * sms * mhz * 1e6,
                "per_cycle_per_sm": per_cycle,
                "clock_mhz": mhz,
                "source": f"{arch} {spec.row} row of the CUDA programming guide's throughput table at the "
                f"{mhz:g} MHz boost clock",
            }
    elif sms:
        peak = archs.device_peak(gpu, arch, sms, (_clock(f) if f is not None else None) or math.nan, spec.tensor)
        if peak is not None:
            documented = {
                "per_second": peak.per_second,
                "per_cycle_per_sm": peak.per_cycle_per_sm,
                "clock_mhz": peak.mhz,
                "source": peak.how,
            }
    unit = "OP/s" if spec.integer else "FLOP/s"
    return {"name": spec.name, "label": spec.label, "unit": unit, "measured": measured, "documented": documented}


def _memory(spec: Memory, figures: pd.DataFrame, gpu: str, sms: int | None) -> dict[str, Any]:
    """One memory ceiling in bytes/s, measured and documented (None where the run or the documents lack it)."""
    f = _figure(figures, spec.category, [spec.figure])
    measured = None
    if f is not None and f["unit"] == "GB/s":
        measured = {"per_second": float(f["value"]) * 1e9} | _source(f)
    elif f is not None and sms and _clock(f):
        measured = {
            "per_second": float(f["value"]) * sms * _clock(f) * 1e6,
            "per_cycle_per_sm": float(f["value"]),
            "clock_mhz": _clock(f),
        } | _source(f)
    documented = None
    model = archs.gpu_model(gpu)
    if spec.documented == "dram" and model and model.dram_gbs:
        documented = {"per_second": model.dram_gbs * 1e9, "source": f"datasheet: {model.source}"}
    if spec.documented == "smem" and sms and model and model.boost_mhz:
        rate = archs.SMEM_BYTES_PER_CYCLE
        documented = {
            "per_second": rate * sms * model.boost_mhz * 1e6,
            "per_cycle_per_sm": rate,
            "clock_mhz": model.boost_mhz,
            "source": f"32 banks x 4 B per cycle per SM at the {model.boost_mhz:g} MHz boost clock",
        }
    return {"name": spec.name, "label": spec.label, "unit": "B/s", "measured": measured, "documented": documented}


def build(figures: pd.DataFrame) -> dict[str, Any]:
    """The roofline of a run's figures: every ceiling the run measures or the documents give (a format neither has
    is left out)."""
    first = figures.iloc[0] if len(figures) else pd.Series({k: "" for k in ("gpu", "arch", "driver", "cuda")})
    gpu, arch = str(first["gpu"]), str(first["arch"])
    count = _figure(figures, SM_COUNT[0], [SM_COUNT[1]])
    sms = int(count["value"]) if count is not None else None
    compute = [_compute(s, figures, gpu, arch, sms) for s in COMPUTE]
    memory = [_memory(s, figures, gpu, sms) for s in MEMORY]
    return {
        "format": FORMAT,
        "version": VERSION,
        "gpu": gpu,
        "arch": arch,
        "sms": sms,
        "driver": str(first["driver"]),
        "toolkit": str(first["cuda"]),
        "compute": [c for c in compute if c["measured"] or c["documented"]],
        "memory": [m for m in memory if m["measured"] or m["documented"]],
    }


def ridge(compute: dict[str, Any] | None, memory: dict[str, Any] | None) -> float | None:
    """Where a compute ceiling meets a memory ceiling: the arithmetic intensity (FLOP per byte) above which the
    compute one binds; None where either is missing."""
    return compute["per_second"] / memory["per_second"] if compute and memory else None


def write(data: dict[str, Any], out: Path) -> None:
    """Write the roofline JSON (atomically)."""
    files.write_text(out, json.dumps(data, indent=1) + "\n")


def read(path: Path) -> dict[str, Any]:
    """A roofline file, checked to be one of this version."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise SmdissectError(
            f"{path} is not a readable roofline file ({err}): write it with smdissect roofline"
        ) from err
    if data.get("format") != FORMAT or data.get("version") != VERSION:
        raise SmdissectError(f"{path} is not a {FORMAT} file of version {VERSION}: write it with smdissect roofline")
    return data


def check(data: dict[str, Any], figures: pd.DataFrame) -> list[str]:
    """Where a roofline file's measured ceilings differ from the figures they name (value, status) or from what
    those figures give (build): one line each, none for a file that matches its run."""
    again = build(figures)
    rebuilt = {e["name"]: e["measured"] for e in again["compute"] + again["memory"]}
    wrong = []
    for entry in data["compute"] + data["memory"]:
        m = entry["measured"]
        if not m:
            continue
        hit = figures[(figures["category"] == m["category"]) & (figures["figure"] == m["figure"])]
        if hit.empty:
            wrong.append(f"{entry['name']}: {m['category']}: {m['figure']} is not a figure of the run")
            continue
        f, expected = hit.iloc[0], rebuilt.get(entry["name"]) or {}
        if not math.isclose(m["value"], float(f["value"]), rel_tol=1e-12) or m["status"] != f["status"]:
            wrong.append(
                f"{entry['name']}: {m['value']} ({m['status']}) but the figure is {f['value']} ({f['status']})"
            )
        for key in ("per_second", "per_cycle_per_sm", "clock_mhz"):
            if key in m and not math.isclose(m[key], expected.get(key, math.nan), rel_tol=1e-9):
                wrong.append(f"{entry['name']}: {key} {m[key]} but its figure gives {expected.get(key)}")
    return wrong
