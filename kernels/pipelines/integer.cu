// Integer instruction table: IADD3, IMAD, LOP3, shifts, POPC, FLO, BREV, IMNMX, 64-bit add, mul.hi/wide
// and the div/rem software sequences (div.u32 inline; div/rem.u64 through a called subroutine).
#include "ops.cuh"

struct Iadd3 : U32Op {
  // Two PTX adds: ptxas fuses them into one three-input IADD3.
  __device__ static T apply(T x, T a, T b) {
    asm volatile("add.u32 %0, %0, %1;\n\tadd.u32 %0, %0, %2;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

struct Imad : U32Op {
  __device__ static T apply(T x, T a, T b) {
    asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

struct Lop3 : U32Op {
  __device__ static T apply(T x, T a, T b) {
    asm volatile("lop3.b32 %0, %0, %1, %2, 0x96;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

// Funnel shift (rotate) by a register amount.
struct Shf : U32Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("shf.l.wrap.b32 %0, %0, %0, %1;" : "+r"(x) : "r"(a));
    return x;
  }
};

struct Shl : U32Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("shl.b32 %0, %0, %1;" : "+r"(x) : "r"(a));
    return x;
  }
};

struct Popc : U32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("popc.b32 %0, %0;" : "+r"(x));
    return x;
  }
};

struct Clz : U32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("clz.b32 %0, %0;" : "+r"(x));
    return x;
  }
};

// x = brev(x) ^ a: brev(brev(x)) would fold; the xor is one LOP3 whose latency the table subtracts.
struct Brev : U32Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("brev.b32 %0, %0;\n\txor.b32 %0, %0, %1;" : "+r"(x) : "r"(a));
    return x;
  }
};

// x = min(-x, a): a repeated min(x, a) folds; the negation is one IMAD.MOV the table subtracts.
struct Imnmx : U32Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("{.reg .s32 t; neg.s32 t, %0; min.s32 %0, t, %1;}" : "+r"(x) : "r"(a));
    return x;
  }
};

// A Fibonacci step (x, y) -> (x + y, x): one dependent add.u64 whose second operand is the previous step's result.
// A chain x += a let ptxas fuse each pair of adds into one three-input IADD3 + IADD3.X (x + a + a), half the
// claimed steps; here every intermediate sum is also the next step's operand, so no add can be folded away. The
// pair's second half is a register rename: one add per step. sm_90a: IADD3 + IMAD.X (now and then IADD3.X) per
// step; sm_120a: one IADD.64.
struct U64Pair {
  unsigned long long x, y;
};
struct Iadd64 {
  using T = U64Pair;
  static void seed(T* in) {
    for (int i = 0; i < smd::kMaxIlp + 2; ++i) in[i] = {1ull + i * 0x100000001ull, 0x9E3779B97F4A7C15ull};
  }
  __device__ static T apply(T v, T, T) {
    T next{0, v.x};
    asm volatile("add.u64 %0, %1, %2;" : "=l"(next.x) : "l"(v.x), "l"(v.y));
    return next;
  }
};

struct MulHi : U32Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("mul.hi.u32 %0, %0, %1;" : "+r"(x) : "r"(a));
    return x;
  }
};

// x = lo32(x) * hi32(x) as a 64-bit product: both result halves feed the next step.
struct MulWide : U64Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("{.reg .u32 p, q; mov.b64 {p, q}, %0; mul.wide.u32 %0, p, q;}" : "+l"(x));
    return x;
  }
};

// x = a / x: the quotient chain oscillates between x0 and a / x0.
struct DivU32 : U32Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("div.u32 %0, %1, %0;" : "+r"(x) : "r"(a));
    return x;
  }
};

struct DivU64 : U64Op {
  static constexpr int kIters = 32;  // a ~300-cycle call per step: 32 x 256 extra steps per chain suffice
  __device__ static T apply(T x, T a, T) {
    asm volatile("div.u64 %0, %1, %0;" : "+l"(x) : "l"(a));
    return x;
  }
};

struct RemU64 : U64Op {
  static constexpr int kIters = 32;  // a ~300-cycle call per step: 32 x 256 extra steps per chain suffice
  __device__ static T apply(T x, T a, T) {
    asm volatile("rem.u64 %0, %1, %0;" : "+l"(x) : "l"(a));
    return x;
  }
};

int main(int argc, char** argv) {
  return smd::chain_main(
      argc, argv,
      {SMD_CHAIN_CASE("iadd3", Iadd3), SMD_CHAIN_CASE("imad", Imad), SMD_CHAIN_CASE("lop3", Lop3),
       SMD_CHAIN_CASE("shf", Shf), SMD_CHAIN_CASE("shl", Shl), SMD_CHAIN_CASE("popc", Popc), SMD_CHAIN_CASE("clz", Clz),
       SMD_CHAIN_CASE("brev", Brev), SMD_CHAIN_CASE("imnmx", Imnmx), SMD_CHAIN_CASE("iadd64", Iadd64),
       SMD_CHAIN_CASE("mul_hi", MulHi), SMD_CHAIN_CASE("mul_wide", MulWide), SMD_CHAIN_CASE("div_u32", DivU32),
       SMD_CHAIN_CASE("div_u64", DivU64), SMD_CHAIN_CASE("rem_u64", RemU64)});
}
