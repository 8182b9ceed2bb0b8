"""The control codes: the patched cubins' outcomes (the smallest safe stall count and what each stall costs, the
inverted yield flag, the cleared .reuse flags) and, where the table is given, the stall counts the compiler encodes on
the chain kernels."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from ....core.tables import point_text
from ...figure_model import Figure
from ..sweeps import derived, method_of, num, param, ratio_spread, robust, series, slope

CHAIN_MIN = 64  # a kernel whose most common opcode appears this often holds a dependent chain


def safe_stall(wrong: Mapping[int, float]) -> int | None:
    """The smallest patched stall count from which every larger one gives no wrong result (None: none does)."""
    safe = None
    for k in sorted(wrong, reverse=True):
        if wrong[k] > 0:
            break
        safe = k
    return safe


def stall_figures(raw: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """The smallest stall count the FFMA chain survives and the cycles each stall count costs above it."""
    wrong = {int(param(p, "stall")): v for p, v in series(raw, "stall_patch", "wrong_results").items()}
    cycles = {int(param(p, "stall")): v for p, v in series(raw, "stall_patch", "cycles_per_ffma").items()}
    points = list(series(raw, "stall_patch", "wrong_results"))
    method = method_of(generic, "stall_patch")
    k, spread = robust(safe_stall, wrong) if wrong else (None, 0.0)
    if k is None:
        return []
    listed = ", ".join(f"{s}: {num(np.median(v))}" for s, v in sorted(wrong.items()))
    out = [
        derived(
            "stall_patch",
            "safe_stall",
            "cycle",
            "stall_patch smallest safe stall count",
            k,
            spread,
            sum(len(v) for v in wrong.values()),
            f"smallest stall count of the chain FFMAs "
            f"from which no thread of 4 warps gets a wrong result; wrong threads by stall count: "
            f"{listed}",
            points,
            method=method,
        )
    ]
    above = {s: v for s, v in cycles.items() if s >= k}
    fit, fit_spread = robust(lambda m: slope(m.keys(), m.values()), above)
    if fit is not None:
        out.append(
            derived(
                "stall_patch",
                "stall_slope",
                "cycle",
                "stall_patch cycles per stall count",
                fit,
                fit_spread,
                sum(len(v) for v in above.values()),
                "least-squares slope of cycles per "
                f"FFMA over the safe stall counts ({', '.join(str(s) for s in sorted(above))}): "
                "what each stall cycle the compiler encodes costs the chain",
                points,
                method=method,
            )
        )
    return out


def yield_figures(raw: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """Per warp count, the cycles with the chain FFMAs' yield flag inverted over the compiler's; the most wrong
    results."""
    yielded = method_of(generic, "yield_patch")
    out = flagged_ratios(
        raw,
        "yield_patch",
        ("flipped", "cycles_per_iteration", "yield_ratio", "inverted yield"),
        lambda flipped, base: (
            f"cycles per iteration with the chain FFMAs' yield flag inverted / with the compiler's: {flipped} / {base}"
        ),
        yielded,
    )
    wrong = most_wrong(
        raw,
        "yield_patch",
        "thread",
        lambda worst: (
            f"most threads with a wrong result in any launch over every warp count and yield flag (at "
            f"{worst}): the yield flag does not guard the chain's results"
        ),
        yielded,
    )
    return out + ([wrong] if wrong else [])


def reuse_figures(raw: pd.DataFrame, generic: list[Figure]) -> list[Figure]:
    """Per warp count: the FFMA rate with the .reuse flags cleared over the compiler's; the most wrong results."""
    method = method_of(generic, "reuse_patch")
    out = flagged_ratios(
        raw,
        "reuse_patch",
        ("cleared", "throughput", "reuse_ratio", "cleared reuse"),
        lambda cleared, base: (
            f"FFMA rate with every FFMA's .reuse flags cleared / with the compiler's: {cleared} / "
            f"{base} warp_inst/cycle/SM (below 1: what the reuse cache saves the register file)"
        ),
        method,
    )
    wrong = most_wrong(
        raw,
        "reuse_patch",
        "chain",
        lambda _: (
            "most chains with a wrong result in any launch, with and without the .reuse flags (0: the flags "
            "only say where an operand may be read again, never what it holds)"
        ),
        method,
    )
    return out + ([wrong] if wrong else [])


def flagged_ratios(
    raw: pd.DataFrame,
    case: str,
    what: tuple[str, str, str, str],
    describe: Callable[[str, str], str],
    method: str,
) -> list[Figure]:
    """Per warp count, a patched cubin's `metric` over the compiler's: `what` is (the axis whose 1 is the patched
    cubin, the metric, the ratio's metric, its name); `describe` words the derivation from the two medians."""
    axis, metric, ratio, label = what
    values = series(raw, case, metric)
    by = {(int(param(p, "warps")), int(param(p, axis))): (p, v) for p, v in values.items()}
    out = []
    for warps in sorted({w for w, _ in by}):
        if (warps, 0) not in by or (warps, 1) not in by:
            continue
        (p0, base), (p1, patched) = by[(warps, 0)], by[(warps, 1)]
        out.append(
            derived(
                case,
                ratio,
                "x",
                f"{case} {label} at warps={warps}",
                np.median(patched) / np.median(base),
                ratio_spread(patched, base),
                len(base) + len(patched),
                describe(num(np.median(patched)), num(np.median(base))),
                (p0, p1),
                params=p1,
                method=method,
            )
        )
    return out


def most_wrong(raw: pd.DataFrame, case: str, unit: str, describe: Callable[[str], str], method: str) -> Figure | None:
    """The most wrong results of a patched case's launches (its worst point worded by `describe`), None unrecorded."""
    bad = series(raw, case, "wrong_results")
    if not bad:
        return None
    pooled = np.concatenate(list(bad.values()))
    worst = max(bad, key=lambda p: float(np.max(bad[p])))
    return derived(
        case,
        "wrong_results",
        unit,
        f"{case} wrong results",
        float(np.max(pooled)),
        float(np.ptp(pooled)),
        len(pooled),
        describe(point_text(worst)),
        bad.keys(),
        method=method,
    )


def chain_stalls(codes: pd.DataFrame) -> pd.DataFrame:
    """Per kernel holding a chain (per arch, where the table has several): its most common opcode, how often, and the
    mode of that opcode's stall count."""
    keys = ["arch", "kernel"] if "arch" in codes.columns else ["kernel"]
    rows = []
    for key, group in codes.groupby(keys):
        opcode, count = group["opcode"].value_counts().index[0], int(group["opcode"].value_counts().iloc[0])
        if count < CHAIN_MIN:
            continue
        ops = group[group["opcode"] == opcode]
        rows.append(
            dict(zip(keys, key, strict=True))
            | {
                "opcode": opcode,
                "count": count,
                "stall": int(ops["stall"].mode().iloc[0]),
                "yield_share": float(ops["yield_"].mean()),
            }
        )
    return pd.DataFrame(rows, columns=[*keys, "opcode", "count", "stall", "yield_share"])


def control_code_figures(frames: dict[str, pd.DataFrame], generic: list[Figure]) -> list[Figure]:
    """Per chain kernel of a case (named by the SASS checks): the stall count the compiler encodes on its chain
    opcode. Only where the figures stage is given the controlcodes table."""
    codes, checks = frames.get("controlcodes"), frames.get("sass_checks")
    if codes is None or codes.empty or checks is None or checks.empty:
        return []
    owners = checks.drop_duplicates("kernel").set_index("kernel")
    arch = str(checks["arch"].iloc[0]) if "arch" in checks.columns else ""
    if arch and "arch" in codes.columns:
        codes = codes[codes["arch"] == arch]
    out = []
    for r in chain_stalls(codes).itertuples(index=False):
        if r.kernel not in owners.index:
            continue
        case, at = str(owners.loc[r.kernel, "case"]), str(owners.loc[r.kernel, "params"])
        out.append(
            derived(
                case,
                "compiler_stall",
                "cycle",
                f"{r.kernel} compiler stall count",
                r.stall,
                0.0,
                r.count,
                f"the most common stall count ptxas encodes on the {r.count} {r.opcode} of {r.kernel} "
                f"(static: the SASS control codes; yield flag on {r.yield_share:.0%} of them)",
                (at,),
                params=at,
                method=method_of(generic, case),
            )
        )
    return out
