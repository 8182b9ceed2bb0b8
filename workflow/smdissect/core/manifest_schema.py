"""The schema of a case manifest (kernels/<category>/cases.yaml): what a case, its family and its category's defaults
may say, and the header-only libraries a family may include."""

from __future__ import annotations

from typing import Any

from .archs import ARITHMETIC
from .features import FEATURES

# Header-only libraries a family may include: the pip package holding them and its include folders.
HEADER_PACKAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "cutlass": ("cutlass_library", ("source/include", "source/tools/util/include")),
}

CASE_REF = "^([a-z][a-z0-9_]*/)?[a-z][a-z0-9_]*$"  # a case of the same category, or <category>/<case>

# opcode (or 'A|B' alternatives) -> the count it must have: one bound or a list of them
EXPECT_BOUND = [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]
NULL = {"type": "null"}
EXPECT = {"type": "object", "additionalProperties": {"anyOf": EXPECT_BOUND}}
# A case's keys: what the merged entry (case over family defaults over category defaults) must satisfy.
CASE_PROPERTIES: dict[str, Any] = {
    "id": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"},
    # a .cu family, or a Python script speaking the same protocol (a library's own call, e.g. torch)
    "source": {"type": "string", "pattern": "^[a-z][a-z0-9_]*\\.(cu|py)$"},
    "kind": {"enum": ["chain", "timed"]},
    "ptx": {"type": "string"},
    "measures": {
        "type": "array",
        "items": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"},
        "minItems": 1,
    },
    "sweep": {
        "type": "object",
        "additionalProperties": {"type": "array", "items": {"type": "integer"}, "minItems": 1},
    },
    # what ncu profiles: one narrowing of the sweep, or a list of them (e.g. the latency point and
    # the throughput point, without the cross product of their axes)
    "profile_sweep": {
        "oneOf": [
            {"$ref": "#/$defs/narrowing"},
            {"type": "array", "items": {"$ref": "#/$defs/narrowing"}, "minItems": 1},
        ]
    },
    # why no counter checks the case's points that ncu does not profile (every point, in a family that is not
    # profiled): what no kernel counter can see there, or which profiled points check the same kernels instead
    "unprofiled": {"type": "string"},
    "requires": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "min_sm": {"type": "integer"},
            "features": {"type": "array", "items": {"enum": sorted(FEATURES)}},
        },
    },
    "sass": {
        "type": "object",
        "additionalProperties": False,
        "required": ["expect"],
        "properties": {
            "expect": EXPECT,
            "forbid": {"type": "array", "items": {"type": "string"}},
            # which loop one timed step repeats where the default rule (sass.timed_loop) is wrong
            "loop": {"enum": ["between", "around"]},
            # what the SASS is on other archs ("sm_80,sm_89": {why, expect, forbid}): `expect` sets the count of each
            # opcode it names there (null: none), `forbid` replaces the case's; `why` says what ptxas does differently
            "arch": {
                "type": "object",
                "propertyNames": {"pattern": "^sm_[0-9]+[af]?(,sm_[0-9]+[af]?)*$"},
                "additionalProperties": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["why"],
                    "properties": {
                        "why": {"type": "string"},
                        "expect": {"type": "object", "additionalProperties": {"anyOf": [*EXPECT_BOUND, NULL]}},
                        "forbid": {"type": "array", "items": {"type": "string"}},
                    },
                },
            },
        },
    },
    "pipe": {"type": "string", "pattern": "^[a-z0-9_]+(\\+[a-z0-9_]+)*$"},
    "stall": {"type": "string", "pattern": "^[a-z_]+$"},
    "tolerance": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
    "paper": {"type": "string"},
    "explain": {"type": "object", "additionalProperties": {"type": "string"}},
    # how the case's figures are measured, where published figures use another definition
    "method": {"type": "string"},
    # which figure each metric gives: its only point, its peak over the sweep, one per point, the
    # point where another metric peaks ({at: metric}), or none (a derived figure stands for it)
    "figures": {
        "type": "object",
        "additionalProperties": {
            "oneOf": [
                {"enum": ["point", "peak", "each", "none"]},
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["at"],
                    "properties": {"at": {"type": "string"}},
                },
            ]
        },
    },
    # axes along which a peak must have levelled off (the plateau check); chain cases: ilp, warps
    "saturate": {"type": "array", "items": {"type": "string"}},
    # the hardware peak that bounds the case's rates: pipe:<ncu pipe>, tensor:<format>, dram, smem
    "peak": {"type": "string", "pattern": "^(pipe:[a-z0-9_+]+|tensor:[a-z0-9]+|dram|smem)$"},
    # the documented throughput row of the instruction a pipe case times (archs.ARITHMETIC), where it is not its
    # pipe's full rate (IMAD: 'imad', half the fma pipe's FFMA rate on sm_90): its peak is judged against that row
    "rate": {"enum": sorted({row for column in ARITHMETIC.values() for row in column})},
    # cases whose latency this one cannot undercut (it is built from them): [case] or [category/case]
    "built_from": {"type": "array", "items": {"type": "string", "pattern": CASE_REF}},
    # cases running the same work: their figure of the same metric must agree within tolerance
    "same_as": {
        "type": "array",
        "items": {
            "type": "object",
            "additionalProperties": False,
            "required": ["case", "metric"],
            "properties": {
                "case": {"type": "string", "pattern": CASE_REF},
                "metric": {"type": "string"},
                "as": {"type": "string"},
                # compare with the other figure's SM clock (clock64 over %globaltimer) rather than its value
                "field": {"enum": ["value", "clock_mhz"]},
                # only the figure at this point of the case's sweep runs the other case's work
                "at": {"type": "object", "additionalProperties": {"type": "integer"}},
                # the other case counts `scale` x this one's unit (memory counts a copy's read + write: 2)
                "scale": {"type": "number", "exclusiveMinimum": 0},
                "why": {"type": "string"},
                "tolerance": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                # at_least: the other case is a second method that reaches part of the same ceiling (a library
                # GEMM under the instruction's peak): this figure must not fall below it
                "relation": {"enum": ["equal", "at_least"]},
            },
        },
    },
}
CASE_REQUIRED = ("id", "source", "ptx", "measures", "sweep", "sass")
INHERITED = tuple(k for k in CASE_PROPERTIES if k not in ("id", "source"))  # what defaults may set


def _nullable(keys: tuple[str, ...]) -> dict[str, Any]:
    """Case keys as given in a manifest: each its schema, or null to take back an inherited default."""
    return {k: {"anyOf": [NULL, CASE_PROPERTIES[k]]} for k in keys}


MANIFEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["category", "title", "cases"],
    "$defs": {
        "narrowing": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "integer"}, "minItems": 1},
        },
        # keys every case of the category (top level) or of one family takes unless it sets its own; a key
        # replaces the default whole (a case's sweep, sass or explain is never merged into the default's)
        "defaults": {"type": "object", "additionalProperties": False, "properties": _nullable(INHERITED)},
    },
    "properties": {
        "category": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"},
        "title": {"type": "string"},
        "metrics": {"type": "array", "items": {"type": "string", "pattern": "^[a-z0-9_]+__[a-z0-9_.]+$"}},
        # what each value of a coded axis means (ctas 0: one CTA per SM), shown on the category's page
        "values": {
            "type": "object",
            "propertyNames": {"pattern": "^[a-z][a-z0-9_]*$"},
            "additionalProperties": {
                "type": "object",
                "minProperties": 1,
                "propertyNames": {"pattern": "^-?[0-9]+$"},
                "additionalProperties": {"type": "string", "minLength": 1},
            },
        },
        # the category's key findings, in page order: a figure of the figures table as a reader calls it; `headline: N`
        # puts it N-th in the index's headline table
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["figure", "label"],
                "additionalProperties": False,
                "properties": {
                    "figure": {"type": "string", "minLength": 1},
                    "label": {"type": "string", "minLength": 1},
                    "headline": {"type": "integer", "minimum": 1},
                },
            },
        },
        "defaults": {"$ref": "#/$defs/defaults"},
        "families": {
            "type": "object",
            "propertyNames": {"pattern": "^[a-z][a-z0-9_]*$"},
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "flags": {"type": "array", "items": {"type": "string", "pattern": "^-[A-Za-z0-9_=.,+-]+$"}},
                    "link": {"type": "array", "items": {"enum": ["cuda", "nvidia-ml", "cublas"]}},
                    "include": {"type": "array", "items": {"enum": sorted(HEADER_PACKAGES)}},
                    "timeout": {"type": "integer", "minimum": 1, "maximum": 3600},
                    "profile": {"type": "boolean"},
                    # a .cu of kernels that controlcodes.prepare() compiles to a cubin and patches at build time
                    "patched": {"type": "string", "pattern": "^[a-z][a-z0-9_]*\\.cu$"},
                    "defaults": {"$ref": "#/$defs/defaults"},  # over the category's
                },
            },
        },
        "cases": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id", "source"],
                "properties": {k: CASE_PROPERTIES[k] for k in ("id", "source")} | _nullable(INHERITED),
            },
        },
    },
}
