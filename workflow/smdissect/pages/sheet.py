"""What the index shows first, each value computed once here from the run's figures (never recomputed in a page):
the device sheet, the peaks against the documented ceilings (from the roofline), each memory level's latency and
bandwidth, and how much to trust them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..analysis import checks, roofline
from ..core import archs
from ..core.tables import FIGURE_STATUSES, STATUS_MEANING
from . import evidence
from .markup import number

NOT_RECORDED = "not recorded"
ATTRIBUTE = "device_attributes"
LOAD_CLOCK = "SM clock under load (clock64 over %globaltimer)"
# Each memory level's latency figure (category memory): a dependent chase that hits the level.
LATENCY = {
    "shared": "shared-memory latency, 32-bit LDS chase (lane l on element l, no conflict)",
    "l1": "chase L1 latency (random)",
    "l2": "chase L2 latency (random)",
    "dram": "chase DRAM latency (random)",
}


@dataclass(frozen=True)
class Fact:
    """One line of the device sheet: the value as a person writes it (or 'not recorded'), where it comes from (or
    why it is missing), and the status of the figure it is ('' for a document or provenance)."""

    quantity: str
    value: str
    source: str
    status: str = ""


def _find(figures: pd.DataFrame, category: str, name: str) -> pd.Series | None:
    """The figure `name` of `category`, None where the run has none."""
    hit = figures[(figures["category"] == category) & (figures["figure"] == name)]
    return None if hit.empty else hit.iloc[0]


def _whole(value: float) -> str:
    """A value of four significant digits, whole numbers with thousands separators (1,980; 132; 139.8)."""
    return f"{value:,.0f}" if abs(value) >= 1000 or float(value).is_integer() else number(value)


def _binary(size: float) -> str:
    """A size in bytes in binary units: 60 MiB, 139.8 GiB, 228 KiB."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{int(size // scale) if size % scale == 0 else number(size / scale)} {unit}"
    return f"{int(size)} B"


def _figure_fact(
    quantity: str, f: pd.Series | None, show: Callable[[float], str], why: str, documented: str = ""
) -> Fact:
    """A sheet line from a figure (`show` writes its value), the datasheet's beside it; 'not recorded' with `why`."""
    if f is None:
        return Fact(quantity, NOT_RECORDED, why)
    text = show(float(f["value"]))
    return Fact(quantity, f"{text} ({documented})" if documented else text, f"{f['category']}: {f['figure']}",
                str(f["status"]))  # fmt: skip


def device(figures: pd.DataFrame) -> list[Fact]:
    """The device sheet: identity, SMs, clocks, memory, caches, power and software, each from the run's figures and
    provenance, with the datasheet's value beside it where archs records one."""
    first = figures.iloc[0]
    gpu, arch = str(first["gpu"]), str(first["arch"])
    model = archs.gpu_model(gpu)
    attr = {
        n: _find(figures, "memory", f"{ATTRIBUTE} {n}")
        for n in ("sm_count", "dram_capacity", "dram_bus_width", "memory_clock", "l2_capacity", "smem_per_sm")
    }
    no_attr = "the memory category's device_attributes case did not run"
    mem = attr["memory_clock"]
    sheet = "datasheet"
    facts = [
        Fact("GPU", gpu, "every row's provenance (CUDA device name)"),
        Fact("arch", arch, "every row's provenance (nvcc target)"),
        _figure_fact("SMs", attr["sm_count"], _whole, no_attr, f"{sheet}: {model.sms}" if model and model.sms else ""),
        Fact("base clock", NOT_RECORDED, _base_why(figures)),
        Fact("boost clock", f"{_whole(model.boost_mhz)} MHz", f"{sheet}: {model.name} (smdissect.core.archs)")
        if model and model.boost_mhz
        else Fact("boost clock", NOT_RECORDED, f"archs knows no boost clock of {gpu}"),
        *(
            _figure_fact(f"clock under {label} load", _find(figures, "power", f"power_{load} {LOAD_CLOCK}"),
                         lambda v: f"{_whole(v)} MHz", "the power category did not run")
            for load, label in (("fp32_ffma", "FFMA"), ("bf16_mma", "bf16 mma.sync"))
        ),
        _figure_fact("memory size", attr["dram_capacity"], _binary, no_attr,
                     f"{sheet}: {model.memory_gb:g} GB" if model and model.memory_gb else ""),
        _figure_fact("memory bus", attr["dram_bus_width"], lambda v: f"{_whole(v)}-bit" + (
            f", {_whole(mem['value'])} MHz memory clock" if mem is not None else ""), no_attr),
        _figure_fact("DRAM bandwidth (read)", _find(figures, "memory", "dram_read peak bandwidth"),
                     lambda v: f"{_whole(v)} GB/s", "the memory category's dram_read case did not run",
                     f"{sheet}: {_whole(model.dram_gbs)} GB/s" if model and model.dram_gbs else ""),
        _figure_fact("L2 cache", attr["l2_capacity"], _binary, no_attr,
                     f"{sheet}: {model.l2_mb:g} MB" if model and model.l2_mb else ""),
        _figure_fact("shared memory per SM", attr["smem_per_sm"], _binary, no_attr),
        Fact("L1 + shared memory per SM", NOT_RECORDED, _l1_why(figures)),
        _figure_fact("power limit", _find(figures, "power", "enforced power limit"), lambda v: f"{_whole(v)} W",
                     _power_why(figures), f"{sheet}: up to {_whole(model.tdp_w)} W" if model and model.tdp_w else ""),
        Fact("driver", str(first["driver"]), "every row's provenance (NVML)"),
        Fact("CUDA (driver API)", NOT_RECORDED, "the rows record the toolkit's version, not the CUDA version the "
             "driver supports"),
        Fact("CUDA toolkit", str(first["cuda"]), "every row's provenance (the nvcc that built the benchmarks)"),
    ]  # fmt: skip
    return facts


def _l1_why(figures: pd.DataFrame) -> str:
    """Why the combined L1 + shared array is not recorded, and what the run does know of it."""
    why = "no device attribute reports the combined L1 and shared-memory array"
    chase = _find(figures, "memory", "chase L1 capacity detected (random)")
    if chase is None:
        return why
    return f"{why}; the pointer chase hits L1 up to {_binary(chase['value'] * 1024)} ({chase['status']})"


def _base_why(figures: pd.DataFrame) -> str:
    """Why the base clock is not recorded, and the clock NVML gives applications by default where the run read it."""
    why = "NVML reports no base clock and archs records none"
    default = _find(figures, "power", "default applications SM clock")
    return f"{why}; NVML's default applications clock: {_whole(default['value'])} MHz" if default is not None else why


def _power_why(figures: pd.DataFrame) -> str:
    """Why the power limit is not recorded, and the highest board power the run saw."""
    why = "the power category's clock_limits case did not run"
    power = figures[
        (figures["category"] == "power") & (figures["unit"] == "W") & figures["figure"].str.contains(" power at ")
    ]
    return f"{why}; the highest board power of the power sweep: {_whole(power['value'].max())} W" if len(power) else why


def compute(roof: dict[str, Any]) -> pd.DataFrame:
    """The peaks of every compute ceiling: the measured rate per SM per cycle, TFLOPS (TOPS) at its clock, the
    documented rate and the share of it reached (per cycle, so the clock does not enter), and the status."""
    rows = []
    for c in roof["compute"]:
        m, d = c["measured"], c["documented"]
        per = "OP" if c["unit"] == "OP/s" else "FLOP"
        rows.append(
            {
                "ceiling": c["label"],
                "measured per SM per cycle": f"{_whole(m['per_cycle_per_sm'])} {per}" if m else NOT_RECORDED,
                "clock (MHz)": _whole(m["clock_mhz"]) if m else "",
                "at that clock": _rate(m["per_second"], c["unit"]) if m else "",
                "documented": _rate(d["per_second"], c["unit"]) if d else "none",
                "at (MHz)": _whole(d["clock_mhz"]) if d else "",
                "% of documented": _share(m, d, "per_cycle_per_sm"),
                "status": m["status"] if m else "",
            }
        )
    return pd.DataFrame(rows)


def levels(roof: dict[str, Any], figures: pd.DataFrame) -> pd.DataFrame:
    """Each memory level: its latency in cycles and in ns at the clock it was measured at, its bandwidth measured
    and documented, and the statuses of both."""
    rows = []
    for level in roof["memory"]:
        lat = _find(figures, "memory", LATENCY.get(level["name"], ""))
        m, d = level["measured"], level["documented"]
        ns = lat["value"] / lat["clock_mhz"] * 1000 if lat is not None and not pd.isna(lat["clock_mhz"]) else None
        rows.append(
            {
                "level": level["label"],
                "latency (cycles)": number(lat["value"]) if lat is not None else NOT_RECORDED,
                "latency (ns)": number(ns) if ns else "",
                "latency status": str(lat["status"]) if lat is not None else "",
                "bandwidth": _rate(m["per_second"], "B/s") if m else NOT_RECORDED,
                "documented": _rate(d["per_second"], "B/s") if d else "none",
                "% of documented": _share(m, d, "per_second"),
                "bandwidth status": m["status"] if m else "",
            }
        )
    return pd.DataFrame(rows)


def _rate(per_second: float, unit: str) -> str:
    """A whole-GPU rate as a person writes it: TFLOPS, TOPS for integer formats, GB/s for bytes."""
    if unit == "B/s":
        return f"{_whole(per_second / 1e9)} GB/s"
    return f"{_whole(per_second / 1e12)} {'TOPS' if unit == 'OP/s' else 'TFLOPS'}"


def _share(m: dict[str, Any] | None, d: dict[str, Any] | None, key: str) -> str:
    """Measured as a share of documented, '' where either lacks `key`."""
    if not m or not d or key not in m or key not in d:
        return ""
    return f"{100 * m[key] / d[key]:.1f}%"


def ceilings(roof: dict[str, Any]) -> pd.DataFrame:
    """Every ceiling of a roofline file as the roofline page lists it: measured beside documented, the share, where
    a compute ceiling meets the measured DRAM bandwidth, and the figure it comes from with its status."""
    dram = next((m["measured"] for m in roof["memory"] if m["name"] == "dram"), None)
    rows = []
    for kind, entries in (("compute", roof["compute"]), ("memory", roof["memory"])):
        for c in entries:
            m, d = c["measured"], c["documented"]
            ridge = roofline.ridge(m, dram) if kind == "compute" else None
            rows.append(
                {
                    "ceiling": c["label"],
                    "measured": _rate(m["per_second"], c["unit"]) if m else NOT_RECORDED,
                    "documented": _rate(d["per_second"], c["unit"]) if d else "none",
                    "% of documented": _share(m, d, "per_second"),
                    "meets measured DRAM at (FLOP/byte)": _whole(ridge) if ridge else "",
                    "figure": f"{m['category']}: {m['figure']}" if m else "",
                    "status": m["status"] if m else "",
                }
            )
    return pd.DataFrame(rows)


def trust(figures: pd.DataFrame) -> pd.DataFrame:
    """How many figures have each status and what the status means."""
    counts = evidence.status_counts(figures)
    return pd.DataFrame(
        [{"status": s, "figures": counts[s], "what it means": STATUS_MEANING[s]} for s in FIGURE_STATUSES]
    )


TOLERANCE = (
    f"A peak is verified at {checks.CEILING_SHARE['pipe']:.0%} of its documented ceiling or more "
    f"({checks.CEILING_SHARE['dram']:.0%} for DRAM) and contradicted above it by more than "
    f"{checks.BOUND_TOLERANCE:.0%}; a figure's samples may spread {checks.SPREAD:.0%} of its value; two methods "
    f"measuring the same work agree within {checks.SAME_WORK:.0%}."
)


@dataclass(frozen=True)
class Glance:
    """The index's first screen: the device sheet, the compute peaks and the memory levels."""

    device: list[Fact]
    compute: pd.DataFrame
    levels: pd.DataFrame


def glance(figures: pd.DataFrame, roof: dict[str, Any]) -> Glance | None:
    """The first screen of a run's figures and roofline, None for a run that measured nothing."""
    if figures.empty:
        return None
    return Glance(device(figures), compute(roof), levels(roof, figures))
