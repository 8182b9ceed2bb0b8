"""Run a family's cases on the GPU (clock64 timing, JSON lines) and keep every sample in raw.parquet."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .catalog import Case
from .device import Gpu, sm_clock_mhz
from .errors import SmdissectError
from .tables import canonical_params, frame, write


def invocation(binary: Path, case: Case, repeats: int, device: int) -> list[str]:
    """The protocol's command line for one case and its whole sweep."""
    argv = [str(binary.resolve()), "--case", case.id, "--repeats", str(repeats), "--device", str(device)]
    for key, values in sorted(case.sweep.items()):
        argv += ["--param", f"{key}={','.join(str(v) for v in values)}"]
    return argv


def execute(binary: Path, cases: list[Case], repeats: int, device: int) -> list[dict[str, Any]]:
    """Run every case; return their records, or fail with one line per failed case."""
    records, failures = [], []
    for case in cases:
        proc = subprocess.run(invocation(binary, case, repeats, device), capture_output=True, text=True)
        if proc.returncode != 0:
            reason = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
            failures.append(f"{case.id}: {reason}")
            continue
        records += parse_records(proc.stdout)
    if failures:
        raise SmdissectError(f"{binary.name}: cases failed: {'; '.join(failures)}")
    return records


def parse_records(stdout: str) -> list[dict[str, Any]]:
    """The protocol's JSON-lines records in a binary's output."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def sample_rows(records: list[dict[str, Any]], base: dict[str, Any]) -> list[dict[str, Any]]:
    """One raw-table row per sample of every record, each with the job's provenance `base`."""
    return [
        base
        | {
            "case": rec["case"],
            "params": canonical_params(rec["params"]),
            "metric": rec["metric"],
            "unit": rec["unit"],
            "repeat": i,
            "value": sample,
            "cycles": rec["cycles"],
            "iterations": rec["iterations"],
            "clock_mhz": rec["clock_mhz"],
            "smid": rec["smid"],
        }
        for rec in records
        for i, sample in enumerate(rec["samples"])
    ]


def run_id(gpu: Gpu) -> str:
    """Identifies the job that measured a row: UTC time and the GPU."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{gpu.uuid[4:12]}"


def provenance(gpu: Gpu, arch: str, cuda: str, category: str) -> dict[str, Any]:
    """The provenance columns shared by every row a GPU job writes."""
    return {
        "gpu": gpu.name,
        "gpu_uuid": gpu.uuid,
        "arch": arch,
        "driver": gpu.driver,
        "cuda": cuda,
        "run_id": run_id(gpu),
        "category": category,
    }


def measure(binary: Path, cases: list[Case], gpu: Gpu, arch: str, cuda: str, repeats: int, out: Path) -> None:
    """Time every case of one family and write raw.parquet, one row per repeat."""
    before = sm_clock_mhz(gpu.uuid)
    records = execute(binary, cases, repeats, gpu.index)
    after = sm_clock_mhz(gpu.uuid)
    base = provenance(gpu, arch, cuda, cases[0].category) | {
        "family": cases[0].family,
        "sm_clock_before_mhz": before,
        "sm_clock_after_mhz": after,
    }
    write("raw", frame("raw", sample_rows(records, base)), out)
