"""Shared fixtures: the repo root, real builds of every case family, the GPU marker's skip reason, and the checks
every category runs on a family's listing and SASS."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from smdissect import archs, build, catalog, device, sass, tables  # noqa: E402
from smdissect.files import atomic_path  # noqa: E402

ARCHS = ["sm_90a", "sm_120a"]  # the archs whose category-specific SASS facts the tests check
BUILD_ARCHS = list(archs.CHECKED_ARCHS)  # every family builds and meets its claims on each
FLAGS = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["nvcc_flags"]  # the pipeline's own flags
FIXTURES = ROOT / "tests" / "fixtures"


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


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run a command and capture its output as text."""
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True)


def raw_frame(rows: Iterable[tuple[str, dict[str, int], str, list[float]]], **columns: object) -> pd.DataFrame:
    """A raw table as the run stage writes it: one row per sample of each (case, params, metric, samples), on an
    H200 at 1980 MHz unless `columns` say otherwise."""
    common = {"gpu": "NVIDIA H200", "unit": "", "cycles": 0.0, "iterations": 1, "clock_mhz": 1980.0, "smid": 3}
    common |= columns
    out = [
        common | {"case": case, "params": tables.canonical_params(params), "metric": metric, "repeat": i, "value": v}
        for case, params, metric, samples in rows
        for i, v in enumerate(samples)
    ]
    return tables.frame("raw", out)


def listing(command: Path | list[str]) -> dict[str, list[dict]]:
    """Case id -> its kernels, from a family's own --list (a binary, or the command that runs a script family)."""
    argv = [str(command)] if isinstance(command, Path) else command
    out = subprocess.run([*argv, "--list"], capture_output=True, text=True, check=True).stdout
    return {entry["case"]: entry["kernels"] for entry in map(json.loads, out.splitlines())}


def assert_profile_budget(category: str, cases: list[catalog.Case], budget: int) -> None:
    """Assert that every profile sweep narrows its case's sweep and that each family ncu profiles makes fewer than
    `budget` profiled launches."""
    for case in cases:
        for sweep in case.profiled_sweeps():
            for key, values in sweep.items():
                assert key in case.sweep and set(values) <= set(case.sweep[key]), case.id
    for family, members in catalog.families(cases).items():
        if catalog.family_settings(ROOT / "kernels", category, family)["profile"]:
            launches = sum(len(c.profiled_points()) for c in members)
            assert launches < budget, family


def assert_sass_claims(binary: Path, arch: str, cases: Iterable[catalog.Case]) -> dict[str, list[dict]]:
    """Assert that `binary` lists exactly `cases`, that each lists a kernel or makes no SASS claim and says why, that
    every kernel is in the SASS for `arch`, that each case makes a claim per pass of its timed loop (in terms of
    `ops`) or says why not, and that each claim of a case `arch` can run agrees, those in terms of `ops` counted in
    one pass of the kernel's timed loop (sass.timed_loop) as the pipeline counts them; return the listing."""
    kernels = listing(binary)
    by_id = {c.id: c for c in cases}
    assert set(kernels) == set(by_id)
    text = sass.dump(binary, arch) if any(kernels.values()) else ""  # a Python family has none
    counts, code = sass.opcodes(text), sass.code(text)
    for case_id, entries in kernels.items():
        case = by_id[case_id]
        why, claims = case.explain.get("sass"), case.sass_expect or case.sass_forbid
        assert entries or (why and not claims), f"{case_id} lists no kernel but makes SASS claims or does not say why"
        for k in entries:
            assert k["symbol"] in counts, f"{case_id}: {k['symbol']} not in the SASS"
            if case.unsupported(arch) is not None:
                continue
            rows = sass.claims(case.on(arch), code[k["symbol"]], k["ops"])
            assert rows or why, f"{case_id} makes no SASS claim and does not say why"
            assert why or any(r["scope"] == "loop" for r in rows), f"{case_id} claims nothing per pass of its loop"
            bad = [r for r in rows if r["verdict"] != "agree"]
            assert not bad, f"{arch} {case_id} {k['symbol']}: {bad}"
    return kernels
