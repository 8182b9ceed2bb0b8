// wgmma.sp (sm_90a), 2:4 structured sparsity (tf32: 1:2): A compressed to half its K, metadata in a register,
// B dense; m64nNk32 f16, m64nNk16 tf32, m64nNk64 e4m3 and s8, over N, warpgroups and wgmmas per commit group.
#include "wgmma.cuh"

SMD_WG_FORMAT(SpF16F32, SMD_WG_SPARSE, 32, "f32.f16.f16", f16, f16, ", 1, 1, 0, 0", ", 1, 1, 0", SMD_WG_F32);
SMD_WG_FORMAT(SpTf32F32, SMD_WG_SPARSE, 16, "f32.tf32.tf32", tf32, tf32, ", 1, 1", ", 1, 1", SMD_WG_F32);
SMD_WG_FORMAT(SpE4m3F32, SMD_WG_SPARSE, 64, "f32.e4m3.e4m3", e4m3, e4m3, ", 1, 1", ", 1, 1", SMD_WG_F32);
SMD_WG_FORMAT(SpS8S32, SMD_WG_SPARSE, 64, "s32.s8.s8", s8, s8, "", "", SMD_WG_S32);

SMD_WG_SET(SpF16F32Ss, SpF16F32, false)
SMD_WG_SET(SpF16F32Rs, SpF16F32, true)
SMD_WG_SET(SpTf32F32Ss, SpTf32F32, false)
SMD_WG_SET(SpE4m3F32Ss, SpE4m3F32, false)
SMD_WG_SET(SpS8S32Ss, SpS8S32, false)

int main(int argc, char** argv) {
  return smd::family_main(argc, argv,
                          {SpF16F32SsCase("wgmma_sp_f16_f32_ss"), SpF16F32RsCase("wgmma_sp_f16_f32_rs"),
                           SpTf32F32SsCase("wgmma_sp_tf32_f32_ss"), SpE4m3F32SsCase("wgmma_sp_e4m3_f32_ss"),
                           SpS8S32SsCase("wgmma_sp_s8_s32_ss")});
}
