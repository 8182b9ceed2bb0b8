"""The Snakemake DAG itself: dry run, the real no-GPU path, no-change reruns, per-file reruns, bad input."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import ROOT, run_cli
from smdissect import device

PARTS = ["Snakefile", "rules", "workflow", "kernels", "config", "profiles", "reference", "reports/templates"]
GPU_STAGES = ["run", "profile", "parse", "crossval"]
NO_GPU = isinstance(device.query(0), str)
needs_no_gpu = pytest.mark.skipif(not NO_GPU, reason="checks the no-GPU path; this machine has a GPU")


def snakemake(workdir: Path, *args: str):
    return run_cli(sys.executable, "-m", "snakemake", "--cores", "2", *args, cwd=workdir)


def copy_workflow(dest: Path) -> Path:
    """A copy of the workflow configured for the latency category only, so runs here never touch the
    checkout's results and stay fast (every category's kernels are built and SASS-checked in its own tests)."""
    for part in PARTS:
        src = ROOT / part
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dest / part)
    config = dest / "config" / "config.yaml"
    config.write_text(re.sub(r"^categories: .*$", "categories: [latency]", config.read_text(), flags=re.M))
    return dest


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_workflow(tmp_path_factory.mktemp("wf"))


def test_lint_and_dry_run(workdir: Path) -> None:
    dry = snakemake(workdir, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", dry.stdout, flags=re.MULTILINE))
    families = len(list((ROOT / "kernels" / "latency").glob("*.cu")))
    assert int(jobs["build"]) == int(jobs["sass"]) == 2 * families  # sm_90a and sm_120a
    lint = snakemake(workdir, "--lint")
    titles = set(re.findall(r"^\s+\* (.+?):?$", lint.stdout + lint.stderr, flags=re.MULTILINE))
    # GPU toolchains come from the host's driver and CUDA install, so rules name no conda env or container.
    assert titles <= {"Specify a conda environment or container for each rule."}, titles


@needs_no_gpu
class TestNoGpuRun:
    """Build, SASS and the static report run for real; each GPU stage is reported skipped with its reason."""

    @pytest.fixture(scope="class")
    def ran(self, workdir: Path) -> Path:
        proc = snakemake(workdir)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "smdissect: no GPU" in proc.stderr and "skipped: run, profile, parse, crossval" in proc.stderr
        return workdir

    def test_static_tables_for_every_arch(self, ran: Path) -> None:
        for arch in ("sm_90a", "sm_120a"):
            checks = pd.concat(pd.read_parquet(p) for p in (ran / "results/static" / arch).rglob("sass_checks.parquet"))
            assert (checks.verdict == "agree").all() and len(checks) > 0

    def test_report_names_every_skipped_stage(self, ran: Path) -> None:
        html = (ran / "reports/static/latency.html").read_text()
        for stage in GPU_STAGES:
            assert re.search(rf"{stage}\W.{{0,200}}no GPU", html, flags=re.S), f"stage {stage} skipped silently"
        assert "<svg" not in html or "https://" not in html.split("<svg")[0]
        assert (ran / "reports/static/index.html").exists()

    def test_second_run_does_no_work(self, ran: Path) -> None:
        proc = snakemake(ran)
        assert "Nothing to be done" in proc.stdout + proc.stderr

    def test_editing_one_source_reruns_only_its_chain(self, ran: Path) -> None:
        source = ran / "kernels/latency/sfu.cu"
        source.write_text(source.read_text() + "// edited\n")
        dry = snakemake(ran, "--dry-run")
        outputs = re.findall(r"^\s+output: (.+)$", dry.stdout, flags=re.MULTILINE)
        chain = [o for o in outputs if o.startswith(("build/", "results/"))]
        assert len(chain) == 4, chain  # build + sass of sfu, for sm_90a and sm_120a
        assert all("/sfu" in o for o in outputs if o.startswith(("build/", "results/")))
        assert {"reports/static/latency.html", "reports/static/index.html"} <= set(outputs)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (["categories=[nope]"], "smdissect: unknown category 'nope'"),
        (["static_archs=[sm_99a]"], "smdissect: arch sm_99a is unknown to nvcc"),
        (["nvcc=/no/such/nvcc"], "smdissect: /no/such/nvcc not found"),
        (["repeats=many"], "smdissect: config.repeats: 'many' is not of type 'integer'"),
        (["categories=[x;reboot]"], "smdissect: config.categories[0]"),
    ],
)
def test_bad_input_is_one_line_before_any_work(workdir: Path, config: list[str], message: str) -> None:
    proc = snakemake(workdir, "--dry-run", "--config", *config)
    assert proc.returncode != 0
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("smdissect:")]
    assert lines and lines[-1].startswith(message), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


def test_category_target_and_malformed_yaml(tmp_path: Path) -> None:
    copy_workflow(tmp_path)
    target = snakemake(tmp_path, "--dry-run", "latency")
    assert target.returncode == 0 and "reports/static/latency.html" in target.stdout
    (tmp_path / "config" / "config.yaml").write_text("arch: [auto\nrepeats: 9\n")
    proc = snakemake(tmp_path, "--dry-run")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]  # libyaml and PyYAML word the problem differently
    assert "is not valid YAML at line 2, column 8: " in last and "expected ',' or ']'" in last
