"""Figures the pipelines category derives over several points: the ILP knees of the instruction chains, the co-issue
pair model and the pipe topology it supports, the subnormal-operand penalties and the dispatch latency and slope.
The helpers are pure functions of the raw table; the view renders their figures, the tests call them directly."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Mapping

import numpy as np
import pandas as pd

from ..archs import ISSUE_RATE
from ..catalog import Case
from ..figure_model import Figure
from ..tables import parse_params, point_text

CATEGORY = "pipelines"
METRICS = frozenset(
    {
        "dispatch",
        "dispatch_slope",
        "ilp_knee",
        "latency_penalty",
        "paired_total",
        "pipe_groups",
        "sharing_index",
        "slowdown_beyond_issue",
        "throughput_alone",
        "throughput_penalty",
    }
)  # every metric a figure of this deriver can have

KNEE = 0.9  # the ILP knee: the smallest ILP reaching this share of the best throughput at one warp count
SHARED_INDEX = 0.7  # sharing index from which a pair shares one pipe (0 = only the issue limit, 1 = one pipe)
PARTLY_INDEX = 0.3  # sharing index from which a pair partly shares a resource
SEPARABLE = 1.1  # the issue-limited expectation must exceed the shared-pipe one by this factor to tell them apart
SUBNORMAL = re.compile(r"^(?P<op>[a-z0-9]+?)_(?P<operands>normal|subnormal|ftz_subnormal)$")
COISSUE = ("throughput_x", "throughput_y", "throughput_x_alone", "throughput_y_alone", "slowdown_x", "slowdown_y")
PAIR_NAME = re.compile(r"^coissue (?P<x>[a-z0-9_]+)\+(?P<y>[a-z0-9_]+) (?P<what>.+)$")
PAPER = {"dispatch_iadd3 dispatch latency": "dispatch_latency_sm120"}  # reference/ rows a derived figure stands for

# --- shared helpers (the scheduler deriver uses them too) --------------------------------------------------------


def param(params: str, key: str) -> object:
    """One value of a canonical-JSON point (None where absent)."""
    return parse_params(params).get(key)


def series(raw: pd.DataFrame, case: str, metric: str) -> dict[str, np.ndarray]:
    """Point -> the samples of one metric of one case at it, in repeat order (sweep order of the points)."""
    if raw.empty:
        return {}
    rows = raw[(raw["case"] == case) & (raw["metric"] == metric)]
    order = "repeat" if "repeat" in rows.columns else "value"
    return {str(p): g.sort_values(order)["value"].to_numpy(float) for p, g in rows.groupby("params", sort=False)}


def unit_of(raw: pd.DataFrame, case: str, metric: str) -> str:
    """The unit a case recorded a metric in ('' where it did not)."""
    rows = raw[(raw["case"] == case) & (raw["metric"] == metric)]
    return str(rows["unit"].iloc[0]) if len(rows) and "unit" in rows.columns else ""


def medians(points: Mapping[Hashable, np.ndarray]) -> dict[Hashable, float]:
    """The median of every point's samples."""
    return {k: float(np.median(v)) for k, v in points.items()}


def robust(
    fn: Callable[[dict[Hashable, float]], float | None], points: Mapping[Hashable, np.ndarray]
) -> tuple[float | None, float]:
    """`fn` of the points' medians, and its spread: max - min of `fn` over the repeats (repeat r of every point
    together, so a figure derived over several points spreads as one launch's worth of each would make it)."""
    value = fn(medians(points))
    repeats = min((len(v) for v in points.values()), default=0)
    each = [fn({k: float(v[r]) for k, v in points.items()}) for r in range(repeats)]
    each = [e for e in each if e is not None and np.isfinite(e)]
    return value, (max(each) - min(each) if each else 0.0)


def ratio_spread(top: np.ndarray, bottom: np.ndarray) -> float:
    """The spread of a ratio of two sample sets from their extremes: max(top)/min(bottom) - min(top)/max(bottom)."""
    if not len(top) or not len(bottom) or min(bottom) <= 0 or max(bottom) <= 0:
        return float("nan")
    return float(max(top) / min(bottom) - min(top) / max(bottom))


def derived(
    case: str,
    metric: str,
    unit: str,
    name: str,
    value: float,
    spread: float,
    samples: int,
    derivation: str,
    points: Iterable[str],
    params: str = "",
    method: str = "",
) -> Figure:
    """A figure derived over one or several points of a case (kind 'derived')."""
    return Figure(
        case=case,
        metric=metric,
        unit=unit,
        kind="derived",
        name=name,
        value=float(value),
        spread=float(spread),
        samples=int(samples),
        derivation=derivation,
        params=params,
        points=tuple(dict.fromkeys(points)),
        method=method,
    )


def method_of(generic: Iterable[Figure], case: str) -> str:
    """The method text a case's generic figures carry (its manifest `method`)."""
    return next((f.method for f in generic if f.case == case and f.method), "")


def num(value: float) -> str:
    """A number in a derivation text: 4 significant figures."""
    return f"{value:.4g}"


def slope(xs: Iterable[float], ys: Iterable[float]) -> float | None:
    """The least-squares slope of ys over xs (None with fewer than two distinct xs)."""
    x, y = np.asarray(list(xs), float), np.asarray(list(ys), float)
    return float(np.polyfit(x, y, 1)[0]) if len(set(x)) > 1 else None


# --- ILP knees of the instruction chains -------------------------------------------------------------------------


def ilp_knee(by_ilp: Mapping[Hashable, float], share: float = KNEE) -> int | None:
    """The smallest ILP whose throughput reaches `share` of the best over ILP (None without a positive one)."""
    best = max(by_ilp.values(), default=0.0)
    if not best > 0:
        return None
    return int(min(int(i) for i, v in by_ilp.items() if v >= share * best))


def chain_points(raw: pd.DataFrame) -> dict[str, dict[int, dict[int, str]]]:
    """Every chain case's throughput points: case -> warps -> ilp -> point."""
    out: dict[str, dict[int, dict[int, str]]] = {}
    if raw.empty:
        return out
    thr = raw.loc[raw["metric"] == "throughput", ["case", "params"]].drop_duplicates()
    for case, params in thr.itertuples(index=False):
        ilp, warps = param(params, "ilp"), param(params, "warps")
        if ilp is not None and warps is not None:
            out.setdefault(str(case), {}).setdefault(int(warps), {})[int(ilp)] = str(params)
    return out


def knee_figures(raw: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """Per chain case, its ILP knee at the fewest and at the most warps it ran (where it swept two ILPs or more)."""
    out = []
    for case, by_warps in chain_points(raw).items():
        thr = series(raw, case, "throughput")
        for warps in sorted({min(by_warps), max(by_warps)}):
            at = by_warps[warps]
            if len(at) < 2:
                continue
            pts = {ilp: thr[p] for ilp, p in sorted(at.items())}
            knee, spread = robust(ilp_knee, pts)
            if knee is None:
                continue
            med = medians(pts)
            best = max(med, key=lambda i: med[i])
            steps = ", ".join(f"ilp {i}: {num(v)} ({v / med[best]:.0%})" for i, v in med.items())
            out.append(
                derived(
                    case,
                    "ilp_knee",
                    "ilp",
                    f"{case} ILP knee at warps={warps}",
                    knee,
                    spread,
                    sum(len(v) for v in pts.values()),
                    f"smallest ILP reaching {KNEE:.0%} of the best throughput at warps={warps} "
                    f"({num(med[best])} warp_inst/cycle/SM at ilp={best}): {steps}; spread: over the "
                    "repeats",
                    at.values(),
                    method=method_of(generic, case),
                )
            )
    return out


# --- co-issue pairs and the pipe topology ------------------------------------------------------------------------


def coissue_pairs(raw: pd.DataFrame, repeat: int | None = None) -> pd.DataFrame:
    """One row per measured pair: class names and indices, each class's throughput alone and paired, slowdowns
    (medians over the repeats, or one repeat's values)."""
    if raw.empty or not raw["metric"].isin(COISSUE).any():
        return pd.DataFrame()
    rows = raw[raw["metric"].isin(COISSUE)]
    if repeat is not None:
        rows = rows[rows["repeat"] == repeat]
    wide = rows.pivot_table(index=["case", "params"], columns="metric", values="value", aggfunc="median")
    wide = wide.reset_index()
    if not set(COISSUE) <= set(wide.columns):
        return pd.DataFrame()
    wide["x"] = wide["params"].map(lambda p: param(p, "x")).astype(int)
    wide["y"] = wide["params"].map(lambda p: param(p, "y")).astype(int)
    names = {int(x): str(case).removeprefix("coissue_") for case, x in wide.groupby("case")["x"].first().items()}
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
        ISSUE_RATE, np.minimum(ev["throughput_x_alone"] / fx, ev["throughput_y_alone"] / fy)
    )
    ev["shared-pipe expectation"] = 1 / (fx / ev["throughput_x_alone"] + fy / ev["throughput_y_alone"])
    ev["slowdown beyond issue"] = ev["issue-limited expectation"] / total
    gap = 1 / ev["shared-pipe expectation"] - 1 / ev["issue-limited expectation"]
    ev["separable"] = ev["issue-limited expectation"] >= SEPARABLE * ev["shared-pipe expectation"]
    ev["sharing index"] = ((1 / total - 1 / ev["issue-limited expectation"]) / gap).where(ev["separable"])
    ev["verdict"] = ev.apply(pair_verdict, axis=1) if len(ev) else pd.Series(dtype=str)
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
    return "issue-limited" if alone_bound > ISSUE_RATE else "independent"


def classes(pairs: pd.DataFrame) -> list[str]:
    """Every class that appears in a pair, in index order."""
    return list(dict.fromkeys(pairs.sort_values("x")["name_x"].tolist() + pairs.sort_values("y")["name_y"].tolist()))


def topology(pairs: pd.DataFrame) -> tuple[pd.DataFrame, list[list[str]]]:
    """Every pair with its evidence and verdict, and the classes grouped by shared pipe (union of 'shared pipe')."""
    ev = pair_model(pairs)
    parent = {n: n for n in classes(ev)}

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


def groups_text(groups: list[list[str]]) -> str:
    """Pipe groups as '{a, b}; {c}'."""
    return "; ".join("{" + ", ".join(g) + "}" for g in groups)


def _pair_spreads(raw: pd.DataFrame) -> pd.DataFrame:
    """Per pair (case, params): max - min over the repeats of its total, slowdown beyond issue and sharing index."""
    cols = ["paired total", "slowdown beyond issue", "sharing index"]
    repeats = sorted(raw["repeat"].unique()) if "repeat" in raw.columns else []
    frames = [pair_model(p) for r in repeats if len(p := coissue_pairs(raw, int(r)))]
    if not frames:
        return pd.DataFrame(columns=["case", "params", *cols])
    every = pd.concat(frames)[["case", "params", *cols]]
    return every.groupby(["case", "params"])[cols].agg(lambda s: s.max() - s.min()).reset_index()


def coissue_figures(raw: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """Per pair: its paired total, slowdown beyond the issue limit and (where the two expectations differ enough)
    sharing index with its verdict; per class: its alone rate; and the number of pipe groups the verdicts give."""
    pairs = coissue_pairs(raw)
    if pairs.empty:
        return []
    ev, groups = topology(pairs)
    spreads = _pair_spreads(raw).set_index(["case", "params"])
    out = []
    for _, r in ev.iterrows():
        x, y, case, at = str(r["name_x"]), str(r["name_y"]), str(r["case"]), str(r["params"])
        sp = spreads.loc[(case, at)] if (case, at) in spreads.index else pd.Series(dtype=float)
        n = len(series(raw, case, "throughput_x").get(at, []))
        fx, ax, ay = r["x share of issue"], r["throughput_x_alone"], r["throughput_y_alone"]
        total, issue, shared = r["paired total"], r["issue-limited expectation"], r["shared-pipe expectation"]
        common = {"points": (at,), "params": at, "method": method_of(generic, case)}
        out.append(
            derived(
                case,
                "paired_total",
                "warp_inst/cycle/SM",
                f"coissue {x}+{y} paired total",
                total,
                sp.get("paired total", 0.0),
                n,
                f"throughput_x + throughput_y of the pair launch: "
                f"{num(r['throughput_x'])} + {num(r['throughput_y'])} ({x} {fx:.0%} of the instructions)",
                **common,
            )
        )
        issue_text = f"min({ISSUE_RATE:g}, {num(ax)}/{fx:.3f}, {num(ay)}/{1 - fx:.3f}) = {num(issue)}"
        tell = (
            ""
            if r["separable"] or x == y
            else (
                f"; cannot tell a shared pipe from the issue limit (the issue-"
                f"limited expectation is under {SEPARABLE:g}x the shared-pipe "
                f"one, {num(shared)})"
            )
        )
        out.append(
            derived(
                case,
                "slowdown_beyond_issue",
                "ratio",
                f"coissue {x}+{y} slowdown beyond issue",
                issue / total,
                sp.get("slowdown beyond issue", 0.0),
                n,
                f"issue-limited expectation {issue_text} over the paired total {num(total)}{tell}",
                **common,
            )
        )
        if pd.notna(r["sharing index"]):
            out.append(
                derived(
                    case,
                    "sharing_index",
                    "index",
                    f"coissue {x}+{y} sharing index",
                    r["sharing index"],
                    sp.get("sharing index", 0.0),
                    n,
                    f"(1/T - 1/E_issue) / (1/E_shared - 1/E_issue) with "
                    f"T = {num(total)}, E_issue = {issue_text}, E_shared = 1/({fx:.3f}/{num(ax)} + "
                    f"{1 - fx:.3f}/{num(ay)}) = {num(shared)}: {r['verdict']}",
                    **common,
                )
            )
    out += _alone_figures(raw, pairs, generic)
    out.append(_groups_figure(ev, groups, pairs, generic))
    return out


def _alone_figures(raw: pd.DataFrame, pairs: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """Per class: its alone rate, pooled over every pair launch that timed it alone (as x or as y)."""
    out = []
    for name in classes(pairs):
        case = f"coissue_{name}"
        pooled, points = [], []
        for side in ("x", "y"):
            for r in pairs[pairs[f"name_{side}"] == name].itertuples(index=False):
                pooled += list(series(raw, str(r.case), f"throughput_{side}_alone").get(str(r.params), []))
                points.append(str(r.params))
        if not pooled or case not in set(pairs["case"]):
            continue
        out.append(
            derived(
                case,
                "throughput_alone",
                "warp_inst/cycle/SM",
                f"coissue {name} alone rate",
                float(np.median(pooled)),
                max(pooled) - min(pooled),
                len(pooled),
                f"median of its alone rate over the {len(points)} pair launches that time it alone (16 warps)",
                points,
                method=method_of(generic, case),
            )
        )
    return out


def _groups_figure(ev: pd.DataFrame, groups: list[list[str]], pairs: pd.DataFrame, generic: list[Figure]) -> Figure:
    """The number of separately loaded pipe groups: classes joined by every 'shared pipe' verdict."""
    counts = ev[ev["x"] != ev["y"]]["verdict"].value_counts()
    self_pairs = ev[ev["x"] == ev["y"]]
    unsaturated = self_pairs.loc[self_pairs["sharing index"] < SHARED_INDEX, "name_x"].tolist()
    weak = (
        f"; paired with itself below a sharing index of {SHARED_INDEX:g} (its alone rate is not its pipe's, so "
        f"its verdicts are weaker): {', '.join(unsaturated)}"
        if unsaturated
        else ""
    )
    first = str(ev.sort_values("x")["case"].iloc[0])
    return derived(
        first,
        "pipe_groups",
        "groups",
        "pipe groups",
        len(groups),
        0.0,
        len(ev),
        f"{len(groups)} separately loaded pipe groups among {len(classes(ev))} classes: "
        f"{groups_text(groups)} "
        f"(classes joined by every 'shared pipe' verdict, sharing index >= {SHARED_INDEX:g}); pairs: "
        f"{', '.join(f'{v}: {n}' for v, n in counts.items())}{weak}",
        pairs["params"],
        method=method_of(generic, first),
    )


def pair_figure_names(name: str) -> tuple[str, str, str] | None:
    """(x, y, what) of a co-issue pair figure's name, None for another figure."""
    m = PAIR_NAME.match(name)
    return (m.group("x"), m.group("y"), m.group("what")) if m else None


# --- subnormal operands ------------------------------------------------------------------------------------------


def subnormal_ops(cases: Iterable[str]) -> dict[str, dict[str, str]]:
    """op -> operands class -> case, for the cases named <op>_normal / _subnormal / _ftz_subnormal."""
    out: dict[str, dict[str, str]] = {}
    for case in cases:
        if m := SUBNORMAL.match(case):
            out.setdefault(m.group("op"), {})[m.group("operands")] = case
    return out


def subnormal_figures(raw: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """Per instruction with normal and subnormal rows: subnormal latency / normal latency, and normal peak
    throughput / subnormal peak throughput (1.00 = no penalty)."""
    out = []
    for op, by in subnormal_ops(raw["case"].unique() if len(raw) else []).items():
        normal, sub = by.get("normal"), by.get("subnormal")
        if not normal or not sub:
            continue
        method = method_of(generic, sub)
        lat_n, lat_s = series(raw, normal, "latency"), series(raw, sub, "latency")
        if lat_n and lat_s:
            (pn, a), (ps, b) = next(iter(lat_n.items())), next(iter(lat_s.items()))
            out.append(
                derived(
                    sub,
                    "latency_penalty",
                    "x",
                    f"{op} subnormal latency penalty",
                    np.median(b) / np.median(a),
                    ratio_spread(b, a),
                    len(a) + len(b),
                    f"{sub} latency / {normal} latency: {num(np.median(b))} / {num(np.median(a))} cycles",
                    (pn, ps),
                    params=ps,
                    method=method,
                )
            )
        thr_n, thr_s = series(raw, normal, "throughput"), series(raw, sub, "throughput")
        if thr_n and thr_s:
            best_n = max(thr_n, key=lambda p: np.median(thr_n[p]))
            best_s = max(thr_s, key=lambda p: np.median(thr_s[p]))
            a, b = thr_n[best_n], thr_s[best_s]
            out.append(
                derived(
                    sub,
                    "throughput_penalty",
                    "x",
                    f"{op} subnormal throughput penalty",
                    np.median(a) / np.median(b),
                    ratio_spread(a, b),
                    len(a) + len(b),
                    f"{normal} peak throughput / {sub} peak throughput: {num(np.median(a))} (at "
                    f"{point_text(best_n)}) / {num(np.median(b))} (at {point_text(best_s)}) "
                    "warp_inst/cycle/SM",
                    (best_n, best_s),
                    method=method,
                )
            )
    return out


# --- dispatch latency --------------------------------------------------------------------------------------------


def dispatch_figures(raw: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """Per dispatch case: the dispatch latency (elapsed - clock_to_clock at n = 1) and the cycles each further
    dependent op adds (the least-squares slope of dispatch over n >= 1)."""
    out = []
    cases = sorted({str(c) for c in raw.loc[raw["metric"] == "dispatch", "case"]}) if len(raw) else []
    for case in cases:
        found = series(raw, case, "dispatch").items()
        pts = {int(param(p, "n")): (p, v) for p, v in found if param(p, "n") is not None}
        method = method_of(generic, case)
        if 1 in pts:
            at, v = pts[1]
            out.append(
                derived(
                    case,
                    "dispatch",
                    "cycle",
                    f"{case} dispatch latency",
                    np.median(v),
                    np.ptp(v),
                    len(v),
                    "elapsed - clock_to_clock of the same launch at n = 1: cycles from a clock read to the "
                    f"next clock read with one dependent op on the value between ({len(v)} launches, each "
                    "the median of 64 timed pairs)",
                    (at,),
                    params=at,
                    method=method,
                )
            )
        chain = {n: v for n, (_, v) in pts.items() if n >= 1}
        fit, spread = robust(lambda m: slope(m.keys(), m.values()), chain)
        if fit is not None:
            listed = ", ".join(f"n={n}: {num(np.median(v))}" for n, v in sorted(chain.items()))
            out.append(
                derived(
                    case,
                    "dispatch_slope",
                    "cycle",
                    f"{case} cycles per further dependent op",
                    fit,
                    spread,
                    sum(len(v) for v in chain.values()),
                    f"least-squares slope of dispatch over n ({listed}); spread: over the repeats",
                    (pts[n][0] for n in sorted(chain)),
                    method=method,
                )
            )
    return out


def figures(frames: dict[str, pd.DataFrame], generic: list[Figure], cases: dict[str, Case]) -> list[Figure]:
    """Every derived figure of the pipelines category."""
    raw = frames.get("raw", pd.DataFrame())
    if raw is None or raw.empty:
        return []
    found = (
        knee_figures(raw, generic)
        + coissue_figures(raw, generic)
        + subnormal_figures(raw, generic)
        + dispatch_figures(raw, generic)
    )
    return with_papers(found, PAPER)


def with_papers(found: list[Figure], papers: Mapping[str, str]) -> list[Figure]:
    """The figures, each named in `papers` carrying that reference/ row's id (the paper figure it stands for)."""
    for f in found:
        f.paper = papers.get(f.name, f.paper)
    return found
