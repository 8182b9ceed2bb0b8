// wgmma (sm_90a): m64nNk16 f16/bf16 -> f32 latency and throughput over N, warpgroups and wgmmas per commit
// group, A from shared memory or registers. Other archs get the kernels without the instruction.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "mma.cuh"
#include "wgmma_asm.cuh"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr bool kSm90 = true;
#else
constexpr bool kSm90 = false;
#endif

// Shared-memory matrix descriptor, no swizzle: start address, leading (128 B) and stride (256 B) offsets, >> 4.
__device__ inline uint64_t descriptor(uint32_t addr) {
  return (addr >> 4 & 0x3FFF) | uint64_t(128 >> 4) << 16 | uint64_t(256 >> 4) << 32;
}

struct WgCtx {
  uint64_t desc_a, desc_b;
  uint32_t a[4];
};

// The wgmma of this N, A source and input type T (a string literal).
#define SMD_WGMMA_ANY(T)        \
  if constexpr (N == 64) {      \
    if constexpr (RS)           \
      SMD_WGMMA_RS_64(T);       \
    else                        \
      SMD_WGMMA_SS_64(T);       \
  } else if constexpr (N == 128) { \
    if constexpr (RS)           \
      SMD_WGMMA_RS_128(T);      \
    else                        \
      SMD_WGMMA_SS_128(T);      \
  } else {                      \
    if constexpr (RS)           \
      SMD_WGMMA_RS_256(T);      \
    else                        \
      SMD_WGMMA_SS_256(T);      \
  }

// One step: fence, BATCH wgmmas into the same accumulator (chained in the tensor core), commit, wait for all.
template <int N, bool RS, int BATCH, bool BF16>
struct Wgmma {
  using Acc = tc::Frag<float, N / 2>;
  using Ctx = WgCtx;
  static constexpr int kN = N, kThreads = 128, kMaxThreads = 256, kBody = 8, kPerStep = BATCH;
  static constexpr double flop = 2.0 * 64 * N * 16;
  static constexpr tc::Counter counter = tc::Counter::gmma;
  static int insts(int major) { return major == 9; }
  __device__ static Ctx setup(float seed) {
    __shared__ alignas(128) uint16_t tile[16384];  // A at byte 0, B at byte 16384; every element `seed`
    const uint16_t v = BF16 ? __bfloat16_as_ushort(__float2bfloat16(seed)) : __half_as_ushort(__float2half(seed));
    for (int i = threadIdx.x; i < 16384; i += blockDim.x) tile[i] = v;
    __syncthreads();
    const uint32_t base = uint32_t(__cvta_generic_to_shared(tile)), pair = v * 0x10001u;
    return {descriptor(base), descriptor(base + 16384), {pair, pair, pair, pair}};
  }
  __device__ static void init(Acc& c, float seed, int chain) {
    for (auto& v : c.v) v = seed * (chain + 1);
  }
  static bool valid(const Acc& c) {
    for (float v : c.v)
      if (!std::isfinite(v)) return false;
    return true;
  }
  __device__ static void step(Acc& acc, const Ctx& x) {
    if constexpr (kSm90) {
      auto& d = acc.v;
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
      for (int b = 0; b < BATCH; ++b) {
        if constexpr (BF16) {
          SMD_WGMMA_ANY("bf16");
        } else {
          SMD_WGMMA_ANY("f16");
        }
      }
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }
  }
};

#define SMD_WG(Name, N, RS, BATCH, BF16)                \
  struct Name : Wgmma<N, RS, BATCH, BF16> {             \
    static constexpr const char* name = #Name;          \
  }

// A case over n and batch (one kernel per pair) and warpgroups (threads of the one CTA).
template <class... Ops>
smd::FamilyCase wgmma_case(const char* id) {
  return {id,
          [] {
            std::vector<smd::KernelInfo> k;
            (tc::list_ilp<Ops, 1>(k, {{"batch", Ops::kPerStep}, {"n", Ops::kN}}), ...);
            return k;
          },
          [](const std::string& case_id, const std::map<std::string, long>& point, int repeats) {
            const long n = smd::param(point, "n"), batch = smd::param(point, "batch");
            const long groups = smd::param(point, "warpgroups");
            const bool found = ((n == Ops::kN && batch == Ops::kPerStep
                                     ? (tc::measure<Ops, 1>(case_id, point, groups, repeats), true)
                                     : false) ||
                                ...);
            if (!found) smd::fail(case_id + ": n=" + std::to_string(n) + ", batch=" + std::to_string(batch) +
                                  " is not compiled: use n 64, 128, 256 and batch 1, 4", 2);
          }};
}

// Six kernels (N 64/128/256 x batch 1/4) of one A source and input type, and the case over them.
#define SMD_WG_SET(P, RS, BF16)                                                                              \
  SMD_WG(P##64x1, 64, RS, 1, BF16);                                                                         \
  SMD_WG(P##64x4, 64, RS, 4, BF16);                                                                         \
  SMD_WG(P##128x1, 128, RS, 1, BF16);                                                                       \
  SMD_WG(P##128x4, 128, RS, 4, BF16);                                                                       \
  SMD_WG(P##256x1, 256, RS, 1, BF16);                                                                       \
  SMD_WG(P##256x4, 256, RS, 4, BF16);                                                                       \
  smd::FamilyCase P##Case(const char* id) {                                                                 \
    return wgmma_case<P##64x1, P##64x4, P##128x1, P##128x4, P##256x1, P##256x4>(id);                        \
  }

SMD_WG_SET(F16Ss, false, false)
SMD_WG_SET(F16Rs, true, false)
SMD_WG_SET(Bf16Ss, false, true)

int main(int argc, char** argv) {
  return smd::family_main(argc, argv,
                          {F16SsCase("wgmma_f16_ss"), F16RsCase("wgmma_f16_rs"), Bf16SsCase("wgmma_bf16_ss")});
}
