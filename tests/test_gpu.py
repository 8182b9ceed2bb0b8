"""On a real GPU: clock64 latencies are sharp and right, and ncu counts what the chain issues."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import FLAGS, ROOT, run_cli
from smdissect.core import catalog
from smdissect.measure import build, device, ncu, parse

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu() -> device.Gpu:
    found = device.query(0)
    assert not isinstance(found, str), found
    return found


@pytest.fixture(scope="module")
def binaries(gpu: device.Gpu, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("gpu")
    families = {}
    for source in sorted((ROOT / "kernels" / "latency").glob("*.cu")):
        families[source.stem] = out / source.stem
        build.compile_family("nvcc", source, out / source.stem, [gpu.arch], ROOT / "kernels" / "common", FLAGS)
    return families


def latency(binary: Path, case: str) -> dict:
    proc = run_cli(str(binary), "--case", case, "--repeats", "9")
    assert proc.returncode == 0, proc.stderr
    [record] = [json.loads(line) for line in proc.stdout.splitlines() if '"metric":"latency"' in line]
    return record


def test_ffma_latency_is_four_cycles(binaries: dict[str, Path]) -> None:
    record = latency(binaries["float"], "ffma")
    assert 3.75 <= record["value"] <= 4.25, record
    assert record["clock_mhz"] > 0 and record["smid"] >= 0


@pytest.mark.parametrize(("family", "case"), [(c.family, c.id) for c in catalog.load(ROOT / "kernels", "latency")])
def test_latency_samples_spread_under_one_cycle(binaries: dict[str, Path], family: str, case: str) -> None:
    samples = latency(binaries[family], case)["samples"]
    assert len(samples) == 9 and max(samples) - min(samples) < 1.0, samples


def test_ncu_counts_the_ffma_chain(binaries: dict[str, Path], gpu: device.Gpu, tmp_path: Path) -> None:
    report = tmp_path / "ffma.ncu-rep"
    metrics = [*ncu.BASE, ncu.pipe_metric("fma")]
    ncu.profile("ncu", metrics, report, [str(binaries["float"]), "--case", "ffma", "--repeats", "1"], timeout=300)
    rows = [r for r in parse.metric_rows(report, gpu.chip) if r["variant"] == "long"]
    fma = next(r["value"] for r in rows if r["metric"] == ncu.pipe_metric("fma"))
    assert abs(fma - 512 * 256) / (512 * 256) < 0.01
