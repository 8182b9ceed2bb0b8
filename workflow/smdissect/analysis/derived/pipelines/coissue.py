"""The co-issue pairs: each pair's paired total against what the issue limit and a shared pipe would give, the
sharing index and verdict that follow, each class's rate alone, and the pipe groups the verdicts join."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ....core.archs import ISSUE_RATE
from ...figure_model import Figure
from ..sweeps import derived, method_of, num, param, series

SHARED_INDEX = 0.7  # sharing index from which a pair shares one pipe (0 = only the issue limit, 1 = one pipe)
PARTLY_INDEX = 0.3  # sharing index from which a pair partly shares a resource
SEPARABLE = 1.1  # the issue-limited expectation must exceed the shared-pipe one by this factor to tell them apart
COISSUE = ("throughput_x", "throughput_y", "throughput_x_alone", "throughput_y_alone", "slowdown_x", "slowdown_y")
PAIR_NAME = re.compile(r"^coissue (?P<x>[a-z0-9_]+)\+(?P<y>[a-z0-9_]+) (?P<what>.+)$")


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
        key = (str(r["case"]), str(r["params"]))
        out += _pair_figures(raw, r, spreads.loc[key] if key in spreads.index else pd.Series(dtype=float), generic)
    out += _alone_figures(raw, pairs, generic)
    out.append(_groups_figure(ev, groups, pairs, generic))
    return out


def _issue_text(r: pd.Series) -> str:
    """How a pair's issue-limited expectation follows from the issue rate and each class's alone rate."""
    fx, ax, ay = r["x share of issue"], r["throughput_x_alone"], r["throughput_y_alone"]
    return f"min({ISSUE_RATE:g}, {num(ax)}/{fx:.3f}, {num(ay)}/{1 - fx:.3f}) = {num(r['issue-limited expectation'])}"


def _pair_figures(raw: pd.DataFrame, r: pd.Series, spread: pd.Series, generic: list[Figure]) -> list[Figure]:
    """One pair's paired total, slowdown beyond the issue limit and (where the two expectations differ enough)
    sharing index; `spread` holds their ranges over the repeats."""
    x, y, case, at = str(r["name_x"]), str(r["name_y"]), str(r["case"]), str(r["params"])
    n = len(series(raw, case, "throughput_x").get(at, []))
    fx = r["x share of issue"]
    total, issue, shared = r["paired total"], r["issue-limited expectation"], r["shared-pipe expectation"]
    common = {"points": (at,), "params": at, "method": method_of(generic, case)}
    tell = (
        ""
        if r["separable"] or x == y
        else (
            f"; cannot tell a shared pipe from the issue limit (the issue-"
            f"limited expectation is under {SEPARABLE:g}x the shared-pipe "
            f"one, {num(shared)})"
        )
    )
    out = [
        derived(
            case,
            "paired_total",
            "warp_inst/cycle/SM",
            f"coissue {x}+{y} paired total",
            total,
            spread.get("paired total", 0.0),
            n,
            f"throughput_x + throughput_y of the pair launch: "
            f"{num(r['throughput_x'])} + {num(r['throughput_y'])} ({x} {fx:.0%} of the instructions)",
            **common,
        ),
        derived(
            case,
            "slowdown_beyond_issue",
            "ratio",
            f"coissue {x}+{y} slowdown beyond issue",
            issue / total,
            spread.get("slowdown beyond issue", 0.0),
            n,
            f"issue-limited expectation {_issue_text(r)} over the paired total {num(total)}{tell}",
            **common,
        ),
    ]
    if pd.notna(r["sharing index"]):
        out.append(
            derived(
                case,
                "sharing_index",
                "index",
                f"coissue {x}+{y} sharing index",
                r["sharing index"],
                spread.get("sharing index", 0.0),
                n,
                f"(1/T - 1/E_issue) / (1/E_shared - 1/E_issue) with T = {num(total)}, E_issue = {_issue_text(r)}, "
                f"E_shared = 1/({fx:.3f}/{num(r['throughput_x_alone'])} + {1 - fx:.3f}/{num(r['throughput_y_alone'])}) "
                f"= {num(shared)}: {r['verdict']}",
                **common,
            )
        )
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
