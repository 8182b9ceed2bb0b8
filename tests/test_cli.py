"""The command line as a user meets it: help on every option, --version and the console script, compare with its
defaults and documented options, and a missing dependency as one line naming the pip command."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from helpers import ROOT, RUN, one_line, run_cli
from smdissect import __version__, cli
from smdissect.core.errors import missing_module

SMD = [sys.executable, "-m", "smdissect"]
# Hides modules from the interpreter (HIDE_MODULES=a,b) as if they were not installed.
HIDE = """import os, sys

class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in os.environ["HIDE_MODULES"].split(","):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, Hide())
"""


def stages() -> dict[str, argparse.ArgumentParser]:
    """Each stage's parser."""
    (sub,) = (a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


def test_every_option_of_every_stage_has_help() -> None:
    missing = [
        f"{stage} {flag}"
        for stage, p in stages().items()
        for a in p._actions
        for flag in a.option_strings
        if not a.help
    ]
    assert not missing
    assert all(p.description for p in stages().values())


def test_version_and_console_script() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"smdissect": "smdissect.cli:main"}
    assert run_cli(*SMD, "--version").stdout == f"smdissect {__version__}\n"
    script = Path(sys.executable).parent / "smdissect"  # where pip puts it beside the interpreter (venv or not)
    assert script.exists(), f"no {script}: run `{sys.executable} -m pip install -e .`"
    assert run_cli(str(script), "--version").stdout == f"smdissect {__version__}\n"


@pytest.mark.parametrize(
    "options",
    [
        [],
        ["--b", "paper"],
        ["--categories", "latency"],
        ["--categories", "latency", "memory", "--kernels", "kernels"],
        ["--b", str(RUN)],
        ["--b", str(RUN / "sm_90a" / "memory"), "--categories", "memory"],
    ],
    ids=["defaults", "paper", "one-category", "two-categories-and-kernels", "folder", "folder-and-category"],
)
def test_compare_gives_a_page(tmp_path: Path, options: list[str]) -> None:
    proc = run_cli(*SMD, "compare", "--a", str(RUN), "--out", str(tmp_path / "cmp.html"), *options)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-3000:]
    page = (tmp_path / "cmp.html").read_text()
    after = options[options.index("--categories") + 1 :] if "--categories" in options else ["latency", "power"]
    shown = after[: next((i for i, o in enumerate(after) if o.startswith("--")), len(after))]
    assert shown and all(f'{c}.html"' in page for c in shown)  # the header links them


@pytest.mark.parametrize(
    ("options", "fix"),
    [
        (["--categories", "nosuch"], "holds no figures of it; pick from async, attention"),
        (["--kernels", "/"], "point --kernels at the checkout's kernels/ folder"),
        (["--b", "{empty}"], "holds no figures.parquet: run `snakemake --cores all tables` for that GPU"),
    ],
    ids=["unknown-category", "wrong-kernels", "empty-b"],
)
def test_compare_misuse_is_one_line(tmp_path: Path, options: list[str], fix: str) -> None:
    (tmp_path / "empty").mkdir()
    options = [o.format(empty=tmp_path / "empty") for o in options]
    proc = run_cli(*SMD, "compare", "--a", str(RUN), "--out", str(tmp_path / "cmp.html"), *options)
    assert fix in one_line(proc) and not (tmp_path / "cmp.html").exists()


@pytest.mark.parametrize("module", ["vl_convert", "altair"])
def test_a_missing_module_is_one_line_naming_the_install(tmp_path: Path, module: str) -> None:
    """A report job where a module of the pages is not installed (a GPU machine that only makes tables)."""
    (tmp_path / "hide").mkdir()
    (tmp_path / "hide" / "sitecustomize.py").write_text(HIDE)
    latency = RUN / "sm_90a" / "latency"
    args = [
        *SMD,
        "report",
        "--kernels",
        "kernels",
        "--category",
        "latency",
        "--out",
        str(tmp_path / "latency.html"),
        "--skipped",
        "{}",
        "--provenance",
        "{}",
        "--raw",
        *map(str, latency.glob("*/raw.parquet")),
        "--figures",
        str(latency / "figures.parquet"),
    ]
    env = os.environ | {"PYTHONPATH": f"{tmp_path / 'hide'}{os.pathsep}{ROOT / 'workflow'}", "HIDE_MODULES": module}
    line = one_line(subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True))
    dist = {"vl_convert": "vl-convert-python"}.get(module, module)
    assert line == (
        f"smdissect: the Python module {module} ({dist}) is missing from {sys.executable}: run "
        f"`{sys.executable} -m pip install -e .` in the smdissect checkout"
    )
    assert not (tmp_path / "latency.html").exists()
    unhidden = subprocess.run(args, cwd=ROOT, env=env | {"HIDE_MODULES": ""}, capture_output=True, text=True)
    assert unhidden.returncode == 0, unhidden.stderr[-3000:]  # the same job, the module there: a page


def test_a_module_of_an_extra_names_the_extra() -> None:
    assert missing_module("torch.cuda").endswith(
        f"run `{sys.executable} -m pip install -e '.[torch]'` in the smdissect checkout"
    )
    assert missing_module("cutlass_library").startswith("the Python module cutlass_library (nvidia-cutlass) ")


def test_a_build_for_several_archs_needs_a_path_per_arch(tmp_path: Path) -> None:
    """`build` with two archs and one binary path stops before nvcc runs: every arch gets its own copy."""
    binary = tmp_path / "float"
    args = ["--source", str(ROOT / "kernels/latency/float.cu"), "--binary", str(binary), "--listing", "x.json"]
    proc = run_cli(*SMD, "build", *args, "--arch", "sm_90a", "sm_120a", "--include", "kernels/common",
                   "--nvcc", "nvcc", "--flags=-O0")  # fmt: skip
    assert "give one --binary and one --listing per --arch" in one_line(proc) and not binary.exists()
