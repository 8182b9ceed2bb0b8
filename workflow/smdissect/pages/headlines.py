"""The headline figures: what a GPU is like at a glance, for the index page and the README, read from the figures
table (never recomputed) with each figure's status and the paper's sm_120 figure labelled as another GPU's. Which
figures they are is each manifest's `findings:` (catalog.findings)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ..core import files
from ..core.catalog import Finding
from ..core.tables import point_text


def ranked(found: Iterable[Finding]) -> list[Finding]:
    """The findings the index's headline table shows, in the places their manifests give them."""
    return sorted((f for f in found if f.headline), key=lambda f: f.headline)


def table(figures: pd.DataFrame, reference: pd.DataFrame, entries: Iterable[Finding]) -> pd.DataFrame:
    """One row per finding: the figure's value, unit, spread, status and reason, and the paper's sm_120 value where
    the figure stands for one (another GPU: an RTX PRO 5000)."""
    refs = reference.set_index("id")["value"].to_dict() if len(reference) else {}
    rows = []
    for category, name, label, _ in entries:
        hit = figures[(figures["category"] == category) & (figures["figure"] == name)]
        if hit.empty:
            rows.append(
                {
                    "quantity": label,
                    "category": category,
                    "figure": name,
                    "value": math.nan,
                    "unit": "",
                    "spread": math.nan,
                    "resolution": math.nan,
                    "status": "missing",
                    "reason": "not in this run's figures",
                    "at": "",
                    "paper_sm120": math.nan,
                }
            )
            continue
        f = hit.iloc[0]
        rows.append(
            {
                "quantity": label,
                "category": category,
                "figure": name,
                "value": float(f["value"]),
                "unit": f["unit"],
                "spread": float(f["spread"]),
                "resolution": float(f["resolution"]),
                "status": f["status"],
                "reason": f["reason"],
                "at": point_text(f["params"]),
                "paper_sm120": refs.get(f["paper"], math.nan),
            }
        )
    return pd.DataFrame(rows)


def markdown(rows: pd.DataFrame, figures: pd.DataFrame) -> str:
    """The headline table as the README shows it, after the run's figure counts by status."""
    from .evidence import status_counts
    from .markup import number, share

    counts = ", ".join(f"{n:,} {s}" for s, n in status_counts(figures).items())
    lines = [
        f"{len(figures):,} figures: {counts}.",
        "",
        "| quantity | measured | spread | status | paper, RTX PRO 5000 (sm_120, another GPU) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows.itertuples(index=False):
        value = (
            f"{number(r.value, resolution=r.resolution)} {r.unit}".strip()
            if not math.isnan(r.value)
            else "not measured"
        )
        paper = number(r.paper_sm120) if not math.isnan(r.paper_sm120) else ""
        lines.append(f"| {r.quantity} | {value} | {share(r.spread, r.value)} | {r.status} | {paper} |")
    return "\n".join(lines)


def update(readme: Path, block: str) -> bool:
    """Put `block` between the headline markers of `readme`; whether the file changed."""
    return files.replace_block(readme, "headlines", block)
