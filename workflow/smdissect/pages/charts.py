"""Charts as inline SVG: an Altair chart rendered once with its title and description as the text alternative, lines
told apart by more than colour, coordinates rounded; the pieces every view shares: one status palette, size axes at
powers of two, at most SERIES series per panel, bars sorted by value with an outlier on a panel of its own."""

from __future__ import annotations

import html
import json
import math
import re
from typing import TYPE_CHECKING

from ..core.errors import SmdissectError
from ..core.tables import FIGURE_STATUSES

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd

SVG_ATTRIBUTE = re.compile(r'="([^"]*)"')
SVG_DECIMALS = re.compile(r"(\d\.\d)\d+")  # coordinates in attributes to 1/10 px (text is left as drawn)
SERIES = 6  # series one panel shows; more are split over more panels
SIZE_TICKS = 12  # size ticks one axis shows at most: every power of two, else every 4th, 16th, ...
OUTLIER = 8  # a bar this many times the median of the others is drawn on a panel of its own
# The status of a figure, drawn in the same colours on every chart of every page (the badges' hues, darker).
STATUS_COLORS = dict(zip(FIGURE_STATUSES, ("#3a9a4a", "#4a7fc1", "#9a9a9a", "#c0392b"), strict=True))
# A size axis in KiB labelled as a person writes sizes (48 KiB, 24 MiB, 2 GiB): a Vega-Lite axis labelExpr.
KIB_LABELS = (
    "datum.value >= 1048576 ? format(datum.value / 1048576, '~g') + ' GiB' : datum.value >= 1024 ? "
    "format(datum.value / 1024, '~g') + ' MiB' : format(datum.value, '~g') + ' KiB'"
)


def svg(chart: alt.TopLevelMixin, description: str, title: str = "") -> str:
    """A chart rendered to inline SVG (vl-convert is imported here: a GPU machine that makes no pages lacks it), with
    its text alternative: `title` (else the chart's own) and `description` as the SVG's title and desc; tick labels
    that would overlap are thinned."""
    import vl_convert

    spec = _distinct(json.loads(chart.to_json()))
    own = spec.get("title", "")
    title = title or (own.get("text", "") if isinstance(own, dict) else str(own))
    if not title or not description:
        raise SmdissectError("a chart needs a title and a description: pass charts.svg(chart, description, title)")
    config = spec.setdefault("config", {})
    config["aria"] = False  # no per-mark descriptions: they were most of a chart's bytes
    config.setdefault("axis", {})["labelOverlap"] = True
    drawn = SVG_ATTRIBUTE.sub(
        lambda m: '="' + SVG_DECIMALS.sub(r"\1", m.group(1)) + '"', vl_convert.vegalite_to_svg(spec)
    )
    name = html.escape(title, quote=True)
    alt_text = f' role="img" aria-label="{name}"><title>{name}</title><desc>{html.escape(description)}</desc>'
    return f'<div class="chart">{drawn.replace(">", alt_text, 1)}</div>'


def status_color(field: str = "status") -> alt.Color:
    """A colour encoding of a figure status, in the one palette of every page (STATUS_COLORS)."""
    import altair as alt

    scale = alt.Scale(domain=list(STATUS_COLORS), range=list(STATUS_COLORS.values()))
    return alt.Color(f"{field}:N", scale=scale, title="status")


def kib_axis(sizes: pd.Series, title: str) -> alt.Axis:
    """An axis of sizes in KiB (log scale) ticked at powers of two (every 4th, 16th, ... when there are more than
    SIZE_TICKS) and labelled 48 KiB, 24 MiB, 2 GiB."""
    import altair as alt

    low, high = (math.log2(v) for v in (sizes[sizes > 0].min(), sizes.max()))
    powers = list(range(math.floor(low), math.ceil(high) + 1))
    step = 1
    while len(powers[::step]) > SIZE_TICKS:
        step *= 2
    return alt.Axis(values=[2.0**k for k in powers[::step]], labelExpr=KIB_LABELS, title=title)


def log2_lines(
    data: pd.DataFrame, x: str, x_title: str, y_title: str, series: str, description: str, title: str
) -> str:
    """One line per `series` value of `value` against `x` on a log-2 axis (a cost over warps, CTAs, sizes)."""
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    chart = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X(f"{x}:Q", scale=alt.Scale(type="log", base=2), title=x_title),
            y=alt.Y("value:Q", title=y_title),
            color=alt.Color(f"{series}:N"),
        )
        .properties(width=480, height=260)
    )
    return svg(chart, description, title)


def status_bars(data: pd.DataFrame, label: str, title: str, axis: str, description: str) -> str:
    """One bar per `label` of `data`'s `value`, largest first, coloured by `status`; a bar over OUTLIER times the
    median of the others on a panel of its own (its own axis), so that it does not flatten the rest."""
    import altair as alt

    median = data["value"].median()
    apart = data["value"] > OUTLIER * median if median > 0 else data["value"] != data["value"]
    panels = []
    for part, note in ((data[~apart], title), (data[apart], f"apart: over {OUTLIER}x the median")):
        if len(part):
            panels.append(
                alt.Chart(part, title=note)
                .mark_bar()
                .encode(
                    x=alt.X(f"{label}:N", sort="-y", title=None),
                    y=alt.Y("value:Q", title=axis),
                    color=status_color(),
                )
                .properties(width=alt.Step(22))
            )
    chart = alt.hconcat(*panels).resolve_scale(y="independent") if len(panels) > 1 else panels[0]
    return svg(chart, description, title)


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


def chunks(items: list[str], size: int = SERIES) -> list[list[str]]:
    """`items` in consecutive groups of at most `size` (a chart's series, so that its legend stays readable)."""
    return [items[i : i + size] for i in range(0, len(items), size)]
