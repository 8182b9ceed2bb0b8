// --use_fast_math library calls (built with that flag, see cases.yaml families): expf, sinf, logf and
// division become MUFU sequences; div.rn.f32 in PTX stays the IEEE sequence for comparison.
#include "ops.cuh"

// x = expf(-x): FMUL by log2(e) then MUFU.EX2.
struct FastExpf : PositiveF32Op {
  __device__ static T apply(T x, T, T) { return expf(-x); }
};

struct FastSinf : PositiveF32Op {
  __device__ static T apply(T x, T, T) { return sinf(x); }
};

// x = logf(|x| + b): positive argument, MUFU.LG2 then FMUL by ln(2).
struct FastLogf : PositiveF32Op {
  __device__ static T apply(T x, T, T b) { return logf(fabsf(x) + b); }
};

// x = a / x with -prec-div=false.
struct FastDiv : PositiveF32Op {
  __device__ static T apply(T x, T a, T) { return a / x; }
};

struct Fdividef : PositiveF32Op {
  __device__ static T apply(T x, T a, T) { return __fdividef(a, x); }
};

// IEEE division written in PTX, untouched by the fast-math flags: MUFU.RCP, FFMA refinement, slow-path call.
struct DivRn : PositiveF32Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("div.rn.f32 %0, %1, %0;" : "+f"(x) : "f"(a));
    return x;
  }
};

int main(int argc, char** argv) {
  return smd::chain_main(argc, argv,
                         {SMD_CHAIN_CASE("fast_expf", FastExpf), SMD_CHAIN_CASE("fast_sinf", FastSinf),
                          SMD_CHAIN_CASE("fast_logf", FastLogf), SMD_CHAIN_CASE("fast_div", FastDiv),
                          SMD_CHAIN_CASE("fdividef", Fdividef), SMD_CHAIN_CASE("div_rn", DivRn)});
}
