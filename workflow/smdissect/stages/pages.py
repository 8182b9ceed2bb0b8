"""The stages that write pages: a category's, the index of one GPU (with its roofline), the comparison of two result
sets or of one against the paper, the page over several GPUs, and the README's headline table."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pandas as pd

from ..analysis import compare, coverage, paper, paper_accounting, paper_structure, roofline
from ..core import catalog, tables
from ..core.errors import SmdissectError
from ..pages import evidence, headlines, markup, report, report_index, roofline_page, sheet
from .options import MANY, Command, Options, inputs


def report_page(
    kernels: Path,
    category: str,
    inputs: dict[str, list[Path]],
    skipped: dict[str, str],
    out: Path,
    provenance: dict[str, Any],
    categories: list[str],
    elsewhere: dict[str, str] | None = None,
    gpus: str = "",
) -> None:
    """One category's HTML page from whatever tables exist for it; `categories` are the run's pages the header
    links, `elsewhere` maps a static reason to the page of another run that measured those points, `gpus` is the
    href of the run's page over several GPUs (where there is one)."""
    cases = catalog.load(kernels, category)
    frames = {kind: tables.read(kind, paths) for kind, paths in inputs.items() if paths}
    frames["cases"] = pd.DataFrame(
        [
            {"case": c.id, "ptx": c.ptx, "pipe": c.pipe or "", "kind": c.kind, "measures": ", ".join(c.measures)}
            for c in cases
        ]
    )
    frames["values"] = pd.DataFrame(catalog.coded_values(kernels, category), columns=["axis", "value", "meaning"])
    frames["reference"] = paper.reference(kernels)
    if len(frames.get("figures", ())):
        frames["findings"] = headlines.table(
            frames["figures"], frames["reference"], catalog.findings(kernels, [category])
        )
    if "raw" in frames:
        provenance = raw_provenance(frames["raw"]) | provenance
    title = catalog.title(kernels, category)
    report.render_category(out, category, title, frames, skipped, provenance, categories, elsewhere or {}, gpus)


def raw_provenance(raw: pd.DataFrame) -> dict[str, str]:
    """Who measured a set of rows: GPU, UUID, arch, driver, CUDA and run, each value once (several jobs, cards or
    runs are listed together)."""
    out = {}
    for key in ("gpu", "gpu_uuid", "arch", "driver", "cuda", "run_id"):
        values = sorted(set(raw[key].astype(str))) if key in raw.columns else []
        if values:
            out[key] = ", ".join(values) if len(values) <= 6 else f"{len(values)} values, {values[0]} to {values[-1]}"
    return out


def index_page(
    kernels: Path,
    gpu: str,
    categories: list[str],
    inputs: dict[str, list[Path]],
    archs: list[str],
    run_arch: str | None,
    skipped: dict[str, str],
    provenance: dict[str, Any],
    out: Path,
    gpus: str = "",
) -> None:
    """The index of one GPU's reports: the device, its peaks and how much to trust them, categories with verdicts
    and coverage, the paper's key tables from the measured data beside its sm_120 and sm_90 figures, and every
    planned point not measured; and beside it the roofline file and page (`gpus`: as in report_page)."""
    cases = catalog.load_all(kernels, categories)
    found = catalog.findings(kernels, categories)
    frames = {kind: tables.read(kind, inputs.get(kind, [])) for kind in ("raw", "status", "figures")}
    figures = frames["figures"]
    published = paper.reference(kernels)
    cov = coverage.coverage(cases, archs, run_arch, frames["status"], skipped.get("run", "not run"))
    pages = [
        {
            "category": category,
            "title": catalog.title(kernels, category),
            "href": f"{category}.html",
            "coverage": cov[(cov.category == category) & (cov.arch == run_arch)].status.value_counts().to_dict(),
            "figures": evidence.status_counts(figures[figures.category == category]),
            "key": headlines.table(figures, published, [f for f in found if f.category == category]),
        }
        for category in categories
    ]
    provenance = (raw_provenance(frames["raw"]) if len(frames["raw"]) else {}) | provenance
    report_index.render_index(
        out,
        gpu,
        pages,
        provenance,
        skipped,
        compare.instructions(figures, cases),
        coverage.counts(cov),
        coverage.not_measured(cov),
        headlines.table(figures, published, headlines.ranked(found)),
        run_arch,
        paper_tables(figures, frames["status"], kernels),
        sheet.glance(figures, roofline_files(figures, out.parent, categories, gpus, bool(run_arch))),
        gpus,
    )


def roofline_files(
    figures: pd.DataFrame, folder: Path, categories: list[str], gpus: str = "", paper: bool = True
) -> dict[str, Any]:
    """Write a run's roofline file and page (roofline.json, roofline.html) into `folder`; the roofline (`gpus`,
    `paper`: the navigation's, as markup.navigation takes them)."""
    data = roofline.build(figures)
    roofline.write(data, folder / "roofline.json")
    nav = markup.navigation(categories, "roofline", gpus=gpus, paper=paper)
    roofline_page.render(folder / "roofline.html", data, nav)
    return data


def paper_tables(figures: pd.DataFrame, status: pd.DataFrame, kernels: Path) -> dict[str, pd.DataFrame]:
    """The paper's tables for a run (analysis.paper): every figure accounted for, the cross-generation finding,
    coverage in the paper's terms and its sections."""
    published = paper.reference(kernels)
    table = paper_accounting.accounting(figures, published, status, kernels)
    return {
        "table": table,
        "counts": paper_accounting.summary(table),
        "generation": paper_accounting.cross_generation(table),
        "coverage": paper_structure.coverage(status, published),
        "structure": paper_structure.structure(kernels),
    }


def compare_page(a: Path, b: str, kernels: Path, categories: list[str], out: Path, gpus: str = "") -> None:
    """The diff page of two result sets (folders of figures tables), of one against the paper (`b` = 'paper'), or of
    two models (a model file on either side: a folder is compared as its model, field by field); `gpus` is the href
    of the run's page over several GPUs, from `out`."""
    if compare.is_model(a) or compare.is_model(Path(b)):
        if b == compare.PAPER:
            raise SmdissectError(
                "--b paper takes a result folder as --a: give --b a second model file or result folder"
            )
        left, right = (compare.model_set(p, kernels) for p in (a, Path(b)))
        report.render_compare(out, (_set_name(left, a), _set_name(right, b)), compare.diff(left, right), "")
        return
    figures = compare.figures_in(a)
    categories = compare_categories(figures, a, categories)
    figures = figures[figures["category"].isin(categories)]
    if b == compare.PAPER:
        paper.reference(kernels)  # first, so that a wrong --kernels is named as such
        status = tables.read("status", tables.find("status", a))
        tabled = paper_tables(figures, status[status["category"].isin(categories)], kernels)
        names = (_set_name(figures, a), "the seed paper: an RTX PRO 5000 (sm_120a), and its other-GPU columns")
        report.render_paper(
            out,
            names,
            tabled["table"],
            tabled["counts"],
            tabled["generation"],
            tabled["coverage"],
            tabled["structure"],
            markup.navigation(categories, "compare-paper", gpus=gpus),
        )
        return
    left = compare.result_set(figures)
    right = compare.result_set(compare.figures_in(Path(b)))
    right = right[right["category"].isin(categories)]
    nav = markup.navigation(categories, "", f"../{a.name}/", gpus)
    report.render_compare(out, (_set_name(left, a), _set_name(right, b)), compare.diff(left, right), nav)


def compare_categories(figures: pd.DataFrame, where: Path, asked: list[str]) -> list[str]:
    """The categories a comparison covers: `asked` (each one present in `figures`), else every one `figures` holds."""
    found = sorted(figures["category"].unique())
    for category in asked:
        if category not in found:
            raise SmdissectError(
                f"--categories {category}: {where} holds no figures of it; pick from {', '.join(found)}"
            )
    return asked or found


def gpus_page(folders: list[Path], out: Path, others: dict[str, tuple[Path, str]] | None = None) -> None:
    """One page over several GPUs' result folders (device: all): the peer-to-peer findings of every folder and of
    `others` (a label -> the result folder of another run on the same host and the href of its index), the
    differences the comparison of the first GPU with each other one flags, then each GPU, its coverage, and links."""
    runs = {f.name: compare.figures_in(f) for f in folders} | {
        k: compare.figures_in(f) for k, (f, _) in (others or {}).items()
    }
    left = compare.result_set(runs[folders[0].name])
    diffs = {f.name: compare.diff(left, compare.result_set(runs[f.name])) for f in folders[1:]}

    rows = []
    for folder in folders:
        who = raw_provenance(tables.read("raw", tables.find("raw", folder)))
        counts = tables.read("status", tables.find("status", folder))["status"].value_counts()
        rows.append(
            {
                "folder": folder.name,
                **{k: who.get(k, "") for k in ("gpu", "gpu_uuid", "arch")},
                **{s: int(counts.get(s, 0)) for s in ("measured", "static", "failed")},
            }
        )
    categories = sorted({p.parent.name for p in tables.find("figures", folders[0])})
    links = {k: href for k, (_, href) in (others or {}).items()}
    report.render_gpus(out, pd.DataFrame(rows), [f.name for f in folders], categories, runs, diffs, links)


def _set_name(figures: pd.DataFrame, where: Path | str) -> str:
    """How a compare page names a result set: its GPU and arch, and the folder's name (never a machine path)."""
    first = figures.iloc[0] if len(figures) else {"gpu": "?", "arch": "?"}
    return f"{first['gpu']} ({first['arch']}), {Path(where).name}"


def cmd_report(args: argparse.Namespace) -> None:
    """Write a category's HTML page."""
    report_page(
        Path(args.kernels),
        args.category,
        inputs(args),
        json.loads(args.skipped),
        Path(args.out),
        json.loads(args.provenance),
        args.categories or [args.category],
    )


def cmd_index(args: argparse.Namespace) -> None:
    """Write the index page of one GPU's reports."""
    index_page(
        Path(args.kernels),
        args.gpu,
        args.categories,
        inputs(args),
        args.archs,
        args.run_arch or None,
        json.loads(args.skipped),
        json.loads(args.provenance),
        Path(args.out),
    )


def cmd_gpus(args: argparse.Namespace) -> None:
    """Write the page over several GPUs' result folders (device: all)."""
    gpus_page([Path(f) for f in args.folders], Path(args.out))


def cmd_compare(args: argparse.Namespace) -> None:
    """Write the diff page of two result sets (folders of figures.parquet tables), or of one against the paper."""
    compare_page(Path(args.a), args.b, Path(args.kernels), args.categories, Path(args.out))


def cmd_roofline(args: argparse.Namespace) -> None:
    """Write the roofline file of a run's figures (roofline.json: each ceiling measured and documented) and, with
    --page, the roofline page drawn from it."""
    found = tables.find("figures", Path(args.tables))
    if not found:
        raise SmdissectError(f"--tables {args.tables} holds no figures.parquet: give results/<gpu>/ or its copy")
    figures = tables.read("figures", found)
    data = roofline.build(figures)
    roofline.write(data, Path(args.out))
    if args.page:
        nav = markup.navigation(sorted(figures["category"].unique()), "roofline")
        roofline_page.render(Path(args.page), data, nav)


def cmd_headlines(args: argparse.Namespace) -> None:
    """Print the headline figures of a run's figures tables as the README's table, or write it into --readme."""
    figures = tables.read("figures", tables.find("figures", Path(args.tables)))
    kernels = Path(args.kernels)
    found = headlines.ranked(catalog.findings(kernels, catalog.categories(kernels)))
    block = headlines.markdown(headlines.table(figures, paper.reference(kernels), found), figures)
    if args.readme:
        headlines.update(Path(args.readme), block)
    else:
        print(block)


OPTIONS: dict[Command, Options] = {
    cmd_report: ["kernels", "category", "out", "skipped", "provenance", ("categories", MANY)],
    cmd_index: [
        "kernels",
        "gpu",
        "out",
        "skipped",
        "provenance",
        ("run_arch", {"default": ""}),
        *((k, MANY) for k in ("categories", "archs")),
    ],
    cmd_gpus: ["out", ("folders", MANY)],
    cmd_compare: ["a", ("b", {"default": "paper"}), "out", ("kernels", {"default": "kernels"}), ("categories", MANY)],
    cmd_roofline: ["tables", "out", ("page", {"default": ""})],
    cmd_headlines: ["tables", ("readme", {"default": ""}), ("kernels", {"default": "kernels"})],
}
READS: dict[Command, tuple[str, ...]] = {cmd_report: tuple(tables.TABLES), cmd_index: ("raw", "status", "figures")}
