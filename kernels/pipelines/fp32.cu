// FP32 instruction table: FFMA, FADD, FMUL, FMNMX (min/max) and the free neg/abs operand modifiers.
#include "ops.cuh"

struct Ffma : F32Op {
  __device__ static T apply(T x, T a, T b) {
    asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(a), "f"(b));
    return x;
  }
};

struct Fadd : F32Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("add.rn.f32 %0, %0, %1;" : "+f"(x) : "f"(a));
    return x;
  }
};

struct Fmul : F32Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("mul.rn.f32 %0, %0, %1;" : "+f"(x) : "f"(a));
    return x;
  }
};

// x = min(-x, a): min(x, a) repeated would fold (min is idempotent); the negation rides on FMNMX's operand.
struct Fmin : F32Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("{.reg .f32 t; neg.f32 t, %0; min.f32 %0, t, %1;}" : "+f"(x) : "f"(a));
    return x;
  }
};

struct Fmax : F32Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("{.reg .f32 t; neg.f32 t, %0; max.f32 %0, t, %1;}" : "+f"(x) : "f"(a));
    return x;
  }
};

// x = a - |x|: abs and neg are operand modifiers of the one FADD, so the latency must equal fadd's.
struct FaddAbsNeg : F32Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("{.reg .f32 t; abs.f32 t, %0; neg.f32 t, t; add.rn.f32 %0, t, %1;}" : "+f"(x) : "f"(a));
    return x;
  }
};

int main(int argc, char** argv) {
  return smd::chain_main(argc, argv,
                         {SMD_CHAIN_CASE("ffma", Ffma), SMD_CHAIN_CASE("fadd", Fadd), SMD_CHAIN_CASE("fmul", Fmul),
                          SMD_CHAIN_CASE("fmin", Fmin), SMD_CHAIN_CASE("fmax", Fmax),
                          SMD_CHAIN_CASE("fadd_abs_neg", FaddAbsNeg)});
}
