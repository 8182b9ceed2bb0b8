"""Shared fixtures: the repo root, real builds of every case family, and the GPU marker's skip reason."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from smdissect import build, catalog, device  # noqa: E402

ARCHS = ["sm_90a", "sm_120a"]
FLAGS = ["-O3", "-lineinfo", "-std=c++17"]
FIXTURES = ROOT / "tests" / "fixtures"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip GPU tests where there is no GPU, saying why (pytest -ra prints it)."""
    gpu = device.query(0)
    if isinstance(gpu, str):
        skip = pytest.mark.skip(reason=f"needs an NVIDIA GPU: {gpu}")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str, str], Path]:
    """The binary of one (category, family) for every arch in ARCHS (one host compile, one listing beside it),
    built on first use; `arch` only checks that it is one of ARCHS: pass it on to `sass.dump`."""
    out = tmp_path_factory.mktemp("family")

    @cache
    def compile_family(category: str, family: str) -> Path:
        binary = out / category / family
        flags = FLAGS + catalog.family_flags(ROOT / "kernels", category, family)
        build.compile_family("nvcc", catalog.family_source(ROOT / "kernels", category, family), binary, ARCHS,
                             ROOT / "kernels" / "common", flags)  # fmt: skip
        build.write_listing(binary, binary.with_suffix(".json"))
        return binary

    def compile_one(arch: str, category: str, family: str) -> Path:
        assert arch in ARCHS, f"{arch} is not built by the tests (ARCHS: {ARCHS})"
        return compile_family(category, family)

    return compile_one


@pytest.fixture(scope="session")
def built(compiled: Callable[[str, str, str], Path]) -> dict[tuple[str, str, str], Path]:
    """Every (arch, category, family) binary, compiled for real with nvcc (once per session), two at a time."""
    families = [(cat, fam) for cat in catalog.categories(ROOT / "kernels")
                for fam in catalog.families(catalog.load(ROOT / "kernels", cat))]  # fmt: skip
    with ThreadPoolExecutor(2) as pool:
        binaries = dict(zip(families, pool.map(lambda key: compiled(ARCHS[0], *key), families), strict=True))
    return {(arch, *key): binary for arch in ARCHS for key, binary in binaries.items()}


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run a command and capture its output as text."""
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True)
