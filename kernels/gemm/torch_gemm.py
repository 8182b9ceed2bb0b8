#!/usr/bin/env python3
"""Library GEMMs of each tensor format through PyTorch (cuBLAS / cuBLASLt), square M = N = K = mn, speaking the
benchmark protocol (smdissect.protocol); torch is imported only to run, so --list works without it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from smdissect.core import features
from smdissect.measure import protocol

CHECKED_ROWS = 64  # output rows, spread over the matrix, checked against a float64 product of the same inputs
ALIGN = 16  # torch._scaled_mm wants every dimension a multiple of 16 (torch._int_mm: of 8)


@dataclass(frozen=True)
class Format:
    """A case's format: its operands' torch dtype, the torch function it calls, the unit of its rate, the largest
    max_rel_err its output may show, and the features.FEATURES entry the GPU needs (the manifest's `requires`)."""

    dtype: str
    function: str
    unit: str = "TFLOPS"
    tolerance: float = 0.01  # a bf16 output's rounding (2^-9) plus f32 accumulation
    tf32: bool = False  # float32 operands multiplied in TF32 (torch.backends.cuda.matmul.allow_tf32)
    feature: str = ""
    dtype_b: str = ""  # B's dtype where it is not A's (FP8 e5m2 x e4m3: cuBLASLt has no e5m2 x e5m2)
    sparse: bool = False  # A pruned 2:4 along K and compressed (torch.sparse.to_sparse_semi_structured)


FORMATS = {
    "torch_gemm_e4m3": Format("float8_e4m3fn", "_scaled_mm", feature="fp8"),
    "torch_gemm_e5m2": Format("float8_e5m2", "_scaled_mm", feature="fp8", dtype_b="float8_e4m3fn"),
    "torch_gemm_sp_f16": Format("float16", "mm", sparse=True),
    "torch_gemm_s8": Format("int8", "_int_mm", unit="TOPS", tolerance=0.0),  # int32 sums of int8 products: exact
    "torch_gemm_tf32": Format("float32", "mm", tf32=True),
    "torch_gemm_f64": Format("float64", "mm", tolerance=1e-9),
    "torch_gemm_bf16": Format("bfloat16", "mm"),
}


def unavailable(torch: Any, fmt: Format) -> str:
    """Why this torch on this GPU cannot run the format, '' where it can."""
    names = [fmt.dtype, fmt.dtype_b or fmt.dtype, fmt.function]
    if not all(hasattr(torch, name) for name in names) or (
        fmt.sparse and not hasattr(torch.sparse, "to_sparse_semi_structured")
    ):
        return (
            f"torch {torch.__version__} lacks one of torch.{', torch.'.join(names)}"
            f"{', torch.sparse.to_sparse_semi_structured' if fmt.sparse else ''}: install torch >= 2.4 "
            "(pip install -e '.[torch]')"
        )
    major, minor = torch.cuda.get_device_capability()
    if fmt.feature and major * 10 + minor not in features.FEATURES[fmt.feature]:
        where = ", ".join(f"sm_{sm}" for sm in sorted(features.FEATURES[fmt.feature]))
        return (
            f"torch.{fmt.function} on {fmt.dtype} needs a GPU with {fmt.feature} ({where}), this one is "
            f"sm_{major}{minor}: run it on one of those (the manifest's requires keeps it static elsewhere)"
        )
    return ""


def operands(torch: Any, fmt: Format, n: int) -> tuple[Any, Any]:
    """A and B (n x n) of the format from seed 0: integers in [-128, 127], else normal values; B column-major
    (b.t() of a row-major b, K contiguous) for torch._scaled_mm, which requires it, and torch._int_mm, whose
    row-major B cuBLASLt runs at 6% of the int8 tensor rate (132 TOPS on the H200, 2026-12-02); a sparse A keeps
    the last two of every four values along K (torch's own 2:4 example pattern), dense here."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    dtypes = getattr(torch, fmt.dtype), getattr(torch, fmt.dtype_b or fmt.dtype)
    if dtypes[0] == torch.int8:
        a, b = (torch.randint(-128, 128, (n, n), generator=gen, device="cuda", dtype=d) for d in dtypes)
    else:
        a, b = (torch.randn(n, n, generator=gen, device="cuda").to(d) for d in dtypes)
    if fmt.sparse:
        a = a * torch.tensor([0, 0, 1, 1], device="cuda", dtype=a.dtype).tile((n, n // 4))
    return a, b.t() if fmt.function in ("_scaled_mm", "_int_mm") else b


def library_call(torch: Any, fmt: Format, a: Any, b: Any) -> Callable[[], Any]:
    """The timed call D = A x B: torch.<function>(A, B); FP8 with per-tensor unit scales and a bf16 output; a sparse
    A compressed first (torch.sparse.to_sparse_semi_structured: cuSPARSELt where torch has it, else CUTLASS)."""
    fn = getattr(torch, fmt.function)
    if fmt.sparse:
        compressed = torch.sparse.to_sparse_semi_structured(a)
        return lambda: fn(compressed, b)
    if fmt.function == "_scaled_mm":
        one = torch.ones((), device="cuda")
        return lambda: fn(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    return lambda: fn(a, b)


@contextmanager
def tf32(torch: Any) -> Iterator[None]:
    """float32 matrix products in TF32 inside (torch.backends.cuda.matmul.allow_tf32), the setting restored after."""
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


def max_rel_err(torch: Any, a: Any, b: Any, out: Any) -> float:
    """max |D - ref| / max |ref| over CHECKED_ROWS rows of D = A x B, ref the float64 product of the same inputs
    (every operand format but float64 is exact in float32)."""
    step = a.shape[0] // CHECKED_ROWS
    exact = [t if t.dtype == torch.float64 else t.float().double() for t in (a[::step], b)]
    ref = exact[0] @ exact[1]
    return float((out[::step].double() - ref).abs().max() / ref.abs().max())


def torch_gemm(case: str, point: protocol.Point, repeats: int, device: int) -> None:
    """Check one square GEMM of the case's format, then time `repeats` of them (protocol.time_calls); TFLOPS (TOPS
    for integers) = 2 mn^3 / time, and FLOP (OP)/cycle/SM at the SM clock NVML read."""
    fmt, n = FORMATS[case], protocol.param(point, "mn")
    if n < CHECKED_ROWS or n % ALIGN:
        protocol.fail(
            f"mn >= {CHECKED_ROWS} and a multiple of {ALIGN} wanted (torch._scaled_mm's alignment), got {point}", 2
        )
    torch = protocol.torch_on(device)
    where = f"{case} {protocol.params_json(point)}"
    why = unavailable(torch, fmt)
    if why:
        protocol.fail(f"{where}: {why}")
    a, b = operands(torch, fmt, n)
    with tf32(torch) if fmt.tf32 else nullcontext():
        try:
            call = library_call(torch, fmt, a, b)
            err = max_rel_err(torch, a, b, call())
        except RuntimeError as exc:  # e.g. a torch build without this format's kernel for this GPU
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            protocol.fail(f"{where}: torch raised '{first}': run a torch build with kernels for this GPU")
        if not err <= fmt.tolerance:
            protocol.fail(
                f"{where}: max |D - ref| / max |ref| = {err:.3g} over {CHECKED_ROWS} rows, above {fmt.tolerance:g}: "
                f"torch.{fmt.function} returned a wrong product (check the torch and CUDA versions)"
            )
        ms, mhz = protocol.time_calls(torch, call, repeats, protocol.range_name(case, point, "torch"))
    protocol.emit(case, point, "tflops", fmt.unit, [2.0 * n**3 / (t * 1e-3) / 1e12 for t in ms], "torch", mhz)
    if mhz > 0:  # per SM and cycle at the clock NVML read: comparable with the tensor instructions' peaks
        sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
        flops = [2.0 * n**3 / (t * 1e-3) / (sms * mhz * 1e6) for t in ms]
        per_cycle = "OP/cycle/SM" if fmt.unit == "TOPS" else "FLOP/cycle/SM"
        protocol.emit(case, point, "flops", per_cycle, flops, "torch", mhz)
    protocol.emit(case, point, "ms", "ms", ms, "torch", mhz)
    protocol.emit(case, point, "max_rel_err", "fraction", [err], "torch")


if __name__ == "__main__":
    protocol.main(dict.fromkeys(FORMATS, torch_gemm))
