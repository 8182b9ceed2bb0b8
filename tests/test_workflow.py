"""The Snakemake DAG itself: dry run, the real no-GPU path, no-change reruns, per-file reruns, bad input."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from helpers import NO_GPU, ROOT, RUN, copy_workflow, snakemake

GPU_STAGES = ["run", "profile", "parse", "crossval"]
needs_no_gpu = pytest.mark.skipif(not NO_GPU, reason="checks the no-GPU path; this machine has a GPU")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_workflow(tmp_path_factory.mktemp("wf"))


def test_lint_and_dry_run(workdir: Path) -> None:
    dry = snakemake(workdir, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", dry.stdout, flags=re.MULTILINE))
    families = len(list((ROOT / "kernels" / "latency").glob("*.cu")))
    assert int(jobs["build_static"]) == families  # sm_90a and sm_120a: one nvcc call per family
    assert int(jobs["sass"]) == 2 * families
    lint = snakemake(workdir, "--lint")
    assert lint.returncode == 0 and "Lints for" not in lint.stdout + lint.stderr, lint.stdout + lint.stderr
    assert "Congratulations, your workflow is in a good condition!" in lint.stdout + lint.stderr


def test_jobs_run_the_interpreter_running_the_workflow(tmp_path: Path) -> None:
    """A venv's snakemake run without activating the venv: its jobs use its interpreter, never a `python3` on PATH
    (here one that fails), and the printed shell commands read as `smdissect <stage>`."""
    copy_workflow(tmp_path)
    for folder in ("a", "b"):  # two result folders on disk: the compare rule is one real job, no GPU needed
        shutil.copytree(RUN / "sm_90a" / "latency", tmp_path / "results" / folder / "x" / "latency")
    shims = tmp_path / "shims"
    shims.mkdir()
    for name in ("python3", "python"):
        (shims / name).write_text("#!/bin/sh\necho 'wrong interpreter: a python on PATH' >&2\nexit 3\n")
        (shims / name).chmod(0o755)
    env = os.environ | {"PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", "-p", "reports/compare/a-vs-b.html"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0 and "wrong interpreter" not in proc.stderr, proc.stderr[-3000:]
    assert "smdissect compare --a results/a --b results/b" in proc.stdout + proc.stderr
    assert "flagged" in (tmp_path / "reports/compare/a-vs-b.html").read_text()
    # every rule's job calls the package the same way (two cluster GPUs: a plan with every rule in it)
    dry = snakemake(tmp_path, "-n", "-p", "--forceall", "--config", "cluster_gpus={h200: sm_90a, b200: sm_100a}")
    rules = set(re.findall(r"^(?:local)?rule (\w+):$", dry.stdout, flags=re.MULTILINE)) - {"all"}
    commands = [c for c in re.findall(r"^Shell command: (.*)$", dry.stdout, flags=re.MULTILINE) if c != "None"]
    defined = {r for f in (ROOT / "rules").glob("*.smk") for r in re.findall(r"^\s*rule (\w+):$", f.read_text(), re.M)}
    assert dry.returncode == 0 and rules == defined and len(commands) >= len(rules), dry.stdout[-3000:]
    assert all(c.startswith("smdissect ") for c in commands), [c for c in commands if not c.startswith("smdissect ")]


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

    def test_snakemake_report_bundles_the_pages(self, ran: Path) -> None:
        proc = snakemake(ran, "--report", "bundle.zip")
        assert proc.returncode == 0, proc.stderr[-2000:]
        names = zipfile.ZipFile(ran / "bundle.zip").namelist()
        assert any(n.endswith("latency.html") for n in names), names

    def test_report_names_every_skipped_stage(self, ran: Path) -> None:
        html = (ran / "reports/static/latency.html").read_text()
        for stage in GPU_STAGES:
            assert re.search(rf"{stage}\W.{{0,200}}no GPU", html, flags=re.S), f"stage {stage} skipped silently"
        assert "<svg" not in html or "https://" not in html.split("<svg")[0]
        assert (ran / "reports/static/index.html").exists()

    def test_pages_link_only_pages_that_exist(self, ran: Path) -> None:
        """No dead link without a GPU (compare-paper.html is made only for a GPU's folder)."""
        pages = sorted((ran / "reports/static").glob("*.html"))
        assert ran / "reports/static/index.html" in pages
        for page in pages:
            for href in re.findall(r'href="([^"#:]+)(?:#[^"]*)?"', page.read_text()):
                assert (page.parent / href).exists(), f"{page.name} links {href}, which this run did not make"

    def test_second_run_does_no_work(self, ran: Path) -> None:
        proc = snakemake(ran)
        assert "Nothing to be done" in proc.stdout + proc.stderr

    def test_editing_one_source_reruns_only_its_chain(self, ran: Path) -> None:
        source = ran / "kernels/latency/sfu.cu"
        source.write_text(source.read_text() + "// edited\n")
        dry = snakemake(ran, "--dry-run")
        lines = re.findall(r"^\s+output: (.+)$", dry.stdout, flags=re.MULTILINE)
        outputs = [o for line in lines for o in line.split(", ")]  # a job's outputs, comma-separated
        chain = [line for line in lines if line.startswith(("build/", "results/"))]  # a job each
        assert len(chain) == 3, chain  # one build of sfu for sm_90a and sm_120a (build_static), its sass for each
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


def test_a_failed_job_shows_its_one_line_error(tmp_path: Path) -> None:
    """A job that fails prints its log, the stage's one `smdissect:` line, with the failure (the profiles'
    show-failed-logs: the rules only send stderr to the log)."""
    copy_workflow(tmp_path)
    source = tmp_path / "kernels" / "latency" / "float.cu"
    source.write_text(source.read_text() + "\nint broken = ;\n")
    proc = snakemake(tmp_path, "build/sm_90a/latency/float")
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("smdissect: nvcc failed")]
    assert proc.returncode != 0 and len(errors) == 1, proc.stderr[-3000:]
    # both SASS-only archs in one nvcc call (build_static): the line names them
    assert errors[0].startswith("smdissect: nvcc failed on kernels/latency/float.cu for sm_120a, sm_90a: "), errors[0]
