// wgmma (sm_90a), 16-bit and tf32 inputs: m64nNk16 f16 and bf16 (f32 or f16 accumulators) and m64nNk8 tf32, A from
// shared memory or registers, over N, warpgroups and wgmmas per commit group.
#include "wgmma.cuh"

SMD_WG_FORMAT(F16F32, SMD_WG_DENSE, 16, "f32.f16.f16", f16, f16, ", 1, 1, 0, 0", ", 1, 1, 0", SMD_WG_F32);
SMD_WG_FORMAT(F16F16, SMD_WG_DENSE, 16, "f16.f16.f16", f16, f16, ", 1, 1, 0, 0", ", 1, 1, 0", SMD_WG_F16);
SMD_WG_FORMAT(Bf16F32, SMD_WG_DENSE, 16, "f32.bf16.bf16", bf16, bf16, ", 1, 1, 0, 0", ", 1, 1, 0", SMD_WG_F32);
SMD_WG_FORMAT(Tf32F32, SMD_WG_DENSE, 8, "f32.tf32.tf32", tf32, tf32, ", 1, 1", ", 1, 1", SMD_WG_F32);  // K-major only

SMD_WG_SET(F16F32Ss, F16F32, false)
SMD_WG_SET(F16F32Rs, F16F32, true)
SMD_WG_SET(F16F16Ss, F16F16, false)
SMD_WG_SET(Bf16F32Ss, Bf16F32, false)
SMD_WG_SET(Tf32F32Ss, Tf32F32, false)
SMD_WG_SET(Tf32F32Rs, Tf32F32, true)

int main(int argc, char** argv) {
  return smd::family_main(argc, argv,
                          {F16F32SsCase("wgmma_f16_f32_ss"), F16F32RsCase("wgmma_f16_f32_rs"),
                           F16F16SsCase("wgmma_f16_f16_ss"), Bf16F32SsCase("wgmma_bf16_f32_ss"),
                           Tf32F32SsCase("wgmma_tf32_f32_ss"), Tf32F32RsCase("wgmma_tf32_f32_rs")});
}
