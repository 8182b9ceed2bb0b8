"""Compile one case family (.cu) for one or more archs with nvcc, and ask the binary for its kernels."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from ..core.errors import SmdissectError
from ..core.files import atomic_path, write_text
from . import protocol


def find_tool(tool: str, hint: str) -> str:
    """Absolute path of `tool`, or a one-line error with `hint` on how to get it."""
    path = shutil.which(tool)
    if path is None:
        raise SmdissectError(f"{tool} not found: {hint}")
    return path


def nvcc_version(nvcc: str = "nvcc") -> str:
    """The toolkit release, e.g. '13.0.88'; part of every build's rerun trigger."""
    exe = find_tool(nvcc, "install the CUDA toolkit or set nvcc: in config/config.yaml")
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout
    match = re.search(r"V(\d+\.\d+\.\d+)", out)
    if not match:
        raise SmdissectError(f"{exe} --version printed no version: is it really nvcc?")
    return match.group(1)


def known_archs(nvcc: str = "nvcc") -> list[str]:
    """The sm_XX targets this nvcc can compile for."""
    exe = find_tool(nvcc, "install the CUDA toolkit or set nvcc: in config/config.yaml")
    out = subprocess.run([exe, "--list-gpu-code"], capture_output=True, text=True, check=False).stdout
    return out.split()


# nvcc's -O is the host compiler's level (device code is optimized all the same: the SASS is byte-identical, a test
# checks): a binary that is only SASS-checked never runs its host code, so it is built at -O0 (the no-GPU run on 2
# cores: 1,811 s of CPU, from 2,043 s at -O3; a small family's compile about halves, CUTLASS's host code dominates).
SASS_ONLY = ["-O0"]


def merged_flags(configured: list[str], own: list[str]) -> list[str]:
    """The configured nvcc flags, then a family's own; a family's -O<level> (the host compiler's) replaces the
    configured one."""
    if any(f.startswith("-O") for f in own):
        configured = [f for f in configured if not f.startswith("-O")]
    return configured + own


def command(nvcc: str, source: Path, binary: Path, archs: list[str], include: Path, flags: list[str]) -> list[str]:
    """The nvcc command line: arch-specific SASS only (`-gencode arch=compute_XXa,code=sm_XXa` per arch)."""
    gencode = [f"-gencode=arch={arch.replace('sm_', 'compute_')},code={arch}" for arch in archs]
    return [nvcc, *flags, *gencode, "-I", str(include), "-o", str(binary), str(source)]


def compile_family(nvcc: str, source: Path, binary: Path, archs: list[str], include: Path, flags: list[str]) -> None:
    """Build `binary` for `archs` (one host compile for all); a compile error is one line naming the file and
    the first error. A Python family (a script speaking the protocol) is copied as the executable."""
    binary.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(binary) as tmp:
        if source.suffix == ".py":
            shutil.copyfile(source, tmp)
            Path(tmp).chmod(0o755)
            return
        proc = subprocess.run(command(nvcc, source, Path(tmp), archs, include, flags), capture_output=True, text=True)
        if proc.returncode != 0:
            errors = [ln for ln in proc.stderr.splitlines() if "error" in ln] or proc.stderr.splitlines()[-1:]
            where = ", ".join(archs)
            raise SmdissectError(f"nvcc failed on {source} for {where}: {errors[0] if errors else 'no output'}")
        Path(tmp).chmod(0o755)


def list_kernels(binary: Path) -> list[dict[str, Any]]:
    """The binary's own account of its cases and kernels (`--list`), which needs no GPU."""
    proc = subprocess.run([str(binary), "--list"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SmdissectError(f"{binary} --list failed: {proc.stderr.strip() or proc.returncode}")
    return protocol.read(proc.stdout, str(binary))


def copy_binary(binary: Path, copy: Path) -> None:
    """`binary` (its executable bit too) at `copy`, written whole or not at all."""
    copy.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(copy) as tmp:
        shutil.copy2(binary, tmp)


def write_listing(binary: Path, out: Path) -> None:
    """Save `--list` output as JSON next to the binary."""
    write_text(out, json.dumps(list_kernels(binary), indent=1))
