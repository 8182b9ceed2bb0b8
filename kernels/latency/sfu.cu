// Dependent-chain latency and ILP throughput of the special-function unit: MUFU.EX2, MUFU.RCP.
#include "../common/chain.cuh"

struct Ex2 {
  using T = float;
  static void seed(T* in) {
    for (int i = 0; i < smd::kMaxIlp + 2; ++i) in[i] = 0.5f + 0.01f * i;
  }
  // x = 2^-x: the negation folds into the MUFU operand and the chain stays bounded (-> ~0.64).
  __device__ static T apply(T x, T, T) {
    asm volatile("{.reg .f32 t; neg.f32 t, %0; ex2.approx.ftz.f32 %0, t;}" : "+f"(x));
    return x;
  }
};

struct Rcp : Ex2 {
  // x = 1/(-x): with a plain rcp(rcp(x)) ptxas folds the pair away and the chain vanishes.
  __device__ static T apply(T x, T, T) {
    asm volatile("{.reg .f32 t; neg.f32 t, %0; rcp.approx.ftz.f32 %0, t;}" : "+f"(x));
    return x;
  }
};

int main(int argc, char** argv) {
  return smd::chain_main(argc, argv, {SMD_CHAIN_CASE("mufu_ex2", Ex2), SMD_CHAIN_CASE("mufu_rcp", Rcp)});
}
