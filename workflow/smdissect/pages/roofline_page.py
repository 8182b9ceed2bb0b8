"""The roofline page, drawn from the roofline file alone (analysis.roofline): a log-log chart of every ceiling,
measured solid beside documented dashed, and the table of the ceilings with the figures they come from."""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.files import write_text
from ..core.tables import FIGURE_STATUSES
from . import charts
from .markup import badge, document, empty, sections, table
from .sheet import ceilings

SOURCES = ("measured", "documented")
SAME_LINE = 1.1  # ceilings closer than this ratio share one label


def _ceiling(entry: dict[str, Any], source: str) -> float | None:
    """A ceiling's rate per second (FLOP/s, OP/s or B/s) from `source`, None where it has none."""
    block = entry.get(source)
    return float(block["per_second"]) if block else None


def _labels(entries: list[dict[str, Any]]) -> list[tuple[float, str]]:
    """One label per measured ceiling level, ceilings within SAME_LINE of each other named together."""
    found = sorted((v, e["label"]) for e in entries if (v := _ceiling(e, "measured")))
    out: list[tuple[float, str]] = []
    for value, label in found:
        if out and value / out[-1][0] < SAME_LINE:
            out[-1] = (out[-1][0], f"{out[-1][1]} / {label}")
        else:
            out.append((value, label))
    return out


def lines(data: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame, tuple[float, float]]:
    """The chart's segments (x to x2 in FLOP per byte, y to y2 in TFLOPS) and labels, and its x range in powers of two:
    each compute ceiling flat from where it meets the fastest memory, each memory ceiling rising to the top one."""
    compute = [v for e in data["compute"] for s in SOURCES if (v := _ceiling(e, s))]
    memory = [v for e in data["memory"] for s in SOURCES if (v := _ceiling(e, s))]
    lo = 2.0 ** math.floor(math.log2(min(compute) / max(memory) / 4))
    hi = 2.0 ** math.ceil(math.log2(max(compute) / min(memory) * 4))
    rows = []
    for e in data["compute"]:
        for s in SOURCES:
            if v := _ceiling(e, s):
                rows.append({"source": s, "x": v / max(memory), "x2": hi, "y": v / 1e12, "y2": v / 1e12})
    for e in data["memory"]:
        for s in SOURCES:
            if v := _ceiling(e, s):
                rows.append(
                    {"source": s, "x": lo, "x2": max(compute) / v, "y": v * lo / 1e12, "y2": max(compute) / 1e12}
                )
    labels = [{"x": hi, "y": v / 1e12, "text": t, "align": "right"} for v, t in _labels(data["compute"])]
    labels += [{"x": lo, "y": v * lo / 1e12, "text": t, "align": "left"} for v, t in _labels(data["memory"])]
    return pd.DataFrame(rows), pd.DataFrame(labels), (lo, hi)


def chart(data: dict[str, Any]) -> str:
    """The log-log roofline: attainable TFLOPS (TOPS for integer formats) against arithmetic intensity."""
    import altair as alt

    segments, labels, (lo, hi) = lines(data)
    xs = [2.0**k for k in range(int(math.log2(lo)), int(math.log2(hi)) + 1, 2)]
    ys = [10.0**k for k in range(-3, 7) if segments["y"].min() / 10 < 10.0**k < segments["y2"].max() * 10]
    x = alt.X(
        "x:Q",
        scale=alt.Scale(type="log", base=2, domain=[lo, hi]),
        axis=alt.Axis(values=xs, format="~g", title="arithmetic intensity (FLOP per byte)"),
    )
    y = alt.Y(
        "y:Q",
        scale=alt.Scale(type="log"),
        axis=alt.Axis(values=ys, format="~g", title="attainable TFLOPS (TOPS for integer formats)"),
    )
    dash = alt.StrokeDash("source:N", scale=alt.Scale(domain=list(SOURCES), range=[[1, 0], [6, 4]]), title="")
    color = alt.Color("source:N", scale=alt.Scale(domain=list(SOURCES), range=["#1f5fa8", "#777777"]), title="")
    drawn = [  # documented over measured, so that a dashed line shows where the two coincide
        alt.Chart(segments[segments["source"] == s])
        .mark_rule(strokeWidth=2 if s == "measured" else 1.5)
        .encode(x, y, alt.X2("x2:Q"), alt.Y2("y2:Q"), color, dash)
        for s in SOURCES
    ]
    text = [
        alt.Chart(labels[labels["align"] == side]).mark_text(align=side, dy=-7, fontSize=11).encode(x, y, text="text:N")
        for side in ("left", "right")
    ]
    title = f"Roofline of the {data['gpu']} ({data['arch']}): measured beside documented"
    description = (
        f"Log-log roofline of the {data['gpu']}: attainable TFLOPS against FLOP per byte. Solid lines are the run's "
        "measured ceilings, dashed grey lines the documented ones; flat lines are compute ceilings per format, rising "
        "lines memory bandwidths per level. Compute ceilings: "
        + "; ".join(f"{t} {v / 1e12:,.0f} T" for v, t in _labels(data["compute"]))
        + ". Memory ceilings: "
        + "; ".join(f"{t} {v / 1e9:,.0f} GB/s" for v, t in _labels(data["memory"]))
        + "."
    )
    layered = alt.layer(*drawn, *text).properties(width=900, height=480, title=title)
    return charts.svg(layered, description)


def render(out: Path, data: dict[str, Any], nav: str) -> None:
    """Write the roofline page of a roofline file."""
    title = f"smdissect: roofline of the {data['gpu'] or 'run'}"
    rows = ceilings(data)
    listing = (
        table(rows.assign(status=[badge(s) if s in FIGURE_STATUSES else "" for s in rows["status"]]), raw=("status",))
        if len(rows)
        else empty("no ceiling: the run measured none and the documents give none for this GPU")
    )
    drawable = any(e["measured"] or e["documented"] for e in data["compute"]) and any(
        e["measured"] or e["documented"] for e in data["memory"]
    )
    note = (
        "<p>Each measured ceiling is the best figure of the run for it (named with its status), converted to the "
        "whole GPU at the SM clock its launches ran at; each documented one comes from smdissect.core.archs "
        "(datasheet, whitepaper or programming guide). The same values are in <code>roofline.json</code> beside "
        "this page.</p>"
    )
    parts = [
        ("The roofline", chart(data) if drawable else empty("no compute or no memory ceiling to draw")),
        ("Every ceiling", listing),
    ]
    body = f"<h1>{html.escape(title)}</h1>{note}" + sections(parts)
    write_text(out, document(title, body, nav))
