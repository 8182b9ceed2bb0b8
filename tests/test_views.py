"""The views found: each view module declares a category of the manifests, once, and meets the View contract (a
wrong signature is refused), the docs' worked example renders on the frozen H200 tables, and the median and
spread every page and figure uses."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pandas as pd
import pytest
from helpers import ROOT, RUN
from smdissect.core import catalog, stats, tables
from smdissect.core.errors import SmdissectError
from smdissect.pages import category_sections, markup, views
from smdissect.stages import pages as pages_stage

VIEW_FILES = sorted(
    p.stem for p in (ROOT / "workflow" / "smdissect" / "pages" / "views").glob("*.py") if p.stem != "__init__"
)
LATENCY = RUN / "sm_90a" / "latency"


def test_every_view_file_is_found_for_a_category_and_the_rest_have_the_common_sections() -> None:
    found = views.views()
    assert {view.__module__ for view in found.values()} == {f"smdissect.pages.views.{name}" for name in VIEW_FILES}
    assert set(found) < set(catalog.categories(ROOT / "kernels"))  # a CATEGORY that names no manifest is a typo
    assert views.view_of("latency") is views.common_only and views.view_of("memory") is found["memory"]


def test_two_view_modules_of_one_category_are_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.import_module("smdissect.pages.views.launch"), "CATEGORY", "memory")
    views.views.cache_clear()
    try:
        match = r"views\.memory and smdissect\.pages\.views\.launch both declare CATEGORY = 'memory': keep one"
        with pytest.raises(SmdissectError, match=match) as err:
            views.views()
    finally:
        monkeypatch.undo()
        views.views.cache_clear()
    assert "\n" not in str(err.value)


def frames_only(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    return []


def extra_argument(frames: dict[str, pd.DataFrame], run_arch: str) -> list[tuple[str, str]]:
    return []


def keyword_only(*, frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    return []


def html_string(frames: dict[str, pd.DataFrame]) -> str:
    return ""


def one_table(raw: pd.DataFrame) -> list[tuple[str, str]]:
    return []


def unannotated(frames):
    return []


@pytest.mark.parametrize(
    "wrong", [extra_argument, keyword_only, html_string, one_table, unannotated, lambda frames: []]
)
def test_a_view_of_another_signature_is_refused_when_registered(wrong: object) -> None:
    with pytest.raises(SmdissectError, match=r"does not match View: it takes \(frames"):
        views.checked(wrong)  # type: ignore[arg-type]


def test_a_view_of_the_contract_is_registered_as_it_is() -> None:
    assert views.checked(frames_only) is frames_only


def docs_example() -> str:
    """The python block of docs/cases.md's 'Adding a view' section."""
    text = (ROOT / "docs" / "cases.md").read_text()
    section = text[text.index("## Adding a view") :]
    section = section[: section.index("\n## ")] if "\n## " in section else section
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


def test_the_docs_example_view_renders_on_the_committed_latency_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module: dict[str, object] = {"__name__": "smdissect.pages.views.latency"}
    exec(compile(docs_example(), "docs/cases.md", "exec"), module)  # the example as views/latency.py would be
    monkeypatch.setitem(views.views(), "latency", views.checked(module["sections"]))  # type: ignore[arg-type]
    out = tmp_path / "latency.html"
    inputs = {kind: sorted(LATENCY.rglob(f"{kind}.parquet")) for kind in ("figures", "status")}
    pages_stage.report_page(ROOT / "kernels", "latency", inputs, {}, out, {}, ["latency"])
    page = out.read_text()
    ids = re.findall(r'<section id="([^"]+)">', page)
    assert ids[:2] == ["findings", "ffma-dependent-latency"]  # the view's sections come right after the findings
    figures = tables.read("figures", inputs["figures"])
    ffma = figures[figures["figure"] == "ffma latency"].iloc[0]
    mine = page[page.index('<section id="ffma-dependent-latency">') :]
    mine = mine[: mine.index("</section>")]
    assert f"<td>{markup.number(ffma['value'])}</td>" in mine and f'<span class="s-{ffma["status"]}">' in mine
    assert "cycles per dependent FFMA" in mine


def test_a_page_names_its_coded_parameter_values_before_the_views_sections(tmp_path: Path) -> None:
    out = tmp_path / "memory.html"
    inputs = {"figures": sorted((LATENCY.parent / "memory").rglob("figures.parquet"))}
    pages_stage.report_page(ROOT / "kernels", "memory", inputs, {}, out, {}, ["memory"])
    page = out.read_text()
    ids = re.findall(r'<section id="([^"]+)">', page)
    assert ids[:2] == ["findings", "coded-parameter-values"]
    coded = page[page.index('<section id="coded-parameter-values">') :]
    coded = coded[: coded.index("</section>")]
    assert "<td>type=0</td><td>u32</td>" in coded and "<td>stride_b=0</td>" in coded
    assert "type=0" in page[page.index("</section>", page.index("coded-parameter-values")) :]  # names it explains


def test_summary_is_the_median_the_range_and_the_count_of_each_group() -> None:
    rows = pd.DataFrame({"case": ["b", "a", "b", "b", "a"], "params": ["{}"] * 5, "value": [3.0, 10.0, 1.0, 8.0, 4.0]})
    sorted_ = stats.summary(rows, ["case", "params"])
    assert sorted_.to_dict("list") == {
        "case": ["a", "b"],
        "params": ["{}", "{}"],
        "value": [7.0, 3.0],
        "spread": [6.0, 7.0],
        "samples": [2, 3],
    }
    assert stats.summary(rows, ["case"], sort=False)["case"].tolist() == ["b", "a"]  # first seen first


def test_points_not_measured_are_grouped_by_why_and_failures_keep_their_point() -> None:
    status = pd.DataFrame(
        {
            "case": ["a", "a", "b", "c"],
            "params": ['{"n":1}', '{"n":2}', '{"n":1}', '{"n":3}'],
            "status": ["static", "static", "static", "failed"],
            "reason": ["sm_80 lacks x", "sm_80 lacks x", "sm_80 lacks x", "error: crashed"],
            "flag": [""] * 4,
            "family": ["f"] * 4,
        }
    )
    html = category_sections.status(status, {})
    rows = re.findall(r"<tr><td>(.*?)</td><td class=\"num\">(\d+)</td><td>(\w+)</td><td>(.*?)</td></tr>", html)
    assert rows == [("a, b", "3", "static", "sm_80 lacks x"), ("c", "1", "failed", "at n=3: error: crashed")]
    assert "4 points not measured, grouped by why" in html
