"""What GPU is here: compute capability through cuda-python, name, driver and clocks through NVML."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import SmdissectError

# Compute capabilities with an arch-specific ('a') target: their full feature set needs it.
ARCH_SPECIFIC = {(9, 0), (10, 0), (10, 1), (10, 3), (11, 0), (12, 0), (12, 1)}
NVIDIA_PARAMS = Path("/proc/driver/nvidia/params")
COUNTERS_FIX = (
    "run as root, or load the driver with NVreg_RestrictProfilingToAdminUsers=0 "
    "(see developer.nvidia.com/ERR_NVGPUCTRPERM)"
)


@dataclass(frozen=True)
class Gpu:
    """One CUDA device, as the pipeline names and records it."""

    index: int
    name: str
    uuid: str
    compute_capability: tuple[int, int]
    driver: str
    sm_count: int

    @property
    def arch(self) -> str:
        """The nvcc target for this device: sm_90a on an H200, sm_120a on an RTX PRO 5000."""
        major, minor = self.compute_capability
        return f"sm_{major}{minor}" + ("a" if (major, minor) in ARCH_SPECIFIC else "")

    @property
    def slug(self) -> str:
        """Folder name for results and reports: 'h200' for 'NVIDIA H200'."""
        name = re.sub(r"^nvidia\s+", "", self.name.strip(), flags=re.IGNORECASE)
        return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")

    @property
    def chip(self) -> str:
        """Nsight Compute's chip name for this compute capability (for `ncu --query-metrics --chip`)."""
        chips = {(9, 0): "gh100", (10, 0): "gb100", (10, 3): "gb110", (12, 0): "gb202", (12, 1): "gb20b"}
        major, minor = self.compute_capability
        return chips.get((major, minor), f"sm_{major}{minor}")


def _cuda_uuid(raw: bytes) -> str:
    h = raw.hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def query(index: int = 0) -> Gpu | str:
    """The device at CUDA `index`, or a one-line reason why there is none usable."""
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        return "cuda-python is not installed (pip install cuda-bindings)"
    try:
        (err,) = cu.cuInit(0)
    except Exception:  # the bindings raise when libcuda.so itself is missing
        return "no NVIDIA driver (libcuda.so cannot be loaded)"
    if err != cu.CUresult.CUDA_SUCCESS:
        return f"no usable GPU: cuInit failed with {err.name}"
    err, count = cu.cuDeviceGetCount()
    if err != cu.CUresult.CUDA_SUCCESS or count == 0:
        return "no CUDA device visible (check CUDA_VISIBLE_DEVICES and nvidia-smi)"
    if index >= count:
        raise SmdissectError(f"device {index} requested but only {count} GPU(s) visible: set device in config")
    _, dev = cu.cuDeviceGet(index)
    attr = cu.CUdevice_attribute
    _, major = cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    _, minor = cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
    _, sms = cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)
    _, name = cu.cuDeviceGetName(256, dev)
    _, uuid = cu.cuDeviceGetUuid(dev)
    _, version = cu.cuDriverGetVersion()
    driver = nvml_driver() or f"cuda-{version // 1000}.{version % 1000 // 10}"
    return Gpu(index, name.split(b"\0")[0].decode(), _cuda_uuid(bytes(uuid.bytes)), (major, minor), driver, sms)


def nvml_driver() -> str | None:
    """The driver version NVML reports, or None without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml.nvmlSystemGetDriverVersion()
    except Exception:
        return None


def sm_clock_mhz(uuid: str) -> float:
    """Current SM clock of the GPU with this UUID (NVML maps by UUID, not by CUDA index); NaN without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByUUID(uuid)
        return float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
    except Exception:
        return float("nan")


def counters_permitted(params: Path = NVIDIA_PARAMS, euid: int | None = None) -> str | None:
    """Why ncu will be refused the performance counters (ERR_NVGPUCTRPERM), or None if it should get them."""
    euid = os.geteuid() if euid is None else euid
    if euid == 0 or not params.exists():
        return None
    if re.search(r"^RmProfilingAdminOnly:\s*1\s*$", params.read_text(), flags=re.MULTILINE):
        return f"GPU performance counters are restricted to admins (ERR_NVGPUCTRPERM): {COUNTERS_FIX}"
    return None
