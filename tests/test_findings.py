"""Key findings live beside their cases: each manifest's `findings:` names its figures as a reader calls them, the
index's headline places are given once each, and the pages and README read them through catalog.findings."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from helpers import ROOT, RUN
from smdissect.core import catalog, tables
from smdissect.core.errors import SmdissectError
from smdissect.pages import headlines

KERNELS = ROOT / "kernels"


def test_headline_places_run_from_one_without_a_gap() -> None:
    found = catalog.findings(KERNELS, catalog.categories(KERNELS))
    places = [f.headline for f in headlines.ranked(found)]
    assert places == list(range(1, len(places) + 1)) and len(places) >= 20
    assert {f.category for f in found} == set(catalog.categories(KERNELS))  # every category names its findings


def test_each_finding_of_the_frozen_run_is_one_of_its_figures() -> None:
    figures = tables.read("figures", tables.find("figures", RUN))
    measured = sorted(set(figures["category"]))
    rows = headlines.table(figures, pd.DataFrame(), catalog.findings(KERNELS, measured))
    assert len(rows) and "missing" not in set(rows["status"]), rows[rows["status"] == "missing"]["figure"].tolist()


def test_a_headline_place_given_twice_is_a_one_line_error(tmp_path: Path) -> None:
    kernels = tmp_path / "kernels"
    for category in ("latency", "sync"):
        shutil.copytree(KERNELS / category, kernels / category)
    text = (kernels / "sync" / "cases.yaml").read_text()
    (kernels / "sync" / "cases.yaml").write_text(text.replace("headline: 29}", "headline: 29, place: 1}"))
    with pytest.raises(SmdissectError, match=r"findings/\d+: Additional properties"):
        catalog.findings(kernels, ["latency", "sync"])
    catalog.manifest.cache_clear()
    (kernels / "sync" / "cases.yaml").write_text(text.replace("headline: 29}", "headline: 1}"))
    with pytest.raises(SmdissectError, match="findings: headline 1 is given twice: number them apart") as err:
        catalog.findings(kernels, ["latency", "sync"])
    assert "\n" not in str(err.value)
    catalog.manifest.cache_clear()
