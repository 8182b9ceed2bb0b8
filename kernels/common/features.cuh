// Generated from FEATURES in workflow/smdissect/core/features.py by `smdissect features`: do not edit.
// SMD_HAS(feature) is 1 where the arch being compiled has the feature, and in the host pass.
#pragma once
#if defined(__CUDA_ARCH__)
#define SMD_SM (__CUDA_ARCH__ / 10)
#define SMD_HAS_bf16x2_arith (SMD_SM == 90 || SMD_SM == 100 || SMD_SM == 101 || SMD_SM == 103 || SMD_SM == 110 || SMD_SM == 120 || SMD_SM == 121)
#define SMD_HAS_clc (SMD_SM == 100 || SMD_SM == 101 || SMD_SM == 103 || SMD_SM == 110 || SMD_SM == 120 || SMD_SM == 121)
#define SMD_HAS_cluster (SMD_SM == 90 || SMD_SM == 100 || SMD_SM == 101 || SMD_SM == 103 || SMD_SM == 110 || SMD_SM == 120 || SMD_SM == 121)
#define SMD_HAS_cvt_narrow (SMD_SM == 100 || SMD_SM == 101 || SMD_SM == 103 || SMD_SM == 110 || SMD_SM == 120 || SMD_SM == 121)
#define SMD_HAS_elect (SMD_SM == 90 || SMD_SM == 100 || SMD_SM == 101 || SMD_SM == 103 || SMD_SM == 110 || SMD_SM == 120 || SMD_SM == 121)
#define SMD_HAS_f64_mma_m16 (SMD_SM == 90 || SMD_SM == 100 || SMD_SM == 101 || SMD_SM == 103 || SMD_SM == 110 || SMD_SM == 120 || SMD_SM == 121)
#define SMD_HAS_f8f6f4 (SMD_SM == 120 || SMD_SM == 121)
#define SMD_HAS_fp4 (SMD_SM == 100 || SMD_SM == 101 || SMD_SM == 103 || SMD_SM == 110 || SMD_SM == 120 || SMD_SM == 121)
#define SMD_HAS_fp8 (SMD_SM == 89 || SMD_SM == 90 || SMD_SM == 100 || SMD_SM == 101 || SMD_SM == 103 || SMD_SM == 110 || SMD_SM == 120 || SMD_SM == 121)
#define SMD_HAS_mma_block_scale (SMD_SM == 120 || SMD_SM == 121)
#define SMD_HAS_pdl (SMD_SM == 90 || SMD_SM == 100 || SMD_SM == 101 || SMD_SM == 103 || SMD_SM == 110 || SMD_SM == 120 || SMD_SM == 121)
#define SMD_HAS_setmaxnreg (SMD_SM == 90 || SMD_SM == 100 || SMD_SM == 101 || SMD_SM == 103 || SMD_SM == 110 || SMD_SM == 120 || SMD_SM == 121)
#define SMD_HAS_stmatrix (SMD_SM == 90 || SMD_SM == 100 || SMD_SM == 101 || SMD_SM == 103 || SMD_SM == 110 || SMD_SM == 120 || SMD_SM == 121)
#define SMD_HAS_tcgen05 (SMD_SM == 100 || SMD_SM == 101 || SMD_SM == 103 || SMD_SM == 110)
#define SMD_HAS_tcgen05_i8 (SMD_SM == 100 || SMD_SM == 101 || SMD_SM == 110)
#define SMD_HAS_tma (SMD_SM == 90 || SMD_SM == 100 || SMD_SM == 101 || SMD_SM == 103 || SMD_SM == 110 || SMD_SM == 120 || SMD_SM == 121)
#define SMD_HAS_tma_multicast (SMD_SM == 90 || SMD_SM == 100 || SMD_SM == 101 || SMD_SM == 103 || SMD_SM == 110)
#define SMD_HAS_wgmma (SMD_SM == 90)
#else
#define SMD_HAS_bf16x2_arith 1
#define SMD_HAS_clc 1
#define SMD_HAS_cluster 1
#define SMD_HAS_cvt_narrow 1
#define SMD_HAS_elect 1
#define SMD_HAS_f64_mma_m16 1
#define SMD_HAS_f8f6f4 1
#define SMD_HAS_fp4 1
#define SMD_HAS_fp8 1
#define SMD_HAS_mma_block_scale 1
#define SMD_HAS_pdl 1
#define SMD_HAS_setmaxnreg 1
#define SMD_HAS_stmatrix 1
#define SMD_HAS_tcgen05 1
#define SMD_HAS_tcgen05_i8 1
#define SMD_HAS_tma 1
#define SMD_HAS_tma_multicast 1
#define SMD_HAS_wgmma 1
#endif
#define SMD_HAS(feature) SMD_HAS_##feature
