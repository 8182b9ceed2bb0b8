"""Report view of the control category: the instruction-cache cliff chart (cycles per instruction against code
footprint) with its levels, and tables of what branches, divergence, predication and calls add to a dependent IMAD
chain and of what local memory and a forced spill cost. Every number is a row of the figures table
(smdissect.analysis.derived.control derives the costs and the levels); the chart is drawn from the samples."""

from __future__ import annotations

import pandas as pd

from smdissect.pages import charts, evidence, markup

CATEGORY = "control"

COLUMNS = ("figure", "value", "unit", "spread", "status", "reason")
BRANCH_CASES = (
    "branch_chain",
    "branch_uniform",
    "branch_divergence",
    "branch_predicated",
    "call_direct",
    "call_indirect",
)
SPILL_CASES = ("ldl_chase", "stl_ldl_round_trip", "spill_forced", "spill_free")


def _icache(frames: dict[str, pd.DataFrame]) -> str:
    import altair as alt  # the pages' machine has it; a GPU machine making tables may not

    data = evidence.points(frames.get("raw"), ["icache_footprint"], "cycles_per_instruction", ["footprint_kb", "warps"])
    figs = evidence.figures_of(frames, cases=("icache_footprint",))
    if data.empty and figs.empty:
        return markup.empty("no instruction-cache measurements")
    chart = ""
    if not data.empty:
        data = data.assign(warps=data["warps"].map(lambda w: f"{int(w)} warp{'s' * (w != 1)}"))
        chart = charts.svg(
            alt.Chart(data)
            .mark_line(point=True)
            .encode(
                x=alt.X("footprint_kb:Q", scale=alt.Scale(type="log", base=2),
                        axis=charts.kib_axis(data["footprint_kb"], "code footprint (KiB, log 2)")),
                y=alt.Y("value:Q", title="cycles per instruction per sub-partition"),
                color=alt.Color("warps:N", title="warps"),
            )
            .properties(width=560, height=280),
            "Cycles per straight-line FFMA issued per sub-partition against the loop body's code footprint (KiB, "
            f"16 B an instruction, log 2), one line per warp count ({', '.join(sorted(data['warps'].unique()))}): "
            "each cliff is a cache level the body no longer fits.",
            "Instruction cache: cycles per instruction over code footprint",
        )  # fmt: skip
    note = markup.empty(
        "a loop of N straight-line FFMAs on 8 independent registers (no loads), every pass fetching the whole body; "
        "a level is a run of footprints within 10% of each other, its capacity lies between its largest footprint "
        "and the next one"
    )
    return chart + note + evidence.figure_table(figs.sort_values("metric"), (*COLUMNS, "derivation"))


def _branches(frames: dict[str, pd.DataFrame]) -> str:
    figs = evidence.figures_of(frames, cases=BRANCH_CASES)
    if figs.empty:
        return markup.empty("no branch or call measurements")
    note = markup.empty(
        "one warp, cycles per step between n and 2n steps; a step is 8 dependent IMADs (branch_chain) with a branch or "
        "a call around it, and each cost is the step less the chain's. Which path a step takes, and whether the "
        "lanes split, is a kernel argument: each pair of figures runs the same SASS"
    )
    derived = figs[figs["kind"] == "derived"]
    measured = figs[figs["kind"] != "derived"]
    return (
        note
        + evidence.figure_table(derived, (*COLUMNS, "derivation"))
        + markup.fold("the measured steps", evidence.figure_table(measured, (*COLUMNS, "method")))
    )


def _spills(frames: dict[str, pd.DataFrame]) -> str:
    figs = evidence.figures_of(frames, cases=SPILL_CASES)
    if figs.empty:
        return markup.empty("no local-memory or spill measurements")
    note = markup.empty(
        "the local chase is memory's load_ca chase (4 KB in 128 B steps) in the local space: both are L1 hits; a "
        "forced spill is 64 independent FFMA accumulators under a 32-register limit against the same loop in "
        "registers"
    )
    return note + evidence.figure_table(figs, (*COLUMNS, "method"))


def sections(frames: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The control category's chart and tables, each saying so when its measurements are missing."""
    return [
        ("Instruction cache levels", _icache(frames)),
        ("Branches, divergence, predication and calls", _branches(frames)),
        ("Local memory and spills", _spills(frames)),
    ]
