"""The Parquet tables: each kind (its path, the stages that make it, its schema) defined once here, every table with
provenance, atomic writes."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .errors import SmdissectError
from .files import atomic_path

# Who measured what, on which card and toolchain: on every row of every table.
PROVENANCE = [
    ("gpu", pa.string()),
    ("gpu_uuid", pa.string()),
    ("arch", pa.string()),
    ("driver", pa.string()),
    ("cuda", pa.string()),
    ("run_id", pa.string()),
    ("category", pa.string()),
    ("case", pa.string()),
    ("params", pa.string()),  # canonical JSON, sorted keys
    ("commit", pa.string()),  # git commit of the pipeline that made the row ('-dirty' with local edits)
]
# The GPU's state (NVML) just before and after the job that made the row: clocks, throttle reasons
# and other processes on the GPU; `flag` says when either moved or the GPU was shared.
CLOCKS = [
    ("sm_clock_before_mhz", pa.float64()),
    ("sm_clock_after_mhz", pa.float64()),
    ("mem_clock_before_mhz", pa.float64()),
    ("mem_clock_after_mhz", pa.float64()),
    ("throttle_before", pa.string()),
    ("throttle_after", pa.string()),
    ("other_processes", pa.string()),
    ("flag", pa.string()),
]
KERNEL = [("family", pa.string()), ("variant", pa.string()), ("kernel", pa.string())]

FAMILY, CATEGORY, STATIC = "family", "category", "static"  # what one file of a table covers
# Where one file of each coverage lies: in a GPU's results folder, or (made without a GPU, for every built arch)
# in results/static/.
PATTERNS = {
    FAMILY: "results/{gpu}/{arch}/{category}/{family}/{name}.parquet",
    CATEGORY: "results/{gpu}/{arch}/{category}/{name}.parquet",
    STATIC: "results/static/{arch}/{category}/{family}/{name}.parquet",
}


@dataclass(frozen=True)
class Table:
    """One table kind: the stages that make it (their skip reason explains an empty section), what one file covers
    (FAMILY, CATEGORY or STATIC), what a row is, and its columns."""

    name: str
    stages: tuple[str, ...]
    per: str
    rows: str
    schema: pa.Schema

    @property
    def pattern(self) -> str:
        """The path of its files, with {gpu}, {arch}, {category} and {family} where they apply."""
        return PATTERNS[self.per].replace("{name}", self.name)

    @property
    def profiled(self) -> bool:
        """Whether only the profiled families have one (the profile stage makes it)."""
        return "profile" in self.stages

    @property
    def help(self) -> str:
        """How the command line describes a list of its files."""
        return f"{self.rows} tables ({self.name}.parquet), any number"


# Every table, in pipeline order: the one list of table kinds that the rules, the command line and the pages share.
TABLES: dict[str, Table] = {
    t.name: t
    for t in [
        # count: in the whole kernel; loop_count: in one pass of its timed loop (sass.timed_loop), what `ops` counts
        Table(
            name="sass",
            stages=("sass",),
            per=STATIC,
            rows="opcode count",
            schema=pa.schema(
                PROVENANCE
                + KERNEL
                + [("ops", pa.int64()), ("opcode", pa.string()), ("count", pa.int64()), ("loop_count", pa.int64())]
            ),
        ),
        # scope: `loop` where the expectation is counted in one pass of the timed loop, `kernel` in the whole kernel
        Table(
            name="sass_checks",
            stages=("sass",),
            per=STATIC,
            rows="SASS check",
            schema=pa.schema(
                PROVENANCE
                + KERNEL
                + [
                    ("opcode", pa.string()),
                    ("expect", pa.string()),
                    ("scope", pa.string()),
                    ("count", pa.int64()),
                    ("verdict", pa.string()),
                ]
            ),
        ),
        # SASS control codes of every instruction of every kernel (controlcodes.decode_binary), static like `sass`.
        Table(
            name="controlcodes",
            stages=("sass",),
            per=STATIC,
            rows="SASS control-code",
            schema=pa.schema(
                PROVENANCE
                + [("family", pa.string()), ("kernel", pa.string()), ("offset", pa.int64()), ("opcode", pa.string())]
                + [(f, pa.int64()) for f in ("stall", "yield_", "wrbar", "rdbar", "waitmask", "reuse")]
            ),
        ),
        Table(
            name="raw",
            stages=("run",),
            per=FAMILY,
            rows="timing sample",
            schema=pa.schema(
                PROVENANCE
                + CLOCKS
                + [
                    ("family", pa.string()),
                    ("metric", pa.string()),
                    ("unit", pa.string()),
                    ("repeat", pa.int64()),
                    ("value", pa.float64()),
                    ("cycles", pa.float64()),
                    ("iterations", pa.int64()),
                    ("clock_mhz", pa.float64()),
                    ("smid", pa.int64()),
                    ("variant", pa.string()),  # the NVTX variant `expect` describes
                    ("expect", pa.string()),  # JSON: ncu metric -> value the profiled launch must show
                ]
            ),
        ),
        # What became of every planned (case, parameter point) of a family on the run arch.
        Table(
            name="status",
            stages=("run",),
            per=FAMILY,
            rows="point status",
            schema=pa.schema(
                PROVENANCE + CLOCKS + [("family", pa.string()), ("status", pa.string()), ("reason", pa.string())]
            ),
        ),
        Table(
            name="ncu",
            stages=("profile", "parse"),
            per=FAMILY,
            rows="ncu metric",
            schema=pa.schema(
                PROVENANCE + CLOCKS + KERNEL + [("metric", pa.string()), ("unit", pa.string()), ("value", pa.float64())]
            ),
        ),
        Table(
            name="stalls",
            stages=("profile", "parse"),
            per=FAMILY,
            rows="stall reason",
            schema=pa.schema(
                PROVENANCE
                + CLOCKS
                + KERNEL
                + [("reason", pa.string()), ("value", pa.float64()), ("share", pa.float64())]
            ),
        ),
        Table(
            name="pipes",
            stages=("profile", "parse"),
            per=FAMILY,
            rows="pipe count",
            schema=pa.schema(
                PROVENANCE
                + CLOCKS
                + KERNEL
                + [("pipe", pa.string()), ("inst_executed", pa.float64()), ("pct_of_peak", pa.float64())]
            ),
        ),
        # clock64_value: the pipeline's own side (clock64 timing, or what the manifest expects);
        # counter_value: the independent side (an ncu counter, or cuobjdump's count).
        Table(
            name="crossval",
            stages=("crossval",),
            per=CATEGORY,
            rows="cross-validation",
            schema=pa.schema(
                PROVENANCE
                + [
                    ("check", pa.string()),
                    ("clock64_value", pa.float64()),
                    ("counter_value", pa.float64()),
                    ("rel_err", pa.float64()),
                    ("tolerance", pa.float64()),
                    ("verdict", pa.string()),
                    ("note", pa.string()),
                ]
            ),
        ),
        # Every reported figure (figures.compute): value, spread (max - min of its samples), how it was derived and
        # measured, and its status from the checks (`checks`: each as 'name: verdict (detail)'; `points`: JSON list of
        # the parameter points it stands on). `params` is the point it was taken at, "" for one derived over a sweep.
        Table(
            name="figures",
            stages=("figures",),
            per=CATEGORY,
            rows="figures",
            schema=pa.schema(
                PROVENANCE
                + [
                    ("figure", pa.string()),
                    ("metric", pa.string()),
                    ("unit", pa.string()),
                    ("kind", pa.string()),
                    ("value", pa.float64()),
                    ("spread", pa.float64()),
                    ("samples", pa.int64()),
                    ("derivation", pa.string()),
                    ("points", pa.string()),
                    ("method", pa.string()),
                    ("paper", pa.string()),
                    ("resolution", pa.float64()),  # the smallest step the measurement resolves (NaN: its own digits)
                    ("clock_mhz", pa.float64()),  # the SM clock its timed launches ran at (clock64 / %globaltimer)
                    ("status", pa.string()),
                    ("reason", pa.string()),
                    ("checks", pa.string()),
                ]
            ),
        ),
    ]
}
SCHEMAS: dict[str, pa.Schema] = {name: t.schema for name, t in TABLES.items()}


def find(kind: str, folder: Path) -> list[Path]:
    """The files of table `kind` at any depth of `folder`: a results folder (results/<gpu>/), a copy of one
    (reports/<gpu>/tables/) or a part of one (one arch's, one category's)."""
    return sorted(folder.rglob(Path(TABLES[kind].pattern).name))


VERDICTS = ("agree", "disagree", "not-applicable")
FIGURE_STATUSES = ("verified", "consistent", "unverified", "contradicted")
STATUS_RANK = {s: i for i, s in enumerate(FIGURE_STATUSES)}  # verified best; a derivation takes its worst


def worst_status(statuses: Iterable[str]) -> str:
    """The status of a value derived from figures of these statuses: the worst of them (unverified for none)."""
    return max(statuses, key=lambda s: STATUS_RANK.get(s, 0), default="unverified")


# What each status means, as every page and the README say it (figure_model.judge gives them).
STATUS_MEANING = {
    "verified": "an independent reference agrees within its tolerance: a documented value or ceiling of the arch, or "
    "a second method (another case or category, a library, NVML, the device's attributes)",
    "consistent": "the counters of the same launch agree with it (the kernel did what its manifest says), but nothing "
    "independent of the kernel confirms the number is the GPU's",
    "unverified": "nothing independent confirms it and no counter of the launch checks it, or a check disagrees for "
    "a reason its manifest states (a kernel's limit, a lower bound): the reason says which",
    "contradicted": "a check disagrees beyond its tolerance: a counter off its claim, a value beyond the device's or "
    "above a documented ceiling, a peak well under its ceiling, two methods apart, samples spread wider than the "
    "figure allows, or a GPU shared or clock moved during the measurement",
}
STATUSES = ("measured", "static", "failed")


def canonical_params(params: dict[str, Any]) -> str:
    """The one spelling of a parameter point: JSON with sorted keys and no spaces."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def parse_params(params: str | None) -> dict[str, Any]:
    """A parameter point from its one spelling (canonical_params); '' or None is the point of no parameters."""
    return json.loads(params or "{}")


def point_text(params: str) -> str:
    """A parameter point as a person writes it: 'ilp=4, warps=32' ('' for none)."""
    try:
        point = parse_params(params)
    except json.JSONDecodeError:
        return str(params)
    return ", ".join(f"{k}={v}" for k, v in point.items()) if isinstance(point, dict) else str(params)


def kb_text(value: float) -> str:
    """A size in KB as a person writes it: 48 KB, 24 MB, 2 GB."""
    for unit, size in (("GB", 1024**2), ("MB", 1024)):
        if value >= size:
            return f"{value / size:.4g} {unit}"
    return f"{value:.4g} KB"


def frame(kind: str, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows as a DataFrame with exactly the columns of table `kind`, in schema order."""
    return pd.DataFrame(rows, columns=SCHEMAS[kind].names)


def write(kind: str, df: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write table `kind` atomically: a failed job never leaves a half-written table."""
    schema = SCHEMAS[kind]
    missing = [n for n in schema.names if n not in df.columns]
    if missing:
        raise SmdissectError(f"table {kind} lacks columns {missing}: a bug in the stage that made it")
    table = pa.Table.from_pandas(df[schema.names], schema=schema, preserve_index=False)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def read(kind: str, paths: list[str] | list[Path] | str | Path) -> pd.DataFrame:
    """Read one or more files of table `kind` into one DataFrame; a corrupt file is a one-line error."""
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    frames = []
    for p in paths:
        try:
            frames.append(pq.read_table(p, schema=SCHEMAS[kind]).to_pandas())
        except (OSError, pa.ArrowException) as err:
            raise SmdissectError(f"{p} is not a readable {kind} table ({err}): delete it and re-run") from err
    if not frames:
        return frame(kind, [])
    return pd.concat(frames, ignore_index=True)
