"""The manifests and the config: valid ones load, every bad one is a one-line error naming the problem."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from helpers import ROOT
from smdissect.core import catalog, config
from smdissect.core.errors import SmdissectError

SCHEMA = ROOT / "config" / "schema.yaml"


@pytest.mark.parametrize("category", catalog.categories(ROOT / "kernels"))
def test_every_manifest_loads_with_sweeps_and_sass_claims(category: str) -> None:
    cases = catalog.load(ROOT / "kernels", category)
    assert cases, category
    for case in cases:
        assert case.points(), case.id
        why = case.explain.get("sass")  # a case without SASS claims must say why (no kernel, or emulated)
        assert case.sass_expect or why, f"{case.id} claims no SASS and says not why"
        assert set(case.sass_forbid) >= {"LDL", "STL"} or why, f"{case.id} does not forbid spills"


def test_sweep_is_the_cross_product() -> None:
    ffma = next(c for c in catalog.load(ROOT / "kernels", "latency") if c.id == "ffma")
    points = ffma.points()
    assert len(points) == len(ffma.sweep["ilp"]) * len(ffma.sweep["warps"])
    assert {"ilp": 1, "warps": 1} in points


def test_arch_support_reasons() -> None:
    case = catalog.Case("x", "y", "y.cu", "ptx", ("latency",), {"ilp": [1]}, {"FFMA": ["== ops"]}, min_sm=100)
    assert "sm_100" in case.unsupported("sm_90a")
    assert case.unsupported("sm_120a") is None
    assert "wgmma" in catalog.Case(**{**case.__dict__, "min_sm": 0, "features": ("wgmma",)}).unsupported("sm_120a")


def _broken(tmp_path: Path, edit) -> Path:
    kernels = tmp_path / "kernels"
    shutil.copytree(ROOT / "kernels" / "latency", kernels / "latency")
    path = kernels / "latency" / "cases.yaml"
    data = yaml.safe_load(path.read_text())
    edit(data)
    path.write_text(yaml.safe_dump(data))
    return kernels


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["cases"][0].pop("sass"), "'sass' is a required property"),
        (lambda d: d["cases"][0].update(pipe="fma; rm -rf /"), "does not match"),
        (lambda d: d["cases"].append(dict(d["cases"][0])), "case ids repeated: ffma"),
        (lambda d: d["cases"][0].update(source="missing.cu"), "source missing.cu does not exist"),
        (lambda d: d.update(category="other"), "expected the folder name"),
        (
            lambda d: (d["defaults"].pop("unprofiled"), d.setdefault("families", {}).update(float={"profile": False})),
            r"cases/0 \(ffma\): family float is not profiled: say why no counter can check it in 'unprofiled'",
        ),
    ],
)
def test_bad_manifest_is_one_line(tmp_path: Path, edit, message: str) -> None:
    kernels = _broken(tmp_path, edit)
    with pytest.raises(SmdissectError, match=message) as err:
        catalog.load(kernels, "latency")
    assert "\n" not in str(err.value) and "cases.yaml" in str(err.value)


@pytest.mark.parametrize("category", catalog.categories(ROOT / "kernels"))
def test_coded_values_name_swept_values(category: str) -> None:
    swept = {(a, v) for c in catalog.load(ROOT / "kernels", category) for a, vs in c.sweep.items() for v in vs}
    assert {(axis, value) for axis, value, _ in catalog.coded_values(ROOT / "kernels", category)} <= swept


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"ilp": {1: "one chain", 2: "two chains"}}, "values: ilp 4 is swept but not named: add what it means"),
        ({"lanes": {0: "none"}}, "values: no case sweeps 'lanes'"),
    ],
)
def test_bad_coded_values_are_one_line(tmp_path: Path, values: dict, message: str) -> None:
    kernels = _broken(tmp_path, lambda d: d.update(values=values))
    assert catalog.coded_values(ROOT / "kernels", "pipelines")[0] == ("x", 0, "ffma")
    with pytest.raises(SmdissectError, match=message) as err:
        catalog.coded_values(kernels, "latency")
    assert "\n" not in str(err.value) and "cases.yaml" in str(err.value)


def test_unknown_category_names_the_known_ones() -> None:
    with pytest.raises(SmdissectError, match=r"unknown category 'nope' \(known: .*latency"):
        catalog.load(ROOT / "kernels", "nope")


def test_config_defaults_are_filled() -> None:
    settings = config.validate({"repeats": 5}, SCHEMA)
    assert settings["repeats"] == 5 and settings["arch"] == "auto" and "sm_120a" in settings["static_archs"]


@pytest.mark.parametrize(
    ("bad", "where"),
    [
        ({"categories": ["latency; rm -rf ~"]}, "config.categories[0]"),
        ({"categories": ["$(reboot)"]}, "config.categories[0]"),
        ({"nvcc": "nvcc --bad;x"}, "config.nvcc"),
        ({"repeats": "many"}, "config.repeats"),
        ({"repeats": 1}, "config.repeats"),
        ({"arch": "sm_9x"}, "config.arch"),
        ({"bogus": 1}, "config:"),
    ],
)
def test_bad_config_is_one_line_naming_the_key(bad: dict, where: str) -> None:
    with pytest.raises(SmdissectError) as err:
        config.validate(bad, SCHEMA)
    assert str(err.value).startswith(where) and "\n" not in str(err.value)
