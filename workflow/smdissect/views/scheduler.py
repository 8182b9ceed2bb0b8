"""Report view of the scheduler category: sub-core binding, warp scaling, scoreboard depth, control codes,
binary-patching outcomes and setmaxnreg cost."""

from __future__ import annotations

from collections.abc import Callable

import altair as alt
import pandas as pd

from smdissect import report

CHAIN_MIN = 64  # a kernel whose most common opcode appears this often holds a dependent chain


def _points(raw: pd.DataFrame | None, cases: list[str], metric: str, keys: list[str]) -> pd.DataFrame:
    """Median value per (case, params) of one metric, with the named parameters as columns."""
    none = pd.DataFrame(columns=["case", "params", "value", *keys])
    if raw is None or raw.empty:
        return none
    rows = raw[raw["case"].isin(cases) & (raw["metric"] == metric)]
    if rows.empty:
        return none
    out = rows.groupby(["case", "params"], as_index=False)["value"].median()
    for key in keys:
        out[key] = pd.to_numeric(out["params"].map(lambda p, k=key: report.param(p, k)), errors="coerce")
    return out.sort_values(["case", *keys])


def _subcore(raw: pd.DataFrame | None) -> str:
    """Warp 0's issue rate beside each partner warp, colored by whether %warpid % 4 matched."""
    cases = ["subcore_ffma", "subcore_mufu"]
    thr = _points(raw, cases, "throughput", ["partner"])
    if thr.empty:
        return report.empty("no sub-core measurements")
    same = _points(raw, cases, "same_subpartition", ["partner"])[["case", "params", "value"]]
    data = thr.merge(same.rename(columns={"value": "same"}), on=["case", "params"], how="left")
    data["partner warp"] = data.apply(lambda r: "none" if r["partner"] == 0 else f"warp {int(r['partner'])}", axis=1)
    data["sub-partition"] = data["same"].map(lambda s: "same as warp 0" if s >= 0.5 else "different")
    data.loc[data["partner"] == 0, "sub-partition"] = "alone"
    chart = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("partner warp:N", sort=None),
            y=alt.Y("value:Q", title="warp 0 throughput (warp_inst/cycle)"),
            color=alt.Color("sub-partition:N"),
            column=alt.Column("case:N", title=None),
        )
        .properties(width=260, height=200)
    )
    mapping = pd.concat(
        [
            _points(raw, ["warpid_map"], m, ["warps"]).assign(metric=m)
            for m in ("subpartition_match", "warpid_equal", "warp0_warpid")
        ]
    )
    table = report.table(mapping[["warps", "metric", "value"]]) if not mapping.empty else ""
    return report.svg(chart) + table


def _warps(raw: pd.DataFrame | None) -> str:
    """Throughput per SM against the resident warps measured on it, one line per pipe."""
    cases = ["warps_ffma", "warps_iadd3", "warps_mufu"]
    thr = _points(raw, cases, "throughput", ["warps"])
    if thr.empty:
        return report.empty("no warp-scaling measurements")
    res = _points(raw, cases, "resident_warps", ["warps"])[["case", "params", "value"]]
    data = thr.merge(res.rename(columns={"value": "resident"}), on=["case", "params"], how="left")
    chart = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("resident:Q", title="resident warps per SM (measured)"),
            y=alt.Y("value:Q", title="throughput (warp_inst/cycle/SM)"),
            color=alt.Color("case:N"),
        )
        .properties(width=420, height=260)
    )
    most = pd.concat(
        [_points(raw, ["max_resident"], m, ["cta_warps"]).assign(metric=m) for m in ("max_resident_warps",
                                                                                     "max_resident_ctas")]
    )  # fmt: skip
    table = report.table(most[["cta_warps", "metric", "value"]]) if not most.empty else ""
    return report.svg(chart) + table


def _scoreboard(raw: pd.DataFrame | None) -> str:
    """Cycles per iteration against independent loads in flight."""
    data = _points(raw, ["scoreboard_depth"], "cycles_per_iteration", ["loads"])
    if data.empty:
        return report.empty("no scoreboard measurements")
    chart = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("loads:Q", title="independent loads issued before the first use"),
            y=alt.Y("value:Q", title="cycles per iteration"),
        )
        .properties(width=420, height=240)
    )
    return report.svg(chart) + report.table(data[["loads", "value"]])


def chain_stalls(codes: pd.DataFrame) -> pd.DataFrame:
    """Per kernel holding a chain: its most common opcode, how often, and the mode of that opcode's stall count."""
    rows = []
    for kernel, group in codes.groupby("kernel"):
        opcode, count = group["opcode"].value_counts().index[0], int(group["opcode"].value_counts().iloc[0])
        if count < CHAIN_MIN:
            continue
        ops = group[group["opcode"] == opcode]
        rows.append(
            {"kernel": kernel, "opcode": opcode, "count": count, "stall": int(ops["stall"].mode().iloc[0]),
             "yield_share": float(ops["yield_"].mean())}
        )  # fmt: skip
    return pd.DataFrame(rows, columns=["kernel", "opcode", "count", "stall", "yield_share"])


def _controlcodes(frames: dict[str, pd.DataFrame]) -> str:
    """The compiler's stall counts of the chain kernels, beside the latency measured where there is one."""
    codes = frames.get("controlcodes")
    if codes is None or codes.empty:
        return report.empty("no decoded control codes (the sass stage's controlcodes table is missing)")
    summary = chain_stalls(codes)
    raw, sass = frames.get("raw"), frames.get("sass")
    if raw is not None and not raw.empty and sass is not None and not sass.empty:
        latency = raw[raw["metric"] == "latency"].groupby("case")["value"].median().rename("measured_latency")
        owners = sass[["case", "kernel"]].drop_duplicates().join(latency, on="case").dropna()
        summary = summary.merge(owners.groupby("kernel", as_index=False)["measured_latency"].median(), how="left")
    first = codes[codes["kernel"] == "ffma_chain"].head(48)
    detail = "<h3>ffma_chain, first instructions</h3>" + report.table(first) if not first.empty else ""
    return report.table(summary) + detail


def _patching(raw: pd.DataFrame | None) -> str:
    """Stall count k of the chain FFMAs: wrong results and speed; the yield flag: cycles per iteration."""
    metrics = ["wrong_results", "lost_steps", "cycles_per_ffma", "latency"]
    stall = [_points(raw, ["stall_patch"], m, ["stall"]).rename(columns={"value": m}) for m in metrics]
    parts = []
    if not stall[0].empty:
        table = stall[0][["stall", "wrong_results"]]
        for frame, m in zip(stall[1:], metrics[1:], strict=True):
            if not frame.empty:
                table = table.merge(frame[["stall", m]], on="stall", how="left")
        parts.append("<h3>Stall count patched to k (4 warps x 32 threads)</h3>" + report.table(table))
    yld = _points(raw, ["yield_patch"], "cycles_per_iteration", ["warps", "flipped"])
    if not yld.empty:
        yld["yield flag"] = yld["flipped"].map({0: "compiler's", 1: "inverted"})
        chart = (
            alt.Chart(yld)
            .mark_line(point=True)
            .encode(
                x=alt.X("warps:Q", scale=alt.Scale(type="log", base=2), title="warps in the CTA"),
                y=alt.Y("value:Q", title="cycles per iteration (128 dependent FFMAs)"),
                color=alt.Color("yield flag:N"),
            )
            .properties(width=420, height=240)
        )
        parts.append("<h3>Yield flag of the chain FFMAs</h3>" + report.svg(chart))
    return "".join(parts) or report.empty("no patching measurements")


def _setmaxnreg(raw: pd.DataFrame | None) -> str:
    """Cycles per setmaxnreg.dec and .inc, clock-read overhead subtracted."""
    parts = [_points(raw, ["setmaxnreg"], m, ["low"]).assign(metric=m) for m in ("dec_cost", "inc_cost")]
    data = pd.concat(parts)
    if data.empty:
        return report.empty("no setmaxnreg measurements")
    return report.table(data.pivot(index="low", columns="metric", values="value").reset_index())


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The category's sections, each saying so when its table is missing or empty."""
    raw = frames.get("raw")
    parts: list[tuple[str, Callable[[], str]]] = [
        ("Sub-core binding (warpid % 4)", lambda: _subcore(raw)),
        ("Latency hiding: throughput vs resident warps", lambda: _warps(raw)),
        ("Scoreboard depth", lambda: _scoreboard(raw)),
        ("Control codes of the chain kernels", lambda: _controlcodes(frames)),
        ("Binary patching", lambda: _patching(raw)),
        ("setmaxnreg cost", lambda: _setmaxnreg(raw)),
    ]
    return [(title, render()) for title, render in parts]
