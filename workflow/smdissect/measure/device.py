"""What GPU is here: compute capability and CUDA order through cuda-python; clocks, throttle reasons and other
processes through NVML, always by UUID (NVML ignores CUDA_VISIBLE_DEVICES, CUDA indices obey it)."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..core.archs import ARCH_SPECIFIC, NCU_CHIPS
from ..core.errors import SmdissectError

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
        major, minor = self.compute_capability
        return NCU_CHIPS.get((major, minor), f"sm_{major}{minor}")


def nvml_uuid(raw: bytes) -> str:
    """A CUDA device UUID's 16 bytes as NVML spells it: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx."""
    h = raw.hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _driver() -> Any:
    """The initialised CUDA driver API and its device count, or a one-line reason why there is none."""
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
    return cu, count


def query(index: int = 0) -> Gpu | str:
    """The device at CUDA `index`, or a one-line reason why there is none usable."""
    found = _driver()
    if isinstance(found, str):
        return found
    cu, count = found
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
    return Gpu(index, name.split(b"\0")[0].decode(), nvml_uuid(bytes(uuid.bytes)), (major, minor), driver, sms)


def all_gpus() -> list[Gpu]:
    """Every visible device in CUDA order (none without a driver)."""
    found = _driver()
    return [] if isinstance(found, str) else [g for g in map(query, range(found[1])) if isinstance(g, Gpu)]


def uuids_like(index: int = 0) -> list[str | None] | str:
    """UUIDs of the visible devices in CUDA order (entry i is CUDA device i), None for a device of another model
    than device `index` (its results would belong in another folder); a one-line reason without a GPU."""
    found = _driver()
    if isinstance(found, str):
        return found
    gpus = all_gpus()
    if index >= len(gpus):
        raise SmdissectError(f"device {index} requested but only {len(gpus)} GPU(s) visible: set device in config")
    model = gpus[index]
    return [g.uuid if (g.name, g.compute_capability) == (model.name, model.compute_capability) else None for g in gpus]


def nvml_driver() -> str | None:
    """The driver version NVML reports, or None without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml.nvmlSystemGetDriverVersion()
    except Exception:
        return None


def _nvml(uuid: str) -> Any:
    """(pynvml, the NVML handle of the GPU with this UUID); raises where NVML or the GPU is not there."""
    import pynvml

    pynvml.nvmlInit()
    return pynvml, pynvml.nvmlDeviceGetHandleByUUID(uuid)


def _clock_mhz(uuid: str, clock: str) -> float:
    """A current clock (pynvml's NVML_CLOCK_* name) of the GPU with this UUID; NaN without NVML."""
    try:
        pynvml, handle = _nvml(uuid)
        return float(pynvml.nvmlDeviceGetClockInfo(handle, getattr(pynvml, clock)))
    except Exception:
        return math.nan


def sm_clock_mhz(uuid: str) -> float:
    """Current SM clock of the GPU with this UUID (NVML maps by UUID, not by CUDA index); NaN without NVML."""
    return _clock_mhz(uuid, "NVML_CLOCK_SM")


def mem_clock_mhz(uuid: str) -> float:
    """Current memory clock of the GPU with this UUID; NaN without NVML."""
    return _clock_mhz(uuid, "NVML_CLOCK_MEM")


@cache
def _reason_bits() -> dict[int, str]:
    """NVML's clock event (throttle) reason bits by name, from pynvml's own constants: 0x4 -> 'sw_power_cap'."""
    import pynvml

    bits: dict[int, str] = {}
    for prefix in ("nvmlClocksEventReason", "nvmlClocksThrottleReason"):  # the second has board_limit, reliability
        for attr in dir(pynvml):
            name = attr.removeprefix(prefix)
            if attr.startswith(prefix) and name not in ("All", "None", "UserDefinedClocks"):
                bits.setdefault(getattr(pynvml, attr), re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower())
    return bits


def throttle_names(mask: int) -> str:
    """NVML's clock event reason bitmask as comma-separated names ('gpu_idle,sw_power_cap'); '' for none."""
    names = [name for bit, name in sorted(_reason_bits().items()) if mask & bit]
    rest = mask & ~sum(_reason_bits())
    return ",".join(names + ([f"{rest:#x}"] if rest else []))


def throttle_reasons(uuid: str) -> str:
    """Why the GPU's clocks are below their maximum now (names as throttle_names), '' without NVML."""
    try:
        pynvml, handle = _nvml(uuid)
        return throttle_names(pynvml.nvmlDeviceGetCurrentClocksEventReasons(handle))
    except Exception:
        return ""


def other_processes(uuid: str, own: int | None = None) -> list[int]:
    """PIDs of the compute processes on the GPU other than `own` (default: this process); [] without NVML."""
    own = os.getpid() if own is None else own
    try:
        pynvml, handle = _nvml(uuid)
        return sorted({p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle)} - {own})
    except Exception:
        return []


def nvml_status(uuid: str) -> str:
    """'' where NVML answers for this GPU, else one line saying why not (what empty readings then mean)."""
    try:
        _nvml(uuid)
    except Exception as err:
        return f"NVML unavailable for {uuid} ({type(err).__name__}: {err}): clocks, throttle and processes unknown"
    return ""


def snapshot(uuid: str) -> dict[str, Any]:
    """The GPU's state now, recorded before and after each GPU job: clocks, throttle reasons, other processes."""
    return {
        "sm_clock_mhz": sm_clock_mhz(uuid),
        "mem_clock_mhz": mem_clock_mhz(uuid),
        "throttle": throttle_reasons(uuid),
        "processes": other_processes(uuid),
        "nvml": nvml_status(uuid),
    }


def counters_permitted(params: Path = NVIDIA_PARAMS, euid: int | None = None) -> str | None:
    """Why ncu will be refused the performance counters (ERR_NVGPUCTRPERM), or None if it should get them."""
    euid = os.geteuid() if euid is None else euid
    if euid == 0 or not params.exists():
        return None
    if re.search(r"^RmProfilingAdminOnly:\s*1\s*$", params.read_text(), flags=re.MULTILINE):
        return f"GPU performance counters are restricted to admins (ERR_NVGPUCTRPERM): {COUNTERS_FIX}"
    return None
