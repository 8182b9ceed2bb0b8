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

struct Iadd64 : U64Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("add.u64 %0, %0, %1;" : "+l"(x) : "l"(a));
    return x;
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
