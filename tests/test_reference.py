"""reference/seed_sm120.csv: the seed paper's published figures, well-formed and covering every manifest's `paper:`."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "reference" / "seed_sm120.csv"
COLUMNS = ["id", "quantity", "value", "unit", "arch", "source"]
MIN_ROWS = 170  # figures extracted from the seed paper (174), rounded down to a multiple of 10

UNITS = {
    "cycle",
    "ns",
    "us",
    "min",
    "GB/s",
    "TB/s",
    "TFLOPS",
    "TFLOPS/W",
    "inst/cycle",
    "ops/cycle",
    "warp_inst/cycle/SM",
    "FLOP/cycle/SM",
    "byte",
    "KB",
    "MB",
    "GB",
    "bit",
    "count",
    "%",
    "x",
    "W",
    "W/SM",
    "MHz",
    "GHz",
}
# The id's suffix names the chip family its arch belongs to.
ARCH_SUFFIX = {"sm_120": "_sm120", "sm_120a": "_sm120", "sm_90": "_sm90"}
SNAKE = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")


@pytest.fixture(scope="module")
def reference() -> pd.DataFrame:
    return pd.read_csv(REFERENCE, dtype={"id": str, "quantity": str, "unit": str, "arch": str, "source": str})


def _paper_ids(node: Any) -> Iterator[str]:
    """Every `paper:` value anywhere in a manifest (cases today; wherever a later schema puts it)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "paper" and value is not None:
                yield str(value)
            else:
                yield from _paper_ids(value)
    elif isinstance(node, list):
        for item in node:
            yield from _paper_ids(item)


def _manifest_refs() -> dict[str, list[str]]:
    """Reference ids named by the manifests present now, mapped to the manifests naming them."""
    refs: dict[str, list[str]] = {}
    for manifest in sorted((ROOT / "kernels").glob("*/cases.yaml")):
        for ref in _paper_ids(yaml.safe_load(manifest.read_text())):
            refs.setdefault(ref, []).append(str(manifest.relative_to(ROOT)))
    return refs


def test_columns_and_row_count(reference: pd.DataFrame) -> None:
    assert list(reference.columns) == COLUMNS
    assert len(reference) >= MIN_ROWS, f"{len(reference)} rows, expected >= {MIN_ROWS}"
    assert not reference[COLUMNS].isna().any().any(), reference[reference[COLUMNS].isna().any(axis=1)].id.tolist()


def test_ids_unique_and_snake_case(reference: pd.DataFrame) -> None:
    dup = reference.id[reference.id.duplicated()].tolist()
    assert not dup, f"duplicate ids: {dup}"
    bad = [i for i in reference.id if not SNAKE.fullmatch(i)]
    assert not bad, f"ids not snake_case: {bad}"


def test_id_suffix_matches_arch(reference: pd.DataFrame) -> None:
    bad = [r.id for r in reference.itertuples() if not r.id.endswith(ARCH_SUFFIX.get(r.arch, "\0"))]
    assert not bad, f"ids whose suffix disagrees with their arch: {bad}"


def test_values_numeric_and_finite(reference: pd.DataFrame) -> None:
    values = pd.to_numeric(reference.value, errors="coerce")
    bad = reference.id[values.isna() | ~values.map(math.isfinite)].tolist()
    assert not bad, f"non-numeric or non-finite values: {bad}"


def test_units_and_archs_allowed(reference: pd.DataFrame) -> None:
    units = sorted(set(reference.unit) - UNITS)
    assert not units, f"units outside {sorted(UNITS)}: {units}"
    archs = sorted(set(reference.arch) - set(ARCH_SUFFIX))
    assert not archs, f"arch outside {sorted(ARCH_SUFFIX)}: {archs}"


def test_sources_name_a_section(reference: pd.DataFrame) -> None:
    bad = reference.id[~reference.source.str.match(r"§\S")].tolist()
    assert not bad, f"sources not starting with a section marker (§...): {bad}"


def test_both_arch_columns_present(reference: pd.DataFrame) -> None:
    assert {"sm_120", "sm_90"} <= set(reference.arch)
    sm90 = set(reference.id[reference.arch == "sm_90"])
    assert {"ffma_latency_sm90", "rcp_latency_sm90", "l2_capacity_sm90", "hmma_f16_latency_sm90"} <= sm90


def test_every_manifest_paper_id_exists(reference: pd.DataFrame) -> None:
    refs = _manifest_refs()
    missing = {ref: where for ref, where in refs.items() if ref not in set(reference.id)}
    assert not missing, f"paper: ids absent from {REFERENCE.relative_to(ROOT)}: {missing}"


def test_paper_ids_found_anywhere_in_a_manifest() -> None:
    """The manifest walk finds `paper:` wherever it sits, and ignores entries without one."""
    doc = {"cases": [{"id": "a", "paper": "ffma_latency_sm120"}, {"id": "b"}], "x": [{"paper": "y_sm90"}]}
    assert sorted(_paper_ids(doc)) == ["ffma_latency_sm120", "y_sm90"]
