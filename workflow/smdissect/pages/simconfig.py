"""A GPGPU-Sim / Accel-Sim configuration from a model file: each option the run measures written with the field,
figures and status it came from, each one it cannot measure named in a comment; and its diff against the config
Accel-Sim publishes (reference/accelsim/), with the side the evidence supports."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..analysis import model
from ..core import archs, catalog, tables
from ..core.errors import SmdissectError
from ..core.files import write_text
from .markup import deftable, document, empty, fold, navigation, sections, table

GPGPUSIM, TRACE = "gpgpusim.config", "trace.config"
ACCELSIM = "reference/accelsim"  # Accel-Sim's published Hopper configs, with their source in each file's header


@dataclass(frozen=True)
class Option:
    """One simulator option: its file, the model fields it is written from, how their values make its value (each
    rounded to an integer), and what the run lacks where it cannot write it."""

    file: str
    name: str
    fields: tuple[str, ...]
    value: Callable[[list[float]], list[float]] = lambda v: v
    lacks: str = ""
    sep: str = ","

    def text(self, values: list[float]) -> str:
        """The option's value as the simulator reads it: integers joined by `sep`."""
        return self.sep.join(str(round(v)) for v in self.value(values))


def _intervals(prefix: str) -> tuple[str, str]:
    """An instruction's (latency, issue interval) fields."""
    return f"instructions.{prefix}.latency", f"instructions.{prefix}.throughput"


# The options written from the model, in the order the files list them; `lacks` names what no case measures.
OPTIONS: tuple[Option, ...] = (
    Option(GPGPUSIM, "-gpgpu_n_clusters", ("topology.sm_count",)),
    Option(GPGPUSIM, "-gpgpu_n_cores_per_cluster", (), lacks="the simulator's grouping of SMs, no quantity of the GPU"),
    Option(
        GPGPUSIM,
        "-gpgpu_clock_domains",
        (),
        lacks="no case measures the interconnect, L2 and DRAM clocks (the core clock is clock.boost_mhz)",
    ),
    Option(GPGPUSIM, "-gpgpu_shader_registers", ("registers.per_sm_32bit",)),
    Option(
        GPGPUSIM,
        "-gpgpu_shader_core_pipeline",
        ("topology.max_threads_per_sm",),
        lambda v: [v[0], archs.WARP],
        sep=":",
    ),
    Option(GPGPUSIM, "-gpgpu_shader_cta", ("topology.max_blocks_per_sm",)),
    Option(GPGPUSIM, "-gpgpu_num_sched_per_core", ("topology.subcores_per_sm",)),
    Option(GPGPUSIM, "-gpgpu_shmem_num_banks", ("shared_memory.banks",)),
    Option(GPGPUSIM, "-gpgpu_unified_l1d_size", ("l1_cache.capacity_kb",)),
    Option(GPGPUSIM, "-gpgpu_cache:dl1", (), lacks="no case measures the L1's sets, line size and associativity"),
    Option(GPGPUSIM, "-gpgpu_l1_latency", ("l1_cache.latency_cyc",)),
    Option(GPGPUSIM, "-gpgpu_shmem_size", ("shared_memory.capacity_per_sm_kb",), lambda v: [v[0] * 1024]),
    Option(GPGPUSIM, "-gpgpu_shmem_sizeDefault", ("shared_memory.capacity_per_sm_kb",), lambda v: [v[0] * 1024]),
    Option(GPGPUSIM, "-gpgpu_shmem_per_block", ("shared_memory.usable_per_block_kb",), lambda v: [v[0] * 1024]),
    Option(GPGPUSIM, "-gpgpu_smem_latency", ("shared_memory.latency_cyc",)),
    Option(
        GPGPUSIM,
        "-gpgpu_cache:dl2",
        (),
        lacks="no case measures the L2's sets, line size and associativity per sub-partition",
    ),
    Option(
        GPGPUSIM,
        "-gpgpu_l2_rop_latency",
        (),
        lacks="no case measures the ROP stage alone: the run measures the whole L2 hit (l2_cache.latency_cyc)",
    ),
    Option(
        GPGPUSIM,
        "-dram_latency",
        (),
        lacks="no case measures the DRAM stage alone: the run measures the whole miss (dram.latency_cyc)",
    ),
    Option(GPGPUSIM, "-gpgpu_n_mem", ("dram.controllers",)),
    Option(
        GPGPUSIM,
        "-gpgpu_dram_buswidth",
        (),
        lacks="no case measures the bus width of one channel (dram.bus_width_bits is the sum)",
    ),
    Option(
        GPGPUSIM,
        "-gpgpu_kernel_launch_latency",
        ("kernel_launch.warm_gpu_us", "clock.boost_mhz"),
        lambda v: [v[0] * v[1]],
    ),
    Option(TRACE, "-trace_opcode_latency_initiation_int", _intervals("integer.IADD3")),
    Option(TRACE, "-trace_opcode_latency_initiation_sp", _intervals("floating_point.FFMA")),
    Option(TRACE, "-trace_opcode_latency_initiation_dp", _intervals("floating_point.DADD")),
    Option(TRACE, "-trace_opcode_latency_initiation_sfu", _intervals("special_function.MUFU_RCP")),
    Option(TRACE, "-trace_opcode_latency_initiation_tensor", _intervals("tensor_core.HMMA_16816")),
    Option(
        TRACE,
        "-trace_opcode_latency_initiation_spec_op_1",
        (),
        lacks="the appendix has no branch field, and control/branch_uniform gives what a branch adds to a dependent "
        "step, not the issue interval this option takes (unit 1: BRA)",
    ),
    Option(
        TRACE,
        "-trace_opcode_latency_initiation_spec_op_2",
        (),
        lacks="no case measures a texture fetch's latency (unit 2: TEX)",
    ),
    Option(TRACE, "-trace_opcode_latency_initiation_spec_op_3", _intervals("tensor_core.HMMA_16816")),
    Option(
        TRACE,
        "-trace_opcode_latency_initiation_spec_op_4",
        (),
        lacks="the appendix has no field for the uniform datapath (unit 4: UDP)",
    ),
)


def _params(option: Option, params: dict[str, dict[str, Any]]) -> list[dict[str, Any]] | str:
    """The parameters an option is written from, or why it cannot be written."""
    if not option.fields:
        return option.lacks
    absent = [f for f in option.fields if params[f]["value"] is None]
    if absent:
        return "; ".join(f"{f} {params[f]['status']} ({params[f]['reason']})" for f in absent)
    return [params[f] for f in option.fields]


def _source(field: str, p: dict[str, Any]) -> str:
    """'field = value unit (status): figure, figure' as a config comment names it."""
    figures = ", ".join(dict.fromkeys(f"{f['category']}/{f['figure']}" for f in p["evidence"]["figures"]))
    return f"{field} = {p['value']:.6g} {p['unit']} ({p['status']}): {figures}"


def render(m: dict[str, Any], file: str) -> str:
    """One config file of the model: every option of that file, written where the run measures it."""
    params = model.parameters(m)
    gpu = m["gpu"]
    lines = [
        f"# {file} for the {gpu['name']} ({gpu['arch']}), written by `smdissect simconfig` from model.json",
        f"# schema {m['schema']}; runs {', '.join(m['provenance']['runs'])}",
        "# Every option below is written from measured fields and names them, their figures and status (values",
        "# rounded to the integers the simulator reads); an option the run cannot measure is a comment saying why.",
        "",
    ]
    for option in (o for o in OPTIONS if o.file == file):
        got = _params(option, params)
        if isinstance(got, str):
            lines.append(f"# {option.name}: not measured: {got}")
            continue
        lines.append(f"{option.name} {option.text([p['value'] for p in got])}")
        lines += [f"#   {_source(f, p)}" for f, p in zip(option.fields, got, strict=True)]
    return "\n".join(lines) + "\n"


def read_config(text: str) -> dict[str, str]:
    """A GPGPU-Sim config's options: name -> value as written (comments and blank lines dropped)."""
    out = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-"):
            name, _, value = line.partition(" ")
            out[name] = value.strip()
    return out


def _numbers(value: str) -> list[float]:
    """The numbers of an option's value ('4,2' -> [4, 2]; '2048:32' -> [2048, 32])."""
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", value)]


def _supported(ours: list[dict[str, Any]] | str, same: bool) -> str:
    """Which side of a difference the evidence supports: a measurement with an independent or counter check over a
    published value carried without evidence."""
    if isinstance(ours, str):
        return "Accel-Sim's: nothing measured here"
    worst = tables.worst_status(p["status"] for p in ours)
    if same:
        return f"both agree (smdissect {worst})"
    if worst in ("verified", "consistent"):
        return f"smdissect's: measured, {worst}; Accel-Sim's carries no measurement"
    return f"neither: smdissect's is {worst}, Accel-Sim's carries no measurement"


def diff(m: dict[str, Any], reference: dict[str, str]) -> pd.DataFrame:
    """Every option of OPTIONS: smdissect's value (or why none), Accel-Sim's, their ratio and who the evidence
    supports."""
    params = model.parameters(m)
    rows = []
    for option in OPTIONS:
        got = _params(option, params)
        mine = option.text([p["value"] for p in got]) if not isinstance(got, str) else ""
        theirs = reference.get(option.name, "")
        a, b = _numbers(mine), _numbers(theirs)
        ratios = [x / y if y else math.nan for x, y in zip(a, b, strict=False)] if a and b else []
        rows.append(
            {
                "option": option.name,
                "file": option.file,
                "smdissect": mine or "not measured",
                "accel-sim": theirs or "not set",
                "ratio": ", ".join(f"{r:.3g}" for r in ratios),
                "fields": ", ".join(option.fields) if not isinstance(got, str) else got,
                "status": ", ".join(dict.fromkeys(p["status"] for p in got)) if not isinstance(got, str) else "",
                "evidence supports": _supported(got, bool(a) and a == b)
                if theirs
                else "smdissect's: Accel-Sim sets none",
            }
        )
    return pd.DataFrame(rows)


def reference_configs(kernels: Path) -> dict[str, tuple[Path, str]]:
    """Accel-Sim's carried config of each file: its path and text."""
    folder = kernels.parent / ACCELSIM
    found = {f: folder / f"SM90_H100.{f}" for f in (GPGPUSIM, TRACE)}
    missing = [str(p) for p in found.values() if not p.exists()]
    if missing:
        raise SmdissectError(f"{', '.join(missing)} not found: point --kernels at the checkout's kernels/ folder")
    return {f: (p, p.read_text()) for f, p in found.items()}


def page(m: dict[str, Any], rows: pd.DataFrame, sources: dict[str, tuple[Path, str]], categories: list[str]) -> str:
    """The diff page: what differs, by how much, and which side the evidence supports; `categories` for the
    navigation every page carries."""
    title = f"smdissect: {m['gpu']['name']} simulator config against Accel-Sim's SM90_H100"
    head = deftable(
        {
            "smdissect": f"{m['gpu']['name']} ({m['gpu']['arch']}), model {m['schema']}",
            "Accel-Sim": "; ".join(f"{p.name}: {_header(text)}" for p, text in sources.values()),
            "options": str(len(rows)),
            "measured here": str(int((rows["smdissect"] != "not measured").sum())),
        }
    )
    note = (
        "<p>Accel-Sim publishes no H200 config; its SM90_H100 config (H100 SXM5, the same GH100 die and SM count, "
        "another memory) is the closest. Ratio = smdissect / Accel-Sim, per number of the option. Each value here "
        "comes from the figures its fields name, with their status; Accel-Sim's carry no measurement of their own "
        "(the file says its base was V100's, modified).</p>"
    )
    differ = rows[(rows["smdissect"] != rows["accel-sim"]) & (rows["smdissect"] != "not measured")]
    parts = [
        ("Measured and different", table(differ) if len(differ) else empty("every measured option equals Accel-Sim's")),
        ("Every option", fold(f"{len(rows)} options", table(rows))),
    ]
    body = f"<h1>{html.escape(title)}</h1>{head}{note}" + sections(parts)
    return document(title, body, navigation(categories, "gpgpusim-diff"))


def _header(text: str) -> str:
    """The source line a carried config starts with."""
    return next((line.lstrip("# ") for line in text.splitlines() if line.startswith("# source:")), "no source line")


def write(model_path: Path, out: Path, kernels: Path) -> None:
    """Write gpgpusim.config and trace.config beside each other in `out` (a folder) and the diff page against
    Accel-Sim's, gpgpusim-diff.html."""
    m = model.read(model_path)
    sources = reference_configs(kernels)
    reference = {k: v for _, text in sources.values() for k, v in read_config(text).items()}
    for file in (GPGPUSIM, TRACE):
        write_text(out / file, render(m, file))
    write_text(out / "gpgpusim-diff.html", page(m, diff(m, reference), sources, catalog.categories(kernels)))
