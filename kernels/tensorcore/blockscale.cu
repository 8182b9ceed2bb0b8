// sm_120a tensor formats: mma.sync kind::f8f6f4 (fp8/fp6/fp4, mixed A/B) unscaled, and the block-scaled kinds
// mxf8f6f4 (ue8m0, 1X), mxf4 (ue8m0, 2X) and mxf4nvf4 (ue4m3, 4X). On other archs the kernels exist empty.
#include "ops.cuh"

#if defined(__CUDA_ARCH_FEAT_SM120_ALL) || defined(__CUDA_ARCH_FEAT_SM121_ALL)
constexpr bool kSm120 = true;
#else
constexpr bool kSm120 = false;
#endif

// Every byte (or nibble pair) a small finite value in each format; scales of 1.0: ue8m0 127, ue4m3 0x38.
constexpr uint32_t kNarrow = 0x22222222u, kUe8m0 = 0x7F7F7F7Fu, kUe4m3 = 0x38383838u;

#define SMD_F8F6F4(Name, A, B)                                                                                  \
  SMD_MMA424(Name, kSm120, "mma.sync.aligned.kind::f8f6f4.m16n8k32.row.col.f32." A "." B ".f32", SMD_UNSCALED, \
             0, kNarrow, kNarrow, true, 16, 8, 32, tensor, major == 12)
#define SMD_MXF8F6F4(Name, A, B)                                                                             \
  SMD_MMA424(Name, kSm120,                                                                                   \
             "mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32." A "." B        \
             ".f32.ue8m0",                                                                                   \
             SMD_SCALED, kUe8m0, kNarrow, kNarrow, true, 16, 8, 32, tensor, major == 12)

SMD_F8F6F4(KindE4m3, "e4m3", "e4m3");
SMD_F8F6F4(KindE5m2, "e5m2", "e5m2");
SMD_F8F6F4(KindE3m2, "e3m2", "e3m2");
SMD_F8F6F4(KindE2m3, "e2m3", "e2m3");
SMD_F8F6F4(KindE2m1, "e2m1", "e2m1");
SMD_F8F6F4(KindE4m3E2m1, "e4m3", "e2m1");
SMD_MXF8F6F4(MxE4m3, "e4m3", "e4m3");
SMD_MXF8F6F4(MxE4m3E5m2, "e4m3", "e5m2");
SMD_MXF8F6F4(MxE2m1, "e2m1", "e2m1");
SMD_MMA424(Mxf4, kSm120,
           "mma.sync.aligned.kind::mxf4.block_scale.scale_vec::2X.m16n8k64.row.col.f32.e2m1.e2m1.f32.ue8m0",
           SMD_SCALED, kUe8m0, kNarrow, kNarrow, true, 16, 8, 64, tensor, major == 12);
SMD_MMA424(Nvf4, kSm120,
           "mma.sync.aligned.kind::mxf4nvf4.block_scale.scale_vec::4X.m16n8k64.row.col.f32.e2m1.e2m1.f32.ue4m3",
           SMD_SCALED, kUe4m3, kNarrow, kNarrow, true, 16, 8, 64, tensor, major == 12);

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv,
      {tc::warp_case<KindE4m3>("f8f6f4_e4m3"), tc::warp_case<KindE5m2>("f8f6f4_e5m2"),
       tc::warp_case<KindE3m2>("f8f6f4_e3m2"), tc::warp_case<KindE2m3>("f8f6f4_e2m3"),
       tc::warp_case<KindE2m1>("f8f6f4_e2m1"), tc::warp_case<KindE4m3E2m1>("f8f6f4_e4m3_e2m1"),
       tc::warp_case<MxE4m3>("mxf8f6f4_e4m3"), tc::warp_case<MxE4m3E5m2>("mxf8f6f4_e4m3_e5m2"),
       tc::warp_case<MxE2m1>("mxf8f6f4_e2m1"), tc::warp_case<Mxf4>("mxf4_e2m1"), tc::warp_case<Nvf4>("mxf4nvf4_e2m1")});
}
