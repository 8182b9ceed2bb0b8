// SFU (MUFU) instruction table: rcp, rsqrt, sqrt, ex2, lg2, sin, cos, tanh.
#include "ops.cuh"

// x = 1/(-x): with a plain rcp(rcp(x)) ptxas folds the pair away; the negation rides on the MUFU operand.
struct Rcp : PositiveF32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("{.reg .f32 t; neg.f32 t, %0; rcp.approx.ftz.f32 %0, t;}" : "+f"(x));
    return x;
  }
};

// x = rsqrt(x): positive, converges to 1.
struct Rsqrt : PositiveF32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("rsqrt.approx.ftz.f32 %0, %0;" : "+f"(x));
    return x;
  }
};

struct Sqrt : PositiveF32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("sqrt.approx.ftz.f32 %0, %0;" : "+f"(x));
    return x;
  }
};

// x = 2^-x: bounded (-> ~0.64).
struct Ex2 : PositiveF32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("{.reg .f32 t; neg.f32 t, %0; ex2.approx.ftz.f32 %0, t;}" : "+f"(x));
    return x;
  }
};

// x = log2|x|: the abs rides on the MUFU operand; MUFU latency does not depend on the value.
struct Lg2 : PositiveF32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("{.reg .f32 t; abs.f32 t, %0; lg2.approx.ftz.f32 %0, t;}" : "+f"(x));
    return x;
  }
};

struct Sin : PositiveF32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("sin.approx.ftz.f32 %0, %0;" : "+f"(x));
    return x;
  }
};

struct Cos : PositiveF32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("cos.approx.ftz.f32 %0, %0;" : "+f"(x));
    return x;
  }
};

struct Tanh : PositiveF32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("tanh.approx.f32 %0, %0;" : "+f"(x));
    return x;
  }
};

int main(int argc, char** argv) {
  return smd::chain_main(argc, argv,
                         {SMD_CHAIN_CASE("rcp", Rcp), SMD_CHAIN_CASE("rsqrt", Rsqrt), SMD_CHAIN_CASE("sqrt", Sqrt),
                          SMD_CHAIN_CASE("ex2", Ex2), SMD_CHAIN_CASE("lg2", Lg2), SMD_CHAIN_CASE("sin", Sin),
                          SMD_CHAIN_CASE("cos", Cos), SMD_CHAIN_CASE("tanh", Tanh)});
}
