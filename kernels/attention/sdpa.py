#!/usr/bin/env python3
"""PyTorch's fused attention (scaled_dot_product_attention, causal=False) on the flash family's shapes, speaking
the benchmark binary protocol (smdissect.protocol); torch is imported only to run, so --list works without it."""

from smdissect.measure import protocol

DTYPES = {0: "bfloat16", 1: "float16"}


def torch_sdpa(case: str, point: protocol.Point, repeats: int, device: int) -> None:
    """Time `repeats` SDPA calls (protocol.time_calls) after checking one output; TFLOPS = 4 bh seqlen^2 d / time."""
    bh, seqlen, d, dtype = (protocol.param(point, k) for k in ("bh", "seqlen", "head_dim", "dtype"))
    if bh < 1 or seqlen < 1 or d not in (64, 128) or dtype not in DTYPES:
        protocol.fail(f"bh >= 1, seqlen >= 1, head_dim 64 or 128 and dtype 0 (bf16) or 1 (f16) wanted, got {point}", 2)
    torch = protocol.torch_on(device)
    gen = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(1, bh, seqlen, d, device="cuda", dtype=getattr(torch, DTYPES[dtype]), generator=gen)
               for _ in range(3))  # fmt: skip
    sdpa = torch.nn.functional.scaled_dot_product_attention
    if not torch.isfinite(sdpa(q, k, v, is_causal=False)).all():
        protocol.fail(f"{case} {protocol.params_json(point)}: the output holds non-finite values")
    ms, mhz = protocol.time_calls(
        torch, lambda: sdpa(q, k, v, is_causal=False), repeats, protocol.range_name(case, point, "sdpa")
    )
    flop = 4.0 * bh * seqlen * seqlen * d
    protocol.emit(case, point, "tflops", "TFLOPS", [flop / (t * 1e-3) / 1e12 for t in ms], "sdpa", mhz)
    protocol.emit(case, point, "ms", "ms", ms, "sdpa", mhz)


if __name__ == "__main__":
    protocol.main({"torch_sdpa": torch_sdpa})
