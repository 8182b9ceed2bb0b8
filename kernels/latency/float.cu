// Dependent-chain latency and ILP throughput of the floating-point pipes: FFMA, FADD, FMUL, HFMA2, DFMA.
#include "../common/chain.cuh"

struct Ffma {
  using T = float;
  static void seed(T* in) {
    for (int i = 0; i < smd::kMaxIlp; ++i) in[i] = 1.0f + i;
    in[smd::kMaxIlp] = 0.999f, in[smd::kMaxIlp + 1] = 0.001f;
  }
  __device__ static T apply(T x, T a, T b) {
    asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(a), "f"(b));
    return x;
  }
};

struct Fadd : Ffma {
  __device__ static T apply(T x, T a, T) {
    asm volatile("add.rn.f32 %0, %0, %1;" : "+f"(x) : "f"(a));
    return x;
  }
};

struct Fmul : Ffma {
  __device__ static T apply(T x, T a, T) {
    asm volatile("mul.rn.f32 %0, %0, %1;" : "+f"(x) : "f"(a));
    return x;
  }
};

struct Hfma2 {
  using T = unsigned;  // two packed halves
  static void seed(T* in) {
    for (int i = 0; i < smd::kMaxIlp; ++i) in[i] = 0x3C003C00u + i;  // ~(1.0, 1.0)
    in[smd::kMaxIlp] = 0x3BFE3BFEu, in[smd::kMaxIlp + 1] = 0x14001400u;  // ~0.999, ~0.001
  }
  __device__ static T apply(T x, T a, T b) {
    asm volatile("fma.rn.f16x2 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

// x <- x*x + b, x in [-1, 1] and b = -0.75: bounded. Two source registers: with three distinct 64-bit sources
// (x*a + b) DFMA issues 1.845 of its 2 warp-inst/cycle/SM on sm_90a (pipelines/dfma_normal shows it).
struct Dfma {
  using T = double;
  static void seed(T* in) {
    for (int i = 0; i < smd::kMaxIlp; ++i) in[i] = 0.5 + 0.05 * i;
    in[smd::kMaxIlp] = 0.999, in[smd::kMaxIlp + 1] = -0.75;
  }
  __device__ static T apply(T x, T, T b) {
    asm volatile("fma.rn.f64 %0, %0, %0, %1;" : "+d"(x) : "d"(b));
    return x;
  }
};

int main(int argc, char** argv) {
  return smd::chain_main(argc, argv,
                         {SMD_CHAIN_CASE("ffma", Ffma), SMD_CHAIN_CASE("fadd", Fadd), SMD_CHAIN_CASE("fmul", Fmul),
                          SMD_CHAIN_CASE("hfma2", Hfma2), SMD_CHAIN_CASE("dfma", Dfma)});
}
