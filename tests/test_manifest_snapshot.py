"""Every planned point of every manifest, against the snapshot committed before the manifests took defaults: no case
may lose or change a point or a field when a manifest is condensed (tests/fixtures/manifests_before.json)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import FIXTURES, ROOT
from smdissect.core import catalog

SNAPSHOT = FIXTURES / "manifests_before.json"
ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a", "sm_120a", "sm_121a")  # where static-ness can differ


def case_record(case: catalog.Case) -> dict[str, Any]:
    """Every field of a case, its planned and profiled points and its support per arch, as plain JSON values."""
    return json.loads(
        json.dumps(
            {
                **dataclasses.asdict(case),
                "points": case.points(),
                "profiled_points": case.profiled_points(),
                "unsupported": {arch: case.unsupported(arch) for arch in ARCHS},
            }
        )
    )


def category_record(kernels: Path, category: str) -> dict[str, Any]:
    """A category's title, metrics, family settings and cases (in manifest order) as plain JSON values."""
    cases = catalog.load(kernels, category)
    return {
        "title": catalog.title(kernels, category),
        "metrics": catalog.metrics(kernels, category),
        "families": {f: catalog.family_settings(kernels, category, f) for f in sorted(catalog.families(cases))},
        "cases": [case_record(c) for c in cases],
    }


def snapshot(kernels: Path) -> dict[str, dict[str, Any]]:
    """Every category's record."""
    return {category: category_record(kernels, category) for category in catalog.categories(kernels)}


def write(path: Path, data: dict[str, dict[str, Any]]) -> None:
    """The snapshot as canonical JSON, one case per line so that a diff names the case."""
    lines = ["{"]
    for i, (category, record) in enumerate(data.items()):
        head = {k: v for k, v in record.items() if k != "cases"}
        lines.append(f'{json.dumps(category)}: {json.dumps(head, sort_keys=True)[:-1]}, "cases": [')
        lines += [
            json.dumps(c, sort_keys=True) + ("," if j < len(record["cases"]) - 1 else "")
            for j, c in enumerate(record["cases"])
        ]
        lines.append("]}" + ("," if i < len(data) - 1 else ""))
    path.write_text("\n".join([*lines, "}"]) + "\n")


@pytest.fixture(scope="module")
def before() -> dict[str, dict[str, Any]]:
    """The committed snapshot."""
    return json.loads(SNAPSHOT.read_text())


def test_snapshot_covers_every_category(before: dict[str, dict[str, Any]]) -> None:
    assert sorted(before) == catalog.categories(ROOT / "kernels")


@pytest.mark.parametrize("category", catalog.categories(ROOT / "kernels"))
def test_every_case_keeps_its_points_and_fields(before: dict[str, dict[str, Any]], category: str) -> None:
    now, then = category_record(ROOT / "kernels", category), before[category]
    assert {k: v for k, v in now.items() if k != "cases"} == {k: v for k, v in then.items() if k != "cases"}
    assert [c["id"] for c in now["cases"]] == [c["id"] for c in then["cases"]]
    changed = {
        b["id"]: sorted(k for k in b.keys() | n.keys() if b.get(k) != n.get(k))
        for b, n in zip(then["cases"], now["cases"], strict=True)
        if b != n
    }
    assert not changed, f"{category}: cases whose fields changed: {changed}"


if __name__ == "__main__":  # python3 tests/test_manifest_snapshot.py: rewrite the snapshot from the manifests now
    write(SNAPSHOT, snapshot(ROOT / "kernels"))
