"""The scheduler category: manifest, both archs' builds and SASS expectations, the report view, and
(on a GPU) the patching experiment end to end."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from conftest import ARCHS, FLAGS, ROOT
from smdissect import catalog, controlcodes, sass
from smdissect.views import scheduler

KERNELS = ROOT / "kernels"
CASES = catalog.load(KERNELS, "scheduler")
FAMILIES = sorted(catalog.families(CASES))


def test_manifest_covers_the_issue() -> None:
    ids = {c.id for c in CASES}
    assert {"subcore_ffma", "warps_ffma", "max_resident", "scoreboard_depth", "setmaxnreg"} <= ids
    assert {"stall_patch", "yield_patch"} <= ids
    assert catalog.family_settings(KERNELS, "scheduler", "patched")["profile"] is False
    assert all(c.kind == "timed" for c in CASES)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("family", FAMILIES)
def test_family_sass_holds(compiled: Callable[[str, str, str], Path], arch: str, family: str) -> None:
    """Every listed kernel exists in the binary and meets its case's SASS expectations."""
    binary = compiled(arch, "scheduler", family)
    listing = json.loads(binary.with_suffix(".json").read_text())
    counts = sass.opcodes(sass.dump(binary, arch))
    by_id = {c.id: c for c in CASES}
    assert {entry["case"] for entry in listing} == {c.id for c in CASES if c.family == family}
    for entry in listing:
        for kernel in entry["kernels"]:
            assert kernel["symbol"] in counts, f"{kernel['symbol']} not in the {arch} SASS"
            rows = sass.check(by_id[entry["case"]], counts[kernel["symbol"]], kernel["ops"])
            bad = [r for r in rows if r["verdict"] != "agree"]
            assert not bad, f"{arch} {entry['case']} {kernel['symbol']}: {bad}"


def test_sass_check_can_fail(compiled: Callable[[str, str, str], Path]) -> None:
    counts = sass.opcodes(sass.dump(compiled("sm_90a", "scheduler", "scoreboard"), "sm_90a"))
    case = next(c for c in CASES if c.id == "scoreboard_depth")
    rows = sass.check(case, counts["loads_then_use<12>"], 13)
    assert any(r["verdict"] == "disagree" for r in rows)


def _raw() -> pd.DataFrame:
    """Raw rows shaped like the run stage's, values as a sub-core-bound H200 would give them."""
    rows = []

    def add(case: str, params: dict[str, int], metric: str, value: float) -> None:
        for repeat in range(3):
            key = json.dumps(params, sort_keys=True, separators=(",", ":"))
            rows.append({"case": case, "params": key, "metric": metric, "repeat": repeat, "value": value})

    for p in range(8):
        add("subcore_ffma", {"partner": p}, "throughput", 0.5 if p == 4 else 0.95)
        add("subcore_ffma", {"partner": p}, "same_subpartition", float(p % 4 == 0))
    add("warpid_map", {"warps": 8}, "subpartition_match", 1.0)
    for w in (1, 4, 16, 64):
        add("warps_ffma", {"warps": w}, "throughput", min(4.0, w / 4))
        add("warps_ffma", {"warps": w}, "resident_warps", w)
    add("max_resident", {"cta_warps": 2}, "max_resident_warps", 64)
    for n in (1, 12, 32):
        add("scoreboard_depth", {"loads": n}, "cycles_per_iteration", 260 + 2 * n)
    for k in (1, 4):
        add("stall_patch", {"stall": k}, "wrong_results", 128 if k < 4 else 0)
        add("stall_patch", {"stall": k}, "cycles_per_ffma", k)
        add("stall_patch", {"stall": k}, "latency", 4.04)
    for f in (0, 1):
        add("yield_patch", {"flipped": f, "warps": 4}, "cycles_per_iteration", 520 + 300 * f)
    add("setmaxnreg", {"low": 32}, "dec_cost", 50)
    add("setmaxnreg", {"low": 32}, "inc_cost", 61)
    return pd.DataFrame(rows)


def _codes() -> pd.DataFrame:
    chain = [{"kernel": "ffma_chain", "offset": 16 * i, "opcode": "FFMA", "stall": 4, "yield_": 1, "wrbar": 7,
              "rdbar": 7, "waitmask": 0, "reuse": 0} for i in range(128)]  # fmt: skip
    return pd.DataFrame(chain, columns=controlcodes.COLUMNS)


def test_view_renders_every_section() -> None:
    frames = {
        "raw": _raw(),
        "controlcodes": _codes(),
        "sass": pd.DataFrame({"case": ["stall_patch"], "kernel": ["ffma_chain"]}),
    }
    out = dict(scheduler.sections(frames))
    assert len(out) == 6
    assert all("<svg" in out[t] for t in ("Sub-core binding (warpid % 4)", "Scoreboard depth", "Binary patching"))
    codes = out["Control codes of the chain kernels"]
    assert "ffma_chain" in codes and "4.04" in codes
    assert "128" in out["Binary patching"]


def test_chain_stalls_picks_the_mode() -> None:
    codes = _codes()
    codes.loc[:2, "stall"] = 1
    summary = scheduler.chain_stalls(codes)
    assert summary.to_dict("records")[0] | {"yield_share": 1.0} == {
        "kernel": "ffma_chain", "opcode": "FFMA", "count": 128, "stall": 4, "yield_share": 1.0}  # fmt: skip
    assert scheduler.chain_stalls(codes.head(10)).empty


@pytest.mark.parametrize("frames", [{}, {"raw": pd.DataFrame()}, {"raw": _raw().head(0), "controlcodes": _codes()}])
def test_view_without_data_says_so(frames: dict[str, pd.DataFrame]) -> None:
    out = scheduler.sections(frames)
    assert len(out) == 6 and all(html for _, html in out)


@pytest.mark.gpu
def test_patched_run_counts_wrong_results(compiled: Callable[[str, str, str], Path]) -> None:
    """On a GPU: the unpatched chain is exact, a stall count of 1 corrupts results."""
    binary = compiled(ARCHS[0], "scheduler", "patched")
    controlcodes.prepare(KERNELS / "scheduler" / "patch_targets.cu", binary, ARCHS[0], "nvcc", KERNELS / "common",
                         FLAGS)  # fmt: skip
    proc = subprocess.run([str(binary), "--case", "stall_patch", "--param", "stall=1,4", "--repeats", "1"],
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    recs = {(json.loads(x)["params"]["stall"], json.loads(x)["metric"]): json.loads(x)["value"]
            for x in proc.stdout.splitlines()}  # fmt: skip
    assert recs[(4, "wrong_results")] == 0
    assert recs[(1, "wrong_results")] > 0
