"""Report view of the async category: TMA bandwidth against outstanding copies and CTAs, the TMA / LDG bandwidth
ratio of one run, dependent copy latency by level and size, L2 cache hints, and synchronisation costs."""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from smdissect import report

TARGET = 0.90  # TMA bulk best over LDG best that the bulk path should reach
NEAR_PEAK = 0.90  # a curve point within 10% of its best counts as at the peak
POLICIES = {0: "no hint", 1: "evict_last working set", 2: "evict_first streaming set",
            3: "evict_last + persisting set-aside"}  # fmt: skip
TMA = ["bulk_depth", "bulk_ctas", "tensor_depth", "tensor_ctas"]
LATENCY = ["cp_async_ca_latency", "cp_async_cg_latency", "bulk_latency", "tensor_latency"]


def first_reaching(curve: pd.DataFrame, axis: str, fraction: float = NEAR_PEAK) -> float:
    """The smallest `axis` value whose bandwidth is within `fraction` of the curve's best, NaN for no curve."""
    if curve.empty:
        return math.nan
    best = curve["value"].max()
    return float(curve.loc[curve["value"] >= fraction * best, axis].min())


def level(footprint_kb: float) -> str:
    """Where a chase footprint lives: L1 (up to 256 KB), L2 (up to 32 MB, read warm) or DRAM."""
    return "L1" if footprint_kb <= 256 else "L2" if footprint_kb <= 32768 else "DRAM"


def ratio_sentence(tma_best: float, ldg_best: float) -> str:
    """What the best TMA bulk bandwidth is against the best LDG.128 bandwidth of the same run."""
    if not (tma_best > 0 and ldg_best > 0):
        return "no TMA-versus-LDG ratio: one of the two streaming measurements is missing"
    ratio = tma_best / ldg_best
    verdict = "meets" if ratio >= TARGET else "is below"
    return (
        f"TMA bulk best {tma_best:.0f} GB/s / LDG.128 best {ldg_best:.0f} GB/s = {ratio:.3f} (same binary, same "
        f"4 GiB buffer, same run): {verdict} the {TARGET:.2f} target"
    )


def _curve_chart(data: pd.DataFrame, axis: str, title: str) -> str:
    data = data.assign(series=data["case"] + " " + data["bytes"].astype(int).astype(str) + " B")
    if "outstanding" in data and axis != "outstanding":
        data["series"] += " x" + data["outstanding"].astype(int).astype(str)
    chart = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X(f"{axis}:Q", scale=alt.Scale(type="log", base=2), title=title),
            y=alt.Y("value:Q", title="GB/s"),
            color=alt.Color("series:N", title=None),
        )
        .properties(width=560, height=280)
    )
    return report.svg(chart)


def _sweep(raw: pd.DataFrame | None, cases: list[str], keys: list[str], labels: tuple[str, str, str], missing: str,
           note: str) -> str:  # fmt: skip
    """TMA bandwidth along keys[0], one curve per (case, keys[1]): the chart, then per curve its best and the first
    keys[0] within NEAR_PEAK of it; `labels`: the chart's axis title, that first value's name, keys[1]'s name."""
    data = report.points(raw, cases, "bandwidth", keys)
    if data.empty:
        return report.empty(missing)
    title, reaching, curve = labels
    found = pd.DataFrame(
        [
            {"case": c, curve: int(v), "best GB/s": g["value"].max(),
             f"{reaching} for {NEAR_PEAK:.0%} of best": first_reaching(g, keys[0])}
            for (c, v), g in data.groupby(["case", keys[1]])
        ]
    )  # fmt: skip
    return _curve_chart(data, keys[0], title) + report.empty(note) + report.table(found)


def _depth(raw: pd.DataFrame | None) -> str:
    labels = ("copies in flight per CTA", "outstanding copies", "bytes per copy")
    note = (
        "one CTA per SM, one producer thread keeping N copies in flight, four warps summing every copied word; "
        "the paper (RTX PRO 5000, sm_120) reports that 90% of peak needs at least 32 outstanding copies"
    )
    keys = ["outstanding", "bytes", "ctas"]
    return _sweep(raw, ["bulk_depth", "tensor_depth"], keys, labels, "no TMA outstanding-copy measurements", note)


def _ctas(raw: pd.DataFrame | None) -> str:
    note = "the paper (RTX PRO 5000, sm_120, 110 SMs) saturates DRAM with about 76 CTAs of TMA copies"
    keys, labels = ["ctas", "outstanding", "bytes"], ("CTAs", "CTAs", "outstanding")
    return _sweep(raw, ["bulk_ctas", "tensor_ctas"], keys, labels, "no TMA CTA-count measurements", note)


def _versus_ldg(raw: pd.DataFrame | None) -> str:
    cases = [*TMA, "cp_async_stream", "ldg_stream"]
    data = report.points(raw, cases, "bandwidth", [])
    if data.empty:
        return report.empty("no streaming bandwidth measurements")
    best = data.loc[data.groupby("case")["value"].idxmax(), ["case", "params", "value", "spread"]]
    ldg = best.loc[best["case"] == "ldg_stream", "value"]
    ldg_best = float(ldg.iloc[0]) if len(ldg) else math.nan
    best["of LDG best"] = best["value"] / ldg_best
    bulk = best.loc[best["case"].isin(["bulk_depth", "bulk_ctas"]), "value"]
    sentence = ratio_sentence(float(bulk.max()) if len(bulk) else math.nan, ldg_best)
    why = ""
    depth = report.points(raw, ["bulk_depth"], "bandwidth", ["outstanding"])
    if sentence.endswith("below the 0.90 target") and not depth.empty:
        top = depth.groupby("outstanding")["value"].max()
        rising = top.iloc[-1] > top.iloc[:-1].max() if len(top) > 1 else False
        why = report.empty(
            f"bulk bandwidth at the deepest ring ({int(top.index[-1])} copies in flight) "
            + ("is still rising: more copies in flight per SM would be needed" if rising else "has levelled off")
        )
    table = best.rename(columns={"value": "best GB/s", "spread": "spread (GB/s)"})
    return report.empty(sentence) + why + report.table(table)


def _latency(raw: pd.DataFrame | None) -> str:
    data = report.points(raw, LATENCY, "latency", ["bytes", "footprint_kb"])
    if data.empty:
        return report.empty("no async-copy latency measurements")
    data["level"] = data["footprint_kb"].map(level)
    table = data.pivot_table(index=["case", "bytes"], columns="level", values="value").reset_index()
    table.columns = [f"{c} (cycle)" if c in ("L1", "L2", "DRAM") else c for c in table.columns]
    note = report.empty(
        "one thread, each copy's slot names the next (random cycle): a step is issue, transfer, completion, the "
        "wait and one ld.shared; L1/L2 footprints are read first, DRAM ones (1 GB) include TLB misses"
    )
    return note + report.table(table)


def _hints(raw: pd.DataFrame | None) -> str:
    data = report.points(raw, ["bulk_l2_hint"], "bandwidth", ["policy"])
    if data.empty:
        return report.empty("no L2 cache-hint measurements")
    base = data.loc[data["policy"] == 0, "value"]
    data["hint"] = data["policy"].map(POLICIES)
    data["vs no hint"] = data["value"] / (float(base.iloc[0]) if len(base) else math.nan)
    note = report.empty(
        "a working set of half the L2 is bulk-read, then 4 L2s of other data streamed, then the working set re-read "
        "(timed): a hint that protects the working set turns the re-read into L2 hits"
    )
    return note + report.table(
        data[["hint", "value", "spread", "vs no hint"]].rename(columns={"value": "re-read GB/s"})
    )


def elect_table(raw: pd.DataFrame | None) -> pd.DataFrame:
    """The elect.sync loop step, the control step, their difference (metrics step, control, cost) and its spread;
    empty without them."""
    if raw is None or raw.empty:
        return pd.DataFrame()
    rows = raw[(raw["case"] == "elect_sync_cost") & raw["metric"].isin(["step", "control", "cost"])]
    if set(rows["metric"]) != {"step", "control", "cost"}:
        return pd.DataFrame()
    median = rows.groupby("metric")["value"].median()
    cost = rows.loc[rows["metric"] == "cost", "value"]
    row = {"step (cycle)": median["step"], "control (cycle)": median["control"],
           "elect.sync adds (cycle)": median["cost"], "spread": cost.max() - cost.min()}  # fmt: skip
    return pd.DataFrame([row])


def elect_sentence(table: pd.DataFrame) -> str:
    """What elect_table says: the latency ELECT adds to one warp's dependent chain."""
    one = table.iloc[0]
    return (
        f"One warp: a loop step with elect.sync takes {one['step (cycle)']:.1f} cycles, the same step without it "
        f"{one['control (cycle)']:.1f}: ELECT and the move of its lane id to a register add "
        f"{one['elect.sync adds (cycle)']:.1f} cycles to a dependent chain"
    )


def _elect(raw: pd.DataFrame | None) -> str:
    table = elect_table(raw)
    if table.empty:
        return report.empty("no elect.sync step and control measurements")
    note = (
        "ptxas compiles elect.sync to ELECT, which reads no operand (the membermask only promises that every executing "
        "thread is in it) and keeps one per basic block, so each step is one loop iteration whose exit branch waits on "
        "the step's lane id; the control is the same loop in the same launch without the ELECT"
    )
    return report.empty(elect_sentence(table)) + report.empty(note) + report.table(table)


def _costs(raw: pd.DataFrame | None) -> str:
    if raw is None or raw.empty:
        return report.empty("no cost measurements")
    data = report.points(raw, sorted(c for c in raw["case"].unique() if c.endswith("_cost")), "cost", [])
    if data.empty:
        return report.empty("no cost measurements")
    data["op"] = data["case"].str.removesuffix("_cost")
    table = data[["op", "value", "spread"]].rename(columns={"value": "cycles per op", "spread": "spread"})
    return report.table(table) + _elect(raw)


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The async category's charts and tables, each saying so when its measurements are missing."""
    raw = frames.get("raw")
    return [
        ("TMA bandwidth versus copies in flight per CTA", _depth(raw)),
        ("TMA bandwidth versus CTAs", _ctas(raw)),
        ("TMA bulk versus LDG.128 (same run)", _versus_ldg(raw)),
        ("Dependent copy latency (L1 / L2 / DRAM)", _latency(raw)),
        ("L2 cache hints", _hints(raw)),
        ("Synchronisation costs", _costs(raw)),
    ]
