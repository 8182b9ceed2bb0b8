"""The index page of one GPU: the device and its peaks against the documented ceilings, how much to trust the
figures, the headline figures, each category's key findings, the coverage (also in the paper's terms), the
instruction table and the cross-generation finding."""

from __future__ import annotations

import html
from pathlib import Path
from typing import cast

import pandas as pd

from ..core.files import write_text
from ..core.tables import FIGURE_STATUSES
from .evidence import STATUS_COLUMNS, headline_rows, readable
from .markup import badge, deftable, document, empty, fold, navigation, number, sections, table, table_of
from .report import lede, paper_rows, status_legend
from .sheet import TOLERANCE, Glance

METHOD = (
    "Each case is an nvcc microbenchmark built for the card's arch; the instruction it claims is checked in "
    "the SASS of its timed loop. It runs raw (clock64 around the timed loop, medians over repeats) and once "
    "under Nsight Compute (clocks left as found, --clock-control none), whose stall reasons and pipe counts "
    "cross-check the clock64 figures. Every figure on these pages is computed once, in the figures table, and "
    "judged by all its checks; its status says what evidence stands behind it (the table above), and a contradicted "
    "figure is never shown as a finding."
)


def _coverage_line(coverage: pd.DataFrame, run_arch: str | None) -> str:
    """What became of the planned points on this GPU's arch, and how many of the other archs were only built."""
    from ..analysis.coverage import STATES

    here = coverage[coverage["arch"] == run_arch][list(STATES)].sum() if run_arch else pd.Series(0, index=list(STATES))
    other = coverage[coverage["arch"] != run_arch]
    planned = int(here.sum())
    text = (
        f"<p>On this GPU ({html.escape(str(run_arch))}): <b>{int(here['measured']):,}</b> of {planned:,} planned "
        f"points measured ({100 * int(here['measured']) / max(planned, 1):.1f}%), "
        f"{int(here['static-only']):,} static with the reason given, {int(here['failed']):,} failed, "
        f"{int(here['missing']):,} missing."
    )
    for arch, g in other.groupby("arch"):
        text += f" {html.escape(str(arch))}: {int(g[list(STATES)].sum().sum()):,} points built and SASS-checked only."
    return text + "</p>"


def _category_rows(pages: list[dict[str, object]]) -> pd.DataFrame:
    """One row per category page: a link, its key findings and its figure and point counts."""
    rows = []
    for page in pages:
        link = f'<a href="{html.escape(str(page["href"]), quote=True)}">{html.escape(str(page["category"]))}</a>'
        figures = cast(dict[str, int], page.get("figures") or {})
        states = cast(dict[str, int], page.get("coverage") or {})
        key = cast(pd.DataFrame, page.get("key", pd.DataFrame()))
        found = "; ".join(
            f"{html.escape(str(r.quantity))} {number(r.value, resolution=r.resolution)} {html.escape(str(r.unit))}"
            for r in key.itertuples(index=False)
            if r.status != "contradicted"
        )
        rows.append(
            {"category": link, "key findings": found}
            | {s: int(figures.get(s, 0)) for s in FIGURE_STATUSES}
            | {
                "points measured": int(states.get("measured", 0)),
                "static": int(states.get("static-only", 0)),
                "failed": int(states.get("failed", 0)),
            }
        )
    return pd.DataFrame(rows)


def _badges(df: pd.DataFrame) -> pd.DataFrame:
    """A table's status columns as badges."""
    return df.assign(**{c: df[c].map(lambda s: badge(s) if s in FIGURE_STATUSES else "") for c in df if "status" in c})


def _device_sheet(glance: Glance) -> str:
    """The device sheet: each value with its figure's status, where it comes from on hover, and why where a value
    is not recorded."""
    rows = "".join(
        f'<tr><th>{html.escape(f.quantity)}</th><td title="{html.escape(f.source, quote=True)}">'
        + (f'{html.escape(f.value)} <span class="why">({html.escape(f.source)})</span>' if f.value == "not recorded"
           else f"{html.escape(f.value)} {badge(f.status) if f.status else ''}")
        + "</td></tr>"
        for f in glance.device
    )  # fmt: skip
    return f'<table class="prov sheet">{rows}</table>'


def first_screen(glance: Glance | None, totals: dict[str, int]) -> str:
    """The index's first screen: the device sheet and the trust summary, then the peaks of every compute ceiling
    against its documented one and each memory level's latency and bandwidth."""
    trust = status_legend(totals) + f'<p class="tolerance">{html.escape(TOLERANCE)}</p>'
    if glance is None:
        return f'<div class="glance"><section id="trust"><h2>How much to trust the figures</h2>{trust}</section></div>'
    peaks = (
        table(_badges(glance.compute), raw=("status",))
        + table(_badges(glance.levels), raw=("latency status", "bandwidth status"))
        + '<p><a href="roofline.html">The roofline: every ceiling, measured beside documented</a></p>'
    )
    return (
        f'<div class="glance"><section id="device"><h2>The device</h2>{_device_sheet(glance)}</section>'
        f'<section id="peaks"><h2>Peaks against the documented ceilings</h2>{peaks}</section></div>'
        f'<section id="trust"><h2>How much to trust the figures</h2>{trust}</section>'
    )


def _coverage_section(coverage: pd.DataFrame, run_arch: str | None, in_paper_terms: pd.DataFrame) -> str:
    """What became of the planned points, in the paper's terms too, and the points per category and arch."""
    if not len(coverage):
        return empty("nothing planned")
    return (
        _coverage_line(coverage, run_arch)
        + table_of(in_paper_terms)
        + fold("points per category and arch", table(coverage))
    )


def _generation_section(generation: pd.DataFrame, run_arch: str | None) -> str:
    """The paper's other-GPU figures against this GPU's, with a link to every figure of the paper."""
    if not (len(generation) and run_arch):
        return ""
    return (
        table(paper_rows(generation), raw=("status",)) + '<p><a href="compare-paper.html">Every figure of the '
        "paper, with its counterpart here or the reason there is none</a></p>"
    )


def _instruction_section(instructions: pd.DataFrame) -> str:
    """The instruction reference table, folded: each instruction's latency and peak issue rate."""
    shown = readable(instructions, {"latency (cycle)": "spread"}, ("peak (warp_inst/cycle/SM)",))
    if not len(shown):
        return ""
    return fold(f"{len(shown)} instructions: latency and peak issue rate", table(shown, raw=STATUS_COLUMNS))


def _not_measured_section(not_measured: pd.DataFrame) -> str:
    """The planned points not measured, grouped by case and reason, folded."""
    if not len(not_measured):
        return empty("none")
    return fold(
        f"{int(not_measured['points'].sum()):,} points in {len(not_measured)} groups, with why",
        table(not_measured),
    )


def render_index(
    out: Path,
    gpu: str,
    pages: list[dict[str, object]],
    provenance: dict[str, str],
    skipped: dict[str, str],
    instructions: pd.DataFrame,
    coverage: pd.DataFrame,
    not_measured: pd.DataFrame,
    headlines: pd.DataFrame,
    run_arch: str | None,
    paper: dict[str, pd.DataFrame],
    glance: Glance | None,
    gpus: str = "",
) -> None:
    """Write the index page: the device, its peaks and how much to trust them (`glance`, the first screen), what
    this GPU is like (headline figures), the method, each category's key findings, the coverage (also in the paper's
    terms), the instruction table and the cross-generation finding; `paper` holds the paper's 'generation',
    'coverage' and 'structure' tables (smdissect.analysis.paper_accounting, smdissect.analysis.paper_structure)."""
    title = f"smdissect: {gpu}"
    counts = [cast(dict[str, int], p.get("figures") or {}) for p in pages]
    totals = {s: sum(int(c.get(s, 0)) for c in counts) for s in FIGURE_STATUSES}
    structure = table_of(paper.get("structure", pd.DataFrame()))
    parts = [
        (
            "Headline figures",
            table(headline_rows(headlines), raw=("status",)) if len(headlines) else empty("no figures"),
        ),
        ("Method and setup", f"<p>{html.escape(METHOD)}</p>{deftable(provenance)}"),
        ("Categories", table(_category_rows(pages), raw=("category",)) if pages else empty("no category pages")),
        ("Coverage", _coverage_section(coverage, run_arch, paper.get("coverage", pd.DataFrame()))),
        (
            "Cross-generation: the paper's Hopper figures against this GPU",
            _generation_section(paper.get("generation", pd.DataFrame()), run_arch),
        ),
        ("Instruction reference table", _instruction_section(instructions)),
        (
            "The paper's sections in smdissect",
            fold("the paper's test sections, the categories that measure them and how much", structure),
        ),
        ("Planned points not measured", _not_measured_section(not_measured)),
    ]
    body = lede(title, provenance, skipped) + first_screen(glance, totals) + sections(parts)
    nav = navigation([str(p["category"]) for p in pages], "index", gpus=gpus, paper=bool(run_arch))
    write_text(out, document(title, body, nav))
