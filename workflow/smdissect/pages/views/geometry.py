"""Report view of the geometry category: the TLB staircase (latency against pages touched), the L1's bytes per cold
miss against stride and its capacity curves per carveout, the L2's bandwidth against footprint, the constant, read-only
and texture paths' chases against footprint, and the store, prefetch and sector-promotion operators. Every number is
a row of the figures table (analysis.derived.geometry derives levels, reaches, sizes and ratios); the charts draw
the samples."""

from __future__ import annotations

import pandas as pd

from smdissect.pages import charts, evidence, markup

CATEGORY = "geometry"

TLB = ("tlb_chase", "tlb_chase_wide", "tlb_chase_huge")
L1 = ("l1_sector", "l1_capacity", "l1_line", "l1_ways")
L2 = ("l2_bandwidth", "l2_camping", "l2_persist", "l2_address_map", "device_geometry")
CACHES = ("const_footprint", "const_divergent", "nc_footprint", "tex_footprint", "cache_attributes")
READS = {"const_footprint": "ld.const", "nc_footprint": "ld.global.nc", "tex_footprint": "tex1Dfetch"}
STORES = tuple(f"{kind}_{op}" for kind in ("reload", "roundtrip") for op in ("none", "wb", "cg", "cs", "wt", "na"))
PREFETCH = ("prefetch_none", "prefetch_l2", "prefetch_l1", "promote_none", "promote_64", "promote_128", "promote_256")


def _table(frames: dict[str, pd.DataFrame], cases: tuple[str, ...]) -> str:
    return evidence.figure_table(evidence.figures_of(frames, cases=cases))


def _tlb(frames: dict[str, pd.DataFrame]) -> str:
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    data = evidence.points(frames.get("raw"), list(TLB), "latency", ["pages", "stride_mb"])
    if data.empty:
        return markup.empty("no TLB measurements")
    data["stride"] = data["stride_mb"].map(lambda s: f"{s / 1024:g} GB apart" if s >= 1024 else f"{s:g} MB apart")
    chart = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("pages:Q", scale=alt.Scale(type="log", base=2), title="pages touched (2 MB each, log 2)"),
            y=alt.Y("value:Q", title="latency (cycle per load)"),
            color=alt.Color("stride:N", title="pages"),
        )
        .properties(width=600, height=280)
    )
    described = (
        "Page-stride chase latency (cycles per load, every load an L2 hit) against the number of distinct 2 MB pages "
        f"it touches (log 2), one line per page stride ({', '.join(data['stride'].unique())}); a step up is what "
        "translates the pages running out of entries at that stride, a flat line to the end a lower bound of its reach."
    )
    note = markup.empty(
        "4096 lines (512 KB; one per page past 4096 pages) spread round robin over the pages, each read once per lap "
        "through the L2 only (ld.global.cg): the data reads are L2 hits at every page count, so a step of over 1% is a "
        "TLB level running out of entries, its reach bracketed by the page counts on either side (pages x stride); "
        "strides 2 MB, 32 MB and 1 GB at equal page counts tell what one entry covers from how many a level holds. "
        "4 KB and 64 KB pages cannot be isolated here: cudaMalloc maps 2 MB pages"
    )
    return charts.svg(chart, described, "TLB staircase") + note + _table(frames, TLB)


def _l1(frames: dict[str, pd.DataFrame]) -> str:
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    misses = evidence.figures_of(frames, cases=("l1_sector",), metrics=("bytes_per_miss",))
    curves = evidence.points(frames.get("raw"), ["l1_capacity", "l1_line"], "latency", ["footprint_kb", "stride_b"])
    if misses.empty and curves.empty:
        return markup.empty("no L1 measurements")
    body = ""
    if not misses.empty:
        data = misses.assign(stride=misses["params"].map(lambda p: float(evidence.param(p, "stride_b"))))
        chart = (
            alt.Chart(data)
            .mark_line(point=True)
            .encode(
                x=alt.X("stride:Q", scale=alt.Scale(type="log", base=2), title="stride (B, log 2)"),
                y=alt.Y("value:Q", scale=alt.Scale(type="log", base=2), title="bytes per cold L1 miss (log 2)"),
            )
            .properties(width=420, height=240)
        )
        described = (
            "Bytes per cold L1 miss against the chase's stride (both log 2): flat at the fill granularity below it, "
            "then the stride itself (every load misses)."
        )
        body += charts.svg(chart, described, "L1 stride chart")
    if not curves.empty:
        curves["carveout"] = curves["params"].map(lambda p: evidence.param(p, "carveout"))
        curves["series"] = [
            f"carveout {c}%, stride {s:g} B" for c, s in zip(curves["carveout"], curves["stride_b"], strict=True)
        ]
        chart = (
            alt.Chart(curves)
            .mark_line(point=True)
            .encode(
                x=alt.X(
                    "footprint_kb:Q",
                    scale=alt.Scale(type="log"),
                    axis=charts.kib_axis(curves["footprint_kb"], "footprint"),
                ),
                y=alt.Y("value:Q", title="latency (cycle per load)"),
                color=alt.Color("series:N", title="chase"),
            )
            .properties(width=600, height=280)
        )
        described = (
            f"Warmed chase latency against footprint (log) for {curves['series'].nunique()} chases (shared-memory "
            "carveout and stride): each leaves the L1-hit level at the L1's capacity."
        )
        body += charts.svg(chart, described, "L1 capacity per carveout and stride")
    note = markup.empty(
        "sector: the cold lap of a 4 KB chain, each load timed alone; a load over twice the L1-hit latency missed. "
        "capacity: the L1-hit level's last footprint, checked against the programming guide's carveouts. line: the "
        "capacity footprint stays the same up to the line size and grows with the stride past it. ways: lines at a "
        "stride of the L1's set span evict each other past the ways; where none does before the L1 fills, the lines "
        "it held bound the ways from below"
    )
    return body + note + _table(frames, L1)


def _l2(frames: dict[str, pd.DataFrame]) -> str:
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    data = evidence.points(frames.get("raw"), ["l2_bandwidth"], "bandwidth", ["footprint_mb"])
    figs = evidence.figures_of(frames, cases=L2)
    if data.empty and figs.empty:
        return markup.empty("no L2 measurements")
    chart = ""
    if not data.empty:
        chart = charts.svg(
            alt.Chart(data)
            .mark_line(point=True)
            .encode(
                x=alt.X("footprint_mb:Q", scale=alt.Scale(type="log", base=2), title="footprint (MB, log 2)"),
                y=alt.Y("value:Q", title="read bandwidth (GB/s)"),
            )
            .properties(width=600, height=260),
            "L2 read bandwidth (GB/s, every SM, ld.global.cg) against the footprint read over and over (log 2): the "
            "L2 level, then the fall to DRAM; a point at the cliff mixes launches of mostly hits and mostly misses.",
            "L2 bandwidth against footprint",
        )
    lines = _address_map(frames)
    note = markup.empty(
        "camping ratio: GB/s at an odd line stride over the power of two below it (lines of 128 B, 2 MB of data, "
        "L2-resident); persisting gain: GB/s with a 16 MiB persisting access-policy window over without, each pass "
        "streaming an L2's worth past the hot buffer. The near and far partitions' per-load latency is memory's "
        "chase_near_far (on the memory page): one answer per quantity"
    )
    return chart + lines + note + _table(frames, L2)


def _address_map(frames: dict[str, pd.DataFrame]) -> str:
    """Each line's median latency against its offset in the 64 KB window, one series per SM slot."""
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    raw = frames.get("raw")
    if raw is None or raw.empty:
        return ""
    loads = raw[(raw["case"] == "l2_address_map") & (raw["metric"] == "load_latency")]
    if loads.empty:
        return ""
    per = loads.groupby("params")["iterations"].transform("max").astype(int)
    data = loads.assign(
        offset=loads.groupby("params").cumcount() % per * 128,
        slot=loads["params"].map(lambda p: f"SM slot {evidence.param(p, 'sm_slot')}"),
    )
    data = data.groupby(["slot", "offset"], as_index=False)["value"].median()
    chart = (
        alt.Chart(data)
        .mark_point(filled=True, size=12)
        .encode(
            x=alt.X("offset:Q", title="byte offset of the line in the 64 KB window"),
            y=alt.Y("value:Q", title="L2 hit latency (cycle, median over launches)"),
            color=alt.Color("slot:N", title="timed from"),
        )
        .properties(width=600, height=220)
    )
    return charts.svg(
        chart,
        "Each of 512 consecutive 128 B lines' L2 hit latency (median over launches) against its offset, one series per "
        "SM slot: a line is near (low) or far (high) by the partition its address maps to.",
        "L2 partition of consecutive lines",
    )


def _caches(frames: dict[str, pd.DataFrame]) -> str:
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    raw = frames.get("raw")
    parts = [
        evidence.points(raw, ["const_footprint"], "latency", ["footprint_b"]).rename(columns={"footprint_b": "bytes"}),
        evidence.points(raw, ["nc_footprint", "tex_footprint"], "latency", ["footprint_kb"]),
    ]
    parts[1]["bytes"] = parts[1]["footprint_kb"] * 1024
    found = [p for p in parts if not p.empty]
    if not found:
        return markup.empty("no constant, read-only or texture measurements")
    data = pd.concat(found, ignore_index=True)
    data["path"] = data["case"].map(READS)
    chart = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("bytes:Q", scale=alt.Scale(type="log", base=2), title="footprint (B, log 2)"),
            y=alt.Y("value:Q", scale=alt.Scale(type="log", base=2), title="latency (cycle per load, log 2)"),
            color=alt.Color("path:N", title="load"),
        )
        .properties(width=600, height=280)
    )
    described = (
        "Warmed one-thread chase latency against footprint (both log 2) for ld.const (stride 64 B, up to the 64 KB of "
        "constant memory), ld.global.nc and tex1Dfetch (stride 128 B): each step up is a cache of that path running "
        "out, its size bracketed by the footprints either side."
    )
    note = markup.empty(
        "const_divergent: one warp's ld.const with 1 to 32 distinct addresses among its lanes (served once per "
        "address); cache_attributes: the device's constant memory and L2 fetch granularity limit"
    )
    return charts.svg(chart, described, "Constant, read-only and texture chase") + note + _table(frames, CACHES)


def _stores(frames: dict[str, pd.DataFrame]) -> str:
    found = evidence.figures_of(frames, cases=STORES + PREFETCH)
    if found.empty:
        return markup.empty("no store, prefetch or sector-promotion measurements")
    note = markup.empty(
        "reload_<op>: a 4 KB L1-resident chase storing to each line it reads with st.global.<op>; its L1 hit share "
        "places the next load of the line between an L1 hit (reload_none) and an L2 hit (prefetch_none, L2-resident "
        "chain). roundtrip_<op>: a store then a dependent load of the same word. prefetch_<op>: cycles per load with "
        "a prefetch 16 lines ahead. promote_<hint>: the DRAM bytes per load are the counter claims of cross-validation"
    )
    return note + evidence.figure_table(found)


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The TLB staircase, the L1's geometry and the L2's, the other caches and the store and prefetch operators, each
    with its figures."""
    return [
        ("TLB reach and miss penalty", _tlb(frames)),
        ("L1 sector, line, capacity and ways", _l1(frames)),
        ("L2 geometry", _l2(frames)),
        ("Constant, read-only and texture caches", _caches(frames)),
        ("Store cache operators, prefetch and L2 sector promotion", _stores(frames)),
    ]
