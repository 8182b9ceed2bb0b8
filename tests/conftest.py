"""Pytest's hooks and the session's fixtures: the GPU marker's skip reason, the SASS dumped once per binary, and real
builds of every case family (the helpers the tests share are in helpers.py)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import BUILD_ARCHS, FLAGS, ROOT
from smdissect.core import catalog
from smdissect.core.files import atomic_path
from smdissect.measure import build, device, sass

BUILDS = ("compiled", "built")  # the fixtures that need nvcc's builds


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip GPU tests where there is no GPU, saying why (pytest -ra prints it); run the modules whose tests need family
    builds last, so that the others run while the builds go on in the background (Builds)."""
    gpu = device.query(0)
    if isinstance(gpu, str):
        skip = pytest.mark.skip(reason=f"needs an NVIDIA GPU: {gpu}")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
    building = {getattr(item, "module", None) for item in items if set(BUILDS) & set(getattr(item, "fixturenames", ()))}
    # whole modules move, so that their module fixtures are set up once
    items.sort(key=lambda item: getattr(item, "module", None) in building)


@pytest.fixture(scope="session", autouse=True)
def sass_once(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Dump each binary's SASS for an arch once per session (a family's is 4-30 MB and takes seconds; the SASS
    tests of the build, of each category and of the pipeline's own sass stage all read it): later calls read the
    saved text. A binary rebuilt (another mtime or size) is dumped again."""
    folder, dump = tmp_path_factory.mktemp("sass"), sass.dump

    def cached(binary: Path, arch: str) -> str:
        stat = Path(binary).stat()
        key = hashlib.sha1(f"{Path(binary).resolve()}|{stat.st_mtime_ns}|{stat.st_size}|{arch}".encode()).hexdigest()
        saved = folder / f"{key}.sass"
        if saved.exists():
            return saved.read_text()
        text = dump(binary, arch)
        with atomic_path(saved) as tmp:
            Path(tmp).write_text(text)
        return text

    sass.dump = cached
    yield
    sass.dump = dump


class Builds:
    """The binary of each (category, family) for every arch in BUILD_ARCHS (one host compile, its listing beside it),
    and its SASS dumped for each: two at a time in the background, each once per session."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.pool = folder, ThreadPoolExecutor(2)
        self.jobs: dict[tuple[str, str], Future[Path]] = {}
        self.lock = threading.Lock()

    def start(self, category: str, family: str) -> Future[Path]:
        """The build of one family, begun now unless it already was."""
        with self.lock:
            if (category, family) not in self.jobs:
                self.jobs[category, family] = self.pool.submit(self._build, category, family)
            return self.jobs[category, family]

    def _build(self, category: str, family: str) -> Path:
        binary = self.folder / category / family
        flags = build.merged_flags(FLAGS, catalog.family_flags(ROOT / "kernels", category, family))
        flags = build.merged_flags(flags, build.SASS_ONLY)  # host code at -O0: the SASS is the same
        build.compile_family("nvcc", catalog.family_source(ROOT / "kernels", category, family), binary, BUILD_ARCHS,
                             ROOT / "kernels" / "common", flags)  # fmt: skip
        build.write_listing(binary, binary.with_suffix(".json"))
        if any(entry["kernels"] for entry in json.loads(binary.with_suffix(".json").read_text())):
            for arch in BUILD_ARCHS:
                sass.dump(binary, arch)  # saved by sass_once for the tests that read it
        return binary


FAMILIES = [(cat, fam) for cat in catalog.categories(ROOT / "kernels")
            for fam in catalog.families(catalog.load(ROOT / "kernels", cat))]  # fmt: skip


@pytest.fixture(scope="session", autouse=True)
def builds(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, sass_once: None
) -> Iterator[Builds]:
    """The session's builds; where a test needs every family (`built`), every build begins as the session does."""
    out = Builds(tmp_path_factory.mktemp("family"))
    if any("built" in getattr(item, "fixturenames", ()) for item in request.session.items):
        for key in FAMILIES:
            out.start(*key)
    yield out
    out.pool.shutdown(cancel_futures=True)


@pytest.fixture(scope="session")
def compiled(builds: Builds) -> Callable[[str, str, str], Path]:
    """The binary of one (category, family) for every arch in BUILD_ARCHS, built on first use; `arch` only checks
    that it is one of BUILD_ARCHS: pass it on to `sass.dump`."""

    def compile_one(arch: str, category: str, family: str) -> Path:
        assert arch in BUILD_ARCHS, f"{arch} is not built by the tests (BUILD_ARCHS: {BUILD_ARCHS})"
        return builds.start(category, family).result()

    return compile_one


@pytest.fixture(scope="session")
def built(builds: Builds) -> dict[tuple[str, str, str], Path]:
    """Every (arch, category, family) binary, compiled for real with nvcc (once per session)."""
    binaries = {key: builds.start(*key).result() for key in FAMILIES}
    return {(arch, *key): binary for arch in BUILD_ARCHS for key, binary in binaries.items()}
