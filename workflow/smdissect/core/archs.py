"""Per-arch and per-GPU-model hardware facts, each with its published source: issue and pipe rates, tensor-core
peaks, datasheet DRAM bandwidth, SM counts and clocks (the arch features a case may require: features.py)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

# ---------------------------------------------------------------------------------------------------------------------
# Sources, cited by tag below. Where a document was read through a public restatement (the corpus holds no copy of
# the original), the restatement's own citation is the one given here.
# [CPG]      CUDA C++ Programming Guide 12.8.1, 5.4.1 Arithmetic Instructions, Table 4 "Throughput of Native
#            Arithmetic Instructions (Number of Results per Clock Cycle per Multiprocessor)", columns 8.0, 8.9, 9.0;
#            column 8.6 as in the 12.6 (and 11.5.1) editions of the same table.
# [BPG]      CUDA C++ Best Practices Guide 13.4, 12.1.1 "Throughput of Native Arithmetic Instructions" (the table moved
#            there in CUDA 13), columns 10.0 and "12.0 / 12.1".
# [A100-WP]  NVIDIA A100 Tensor Core GPU Architecture (2020), Table 4; [A100-DS] A100 80GB datasheet (2022-05).
# [H100-WP]  NVIDIA H100 Tensor Core GPU Architecture v1.04, Table 3 (pp. 39-40): tensor FP8/FP16/BF16/TF32 figures
#            at 1830 MHz (SXM5) / 1620 MHz (PCIe); FP64 tensor and CUDA-core figures at 1980 / 1755 MHz.
# [H100-DS]  H100 datasheet (Sep 2024); [H100-PB] H100 PCIe product brief PB-11133-001_v02; H100 NVL brief v01.
# [H200-DS]  NVIDIA H200 datasheet 3512650 (Nov 2024); H200 NVL product brief PB-12128-001_v01.
# [ADA-WP]   NVIDIA Ada GPU Architecture whitepaper v2.02: RTX 4090 table (FP16/FP8 with FP16 and FP32 accumulate
#            listed apart) and the L4 table. The RTX 4090 figures were read as restated by spec databases.
# [L40S]     NVIDIA L40S product page and product brief PB-11470-001_v02 (peaks at the 2520 MHz boost clock).
# [RTXBW-WP] NVIDIA RTX Blackwell GPU Architecture whitepaper: Table 3 (RTX 5090: 170 SMs, 2407 MHz), Table 6
#            (RTX 5070); per-SM rates as derived from them (FP32-accumulate half rate on GeForce).
# [BW-TB]    NVIDIA Blackwell Architecture Technical Brief, HGX B200 column (1000 W). No SM count or clock published.
# [PRO5000]  NVIDIA RTX PRO 5000 Blackwell product page (14080 CUDA cores, 1344 GB/s, 2064 AI TOPS); no clock.
# [SPARK]    NVIDIA DGX Spark / GB10 product page and Hot Chips 2025 talk (6144 CUDA cores, 1 PFLOP FP4 sparse,
#            128 GB LPDDR5X at 273 GB/s); no clock published.
# ---------------------------------------------------------------------------------------------------------------------

WARP = 32  # threads per warp: the guide's results per clock / 32 = warp instructions per clock
# Warp schedulers (SM sub-partitions, one per processing block) per SM on every arch from sm_70 on ([A100-WP] Figure 7,
# [H100-WP] Figure 7, [ADA-WP] Figure 5, [RTXBW-WP] p.10: four partitions, each with one scheduler and dispatch unit).
SCHEDULERS = 4
ISSUE_RATE = 4.0  # warp instructions per cycle per SM: each of the SCHEDULERS dispatches one instruction per cycle
# Shared memory: 32 banks of 32 bits, each serving one access per cycle (programming guide, "Shared Memory" of
# compute capabilities 5.x on): 128 bytes per cycle per SM; the L1 data path shares it.
SMEM_BYTES_PER_CYCLE = 128.0

# The archs CI builds every family for and SASS-checks every case on; the README plans each.
CHECKED_ARCHS = ("sm_80", "sm_89", "sm_90a", "sm_100a", "sm_120a")
# Compute capabilities with an arch-specific ('a') target: their full feature set needs it.
ARCH_SPECIFIC = {(9, 0), (10, 0), (10, 1), (10, 3), (11, 0), (12, 0), (12, 1)}
# Nsight Compute's chip name per compute capability (`ncu --query-metrics --chip`): the first chip of each arch
# (GA100 for 8.0, GA102 for 8.6, AD102 for 8.9; a metric the chip lacks is dropped and recorded as such).
NCU_CHIPS = {
    (8, 0): "ga100",
    (8, 6): "ga102",
    (8, 9): "ad102",
    (9, 0): "gh100",
    (10, 0): "gb100",
    (10, 3): "gb110",
    (12, 0): "gb202",
    (12, 1): "gb20b",
}

# Native arithmetic throughput in RESULTS per clock per SM, by SM version, as the guides print them. 'fp16' counts
# 16-bit results (a half2 instruction gives two per thread); the 12.0 column counts lanes, 64 half2 lanes = 128 here.
# Rows: fp32 add/mul/fma; fp16 add/mul/fma; fp64 add/mul/fma; mufu reciprocal/rsqrt/log2/exp2/sin/cos; iadd 32-bit
# add/sub; imad 32-bit multiply/mad; shift; minmax integer compare/min/max; fminmax FP32 min/max; logic AND/OR/XOR;
# popc popc/clz; shuffle; reduce warp reduce; vote warp vote; cvt8 8/16-bit int to 32-bit; cvt other conversions.
ARITHMETIC: dict[int, dict[str, float]] = {
    80: {"fp32": 64, "fp16": 256, "fp64": 32, "mufu": 16, "iadd": 64, "imad": 64, "shift": 64, "minmax": 64,
         "logic": 64, "popc": 16, "shuffle": 32, "reduce": 16, "vote": 64, "cvt8": 64, "cvt": 16},  # [CPG] 8.0
    86: {"fp32": 128, "fp16": 256, "fp64": 2, "mufu": 16, "iadd": 64, "imad": 64, "shift": 64, "minmax": 64,
         "logic": 64, "shuffle": 32, "reduce": 16, "cvt8": 64, "cvt": 16},  # [CPG] 8.6 (popc, vote: not found)
    89: {"fp32": 128, "fp16": 128, "fp64": 2, "mufu": 16, "iadd": 64, "imad": 64, "shift": 64, "minmax": 64,
         "logic": 64, "popc": 16, "shuffle": 32, "reduce": 16, "vote": 64, "cvt8": 64, "cvt": 16},  # [CPG] 8.9
    90: {"fp32": 128, "fp16": 256, "fp64": 64, "mufu": 16, "iadd": 64, "imad": 64, "shift": 64, "minmax": 64,
         "logic": 64, "popc": 16, "shuffle": 32, "reduce": 16, "vote": 64, "cvt8": 64, "cvt": 16, "dpx16": 128,
         "dpx32": 64},  # [CPG] 9.0
    # [BPG] 10.0: only these rows were found; the rest of the column is left out (None).
    100: {"fp32": 128, "fp64": 64, "fminmax": 128},
    # [BPG] 12.0 / 12.1: fp16 is 64 half2 lanes (the whitepaper's FP16 non-tensor TFLOPS equal its FP32 ones); cvt is
    # f32 to f16/bf16 (16; f32 to s32 is 2 on SM > 10.0, f16 to f32 is 64). MUFU's row was not found.
    120: {"fp32": 128, "fp16": 128, "fp64": 2, "iadd": 128, "imad": 64, "shift": 64, "minmax": 128, "fminmax": 64,
          "logic": 64, "popc": 16, "shuffle": 32, "vote": 128, "cvt": 16},
}  # fmt: skip
ARITHMETIC[121] = ARITHMETIC[120]  # one BPG column for 12.0 and 12.1

# ncu pipe -> the arithmetic rows whose instructions issue to it (Nsight Compute Profiling Guide, pipelines) and the
# results one thread-instruction gives; the pipe's rate is the first row the arch has. 'a+b' is the sum of two pipe
# counters: the rate of the instruction split over them (HFMA2 on fmaheavy + fmalite, GA10x on).
PIPE_ROWS: dict[str, tuple[tuple[str, ...], int]] = {
    "fma": (("fp32",), 1),  # FFMA/FADD/FMUL (IMAD/IDP share it at the lower imad rate)
    "fmaheavy+fmalite": (("fp16",), 2),  # HFMA2/HADD2/HMUL2: two 16-bit results per thread-instruction
    "fp16": (("fp16",), 2),  # GA100's half-precision pipe (HFMA2)
    "fp64": (("fp64",), 1),  # DFMA/DADD/DMUL
    "alu": (("logic",), 1),  # LOP3; IADD3, shifts, compare/min/max at the same rate through sm_90
    "xu": (("mufu", "cvt"), 1),  # MUFU and type conversions (XU: transcendental and conversion unit)
    "lsu": (("shuffle",), 1),  # SHFL: the one LSU instruction the guide rates
}
PIPE_ARCHS: dict[str, set[int]] = {
    "fp16": {80},  # on GA10x and later half2 runs on fmaheavy + fmalite
    "fmaheavy+fmalite": {86, 89, 90, 100, 120, 121},
    "alu": {80, 86, 89, 90},  # 12.x: IADD3 and integer min/max at 128 but logic/shift at 64: which pipe is not stated
}
# Pipes with no published rate, and why: pipe_rate returns None for them on every arch.
NO_PUBLISHED_RATE: dict[str, str] = {
    "uniform": "the uniform datapath's rate is in neither the programming guide nor a whitepaper",
    "tensor": "a tensor instruction's rate depends on its shape and format: see tensor_peak (FLOP/cycle/SM)",
    "fmaheavy": "the guides give only the FP32 total of fmaheavy and fmalite (see 'fma')",
    "fmalite": "the guides give only the FP32 total of fmaheavy and fmalite (see 'fma')",
    "adu": "the address divergence unit (branches, barriers) has no published rate",
    "cbu": "the convergence barrier unit has no published rate",
}

# Tensor formats: aliases, and those with 2:4 structured sparsity (dense-equivalent peak x2).
FORMAT_ALIASES = {
    "fp16": "f16",
    "half": "f16",
    "fp8": "e4m3",
    "e5m2": "e4m3",
    "u8": "s8",
    "int8": "s8",
    "u4": "s4",
    "int4": "s4",
    "fp4": "e2m1",
    "nvfp4": "e2m1",
    "mxfp4": "e2m1",
    "mxf4": "e2m1",
    "mxf4nvf4": "e2m1",
    "fp64": "f64",
    "binary": "b1",
}
SPARSE_FORMATS = {"f16", "bf16", "tf32", "e4m3", "s8", "s4", "e2m1"}
# Formats whose rate is disputed or unpublished on every arch (tensor_peak returns None): kind::f8f6f4 and
# kind::mxf8f6f4 run at the FP8 rate, but GeForce FP8 with FP32 accumulate is half rate in [RTXBW-WP] and full rate in
# CUTLASS's sm_120 notes.
NO_TENSOR_PEAK = {"f8f6f4", "mxf8f6f4"}


@dataclass(frozen=True)
class GpuModel:
    """One GPU product: datasheet SM count, clocks, memory and dense tensor figures. Keyed by a device-name token."""

    name: str  # matched as a whole token in the CUDA device name ('H100 PCIe' in 'NVIDIA H100 PCIe')
    arch: str
    sms: int | None  # SMs enabled on the product
    boost_mhz: float | None  # boost SM clock
    dram_gbs: float | None  # datasheet DRAM bandwidth, GB/s
    memory_gb: float | None
    l2_mb: float | None
    tensor_mhz: float | None  # the SM clock the datasheet's tensor figures assume
    # Dense TFLOPS (TOPS for integers) per format; a plain key is the FP32 (S32) accumulate figure, 'f16/f16' = FP16
    # accumulate where the datasheet lists it apart.
    tensor_tflops: dict[str, float]
    source: str
    tensor_mhz_by_format: dict[str, float] = field(default_factory=dict)  # formats whose figure assumes another clock
    tdp_w: float | None = None  # the datasheet's (maximum, where configurable) board power, W

    def tensor_per_cycle(self, fmt: str, acc: str | None = None) -> float | None:
        """Dense FLOP (OP) per cycle per SM of a format: datasheet TFLOPS / (SMs x the clock it assumes)."""
        key = _tensor_key(self.tensor_tflops, _format(fmt), acc)
        mhz = self.tensor_mhz_by_format.get(key or "", self.tensor_mhz)
        if key is None or not self.sms or not mhz:
            return None
        return self.tensor_tflops[key] * 1e12 / (self.sms * mhz * 1e6)


_H100_WP_TENSOR = {"f16": 989.4, "bf16": 989.4, "tf32": 494.7, "e4m3": 1978.9, "s8": 1978.9, "f64": 66.9}
MODELS: tuple[GpuModel, ...] = (
    GpuModel("H200 NVL", "sm_90a", None, 1785, 4813, 141, None, None,
             {"f16": 835.5, "bf16": 835.5, "tf32": 417.5, "e4m3": 1670.5, "f64": 60.0},
             "H200 NVL product brief PB-12128-001_v01 (4813 GB/s, 1785 MHz boost); the SM count is not published and "
             "the tensor figures only with sparsity (dense = half); TDP up to 600 W (configurable)", tdp_w=600),
    GpuModel("H200", "sm_90a", 132, 1980, 4800, 141, 60, 1830, dict(_H100_WP_TENSOR),
             "NVIDIA H200 SXM datasheet 3512650 (4.8 TB/s, 141 GB; tensor figures with sparsity, dense = half = "
             "[H100-WP]'s): 132 SMs at the 1830 MHz its tensor figures assume (FP64 tensor: 1980 MHz, the boost "
             "clock). L2: no H200 document states it; [H100-WP] gives the full GH100 die 60 MB with all six HBM "
             "stacks' memory controllers (H100 SXM5: five stacks, 50 MB), and the H200 drives all six (6,144-bit "
             "bus), as its 62,914,560 B cudaDevAttrL2CacheSize says; max TDP up to 700 W (configurable) [H200-DS]",
             {"f64": 1980.0}, tdp_w=700),
    GpuModel("H100 NVL", "sm_90a", None, 1785, 3938, 94, None, None,
             {"f16": 835.5, "bf16": 835.5, "tf32": 417.5, "e4m3": 1670.5, "s8": 1670.5, "f64": 60.0},
             "H100 NVL product brief PB-11773-001_v01 (3938 GB/s, 94 GB, 1785 MHz boost); SM count not published, "
             "tensor figures only with sparsity (dense = half); TDP 350-400 W (configurable)", tdp_w=400),
    GpuModel("H100 PCIe", "sm_90a", 114, 1755, 2000, 80, 50, 1620,
             {"f16": 756.0, "bf16": 756.0, "tf32": 378.0, "e4m3": 1513.0, "s8": 1513.0, "f64": 51.2},
             "[H100-WP] Table 3 (114 SMs, 50 MB L2; tensor at 1620 MHz, FP64 tensor at the 1755 MHz boost) and "
             "H100 PCIe product brief PB-11133-001_v02 (2000 GB/s); TDP 350 W [H100-PB]",
             {"f64": 1755.0}, tdp_w=350),
    GpuModel("H100", "sm_90a", 132, 1980, 3350, 80, 50, 1830, dict(_H100_WP_TENSOR),
             "[H100-WP] Table 3, H100 SXM5 (132 SMs, 50 MB L2; tensor at 1830 MHz, FP64 tensor at the 1980 MHz boost) "
             "and H100 datasheet (3.35 TB/s, 80 GB); max TDP up to 700 W (configurable) [H100-DS]",
             {"f64": 1980.0}, tdp_w=700),
    GpuModel("A100-SXM4-80GB", "sm_80", 108, 1410, 2039, 80, 40, 1410,
             {"f16": 312.0, "bf16": 312.0, "tf32": 156.0, "s8": 624.0, "s4": 1248.0, "b1": 4992.0, "f64": 19.5},
             "[A100-WP] Tables 2 and 4 (108 SMs, 1410 MHz boost, 40 MB L2) and [A100-DS] (2039 GB/s, 80 GB, max "
             "TDP 400 W)", tdp_w=400),
    GpuModel("A100", "sm_80", 108, 1410, None, None, 40, 1410,
             {"f16": 312.0, "bf16": 312.0, "tf32": 156.0, "s8": 624.0, "s4": 1248.0, "b1": 4992.0, "f64": 19.5},
             "[A100-WP] (108 SMs, 1410 MHz boost); DRAM bandwidth and size differ by variant and are only recorded "
             "for A100-SXM4-80GB"),
    GpuModel("L40S", "sm_89", 142, 2520, 864, 48, None, 2520,
             {"f16": 362.05, "bf16": 362.05, "tf32": 183.0, "e4m3": 733.0, "s8": 733.0},
             "[L40S] product page (dense column; peaks at the 2520 MHz boost) and product brief (864 GB/s, 48 GB); "
             "142 SMs = 18176 CUDA cores / 128; L2 size not published; its INT4 row repeats INT8's and is left out; "
             "max power 350 W", tdp_w=350),
    GpuModel("L4", "sm_89", 58, 2040, 300, 24, 48, 2040,
             {"f16": 121.0, "bf16": 121.0, "tf32": 60.0, "e4m3": 242.0, "s8": 242.0, "s4": 484.0},
             "[ADA-WP] L4 table (58 SMs, 48 MB L2, 2040 MHz boost) and L4 product brief PB-11316-001_v01 (300 GB/s, "
             "max power 72 W)", tdp_w=72),
    GpuModel("RTX 4090", "sm_89", 128, 2520, 1008, 24, None, 2520,
             {"f16/f16": 330.3, "f16": 165.2, "bf16": 165.2, "tf32": 82.6, "e4m3/f16": 660.6, "e4m3": 330.3,
              "s8": 660.6, "s4": 1321.2},
             "[ADA-WP] RTX 4090 table as restated by spec databases (128 SMs, 2520 MHz boost, 1008 GB/s): GeForce "
             "FP32-accumulate rates are half the FP16-accumulate ones"),
    GpuModel("RTX 5090", "sm_120a", 170, 2407, 1792, 32, None, 2407,
             {"f16/f16": 419.0, "f16": 209.5, "bf16": 209.5, "tf32": 104.8, "e4m3/f16": 838.0, "e4m3": 419.0,
              "s8": 838.0, "e2m1": 1676.0},
             "[RTXBW-WP] Table 3 (170 SMs, 2407 MHz boost, 32 GB GDDR7 at 1792 GB/s; FP4 1676 = 3352 AI TOPS / 2): "
             "GeForce FP32-accumulate rates are half the FP16-accumulate ones"),
    GpuModel("RTX PRO 5000 Blackwell", "sm_120a", 110, None, 1344, 48, None, None, {"e2m1": 1032.0},
             "[PRO5000] (14080 CUDA cores / 128 = 110 SMs, 48 GB GDDR7 (a 72 GB variant exists), 1344 GB/s, FP4 "
             "2064 AI TOPS with sparsity, dense = half); no clock published, so no per-cycle tensor figure"),
    GpuModel("B200", "sm_100a", 148, None, 8000, 192, None, None,
             {"f16": 2250.0, "bf16": 2250.0, "tf32": 1100.0, "e4m3": 4500.0, "s8": 4500.0, "e2m1": 9000.0,
              "f64": 40.0},
             "[BW-TB] HGX B200 column (dense; 8 TB/s, 192 GB HBM3e); 148 SMs is the CUDA device attribute (no "
             "datasheet lists it) and no clock is published, so no per-cycle tensor figure; 1000 W",
             tdp_w=1000),
    GpuModel("GB10", "sm_121a", 48, None, 273, 128, None, None, {"e2m1": 500.0},
             "[SPARK] (6144 CUDA cores / 128 = 48 SMs, 128 GB LPDDR5X at 273 GB/s, 1 PFLOP FP4 with sparsity, dense "
             "= half); no clock published, so no per-cycle tensor figure"),
)  # fmt: skip

# Arch-level tensor peaks come from one reference product; on GeForce-class archs only the formats whose rate does
# not depend on the SKU's accumulator policy (FP16/FP8 with FP16 accumulate, integers, block-scaled FP4) are kept:
# FP32-accumulate rates are halved on GeForce (RTX 4090, RTX 5090) but not on L40S.
TENSOR_REFERENCE: dict[int, tuple[str, set[str] | None]] = {
    80: ("A100-SXM4-80GB", None),
    89: ("RTX 4090", {"f16/f16", "e4m3/f16", "s8"}),  # s4: L40S's page disagrees with the RTX 4090's figure
    90: ("H100", None),
    120: ("RTX 5090", {"f16/f16", "e4m3/f16", "s8", "e2m1"}),
}  # sm_86, sm_100 (no published B200 clock), sm_121 (no published GB10 clock): none

_MOBILE = re.compile(r"\b(laptop|max-q|mobile)\b", re.IGNORECASE)


def arch_version(arch: str) -> int | None:
    """The SM version of an nvcc target: 90 for 'sm_90a', 120 for 'sm_120f', None when it is not one."""
    m = re.fullmatch(r"(?:sm|compute)_(\d+)[af]?", arch.strip())
    return int(m.group(1)) if m else None


def pipe_rate(arch: str, pipe: str) -> float | None:
    """Peak rate of an ncu pipe in warp instructions per cycle per SM (the guides' results per clock / 32), or None
    where no guide or whitepaper gives one."""
    sm = arch_version(arch)
    if sm is None or pipe in NO_PUBLISHED_RATE or pipe not in PIPE_ROWS or sm not in PIPE_ARCHS.get(pipe, {sm}):
        return None
    rows, per_instruction = PIPE_ROWS[pipe]
    table = ARITHMETIC.get(sm, {})
    results = next((table[r] for r in rows if r in table), None)
    return None if results is None else results / per_instruction / WARP


def instruction_rate(arch: str, row: str) -> float | None:
    """The documented rate of one arithmetic row (ARITHMETIC) in warp instructions per cycle per SM, or None where the
    arch's column lacks it ('fp16' counts two results per half2 instruction)."""
    results = ARITHMETIC.get(arch_version(arch) or -1, {}).get(row)
    return None if results is None else results / (2 if row == "fp16" else 1) / WARP


def gpu_model(name: str) -> GpuModel | None:
    """The product a CUDA device name belongs to, longest matching key first ('H100 NVL' before 'H100'), or None."""
    for model in sorted(MODELS, key=lambda m: len(m.name), reverse=True):
        if _MOBILE.search(name) and not _MOBILE.search(model.name):
            continue  # a laptop part of the same name is another chip
        if re.search(rf"(?<![A-Za-z0-9]){re.escape(model.name)}(?![A-Za-z0-9])", name, re.IGNORECASE):
            return model
    return None


def dram_peak_gbs(gpu_name: str) -> float | None:
    """The datasheet DRAM bandwidth (GB/s) of a GPU by CUDA device name, None where none is recorded."""
    model = gpu_model(gpu_name)
    return model.dram_gbs if model else None


def tensor_peak(
    arch: str, fmt: str, sparse: bool = False, acc: str | None = None, gpu: str | None = None
) -> float | None:
    """Dense tensor peak in FLOP (OP) per cycle per SM of an mma format on `arch` (of product `gpu` where known);
    `acc`: 'f16' for FP16 accumulate, else FP32/S32; sparse=True doubles where 2:4 sparsity exists."""
    fmt = _format(fmt)
    if fmt in NO_TENSOR_PEAK or (sparse and fmt not in SPARSE_FORMATS):
        return None
    model = gpu_model(gpu) if gpu else None
    same_chip = model is not None and arch_version(model.arch) == arch_version(arch)
    per_cycle = model.tensor_per_cycle(fmt, acc) if model and same_chip else None
    if per_cycle is None:
        reference = _reference(arch)
        if reference is not None:
            model, keep = reference
            key = _tensor_key(model.tensor_tflops, fmt, acc)
            per_cycle = model.tensor_per_cycle(fmt, acc) if key and (keep is None or key in keep) else None
    return None if per_cycle is None else per_cycle * (2 if sparse else 1)


def tensor_source(arch: str, gpu: str | None = None) -> str | None:
    """Where tensor_peak's figures for `arch` (or product `gpu`) come from."""
    model = gpu_model(gpu) if gpu else None
    if model is not None and model.tensor_mhz and model.sms:
        return f"{model.name}: {model.source}"
    reference = _reference(arch)
    return f"{reference[0].name}: {reference[0].source}" if reference else None


@dataclass(frozen=True)
class Peak:
    """A whole-GPU peak and how it was obtained: from the datasheet, or derived from the device's SMs and clock."""

    per_second: float  # FLOP/s (OP/s) for a tensor format, warp instructions/s for a pipe
    per_cycle_per_sm: float
    sms: int
    mhz: float
    derived: bool
    how: str


def derived_peak(
    arch: str,
    sms: int,
    mhz: float,
    *,
    fmt: str | None = None,
    pipe: str | None = None,
    sparse: bool = False,
    acc: str | None = None,
) -> Peak | None:
    """A peak derived from the device (SM count x SM clock in MHz) times the arch's per-SM rate of a tensor format
    or a pipe; None where the arch has no published per-SM rate."""
    rate = tensor_peak(arch, fmt, sparse, acc) if fmt else pipe_rate(arch, pipe) if pipe else None
    if rate is None or not sms or not mhz or math.isnan(mhz):
        return None
    what = f"{fmt}{' sparse' if sparse else ''}" if fmt else f"pipe {pipe}"
    how = f"derived: {sms} SMs x {rate:g} per SM per cycle ({what}, {arch}) x {mhz:g} MHz (device clock)"
    return Peak(sms * rate * mhz * 1e6, rate, sms, mhz, True, how)


def device_peak(
    gpu: str, arch: str, sms: int, mhz: float, fmt: str, sparse: bool = False, acc: str | None = None
) -> Peak | None:
    """A GPU's tensor peak: its datasheet figure where the table knows the product, else derived_peak."""
    model = gpu_model(gpu)
    key = _tensor_key(model.tensor_tflops, _format(fmt), acc) if model else None
    if model is not None and key is not None and (not sparse or _format(fmt) in SPARSE_FORMATS):
        tflops = model.tensor_tflops[key] * (2 if sparse else 1)
        clock = model.tensor_mhz_by_format.get(key, model.tensor_mhz)
        per_cycle = tflops * 1e12 / (model.sms * clock * 1e6) if model.sms and clock else math.nan
        return Peak(tflops * 1e12, per_cycle, model.sms or sms, clock or mhz, False, f"datasheet: {model.source}")
    return derived_peak(arch, sms, mhz, fmt=fmt, sparse=sparse, acc=acc)


def _format(fmt: str) -> str:
    """A tensor format's canonical name: 'fp8' and 'e5m2' -> 'e4m3', 'u8' -> 's8', 'mxf4nvf4' -> 'e2m1'."""
    return FORMAT_ALIASES.get(fmt.lower(), fmt.lower())


def _tensor_key(table: dict[str, float], fmt: str, acc: str | None) -> str | None:
    """The key of a format in a per-format table: 'f16/f16' for FP16 accumulate where listed apart, else plain."""
    if acc == "f16" and f"{fmt}/f16" in table:
        return f"{fmt}/f16"
    return fmt if fmt in table else None


def _reference(arch: str) -> tuple[GpuModel, set[str] | None] | None:
    """The reference product of an arch's tensor figures and the formats it may speak for."""
    entry = TENSOR_REFERENCE.get(arch_version(arch) or -1)
    if entry is None:
        return None
    model = next(m for m in MODELS if m.name == entry[0])
    return model, entry[1]
