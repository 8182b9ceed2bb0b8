"""Figures the cluster category derives over several points: the cluster barrier's cost over cluster sizes and what its
release adds (barriers), the DSMEM remote hop and the peer and generic paths against the local ld.shared chase and
DSMEM over local bandwidth (dsmem), the SM-to-SM ping-pong summary (pingpong), the SM groups clusters form over all
launches (placement), and the chip's topology (topology)."""

from __future__ import annotations

from .. import samples as s
from .barriers import barriers
from .dsmem import dsmem
from .pingpong import pingpong, pingpong_by_gpc
from .placement import placement
from .topology import gpcs, neighbours, sm_total, tpcs

CATEGORY = "cluster"
METRICS = frozenset(
    {
        "generic_path",
        "gpc_locality",
        "gpcs",
        "groups_all_launches",
        "growth",
        "largest_group",
        "latency",
        "release_cost",
        "remote_hop",
        "round_trip",
        "round_trip_cross_gpc",
        "round_trip_group",
        "round_trip_pair",
        "round_trip_same_gpc",
        "same_gpc_next",
        "same_tpc_next",
        "sm_count",
        "sms_per_gpc_max",
        "sms_per_gpc_min",
        "tpcs",
        "vs_local",
    }
)  # every metric a figure of this deriver can have

# every derived figure of the category
figures = s.of_parts(barriers, dsmem, pingpong, placement, sm_total, gpcs, tpcs, neighbours, pingpong_by_gpc)
