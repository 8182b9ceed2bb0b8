"""Derived figures of the tensorcore category: per case its issue interval and its share of the format's dense peak
at the point of peak FLOP/cycle/SM, wgmma's throughput, TFLOPS and shared-memory operand bytes there, ldmatrix's
shared-memory bytes per cycle, each mma.sync case's ILP knee and the warps (one chain each) that saturate it, and the
gap between the best wgmma and mma.sync at f16 -> f32."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...core import archs, tables
from ...core.catalog import Case
from ..figure_model import Figure
from .chains import KNEE, chain_points, knee_figures, saturation_warps
from .samples import at, keep, make, point_of, run_of, samples
from .sweeps import method_of, num, robust, series

CATEGORY = "tensorcore"
METRICS = frozenset(
    {
        "ilp_knee",
        "issue_interval",
        "over_mma_sync",
        "pct_of_peak",
        "saturation_warps",
        "smem_bytes",
        "tflops",
        "throughput",
    }
)  # every metric a figure of this deriver can have

SMSPS = archs.SCHEDULERS  # sub-partitions per SM: one mma.sync or ldmatrix warp issues on one of them
# Bytes of shared memory one warp instruction of each ldmatrix case moves: .x1 one 8x8 b16 matrix (128 B), .x2 two,
# .x4 four; the stmatrix round trip stores four and loads four.
SMEM_BYTES = {"ldmatrix_x1": 128, "ldmatrix_x2": 256, "ldmatrix_x4": 512, "stmatrix_ldmatrix_x4": 1024}
GAP_MMA = "mma_f16_f32"  # the mma.sync m16n8k16 f16 -> f32 the wgmma f16 -> f32 cases are compared with
GAP_WGMMA = ("wgmma_f16_f32_ss", "wgmma_f16_f32_rs")
MMA_SYNC = ("mma_", "f8f6f4_", "mxf")  # the mma.sync cases: ILP knees and warps to saturate are theirs


def tensor_format(case: str) -> tuple[str | None, bool, str | None]:
    """(format, 2:4 sparse, accumulator) whose dense peak bounds a case: 'f16' for mma_f16_f32 and wgmma_f16_f32_ss,
    ('f16', True, 'f32') for mma_sp_f16_f32, the kind for the block-scaled cases (f8f6f4, mxf4nvf4), None for the
    ldmatrix-only cases."""
    parts = case.split("_")
    if case.startswith(("ldmatrix_mma",)):
        return "f16", False, "f32"
    if case.startswith(("ldmatrix", "stmatrix")):
        return None, False, None
    if case.startswith("mma_sp_"):
        return parts[2], True, parts[3]
    if case.startswith("mma_"):
        return parts[1], False, parts[2]
    if case.startswith(("f8f6f4", "mxf")):
        return parts[0], False, "f32"
    if case.startswith(("tcgen05_ld", "tcgen05_st")):
        return None, False, None
    if case.startswith("tcgen05_"):  # tcgen05_<format or kind>_<accumulator>[_cta2]
        return parts[1], False, parts[2]
    if case.startswith("wgmma_"):  # wgmma_[sp_]<a>[x<b>]_<accumulator>_<ss|rs>: A's format bounds it
        sparse = parts[1] == "sp"
        return parts[1 + sparse].split("x")[0], sparse, parts[-2]
    return None, False, None


def wgmma_smem_bytes(case: str, point: dict[str, int]) -> int:
    """Bytes one wgmma m64nNk of a case reads from shared memory: every format's dense K is 32 B a row (16 x 16 bit,
    8 x tf32, 32 x 8 bit, 256 x 1 bit), so A is 64 x 32 B unless in registers (_rs), B is N x 32 B (sparse: K doubled
    for B; A compressed to the dense width)."""
    _, sparse, _ = tensor_format(case)
    return (0 if case.endswith("_rs") else 64 * 32) + point["n"] * 32 * (2 if sparse else 1)


def _shared_bytes(case: str, where: str) -> tuple[int, str, str] | None:
    """Shared-memory bytes one operation of a case moves, its figure's name and derivation: an ldmatrix warp
    instruction's, a wgmma's A and B operands; None for the other cases."""
    if case in SMEM_BYTES:
        size = SMEM_BYTES[case]
        derivation = f"peak throughput{at(where)} x {size} B per warp instruction"
        return size, "shared-memory bytes at peak throughput", derivation
    if case.startswith("wgmma"):
        size = wgmma_smem_bytes(case, tables.parse_params(where))
        return (
            size,
            "shared-memory operand bytes at peak flops",
            f"throughput{at(where)} x {size} B of A and B one wgmma reads from shared memory (shared memory gives "
            f"{archs.SMEM_BYTES_PER_CYCLE} B/cycle/SM)",
        )
    return None


def peak_per_cycle(arch: str, case: str, gpu: str | None = None) -> float | None:
    """The dense FLOP/cycle/SM peak of a case's format on `arch` (2:4 sparse: dense-equivalent x2), None where no
    datasheet gives one (INT4 and b1 on Hopper, the f8f6f4 kinds)."""
    fmt, sparse, acc = tensor_format(case)
    return archs.tensor_peak(arch, fmt, sparse, acc="f16" if acc == "f16" else None, gpu=gpu) if fmt else None


def _case_figures(raw: pd.DataFrame, generic: list[Figure], case: str, arch: str, gpu: str) -> list[Figure | None]:
    """A case's figures at its point of peak FLOP/cycle/SM (of peak throughput where it has no flops): its issue
    interval, share of the dense peak, wgmma's own throughput and TFLOPS, and the shared-memory bytes it moves."""
    flops_at = point_of(generic, case, "flops")
    where = flops_at or point_of(generic, case, "throughput")
    if where is None:
        return []
    basis = "peak FLOP/cycle/SM" if flops_at else "peak throughput"
    thr = samples(raw, case, "throughput", where)
    wgmma = case.startswith("wgmma")
    per, what = (1, "wgmma on the SM") if wgmma else (SMSPS, "of them on one sub-partition")
    out = [
        make(
            case,
            "issue_interval",
            "cycle",
            f"{case} issue interval",
            lambda t: per / t,
            [thr],
            f"{per} / throughput {float(pd.Series(thr).median()):.4g} op/cycle/SM{at(where)} (the point of "
            f"{basis}): cycles between two {what}",
            [where],
        ),
        _pct_of_peak(raw, case, where, basis, (arch, gpu)),
    ]
    if wgmma:
        out += _wgmma_figures(raw, case, where, thr)
    shared = _shared_bytes(case, where)
    if shared is not None:
        size, name, derivation = shared
        out.append(
            make(case, "smem_bytes", "B/cycle/SM", f"{case} {name}", lambda t: t * size, [thr], derivation, [where])
        )
    return out


def _pct_of_peak(raw: pd.DataFrame, case: str, where: str, basis: str, run: tuple[str, str]) -> Figure | None:
    """A case's FLOP/cycle/SM at `where` as a share of its format's dense peak on the run's arch and GPU (None
    without a peak or flops)."""
    arch, gpu = run
    flops = samples(raw, case, "flops", where)
    peak = peak_per_cycle(arch, case, gpu)
    fmt, sparse, _ = tensor_format(case)
    if not peak or not len(flops):
        return None
    return make(
        case,
        "pct_of_peak",
        "%",
        f"{case} % of the {fmt}{' sparse' if sparse else ''} peak",
        lambda f: 100 * f / peak,
        [flops],
        f"FLOP/cycle/SM{at(where)} (the point of {basis}) / the {arch} {fmt} dense peak of {peak:g} "
        f"FLOP/cycle/SM{' x 2 (2:4 sparse)' if sparse else ''} ({_source(arch, gpu)})",
        [where],
    )


def _wgmma_figures(raw: pd.DataFrame, case: str, where: str, thr: np.ndarray) -> list[Figure | None]:
    """wgmma's own throughput and TFLOPS at its point of peak FLOP/cycle/SM (the manifest gives them `none`)."""
    return [
        make(
            case,
            "throughput",
            "op/cycle/SM",
            f"{case} throughput at peak flops",
            lambda t: t,
            [thr],
            f"median{at(where)}, the point of peak FLOP/cycle/SM",
            [where],
        ),
        make(
            case,
            "tflops",
            _unit(raw, case, "tflops"),
            f"{case} tflops at peak flops",
            lambda t: t,
            [samples(raw, case, "tflops", where)],
            f"median{at(where)}, the point of peak FLOP/cycle/SM, at the clock each launch read",
            [where],
        ),
    ]


def _unit(raw: pd.DataFrame, case: str, metric: str) -> str:
    """The unit a case's records of `metric` carry (TFLOPS, TOPS for an integer format)."""
    return str(raw.loc[(raw["case"] == case) & (raw["metric"] == metric), "unit"].iloc[0])


def _source(arch: str, gpu: str) -> str:
    source = archs.tensor_source(arch, gpu) or "archs"
    return source.split(":")[0]


def gap(raw: pd.DataFrame, generic: list[Figure]) -> Figure | None:
    """The best wgmma f16 -> f32 FLOP/cycle/SM over mma.sync m16n8k16 f16 -> f32's, each at its peak point."""
    sync_at = point_of(generic, GAP_MMA, "flops")
    best = [
        (f.value, f.case, f.params) for f in generic if f.case in GAP_WGMMA and f.metric == "flops" and f.kind == "peak"
    ]
    if sync_at is None or not best:
        return None
    _, case, wg_at = max(best)
    return make(
        case,
        "over_mma_sync",
        "x",
        "wgmma f16 over mma.sync f16 FLOP/cycle/SM",
        lambda w, s: w / s,
        [samples(raw, case, "flops", wg_at), samples(raw, GAP_MMA, "flops", sync_at)],
        f"peak FLOP/cycle/SM of {case}{at(wg_at)} / peak FLOP/cycle/SM of {GAP_MMA}{at(sync_at)}",
        [wg_at, sync_at],
        params=wg_at,
    )


def saturation_figures(raw: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """Per mma.sync case, the fewest warps (each one dependent chain, at its smallest ILP) reaching KNEE of the best
    rate over warps there."""
    out = []
    for case, by_warps in chain_points(raw).items():
        if not case.startswith(MMA_SYNC):
            continue
        ilp = min(i for at_warps in by_warps.values() for i in at_warps)
        at_ilp = {w: pts[ilp] for w, pts in sorted(by_warps.items()) if ilp in pts}
        if len(at_ilp) < 2:
            continue
        thr = series(raw, case, "throughput")
        pts = {w: thr[p] for w, p in at_ilp.items()}
        warps, spread = robust(saturation_warps, pts)
        if warps is None:
            continue
        steps = ", ".join(f"{w}: {num(float(pd.Series(v).median()))}" for w, v in pts.items())
        out.append(
            Figure(
                case=case,
                metric="saturation_warps",
                unit="warp",
                kind="derived",
                name=f"{case} warps to saturate at ilp={ilp}",
                value=float(warps),
                spread=spread,
                samples=sum(len(v) for v in pts.values()),
                derivation=f"fewest warps reaching {KNEE:.0%} of "
                f"the best throughput over warps at ilp={ilp} (op/cycle/SM by warps: {steps}); spread: over "
                "the repeats",
                points=tuple(at_ilp.values()),
                method=method_of(generic, case),
            )
        )
    return out


def figures(frames: dict[str, pd.DataFrame], generic: list[Figure], cases: dict[str, Case]) -> list[Figure]:
    """Every derived figure of the tensorcore category's run."""
    raw = frames.get("raw")
    if raw is None or raw.empty:
        return []
    arch, gpu = run_of(raw)
    found = [f for case in dict.fromkeys(raw["case"]) for f in _case_figures(raw, generic, case, arch, gpu)]
    knees = [f for f in knee_figures(raw, generic) if f.case.startswith(MMA_SYNC)]
    return keep([*found, gap(raw, generic), *knees, *saturation_figures(raw, generic)])
