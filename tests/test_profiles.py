"""The scale-out profiles: SLURM (dry run, and the sbatch lines it really submits), local multi-GPU."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from helpers import RUN, copy_workflow, snakemake

# Stands in for the SLURM tools: records every call (argv, NUL-separated), answers like a cluster
# where every job fails at once, so snakemake submits, polls once and stops.
FAKE_SLURM = """#!/bin/sh
tool=$(basename "$0")
printf '%s\\0' "$tool" "$@" > "$(mktemp "$FAKE_SLURM_LOG/call.XXXXXX")"
case "$tool" in
  sbatch) echo 4242 ;;
  sacct) case "$*" in *JobIdRaw*) echo "4242|FAILED" ;; *Account*) echo smd_account ;; esac ;;
  squeue) echo "4242|FAILED" ;;
  sacctmgr) echo smd_account ;;
esac
"""
SLURM_TOOLS = ["sbatch", "sacct", "squeue", "sacctmgr", "sshare", "sinfo", "scontrol", "scancel"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_workflow(tmp_path_factory.mktemp("wf"))


def test_slurm_dry_run(workdir: Path) -> None:
    dry = snakemake(workdir, "--workflow-profile", "profiles/slurm", "--dry-run")
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert "slurm_partition=cpu" in dry.stdout and "runtime=20" in dry.stdout


def test_slurm_plans_every_cluster_gpu_model_from_a_node_without_a_gpu(workdir: Path) -> None:
    """A login node has no GPU: cluster_gpus names the cluster's models and their archs, and the dry run plans each
    model's GPU jobs in its own folder, for its own arch, to run as sbatch jobs on a GPU of that model."""
    models = "cluster_gpus={h200: sm_90a, rtx_pro_5000: sm_120a}"
    dry = snakemake(workdir, "--workflow-profile", "profiles/slurm", "--dry-run", "--config", models)
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert "GPU jobs for the cluster's h200 (sm_90a), rtx_pro_5000 (sm_120a)" in dry.stderr
    jobs = re.findall(r"rule (run|profile):\n(?:\s+\w+: [^\n]*\n)*?\s+wildcards: gpu=([\w-]+), arch=(\w+)", dry.stdout)
    planned = {(rule, gpu, arch) for rule, gpu, arch in jobs}
    assert {
        ("run", "h200", "sm_90a"),
        ("run", "rtx_pro_5000", "sm_120a"),
        ("profile", "h200", "sm_90a"),
        ("profile", "rtx_pro_5000", "sm_120a"),
    } <= planned, dry.stdout[-3000:]
    assert not {gpu for _, gpu, _ in jobs} - {"h200", "rtx_pro_5000"}
    assert "reports/gpus.html" in dry.stdout  # both models on one page, and their comparison
    without = snakemake(workdir, "--workflow-profile", "profiles/slurm", "--dry-run")
    assert "rule run:" not in without.stdout and "no GPU" in without.stderr  # without the mapping: static only


def test_the_tables_target_plans_every_gpu_stage_and_no_page(workdir: Path) -> None:
    """`snakemake tables` (a GPU machine without a browser engine) plans run, profile, parse and crossval for every
    configured category and no report job, even where the tree already holds pages."""
    (workdir / "reports" / "h200").mkdir(parents=True, exist_ok=True)
    (workdir / "reports" / "h200" / "latency.html").write_text("<html>a committed page, newer than its sources</html>")
    dry = snakemake(workdir, "tables", "--dry-run", "--config", "cluster_gpus={h200: sm_90a}")
    assert dry.returncode == 0, dry.stderr[-2000:]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", dry.stdout, re.M))
    assert {"run", "profile", "parse", "crossval"} <= counts.keys(), dry.stdout[-2000:]
    assert not {"report", "index", "compare_paper"} & counts.keys()
    assert counts["crossval"] == "1"  # the copy configures latency only


def sbatch_calls(workdir: Path, fake: Path, targets: list[str], env: pytest.MonkeyPatch) -> list[list[str]]:
    """Run snakemake with the SLURM profile against fake SLURM tools; the argv of every sbatch call."""
    fake.mkdir()
    (fake / "slurm").write_text(FAKE_SLURM)
    (fake / "slurm").chmod(0o755)
    for tool in SLURM_TOOLS:
        (fake / tool).symlink_to("slurm")
    log = fake / "calls"  # one file per call: concurrent calls (sbatch beside sacct) cannot interleave records
    log.mkdir()
    env.setenv("FAKE_SLURM_LOG", str(log))
    env.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    proc = snakemake(
        workdir, "--workflow-profile", "profiles/slurm", "--slurm-init-seconds-before-status-checks", "1", *targets
    )
    assert "SLURM status is: 'FAILED'" in proc.stdout + proc.stderr, proc.stderr[-3000:]
    calls = [call.read_text().split("\0")[:-1] for call in sorted(log.iterdir())]
    return [c[1:] for c in calls if c[0] == "sbatch"]


def test_sbatch_lines(workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two GPU models in one invocation (their binaries already built): each run job asks for its own model.
    for arch in ("sm_90a", "sm_120a"):
        (workdir / "build" / arch / "latency").mkdir(parents=True, exist_ok=True)
        for name in ("float", "float.json"):
            (workdir / "build" / arch / "latency" / name).touch()
    runs = ["results/h200/sm_90a/latency/float/raw.parquet", "results/rtx_pro_5000/sm_120a/latency/float/raw.parquet"]
    calls = sbatch_calls(workdir, tmp_path / "slurm", [*runs, "build/sm_90a/latency/sfu"], monkeypatch)
    by_rule = {next(a for a in c if a.startswith("rule_")): c for c in calls}
    gpu = {k.split("_wildcards_")[1].split("_sm_")[0]: c for k, c in by_rule.items() if k.startswith("rule_run")}
    assert sorted(gpu) == ["h200", "rtx_pro_5000"], by_rule.keys()
    for model, argv in gpu.items():
        assert f"--gpus={model}:1" in argv
        assert argv[argv.index("-p") + 1] == "gpu" and argv[argv.index("-t") + 1] == "30"
        assert any(a.startswith("--wrap=") and "--target-jobs 'run:gpu=" + model in a for a in argv)
    build = by_rule["rule_build_static_wildcards_latency_sfu"]  # no GPU here: sm_90a is SASS-only, built with sm_120a
    assert build[build.index("-p") + 1] == "cpu" and build[build.index("-t") + 1] == "20"
    assert not any(a.startswith(("--gpus", "--gres")) for a in build)


def test_multigpu_dry_run(workdir: Path) -> None:
    dry = snakemake(workdir, "--workflow-profile", "profiles/multigpu", "--dry-run")
    assert dry.returncode == 0, dry.stderr[-2000:]


def test_device_all_gives_each_gpu_its_folder_device_and_provenance() -> None:
    from smdissect.measure import device
    from smdissect.stages import plan

    gpus = [device.Gpu(i, "NVIDIA H200", f"GPU-{i}", (9, 0), "580.1", 132) for i in range(2)]
    p = plan.Plan(
        {"gpu": "auto", "device": "all"},
        "13.0",
        {},
        {},
        ["sm_90a"],
        Path("."),
        gpu=gpus[0],
        run_arch="sm_90a",
        devices={f"h200-gpu{g.index}": g for g in gpus},
    )
    assert p.folders == ["h200-gpu0", "h200-gpu1"]
    assert [p.device_arg(f) for f in p.folders] == ["0", "1"]
    assert p.provenance("h200-gpu1")["gpu_uuid"] == "GPU-1" and p.provenance("h200-gpu0")["device"] == "0"
    single = plan.Plan({"gpu": "auto", "device": "any"}, "13.0", {}, {}, ["sm_90a"], Path("."), gpu=gpus[0])
    assert single.folders == ["h200"] and single.device_arg("h200") == "any"


def test_gpus_page_lists_each_gpu_and_links_the_comparison(tmp_path: Path) -> None:
    """Two result folders holding the frozen run's latency tables, as `device: all` lays them out."""
    import shutil

    from smdissect.stages import pages as pages_stage

    for name in ("h200-gpu0", "h200-gpu1"):
        shutil.copytree(RUN / "sm_90a" / "latency", tmp_path / name / "sm_90a" / "latency")
    pages_stage.gpus_page([tmp_path / "h200-gpu0", tmp_path / "h200-gpu1"], tmp_path / "gpus.html")
    page = (tmp_path / "gpus.html").read_text()
    assert page.count("NVIDIA H200") == 2 and 'href="compare/h200-gpu0-vs-h200-gpu1.html"' in page
    assert 'href="h200-gpu1/index.html"' in page and ">0<" in page  # no failed point
