"""The stages as functions of files: what each Snakemake rule calls through the CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from . import build, catalog, controlcodes, crossval, device, files, ncu, parse, run, sass, tables
from .errors import SmdissectError

Points = dict[str, list[dict[str, int]]]  # case id -> parameter points (crossval.figure_points)
ROOT = Path(__file__).resolve().parents[2]  # the checkout: its git commit is every row's `commit`


def family_cases(kernels: Path, category: str, family: str) -> list[catalog.Case]:
    """The manifest entries that live in one .cu file."""
    cases = catalog.families(catalog.load(kernels, category)).get(family)
    if not cases:
        raise SmdissectError(f"kernels/{category}/cases.yaml has no case with source {family}.cu")
    return cases


def gpu_here(index: int) -> device.Gpu:
    """The GPU a GPU job runs on; its absence is a one-line error."""
    gpu = device.query(index)
    if isinstance(gpu, str):
        raise SmdissectError(f"this job needs a GPU: {gpu}")
    return gpu


def sass_tables(
    binary: Path,
    listing: Path,
    cases: list[catalog.Case],
    arch: str,
    cuda: str,
    out_sass: Path,
    out_checks: Path,
    out_controls: Path,
) -> None:
    """Opcode counts of every kernel of a binary, the manifest's expectations checked on them, and every
    instruction's control codes (stall count, yield, barriers, wait mask, reuse) decoded from the cubin."""
    base, rows, checks, text = sass_rows(binary, listing, cases, arch, cuda)
    tables.write("sass", tables.frame("sass", rows), out_sass)
    tables.write("sass_checks", tables.frame("sass_checks", checks), out_checks)
    codes = controlcodes.decode_binary(binary, arch, text) if rows else pd.DataFrame(columns=controlcodes.COLUMNS)
    controls = codes.assign(**base, case="", params="")
    tables.write("controlcodes", controls, out_controls)


def sass_rows(
    binary: Path, listing: Path, cases: list[catalog.Case], arch: str, cuda: str
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], str]:
    """The provenance of a binary's static tables, its sass rows (opcode counts per kernel, in all and in one pass
    of the timed loop), its sass_checks rows (each case's claims on each of its kernels) and the SASS text read."""
    by_id = {c.id: c for c in cases}
    entries = json.loads(listing.read_text())
    has_kernels = any(e["kernels"] for e in entries)  # a Python family lists none: it has no SASS of its own
    text = sass.dump(binary, arch) if has_kernels else ""
    counts, code = sass.opcodes(text), sass.code(text)
    base = {
        "gpu": "none",
        "gpu_uuid": "",
        "arch": arch,
        "driver": "",
        "cuda": cuda,
        "category": cases[0].category,
        "run_id": f"static-{datetime.now(UTC):%Y%m%dT%H%M%SZ}",
        "family": cases[0].family,
        "commit": run.commit(ROOT),
    }
    rows, checks = [], []
    for entry in entries:
        case = by_id.get(entry["case"])
        if case is None:
            continue
        for k in entry["kernels"]:
            if k["symbol"] not in counts:
                raise SmdissectError(f"{binary}: kernel {k['symbol']} is listed but not in the SASS: rebuild it")
            key = base | {
                "case": case.id,
                "params": tables.canonical_params(k["params"]),
                "variant": k["variant"],
                "kernel": k["symbol"],
            }
            observed = counts[k["symbol"]]
            loop = sass.loop_opcodes(code[k["symbol"]], around=case.sass_loop == "around")
            rows += [
                key | {"ops": k["ops"], "opcode": op, "count": n, "loop_count": loop.get(op, 0)}
                for op, n in sorted(observed.items())
            ]
            applies = case.unsupported(arch) is None  # compiled out on this arch: the kernel exists without it
            checks += [
                key | row | ({} if applies else {"verdict": "not-applicable"})
                for row in sass.claims(case.on(arch), code[k["symbol"]], k["ops"])
            ]
    return base, rows, checks, text


def profile(
    binary: Path,
    cases: list[catalog.Case],
    gpu: device.Gpu,
    arch: str,
    cuda: str,
    ncu_exe: str,
    ncu_version: str,
    report: Path,
    meta: Path,
    kernels: Path,
    raw: list[Path],
    extra: Points,
) -> None:
    """Profile a family's timed launches once under ncu, over its profiled sweeps and the figure points `extra` (of
    its `raw` tables), and record how and on what."""
    reason = device.counters_permitted()
    if reason:
        raise SmdissectError(reason)
    exe = build.find_tool(ncu_exe, "install Nsight Compute or set ncu: in config/config.yaml")
    category, family = cases[0].category, cases[0].family
    metric_list, dropped = ncu.metrics(gpu.chip, exe, catalog.metrics(kernels, category))
    timeout = catalog.family_settings(kernels, category, family)["timeout"] * ncu.REPLAY_SLOWDOWN
    before = device.snapshot(gpu.uuid)
    # One ncu process collects one metric set for every kernel it profiles, so the figure points get the full set
    # too: a second process per family for a smaller set costs more (about 2 s) than the passes it saves (~55 ms a
    # kernel, and most families add under 20 figure points).
    target = profiled_target(binary, cases, arch, gpu.index, extra)
    try:
        ncu.profile(exe, metric_list, report, target, timeout)
    except SmdissectError:  # a case failed (or hung) under ncu: again through `exec`, which runs it alone
        target = ncu.launcher(exec_args(binary, cases, arch, gpu.index, kernels, raw))
        ncu.profile(exe, metric_list, report, target, timeout)
    after = device.snapshot(gpu.uuid)
    info = (
        run.provenance(gpu, arch, cuda, category, ROOT)
        | run.gpu_state(before, after)
        | {
            "family": family,
            "chip": gpu.chip,
            "ncu": ncu_version or ncu.version(exe),
            "metrics_dropped": dropped,
            "figure_points": sum(len(points) for points in extra.values()),
            "command": " ".join(ncu.command(exe, metric_list, report, target)),
        }
    )
    files.write_text(meta, json.dumps(info, indent=1))


def exec_args(
    binary: Path, cases: list[catalog.Case], arch: str, index: int, kernels: Path, raw: list[Path] | None = None
) -> list[str]:
    """The `exec` stage's arguments for a family: every case under ncu, a failed one alone; with the family's `raw`
    tables, each figure point too (figure_points)."""
    return [
        "exec",
        "--binary",
        str(binary),
        "--kernels",
        str(kernels),
        "--category",
        cases[0].category,
        "--arch",
        arch,
        "--family",
        cases[0].family,
        "--device",
        str(index),
        *(["--raw", *map(str, raw)] if raw else []),
    ]


def figure_points(cases: list[catalog.Case], raw: list[Path]) -> Points:
    """Case id -> the points beside its profiled sweeps that ncu profiles: where a figure of its own is taken and
    counters can check it (crossval.figure_points), from the family's raw tables (none before its run)."""
    return crossval.figure_points(cases, tables.read("raw", raw))


def profiled_items(cases: list[catalog.Case], arch: str, extra: Points | None = None) -> list[run.Item]:
    """Every (case, sweep) ncu profiles of the cases `arch` runs, in the order one process runs them: each case's
    profiled sweeps, then each of its `extra` points (figure_points) as a sweep of its own."""

    def sweeps(case: catalog.Case) -> list[run.Sweep]:
        points = (extra or {}).get(case.id, [])
        return [*case.profiled_sweeps(), *({k: [v] for k, v in p.items()} for p in points)]

    return run.items([c for c in cases if not c.unsupported(arch)], sweeps)


def profiled_target(
    binary: Path, cases: list[catalog.Case], arch: str, index: int, extra: Points | None = None
) -> list[str]:
    """What ncu launches first: the binary itself over every profiled sweep and `extra` point (one process, no
    Python launcher)."""
    return run.invocation(binary, profiled_items(cases, arch, extra), 1, index)


def parse_report(report: Path, meta: Path, out_ncu: Path, out_stalls: Path, out_pipes: Path) -> None:
    """Long metrics, stall reasons and pipe counts of one report, each row with the profile job's provenance."""
    info = json.loads(meta.read_text())
    long = pd.DataFrame(parse.metric_rows(report, info["chip"]))
    for key in tables.SCHEMAS["ncu"].names:
        if key in info and key not in long.columns:
            long[key] = info[key]
    tables.write("ncu", long, out_ncu)
    tables.write("stalls", parse.stalls(long), out_stalls)
    tables.write("pipes", parse.pipes(long), out_pipes)


def kernel_ops(listings: list[Path]) -> dict[tuple[str, str, str], int]:
    """(case, kernel params, variant) -> instructions in the chain body, from the binaries' --list."""
    ops = {}
    for listing in listings:
        for entry in json.loads(Path(listing).read_text()):
            for k in entry["kernels"]:
                ops[(entry["case"], tables.canonical_params(k["params"]), k["variant"])] = k["ops"]
    return ops


def crossval_table(
    kernels: Path,
    category: str,
    raw: list[Path],
    ncu_tables: list[Path],
    stalls: list[Path],
    sass_checks: list[Path],
    listings: list[Path],
    out: Path,
) -> None:
    """Every cross-check of a category, each with its numbers and a verdict."""
    raw_df = tables.read("raw", raw)
    cases = catalog.load(kernels, category)
    rows = crossval.crossval(
        cases,
        raw_df,
        tables.read("ncu", ncu_tables),
        tables.read("stalls", stalls),
        tables.read("sass_checks", sass_checks),
        kernel_ops(listings),
        {f for f in catalog.families(cases) if catalog.family_settings(kernels, category, f)["profile"]},
    )
    prov = raw_df.iloc[0][[n for n, _ in tables.PROVENANCE if n not in ("case", "params")]].to_dict()
    tables.write("crossval", tables.frame("crossval", [prov | r for r in rows]), out)


def figures_table(kernels: Path, category: str, inputs: dict[str, list[Path]], refs: list[Path], out: Path) -> None:
    """Every reported figure of a category with its status, from its tables (`inputs`: raw, crossval, and the run
    arch's sass_checks and controlcodes); `refs`: raw tables of the categories its cases name in `built_from` /
    `same_as`."""
    from . import figures

    frames = {kind: tables.read(kind, paths) for kind, paths in inputs.items()}
    others = {}
    for other, group in tables.read("raw", refs).groupby("category"):
        by_point = figures.points(group)
        others[str(other)] = [
            f for c in catalog.load(kernels, str(other)) for f in figures.case_figures(c, group, by_point)
        ]
        figures.set_clocks(others[str(other)], figures.point_clocks(group))
    rows: list[dict[str, Any]] = []
    if len(frames["raw"]):
        first = frames["raw"].iloc[0]
        found = figures.compute(catalog.load(kernels, category), frames, others, str(first["arch"]), str(first["gpu"]))
        prov = first[[n for n, _ in tables.PROVENANCE if n not in ("case", "params")]].to_dict()
        rows = figures.rows(found, prov)
    tables.write("figures", tables.frame("figures", rows), out)


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
    from . import paper, report

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
    from . import compare, coverage, evidence, headlines, paper, report, sheet

    cases = catalog.load_all(kernels, categories)
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
            "key": headlines.table(figures, published, headlines.key_findings(category)),
        }
        for category in categories
    ]
    provenance = (raw_provenance(frames["raw"]) if len(frames["raw"]) else {}) | provenance
    report.render_index(
        out,
        gpu,
        pages,
        provenance,
        skipped,
        compare.instructions(figures, cases),
        coverage.counts(cov),
        coverage.not_measured(cov),
        headlines.table(figures, published),
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
    from . import markup, roofline, roofline_page

    data = roofline.build(figures)
    roofline.write(data, folder / "roofline.json")
    nav = markup.navigation(categories, "roofline", gpus=gpus, paper=paper)
    roofline_page.render(folder / "roofline.html", data, nav)
    return data


def paper_tables(figures: pd.DataFrame, status: pd.DataFrame, kernels: Path) -> dict[str, pd.DataFrame]:
    """The paper's tables for a run (smdissect.paper): every figure accounted for, the cross-generation finding,
    coverage in the paper's terms and its sections."""
    from . import paper

    published = paper.reference(kernels)
    table = paper.accounting(figures, published, status, kernels)
    return {
        "table": table,
        "counts": paper.summary(table),
        "generation": paper.cross_generation(table),
        "coverage": paper.coverage(status, published),
        "structure": paper.structure(kernels),
    }


def compare_page(a: Path, b: str, kernels: Path, categories: list[str], out: Path, gpus: str = "") -> None:
    """The diff page of two result sets (folders of figures tables), of one against the paper (`b` = 'paper'), or of
    two models (a model file on either side: a folder is compared as its model, field by field); `gpus` is the href
    of the run's page over several GPUs, from `out`."""
    from . import compare, markup, report
    from .paper import reference

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
        reference(kernels)  # first, so that a wrong --kernels is named as such
        status = tables.read("status", tables.find("status", a))
        paper = paper_tables(figures, status[status["category"].isin(categories)], kernels)
        names = (_set_name(figures, a), "the seed paper: an RTX PRO 5000 (sm_120a), and its other-GPU columns")
        report.render_paper(
            out,
            names,
            paper["table"],
            paper["counts"],
            paper["generation"],
            paper["coverage"],
            paper["structure"],
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
    from . import compare, report

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
