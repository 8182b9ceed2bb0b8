"""The reported figures and the checks that can fail them: deliberately broken kernels (compiled for real) and a
sweep of the frozen H200 run cut before its plateau are marked contradicted."""

from __future__ import annotations

import subprocess
from collections import Counter

import pandas as pd
import pytest
from helpers import FIXTURES, ROOT, RUN, raw_frame
from smdissect.analysis import figures
from smdissect.analysis.checks import PLATEAU, reference_checks
from smdissect.analysis.figure_model import REFERENCE, SELF, Check, Figure, judge, points
from smdissect.core import catalog, tables
from smdissect.measure import sass


def case(**entry: object) -> catalog.Case:
    """A manifest entry of the pipelines category (the required fields filled in)."""
    base = {
        "id": "probe",
        "source": "probe.cu",
        "ptx": "probe",
        "measures": ["latency", "throughput"],
        "sweep": {"ilp": [1], "warps": [1]},
        "sass": {"expect": {}},
    }
    return catalog._case("pipelines", base | entry)


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[sass.Instruction]]:
    """The deliberately broken timed loops, compiled for sm_90a with nvcc, as SASS instructions per kernel."""
    cubin = tmp_path_factory.mktemp("broken") / "timed_loops.cubin"
    subprocess.run(
        ["nvcc", "-cubin", "-arch=sm_90a", "-O3", "-o", str(cubin), str(FIXTURES / "broken" / "timed_loops.cu")],
        check=True,
    )
    return sass.code(sass.dump(cubin, "sm_90a"))


def opcode_counts(kernel: list[sass.Instruction]) -> Counter[str]:
    """A kernel's opcode counts (the whole kernel)."""
    return Counter(i.opcode for i in kernel)


def judged(probe: catalog.Case, kernel: list[sass.Instruction], ops: int, raw: pd.DataFrame) -> list[Figure]:
    """The figures of a probe case whose kernel is `kernel` (`ops` claimed instructions per pass), measured as `raw`."""
    rows = sass.check(probe, opcode_counts(kernel), ops, sass.loop_opcodes(kernel))
    checks = tables.frame(
        "sass_checks", [r | {"case": probe.id, "params": "{}", "variant": "long", "kernel": "k"} for r in rows]
    )
    return figures.compute([probe], {"raw": raw, "sass_checks": checks}, {}, "sm_90a", "NVIDIA H200")


def test_a_hoisted_mma_is_contradicted(broken: dict[str, list[sass.Instruction]]) -> None:
    kernel = broken["hoisted_mma"]
    assert sass.timed_loop(kernel)[2] == "loop between the clock reads"
    assert sass.count(sass.loop_opcodes(kernel), "HMMA") < 32  # 32 mma a pass, HMMAs hoisted out of the loop
    assert sass.count(opcode_counts(kernel), "HMMA") > 0  # the kernel-wide count still finds them
    probe = case(sass={"expect": {"HMMA|QMMA": ">= ops"}}, measures=["latency"])
    raw = raw_frame([(probe.id, {"ilp": 1, "warps": 1}, "latency", [4.0] * 9)], unit="cycle")
    (fig,) = judged(probe, kernel, 32, raw)
    status, reason = judge(fig.checks)
    assert status == "contradicted" and "per pass of the timed loop" in reason, reason


def test_a_fused_add_chain_is_contradicted_by_its_sass_and_its_parts(broken: dict[str, list[sass.Instruction]]) -> None:
    kernel = broken["fused_add64"]
    assert sass.count(sass.loop_opcodes(kernel), "IADD3") < 2 * 128
    probe = case(sass={"expect": {"IADD3": "== 2*ops"}}, measures=["latency"], built_from=["iadd3"])
    iadd3 = Figure(
        case="iadd3",
        metric="latency",
        unit="cycle",
        kind="point",
        name="iadd3 latency",
        value=4.04,
        spread=0.0,
        samples=9,
        derivation="",
        params='{"ilp":1,"warps":1}',
    )
    raw = raw_frame([(probe.id, {"ilp": 1, "warps": 1}, "latency", [2.04] * 9)], unit="cycle")
    (fig,) = judged(probe, kernel, 128, raw)
    assert judge(fig.checks)[0] == "contradicted"  # by its SASS
    parts = reference_checks(fig, probe, {"pipelines": [fig, iadd3]})
    assert [c.verdict for c in parts] == ["disagree"] and "iadd3" in parts[0].detail
    others = [c for c in fig.checks if not c.name.startswith("sass")]
    assert judge(others + parts)[0] == "contradicted"  # by its parts alone, whatever the SASS says


def dram_read(kept: int | None = None) -> tuple[catalog.Case, pd.DataFrame]:
    """The frozen H200 run's dram_read samples, keeping the first `kept` CTA counts of its sweep (all: None)."""
    (read,) = [c for c in catalog.load(ROOT / "kernels", "memory") if c.id == "dram_read"]
    raw = tables.read("raw", [RUN / "sm_90a" / "memory" / "bandwidth" / "raw.parquet"])
    raw = raw[raw["case"] == "dram_read"]
    ctas = sorted(read.sweep["ctas"])[:kept]
    return read, raw[raw["params"].map(lambda p: tables.parse_params(p)["ctas"] in ctas)]


def test_a_bandwidth_sweep_cut_before_its_plateau_is_contradicted() -> None:
    read, raw = dram_read(6)  # 1..32 CTAs: DRAM bandwidth still doubles with every step
    assert read.saturate, "dram_read must name the axes its peak saturates along"
    (peak,) = [f for f in figures.case_figures(read, raw, points(raw)) if f.kind == "peak" and f.metric == "bandwidth"]
    found = figures.compute([read], {"raw": raw}, {}, "sm_90a", "NVIDIA H200")
    (judged_peak,) = [f for f in found if f.name == peak.name]
    status, reason = judge(judged_peak.checks)
    assert status == "contradicted" and "not saturated" in reason, reason


def test_the_full_bandwidth_sweep_has_levelled() -> None:
    read, raw = dram_read()
    found = figures.compute([read], {"raw": raw}, {}, "sm_90a", "NVIDIA H200")
    (peak,) = [f for f in found if f.kind == "peak" and f.metric == "bandwidth"]
    plateau = [c for c in peak.checks if c.name == "plateau"]
    assert [c.verdict for c in plateau] == ["agree"], plateau
    ceiling = [c for c in peak.checks if c.name == "ceiling"]
    assert [c.verdict for c in ceiling] == ["agree"], ceiling  # within 85% of the datasheet's 4800 GB/s


@pytest.mark.parametrize(
    ("checks", "status"),
    [
        ([Check("ceiling", "agree", "", evidence=REFERENCE)], "verified"),
        ([Check("cycles", "agree", "", evidence=SELF)], "consistent"),
        ([Check("bound", "agree", ""), Check("sass timed loop", "agree", "")], "unverified"),
        ([Check("cycles", "agree", "", evidence=SELF), Check("ceiling", "disagree", "150% of peak")], "contradicted"),
        ([Check("pipe", "disagree", "2 vs 1", evidence=SELF, explained="two instructions a step")], "unverified"),
    ],
)
def test_status_follows_the_checks(checks: list[Check], status: str) -> None:
    assert judge(checks)[0] == status


def test_a_rate_above_its_pipe_peak_is_contradicted() -> None:
    probe = case(id="ffma_like", pipe="fma", measures=["throughput"], sweep={"ilp": [1, 2], "warps": [32]})
    raw = raw_frame(
        [
            ("ffma_like", {"ilp": 1, "warps": 32}, "throughput", [3.0] * 5),
            ("ffma_like", {"ilp": 2, "warps": 32}, "throughput", [4.4] * 5),
        ],
        unit="warp_inst/cycle/SM",
    )
    (fig,) = [f for f in figures.compute([probe], {"raw": raw}, {}, "sm_90a", "NVIDIA H200") if f.kind == "peak"]
    status, reason = judge(fig.checks)
    assert status == "contradicted" and "ceiling" in reason and "fma pipe peak" in reason, reason


def test_a_peak_on_its_plateau_is_checked_at_a_profiled_point_of_it() -> None:
    probe = case(id="flat", measures=["throughput"], sweep={"ilp": [4, 8], "warps": [32]})
    raw = raw_frame(
        [
            ("flat", {"ilp": 4, "warps": 32}, "throughput", [2.00] * 5),
            ("flat", {"ilp": 8, "warps": 32}, "throughput", [2.00 * (1 - PLATEAU / 2)] * 5),
        ],
        unit="warp_inst/cycle/SM",
    )
    crossval = pd.DataFrame(
        [
            {
                "case": "flat",
                "params": '{"ilp":8,"warps":32}',
                "check": "cycles: clock64 span vs x",
                "clock64_value": 1.0,
                "counter_value": 1.0,
                "verdict": "agree",
                "note": "",
            }
        ]
    )
    found = figures.compute([probe], {"raw": raw, "crossval": crossval}, {}, "sm_90a", "NVIDIA H200")
    (fig,) = [f for f in found if f.kind == "peak"]
    assert fig.params == '{"ilp":4,"warps":32}'
    assert judge(fig.checks)[0] == "consistent"  # the launch's own counters: not evidence the rate is the GPU's
    assert any("on the plateau" in c.detail for c in fig.checks)


def test_each_rule_gives_its_figures() -> None:
    probe = case(id="sweep", measures=["latency", "share"], sweep={"n": [1, 2, 3]}, figures={"share": "none"})
    raw = raw_frame(
        [("sweep", {"n": n}, m, [float(n)] * 3) for n in (1, 2, 3) for m in ("latency", "share")], unit="cycle"
    )
    found = figures.case_figures(probe, raw, points(raw))
    assert [f.name for f in found] == ["sweep latency at n=1", "sweep latency at n=2", "sweep latency at n=3"]
    assert [f.kind for f in found] == ["each"] * 3


def test_rows_carry_status_reason_and_checks() -> None:
    probe = case(id="one", measures=["latency"])
    raw = raw_frame([("one", {"ilp": 1, "warps": 1}, "latency", [4.0, 4.1, 4.0])], unit="cycle")
    found = figures.compute([probe], {"raw": raw}, {}, "sm_90a", "NVIDIA H200")
    (row,) = figures.rows(found, {"category": "pipelines", "gpu": "NVIDIA H200"})
    assert row["status"] == "unverified" and row["value"] == 4.0 and row["spread"] == pytest.approx(0.1)
    assert "sass" in row["checks"] and row["reason"]
    tables.frame("figures", [row])  # every column of the schema
