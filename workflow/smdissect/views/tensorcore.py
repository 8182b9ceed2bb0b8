"""Report view of the tensorcore category: per-format latency, issue interval, FLOP/cycle/SM and TFLOPS against the
datasheet peak, wgmma scaling, the mma.sync-to-wgmma gap, and which formats the SASS shows native or emulated."""

from __future__ import annotations

import re

import altair as alt
import pandas as pd

from smdissect import report

# Datasheet dense peaks (TFLOPS or TOPS) per input format, with the clock and SM count they assume.
DATASHEET = {
    "sm_90": {
        # 989.4 TFLOPS = 132 SMs x 4096 FLOP/cycle x 1830 MHz: the datasheet's tensor figures assume 1830 MHz,
        # not the 1980 MHz maximum SM clock, so the per-SM-per-cycle peak is 4096 (f16).
        "source": "NVIDIA H200 SXM datasheet (dense), 132 SMs at the 1830 MHz its tensor figures assume",
        "sms": 132,
        "mhz": 1830.0,
        "tflops": {
            "f16": 989.4,
            "bf16": 989.4,
            "tf32": 494.7,
            "e4m3": 1978.9,
            "e5m2": 1978.9,
            "s8": 1978.9,
            "u8": 1978.9,
            "f64": 66.9,
        },
    }
}
TENSOR_OPS = ("HMMA", "IMMA", "BMMA", "DMMA", "QMMA", "OMMA", "HGMMA")
SMSPS = 4  # sub-partitions per SM: an mma.sync warp issues on one of them


def _format(case: str) -> str:
    """The input format a case's id names: 'f16' for mma_f16_f32 and wgmma_f16_ss, 'e4m3' for f8f6f4_e4m3."""
    parts = case.split("_")
    if case.startswith(("ldmatrix_mma", "mma_sp")):
        return "f16"
    return parts[1] if len(parts) > 1 else case


def _peak_per_cycle(arch: str, case: str) -> float | None:
    """Datasheet dense FLOP/cycle/SM of a case's format on `arch` (2:4 sparse counts dense-equivalent: x2)."""
    sheet = DATASHEET.get(arch.rstrip("af"))
    tflops = sheet["tflops"].get(_format(case)) if sheet else None
    if tflops is None:
        return None
    per_cycle = tflops * 1e12 / (sheet["sms"] * sheet["mhz"] * 1e6)
    return 2 * per_cycle if case.startswith("mma_sp") else per_cycle


def _medians(raw: pd.DataFrame) -> pd.DataFrame:
    """Median value and clock per (case, params, metric) with the swept parameters as columns."""
    out = raw.groupby(["arch", "case", "params", "metric"], as_index=False).agg(
        value=("value", "median"), clock_mhz=("clock_mhz", "median")
    )
    for key in ("ilp", "warps", "warpgroups", "n", "batch"):
        out[key] = pd.to_numeric(out["params"].map(lambda p, k=key: report.param(p, k)), errors="coerce")
    return out


def _sass_forms(sass: pd.DataFrame) -> pd.DataFrame:
    """Per (arch, case): the tensor opcodes of its first long ilp-1 kernel (by name), instructions per operation,
    and whether the tensor instruction is native, emulated or absent there."""
    long = sass[(sass["variant"] == "long") & (sass["params"].map(lambda p: report.param(p, "ilp")) == 1)]
    rows = []
    for (arch, case, _), k in long.groupby(["arch", "case", "kernel"]):
        ops = int(k["ops"].max()) if "ops" in k else 0
        tensor = k[k["opcode"].map(lambda o: o.split(".")[0] in TENSOR_OPS)]
        calls = int(k.loc[k["opcode"].str.startswith("CALL"), "count"].sum())
        count = int(tensor["count"].sum())
        form = "native" if ops and count == ops and not calls else ("absent" if not count else "emulated")
        rows.append({"arch": arch, "case": case, "SASS": ", ".join(sorted(set(tensor["opcode"]))) or "-",
                     "tensor ops in kernel": count, "mma per kernel": ops, "CALL": calls,
                     "SASS instructions per mma": round(int(k["count"].sum()) / ops, 2) if ops else None,
                     "form": form})  # fmt: skip
    return pd.DataFrame(rows).drop_duplicates(["arch", "case"]).reset_index(drop=True)


def per_format(raw: pd.DataFrame, sass: pd.DataFrame | None) -> pd.DataFrame:
    """One row per measured case: latency, best throughput and its issue interval, FLOP/cycle/SM, TFLOPS, % of peak."""
    med = _medians(raw)
    rows = []
    for (arch, case), g in med.groupby(["arch", "case"]):
        lat = g[(g["metric"] == "latency")]["value"]
        thr = g[g["metric"] == "throughput"]
        best = thr.loc[thr["value"].idxmax()] if not thr.empty else None
        at = g[g["params"] == best["params"]] if best is not None else g.iloc[0:0]
        flops = at.loc[at["metric"] == "flops", "value"]
        tflops = at.loc[at["metric"] == "tflops", "value"]
        peak = _peak_per_cycle(arch, case)
        per_issue = 1 if case.startswith("wgmma") else SMSPS  # wgmma: one per SM; mma.sync: per sub-partition
        rows.append({
            "arch": arch, "case": case, "format": _format(case),
            "latency (cycle)": float(lat.iloc[0]) if len(lat) else None,
            "best point": best["params"] if best is not None else "",
            "issue interval (cycle)": per_issue / best["value"] if best is not None and best["value"] > 0 else None,
            "FLOP/cycle/SM": float(flops.iloc[0]) if len(flops) else None,
            "TFLOPS": float(tflops.iloc[0]) if len(tflops) else None,
            "% of peak": 100 * float(flops.iloc[0]) / peak if peak and len(flops) else None,
        })  # fmt: skip
    table = pd.DataFrame(rows)
    if sass is not None and not sass.empty and not table.empty:
        table = table.merge(_sass_forms(sass)[["arch", "case", "SASS", "form"]], on=["arch", "case"], how="left")
    return table


def gap(table: pd.DataFrame) -> str:
    """The mma.sync vs wgmma f16 gap, with the numbers that explain it."""
    sync = table[table["case"] == "mma_f16_f32"].dropna(subset=["FLOP/cycle/SM"])
    wg = table[table["case"].str.startswith("wgmma_f16")].dropna(subset=["FLOP/cycle/SM"])
    if sync.empty or wg.empty:
        return report.empty("needs both mma_f16_f32 and a wgmma_f16 case measured on one GPU (wgmma is sm_90a only)")
    s, w = sync.iloc[0], wg.loc[wg["FLOP/cycle/SM"].idxmax()]
    n = report.param(w["best point"], "n")
    latency = s["latency (cycle)"] if pd.notna(s["latency (cycle)"]) else float("nan")
    return (
        f"<p>Best mma.sync m16n8k16 f16: {s['FLOP/cycle/SM']:.0f} FLOP/cycle/SM (one 4096-FLOP HMMA every "
        f"{s['issue interval (cycle)']:.1f} cycles per sub-partition, latency {latency:.1f} "
        f"cycles). Best wgmma ({w['case']}, {w['best point']}): {w['FLOP/cycle/SM']:.0f} FLOP/cycle/SM, "
        f"{w['FLOP/cycle/SM'] / s['FLOP/cycle/SM']:.2f}x mma.sync. One wgmma m64n{n}k16 is "
        f"{64 * (n or 0) * 16 * 2 / 4096:.0f}x the work of one HMMA.16816 and reads B (and A) from shared memory "
        "through descriptors, asynchronously: the four warps of a warpgroup keep the tensor cores fed with no "
        "per-instruction register-file operand traffic, while mma.sync re-reads its A and B fragments from registers "
        "for every 16x8x16 tile and waits on the accumulator dependency in each warp.</p>"
    )


def _static(sass: pd.DataFrame, raw: pd.DataFrame | None, status: pd.DataFrame | None) -> pd.DataFrame:
    """SASS form of every case on every compiled arch, with why a case was not run on this GPU."""
    forms = _sass_forms(sass)
    measured = set(raw["case"]) if raw is not None and not raw.empty else set()
    reasons = {}
    if status is not None and not status.empty:
        reasons = status[status["status"] != "measured"].groupby("case")["reason"].first().to_dict()
    forms["run"] = ["measured" if c in measured else f"not run: {reasons.get(c) or _needs(c)}" for c in forms["case"]]
    return forms.sort_values(["case", "arch"])


def _needs(case: str) -> str:
    """The arch a case's instruction needs, from its id."""
    if case.startswith("wgmma"):
        return "needs sm_90a"
    if re.match(r"(f8f6f4|mxf)", case):
        return "needs sm_120a"
    return "no GPU run"


def _chart(table: pd.DataFrame, column: str, title: str) -> str:
    """A bar per case of one column of the per-format table."""
    data = table.dropna(subset=[column])
    if data.empty:
        return report.empty(f"no {column} measured")
    chart = (
        alt.Chart(data, title=title)
        .mark_bar()
        .encode(x=alt.X("case:N", sort=None), y=alt.Y(f"{column}:Q", title=column), color="arch:N")
    )
    return report.svg(chart)


def _wgmma_chart(raw: pd.DataFrame) -> str:
    """wgmma FLOP/cycle/SM over N, one line per warpgroups and batch, per case."""
    med = _medians(raw)
    data = med[med["case"].str.startswith("wgmma") & (med["metric"] == "flops")].copy()
    if data.empty:
        return report.empty("no wgmma measured (wgmma is sm_90a only)")
    data["series"] = data.apply(lambda r: f"{int(r.warpgroups)} WG, batch {int(r.batch)}", axis=1)
    chart = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(x=alt.X("n:Q", title="N"), y=alt.Y("value:Q", title="FLOP/cycle/SM"), color="series:N")
        .facet(column="case:N")
    )
    return report.svg(chart)


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """Per-format table and charts, wgmma scaling, the mma.sync-wgmma gap, and each case's SASS form."""
    raw, sass = frames.get("raw"), frames.get("sass")
    out = []
    if raw is None or raw.empty:
        out.append(("Tensor-core formats", report.empty("not measured: no GPU run")))
    else:
        table = per_format(raw, sass)
        peak = "; ".join(f"{a}: {d['source']}" for a, d in DATASHEET.items())
        out += [
            ("Tensor-core formats", report.table(table) + f"<p>Peak: {peak}.</p>"),
            ("Latency per format", _chart(table, "latency (cycle)", "Dependent-accumulator latency")),
            ("FLOP/cycle/SM per format", _chart(table, "FLOP/cycle/SM", "Best throughput")),
            ("wgmma throughput over N and warpgroups", _wgmma_chart(raw)),
            ("mma.sync vs wgmma", gap(table)),
        ]
    if sass is None or sass.empty:
        out.append(("SASS form per case", report.empty("no SASS table")))
    else:
        out.append(("SASS form per case (native or emulated)", report.table(_static(sass, raw, frames.get("status")))))
    return out
