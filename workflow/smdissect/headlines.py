"""The headline figures: what a GPU is like at a glance, for the index page and the README, read from the figures
table (never recomputed) with each figure's status and the paper's sm_120 figure labelled as another GPU's."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from . import files
from .tables import point_text

# (category, figure name in the figures table, what a reader calls it, whether the index's headline table shows it):
# each category's key findings, in the order its page lists them.
FINDINGS: tuple[tuple[str, str, str, bool], ...] = (
    ("latency", "ffma latency", "FFMA dependent latency", True),
    ("latency", "ffma peak throughput", "FFMA peak issue rate", True),
    ("latency", "dfma latency", "DFMA dependent latency", True),
    ("latency", "mufu_rcp latency", "MUFU.RCP dependent latency", True),
    ("pipelines", "hfma2 latency", "HFMA2 dependent latency", False),
    ("pipelines", "dfma peak throughput", "DFMA peak issue rate", True),
    ("pipelines", "iadd3 peak throughput", "IADD3 peak issue rate", False),
    ("memory", "chase L1 latency (random)", "L1 hit latency (pointer chase)", True),
    ("memory", "chase L2 latency (random)", "L2 hit latency (pointer chase)", True),
    (
        "memory",
        "shared-memory latency, 32-bit LDS chase (lane l on element l, no conflict)",
        "shared-memory latency (pure LDS chase)",
        True,
    ),
    ("memory", "dram_read peak bandwidth", "DRAM read bandwidth", True),
    ("memory", "l2_read peak bandwidth", "L2 read bandwidth", True),
    ("tensorcore", "mma_f16_f32 latency", "mma.sync f16 latency", True),
    ("tensorcore", "mma_f16_f32 peak flops", "mma.sync f16 (f32 accumulate) throughput", True),
    ("tensorcore", "wgmma_f16_f32_ss peak flops", "wgmma f16 throughput", True),
    ("tensorcore", "wgmma_e4m3_f32_ss peak flops", "wgmma FP8 (e4m3) throughput", True),
    ("tensorcore", "wgmma_s8_s32_ss peak flops", "wgmma int8 throughput", False),
    ("tensorcore", "mma_f64_m16n8k8 peak flops", "FP64 tensor throughput (mma.sync m16n8k8)", True),
    ("async", "TMA bulk best / LDG.128 best", "TMA bulk copy vs LDG.128 stream", True),
    ("async", "cp_async_stream peak bandwidth", "cp.async stream bandwidth", False),
    ("async", "bulk_latency cost per KB of one bulk copy, L2", "TMA bulk copy cost per KB from L2", False),
    ("cluster", "cluster_barrier latency over cluster sizes", "barrier.cluster (arrive + wait)", True),
    ("cluster", "DSMEM remote hop at cluster=2", "DSMEM remote hop over local shared memory", True),
    ("cluster", "sm_pingpong round trip, median pair", "SM-to-SM round trip, median pair", False),
    ("launch", "serial dependent gap, 1 CTA", "kernel-to-kernel gap, serial launches", True),
    ("launch", "PDL dependent gap, 1 CTA", "kernel-to-kernel gap, PDL", True),
    ("launch", "h2d_pinned peak bandwidth", "PCIe host-to-device (pinned)", True),
    ("power", "power_bf16_mma k per active SM (fit slope)", "power per busy SM, bf16 mma.sync", True),
    *(
        (
            "power",
            f"power_{load} SM clock under load (clock64 over %globaltimer)",
            f"SM clock under {label} load (clock64 over %globaltimer)",
            True,
        )
        for load, label in (("fp32_ffma", "FFMA"), ("fp64_dfma", "DFMA"), ("bf16_mma", "bf16 mma.sync"))
    ),
    ("power", "power_bf16_mma NVML SM clock, lowest", "SM clock NVML reads under bf16 mma.sync load", True),
    ("power", "power_bf16_mma peak tflops", "bf16 mma.sync TFLOPS under the power sweep", False),
    ("power", "power_idle power", "board power, awake with no kernel running", False),
    ("scheduler", "scoreboard depth", "scoreboard depth (loads in flight per warp)", True),
    ("scheduler", "warps_ffma warps to saturate", "warps to saturate FFMA", False),
    ("scheduler", "max_resident peak max_resident_warps", "resident warps per SM", False),
    ("gemm", "gemm_bf16 peak tflops_cutlass", "CUTLASS bf16 GEMM", False),
    ("gemm", "gemm_bf16 peak tflops_cublas", "cuBLAS bf16 GEMM", False),
    ("gemm", "gemm_bf16 CUTLASS over cuBLAS at their peaks", "CUTLASS over cuBLAS", False),
    ("attention", "torch_sdpa tflops at bh=132, dtype=0, head_dim=128, seqlen=1024", "PyTorch SDPA, head 128", False),
    (
        "attention",
        "flash_tflops over torch_sdpa at bh=132, dtype=0, head_dim=128, seqlen=1024",
        "this kernel over PyTorch SDPA, head 128",
        False,
    ),
    ("attention", "tile_full softmax share at ctas_per_sm=2, head_dim=128", "softmax share of a tile", False),
    ("interconnect", "atomic_sys_latency latency in ns at gpu=0, mem=0", "system-scope atomic, local memory", False),
    ("interconnect", "peer_chase latency in ns at footprint_mb=1024, gpu=0, mem=0", "DRAM chase, own GPU", False),
    ("geometry", "L1 line size (capacity against stride)", "L1 line", False),
    ("geometry", "L1 fill granularity (sector size)", "L1 sector (fill granularity)", False),
    ("geometry", "TLB reach, lower bound (2 MB stride)", "TLB reach at 2 MB pages, at least", False),
    ("geometry", "L2 bandwidth fall-off footprint", "footprint where L2 bandwidth falls off", False),
    ("geometry", "L2 read bandwidth (L2-resident windows)", "L2 read bandwidth", False),
    ("sync", "bar.sync cost per added warp", "__syncthreads cost per added warp", False),
    ("sync", "bar_sync latency at warps=32", "__syncthreads at 32 warps", True),
    ("sync", "fence_acq_rel_gpu latency", "fence.acq_rel.gpu", True),
    ("sync", "fence_acq_rel_sys latency", "fence.acq_rel.sys", False),
    ("sync", "grid.sync() at full occupancy", "grid.sync() at full occupancy", False),
    ("sync", "red / atom add throughput, a word per thread", "red over atom, a word per thread", False),
    ("control", "uniform branch, taken path: cycles it adds a step", "uniform branch, taken", False),
    ("control", "divergence cost at depth 1", "divergent if/else, one level", False),
    ("control", "i-cache level 0, 1 warp: largest footprint on it", "code that runs at full speed, 1 warp", False),
    ("control", "direct call: cycles it adds to the callee's IMAD", "a direct call", False),
)
HEADLINES = tuple(f for f in FINDINGS if f[3])


def key_findings(category: str) -> tuple[tuple[str, str, str, bool], ...]:
    """The key findings of one category."""
    return tuple(f for f in FINDINGS if f[0] == category)


def table(
    figures: pd.DataFrame, reference: pd.DataFrame, entries: tuple[tuple[str, str, str, bool], ...] = HEADLINES
) -> pd.DataFrame:
    """One row per entry (the headlines by default): the figure's value, unit, spread, status and reason, and the
    paper's sm_120 value where the figure stands for one (another GPU: an RTX PRO 5000)."""
    refs = reference.set_index("id")["value"].to_dict() if len(reference) else {}
    rows = []
    for category, name, label, _ in entries:
        hit = figures[(figures["category"] == category) & (figures["figure"] == name)]
        if hit.empty:
            rows.append(
                {
                    "quantity": label,
                    "category": category,
                    "figure": name,
                    "value": math.nan,
                    "unit": "",
                    "spread": math.nan,
                    "resolution": math.nan,
                    "status": "missing",
                    "reason": "not in this run's figures",
                    "at": "",
                    "paper_sm120": math.nan,
                }
            )
            continue
        f = hit.iloc[0]
        rows.append(
            {
                "quantity": label,
                "category": category,
                "figure": name,
                "value": float(f["value"]),
                "unit": f["unit"],
                "spread": float(f["spread"]),
                "resolution": float(f["resolution"]),
                "status": f["status"],
                "reason": f["reason"],
                "at": point_text(f["params"]),
                "paper_sm120": refs.get(f["paper"], math.nan),
            }
        )
    return pd.DataFrame(rows)


def markdown(rows: pd.DataFrame, figures: pd.DataFrame) -> str:
    """The headline table as the README shows it, after the run's figure counts by status."""
    from .evidence import status_counts
    from .markup import number, share

    counts = ", ".join(f"{n:,} {s}" for s, n in status_counts(figures).items())
    lines = [
        f"{len(figures):,} figures: {counts}.",
        "",
        "| quantity | measured | spread | status | paper, RTX PRO 5000 (sm_120, another GPU) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows.itertuples(index=False):
        value = (
            f"{number(r.value, resolution=r.resolution)} {r.unit}".strip()
            if not math.isnan(r.value)
            else "not measured"
        )
        paper = number(r.paper_sm120) if not math.isnan(r.paper_sm120) else ""
        lines.append(f"| {r.quantity} | {value} | {share(r.spread, r.value)} | {r.status} | {paper} |")
    return "\n".join(lines)


def update(readme: Path, block: str) -> bool:
    """Put `block` between the headline markers of `readme`; whether the file changed."""
    return files.replace_block(readme, "headlines", block)
