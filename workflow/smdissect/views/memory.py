"""Report view of the memory category: latency staircase and detected levels, load flavours, shared memory,
memory-level parallelism, bandwidth against the card's peak, and atomics."""

from __future__ import annotations

import math

import altair as alt
import numpy as np
import pandas as pd

from smdissect import report

JUMP = 1.2  # a footprint whose latency exceeds the running plateau by 20% starts a new level
NEAR = 0.05  # a point within 5% of its level's plateau is on it; farther, or alone, it is a transition
PAGE_KB = 2048  # the driver's large page: how many pages a footprint spans (TLB reach)
DATASHEET_GBS = {"H200": 4800.0, "H100": 3350.0}  # published DRAM bandwidth, by GPU name (datasheet)
TYPES = {0: "u32", 1: "u64", 2: "f32", 3: "f64"}
LIBRARIES = ["memcpy_d2d", "torch_copy"]  # library copies measured in the same run: the references
FLAVOURS = ["default", "ca", "cg", "cs", "lu", "cv", "nc", "const"]
NEAR_FAR = ["latency_near", "latency_far", "far_share", "outlier_share"]  # chase_near_far's metrics
L2_BAND = 0.25  # chase_near_far keeps loads within this share of the median (memory.cuh kL2Band)


def stride_label(stride: float) -> str:
    """'random' for the permutation chain (stride 0), else the stride in bytes."""
    return "random (128 B lines)" if stride == 0 else f"{int(stride)} B"


def levels(curve: pd.DataFrame) -> pd.DataFrame:
    """Plateaus of one latency-vs-footprint curve: a level ends where latency first exceeds its plateau by JUMP;
    its capacity is the last footprint before the jump."""
    rows, start, members = [], 0, []
    curve = curve.sort_values("footprint_kb").reset_index(drop=True)
    for i, r in curve.iterrows():
        plateau = float(np.median([curve.value[j] for j in members])) if members else r.value
        if members and r.value > JUMP * plateau:
            rows.append(_level(curve, start, members, capacity=True))
            start, members = i, []
        members.append(i)
    if members:
        rows.append(_level(curve, start, members, capacity=False))
    return pd.DataFrame(rows)


def _level(curve: pd.DataFrame, start: int, members: list[int], capacity: bool) -> dict[str, object]:
    last = curve.footprint_kb[members[-1]]
    return {
        "from (KB)": curve.footprint_kb[start],
        "to (KB)": last,
        "latency (cycle)": float(np.median([curve.value[j] for j in members])),
        "capacity (KB)": last if capacity else math.nan,
        "points": len(members),
    }


def regions(curve: pd.DataFrame) -> pd.Series:
    """Per point of one latency-vs-footprint curve (index kept): 'level k' where it sits on the k-th detected
    level (a plateau of at least two points, within NEAR of its latency), else 'transition': a footprint
    between two levels (straddling a cache's capacity), whose latency mixes hits and misses and so varies
    more from run to run than a plateau's."""
    curve = curve.sort_values("footprint_kb")
    found = levels(curve)
    out = pd.Series("transition", index=curve.index, dtype=object)
    k = 0
    for _, lv in found.iterrows():
        if lv["points"] < 2:
            continue
        k += 1
        on = curve["footprint_kb"].between(lv["from (KB)"], lv["to (KB)"])
        near = (curve["value"] - lv["latency (cycle)"]).abs() <= NEAR * lv["latency (cycle)"]
        out[on & near] = f"level {k}"
    return out


def _staircase(raw: pd.DataFrame | None) -> str:
    data = report.points(raw, ["chase"], "latency", ["footprint_kb", "stride_b"])
    if data.empty:
        return report.empty("no pointer-chase measurements")
    data["stride"] = data["stride_b"].map(stride_label)
    chart = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("footprint_kb:Q", scale=alt.Scale(type="log"), title="footprint (KB)"),
            y=alt.Y("value:Q", title="latency (cycle per load)"),
            color=alt.Color("stride:N"),
        )
        .properties(width=640, height=300)
    )
    found = pd.concat(
        [levels(g).assign(stride=stride_label(s)) for s, g in data.groupby("stride_b")], ignore_index=True
    )
    found = found[found["points"] >= 2]
    data["region"] = pd.concat([regions(g) for _, g in data.groupby("stride_b")])
    rows = data.assign(
        loads=data["params"].map(loads_per_sample(raw, "chase")),
        pages_2mb=np.ceil(data["footprint_kb"] / PAGE_KB).astype(int),
        tlb="warmed: every slot read before the timed steps (untimed whole cycles of the chase, or, where the chain "
        "is too long to walk, one warp's read of every slot before each window)",
    )[["footprint_kb", "stride", "region", "value", "spread", "loads", "pages_2mb", "tlb"]]
    note = report.empty(
        f"levels detected from the data: a new level starts where latency exceeds the running plateau by "
        f"{JUMP - 1:.0%}; its capacity is the last footprint before the jump (the next sweep point bounds it). "
        f"Levels need two points; a footprint off every level by more than {NEAR:.0%} is a transition: it "
        "straddles a cache's capacity, so its latency mixes hits and misses"
    ) + report.empty(
        "a chain too long to walk in whole cycles (the L2 level and beyond) is timed in windows from fixed cursors "
        "spread evenly along it, each right after one warp read every slot in address order (in program order, so "
        "the same lines reach the cache in the same order each time): "
        "every sample times the same lines after the same read of the footprint. A transition row is the mean "
        "latency of those lines where the footprint exceeds what the cache keeps of it: its share of hits is set by "
        "which lines the cache's replacement keeps, which no kernel controls, so what spread remains in a "
        "transition row is that share varying from run to run (physical); on a plateau the spread is timing noise"
    )
    return (
        report.svg(chart)
        + note
        + report.table(found[["stride", "from (KB)", "to (KB)", "latency (cycle)", "capacity (KB)"]])
        + report.table(
            rows.rename(
                columns={"value": "latency (cycle)", "spread": "spread (cycle)", "loads": "timed loads per sample"}
            )
        )
    )


def loads_per_sample(raw: pd.DataFrame, case: str) -> pd.Series:
    """Params -> dependent steps a sample of a chase case averages: its records' iterations n, timed as n + 2n."""
    return raw[raw["case"] == case].groupby("params")["iterations"].max() * 3


def _near_far(raw: pd.DataFrame | None) -> str:
    parts = [report.points(raw, ["chase_near_far"], m, ["sm_slot", "footprint_kb"]).assign(metric=m) for m in NEAR_FAR]
    data = pd.concat(parts, ignore_index=True)
    if data.empty:
        return report.empty("no near/far measurements")
    keys = ["params", "footprint_kb", "sm_slot"]
    table = data.pivot_table(index=keys, columns="metric", values="value").reindex(columns=NEAR_FAR)
    latencies = data[data["metric"].isin(NEAR_FAR[:2])]
    table = table.join(latencies.groupby(keys)["spread"].max().rename("largest spread (cycle)")).reset_index()
    table["smid"] = table["params"].map(raw[raw["case"] == "chase_near_far"].groupby("params")["smid"].first())
    note = report.empty(
        "each load is timed alone (ld.global.cg: through the L2 only, so none hits the L1), the same lines from the "
        f"same cursor in every sample; loads beyond {L2_BAND:.0%} of the median (DRAM or TLB misses) are dropped "
        "(outlier share), the rest split where the variance within the two clusters is least: latency near and far "
        "are the clusters' means less the timing overhead, far share the upper cluster's part of the kept loads"
    )
    columns = ["footprint_kb", "sm_slot", "smid", *NEAR_FAR, "largest spread (cycle)"]
    return note + report.table(table[columns])


def _flavours(raw: pd.DataFrame | None) -> str:
    cases = [f"load_{f}" for f in FLAVOURS]
    data = report.points(raw, cases, "latency", ["footprint_kb"])
    if data.empty:
        return report.empty("no load-flavour measurements")
    data["flavour"] = data["case"].str.removeprefix("load_")
    table = data.pivot_table(index="flavour", columns="footprint_kb", values="value").reindex(
        [f for f in FLAVOURS if f in set(data["flavour"])]
    )
    table.columns = [f"{int(c)} KB (cycle)" for c in table.columns]
    return report.table(table.reset_index())


def conflict_slope(data: pd.DataFrame) -> float:
    """Least-squares cycles per extra way of a bank-conflict sweep."""
    return float(np.polyfit(data["ways"], data["value"], 1)[0]) if len(data) >= 2 else math.nan


def _shared(raw: pd.DataFrame | None) -> str:
    conflicts = report.points(raw, ["smem_bank_conflict"], "latency", ["ways"])
    if conflicts.empty:
        return report.empty("no shared-memory measurements")
    chart = (
        alt.Chart(conflicts)
        .mark_line(point=True)
        .encode(x=alt.X("ways:Q", title="conflict degree (ways)"), y=alt.Y("value:Q", title="latency (cycle)"))
        .properties(width=480, height=260)
    )
    widths = report.points(raw, ["smem_latency", "smem_broadcast"], "latency", ["bits"])
    capacity = report.points(raw, ["smem_capacity"], "capacity_per_block", [])
    slope = report.empty(f"slope: {conflict_slope(conflicts):.2f} cycles per extra way (least squares)")
    tables = report.table(widths[["case", "bits", "value", "spread"]].rename(columns={"value": "latency (cycle)"}))
    if not capacity.empty:
        tables += report.table(capacity[["case", "value"]].rename(columns={"value": "bytes per block"}))
    return report.svg(chart) + slope + tables


def knee(data: pd.DataFrame) -> float:
    """The most loads in flight whose round latency stays within JUMP of the single-load latency."""
    base = data.loc[data["loads"] == data["loads"].min(), "value"]
    if base.empty:
        return math.nan
    flat = data[data["value"] <= JUMP * float(base.iloc[0])]
    return float(flat["loads"].max()) if len(flat) else math.nan


def _mlp(raw: pd.DataFrame | None) -> str:
    data = report.points(raw, ["mlp"], "latency", ["loads", "footprint_kb"])
    if data.empty:
        return report.empty("no memory-level-parallelism measurements")
    data["footprint"] = data["footprint_kb"].map(lambda kb: f"{int(kb)} KB")
    chart = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("loads:Q", title="independent loads in flight per thread"),
            y=alt.Y("value:Q", title="cycles per round"),
            color=alt.Color("footprint:N"),
        )
        .properties(width=480, height=260)
    )
    rounds = loads_per_sample(raw, "mlp")
    knees = pd.DataFrame(
        [
            {
                "footprint": f,
                "loads in flight before latency grows 20%": knee(g),
                "timed rounds per sample": int(g["params"].map(rounds).min()),
                "largest spread (cycle)": float(g["spread"].max()),
            }
            for f, g in data.groupby("footprint")
        ]
    )
    return report.svg(chart) + report.table(knees)


def datasheet(gpu: str) -> float:
    """The published DRAM bandwidth of a GPU by name (GB/s), NaN where none is recorded here."""
    return next((v for k, v in DATASHEET_GBS.items() if k in gpu), math.nan)


def _bandwidth(raw: pd.DataFrame | None) -> str:
    cases = ["dram_read", "dram_write", "dram_copy", "l2_read", *LIBRARIES]
    data = report.points(raw, cases, "bandwidth", ["ctas", "loads"])
    if data.empty:
        return report.empty("no bandwidth measurements")
    data["bytes in flight"] = data["ctas"] * 256 * data["loads"] * 16
    curves = data[~data["case"].isin(LIBRARIES)].assign(loads=lambda d: d["loads"].astype(int).astype(str))
    chart = (
        alt.Chart(curves)
        .mark_line(point=True)
        .encode(
            x=alt.X("ctas:Q", scale=alt.Scale(type="log"), title="CTAs (256 threads)"),
            y=alt.Y("value:Q", title="GB/s (bytes read + written)"),
            color=alt.Color("loads:N", title="16 B loads per thread"),
            column=alt.Column("case:N", title=None),
        )
        .properties(width=220, height=220)
    )
    fraction = report.points(raw, cases, "fraction_of_peak", ["ctas", "loads"])
    best = data.loc[data.groupby("case")["value"].idxmax()].merge(
        fraction[["case", "params", "value"]].rename(columns={"value": "of attribute peak"}), how="left"
    )
    gpu = str(raw["gpu"].iloc[0]) if "gpu" in raw.columns and len(raw) else ""
    best["of datasheet"] = best["value"] / datasheet(gpu)
    for library in LIBRARIES:
        reference = data.loc[data["case"] == library, "value"]
        best[f"vs {library}"] = best["value"] / float(reference.max()) if len(reference) else math.nan
    note = report.empty(
        "attribute peak: 2 x memory clock x bus width from the device attributes; datasheet: the published figure "
        f"for {gpu or 'this GPU'} where known ({', '.join(f'{k} {v:g} GB/s' for k, v in DATASHEET_GBS.items())})"
    )
    onchip = report.points(raw, ["l1_read", "smem_read"], "bandwidth_per_sm", [])
    columns = [
        "case",
        "params",
        "value",
        "bytes in flight",
        "of attribute peak",
        "of datasheet",
        *(f"vs {library}" for library in LIBRARIES),
    ]
    out = report.svg(chart) + note + report.table(best[columns].rename(columns={"value": "best GB/s"}))
    if not onchip.empty:
        out += report.table(onchip[["case", "value", "spread"]].rename(columns={"value": "B/cycle/SM"}))
    return out


def _atomics(raw: pd.DataFrame | None) -> str:
    lat = report.points(raw, [c for c in _cases(raw, "atomic_") if c.endswith("_latency")], "latency", ["type"])
    thr = report.points(raw, [c for c in _cases(raw, "atomic_") if c.endswith("_throughput")], "throughput",
                  ["type", "contention"])  # fmt: skip
    if lat.empty and thr.empty:
        return report.empty("no atomics measurements")
    lat["type"] = lat["type"].map(TYPES)
    thr["type"] = thr["type"].map(TYPES)
    thr["contention"] = thr["contention"].map({0: "none (a word per thread)", 1: "full (one word)"})
    return report.table(
        lat[["case", "type", "value", "spread"]].rename(columns={"value": "latency (cycle)"})
    ) + report.table(thr[["case", "type", "contention", "value"]].rename(columns={"value": "atom/cycle/SM"}))


def _cases(raw: pd.DataFrame | None, prefix: str) -> list[str]:
    return [] if raw is None or raw.empty else sorted(c for c in raw["case"].unique() if c.startswith(prefix))


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The memory category's charts and tables, each saying so when its measurements are missing."""
    raw = frames.get("raw")
    return [
        ("Pointer-chase staircase and detected levels", _staircase(raw)),
        ("L2 near and far partitions (per-load latency clusters)", _near_far(raw)),
        ("Load flavours: latency by cache operator", _flavours(raw)),
        ("Shared memory: bank conflicts, widths, broadcast, capacity", _shared(raw)),
        ("Memory-level parallelism", _mlp(raw)),
        ("Bandwidth", _bandwidth(raw)),
        ("Atomics", _atomics(raw)),
    ]
