"""Arch features a case may require (a manifest's `requires`), with the SM versions that have them, and the
kernels' preprocessor tests of them (kernels/common/features.cuh)."""

from __future__ import annotations

# Each feature's SM versions, from the PTX ISA target notes.
BLACKWELL = {100, 101, 103, 110, 120, 121}
FEATURES: dict[str, set[int]] = {
    "wgmma": {90},
    "setmaxnreg": {90} | BLACKWELL,
    "cluster": {90} | BLACKWELL,
    "tma": {90} | BLACKWELL,
    # .multicast::cluster bulk tensor loads: sm_90a and datacenter Blackwell (ptxas 13.0 advises against sm_120a,
    # where it compiles to a syscall that emulates the multicast)
    "tma_multicast": {90, 100, 101, 103, 110},
    "fp4": BLACKWELL,
    "cvt_narrow": BLACKWELL,  # cvt to e2m1x2 / e2m3x2 / e3m2x2 / ue8m0x2
    "mma_block_scale": {120, 121},  # mma.sync .kind::mxf8f6f4 / mxf4 / mxf4nvf4 with scale factors
    "f8f6f4": {120, 121},  # mma.sync .kind::f8f6f4
    # tcgen05 (Tensor Memory, tcgen05.mma/.cp/.ld/.st): sm_100a, sm_103a, sm_110a (sm_101a before PTX ISA 9.0); its
    # .kind::i8 not on sm_103a (PTX ISA 9.1, tcgen05.mma target notes)
    "tcgen05": {100, 101, 103, 110},
    "tcgen05_i8": {100, 101, 110},
    "clc": {100, 101, 103, 110, 120, 121},  # cluster launch control
    # Older instructions the newest ones keep: (sm_89) mma.sync and cvt with e4m3/e5m2; (sm_90) elect.sync,
    # griddepcontrol (programmatic dependent launch), stmatrix, add/sub/mul/min/max of .bf16x2.
    "fp8": {89, 90} | BLACKWELL,
    "elect": {90} | BLACKWELL,
    "pdl": {90} | BLACKWELL,
    "stmatrix": {90} | BLACKWELL,
    "bf16x2_arith": {90} | BLACKWELL,
    # mma.sync .f64 m16n8k4 / k8 / k16 (PTX ISA: sm_90 or higher; ptxas 13.0: one DMMA.16x8xK on sm_90a, 2 x K/4
    # DMMA.8x8x4 on sm_100a and sm_120a)
    "f64_mma_m16": {90} | BLACKWELL,
}
FEATURES_HEADER = "kernels/common/features.cuh"  # FEATURES as preprocessor tests for the kernels (features_header)


def features_header() -> str:
    """FEATURES as the kernels' preprocessor tests: `#if SMD_HAS(tma)` keeps a body on an arch with the feature
    and compiles it out elsewhere (the case is a static row there); the host pass sees every body."""
    lines = [
        "// Generated from FEATURES in workflow/smdissect/core/features.py by `smdissect features`: do not edit.",
        "// SMD_HAS(feature) is 1 where the arch being compiled has the feature, and in the host pass.",
        "#pragma once",
        "#if defined(__CUDA_ARCH__)",
        "#define SMD_SM (__CUDA_ARCH__ / 10)",
    ]
    for name, sms in sorted(FEATURES.items()):
        lines.append(f"#define SMD_HAS_{name} ({' || '.join(f'SMD_SM == {sm}' for sm in sorted(sms))})")
    lines += [
        "#else",
        *(f"#define SMD_HAS_{name} 1" for name in sorted(FEATURES)),
        "#endif",
        "#define SMD_HAS(feature) SMD_HAS_##feature",
    ]
    return "\n".join(lines) + "\n"
