"""Charts as inline SVG: an Altair chart rendered once, lines told apart by more than colour, coordinates rounded."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import altair as alt

SVG_ATTRIBUTE = re.compile(r'="([^"]*)"')
SVG_DECIMALS = re.compile(r"(\d\.\d\d)\d+")  # coordinates in attributes to 1/100 px (text is left as drawn)
# A footprint axis in KB labelled as a person writes sizes (48 KB, 24 MB, 2 GB): a Vega-Lite axis labelExpr.
KB_LABELS = (
    "datum.value >= 1048576 ? format(datum.value / 1048576, '~g') + ' GB' : datum.value >= 1024 ? "
    "format(datum.value / 1024, '~g') + ' MB' : format(datum.value, '~g') + ' KB'"
)


def svg(chart: alt.TopLevelMixin) -> str:
    """A chart rendered to inline SVG (vl-convert is imported here: a GPU machine that makes no pages lacks it)."""
    import vl_convert

    spec = _distinct(json.loads(chart.to_json()))
    spec.setdefault("config", {})["aria"] = False  # no per-mark descriptions: they were most of a chart's bytes
    drawn = SVG_ATTRIBUTE.sub(
        lambda m: '="' + SVG_DECIMALS.sub(r"\1", m.group(1)) + '"', vl_convert.vegalite_to_svg(spec)
    )
    return f'<div class="chart">{drawn}</div>'


def _distinct(spec: dict) -> dict:
    """Lines told apart by more than colour: every line mark coloured by a category also gets that category's
    point shape and dash, so two series on top of each other stay visible (nested specs included)."""
    mark = spec.get("mark")
    kind = mark.get("type") if isinstance(mark, dict) else mark
    enc = spec.get("encoding", {})
    color = enc.get("color", {})
    if kind == "line" and color.get("type") == "nominal" and "field" in color:
        same = {k: v for k, v in color.items() if k in ("field", "type", "title", "legend", "sort")}
        enc.setdefault("shape", same)
        enc.setdefault("strokeDash", same)
    for key in ("spec", "layer", "hconcat", "vconcat", "concat"):
        inner = spec.get(key)
        for part in inner if isinstance(inner, list) else [inner] if isinstance(inner, dict) else []:
            _distinct(part)
    return spec


def chunks(items: list[str], size: int = 10) -> list[list[str]]:
    """`items` in consecutive groups of at most `size` (a chart's series, so that its legend stays readable)."""
    return [items[i : i + size] for i in range(0, len(items), size)]
