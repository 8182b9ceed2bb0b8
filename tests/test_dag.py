"""The planned DAG, job by job (rule, wildcards, input, output, log, benchmark files), against a committed snapshot:
a change to the rules that means no change to the plan leaves it as it was. After an intended change of the plan,
regenerate the snapshot with `python3 tests/test_dag.py` and review its diff."""

from __future__ import annotations

import difflib
import functools
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import FIXTURES, PARTS, ROOT, copy_workflow

SNAPSHOTS = FIXTURES / "dag"
# Each planned configuration: --config arguments. No GPU is visible to the plan (CUDA_VISIBLE_DEVICES=""), so a
# machine with one plans the same DAG; `tables` adds the every-table target to the default one.
CONFIGS: dict[str, list[str]] = {"no-gpu": [], "cluster-h200": ["--config", "cluster_gpus={h200: sm_90a}"]}
TARGETS = ["all", "tables"]
FIELDS = ("input", "output", "log", "benchmark")  # a job's files; jobid, reason, priority and resources are left out
REGENERATE = "python3 tests/test_dag.py"
JOB = r"^(?:local)?rule "  # the first line of each job's block in a dry run


def dry_run(tree: Path, config: list[str]) -> str:
    """The dry run's job listing of every target, forced, in a copy of the workflow without results."""
    env = os.environ | {"CUDA_VISIBLE_DEVICES": ""}
    # the targets first: --config takes every word after it
    cmd = [sys.executable, "-m", "snakemake", "--dry-run", "--forceall", "--cores", "1", *TARGETS, *config]
    proc = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def jobs(listing: str) -> str:
    """Every job of a dry run as a block of its rule, wildcards and files, sorted: nothing of when or where."""
    blocks = []
    for chunk in re.split(JOB, listing, flags=re.M)[1:]:
        head, *lines = chunk.splitlines()
        fields = dict(re.findall(r"^    (\w+): (.*)$", "\n".join(lines), flags=re.M))
        title = f"{head.rstrip(':')} {fields.get('wildcards', '')}".rstrip()
        blocks.append("\n".join([title] + [f"    {k}: {fields[k]}" for k in FIELDS if k in fields]))
    return "\n".join(sorted(blocks)) + "\n"


def listings(tmp: Path) -> dict[str, str]:
    """The dry run of every configuration, in one fresh copy of the workflow."""
    for part in PARTS:
        src = ROOT / part
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, tmp / part)
    return {name: dry_run(tmp, config) for name, config in CONFIGS.items()}


@pytest.fixture(scope="module")
def dry(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return listings(tmp_path_factory.mktemp("dag"))


@pytest.mark.parametrize("name", CONFIGS)
def test_planned_dag_is_the_snapshot(dry: dict[str, str], name: str) -> None:
    snapshot, now = (SNAPSHOTS / f"{name}.txt").read_text(), jobs(dry[name])
    diff = "".join(difflib.unified_diff(snapshot.splitlines(True), now.splitlines(True), "snapshot", "now", n=1))
    if diff:
        pytest.fail(f"the planned DAG ({name}) changed; if meant, run `{REGENERATE}`:\n{diff[:6000]}", pytrace=False)


def test_every_job_is_in_the_listing(dry: dict[str, str]) -> None:
    """As many blocks as the dry run counts jobs, a job of every table-writing rule among them."""
    for name, listing in dry.items():
        blocks = len(re.findall(JOB, listing, flags=re.M))
        assert blocks == int(re.search(r"^total\s+(\d+)$", listing, flags=re.M).group(1)), name
    rules = set(re.findall(r"^(\w+)", jobs(dry["cluster-h200"]), flags=re.M))
    assert {"build", "sass", "run", "profile", "parse", "crossval", "figures", "report", "index", "tables"} <= rules


def table_kind_example() -> list[str]:
    """The code blocks of docs/cases.md's 'Adding a table kind': the TABLES entry, the rule's output line."""
    section = (ROOT / "docs" / "cases.md").read_text().split("## Adding a table kind\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```python\n(.*?)^```", section, flags=re.M | re.S)


def test_adding_a_table_kind_is_two_edits(tmp_path: Path) -> None:
    """The docs' worked example, applied to a copy of the workflow: the run rule writes the new table, the category
    page takes it and passes it on as --occupancy, which `smdissect report` accepts and a page explains by stage."""
    copy_workflow(tmp_path)  # the latency category only
    entry, output = table_kind_example()
    registry = tmp_path / "workflow" / "smdissect" / "core" / "tables.py"
    end = "    ]\n}\nSCHEMAS"  # the end of the TABLES list
    assert end in registry.read_text()
    registry.write_text(registry.read_text().replace(end, textwrap.indent(entry, " " * 8) + end))
    rule = tmp_path / "rules" / "run.smk"
    status = '        status=TABLES["status"].pattern,\n'
    rule.write_text(rule.read_text().replace(status, status + output))
    dry = dry_run(tmp_path, ["--printshellcmds", "--config", "cluster_gpus={h200: sm_90a}"])
    planned = "results/h200/sm_90a/latency/float/occupancy.parquet"
    assert re.search(rf"^rule run:\n(?:    .*\n)*    output: [^\n]*{planned}", dry, flags=re.M), dry[-3000:]
    assert re.search(rf"smdissect report .* --occupancy {planned}", dry)
    env = os.environ | {"PYTHONPATH": str(tmp_path / "workflow")}  # the copy's package
    in_copy = functools.partial(subprocess.run, capture_output=True, text=True, env=env, cwd=tmp_path)
    stages = in_copy([sys.executable, "-c", "from smdissect.pages import report; print(report.STAGES['occupancy'])"])
    assert stages.stdout == "('run',)\n", stages.stderr[-2000:]
    usage = in_copy([sys.executable, "-m", "smdissect", "report", "--help"]).stdout
    assert "resident block tables (occupancy.parquet)" in " ".join(usage.split()), usage


if __name__ == "__main__":
    import tempfile

    SNAPSHOTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, listing in listings(Path(tmp)).items():
            (SNAPSHOTS / f"{name}.txt").write_text(jobs(listing))
            print(f"wrote {SNAPSHOTS / name}.txt")
