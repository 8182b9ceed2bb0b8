"""The Parquet tables: each schema defined once here, every table with provenance, atomic writes."""

from __future__ import annotations

import json
import os
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

SCHEMAS: dict[str, pa.Schema] = {
    # count: in the whole kernel; loop_count: in one pass of its timed loop (sass.timed_loop), what `ops` counts
    "sass": pa.schema(
        PROVENANCE
        + KERNEL
        + [("ops", pa.int64()), ("opcode", pa.string()), ("count", pa.int64()), ("loop_count", pa.int64())]
    ),
    # scope: `loop` where the expectation is counted in one pass of the timed loop, `kernel` in the whole kernel
    "sass_checks": pa.schema(
        PROVENANCE
        + KERNEL
        + [("opcode", pa.string()), ("expect", pa.string()), ("scope", pa.string()), ("count", pa.int64()),
           ("verdict", pa.string())]
    ),
    "raw": pa.schema(
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
    # SASS control codes of every instruction of every kernel (controlcodes.decode_binary), static like `sass`.
    "controlcodes": pa.schema(
        PROVENANCE
        + [("family", pa.string()), ("kernel", pa.string()), ("offset", pa.int64()), ("opcode", pa.string())]
        + [(f, pa.int64()) for f in ("stall", "yield_", "wrbar", "rdbar", "waitmask", "reuse")]
    ),
    # What became of every planned (case, parameter point) of a family on the run arch.
    "status": pa.schema(
        PROVENANCE + CLOCKS + [("family", pa.string()), ("status", pa.string()), ("reason", pa.string())]
    ),
    "ncu": pa.schema(
        PROVENANCE + CLOCKS + KERNEL + [("metric", pa.string()), ("unit", pa.string()), ("value", pa.float64())]
    ),
    "stalls": pa.schema(
        PROVENANCE + CLOCKS + KERNEL + [("reason", pa.string()), ("value", pa.float64()), ("share", pa.float64())]
    ),
    "pipes": pa.schema(
        PROVENANCE
        + CLOCKS
        + KERNEL
        + [("pipe", pa.string()), ("inst_executed", pa.float64()), ("pct_of_peak", pa.float64())]
    ),
    # clock64_value: the pipeline's own side (clock64 timing, or what the manifest expects);
    # counter_value: the independent side (an ncu counter, or cuobjdump's count).
    "crossval": pa.schema(
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
    # Every reported figure (figures.compute): value, spread (max - min of its samples), how it was derived and
    # measured, and its status from the checks (`checks`: each as 'name: verdict (detail)'; `points`: JSON list of
    # the parameter points it stands on). `params` is the point it was taken at, "" for one derived over a sweep.
    "figures": pa.schema(
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
            ("status", pa.string()),
            ("reason", pa.string()),
            ("checks", pa.string()),
        ]
    ),
}

VERDICTS = ("agree", "disagree", "not-applicable")
FIGURE_STATUSES = ("verified", "unverified", "contradicted")
STATUSES = ("measured", "static", "failed")


def canonical_params(params: dict[str, Any]) -> str:
    """The one spelling of a parameter point: JSON with sorted keys and no spaces."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def point_text(params: str) -> str:
    """A parameter point as a person writes it: 'ilp=4, warps=32' ('' for none)."""
    try:
        point = json.loads(params or "{}")
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
