"""The device's reports checked against published values: each device attribute against the product's datasheet row,
shared memory per SM against the programming guide, and smem_capacity's largest block against the device's report."""

from __future__ import annotations

from ....core import archs
from ...figure_model import REFERENCE, Check, Figure
from .device import L1_SHARED_KB, Device

SMEM_RESERVED = 1024  # bytes of shared memory the runtime keeps per block from CC 8.0 on (ReservedSharedMemoryPerBlock)
DATASHEET = 0.02  # a datasheet rounds its L2 size and DRAM bandwidth to 2-3 significant figures (4.8 TB/s)
DRAM_RESERVED = 0.03  # the DRAM a device reports is its datasheet's less what the driver keeps (H200: 0.9% less)
# device_attributes metric -> the archs.GpuModel field its datasheet check reads (the two DRAM ones: the bandwidth)
SHEET = {
    "sm_count": "sms",
    "dram_capacity": "memory_gb",
    "l2_capacity": "l2_mb",
    "memory_clock": "dram_gbs",
    "dram_bus_width": "dram_gbs",
}


def check_reports(generic: list[Figure], device: Device) -> None:
    """Give the generic figures the device's report checks, once however often they are derived: each device attribute
    its datasheet check, smem_capacity its shared memory per SM (figures.compute adds the generic checks after them)."""
    for f in generic:
        if f.case == "device_attributes":
            mine = datasheet_checks(f, device)
        elif f.case == "smem_capacity" and f.metric == "capacity_per_block":
            mine = smem_check(f, device)
        else:
            continue
        f.checks = [*mine, *(c for c in f.checks if c not in mine)]


def smem_check(figure: Figure, device: Device) -> list[Check]:
    """smem_capacity's largest block against the device's shared memory per SM less the runtime's per-block reserve."""
    per_sm = device.attributes.get("smem_per_sm")
    if per_sm is None:
        return [Check("device size", "n/a", "device_attributes not measured in this run", evidence=REFERENCE)]
    short = per_sm - figure.value
    detail = (
        f"{figure.value:,.0f} B launched, {short:,.0f} B under the device's smem_per_sm "
        f"(cudaDevAttrMaxSharedMemoryPerMultiprocessor) {per_sm:,.0f} B; tolerance: 0 to the {SMEM_RESERVED:,} B "
        "the runtime keeps per block (cudaDevAttrReservedSharedMemoryPerBlock, CC 8.0 on)"
    )
    verdict = "agree" if 0 <= short <= SMEM_RESERVED else "disagree"
    return [Check("device size", verdict, detail, evidence=REFERENCE)]


def datasheet_checks(figure: Figure, device: Device) -> list[Check]:
    """A device attribute against the product's datasheet row (archs.MODELS), shared memory per SM against the
    programming guide: agreement within the stated tolerance is a documented value for this card."""
    if figure.metric == "smem_per_sm":
        return [_documented_smem(figure.value, device.arch)]
    if figure.metric not in SHEET:
        return []
    model = archs.gpu_model(device.gpu)
    if model is None or getattr(model, SHEET[figure.metric]) is None:
        why = f"archs.MODELS gives no {SHEET[figure.metric]} for {device.gpu}"
        return [Check("datasheet", "n/a", why, evidence=REFERENCE)]
    if figure.metric == "sm_count":
        verdict = "agree" if figure.value == model.sms else "disagree"
        detail = f"{figure.value:g} SMs vs the {model.name} datasheet's {model.sms} (exact)"
        return [Check("datasheet", verdict, detail, REFERENCE)]
    if figure.metric == "dram_capacity":
        return [_dram_capacity(figure.value, model)]
    if figure.metric == "l2_capacity":
        return [_l2_capacity(figure.value, model)]
    return [_dram_bandwidth(device.attributes, model)]


def _documented_smem(value: float, arch: str) -> Check:
    """The largest shared-memory carveout per SM against the programming guide's for the arch."""
    documented = L1_SHARED_KB.get(archs.arch_version(arch) or -1)
    if documented is None:
        return Check("documented", "n/a", f"no documented shared-memory carveout for {arch}", evidence=REFERENCE)
    verdict = "agree" if value == documented[1] * 1024 else "disagree"
    detail = (
        f"{value:,.0f} B vs the largest carveout the CUDA C++ Programming Guide gives {arch}, {documented[1]} KB "
        f"({documented[1] * 1024:,} B) of its {documented[0]} KB L1+shared (exact)"
    )
    return Check("documented", verdict, detail, REFERENCE)


def _l2_capacity(value: float, model: archs.GpuModel) -> Check:
    """The L2 the device reports against its product row's MB, which for a cache are MiB."""
    off = value / (model.l2_mb * 2**20) - 1
    verdict = "agree" if abs(off) <= DATASHEET else "disagree"
    detail = (
        f"{value / 2**20:.4g} MiB vs the {model.name} row's {model.l2_mb:g} MB (a cache's MB is MiB) "
        f"({off:+.1%}, tolerance {DATASHEET:.0%})"
    )
    return Check("datasheet", verdict, detail, REFERENCE)


def _dram_capacity(value: float, model: archs.GpuModel) -> Check:
    """The DRAM the device reports against its datasheet's GB, which are GiB: a card cannot report more than it has,
    and the driver keeps up to DRAM_RESERVED of it."""
    sheet = model.memory_gb * 2**30
    ratio = value / sheet
    decimal = "; as 1e9 B the card would report more than it has" if value > model.memory_gb * 1e9 else ""
    detail = (
        f"{value / 2**30:.4g} GiB ({value / 1e9:.4g}e9 B) vs the {model.name} datasheet's {model.memory_gb:g} GB read "
        f"as GiB, {sheet / 1e9:.4g}e9 B ({ratio - 1:+.2%}{decimal}): tolerance 0 to -{DRAM_RESERVED:.0%}, what the "
        "driver keeps"
    )
    verdict = "disagree" if ratio > 1 else "agree" if ratio >= 1 - DRAM_RESERVED else "n/a"
    return Check("datasheet", verdict, detail, REFERENCE)


def _dram_bandwidth(attributes: dict[str, float], model: archs.GpuModel) -> Check:
    """2 x memory clock x bus width, the bandwidth the attributes give, against the datasheet's DRAM bandwidth."""
    clock, width = attributes.get("memory_clock"), attributes.get("dram_bus_width")
    if not clock or not width:
        return Check("datasheet", "n/a", "memory_clock or dram_bus_width not measured in this run", evidence=REFERENCE)
    gbs = 2 * clock * 1e6 * width / 8 / 1e9
    off = gbs / model.dram_gbs - 1
    verdict = "agree" if abs(off) <= DATASHEET else "disagree"
    detail = (
        f"2 x memory_clock {clock:g} MHz x dram_bus_width {width:g} bit / 8 = {gbs:.5g} GB/s vs the {model.name} "
        f"datasheet's {model.dram_gbs:g} GB/s ({off:+.1%}, tolerance {DATASHEET:.0%})"
    )
    return Check("datasheet", verdict, detail, REFERENCE)
