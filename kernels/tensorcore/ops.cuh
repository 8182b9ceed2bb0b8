// mma.sync operations for mma.cuh: one struct per PTX form, each a dependent accumulator step D = A*B + D.
// A and B hold one small constant per element (the timing does not depend on the values), the accumulator
// starts from the kernel's seed so nothing is known at compile time.
#pragma once
#include "mma.cuh"

// The common register shape of mma.sync: 4 A, 2 B and 4 accumulator registers of 32 bits per thread.
template <uint32_t A_BITS, uint32_t B_BITS, bool FLOAT_ACC>
struct Mma424 {
  // not f32: s32 accumulators (integer formats count OP, not FLOP), except F16F16's packed halves (it says so)
  static constexpr bool kInteger = !FLOAT_ACC;
  using Acc = tc::Frag<uint32_t, 4>;
  struct Ctx {
    uint32_t a[4], b[2];
  };
  static constexpr int kThreads = 32, kMaxThreads = 512, kBody = 32, kPerStep = 1;
  __device__ static Ctx setup(float) { return {{A_BITS, A_BITS, A_BITS, A_BITS}, {B_BITS, B_BITS}}; }
  __device__ static void init(Acc& c, float seed, int chain) {
    for (auto& v : c.v) v = FLOAT_ACC ? __float_as_uint(seed * (chain + 1)) : uint32_t(seed * 64) + chain;
  }
  static bool valid(const Acc& c) {
    for (uint32_t v : c.v)
      if (FLOAT_ACC && !tc::finite_f32(v)) return false;
    return true;
  }
};

// Operand tails of an mma.sync: none, or the block scales (%10 for A and B, byte 0 of thread 0's register).
#define SMD_UNSCALED ";"
#define SMD_SCALED ", %10, {0, 0}, %10, {0, 0};"

// One mma.sync of the 4-4-2 register shape accumulating in place; PTX is the instruction name, TAIL one of
// the tails above with SCALE its scale register, and ENABLED false where the arch lacks the form (the kernel
// then exists without it, for the listing and the SASS stage).
#define SMD_MMA424(Name, ENABLED, PTX, TAIL, SCALE, A_BITS, B_BITS, FLOAT_ACC, M_, N_, K_, COUNTER, INSTS)     \
  struct Name : Mma424<A_BITS, B_BITS, FLOAT_ACC> {                                                          \
    static constexpr const char* name = #Name;                                                               \
    static constexpr double flop = 2.0 * M_ * N_ * K_;                                                       \
    static constexpr tc::Counter counter = tc::Counter::COUNTER;                                             \
    static int insts(int major) { return INSTS; }                                                            \
    __device__ static void step(Acc& d, const Ctx& x) {                                                      \
      if constexpr (ENABLED)                                                                                 \
        asm volatile(PTX " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3}" TAIL                        \
                     : "+r"(d.v[0]), "+r"(d.v[1]), "+r"(d.v[2]), "+r"(d.v[3])                                \
                     : "r"(x.a[0]), "r"(x.a[1]), "r"(x.a[2]), "r"(x.a[3]), "r"(x.b[0]), "r"(x.b[1]),         \
                       "r"(SCALE));                                                                          \
    }                                                                                                        \
  }

constexpr uint32_t kF16 = 0x20002000u;  // two halves of 2^-7
SMD_MMA424(F16F32, true, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", SMD_UNSCALED, 0, kF16, kF16, true, 16, 8,
           16, hmma, 1);
