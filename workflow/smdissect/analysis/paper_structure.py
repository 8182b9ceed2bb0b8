"""The seed paper's structure and coverage: its test sections (reference/paper_map.yaml) against smdissect's
categories and cases, a run's coverage beside the paper's, and docs/paper-map.md."""

from __future__ import annotations

import fnmatch
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

from .paper import COMPARED, MAP, REFERENCE, Entry, load, read_map, reference


def _in_section(section: dict[str, Any], row: pd.Series) -> bool:
    """Whether a row of the csv belongs to a section of the map (by its source or its id)."""
    return any(re.search(s, str(row["source"])) for s in section.get("sources", ())) or any(
        fnmatch.fnmatch(str(row["id"]), p) for p in section.get("ids", ())
    )


def _coverage_word(entries: list[Entry]) -> str:
    """covered (every row about a GPU has a counterpart), partly, not covered, or n/a (no such row)."""
    about_gpu = [e for e in entries if e.reason not in ("property of the paper",) and (e.reason != COMPARED or e.refs)]
    with_counterpart = [e for e in about_gpu if e.refs or e.where != MAP]
    if not about_gpu:
        return "n/a"
    if len(with_counterpart) == len(about_gpu):
        return "covered"
    return "partly" if with_counterpart else "not covered"


def structure(kernels: Path) -> pd.DataFrame:
    """The paper's test sections (reference/paper_map.yaml) with their rows, the smdissect categories and cases
    that measure their counterparts, how the rows are accounted for and whether the section is covered."""
    entries = load(kernels)
    ref = reference(kernels)
    out = []
    for section in read_map(kernels.parent / MAP)["sections"]:
        mine = [entries[r["id"]] for _, r in ref.iterrows() if _in_section(section, r)]
        refs = [r for e in mine for r in e.refs]
        categories = [r.category for r in refs] + [e.category for e in mine if e.category]
        hows = pd.Series([e.how if e.how != "reason" else f"reason: {e.reason}" for e in mine]).value_counts()
        out.append(
            {
                "section": section["title"],
                "sec": section.get("sec", ""),
                "rows": len(mine),
                "categories": ", ".join(dict.fromkeys(categories)),
                "cases": ", ".join(dict.fromkeys(f"{r.category}/{r.case}" for r in refs)),
                "accounted": "; ".join(f"{k} {v}" for k, v in hows.items()),
                "coverage": _coverage_word(mine),
            }
        )
    return pd.DataFrame(out)


def coverage(status: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """This run's planned points (case x parameter point) measured, static (with a reason) and failed, beside the
    paper's own categories, cases, trace items and coverage (its csv's coverage rows)."""
    paper = reference.set_index("id")["value"]
    run = status.drop_duplicates(["category", "case", "params"])
    counts = run["status"].value_counts()
    who = f"{run['gpu'].iloc[0]} ({run['arch'].iloc[0]})" if len(run) else "this run"
    planned = len(run)
    return pd.DataFrame(
        [
            {
                "who": who,
                "categories": run["category"].nunique(),
                "cases": len(run.drop_duplicates(["category", "case"])),
                "items": planned,
                "measured": int(counts.get("measured", 0)),
                "static": int(counts.get("static", 0)),
                "failed": int(counts.get("failed", 0)),
                "coverage %": 100 * counts.get("measured", 0) / planned if planned else math.nan,
            },
            {
                "who": "seed paper (RTX PRO 5000)",
                "categories": paper.get("coverage_categories_sm120", math.nan),
                "cases": paper.get("coverage_cases_min_sm120", math.nan),
                "items": paper.get("coverage_trace_items_sm120", math.nan),
                "measured": math.nan,
                "static": math.nan,
                "failed": math.nan,
                "coverage %": paper.get("coverage_percent_sm120", math.nan),
            },
        ]
    )


def unmeasured(status: pd.DataFrame) -> pd.DataFrame:
    """The planned points not measured on this run, grouped by case and reason (the reason's per-point prefix
    dropped), with how many points each."""
    rest = status[status["status"] != "measured"]
    why = [re.sub(r"^static: \S+ \{[^}]*\}: ", "", str(r)) for r in rest["reason"]]
    return (
        rest.assign(reason=why)
        .groupby(["category", "case", "status", "reason"], as_index=False)
        .agg(points=("params", "size"))
    )


def markdown(kernels: Path) -> str:
    """docs/paper-map.md: the paper's sections against smdissect's categories and cases, and how its rows are
    accounted for."""
    table = structure(kernels)
    entries = load(kernels)
    counts = pd.Series([e.how if e.how != "reason" else f"reason: {e.reason}" for e in entries.values()])
    lines = [
        "# The seed paper's structure in smdissect",
        "",
        f"Generated by `python -m smdissect paper_map --out docs/paper-map.md` from `{MAP}` (do not edit by hand).",
        "",
        f"The paper reports 21 test categories; its text and its {len(entries)} figures in `{REFERENCE}` name the "
        f"sections below. Each figure is tied to the case that measures its counterpart on the running GPU "
        "(a manifest's `paper:` or the map), derived from measured figures, or given a reason "
        "(`analysis.paper.REASONS`); `analysis.paper_accounting.accounting()` sets each beside this run's value.",
        "",
        "| paper section | sec | figures | smdissect categories | accounted | coverage |",
        "|---|---|---|---|---|---|",
        *(
            f"| {r.section} | {r.sec} | {r.rows} | {r.categories or '-'} | {r.accounted} | {r.coverage} |"
            for r in table.itertuples()
        ),
        "",
        "Coverage: *covered* where every figure of the section that is about a GPU has a counterpart here, *partly* "
        "where some have, *not covered* where none has, *n/a* where the section's figures are all about the paper.",
        "",
        "## How the figures are accounted for",
        "",
        "| how | figures |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in counts.value_counts().items()),
        "",
        "## Cases per section",
        "",
        *(f"- **{r.section}**: {r.cases or 'none'}" for r in table.itertuples()),
        "",
    ]
    return "\n".join(lines)
