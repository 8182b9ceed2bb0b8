// wgmma (sm_90a), integer inputs: m64nNk32 s8/u8 (each pairing) and m64nNk256 b1 (AND + POPC) into s32, A from
// shared memory or registers, over N, warpgroups and wgmmas per commit group.
#include "wgmma.cuh"

SMD_WG_FORMAT(S8S32, SMD_WG_DENSE, 32, "s32.s8.s8", s8, s8, "", "", SMD_WG_S32);
SMD_WG_FORMAT(U8S32, SMD_WG_DENSE, 32, "s32.u8.u8", u8, u8, "", "", SMD_WG_S32);
SMD_WG_FORMAT(S8U8S32, SMD_WG_DENSE, 32, "s32.s8.u8", s8, u8, "", "", SMD_WG_S32);
SMD_WG_FORMAT(B1S32, SMD_WG_DENSE, 256, "s32.b1.b1.and.popc", b1, b1, "", "", SMD_WG_S32);

SMD_WG_SET(S8S32Ss, S8S32, false)
SMD_WG_SET(S8S32Rs, S8S32, true)
SMD_WG_SET(U8S32Ss, U8S32, false)
SMD_WG_SET(S8U8S32Ss, S8U8S32, false)
SMD_WG_SET(B1S32Ss, B1S32, false)

int main(int argc, char** argv) {
  return smd::family_main(argc, argv,
                          {S8S32SsCase("wgmma_s8_s32_ss"), S8S32RsCase("wgmma_s8_s32_rs"),
                           U8S32SsCase("wgmma_u8_s32_ss"), S8U8S32SsCase("wgmma_s8xu8_s32_ss"),
                           B1S32SsCase("wgmma_b1_s32_ss")});
}
