"""Manifest defaults: a case over its family's defaults over its category's, each key replaced whole, null taking a
default back; bad defaults are one-line errors; and docs/cases.md's worked example ("Adding a case") run for real."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import FLAGS, ROOT
from smdissect.core import catalog
from smdissect.core.errors import SmdissectError
from smdissect.measure import sass

DOC = ROOT / "docs" / "cases.md"
CHAIN = {"source": "float.cu", "ptx": "fma.rn.f32", "sass": {"expect": {"FFMA": "== ops"}, "forbid": ["LDL", "STL"]}}


def _latency(tmp_path: Path, manifest: dict[str, Any]) -> Path:
    """A kernels/ folder whose latency category has the checkout's sources and `manifest` as its cases.yaml."""
    kernels = tmp_path / "kernels"
    shutil.copytree(ROOT / "kernels" / "latency", kernels / "latency")
    (kernels / "common").symlink_to(ROOT / "kernels" / "common")
    (kernels / "latency" / "cases.yaml").write_text(yaml.safe_dump({"category": "latency", "title": "t"} | manifest))
    return kernels


def test_a_case_over_its_family_over_its_category(tmp_path: Path) -> None:
    kernels = _latency(
        tmp_path,
        {
            "defaults": {
                "measures": ["latency"],
                "sweep": {"ilp": [1, 2], "warps": [1]},
                "stall": "wait",
                "profile_sweep": {"ilp": [1]},
            },
            "families": {"float": {"timeout": 60, "defaults": {"stall": "short_scoreboard", "pipe": "fma"}}},
            "cases": [
                {"id": "plain", **CHAIN},
                {"id": "own", **CHAIN, "sweep": {"warps": [4, 8]}, "pipe": "alu"},
                {"id": "unset", **CHAIN, "profile_sweep": None, "stall": None},
                {"id": "other", **CHAIN, "source": "integer.cu"},
            ],
        },
    )
    by_id = {c.id: c for c in catalog.load(kernels, "latency")}
    plain, own, unset, other = (by_id[k] for k in ("plain", "own", "unset", "other"))
    assert plain.measures == ("latency",) and plain.stall == "short_scoreboard" and plain.pipe == "fma"
    assert plain.profiled_points() == [{"ilp": 1, "warps": 1}]
    assert own.sweep == {"warps": [4, 8]} and own.points() == [{"warps": 4}, {"warps": 8}]  # replaced whole
    assert own.pipe == "alu" and own.stall == "short_scoreboard"
    assert unset.profile_sweep is None and unset.profiled_points() == unset.points() and unset.stall is None
    assert other.stall == "wait" and other.pipe is None  # another family: the category's defaults only
    assert catalog.family_settings(kernels, "latency", "float") == {
        "flags": [],
        "link": [],
        "timeout": 60,
        "profile": True,
    }


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ({"defaults": {"bogus": 1}, "cases": [{"id": "a", **CHAIN}]}, "defaults: Additional properties"),
        ({"defaults": {"id": "a"}, "cases": [{"id": "a", **CHAIN}]}, "defaults: Additional properties"),
        (
            {"families": {"float": {"defaults": {"source": "x.cu"}}}, "cases": [{"id": "a", **CHAIN}]},
            "families/float/defaults: Additional properties",
        ),
        (
            {
                "families": {"flaot": {"defaults": {"stall": "wait"}}},
                "cases": [{"id": "a", **CHAIN, "measures": ["x"], "sweep": {"ilp": [1]}}],
            },
            "families: flaot name no case's source",
        ),
        (
            {"defaults": {"measures": ["latency"]}, "cases": [{"id": "a", **CHAIN}]},
            r"cases/0 \(a\): 'sweep' is a required property",
        ),
        ({"defaults": {"sweep": {"ilp": ["x"]}}, "cases": [{"id": "a", **CHAIN}]}, "defaults/sweep"),
    ],
)
def test_bad_defaults_are_one_line(tmp_path: Path, manifest: dict[str, Any], message: str) -> None:
    with pytest.raises(SmdissectError, match=message) as err:
        catalog.load(_latency(tmp_path, manifest), "latency")
    assert "\n" not in str(err.value) and "cases.yaml" in str(err.value)


def _doc_example() -> tuple[str, list[str], str]:
    """docs/cases.md's "Adding a case": its prose, its two YAML blocks (the defaults, the entry) and its kernel."""
    section = DOC.read_text().split("## Adding a case\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(yaml|cpp)\n(.*?)```", section, re.S)
    yamls, cpps = [b for k, b in blocks if k == "yaml"], [b for k, b in blocks if k == "cpp"]
    assert len(yamls) == 2 and len(cpps) == 1, "the worked example is two YAML blocks and one kernel"
    return section, yamls, cpps[0]


def _with_example(tmp_path: Path) -> tuple[Path, dict[str, Any], str]:
    """A copy of the latency category with the doc's entry appended and its kernel added: (kernels, entry, struct)."""
    _, (_, entry_text), kernel = _doc_example()
    kernels = tmp_path / "kernels"
    shutil.copytree(ROOT / "kernels" / "latency", kernels / "latency")
    (kernels / "common").symlink_to(ROOT / "kernels" / "common")
    manifest = kernels / "latency" / "cases.yaml"
    assert re.search(r"^cases:\n(  .*\n|\n)*\Z", manifest.read_text(), re.M), "cases: is the manifest's last key"
    manifest.write_text(manifest.read_text() + entry_text)
    (entry,) = yaml.safe_load(entry_text)
    struct, table = kernel.split("// main's table: ..., ")
    source = kernels / "latency" / entry["source"]
    text = source.read_text()
    anchor = table.split("), ", 1)[0] + ")}"
    assert anchor in text and "int main(" in text, f"{source.name} has no table ending in {anchor}"
    source.write_text(text.replace("int main(", struct + "\nint main(").replace(anchor, table.strip()))
    return kernels, entry, struct


def test_the_doc_example_is_one_entry_over_the_latency_defaults(tmp_path: Path) -> None:
    prose, (defaults, _), _ = _doc_example()
    assert yaml.safe_load(defaults)["defaults"] == catalog.manifest(ROOT / "kernels", "latency")["defaults"]
    kernels, entry, struct = _with_example(tmp_path)
    case = next(c for c in catalog.load(kernels, "latency") if c.id == entry["id"])
    planned, profiled = map(int, re.search(r"has (\d+) planned points \(.*?\), (\d+) of them profiled", prose).groups())
    assert len(case.points()) == planned and len(case.profiled_points()) == profiled
    assert case.measures == ("latency", "throughput") and case.stall == "wait" and case.pipe == entry["pipe"]
    assert f'SMD_CHAIN_CASE("{case.id}", ' in (kernels / "latency" / case.source).read_text()
    assert case.ptx in struct, "the kernel issues the PTX the entry names"


def test_the_doc_example_kernel_compiles_to_the_claimed_sass(tmp_path: Path) -> None:
    kernels, entry, struct = _with_example(tmp_path)
    name = re.search(r"struct (\w+)", struct).group(1)
    cubin = tmp_path / "example.cubin"
    proc = subprocess.run(
        ["nvcc", *FLAGS, "-arch=sm_90a", "-cubin", "-o", str(cubin), str(kernels / "latency" / entry["source"])],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    code = {k: v for k, v in sass.code(sass.dump(cubin, "sm_90a")).items() if f"<{name}," in k}
    assert code, f"no {name} kernel in the cubin"
    for kernel, instructions in code.items():
        (opcode,) = entry["sass"]["expect"]
        assert sass.count(sass.loop_opcodes(instructions), opcode) > 0, kernel
        assert all(sass.count(Counter(i.opcode for i in instructions), f) == 0 for f in entry["sass"]["forbid"]), kernel
