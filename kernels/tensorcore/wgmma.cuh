// wgmma (sm_90a) for mma.cuh's timing: m64nNkK in each PTX format, dense and 2:4 sparse, A from shared memory (SS)
// or registers (RS), B from shared memory. A step is fence, BATCH wgmmas into one accumulator, commit, wait for all.
// The wgmma families define their formats with SMD_WG_FORMAT and their cases with SMD_WG_SET; other archs get the
// kernels without the instruction (the cases are static rows there).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "mma.cuh"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr bool kSm90 = true;
#else
constexpr bool kSm90 = false;
#endif

// Shared-memory matrix descriptor, no swizzle: start address, leading (128 B) and stride (256 B) offsets, >> 4.
// Every dense format's A and B rows are 32 B of K (16 x 16 bit, 8 x tf32, 32 x 8 bit, 256 x 1 bit); a sparse B's
// are 64 B, whose core matrices overlap the next rows' (all elements are equal, so only the bounds matter).
__device__ inline uint64_t descriptor(uint32_t addr) {
  return (addr >> 4 & 0x3FFF) | uint64_t(128 >> 4) << 16 | uint64_t(256 >> 4) << 32;
}

// Loop-invariant operands: A and B descriptors, A's registers (RS), the sparse metadata and the scale-d flag.
struct WgOps {
  uint64_t desc_a, desc_b;
  uint32_t a[4], meta, accumulate;
};

enum class WgIn { f16, bf16, tf32, e4m3, e5m2, s8, u8, b1 };
enum class WgAcc { f32, f16, s32 };

// A 32-bit word of elements of `in` equal to `seed` (2^-6: exact in every float format; 1 for integers, 0x55 bits).
__device__ inline uint32_t fill(WgIn in, float seed) {
  switch (in) {
    case WgIn::f16: return __half_as_ushort(__float2half(seed)) * 0x10001u;
    case WgIn::bf16: return __bfloat16_as_ushort(__float2bfloat16(seed)) * 0x10001u;
    case WgIn::tf32: return __float_as_uint(seed);
    case WgIn::e4m3: return __nv_cvt_float_to_fp8(seed, __NV_SATFINITE, __NV_E4M3) * 0x01010101u;
    case WgIn::e5m2: return __nv_cvt_float_to_fp8(seed, __NV_SATFINITE, __NV_E5M2) * 0x01010101u;
    case WgIn::b1: return 0x55555555u;
    default: return 0x01010101u;
  }
}

// Accumulator registers: the constraint letter and register type of each kind, its first value and its check.
template <WgAcc A>
struct WgAccOf {
  using T = float;
  __device__ static T first(float seed, int chain) { return seed * (chain + 1); }
  static bool valid(T v) { return std::isfinite(v); }
};
template <>
struct WgAccOf<WgAcc::f16> {  // two halves per register
  using T = uint32_t;
  __device__ static T first(float seed, int chain) { return __half_as_ushort(__float2half(seed * (chain + 1))) * 0x10001u; }
  static bool valid(T v) { return tc::finite_f16x2(v); }
};
template <>
struct WgAccOf<WgAcc::s32> {
  using T = int32_t;
  __device__ static T first(float, int chain) { return chain + 1; }
  static bool valid(T v) { return v > 0; }  // the sums only grow: a wrap past 2^31 turns them negative
};

// The accumulator's registers (%0 on), 16 a chunk, and their operands d[O .. O+n-1]; after R of them, the WgOps
// inputs: desc_a, desc_b, {a[0..3]}, meta, accumulate.
#define SMD_WG_C0 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15"
#define SMD_WG_C1 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31"
#define SMD_WG_C2 "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47"
#define SMD_WG_C3 "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
#define SMD_WG_C4 "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79"
#define SMD_WG_C5 "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95"
#define SMD_WG_C6 "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111"
#define SMD_WG_C7 "%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127"
#define SMD_WG_REGS_16 "{" SMD_WG_C0 "}"
#define SMD_WG_REGS_32 "{" SMD_WG_C0 "," SMD_WG_C1 "}"
#define SMD_WG_REGS_64 "{" SMD_WG_C0 "," SMD_WG_C1 "," SMD_WG_C2 "," SMD_WG_C3 "}"
#define SMD_WG_REGS_128 \
  "{" SMD_WG_C0 "," SMD_WG_C1 "," SMD_WG_C2 "," SMD_WG_C3 "," SMD_WG_C4 "," SMD_WG_C5 "," SMD_WG_C6 "," SMD_WG_C7 "}"
#define SMD_WG_AT_16 "%16", "%17", "{%18, %19, %20, %21}", "%22", "%23"
#define SMD_WG_AT_32 "%32", "%33", "{%34, %35, %36, %37}", "%38", "%39"
#define SMD_WG_AT_64 "%64", "%65", "{%66, %67, %68, %69}", "%70", "%71"
#define SMD_WG_AT_128 "%128", "%129", "{%130, %131, %132, %133}", "%134", "%135"
#define SMD_WG_D1(C, O) "+" C(d[O])
#define SMD_WG_D2(C, O) SMD_WG_D1(C, O), SMD_WG_D1(C, (O) + 1)
#define SMD_WG_D4(C, O) SMD_WG_D2(C, O), SMD_WG_D2(C, (O) + 2)
#define SMD_WG_D8(C, O) SMD_WG_D4(C, O), SMD_WG_D4(C, (O) + 4)
#define SMD_WG_D16(C, O) SMD_WG_D8(C, O), SMD_WG_D8(C, (O) + 8)
#define SMD_WG_D32(C, O) SMD_WG_D16(C, O), SMD_WG_D16(C, (O) + 16)
#define SMD_WG_D64(C, O) SMD_WG_D32(C, O), SMD_WG_D32(C, (O) + 32)
#define SMD_WG_D128(C, O) SMD_WG_D64(C, O), SMD_WG_D64(C, (O) + 64)
#define SMD_WG_CALL(F, ...) F(__VA_ARGS__)
#define SMD_WG_FLAG(DA, DB, A, META, FLAG) FLAG

// A and B operands of each form, from the inputs' positions: dense or 2:4 sparse (metadata, selector 0), A in
// shared memory (SS) or registers (RS).
#define SMD_WG_SS(DA, DB, A, META, FLAG) DA ", " DB
#define SMD_WG_RS(DA, DB, A, META, FLAG) A ", " DB
#define SMD_WG_SP_SS(DA, DB, A, META, FLAG) DA ", " DB ", " META ", 0"
#define SMD_WG_SP_RS(DA, DB, A, META, FLAG) A ", " DB ", " META ", 0"
#define SMD_WG_DENSE "wgmma.mma_async", SMD_WG_SS, SMD_WG_RS
#define SMD_WG_SPARSE "wgmma.mma_async.sp", SMD_WG_SP_SS, SMD_WG_SP_RS
// Accumulator kinds: the kind, its register constraint, and its registers at N = 64, 128, 256.
#define SMD_WG_F32 f32, "f", 32, 64, 128
#define SMD_WG_F16 f16, "r", 16, 32, 64
#define SMD_WG_S32 s32, "r", 32, 64, 128

// One wgmma: OP of SHAPE and TYPES into R accumulator registers of constraint C; AB its A and B operands (one of
// the forms above), TAIL the immediates after scale-d's predicate.
#define SMD_WG_ASM(OP, SHAPE, TYPES, R, C, AB, TAIL)                                                             \
  asm volatile("{.reg .pred p; setp.ne.b32 p, " SMD_WG_CALL(SMD_WG_FLAG, SMD_WG_AT_##R) ", 0; " OP              \
               ".sync.aligned." SHAPE "." TYPES " " SMD_WG_REGS_##R ", " SMD_WG_CALL(AB, SMD_WG_AT_##R) ", p" TAIL \
               ";}"                                                                                             \
               : SMD_WG_D##R(C, 0)                                                                            \
               : "l"(x.desc_a), "l"(x.desc_b), "r"(x.a[0]), "r"(x.a[1]), "r"(x.a[2]), "r"(x.a[3]), "r"(x.meta), \
                 "r"(x.accumulate))
#define SMD_WG_AB(OP, SHAPE, TYPES, R, C, AB_SS, AB_RS, TAIL_SS, TAIL_RS) \
  {                                                                       \
    if constexpr (RS)                                                     \
      SMD_WG_ASM(OP, SHAPE, TYPES, R, C, AB_RS, TAIL_RS);                 \
    else                                                                  \
      SMD_WG_ASM(OP, SHAPE, TYPES, R, C, AB_SS, TAIL_SS);                 \
  }

// A format: NAME's mma<N, RS>(d, ops) issues one m64nNkK wgmma of TYPES (.dtype.atype.btype[.op.popc]) with inputs
// IN_A x IN_B; FORM is SMD_WG_DENSE or SMD_WG_SPARSE, ACC one of SMD_WG_F32/F16/S32, TAIL_SS and TAIL_RS the
// immediates after scale-d with A in shared memory and in registers (PTX ISA, wgmma.mma_async).
#define SMD_WG_FORMAT(...) SMD_WG_FORMAT_(__VA_ARGS__)
#define SMD_WG_FORMAT_(NAME, OP, AB_SS, AB_RS, K, TYPES, IN_A, IN_B, TAIL_SS, TAIL_RS, ACC, C, R64, R128, R256)  \
  struct NAME {                                                                                               \
    static constexpr int kK = K;                                                                              \
    static constexpr WgIn kA = WgIn::IN_A, kB = WgIn::IN_B;                                                   \
    static constexpr WgAcc kAcc = WgAcc::ACC;                                                                 \
    static constexpr int regs(int n) { return n / (kAcc == WgAcc::f16 ? 4 : 2); }                              \
    template <int N, bool RS, class D>                                                                        \
    __device__ static void mma(D& d, const WgOps& x) {                                                        \
      if constexpr (N == 64)                                                                                  \
        SMD_WG_AB(OP, "m64n64k" #K, TYPES, R64, C, AB_SS, AB_RS, TAIL_SS, TAIL_RS)                            \
      else if constexpr (N == 128)                                                                            \
        SMD_WG_AB(OP, "m64n128k" #K, TYPES, R128, C, AB_SS, AB_RS, TAIL_SS, TAIL_RS)                          \
      else                                                                                                    \
        SMD_WG_AB(OP, "m64n256k" #K, TYPES, R256, C, AB_SS, AB_RS, TAIL_SS, TAIL_RS)                          \
    }                                                                                                         \
  }

// BATCH wgmmas of format F, N and A source per step; every element of A and B is the seed, d starts from it.
template <class F, int N, bool RS, int BATCH>
struct Wgmma {
  using Of = WgAccOf<F::kAcc>;
  using Acc = tc::Frag<typename Of::T, F::regs(N)>;
  using Ctx = WgOps;
  static constexpr int kN = N, kThreads = 128, kMaxThreads = 256, kBody = 8, kPerStep = BATCH;
  static constexpr double flop = 2.0 * 64 * N * F::kK;  // sparse: K is the shape's (dense-equivalent) K
  static constexpr bool kInteger = F::kAcc == WgAcc::s32;
  static constexpr tc::Counter counter = tc::Counter::gmma;
  static int insts(int major) { return major == 9; }
  __device__ static Ctx setup(float seed) {
    __shared__ alignas(128) uint32_t tile[8192];  // A at byte 0, B at byte 16384
    const uint32_t a = fill(F::kA, seed), b = fill(F::kB, seed);
    for (int i = threadIdx.x; i < 8192; i += blockDim.x) tile[i] = i < 4096 ? a : b;
    __syncthreads();
    const uint32_t base = uint32_t(__cvta_generic_to_shared(tile));
    // metadata 0x4 per group of four: elements 0 and 1 kept (a valid 2:4 and 1:2 pattern)
    return {descriptor(base), descriptor(base + 16384), {a, a, a, a}, 0x44444444u, 1};
  }
  __device__ static void init(Acc& c, float seed, int chain) {
    for (auto& v : c.v) v = Of::first(seed, chain);
  }
  static bool valid(const Acc& c) {
    for (auto v : c.v)
      if (!Of::valid(v)) return false;
    return true;
  }
  __device__ static void step(Acc& acc, const Ctx& x) {
    if constexpr (kSm90) {
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
      for (int b = 0; b < BATCH; ++b) F::template mma<N, RS>(acc.v, x);
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }
  }
};

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

// Six kernels (N 64/128/256 x batch 1/4) of format F and A source RS, and the case P##Case(id) over them.
#define SMD_WG_SET(P, F, RS)                                                                           \
  TC_NAMED(P##64x1, Wgmma<F, 64, RS, 1>);                                                              \
  TC_NAMED(P##64x4, Wgmma<F, 64, RS, 4>);                                                              \
  TC_NAMED(P##128x1, Wgmma<F, 128, RS, 1>);                                                            \
  TC_NAMED(P##128x4, Wgmma<F, 128, RS, 4>);                                                            \
  TC_NAMED(P##256x1, Wgmma<F, 256, RS, 1>);                                                            \
  TC_NAMED(P##256x4, Wgmma<F, 256, RS, 4>);                                                            \
  smd::FamilyCase P##Case(const char* id) {                                                            \
    return wgmma_case<P##64x1, P##64x4, P##128x1, P##128x4, P##256x1, P##256x4>(id);                   \
  }
