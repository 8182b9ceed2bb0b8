"""The headline figures: what a GPU is like at a glance, for the index page and the README, read from the figures
table (never recomputed) with each figure's status and the paper's sm_120 figure labelled as another GPU's."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from .errors import SmdissectError
from .tables import point_text

# (category, figure name in the figures table, what a reader calls it)
HEADLINES: tuple[tuple[str, str, str], ...] = (
    ("latency", "ffma latency", "FFMA dependent latency"),
    ("latency", "ffma peak throughput", "FFMA peak issue rate"),
    ("latency", "dfma latency", "DFMA dependent latency"),
    ("latency", "mufu_rcp latency", "MUFU.RCP dependent latency"),
    ("memory", "chase L1 latency (random)", "L1 hit latency (pointer chase)"),
    ("memory", "chase L2 latency (random)", "L2 hit latency (pointer chase)"),
    ("memory", "shared-memory latency, 32-bit LDS chase (lane l on element l, no conflict)",
     "shared-memory latency (pure LDS chase)"),
    ("memory", "dram_read peak bandwidth", "DRAM read bandwidth"),
    ("memory", "l2_read peak bandwidth", "L2 read bandwidth"),
    ("tensorcore", "mma_f16_f32 latency", "mma.sync f16 latency"),
    ("tensorcore", "mma_f16_f32 peak flops", "mma.sync f16 (f32 accumulate) throughput"),
    ("tensorcore", "wgmma_f16_ss peak flops", "wgmma f16 throughput"),
    ("async", "TMA bulk best / LDG.128 best", "TMA bulk copy vs LDG.128 stream"),
    ("cluster", "cluster_barrier latency over cluster sizes", "barrier.cluster (arrive + wait)"),
    ("cluster", "DSMEM remote hop at cluster=2", "DSMEM remote hop over local shared memory"),
    ("launch", "serial dependent gap, 1 CTA", "kernel-to-kernel gap, serial launches"),
    ("launch", "PDL dependent gap, 1 CTA", "kernel-to-kernel gap, PDL"),
    ("launch", "h2d_pinned peak bandwidth", "PCIe host-to-device (pinned)"),
    ("power", "power_bf16_mma k per active SM (fit slope)", "power per busy SM, bf16 mma.sync"),
    ("scheduler", "scoreboard depth", "scoreboard depth (loads in flight per warp)"),
)
START, END = "<!-- headlines: start -->", "<!-- headlines: end -->"


def table(figures: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """One row per headline: the figure's value, unit, spread, status and reason, and the paper's sm_120 value
    where the figure stands for one (another GPU: an RTX PRO 5000)."""
    refs = reference.set_index("id")["value"].to_dict() if len(reference) else {}
    rows = []
    for category, name, label in HEADLINES:
        hit = figures[(figures["category"] == category) & (figures["figure"] == name)]
        if hit.empty:
            rows.append({"quantity": label, "category": category, "figure": name, "value": math.nan, "unit": "",
                         "spread": math.nan, "resolution": math.nan, "status": "missing",
                         "reason": "not in this run's figures", "at": "", "paper_sm120": math.nan})  # fmt: skip
            continue
        f = hit.iloc[0]
        rows.append({"quantity": label, "category": category, "figure": name, "value": float(f["value"]),
                     "unit": f["unit"], "spread": float(f["spread"]), "resolution": float(f["resolution"]),
                     "status": f["status"], "reason": f["reason"],
                     "at": point_text(f["params"]), "paper_sm120": refs.get(f["paper"], math.nan)})  # fmt: skip
    return pd.DataFrame(rows)


def markdown(rows: pd.DataFrame, figures: pd.DataFrame) -> str:
    """The headline table as the README shows it, after the run's figure counts by status."""
    from .report import number, share, status_counts

    counts = ", ".join(f"{n:,} {s}" for s, n in status_counts(figures).items())
    lines = [f"{len(figures):,} figures: {counts}.", "",
             "| quantity | measured | spread | status | paper, RTX PRO 5000 (sm_120, another GPU) |",
             "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for r in rows.itertuples(index=False):
        value = f"{number(r.value, resolution=r.resolution)} {r.unit}".strip() if not math.isnan(r.value) else \
            "not measured"
        paper = number(r.paper_sm120) if not math.isnan(r.paper_sm120) else ""
        lines.append(f"| {r.quantity} | {value} | {share(r.spread, r.value)} | {r.status} | {paper} |")
    return "\n".join(lines)


def update(readme: Path, block: str) -> bool:
    """Put `block` between the headline markers of `readme`; whether the file changed (a missing marker is a
    one-line error)."""
    text = readme.read_text()
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(text):
        raise SmdissectError(f"{readme} has no {START} ... {END} block: add the two markers where the table goes")
    new = pattern.sub(lambda _: f"{START}\n{block}\n{END}", text)
    if new != text:
        readme.write_text(new)
    return new != text
