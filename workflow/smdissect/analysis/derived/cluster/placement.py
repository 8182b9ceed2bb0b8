"""The SM groups clusters form over all launches of cluster_placement, per cluster size: how many and the largest."""

from __future__ import annotations

import pandas as pd

from ...figure_model import Figure
from .sizes import MIN_CLUSTER, by_size


def sm_groups(raw: pd.DataFrame, params: str) -> dict[int, list[int]]:
    """SM groups of one placement point from its group_of_sm record (sample i: SM i's group, -1 for unused)."""
    rows = raw[(raw["case"] == "cluster_placement") & (raw["params"] == params) & (raw["metric"] == "group_of_sm")]
    out: dict[int, list[int]] = {}
    for sm, group in zip(rows["repeat"], rows["value"], strict=True):
        if group >= 0:
            out.setdefault(int(group), []).append(int(sm))
    return out


def placement(raw: pd.DataFrame, methods: dict[str, str]) -> list[Figure]:
    """Per cluster size >= 2: the SM groups sharing a cluster formed over all launches, and the largest one."""
    out = []
    method = methods.get("cluster_placement", "")
    for n, (params, _) in by_size(raw, "cluster_placement", "group_of_sm").items():
        found = sm_groups(raw, params)
        if n < MIN_CLUSTER or not found:
            continue
        sizes = [len(v) for v in found.values()]
        base = {
            "case": "cluster_placement",
            "kind": "derived",
            "spread": 0.0,
            "samples": int(sum(sizes)),
            "params": params,
            "points": (params,),
            "method": method,
        }
        out += [
            Figure(
                metric="groups_all_launches",
                unit="group",
                name=f"cluster_placement SM groups over all launches at cluster={n}",
                value=float(len(found)),
                derivation="SMs linked by sharing a "
                f"cluster in any launch (group_of_sm), counted once: {sum(sizes)} SMs used",
                **base,
            ),
            Figure(
                metric="largest_group",
                unit="sm",
                name=f"cluster_placement largest SM group at cluster={n}",
                value=float(max(sizes)),
                derivation=f"SMs of the largest group (smallest: {min(sizes)}); a "
                "cluster never leaves its GPC, so a group lies within one GPC",
                **base,
            ),
        ]
    return out
