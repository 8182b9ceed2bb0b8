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
    """Compile one (arch, category, family) on first use, with its listing beside it."""
    out = tmp_path_factory.mktemp("family")

    @cache
    def compile_one(arch: str, category: str, family: str) -> Path:
        binary = out / arch / category / family
        flags = FLAGS + catalog.family_flags(ROOT / "kernels", category, family)
        build.compile_family("nvcc", ROOT / "kernels" / category / f"{family}.cu", binary, arch,
                             ROOT / "kernels" / "common", flags)  # fmt: skip
        build.write_listing(binary, binary.with_suffix(".json"))
        return binary

    return compile_one


@pytest.fixture(scope="session")
def built(compiled: Callable[[str, str, str], Path]) -> dict[tuple[str, str, str], Path]:
    """Every (arch, category, family) binary, compiled for real with nvcc (once per session), two at a time."""
    keys = [(arch, cat, fam) for arch in ARCHS for cat in catalog.categories(ROOT / "kernels")
            for fam in catalog.families(catalog.load(ROOT / "kernels", cat))]  # fmt: skip
    with ThreadPoolExecutor(2) as pool:
        return dict(zip(keys, pool.map(lambda key: compiled(*key), keys), strict=True))


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run a command and capture its output as text."""
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True)
