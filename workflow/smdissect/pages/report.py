"""The pages: each category's (the sections every page has around the category's registered view), the page over
several GPUs, the comparison of two result sets and the paper's figures accounted for (the index: report_index)."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from ..core.files import write_text
from ..core.tables import FIGURE_STATUSES, STATUS_MEANING, TABLES
from . import category_sections as common
from . import evidence
from .markup import badge, deftable, document, empty, fold, navigation, number, sections, share, table, table_of
from .views import view_of

# Which pipeline stages produce each table: their skip reason explains an empty section.
STAGES: dict[str, tuple[str, ...]] = {name: kind.stages for name, kind in TABLES.items()}
RATIO_NOTE = "Ratios are measured / reference; a spread is the samples' max - min as a share of the median."


def _missing(name: str, tables: dict[str, pd.DataFrame], skipped: dict[str, str]) -> str | None:
    """Why table `name` has nothing to show, or None when it has rows."""
    df = tables.get(name)
    if df is not None and not df.empty:
        return None
    reasons = [f"{s}: {skipped[s]}" for s in STAGES.get(name, ()) if s in skipped]
    return f"not measured: {'; '.join(reasons)}" if reasons else "no rows"


def lede(title: str, provenance: dict[str, str], skipped: dict[str, str]) -> str:
    """Title, which GPU measured the page, how ratios and spreads read, and the skipped-stages box."""
    labels = (("gpu", ""), ("arch", ""), ("driver", "driver "), ("cuda", "CUDA "))
    who = " &middot; ".join(f"{label}{html.escape(str(provenance[k]))}" for k, label in labels if provenance.get(k))
    out = f'<h1>{html.escape(title)}</h1><p class="lede">{who}. {html.escape(RATIO_NOTE)}</p>'
    if skipped:
        items = "".join(f"<li><b>{html.escape(s)}</b>: {html.escape(r)}</li>" for s, r in skipped.items())
        out += f'<div class="skipped"><h2>Skipped stages</h2><ul>{items}</ul></div>'
    return out


def render_category(
    out: Path,
    category: str,
    title: str,
    tables: dict[str, pd.DataFrame],
    skipped: dict[str, str],
    provenance: dict[str, str],
    categories: list[str],
    elsewhere: dict[str, str],
    gpus: str = "",
) -> None:
    """Write one category's report page (`tables` holds the category's tables, the paper's `reference` and its key
    `findings` as headlines.table gives them): findings first, then the view's evidence, coverage, and the long
    evidence tables folded; `elsewhere` maps a static reason to the page of a run that measured those points, `gpus`
    is the href of the run's page over its GPUs."""

    def part(name: str, render: Callable[[pd.DataFrame], str]) -> str:
        why = _missing(name, tables, skipped)
        return empty(why) if why else render(tables[name])

    run_arch = str(provenance.get("arch", ""))
    key = tables.get("findings", pd.DataFrame())
    key = key[key["status"] != "contradicted"] if len(key) else key
    sass = (
        "<h3>Expected opcodes</h3>"
        + part("sass_checks", lambda c: common.sass_checks(c, run_arch))
        + "<h3>SASS per PTX op (long variant, ilp 1)</h3>"
        + part("sass", lambda s: common.sass_per_op(s, tables.get("cases"), run_arch))
    )
    chain = tables.get("cases") is not None and (tables["cases"]["kind"] == "chain").any()
    every = part(
        "raw",
        lambda raw: fold(
            f"{raw.groupby(['case', 'params', 'metric']).ngroups} (case, point, metric) medians",
            table(common.medians(raw)),
        ),
    )
    coded = tables.get("values", pd.DataFrame())
    parts = [
        ("Findings", part("figures", lambda f: common.findings(f, key))),
        ("Coded parameter values", common.coded(coded) if len(coded) else ""),
        *view_of(category)(tables),
        ("What the statuses mean", part("figures", lambda f: status_legend(f["status"].value_counts().to_dict()))),
        ("ILP curve", part("raw", lambda raw: common.ilp_chart(raw, tables.get("cases")))) if chain else ("", ""),
        ("All figures", part("figures", common.all_figures)),
        ("Coverage of the planned points", part("status", lambda st: common.status(st, elsewhere))),
        ("Latency and throughput, every point", every),
        ("Stall reasons", part("stalls", common.stalls)),
        ("Pipe counts", part("pipes", common.pipes)),
        ("Profiling cost", part("ncu", common.passes)),
        ("Cross-validation", part("crossval", common.crossval)),
        ("SASS (static)", sass),
        ("Setup", deftable(provenance)),
    ]
    body = lede(title, provenance, skipped) + sections(parts)
    nav = navigation(categories, category, gpus=gpus, paper=bool(run_arch))  # no compare-paper without a GPU
    write_text(out, document(f"{title} ({category})", body, nav))


def status_legend(counts: dict[str, int]) -> str:
    """What each figure status means (tables.STATUS_MEANING) and how many figures have it."""
    rows = "".join(
        f'<tr><td>{badge(s)}</td><td class="num">{int(counts.get(s, 0)):,}</td><td>{html.escape(STATUS_MEANING[s])}'
        "</td></tr>"
        for s in FIGURE_STATUSES
    )
    total = sum(int(counts.get(s, 0)) for s in FIGURE_STATUSES)
    return f"<table><tr><th>status</th><th>figures ({total:,})</th><th>what it means</th></tr>{rows}</table>"


PEER_METRICS = ("bandwidth", "link_share")  # a peer-to-peer finding: a copy's rate between two GPUs, its link share


def peer_rows(runs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The peer-to-peer findings of every run, one row per figure and a column per run: each copy's bandwidth
    between two different GPUs at its largest size and its share of the NVLink peak, with their statuses."""
    rows = []
    for run, figures in runs.items():
        mine = figures[(figures["category"] == "interconnect") & figures["metric"].isin(PEER_METRICS)]
        sizes = mine["params"].map(lambda q: evidence.param(q, "size_mb") or 0)
        largest = sizes.groupby(mine["case"]).max()  # each case's largest size, once
        for f, size in zip(mine.itertuples(index=False), sizes, strict=True):
            src, dst = (evidence.param(f.params, k) for k in ("src", "dst"))
            if f.metric == "bandwidth" and (src == dst or size < largest[f.case]):
                continue
            rows.append({"figure": f.figure, "unit": f.unit, run: f"{number(f.value)} {badge(str(f.status))}"})
    if not rows:
        return pd.DataFrame()
    return pd.DataFrame(rows).groupby(["figure", "unit"], as_index=False, sort=False).first().fillna("")


def render_gpus(
    out: Path,
    gpus: pd.DataFrame,
    folders: list[str],
    categories: list[str],
    runs: dict[str, pd.DataFrame],
    diffs: dict[str, pd.DataFrame],
    others: dict[str, str],
) -> None:
    """Write the page over several GPUs of one run: the peer-to-peer findings of every run (`runs`, folders and
    `others`), the differences flagged between the first GPU and each other one (`diffs`), then each GPU's folder,
    identity and coverage, with links to every page (`others`: the index of another run on the same host)."""
    from ..analysis.compare import RELATIVE_FLOOR

    title = "smdissect: every GPU of this run"
    listing = gpus.assign(
        folder=[f'<a href="{html.escape(f, quote=True)}/index.html">{html.escape(f)}</a>' for f in gpus["folder"]]
    )
    peers = peer_rows(runs)
    flagged = ""
    for other, diff in diffs.items():
        rows = diff[diff["flagged"]]
        href = html.escape(f"compare/{folders[0]}-vs-{other}.html", quote=True)
        shown = rows.assign(**{c: rows[c].map(number) for c in ("value_a", "value_b", "ratio")})
        flagged += (
            f"<p><b>{len(rows)}</b> of {len(diff)} figures of {html.escape(folders[0])} differ from "
            f'{html.escape(other)}\'s beyond both spreads and {RELATIVE_FLOOR:.0%} (<a href="{href}">the '
            f"comparison</a>).</p>"
            + (table(shown[["category", "figure", "unit", "value_a", "value_b", "ratio"]]) if len(rows) else "")
        )
    compares = "".join(
        f'<li><a href="compare/{html.escape(f"{folders[0]}-vs-{other}", quote=True)}.html">'
        f"{html.escape(folders[0])} vs {html.escape(other)}</a></li>"
        for other in folders[1:]
    )
    more = "".join(f'<li><a href="{html.escape(h, quote=True)}">{html.escape(k)}</a></li>' for k, h in others.items())
    body = f"<h1>{html.escape(title)}</h1>" + sections(
        [
            (
                "Peer-to-peer: what the links between the GPUs measured",
                "<p>Each copy between two different GPUs at its largest size, and its share of the NVLink peak "
                "(the driver's active links x the per-link rate); a column per run.</p>" + table(peers, raw=tuple(runs))
                if len(peers)
                else empty("no peer-to-peer figure: the interconnect category was not run"),
            ),
            ("Flagged differences between the GPUs", flagged or empty("one GPU only")),
            ("GPUs", table(listing, raw=("folder",))),
            ("Comparisons", f"<ul>{compares}</ul>" if compares else empty("one GPU only")),
            ("Other runs on this host", f"<ul>{more}</ul>" if more else ""),
        ]
    )
    write_text(out, document(title, body, navigation(categories, "gpus", f"{folders[0]}/", "gpus.html")))


def render_compare(out: Path, names: tuple[str, str], diff: pd.DataFrame, nav: str) -> None:
    """Write the diff page of two result sets: flagged rows (difference beyond the spreads and the floor) first."""
    from ..analysis.compare import RELATIVE_FLOOR

    flagged = int(diff["flagged"].sum())
    title = "smdissect: comparison"
    head = deftable({"a": names[0], "b (the reference)": names[1], "figures": str(len(diff)), "flagged": str(flagged)})
    note = (
        f"<p>Ratio = a / b, measured / reference. A figure is flagged where |a - b| exceeds both the larger of "
        f"the two sets' spreads (max - min of its samples) and {RELATIVE_FLOOR:.0%} of b; flagged rows come "
        "first.</p>"
    )
    shown = diff.assign(
        **{c: diff[c].map(number) for c in ("value_a", "value_b", "difference", "ratio")},
        spread_a=[share(sp, v) for sp, v in zip(diff["spread_a"], diff["value_a"], strict=True)],
        spread_b=[share(sp, v) for sp, v in zip(diff["spread_b"], diff["value_b"], strict=True)],
        flagged=diff["flagged"].map({True: "flagged", False: ""}),
    )
    parts = [
        (
            "Flagged",
            table(shown[diff["flagged"]]) if flagged else empty("no figure differs beyond its spread and the floor"),
        ),
        ("Every figure", fold(f"{len(diff)} figures", table(shown))),
    ]
    body = f"<h1>{html.escape(title)}</h1>{head}{note}" + sections(parts)
    write_text(out, document(title, body, nav))


def paper_rows(table: pd.DataFrame) -> pd.DataFrame:
    """Paper-accounting rows for display: numbers as a person writes them, statuses as badges."""
    shown = table.assign(
        paper=table["paper"].map(number), measured=table["measured"].map(number), ratio=table["ratio"].map(number)
    )
    if "appendix" in table:  # the full study's value, shown only where it differs from the summary's
        later = table["appendix"].where(table["appendix"] != table["paper"])
        shown = shown.assign(appendix=later.map(number).where(later.notna(), ""))
    marks = [badge(s) if s in FIGURE_STATUSES else html.escape(str(s or "")) for s in shown["status"]]
    return shown.assign(status=marks)


def render_paper(
    out: Path,
    names: tuple[str, str],
    every: pd.DataFrame,
    counts: pd.DataFrame,
    generation: pd.DataFrame,
    coverage: pd.DataFrame,
    structure: pd.DataFrame,
    nav: str,
) -> None:
    """Write the page of every paper figure: its value and GPU, the counterpart measured here with its status, the
    ratio measured / paper, or the reason there is none; the cross-generation finding; the paper's structure."""
    title = "smdissect: every figure of the paper"
    head = deftable({"measured": names[0], "paper": names[1], "paper figures": str(len(every))})
    note = (
        "<p>Each row of the paper's figures (reference/seed_sm120.csv) is tied to the case that measures its "
        "counterpart here, derived from measured figures, or given the reason it cannot be measured here. "
        "Ratio = measured / paper; the paper's values are of its GPU (mostly an RTX PRO 5000, sm_120a), not "
        "this one. The appendix column is the full study's machine-readable appendix "
        "(reference/seed_sm120_appendix.csv, a later version of the paper), shown where its value of the same "
        "quantity differs from the summary's.</p>"
    )
    cols = [
        "quantity",
        "paper",
        "appendix",
        "unit",
        "paper_gpu",
        "accounted",
        "counterpart",
        "measured",
        "status",
        "ratio",
        "reason",
        "note",
    ]
    parts = [
        ("How the paper's figures are accounted for", table_of(counts)),
        (
            "Cross-generation: the paper's Hopper figures against a real Hopper",
            table(paper_rows(generation), raw=("status",)) if len(generation) else empty("no such figure"),
        ),
        ("Every paper figure", table(paper_rows(every)[cols], raw=("status",))),
        ("Coverage in the paper's terms", table_of(coverage)),
        ("The paper's sections in smdissect", table_of(structure)),
    ]
    body = f"<h1>{html.escape(title)}</h1>{head}{note}" + sections(parts)
    write_text(out, document(title, body, nav))
