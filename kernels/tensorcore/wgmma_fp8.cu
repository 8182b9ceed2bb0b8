// wgmma (sm_90a), 8-bit float inputs: m64nNk32 e4m3 and e5m2 in each pairing, f32 or f16 accumulators, A from shared
// memory or registers, over N, warpgroups and wgmmas per commit group.
#include "wgmma.cuh"

SMD_WG_FORMAT(E4m3F32, SMD_WG_DENSE, 32, "f32.e4m3.e4m3", e4m3, e4m3, ", 1, 1", ", 1, 1", SMD_WG_F32);
SMD_WG_FORMAT(E4m3F16, SMD_WG_DENSE, 32, "f16.e4m3.e4m3", e4m3, e4m3, ", 1, 1", ", 1, 1", SMD_WG_F16);
SMD_WG_FORMAT(E5m2F32, SMD_WG_DENSE, 32, "f32.e5m2.e5m2", e5m2, e5m2, ", 1, 1", ", 1, 1", SMD_WG_F32);
SMD_WG_FORMAT(E4m3E5m2F32, SMD_WG_DENSE, 32, "f32.e4m3.e5m2", e4m3, e5m2, ", 1, 1", ", 1, 1", SMD_WG_F32);
SMD_WG_FORMAT(E5m2E4m3F32, SMD_WG_DENSE, 32, "f32.e5m2.e4m3", e5m2, e4m3, ", 1, 1", ", 1, 1", SMD_WG_F32);

SMD_WG_SET(E4m3F32Ss, E4m3F32, false)
SMD_WG_SET(E4m3F32Rs, E4m3F32, true)
SMD_WG_SET(E4m3F16Ss, E4m3F16, false)
SMD_WG_SET(E5m2F32Ss, E5m2F32, false)
SMD_WG_SET(E4m3E5m2F32Ss, E4m3E5m2F32, false)
SMD_WG_SET(E5m2E4m3F32Ss, E5m2E4m3F32, false)

int main(int argc, char** argv) {
  return smd::family_main(argc, argv,
                          {E4m3F32SsCase("wgmma_e4m3_f32_ss"), E4m3F32RsCase("wgmma_e4m3_f32_rs"),
                           E4m3F16SsCase("wgmma_e4m3_f16_ss"), E5m2F32SsCase("wgmma_e5m2_f32_ss"),
                           E4m3E5m2F32SsCase("wgmma_e4m3xe5m2_f32_ss"), E5m2E4m3F32SsCase("wgmma_e5m2xe4m3_f32_ss")});
}
