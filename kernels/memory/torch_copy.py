#!/usr/bin/env python3
"""The library reference of the bandwidth cases: torch's own device-to-device copy (Tensor.copy_), timed with
CUDA events in the same run as our kernels; bandwidth counts the bytes read plus the bytes written."""

from smdissect.measure import protocol


def torch_copy(case: str, point: protocol.Point, repeats: int, device: int) -> None:
    """Copy a size_mb MiB buffer `repeats` times after warm-up copies; one record of GB/s samples."""
    torch = protocol.torch_on(device)
    n = protocol.param(point, "size_mb") << 20
    src = torch.empty(n, dtype=torch.uint8, device="cuda").fill_(1)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(repeats):
        torch.cuda.nvtx.range_push(protocol.range_name(case, point, "copy"))
        start.record()
        dst.copy_(src)
        end.record()
        torch.cuda.nvtx.range_pop()
        end.synchronize()
        samples.append(2 * n / (start.elapsed_time(end) * 1e6))
    if not torch.equal(dst[:: 1 << 20], src[:: 1 << 20]):
        protocol.fail(f"{case} {protocol.params_json(point)}: the copy does not match its source")
    protocol.emit(case, point, "bandwidth", "GB/s", samples)


if __name__ == "__main__":
    protocol.main({"torch_copy": torch_copy})
