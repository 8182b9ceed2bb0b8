// mma.sync latency and throughput for every format both sm_90a and sm_120a accept, and 2:4 sparse mma.sp.
#include <cuda_fp16.h>

#include "ops.cuh"

// Bit patterns of small values: f16 2^-7, bf16 2^-7, tf32 2^-7, e4m3 2^-3, e5m2 2^-7, s8/u8 1, s4 1, b1 0x55.
constexpr uint32_t kBf16 = 0x3C003C00u, kTf32 = 0x3C000000u, kE4m3 = 0x20202020u,
                   kE5m2 = 0x20202020u, kI8 = 0x01010101u, kI4 = 0x11111111u, kB1 = 0x55555555u;

// m16n8k16 f16 x f16 -> f16: a 2-register accumulator of packed halves.
struct F16F16 : Mma424<kF16, kF16, false> {
  static constexpr const char* name = "F16F16";
  static constexpr bool kInteger = false;  // packed-half accumulators, not s32: FLOP (Mma424's rule is for s32)
  using Acc = tc::Frag<uint32_t, 2>;
  static constexpr double flop = 2.0 * 16 * 8 * 16;
  static constexpr tc::Counter counter = tc::Counter::hmma;
  static int insts(int) { return 1; }
  __device__ static void init(Acc& c, float seed, int chain) {
    for (auto& v : c.v) v = __half_as_ushort(__float2half(seed * (chain + 1))) * 0x10001u;
  }
  static bool valid(const Acc& c) { return tc::finite_f16x2(c.v[0]) && tc::finite_f16x2(c.v[1]); }
  __device__ static void step(Acc& d, const Ctx& x) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};"
                 : "+r"(d.v[0]), "+r"(d.v[1])
                 : "r"(x.a[0]), "r"(x.a[1]), "r"(x.a[2]), "r"(x.a[3]), "r"(x.b[0]), "r"(x.b[1]));
  }
};

// m8n8k4 f64 (DMMA): one f64 of A and of B, two f64 accumulators per thread.
struct F64F64 {
  static constexpr const char* name = "F64F64";
  using Acc = tc::Frag<double, 2>;
  struct Ctx {
    double a, b;
  };
  static constexpr int kThreads = 32, kMaxThreads = 512, kBody = 32, kPerStep = 1;
  static constexpr double flop = 2.0 * 8 * 8 * 4;
  static constexpr tc::Counter counter = tc::Counter::dmma;
  static int insts(int major) { return major == 9 ? 1 : 0; }
  __device__ static Ctx setup(float) { return {1.0 / 128, 1.0 / 128}; }
  __device__ static void init(Acc& c, float seed, int chain) { c.v[0] = c.v[1] = double(seed) * (chain + 1); }
  static bool valid(const Acc& c) { return std::isfinite(c.v[0]) && std::isfinite(c.v[1]); }
  __device__ static void step(Acc& d, const Ctx& x) {
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
                 : "+d"(d.v[0]), "+d"(d.v[1])
                 : "d"(x.a), "d"(x.b));
  }
};

// m16n8kK f64 (sm_90 on): K/2 f64 of A and K/4 of B per thread, four f64 accumulators (PTX ISA, mma .f64).
template <int K>
struct F64M16 {
  static_assert(K == 4 || K == 8 || K == 16, "mma.sync .f64 m16n8k has K = 4, 8 or 16");
  using Acc = tc::Frag<double, 4>;
  struct Ctx {
    double a[K / 2], b[K / 4];
  };
  // K = 16 at ILP 8 holds 8 x 4 accumulators and 12 operands (f64: 88 registers and more): 8 warps at most, so
  // ptxas may give a thread 255 registers and spills nothing
  static constexpr int kThreads = 32, kMaxThreads = K == 16 ? 256 : 512, kBody = 32, kPerStep = 1;
  static constexpr double flop = 2.0 * 16 * 8 * K;
  static constexpr tc::Counter counter = tc::Counter::dmma;
  static int insts(int major) { return major == 9 ? 1 : 0; }
  __device__ static Ctx setup(float) {
    Ctx x;
    for (auto& v : x.a) v = 1.0 / 128;
    for (auto& v : x.b) v = 1.0 / 128;
    return x;
  }
  __device__ static void init(Acc& c, float seed, int chain) {
    for (auto& v : c.v) v = double(seed) * (chain + 1);
  }
  static bool valid(const Acc& c) {
    return std::isfinite(c.v[0]) && std::isfinite(c.v[1]) && std::isfinite(c.v[2]) && std::isfinite(c.v[3]);
  }
  __device__ static void step(Acc& d, const Ctx& x) {
#if SMD_HAS(f64_mma_m16)  // sm_90 on: before it the PTX ISA has only m8n8k4 for f64 (the cases require it)
    if constexpr (K == 4)
      asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
                   : "+d"(d.v[0]), "+d"(d.v[1]), "+d"(d.v[2]), "+d"(d.v[3])
                   : "d"(x.a[0]), "d"(x.a[1]), "d"(x.b[0]));
    else if constexpr (K == 8)
      asm volatile(
          "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
          : "+d"(d.v[0]), "+d"(d.v[1]), "+d"(d.v[2]), "+d"(d.v[3])
          : "d"(x.a[0]), "d"(x.a[1]), "d"(x.a[2]), "d"(x.a[3]), "d"(x.b[0]), "d"(x.b[1]));
    else
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, "
          "{%12,%13,%14,%15}, {%0,%1,%2,%3};"
          : "+d"(d.v[0]), "+d"(d.v[1]), "+d"(d.v[2]), "+d"(d.v[3])
          : "d"(x.a[0]), "d"(x.a[1]), "d"(x.a[2]), "d"(x.a[3]), "d"(x.a[4]), "d"(x.a[5]), "d"(x.a[6]), "d"(x.a[7]),
            "d"(x.b[0]), "d"(x.b[1]), "d"(x.b[2]), "d"(x.b[3]));
#endif
  }
};

TC_NAMED(F64K4, F64M16<4>);
TC_NAMED(F64K8, F64M16<8>);
TC_NAMED(F64K16, F64M16<16>);

// 2:4 sparse m16n8k32 f16 -> f32 with ordered metadata 0x4 per group (indices 0 < 1); FLOP counted dense.
struct SpF16F32 : Mma424<kF16, kF16, true> {
  static constexpr const char* name = "SpF16F32";
  static constexpr double flop = 2.0 * 16 * 8 * 32;
  static constexpr tc::Counter counter = tc::Counter::hmma;
  static int insts(int) { return 1; }
  __device__ static void step(Acc& d, const Ctx& x) {
    asm volatile(
        "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9,%8,%9}, {%0,%1,%2,%3}, %10, 0x0;"
        : "+r"(d.v[0]), "+r"(d.v[1]), "+r"(d.v[2]), "+r"(d.v[3])
        : "r"(x.a[0]), "r"(x.a[1]), "r"(x.a[2]), "r"(x.a[3]), "r"(x.b[0]), "r"(x.b[1]), "r"(0x44444444u));
  }
};

SMD_MMA424(Bf16F32, true, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
           SMD_UNSCALED, 0, kBf16, kBf16, true, 16, 8, 16, hmma, 1);
SMD_MMA424(Tf32F32, true, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
           SMD_UNSCALED, 0, kTf32, kTf32, true, 16, 8, 8, hmma, 1);
// m16n8k32 fp8 -> f32. sm_120a runs it as one QMMA. sm_90a has no fp8 mma.sync: ptxas emulates each one with
// F2FP converts of A and B to f16, two HMMA.16816 on the converted halves and an FADD per accumulator register;
// with A and B constant it hoisted the converts and HMMAs out of the timed loop and left 4 FADDs per step. There
// the step therefore feeds each A register from one accumulator register through a LOP3 with a run-time zero
// (`zero`, from the seed's sign: ptxas cannot fold it), so every mma converts A, multiplies and accumulates inside
// the chain (B stays constant: its converts are hoisted, as a GEMM reusing a B fragment would); sm_120a keeps the
// constant operands of the other formats.
template <uint32_t BITS, bool E4M3>
struct Fp8F32 : Mma424<BITS, BITS, true> {
  using Acc = typename Mma424<BITS, BITS, true>::Acc;
  struct Ctx {
    uint32_t a[4], b[2], zero;
  };
  static constexpr double flop = 2.0 * 16 * 8 * 32;
  static constexpr tc::Counter counter = tc::Counter::tensor;
  static int insts(int major) { return major == 12 ? 1 : major == 9 ? 2 : 0; }  // sm_90: the emulation's 2 HMMA
  __device__ static Ctx setup(float seed) {
    return {{BITS, BITS, BITS, BITS}, {BITS, BITS}, __float_as_uint(seed) >> 31};
  }
  __device__ static void step(Acc& d, const Ctx& x) {
    uint32_t a[4] = {x.a[0], x.a[1], x.a[2], x.a[3]};
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && __CUDA_ARCH__ < 1200  // emulated there: sm_90, sm_10x
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] |= d.v[i] & x.zero;  // a LOP3 each; x.zero is 0 at run time: A keeps its value
#endif
#if SMD_HAS(fp8)  // sm_89: before it there is no FP8 mma.sync (the cases require fp8)
    if constexpr (E4M3)
      asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                   "{%0,%1,%2,%3};"
                   : "+r"(d.v[0]), "+r"(d.v[1]), "+r"(d.v[2]), "+r"(d.v[3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(x.b[0]), "r"(x.b[1]));
    else
      asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                   "{%0,%1,%2,%3};"
                   : "+r"(d.v[0]), "+r"(d.v[1]), "+r"(d.v[2]), "+r"(d.v[3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(x.b[0]), "r"(x.b[1]));
#endif
  }
};
struct E4m3F32 : Fp8F32<kE4m3, true> {
  static constexpr const char* name = "E4m3F32";
};
struct E5m2F32 : Fp8F32<kE5m2, false> {
  static constexpr const char* name = "E5m2F32";
};
SMD_MMA424(S8S32, true, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
           SMD_UNSCALED, 0, kI8, kI8, false, 16, 8, 32, imma, 1);
SMD_MMA424(U8S32, true, "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32",
           SMD_UNSCALED, 0, kI8, kI8, false, 16, 8, 32, imma, 1);
SMD_MMA424(S4S32, true, "mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32",
           SMD_UNSCALED, 0, kI4, kI4, false, 16, 8, 64, imma, 2);
SMD_MMA424(B1S32, true, "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc",
           SMD_UNSCALED, 0, kB1, kB1, false, 16, 8, 256, tensor, major == 9 ? 1 : 8);
// Integer formats count OP and TOPS, the rest FLOP and TFLOPS (the unit of their records).
static_assert(tc::Integer<S8S32>::value && tc::Integer<U8S32>::value && tc::Integer<S4S32>::value &&
              tc::Integer<B1S32>::value && !tc::Integer<F16F16>::value && !tc::Integer<F16F32>::value &&
              !tc::Integer<F64F64>::value && !tc::Integer<E4m3F32>::value, "OP units for s32 formats only");

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv,
      {tc::warp_case<F16F16>("mma_f16_f16"), tc::warp_case<F16F32>("mma_f16_f32"),
       tc::warp_case<Bf16F32>("mma_bf16_f32"), tc::warp_case<Tf32F32>("mma_tf32_f32"),
       tc::warp_case<E4m3F32>("mma_e4m3_f32"), tc::warp_case<E5m2F32>("mma_e5m2_f32"),
       tc::warp_case<S8S32>("mma_s8_s32"), tc::warp_case<U8S32>("mma_u8_s32"), tc::warp_case<S4S32>("mma_s4_s32"),
       tc::warp_case<B1S32>("mma_b1_s32"), tc::warp_case<F64F64>("mma_f64_f64"),
       tc::warp_case<F64K4>("mma_f64_m16n8k4"), tc::warp_case<F64K8>("mma_f64_m16n8k8"),
       tc::warp_case<F64K16>("mma_f64_m16n8k16"), tc::warp_case<SpF16F32>("mma_sp_f16_f32")});
}
