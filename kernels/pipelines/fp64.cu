// FP64 instruction table: DFMA, DADD, DMUL, min (DSETP.MIN + selects), the IEEE div sequence, MUFU.RCP64H.
#include "ops.cuh"

// x <- x*x + b (x in [-1, 1], b = -0.75: bounded): two source registers, as latency/dfma. With three distinct
// 64-bit sources (x*a + b, subnormal.cu's dfma_normal) DFMA issues 1.845 of its 2 warp-inst/cycle/SM on sm_90a.
struct Dfma : F64Op {
  static void seed(T* in) { fill_seed(in, 0.5, 0.05, 0.999, -0.75); }
  __device__ static T apply(T x, T, T b) {
    asm volatile("fma.rn.f64 %0, %0, %0, %1;" : "+d"(x) : "d"(b));
    return x;
  }
};

struct Dadd : F64Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("add.rn.f64 %0, %0, %1;" : "+d"(x) : "d"(a));
    return x;
  }
};

struct Dmul : F64Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("mul.rn.f64 %0, %0, %1;" : "+d"(x) : "d"(a));
    return x;
  }
};

struct Dmin : F64Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("{.reg .f64 t; neg.f64 t, %0; min.f64 %0, t, %1;}" : "+d"(x) : "d"(a));
    return x;
  }
};

// x = a / x: oscillates between x0 and a/x0, never leaving the normal range (no slow path).
struct Ddiv : F64Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("div.rn.f64 %0, %1, %0;" : "+d"(x) : "d"(a));
    return x;
  }
};

// x = 1/(-x): the approximate reciprocal of the top 32 bits (MUFU.RCP64H), as mufu_rcp's neg trick.
struct Drcp : F64Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("{.reg .f64 t; neg.f64 t, %0; rcp.approx.ftz.f64 %0, t;}" : "+d"(x));
    return x;
  }
};

int main(int argc, char** argv) {
  return smd::chain_main(argc, argv,
                         {SMD_CHAIN_CASE("dfma", Dfma), SMD_CHAIN_CASE("dadd", Dadd), SMD_CHAIN_CASE("dmul", Dmul),
                          SMD_CHAIN_CASE("dmin", Dmin), SMD_CHAIN_CASE("ddiv", Ddiv),
                          SMD_CHAIN_CASE("drcp", Drcp)});
}
