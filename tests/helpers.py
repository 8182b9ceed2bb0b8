"""What the tests share: the checkout's paths, the frozen run they read (fixtures/run), raw tables as the run stage
writes them, the checks every category runs on a family's listing and SASS, and a copy of the workflow to run."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from smdissect.core import archs, catalog, tables  # noqa: E402
from smdissect.measure import device, sass  # noqa: E402

ARCHS = ["sm_90a", "sm_120a"]  # the archs whose category-specific SASS facts the tests check
BUILD_ARCHS = list(archs.CHECKED_ARCHS)  # every family builds and meets its claims on each
FLAGS = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["nvcc_flags"]  # the pipeline's own flags
FIXTURES = ROOT / "tests" / "fixtures"
RUN = FIXTURES / "run"  # a frozen part of an H200 run's tables, laid out as reports/<gpu>/tables (its README says)
PARTS = ["Snakefile", "rules", "workflow", "kernels", "config", "profiles", "reference", "reports/templates"]
NO_GPU = isinstance(device.query(0), str)


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run a command and capture its output as text."""
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True)


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The failure's only stderr line, after asserting that it failed with exactly one `smdissect:` line."""
    assert proc.returncode != 0, proc.stdout[-1000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("Using workflow")]
    assert len(lines) == 1 and lines[0].startswith("smdissect: "), proc.stderr[-3000:]
    return lines[0]


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Snakemake on two cores in `workdir`, its output captured."""
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
