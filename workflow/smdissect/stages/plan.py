"""What one `snakemake` invocation will do here: config checked, tools found, GPU asked, stages chosen."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from ..core import catalog, config
from ..core.errors import SmdissectError
from ..measure import build, device, ncu

GPU_STAGES = ("run", "profile", "parse", "crossval", "figures")
STATIC = "static"  # results/static/ and reports/static/: what needs no GPU


@dataclass
class Plan:
    """Everything the Snakefile needs to lay out the DAG."""

    settings: dict[str, Any]
    nvcc_version: str
    families: dict[str, list[str]]
    profiled: dict[str, list[str]]
    static_archs: list[str]
    root: Path
    gpu: device.Gpu | None = None
    run_arch: str | None = None
    skipped: dict[str, str] = field(default_factory=dict)
    devices: dict[str, device.Gpu] = field(default_factory=dict)  # results folder -> its GPU (device: all)
    ncu_version: str = ""  # asked once here, not by every profile job

    @property
    def gpu_name(self) -> str:
        """results/<gpu_name>/ and reports/<gpu_name>/ of device 0 (or the only device)."""
        if self.gpu is None:
            return STATIC
        return self.gpu.slug if self.settings["gpu"] == "auto" else self.settings["gpu"]

    @property
    def folders(self) -> list[str]:
        """Every results/<gpu>/ folder this run fills: one per GPU with device: all (or per cluster GPU model),
        else one."""
        return list(self.arch_of) or [self.gpu_name]

    @property
    def arch_of(self) -> dict[str, str]:
        """Results folder this run fills -> the arch of its GPU stages: the GPU(s) here, else the cluster GPU models
        of `cluster_gpus` (none: no GPU stages)."""
        if self.run_arch:
            return {folder: self.run_arch for folder in (list(self.devices) or [self.gpu_name])}
        return dict(self.settings.get("cluster_gpus", {}))

    def profiled_in(self, category: str, arch: str) -> list[str]:
        """The families of a category ncu profiles on `arch` (a family of static-only cases there has none)."""
        kernels = self.root / "kernels"
        return [f for f in self.profiled[category] if _runs_any(kernels, category, f, arch)]

    def references(self, category: str) -> dict[str, list[str]]:
        """The configured families, by category, whose figures a category's checks compare against (`built_from`,
        `same_as`)."""
        refs = catalog.referenced_families(self.root / "kernels", category)
        found = {c: [f for f in fams if f in self.families.get(c, [])] for c, fams in refs.items()}
        return {c: fams for c, fams in found.items() if fams}

    def device_arg(self, folder: str) -> str:
        """The --device of a GPU job writing results/<folder>/: its GPU's CUDA index, or the configured value."""
        gpu = self.devices.get(folder)
        return str(gpu.index if gpu else self.settings["device"])

    @property
    def run_archs(self) -> list[str]:
        """The archs a GPU of this run executes (its GPU stages' archs): each built alone, first."""
        return sorted(set(self.arch_of.values()))

    @property
    def archs(self) -> list[str]:
        """Every arch that is built and SASS-checked."""
        return sorted(set(self.static_archs) | set(self.run_archs))

    @property
    def static_only(self) -> list[str]:
        """The archs no GPU of this run executes: SASS-checked only, all built by one nvcc call per family (the host
        code compiled once, at -O0)."""
        return [a for a in self.archs if a not in self.run_archs]

    def flags(self, category: str, family: str, arch: str) -> str:
        """The nvcc flags of one family: the configured ones, then the family's own from its manifest; a build no
        GPU of this run executes (SASS-checked only) compiles its host code at -O0 (build.SASS_ONLY)."""
        flags = build.merged_flags(
            self.settings["nvcc_flags"], catalog.family_flags(self.root / "kernels", category, family)
        )
        return " ".join(flags if arch in self.run_archs else build.merged_flags(flags, build.SASS_ONLY))

    def source(self, category: str, family: str) -> str:
        """The file a family is built from (kernels/<category>/<family>.cu, or .py for a Python family)."""
        return str(catalog.family_source(self.root / "kernels", category, family).relative_to(self.root))

    def patch_targets(self, category: str, family: str) -> list[str]:
        """The source a family's patched cubins are built from (none for most families)."""
        target = catalog.family_settings(self.root / "kernels", category, family).get("patched")
        return [f"kernels/{category}/{target}"] if target else []

    def provenance(self, folder: str | None = None) -> dict[str, str]:
        """Static facts for the reports of results/<folder>/ (nothing that changes between two runs, so no
        needless reruns)."""
        facts = {"cuda": self.nvcc_version, "archs": ", ".join(self.archs)}
        if folder in self.arch_of:
            facts["arch"] = self.arch_of[folder]
        gpu = self.devices.get(folder or "", self.gpu)
        if gpu:
            facts |= {
                "gpu": gpu.name,
                "gpu_uuid": gpu.uuid,
                "driver": gpu.driver,
                "sm_count": str(gpu.sm_count),
                "device": str(gpu.index),
                "arch": self.run_arch or "",
            }
        return facts


def make(raw_config: dict[str, Any], root: Path) -> Plan:
    """Check everything that can be checked before any GPU work; fail with one line otherwise."""
    settings = config.validate(raw_config, root / "config" / "schema.yaml")
    kernels = root / "kernels"
    families = {c: sorted(catalog.families(catalog.load(kernels, c))) for c in settings["categories"]}
    profiled = {c: [f for f in fs if catalog.family_settings(kernels, c, f)["profile"]] for c, fs in families.items()}
    nvcc_version = build.nvcc_version(settings["nvcc"])
    known = build.known_archs(settings["nvcc"])
    for arch in settings["static_archs"] + ([settings["arch"]] if settings["arch"] != "auto" else []):
        if arch.rstrip("af") not in known:
            raise SmdissectError(f"arch {arch} is unknown to nvcc {nvcc_version} (known: {', '.join(known)})")
    plan = Plan(settings, nvcc_version, families, profiled, list(settings["static_archs"]), root)
    gpu = device.query(settings["device"] if isinstance(settings["device"], int) else 0)
    if isinstance(gpu, str):
        if not settings["cluster_gpus"]:  # else the GPU stages run as cluster jobs, on a GPU of each folder's model
            plan.skipped = {stage: f"no GPU: {gpu}" for stage in GPU_STAGES}
        return plan
    plan.gpu, plan.run_arch = gpu, gpu.arch if settings["arch"] == "auto" else settings["arch"]
    if settings["device"] == "all":
        plan.devices = {f"{plan.gpu_name}-gpu{g.index}": g for g in device.all_gpus() if g.arch == gpu.arch}
    if catalog.sm_version(plan.run_arch) > catalog.sm_version(gpu.arch):
        raise SmdissectError(f"arch {plan.run_arch} cannot run on {gpu.name} ({gpu.arch}): set arch: auto")
    exe = build.find_tool(settings["ncu"], "install Nsight Compute or set ncu: in config/config.yaml")
    plan.ncu_version = ncu.version(exe)
    reason = device.counters_permitted()
    if reason:
        raise SmdissectError(reason)
    return plan


@cache
def _runs_any(kernels: Path, category: str, family: str, arch: str) -> bool:
    """Whether any case of a family runs on `arch` (a family of static-only cases there has nothing to profile)."""
    cases = catalog.families(catalog.load(kernels, category))[family]
    return any(case.unsupported(arch) is None for case in cases)


def announce(plan: Plan) -> None:
    """Say on stderr, once, what runs and what is skipped and why."""
    cats = ", ".join(plan.families)
    if plan.gpu:
        where = f"{len(plan.devices)} GPUs ({', '.join(plan.devices)})" if plan.devices else plan.gpu.name
        print(f"smdissect: {where} ({plan.run_arch}): {cats}; SASS for {', '.join(plan.archs)}", file=sys.stderr)
    elif plan.arch_of:
        models = ", ".join(f"{folder} ({arch})" for folder, arch in plan.arch_of.items())
        print(f"smdissect: no GPU here; GPU jobs for the cluster's {models}: {cats}", file=sys.stderr)
    else:
        reason = next(iter(plan.skipped.values()))
        print(
            f"smdissect: {reason}; building and SASS-checking {', '.join(plan.archs)} for {cats}; "
            f"skipped: {', '.join(plan.skipped)}",
            file=sys.stderr,
        )
