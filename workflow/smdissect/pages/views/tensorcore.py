"""Report view of the tensorcore category: per-format latency, issue interval, FLOP/cycle/SM, TFLOPS and share of the
format's dense peak (figures of the figures table, with their status), wgmma scaling, the mma.sync-to-wgmma gap, and
which formats the SASS shows native or emulated."""

from __future__ import annotations

import html
import math
import re

import pandas as pd

from smdissect.core import archs, stats
from smdissect.core.tables import point_text
from smdissect.pages import charts, evidence, markup

CATEGORY = "tensorcore"

TENSOR_OPS = ("HMMA", "IMMA", "BMMA", "DMMA", "QMMA", "OMMA", "HGMMA", "QGMMA", "IGMMA", "BGMMA")
TENSOR_OPS += ("UTCHMMA", "UTCQMMA", "UTCIMMA", "UTCOMMA", "LDTM", "STTM")  # tcgen05 (sm_100a)
# The figures of the per-format table, in the order each case shows them.
FORMAT_METRICS = ("latency", "issue_interval", "throughput", "flops", "pct_of_peak", "tflops", "smem_bytes")
GAP_MMA = "mma_f16_f32"


def _medians(raw: pd.DataFrame) -> pd.DataFrame:
    """Median value per (arch, case, params, metric) with the swept parameters as columns (for the charts)."""
    out = stats.summary(raw, ["arch", "case", "params", "metric"])
    for key in ("ilp", "warps", "warpgroups", "n", "batch"):
        out[key] = pd.to_numeric(out["params"].map(lambda p, k=key: evidence.param(p, k)), errors="coerce")
    return out


def _sass_forms(sass: pd.DataFrame) -> pd.DataFrame:
    """Per (arch, case): the tensor opcodes of its first long ilp-1 (or ilp-less) kernel (by name), instructions per
    operation, and whether the tensor instruction is native, emulated or absent there."""
    ilp = sass["params"].map(lambda p: evidence.param(p, "ilp"))
    long = sass[(sass["variant"] == "long") & ((ilp == 1) | ilp.isna())]  # tcgen05's kernels have no ilp
    rows = []
    for (arch, case, _), k in long.groupby(["arch", "case", "kernel"]):
        ops = int(k["ops"].max()) if "ops" in k else 0
        tensor = k[k["opcode"].map(lambda o: o.split(".")[0] in TENSOR_OPS)]
        calls = int(k.loc[k["opcode"].str.startswith("CALL"), "count"].sum())
        count = int(tensor["count"].sum())
        form = "native" if ops and count == ops and not calls else ("absent" if not count else "emulated")
        rows.append(
            {
                "arch": arch,
                "case": case,
                "SASS": ", ".join(sorted(set(tensor["opcode"]))) or "-",
                "tensor ops in kernel": count,
                "mma per kernel": ops,
                "CALL": calls,
                "SASS instructions per mma": round(int(k["count"].sum()) / ops, 2) if ops else None,
                "form": form,
            }
        )
    return pd.DataFrame(rows).drop_duplicates(["arch", "case"]).reset_index(drop=True)


def per_format(figures: pd.DataFrame) -> pd.DataFrame:
    """The per-format figures (latency, issue interval, throughput, FLOP/cycle/SM, % of peak, TFLOPS, shared-memory
    bytes), case by case in run order, each case's in FORMAT_METRICS order."""
    rows = figures[figures["metric"].isin(FORMAT_METRICS)].copy()
    if rows.empty:
        return rows
    order = {c: i for i, c in enumerate(dict.fromkeys(figures["case"]))}
    rows["_case"], rows["_metric"] = rows["case"].map(order), rows["metric"].map(FORMAT_METRICS.index)
    return rows.sort_values(["_case", "_metric"], kind="stable").drop(columns=["_case", "_metric"])


def _one(figures: pd.DataFrame, case: str, metric: str) -> pd.Series | None:
    """The figure of a case's metric (its point, peak or derived figure), or None."""
    found = figures[(figures["case"] == case) & (figures["metric"] == metric) & (figures["kind"] != "each")]
    return found.iloc[0] if len(found) else None


def gap(frames: dict[str, pd.DataFrame]) -> str:
    """The mma.sync vs wgmma f16 gap: its figure and the figures that explain it, and what they say."""
    figures = evidence.figures_of(frames)
    ratio = figures[figures["metric"] == "over_mma_sync"]
    if ratio.empty:
        return markup.empty("needs both mma_f16_f32 and a wgmma_f16 case measured on one GPU (wgmma is sm_90a only)")
    r = ratio.iloc[0]
    wg = r["case"]
    shown = [r] + [
        f
        for f in (
            _one(figures, c, m) for c in (GAP_MMA, wg) for m in ("flops", "issue_interval", "latency", "pct_of_peak")
        )
        if f is not None
    ]
    table = evidence.figure_table(pd.DataFrame(shown), ("figure", "value", "unit", "spread", "status", "reason"))
    n = evidence.param(r["params"], "n")
    shape = f"m64n{n}k16" if n else "m64nNk16"
    text = (
        f"<p>The best wgmma ({html.escape(wg)}, {html.escape(point_text(r['params']))}) reaches "
        f"{markup.number(r['value'], 3)}x the FLOP/cycle/SM of mma.sync m16n8k16 f16 -> f32 "
        f"({markup.badge(r['status'])}). One wgmma {shape} is N/2 times the work of one HMMA.16816 and reads B (and "
        "A) from shared memory through descriptors, asynchronously: the four warps of a warpgroup keep the tensor "
        "cores fed with no per-instruction register-file operand traffic, while mma.sync re-reads its A and B "
        "fragments from registers for every 16x8x16 tile and waits on the accumulator dependency in each warp.</p>"
    )
    return text + table


def _static(sass: pd.DataFrame, raw: pd.DataFrame | None, status: pd.DataFrame | None) -> pd.DataFrame:
    """SASS form of every case on every compiled arch, with why a case was not run on this GPU."""
    forms = _sass_forms(sass)
    measured = set(raw["case"]) if raw is not None and not raw.empty else set()
    reasons = {}
    if status is not None and not status.empty:
        reasons = status[status["status"] != "measured"].groupby("case")["reason"].first().to_dict()
    why = {c: str(reasons.get(c) or _needs(c)).removeprefix("not run: ") for c in forms["case"]}
    forms["run"] = ["measured" if c in measured else f"not run: {why[c]}" for c in forms["case"]]
    here = set(raw["arch"]) if raw is not None and not raw.empty else set()
    forms["other"] = ~forms["arch"].isin(here)  # the measured arch's rows first, the static archs' after
    return forms.sort_values(["other", "arch", "case"]).drop(columns="other")


def _needs(case: str) -> str:
    """The arch a case's instruction needs, from its id."""
    if case.startswith("wgmma"):
        return "needs sm_90a"
    if case.startswith("tcgen05"):
        return "needs sm_100a"
    if re.match(r"(f8f6f4|mxf)", case):
        return "needs sm_120a"
    return "no GPU run"


def _chart(figures: pd.DataFrame, metric: str, title: str, axis: str) -> str:
    """A bar per figure of one metric (its point, peak or derived figure), largest first, coloured by status."""
    data = figures[(figures["metric"] == metric)][["figure", "value", "status"]]
    if data.empty:
        return markup.empty(f"no {metric} figure")
    top = data.sort_values("value", ascending=False).head(3)
    described = (
        f"Bar chart of {title.lower()} ({axis}) for {len(data)} tensor-core figures, largest first, coloured by "
        "status; the largest: "
        + "; ".join(f"{f} {markup.number(v)}" for f, v in zip(top["figure"], top["value"], strict=True))
    )
    return charts.status_bars(data, "figure", title, axis, described + ".")


def _wgmma_chart(raw: pd.DataFrame) -> str:
    """wgmma FLOP/cycle/SM over N, one line per warpgroups and batch, per case (from the raw samples)."""
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    med = _medians(raw)
    data = med[med["case"].str.startswith("wgmma") & (med["metric"] == "flops")].copy()
    if data.empty:
        return markup.empty("no wgmma measured (wgmma is sm_90a only)")
    data["series"] = data.apply(lambda r: f"{int(r.warpgroups)} WG, batch {int(r.batch)}", axis=1)
    chart = (
        alt.Chart(data, title="wgmma FLOP/cycle/SM over N")
        .mark_line(point=True)
        .encode(x=alt.X("n:Q", title="N"), y=alt.Y("value:Q", title="FLOP/cycle/SM"), color="series:N")
        .properties(width=160, height=120)
        .facet(facet="case:N", columns=4)
    )
    described = (
        f"Median FLOP/cycle/SM of {data['case'].nunique()} wgmma cases over the N of the instruction shape, one panel "
        f"per case, one line per warpgroup count and batch ({', '.join(sorted(data['series'].unique()))})."
    )
    return charts.svg(chart, described, "wgmma FLOP/cycle/SM over N")


def _peak_source(raw: pd.DataFrame) -> str:
    gpus = raw.groupby("arch")["gpu"].first().to_dict() if "gpu" in raw else {}
    sources = {a: archs.tensor_source(a, gpus.get(a)) for a in sorted(raw["arch"].dropna().unique())}
    peak = "; ".join(f"{a}: {s or 'no published per-SM tensor rate'}" for a, s in sources.items())
    return f"<p>Peaks (% of peak, and the bound each FLOP/cycle/SM figure is checked against): {html.escape(peak)}.</p>"


def _library_section(figures: pd.DataFrame) -> str:
    rows = library(figures)
    if rows.empty:
        return markup.empty("no peak here names a library GEMM measured in the same run (gemm/torch_gemm)")
    return markup.table(rows, raw=("status",)) + (
        "<p>The library column is each peak's floor check: PyTorch's GEMM of that format (cuBLAS / cuBLASLt) on the "
        "same card, per SM and cycle at the SM clock NVML read after its calls; an instruction peak under it would "
        "be the kernel's limit.</p>"
    )


def library(figures: pd.DataFrame) -> pd.DataFrame:
    """Per case whose peak names a library GEMM as its floor (manifest same_as, relation at_least): the peak, its
    TFLOPS and SM clock, its share of the datasheet rate, and the floor check (the library's rate per SM and cycle)."""
    rows = []
    for fig in figures[(figures["kind"] == "peak") & (figures["metric"] == "flops")].itertuples():
        floor = [c for c in str(fig.checks).split("; ") if c.startswith("floor:")]
        if not floor:
            continue
        mine = figures[figures["case"] == fig.case]
        integer = str(fig.unit).startswith("OP")

        def first(metric: str, mine: pd.DataFrame = mine) -> float:
            values = mine.loc[mine["metric"] == metric, "value"]
            return float(values.iloc[0]) if len(values) else math.nan

        rows.append(
            {
                "case": fig.case,
                "peak per cycle per SM": f"{markup.number(fig.value)} {fig.unit}",
                "rate at its clock": f"{markup.number(first('tflops'))} {'TOPS' if integer else 'TFLOPS'}",
                "SM clock (MHz)": markup.number(fig.clock_mhz),
                "% of the datasheet rate": markup.number(first("pct_of_peak")),
                "status": markup.badge(fig.status),
                "library on the same card (floor check)": ": ".join(floor[0].removeprefix("floor: ").split(" (", 1)),
            }
        )
    return pd.DataFrame(rows)


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """Per-format figures and charts, wgmma scaling, the mma.sync-wgmma gap, and each case's SASS form."""
    raw, sass = frames.get("raw"), frames.get("sass")
    figures = evidence.figures_of(frames)
    out = []
    if raw is None or raw.empty:
        out.append(("Tensor-core formats", markup.empty("not measured: no GPU run")))
    else:
        table = per_format(figures)
        kept = figures[figures["kind"] != "each"]
        out += [
            ("Tensor-core formats", evidence.figure_table(table) + _peak_source(raw)),
            ("Latency per format", _chart(kept, "latency", "Dependent-accumulator latency", "cycle")),
            (
                "FLOP/cycle/SM per format",
                _chart(kept, "flops", "Peak FLOP (OP for integer formats)/cycle/SM", "FLOP or OP/cycle/SM"),
            ),
            (
                "Share of the format's dense peak",
                _chart(kept, "pct_of_peak", "At the point of peak FLOP/cycle/SM", "%"),
            ),
            ("wgmma throughput over N and warpgroups", _wgmma_chart(raw)),
            ("mma.sync vs wgmma", gap(frames)),
            ("Instruction peak beside the library's GEMM", _library_section(figures)),
        ]
    if sass is None or sass.empty:
        out.append(("SASS form per case", markup.empty("no SASS table")))
    else:
        out.append(("SASS form per case (native or emulated)", markup.table(_static(sass, raw, frames.get("status")))))
    return out
