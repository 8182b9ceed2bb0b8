// Packed FP16/BF16 instruction table: HFMA2, HADD2, HMUL2, HMNMX2 and the bf16x2 FMA/ADD.
#include "ops.cuh"

struct Hfma2 : H2Op {
  __device__ static T apply(T x, T a, T b) {
    asm volatile("fma.rn.f16x2 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

struct Hadd2 : H2Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("add.rn.f16x2 %0, %0, %1;" : "+r"(x) : "r"(a));
    return x;
  }
};

struct Hmul2 : H2Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("mul.rn.f16x2 %0, %0, %1;" : "+r"(x) : "r"(a));
    return x;
  }
};

// x = min(-x, a), as for FMNMX: a repeated min(x, a) would fold.
struct Hmin2 : H2Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("{.reg .b32 t; neg.f16x2 t, %0; min.f16x2 %0, t, %1;}" : "+r"(x) : "r"(a));
    return x;
  }
};

struct Bfma2 : Bf2Op {
  __device__ static T apply(T x, T a, T b) {
    asm volatile("fma.rn.bf16x2 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

struct Badd2 : Bf2Op {
  __device__ static T apply(T x, T a, T) {
#if SMD_HAS(bf16x2_arith)  // sm_90: before it only the bf16x2 FMA exists (the case requires it)
    asm volatile("add.rn.bf16x2 %0, %0, %1;" : "+r"(x) : "r"(a));
#endif
    return x;
  }
};

int main(int argc, char** argv) {
  return smd::chain_main(argc, argv,
                         {SMD_CHAIN_CASE("hfma2", Hfma2), SMD_CHAIN_CASE("hadd2", Hadd2), SMD_CHAIN_CASE("hmul2", Hmul2),
                          SMD_CHAIN_CASE("hmin2", Hmin2), SMD_CHAIN_CASE("bfma2", Bfma2), SMD_CHAIN_CASE("badd2", Badd2)});
}
