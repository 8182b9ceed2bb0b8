"""Report view of the power category: the per-SM power model per precision and where its intercept sits against the
idle card (figures of the figures table, the text following their signs), board power against active SMs with the
fitted lines, TFLOPS/W at the most SMs measured, the clocks and throttle reasons of every sample (evidence), the
card's clock and power-limit settings, and the soak's clock, power and temperature over time."""

from __future__ import annotations

import pandas as pd

from smdissect.measure import power
from smdissect.pages import charts, evidence, markup

CATEGORY = "power"

MODEL = ("p_infrastructure", "k_per_sm", "fit_r2", "fit_rms", "p_infrastructure_minus_idle", "infrastructure_share")
EFFICIENCY = ("tflops", "tflops_per_w", "tflops_per_w_vs_fp32")
COLUMNS = ("figure", "value", "unit", "spread", "status", "reason")


def _ordered(figures: pd.DataFrame, metrics: tuple[str, ...]) -> pd.DataFrame:
    """Figures of `metrics`, precision by precision (power.PRECISIONS order), metric by metric."""
    rows = figures[figures["metric"].isin(metrics) & figures["case"].isin([power.IDLE, *power.PRECISIONS])].copy()
    cases = [power.IDLE, *power.PRECISIONS]
    rows["_c"], rows["_m"] = rows["case"].map(cases.index), rows["metric"].map(metrics.index)
    return rows.sort_values(["_c", "_m"], kind="stable").drop(columns=["_c", "_m"])


def where_intercept(figures: pd.DataFrame) -> str:
    """What the intercepts say against the idle card, from the figures' signs: below, above, or within their
    leave-one-out range of it (the sentence follows the numbers, never a model of what they should be)."""
    gaps = figures[figures["metric"] == "p_infrastructure_minus_idle"]
    idle = figures[(figures["case"] == power.IDLE) & (figures["metric"] == "power")]
    clock = figures[(figures["case"] == power.IDLE) & (figures["metric"] == "sm_clock_nvml")]
    if gaps.empty:
        return ""
    sides = {}
    for r in gaps.itertuples(index=False):
        half = (r.spread or 0.0) / 2
        side = "below" if r.value + half < 0 else "above" if r.value - half > 0 else "within the leave-one-out range of"
        sides.setdefault(side, []).append(f"{power.PRECISIONS.get(r.case, r.case)} {markup.number(r.value, 3)} W")
    idle_text = (
        f" ({markup.number(idle['value'].iloc[0], 4)} W"
        + (f" at {markup.number(clock['value'].iloc[0], 4)} MHz" if len(clock) else "")
        + ", no kernel)"
        if len(idle)
        else ""
    )
    parts = "; ".join(f"{side} the idle card: {', '.join(v)}" for side, v in sides.items())
    text = f"P_infrastructure minus the idle card{idle_text}: {parts}."
    if "below" in sides:
        text += (
            " An intercept below the idle card is no state the card was in: it is where the straight line, fitted "
            "over 1..all SMs, crosses zero SMs."
        )
        bent = convex(figures)
        if bent:
            text += (
                f" The residuals of {', '.join(bent)} are positive at both ends of the sweep and negative between: "
                "board power grows faster than linearly with active SMs (the card warms as more SMs work: "
                "temperature per sample, below), so the line is steeper than the first SMs' cost and its intercept "
                "undershoots."
            )
    elif "above" in sides:
        text += " The awake card with no SM busy costs more than the idle card: the fitted line starts above it."
    return f"<p>{text}</p>"


def convex(figures: pd.DataFrame) -> list[str]:
    """The precisions whose fit residuals are positive at the fewest and the most SMs and negative somewhere between
    (power convex in SMs: a line through it undershoots at zero SMs)."""
    out = []
    rows = figures[figures["metric"] == "fit_residual"]
    for case, g in rows.groupby("case", sort=False):
        g = g.assign(sms=g["params"].map(lambda p: evidence.param(p, "sms"))).sort_values("sms")
        values = g["value"].tolist()
        if len(values) >= 3 and values[0] > 0 and values[-1] > 0 and min(values[1:-1]) < 0:
            out.append(power.PRECISIONS.get(str(case), str(case)))
    return out


def _model(figures: pd.DataFrame, pts: pd.DataFrame) -> str:
    table = _ordered(figures, MODEL)
    if table.empty:
        return markup.empty("no power measurements of busy SMs")
    idle = _ordered(figures, ("power", "sm_clock_nvml"))
    idle = idle[idle["case"] == power.IDLE]
    flagged = int(pts["throttled"].sum()) if len(pts) else 0
    note = markup.empty(
        "P = P_infrastructure + k x active SMs, least squares over each precision's unthrottled points (one "
        "persistent CTA per SM; energy-counter average over a 1 s window of sustained work); every spread is the "
        f"range over the leave-one-out fits. {flagged} sample(s) whose clock event reasons include a power cap, "
        "thermal or hardware slowdown are left out of the fits"
    )
    return note + where_intercept(figures) + evidence.figure_table(pd.concat([idle, table]))


def _chart(figures: pd.DataFrame, pts: pd.DataFrame) -> str:
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    if pts.empty:
        return markup.empty("no power measurements")
    fits = figures[figures["metric"].isin(("p_infrastructure", "k_per_sm"))]
    lines = fits.pivot_table(index="case", columns="metric", values="value").dropna()
    top = int(pts["sms"].max())
    ends = pd.DataFrame(
        [
            {"precision": power.PRECISIONS.get(c, c), "sms": s, "power_w": r["p_infrastructure"] + r["k_per_sm"] * s}
            for c, r in lines.iterrows()
            for s in (0, top)
        ],
        columns=["precision", "sms", "power_w"],
    )
    data = pts.assign(sample=pts["throttled"].map({True: "throttled", False: "unthrottled"}))
    dots = (
        alt.Chart(data)
        .mark_point(filled=True, size=60)
        .encode(
            x=alt.X("sms:Q", title="active SMs (one persistent CTA each)"),
            y=alt.Y("power_w:Q", title="board power (W, energy counter)"),
            color=alt.Color("precision:N"),
            shape=alt.Shape("sample:N", title="clock events"),
        )
    )
    fitted = alt.Chart(ends).mark_line(strokeDash=[4, 3]).encode(x="sms:Q", y="power_w:Q", color="precision:N")
    residuals = _ordered(figures, ("fit_residual",))
    described = (
        f"Board power (W) against active SMs for {data['precision'].nunique()} precisions (colour), throttled "
        "samples marked by shape, with each precision's fitted line P = P_infrastructure + k x SMs dashed."
    )
    drawn = charts.svg((dots + fitted).properties(width=560, height=320), described, "Board power over active SMs")
    return drawn + ("<h3>Residuals of the fits</h3>" + evidence.figure_table(residuals) if len(residuals) else "")


def _efficiency(figures: pd.DataFrame) -> str:
    table = _ordered(figures, EFFICIENCY)
    table = table[(table["metric"] != "tflops") | (table["kind"] == "peak")]
    if table.empty:
        return markup.empty("no TFLOPS measurements")
    return evidence.figure_table(table)


def _samples(pts: pd.DataFrame) -> str:
    if pts.empty:
        return markup.empty("no power measurements")
    table = pts.assign(throttle=pts["throttle"].map(lambda m: f"{m:#x}"))
    columns = {
        "precision": "precision",
        "sms": "active SMs",
        "power_nvml_w": "NVML power readings (W, median)",
        "energy_j": "energy (J)",
        "sm_clock_mhz": "SM clock NVML (MHz)",
        "clock64_mhz": "SM clock clock64 (MHz)",
        "temperature_c": "temperature (C)",
        "throttle": "clock event mask",
        "reasons": "clock event reasons",
        "throttled": "bends the line",
    }
    note = markup.empty(
        "evidence, not figures: the medians of each point's NVML readings, energy, clocks and temperature, and the "
        "clock event reasons that decide which points the fits use (board power and TFLOPS are the figures above)"
    )
    return note + markup.table(table[list(columns)].rename(columns=columns))


def _settings(figures: pd.DataFrame) -> str:
    table = figures[figures["case"] == power.LIMITS]
    if table.empty:
        return markup.empty("no clock or power-limit measurements")
    note = markup.empty(
        "NVML's settings of the card, read with no load and never changed; the max SM clock checked against "
        "cudaDevAttrClockRate and the datasheet's boost clock, the memory clock against cudaDevAttrMemoryClockRate "
        "(memory/device_attributes)"
    )
    return note + evidence.figure_table(table, (*COLUMNS, "derivation"))


def _soak_chart(series: pd.DataFrame, y: str, title: str, color: str, description: str) -> str:
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    chart = (
        alt.Chart(series)
        .mark_line()
        .encode(
            x=alt.X("time_s:Q", title="seconds since every SM started"),
            y=alt.Y("value:Q", title=y, scale=alt.Scale(zero=False)),
            color=alt.Color(f"{color}:N", title=None),
        )
        .properties(width=560, height=180)
    )
    return charts.svg(chart, description, title)


def _soak(frames: dict[str, pd.DataFrame], figures: pd.DataFrame) -> str:
    table = figures[figures["case"] == power.SOAK]
    raw = frames.get("raw")
    points = list(dict.fromkeys(raw.loc[raw["case"] == power.SOAK, "params"])) if raw is not None and len(raw) else []
    if table.empty and not points:
        return markup.empty("no soak measurements")
    drawn = ""
    if points:
        nvml, bins = power.soak_series(raw, points[-1])
        clocks = pd.concat(
            [
                bins.rename(columns={"clock_mhz": "value"}).assign(source="SMs' clock64 over %globaltimer"),
                nvml[["time_s", "sm_clock_mhz"]].rename(columns={"sm_clock_mhz": "value"}).assign(source="NVML"),
            ]
        )
        state = pd.concat(
            [
                nvml[["time_s", col]].rename(columns={col: "value"}).assign(reading=name)
                for col, name in (("power_w", "board power (W)"), ("temperature_c", "temperature (C)"))
            ]
        )
        drawn = _soak_chart(
            clocks,
            "SM clock (MHz)",
            "SM clock over the soak",
            "source",
            "SM clock (MHz) against seconds into the soak: the SMs' own clock per 100 ms bin (clock64 over "
            "%globaltimer, the median over SMs) and NVML's reading every 100 ms.",
        ) + "".join(
            _soak_chart(
                state[state["reading"] == name],
                name,
                f"{name.split(' (')[0].capitalize()} over the soak",
                "reading",
                f"NVML's {name} every 100 ms against seconds into the soak.",
            )
            for name in ("board power (W)", "temperature (C)")
        )
    note = markup.empty(
        "every SM running power_bf16_mma's load for the whole soak; start and end are its first and last ~2 s. "
        "Clock event onsets count the readings where a reason began"
    )
    return note + drawn + evidence.figure_table(table, (*COLUMNS, "derivation"))


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The power category's model, chart and tables, each saying so when its measurements are missing."""
    pts = power.points(frames.get("raw"))
    figures = evidence.figures_of(frames)
    return [
        ("Power model: P = P_infrastructure + k x active SMs", _model(figures, pts)),
        ("Board power versus active SMs", _chart(figures, pts)),
        ("Energy efficiency (TFLOPS/W) at the most SMs measured", _efficiency(figures)),
        ("Clocks, temperature and throttle reasons per sample", _samples(pts)),
        ("Clock and power-limit settings", _settings(figures)),
        ("Sustained soak: clock, power and temperature over time", _soak(frames, figures)),
    ]
