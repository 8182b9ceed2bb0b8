// Predicate and select instruction table: ISETP+SEL, FSETP+FSEL, FSET, and PLOP3 between two compares.
#include "ops.cuh"

// x = x < a ? x + b : a ... as compare then select; the pair is the row (the ISETP's own latency is not split).
struct IsetpSel : U32Op {
  __device__ static T apply(T x, T a, T b) {
    asm volatile("{.reg .pred p; setp.lt.u32 p, %0, %1; selp.b32 %0, %2, %1, p;}" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

struct FsetpSel : F32Op {
  __device__ static T apply(T x, T a, T b) {
    asm volatile("{.reg .pred p; setp.lt.f32 p, %0, %1; selp.f32 %0, %2, %1, p;}" : "+f"(x) : "f"(a), "f"(b));
    return x;
  }
};

// x = (x < a) ? 1.0 : 0.0 in one FSET.BF.
struct Fset : F32Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("set.lt.f32.f32 %0, %0, %1;" : "+f"(x) : "f"(a));
    return x;
  }
};

// Two compares combined by a predicate op (PLOP3), then a select back to a register.
struct Plop3 : U32Op {
  __device__ static T apply(T x, T a, T b) {
    asm volatile("{.reg .pred p, q; setp.lt.u32 p, %0, %1; setp.gt.u32 q, %0, %2; xor.pred p, p, q; selp.b32 %0, %1, %2, p;}"
                 : "+r"(x) : "r"(a), "r"(b));  // fmt: skip
    return x;
  }
};

int main(int argc, char** argv) {
  return smd::chain_main(argc, argv,
                         {SMD_CHAIN_CASE("isetp_sel", IsetpSel), SMD_CHAIN_CASE("fsetp_sel", FsetpSel),
                          SMD_CHAIN_CASE("fset", Fset), SMD_CHAIN_CASE("plop3", Plop3)});
}
