"""A figure's status comes from evidence independent of the kernel that measured it: deliberately wrong figures end
contradicted with their reason, and the launch's own counters alone make a figure consistent, never verified.
(A capacity beyond the device's attribute: tests/test_capacity.py.)"""

from __future__ import annotations

import pandas as pd
from helpers import raw_frame
from smdissect.analysis import crossval, figures
from smdissect.analysis.checks import SPREAD
from smdissect.analysis.figure_model import Figure, judge
from smdissect.core import catalog, tables


def case(category: str = "pipelines", **entry: object) -> catalog.Case:
    """A manifest entry of `category` with the required fields filled in."""
    base = {"id": "probe", "source": "probe.cu", "ptx": "probe", "measures": ["throughput"], "sass": {"expect": {}}}
    return catalog._case(category, base | {"sweep": {"ilp": [4, 8], "warps": [32]}} | entry)


def peak(probe: catalog.Case, values: dict[int, list[float]], **frames: pd.DataFrame) -> tuple[str, str]:
    """The status and reason of the probe's peak throughput, measured as `values` (ilp -> samples) on an H200."""
    raw = raw_frame(
        [(probe.id, {"ilp": ilp, "warps": 32}, "throughput", s) for ilp, s in values.items()], unit="warp_inst/cycle/SM"
    )
    found = figures.compute([probe], {"raw": raw, **frames}, {}, "sm_90a", "NVIDIA H200")
    (fig,) = [f for f in found if f.kind == "peak"]
    return judge(fig.checks)


def test_a_peak_8_percent_under_its_documented_rate_is_contradicted() -> None:
    # DFMA's documented 64 results/clock/SM on sm_90 are 2 warp-inst/cycle/SM; 1.84 levelled is the kernel's limit
    status, reason = peak(case(pipe="fp64"), {4: [1.84] * 9, 8: [1.84] * 9})
    assert status == "contradicted" and "92.0% of the sm_90a fp64 pipe peak" in reason, reason
    assert "under 95% of it, so the kernel's limit" in reason


def test_a_peak_under_its_rate_stands_where_the_manifest_says_what_limits_it() -> None:
    limit = "three distinct 64-bit source registers"
    status, reason = peak(case(pipe="fp64", explain={"ceiling": limit}), {4: [1.84] * 9, 8: [1.84] * 9})
    assert status == "unverified" and limit in reason, reason  # explained, but nothing independent confirms it


def test_a_peak_at_its_documented_rate_is_verified_and_above_it_contradicted() -> None:
    status, reason = peak(case(pipe="fp64"), {4: [1.99] * 9, 8: [2.0] * 9})
    assert status == "verified" and "(documented)" in reason, reason
    status, reason = peak(case(pipe="fp64"), {4: [1.99] * 9, 8: [2.2] * 9})
    assert status == "contradicted" and "above the documented ceiling" in reason, reason


def test_two_categories_apart_on_one_pipes_rate_are_contradicted() -> None:
    probe = case("scheduler", same_as=[{"case": "pipelines/ffma", "metric": "throughput"}], peak="pipe:fma")
    theirs = Figure("ffma", "throughput", "warp_inst/cycle/SM", "peak", "ffma peak throughput", 3.96, 0, 9, "")
    raw = raw_frame(
        [("probe", {"ilp": ilp, "warps": 32}, "throughput", [3.5] * 9) for ilp in (4, 8)], unit="warp_inst/cycle/SM"
    )
    found = figures.compute([probe], {"raw": raw}, {"pipelines": [theirs]}, "sm_90a", "NVIDIA H200")
    status, reason = judge(next(f for f in found if f.kind == "peak").checks)
    assert status == "contradicted" and "same work: 3.5 vs pipelines/ffma 3.96" in reason, reason


def test_a_peak_under_what_a_library_reaches_on_the_same_card_is_contradicted() -> None:
    floor = {"case": "gemm/lib", "metric": "throughput", "relation": "at_least", "tolerance": 0.02}
    probe = case("tensorcore", same_as=[floor])
    raw = raw_frame(
        [("probe", {"ilp": ilp, "warps": 32}, "throughput", [3.5] * 9) for ilp in (4, 8)], unit="warp_inst/cycle/SM"
    )
    for lib, want in ((3.0, "agree"), (3.9, "disagree")):
        theirs = Figure("lib", "throughput", "warp_inst/cycle/SM", "peak", "lib peak throughput", lib, 0, 9, "")
        found = figures.compute([probe], {"raw": raw}, {"gemm": [theirs]}, "sm_90a", "NVIDIA H200")
        (check,) = [c for c in next(f for f in found if f.kind == "peak").checks if c.name == "floor"]
        assert check.verdict == want and "at least" in check.detail, check
        if want == "agree":  # a library under the peak bounds it from below: it verifies nothing
            assert judge(next(f for f in found if f.kind == "peak").checks)[0] != "verified"
    assert judge(next(f for f in found if f.kind == "peak").checks)[0] == "contradicted"


def test_a_figure_whose_samples_spread_40_percent_is_contradicted() -> None:
    wide = [1.0, 1.2, 1.4, 1.0, 1.2, 1.4, 1.0, 1.2, 1.4]  # 40% of the median 1.2 apart, the inner samples too
    status, reason = peak(case(), {4: wide, 8: wide})
    assert status == "contradicted" and "spread 33% of its value" in reason, reason
    assert SPREAD == 0.10  # the tolerance the reason names
    one_hiccup = [1.2] * 8 + [0.7]  # one launch of 9 off: the median stands
    status, reason = peak(case(), {4: one_hiccup, 8: one_hiccup})
    assert status != "contradicted", reason


def counter_row(probe: catalog.Case, ours: float, theirs: float) -> pd.DataFrame:
    """The crossval row of a clock64 claim against its counter at ilp 8, judged as the crossval stage judges it."""
    row = crossval._row(
        probe, '{"ilp":8,"warps":32}', "counter: claimed vs smsp__inst_executed.sum", "counter", ours, theirs
    )
    return tables.frame("crossval", [row | {"category": probe.category}])


def test_a_counter_50_percent_off_its_claim_is_contradicted() -> None:
    probe = case()  # no pipe: no ceiling, only the launch's counters judge it
    status, reason = peak(probe, {4: [1.0] * 9, 8: [1.0] * 9}, crossval=counter_row(probe, 1e6, 1.5e6))
    assert status == "contradicted" and "counter: claimed vs smsp__inst_executed.sum: 1,000,000 vs 1,500,000" in reason


def test_the_launchs_own_counters_alone_make_a_figure_consistent_not_verified() -> None:
    probe = case()
    status, reason = peak(probe, {4: [1.0] * 9, 8: [1.0] * 9}, crossval=counter_row(probe, 1e6, 1.001e6))
    assert status == "consistent" and "the launch's own counters agree (counter)" in reason, reason
