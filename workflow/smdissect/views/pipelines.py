"""Report view of the pipelines category: the instruction reference table, the co-issue matrix and the pipe
topology it supports, subnormal-operand penalties and dispatch latency."""

from __future__ import annotations

import re

import altair as alt
import numpy as np
import pandas as pd

from smdissect import report

ISSUE_LIMIT = 4.0  # warp instructions per cycle per SM: one per sub-partition scheduler
KNEE = 0.9  # the ILP knee: the smallest ILP reaching this share of the best throughput
SHARED_INDEX = 0.7  # sharing index from which a pair shares one pipe (0 = only the issue limit, 1 = one pipe)
PARTLY_INDEX = 0.3  # sharing index from which a pair partly shares a resource
SEPARABLE = 1.1  # the issue-limited expectation must exceed the shared-pipe one by this factor to tell them apart
PIPE_SHARE = 0.1  # pipes counting at least this share of the busiest pipe's instructions (loop overhead is less)
SUBNORMAL = re.compile(r"^(?P<op>[a-z0-9]+?)_(?P<operands>normal|subnormal|ftz_subnormal)$")


def _frame(frames: dict[str, pd.DataFrame], name: str) -> pd.DataFrame:
    """A table of the category, or an empty one when it is missing."""
    df = frames.get(name)
    return df if df is not None else pd.DataFrame()


def _num(params: pd.Series, key: str) -> pd.Series:
    """One swept parameter of every row, as numbers (NaN where absent)."""
    return pd.to_numeric(params.map(lambda p: report.param(p, key)), errors="coerce")


def _medians(raw: pd.DataFrame, metrics: tuple[str, ...]) -> pd.DataFrame:
    """Median and spread (max - min) per (case, params, metric) of the given metrics (no rows: empty)."""
    keys = ["case", "params", "metric"]
    if raw.empty or not {*keys, "value"} <= set(raw.columns) or not raw["metric"].isin(metrics).any():
        return pd.DataFrame(columns=[*keys, "median", "spread"])
    rows = raw[raw["metric"].isin(metrics)]
    return rows.groupby(keys, as_index=False)["value"].agg(median="median", spread=lambda s: s.max() - s.min())


# --- instruction reference table -------------------------------------------------------------------------


def sass_per_op(sass: pd.DataFrame) -> pd.DataFrame:
    """Per (arch, case): opcodes of the long ilp-1 kernel issued at least half as often as the op, with count/ops."""
    if sass.empty:
        return pd.DataFrame(columns=["arch", "case", "sass"])
    s = sass[(sass["variant"] == "long") & (_num(sass["params"], "ilp").fillna(1) == 1) & (sass["ops"] > 0)]
    s = (
        s[s["count"] >= 0.5 * s["ops"]]
        .sort_values("count", ascending=False)
        .drop_duplicates(["arch", "case", "opcode"])
    )
    terms = s["opcode"] + " x" + (s["count"] / s["ops"]).map(lambda r: f"{round(r, 2):g}")
    return s.assign(sass=terms).groupby(["arch", "case"], as_index=False)["sass"].agg(", ".join)


def _pipes_per_case(pipes: pd.DataFrame) -> dict[str, str]:
    """The pipes ncu counts each case's long ilp-1 kernel on (most warps), with each pipe's share of the busiest."""
    if pipes.empty:
        return {}
    p = pipes[(pipes["variant"] == "long") & (_num(pipes["params"], "ilp") == 1)].copy()
    p["warps"] = _num(p["params"], "warps").fillna(1)
    p = p[p["warps"] == p.groupby("case")["warps"].transform("max")]
    out = {}
    for case, g in p.groupby("case"):
        counts = g.groupby("pipe")["inst_executed"].mean().sort_values(ascending=False)
        top = counts.iloc[0] if len(counts) else 0
        busy = counts[counts >= PIPE_SHARE * top] if top > 0 else counts.iloc[0:0]
        out[case] = ", ".join(f"{pipe} ({n / top:.0%})" for pipe, n in busy.items())
    return out


def _ilp_knee(thr: pd.DataFrame) -> tuple[float, str, float]:
    """Best median throughput, where, and the smallest ILP within KNEE of the best at the highest warp count."""
    best = thr.loc[thr["median"].idxmax()]
    top = thr[thr["warps"] == thr["warps"].max()].dropna(subset=["ilp"])
    knee = float("nan")
    if not top.empty:
        reach = top[top["median"] >= KNEE * top["median"].max()]
        knee = float(reach["ilp"].min())
    return float(best["median"]), str(best["params"]), knee


def _chain_cases(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The chain cases with their PTX and claimed pipe: from the manifest, else from the measured tables."""
    cases = _frame(frames, "cases")
    if not cases.empty and "case" in cases:
        kind = cases["kind"] if "kind" in cases else pd.Series("chain", index=cases.index)
        chosen = cases[kind.fillna("chain") == "chain"]
        return chosen.reindex(columns=["case", "ptx", "pipe"])
    raw, sass = _frame(frames, "raw"), _frame(frames, "sass")
    ids = set(raw.loc[raw["metric"].isin(["latency", "throughput"]), "case"]) if not raw.empty else set()
    ids |= set(sass.loc[sass["variant"] == "long", "case"]) if not sass.empty else set()
    return pd.DataFrame({"case": sorted(ids), "ptx": "", "pipe": ""})


def reference_table(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per chain case: PTX, SASS per arch, latency, best throughput and where, ILP knee, ncu pipes."""
    raw, status = _frame(frames, "raw"), _frame(frames, "status")
    med = _medians(raw, ("latency", "throughput"))
    med["ilp"], med["warps"] = _num(med["params"], "ilp"), _num(med["params"], "warps").fillna(1)
    forms = sass_per_op(_frame(frames, "sass"))
    pipes = _pipes_per_case(_frame(frames, "pipes"))
    reasons = {}
    if not status.empty and {"case", "reason"} <= set(status.columns):
        reasons = status[status["reason"].fillna("") != ""].groupby("case")["reason"].first().to_dict()
    rows = []
    for c in _chain_cases(frames).itertuples(index=False):
        row = {"case": c.case, "PTX": c.ptx or ""}
        for arch, g in forms[forms["case"] == c.case].groupby("arch"):
            row[f"SASS {arch}"] = g["sass"].iloc[0]
        mine = med[med["case"] == c.case]
        lat, thr = mine[mine["metric"] == "latency"], mine[mine["metric"] == "throughput"]
        if lat.empty and thr.empty:
            row["latency (cycle)"] = reasons.get(c.case, "not run")
        if not lat.empty:
            row |= {"latency (cycle)": float(lat["median"].iloc[0]), "spread": float(lat["spread"].iloc[0])}
        if not thr.empty:
            best, where, knee = _ilp_knee(thr)
            row |= {"best throughput (warp_inst/cycle/SM)": best, "at": where, "ILP knee": knee}
        row["ncu pipes (long, ilp 1)"] = pipes.get(c.case, "")
        row["claimed pipe"] = c.pipe or ""
        rows.append(row)
    table = pd.DataFrame(rows)
    archs = sorted((c for c in table.columns if c.startswith("SASS ")), key=lambda c: int(re.sub(r"\D", "", c)))
    order = ["case", "PTX", *archs, "latency (cycle)", "spread", "best throughput (warp_inst/cycle/SM)", "at"]
    order += ["ILP knee", "ncu pipes (long, ilp 1)", "claimed pipe"]
    return table.reindex(columns=[c for c in order if c in table.columns])


# --- co-issue matrix and pipe topology -------------------------------------------------------------------------

COISSUE = ("throughput_x", "throughput_y", "throughput_x_alone", "throughput_y_alone", "slowdown_x", "slowdown_y")


def coissue_pairs(raw: pd.DataFrame) -> pd.DataFrame:
    """One row per measured pair: class names and indices, each class's throughput alone and paired, slowdowns."""
    med = _medians(raw, COISSUE)
    if med.empty:
        return pd.DataFrame()
    wide = med.pivot_table(index=["case", "params"], columns="metric", values="median").reset_index()
    if not set(COISSUE) <= set(wide.columns):
        return pd.DataFrame()
    wide["x"], wide["y"] = _num(wide["params"], "x"), _num(wide["params"], "y")
    names = {int(x): case.removeprefix("coissue_") for case, x in wide.groupby("case")["x"].first().items()}
    wide["name_x"] = wide["x"].map(lambda i: names.get(int(i), f"class {int(i)}"))
    wide["name_y"] = wide["y"].map(lambda i: names.get(int(i), f"class {int(i)}"))
    return wide.sort_values(["x", "y"]).reset_index(drop=True)


def pair_model(pairs: pd.DataFrame) -> pd.DataFrame:
    """Every pair with its issue share, measured total, issue-limited and shared-pipe expectations, sharing index and
    verdict (see pair_verdict)."""
    ev = pairs.copy()
    total = ev["throughput_x"] + ev["throughput_y"]
    fx = ev["throughput_x"] / total  # the body's fixed mix: x's share of the pair's instructions
    fy = 1 - fx
    ev["x share of issue"] = fx
    ev["paired total"] = total
    ev["issue-limited expectation"] = np.minimum(
        ISSUE_LIMIT, np.minimum(ev["throughput_x_alone"] / fx, ev["throughput_y_alone"] / fy)
    )
    ev["shared-pipe expectation"] = 1 / (fx / ev["throughput_x_alone"] + fy / ev["throughput_y_alone"])
    ev["slowdown beyond issue"] = ev["issue-limited expectation"] / total
    gap = 1 / ev["shared-pipe expectation"] - 1 / ev["issue-limited expectation"]
    separable = ev["issue-limited expectation"] >= SEPARABLE * ev["shared-pipe expectation"]
    ev["sharing index"] = ((1 / total - 1 / ev["issue-limited expectation"]) / gap).where(separable)
    ev["verdict"] = ev.apply(pair_verdict, axis=1)
    return ev


def pair_verdict(r: pd.Series) -> str:
    """What a pair's sharing index says: shared pipe, partly shared, issue-limited, independent, or cannot tell."""
    if r["x"] == r["y"]:
        return "same class"
    if pd.isna(r["sharing index"]):
        return "cannot tell"
    if r["sharing index"] >= SHARED_INDEX:
        return "shared pipe"
    if r["sharing index"] >= PARTLY_INDEX:
        return "partly shared"
    alone_bound = min(
        r["throughput_x_alone"] / r["x share of issue"], r["throughput_y_alone"] / (1 - r["x share of issue"])
    )
    return "issue-limited" if alone_bound > ISSUE_LIMIT else "independent"


def topology(pairs: pd.DataFrame) -> tuple[pd.DataFrame, list[list[str]]]:
    """Every pair with its evidence and verdict, and the classes grouped by shared pipe (union of 'shared pipe')."""
    ev = pair_model(pairs)
    parent = {n: n for n in _classes(ev)}

    def root(n: str) -> str:
        while parent[n] != n:
            n = parent[n]
        return n

    for r in ev[ev["verdict"] == "shared pipe"].itertuples():
        parent[root(r.name_y)] = root(r.name_x)
    groups: dict[str, list[str]] = {}
    for n in parent:
        groups.setdefault(root(n), []).append(n)
    return ev, sorted(groups.values(), key=lambda g: (-len(g), g))


def _classes(pairs: pd.DataFrame) -> list[str]:
    """Every class that appears in a pair, in index order."""
    return list(dict.fromkeys(pairs.sort_values("x")["name_x"].tolist() + pairs.sort_values("y")["name_y"].tolist()))


def _heatmap(ev: pd.DataFrame) -> str:
    """Slowdown beyond the issue limit of every pair (symmetric), with the numbers as text."""
    cells = pd.concat(
        [
            ev.assign(a=ev["name_x"], b=ev["name_y"]),
            ev[ev["x"] != ev["y"]].assign(a=ev["name_y"], b=ev["name_x"]),
        ]
    )[["a", "b", "slowdown beyond issue"]].rename(columns={"slowdown beyond issue": "slowdown"})
    order = _classes(ev)
    base = alt.Chart(cells).encode(x=alt.X("b:N", sort=order, title="class"), y=alt.Y("a:N", sort=order, title="class"))
    rect = base.mark_rect().encode(
        color=alt.Color(
            "slowdown:Q", scale=alt.Scale(scheme="orangered", domainMin=1), title="issue-limited / measured"
        )
    )
    text = base.mark_text(fontSize=11).encode(
        text=alt.Text("slowdown:Q", format=".2f"),
        color=alt.condition(alt.datum.slowdown > 1.5, alt.value("white"), alt.value("black")),
    )
    return report.svg((rect + text).properties(width=420, height=420))


def _coissue_section(pairs: pd.DataFrame) -> str:
    if pairs.empty:
        return report.empty("no co-issue rows (coissue_* cases not measured)")
    ev = pair_model(pairs)
    alone = pd.concat(
        [
            pairs[["name_x", "throughput_x_alone"]].set_axis(["class", "alone"], axis=1),
            pairs[["name_y", "throughput_y_alone"]].set_axis(["class", "alone"], axis=1),
        ]
    )
    alone = alone.groupby("class", sort=False)["alone"].median().reset_index(name="alone (warp_inst/cycle/SM)")
    intro = (
        "<p>Every warp (16, 4 per scheduler) interleaves the two classes' independent chains in its own instruction "
        "stream, so each class gets a fixed share of the issue slots (its share of the body's instructions) instead "
        "of what a greedy scheduler leaves it. Each cell: the pair's expected total rate if the two classes only "
        f"share the dispatch port (min({ISSUE_LIMIT:g} warp-inst/cycle/SM, each class's alone rate / its share)) "
        "divided by the measured total. 1.00 = no loss beyond the issue limit; on the diagonal a class paired with "
        "itself shows 2.00 when its alone rate already saturates its pipe.</p>"
    )
    return intro + _heatmap(ev) + "<h3>Each class alone (16 warps)</h3>" + report.table(alone)


def _topology_section(pairs: pd.DataFrame) -> str:
    if pairs.empty:
        return report.empty("no co-issue rows: the topology needs the coissue_* cases")
    ev, groups = topology(pairs)
    self_pairs = ev[ev["x"] == ev["y"]]
    unsaturated = self_pairs.loc[self_pairs["sharing index"] < SHARED_INDEX, "name_x"].tolist()
    shared = [g for g in groups if len(g) > 1]
    counts = ev[ev["x"] != ev["y"]]["verdict"].value_counts()
    lines = [
        f"<p><b>Inferred on this GPU:</b> {len(groups)} separately loaded pipe groups among {len(_classes(ev))} "
        f"classes: {'; '.join('{' + ', '.join(g) + '}' for g in groups)}.</p>",
        f"<p>Pairs: {', '.join(f'{v}: {n}' for v, n in counts.items())}.</p>",
        "<p><b>Rule.</b> With shares f<sub>x</sub> + f<sub>y</sub> = 1 of the pair's instructions and alone rates "
        "a<sub>x</sub>, a<sub>y</sub>: if the classes only share the dispatch port, the pair's total rate is "
        f"E<sub>issue</sub> = min({ISSUE_LIMIT:g}, a<sub>x</sub>/f<sub>x</sub>, a<sub>y</sub>/f<sub>y</sub>) (a "
        "balanced mix makes it min(4, a<sub>x</sub> + a<sub>y</sub>)); if they time-share one pipe, "
        "E<sub>shared</sub> = 1 / (f<sub>x</sub>/a<sub>x</sub> + f<sub>y</sub>/a<sub>y</sub>). The sharing index "
        "places the measured total T between them in time per instruction: (1/T - 1/E<sub>issue</sub>) / "
        "(1/E<sub>shared</sub> - 1/E<sub>issue</sub>), 0 = only the issue limit, 1 = one shared pipe. "
        f"<i>shared pipe</i>: index &ge; {SHARED_INDEX:g}; <i>partly shared</i>: &ge; {PARTLY_INDEX:g}; below that "
        "<i>issue-limited</i> when the dispatch port is the binding term of E<sub>issue</sub>, else "
        f"<i>independent</i>; <i>cannot tell</i> when E<sub>issue</sub> is less than {SEPARABLE:g}x "
        "E<sub>shared</sub> (two classes that each fill the issue slots alone look the same shared or not). A "
        "slowdown that only reaches the issue limit says nothing about sharing a pipe.</p>",
    ]
    if shared:
        lines.append(f"<p>Classes sharing a pipe: {'; '.join(' + '.join(g) for g in shared)}.</p>")
    if unsaturated:
        lines.append(
            "<p>Paired with itself, not at its pipe's limit alone (sharing index &lt; "
            f"{SHARED_INDEX:g}), so its alone rate is not its pipe's rate and its verdicts are weaker: "
            f"{', '.join(unsaturated)}.</p>"
        )
    lines.append(
        "<p>The paper reports for sm_120 (RTX PRO 5000) a '5 pipelines + V-pipe' model (P0: FFMA/IADD3, V-pipe: "
        "FMNMX/SIMD, P1: FP64, P2: SFU, P3, P4: tensor; 9 co-issuing pairs) against an older '4 pipelines' model. "
        "The groups above are what this GPU's clocks support for the classes measured here; compare the number of "
        "groups and which classes fall together with that model.</p>"
    )
    cols = [
        *("name_x", "name_y", "throughput_x_alone", "throughput_y_alone", "x share of issue", "paired total"),
        *("issue-limited expectation", "shared-pipe expectation", "slowdown beyond issue", "sharing index", "verdict"),
    ]
    return "".join(lines) + report.table(ev[cols].rename(columns={"name_x": "x", "name_y": "y"}))


# --- subnormal operands and dispatch latency --------------------------------------------------------------------


def subnormal_table(raw: pd.DataFrame) -> pd.DataFrame:
    """Per instruction: latency and best throughput with normal, subnormal and flushed operands, and the penalties."""
    med = _medians(raw, ("latency", "throughput"))
    med = med.join(med["case"].astype(str).str.extract(SUBNORMAL)).dropna(subset=["op"])
    rows = []
    for op, g in med.groupby("op", sort=False):
        row: dict[str, object] = {"instruction": op}
        for operands, h in g.groupby("operands"):
            lat = h.loc[h["metric"] == "latency", "median"]
            thr = h.loc[h["metric"] == "throughput", "median"]
            row[f"latency {operands}"] = float(lat.iloc[0]) if len(lat) else np.nan
            row[f"best throughput {operands}"] = float(thr.max()) if len(thr) else np.nan
        for metric, worse in (("latency", 1), ("best throughput", -1)):
            normal, sub = row.get(f"{metric} normal", np.nan), row.get(f"{metric} subnormal", np.nan)
            row[f"{metric} penalty (x)"] = (sub / normal) ** worse if normal and sub else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def dispatch_table(raw: pd.DataFrame) -> pd.DataFrame:
    """Per dispatch case and n: the bare clock pair, the pair around n dependent ops, and their difference."""
    med = _medians(raw, ("clock_to_clock", "elapsed", "dispatch"))
    if med.empty:
        return med
    wide = med.pivot_table(index=["case", "params"], columns="metric", values=["median", "spread"])
    wide.columns = [f"{m} {'(cycle)' if s == 'median' else 'spread'}" for s, m in wide.columns]
    wide = wide.reset_index()
    wide.insert(1, "n", _num(wide["params"], "n"))
    return wide.drop(columns="params").sort_values(["case", "n"])


def _dispatch_section(raw: pd.DataFrame) -> str:
    table = dispatch_table(raw)
    if table.empty:
        return report.empty("no dispatch rows (dispatch_* cases not measured)")
    notes = []
    for case, g in table.groupby("case"):
        one = g[g["n"] == 1]
        chain = g[g["n"] >= 1].dropna(subset=["elapsed (cycle)"])
        slope = np.polyfit(chain["n"], chain["elapsed (cycle)"], 1)[0] if chain["n"].nunique() > 1 else np.nan
        if len(one):
            notes.append(
                f"<li><b>{case}</b>: first dependent op after a clock read costs "
                f"{one['dispatch (cycle)'].iloc[0]:.2f} cycles beyond a back-to-back clock read "
                f"(spread {one['dispatch spread'].iloc[0]:.2f}); each further dependent op {slope:.2f} cycles</li>"
            )
    intro = (
        "<p>One lane reads clock64, runs n dependent ops on the value read and reads clock64 again; the same launch "
        "times a bare back-to-back read pair (clock_to_clock). dispatch = elapsed - clock_to_clock; at n = 1 it is "
        "the dispatch latency (the paper: 3 cycles to the first IADD3 result on sm_120). A spread above 1 cycle "
        "means the measurement is broken, not noisy.</p>"
    )
    return intro + f"<ul>{''.join(notes)}</ul>" + report.table(table)


def _subnormal_section(raw: pd.DataFrame) -> str:
    table = subnormal_table(raw)
    if table.empty:
        return report.empty("no subnormal rows (<op>_normal / <op>_subnormal cases not measured)")
    intro = (
        "<p>The same dependent chain on normal and on subnormal operands (no .ftz: subnormals computed exactly; each "
        "point checked on the GPU that the chain values really are subnormal), and with .ftz (flushed to zero, "
        "checked likewise). Penalty: subnormal latency / normal latency, normal throughput / subnormal throughput; "
        "1.00 = no penalty (the paper: +0.12 cycle on sm_120, noise).</p>"
    )
    return intro + report.table(table)


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The category's sections: reference table, co-issue matrix, topology, subnormal operands, dispatch latency."""
    raw = _frame(frames, "raw")
    reference = reference_table(frames)
    pairs = coissue_pairs(raw)
    return [
        ("Instruction reference table",
         report.table(reference) if not reference.empty else report.empty("no chain cases in the manifest or data")),
        ("Co-issue matrix", _coissue_section(pairs)),
        ("Pipe topology", _topology_section(pairs)),
        ("Subnormal operands", _subnormal_section(raw)),
        ("Dispatch latency", _dispatch_section(raw)),
    ]  # fmt: skip
