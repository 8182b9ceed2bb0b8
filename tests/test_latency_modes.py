"""analysis.latency_modes on synthetic per-load latencies shaped like chase_near_far's (9 launches of the same 512
lines): it must find two clusters only where there are two, keep far hits however far above the median they lie, and
count DRAM misses apart without letting them into either cluster."""

from __future__ import annotations

import math

import numpy as np
import pytest
from smdissect.analysis import latency_modes as lm

LAUNCHES, LINES = 9, 512


def lines_far(share: float, seed: int = 1) -> np.ndarray:
    """Which of the LINES timed lines are far: exactly round(share * LINES) of them, at random places."""
    far = np.zeros(LINES, dtype=bool)
    far[: round(share * LINES)] = True
    return np.random.default_rng(seed).permutation(far)


def timed(near: float, far: float, far_lines: np.ndarray, jitter: float = 3.0, seed: int = 2) -> np.ndarray:
    """LAUNCHES launches, launch after launch, of the same lines: each line's latency is its partition's, plus
    jitter (normal, cycles) per load."""
    rng = np.random.default_rng(seed)
    line = np.where(far_lines, far, near)
    return (np.tile(line, LAUNCHES) + jitter * rng.standard_normal(LAUNCHES * LINES)).round(3)


@pytest.mark.parametrize(
    "shape",
    [
        lambda rng, n: 270 + 4 * rng.standard_normal(n),  # normal: a hard cut gives separation 2.6
        lambda rng, n: rng.uniform(250, 300, n),  # flat: 3.5
        lambda rng, n: 250 + 10 * rng.exponential(size=n),  # a long right tail (queueing): 2.6
        lambda rng, n: 250 + 20 * rng.lognormal(0, 0.5, n),
        lambda rng, n: 270 + 2 * rng.integers(0, 2, n),  # clock quantisation: 270 or 272, nothing between
    ],
)
def test_one_mode_is_one_cluster(shape) -> None:
    x = shape(np.random.default_rng(5), LAUNCHES * LINES)
    m = lm.modes(x, LINES)
    assert m.clusters == 1, m
    assert m.far_share == 0 and math.isnan(m.far), m
    assert m.near == pytest.approx(x[x <= lm.SLOW * np.median(x)].mean())
    assert m.separation < lm.SEPARATION, m  # reported, so the page shows how far from two it was
    assert lm.reading(m) == "one L2 latency"


def test_two_partitions_thirty_percent_far() -> None:
    x = timed(265, 298, lines_far(0.30))
    m = lm.modes(x, LINES)
    assert m.clusters == 2 and m.far_share == pytest.approx(0.30, abs=0.02), m
    assert m.near == pytest.approx(265, abs=0.5) and m.far == pytest.approx(298, abs=0.5), m
    assert m.slow_share == 0 and m.separation > 8 and m.agreement == 1, m
    assert m.spread < 1.5, m  # the launches' cluster means at the pooled cut
    assert lm.reading(m) == "two L2 latencies, set by the line's address"


def test_dram_misses_are_a_share_of_their_own_not_far_hits() -> None:
    x = timed(265, 298, lines_far(0.30))
    clean = lm.modes(x, LINES)
    rng = np.random.default_rng(9)
    missed = rng.choice(len(x), round(0.02 * len(x)), replace=False)
    x[missed] = rng.uniform(550, 1500, len(missed))  # DRAM and TLB misses, 2% of the loads
    m = lm.modes(x, LINES)
    assert m.slow_share == pytest.approx(0.02, abs=0.002), m
    assert m.clusters == 2 and m.far_share == pytest.approx(0.30, abs=0.02), m
    assert m.far == pytest.approx(clean.far, abs=0.3) and m.near == pytest.approx(clean.near, abs=0.3), m
    assert m.agreement > 0.99, m  # a missed load places its line by its other launches


def test_far_mode_beyond_a_quarter_above_the_median_is_found() -> None:
    x = timed(262, 345, lines_far(0.30), jitter=4)
    median = np.median(x)
    assert (x[np.tile(lines_far(0.30), LAUNCHES)] > 1.25 * median).all()  # the old +-25% band dropped every far hit
    m = lm.modes(x, LINES)
    assert m.clusters == 2 and m.far_share == pytest.approx(0.30, abs=0.02), m
    assert m.far == pytest.approx(345, abs=0.5) and m.slow_share == 0, m


def test_two_latencies_not_tied_to_the_address_are_not_partitions() -> None:
    rng = np.random.default_rng(4)
    x = np.where(rng.random(LAUNCHES * LINES) < 0.3, 298.0, 265.0) + 3 * rng.standard_normal(LAUNCHES * LINES)
    m = lm.modes(x, LINES)  # each load, not each line, picks its latency
    assert m.clusters == 2 and m.agreement < 0.2, m
    assert lm.reading(m).startswith("two latencies not tied")


def test_a_small_or_close_second_mode_is_not_a_cluster() -> None:
    few = lm.modes(timed(265, 298, lines_far(0.03)), LINES)  # 3% of the lines: under MIN_SHARE
    assert few.clusters == 1, few
    close = lm.modes(timed(265, 272, lines_far(0.5), jitter=2.5), LINES)  # 7 cycles at 2.5 jitter: 2.8 widths apart
    assert close.clusters == 1 and close.separation < lm.SEPARATION, close


def test_sides_tell_the_partitions_apart() -> None:
    far = lines_far(0.5)
    # the same lines from three SMs: one of the other partition (its near lines are our far ones), one of ours
    here, there, ours = timed(265, 298, far), timed(265, 298, ~far, seed=3), timed(266, 299, far, seed=4)
    a, b, c = (lm.sides(x, LINES, lm.modes(x, LINES)) for x in (here, there, ours))
    assert (a == far).all()
    assert lm.same_sides(a, b) == 0 and lm.same_sides(a, c) == 1
    flat = timed(270, 270, far)  # one cluster: no line is placed
    none = lm.sides(flat, LINES, lm.modes(flat, LINES))
    assert (none == -1).all() and math.isnan(lm.same_sides(a, none))


def test_degenerate_inputs() -> None:
    flat = lm.modes(np.full(1024, 300.0), 512)  # one value: no split at all
    assert flat.clusters == 1 and flat.near == 300 and math.isnan(flat.separation) and math.isnan(flat.cut)
    assert flat.spread == 0 and math.isnan(flat.agreement)
    single = lm.modes(timed(265, 298, lines_far(0.3))[:LINES], LINES)  # one launch: nothing to agree across
    assert single.clusters == 2 and math.isnan(single.agreement) and math.isnan(single.spread)
    assert lm.modes([], 512).clusters == 0
