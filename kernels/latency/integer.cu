// Dependent-chain latency and ILP throughput of the integer pipes: IADD3, IMAD, LOP3.
#include "../common/chain.cuh"

struct Iadd3 {
  using T = unsigned;
  static void seed(T* in) {
    for (int i = 0; i < smd::kMaxIlp; ++i) in[i] = 17u * i + 1u;
    in[smd::kMaxIlp] = 0x9E3779B9u, in[smd::kMaxIlp + 1] = 0x7F4A7C15u;
  }
  // Two PTX adds: ptxas fuses them into one three-input IADD3 (a single add would be fused in pairs).
  __device__ static T apply(T x, T a, T b) {
    asm volatile("add.u32 %0, %0, %1;\n\tadd.u32 %0, %0, %2;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

struct Imad : Iadd3 {
  __device__ static T apply(T x, T a, T b) {
    asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

struct Lop3 : Iadd3 {
  __device__ static T apply(T x, T a, T b) {
    asm volatile("lop3.b32 %0, %0, %1, %2, 0x96;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

int main(int argc, char** argv) {
  return smd::chain_main(argc, argv,
                         {SMD_CHAIN_CASE("iadd3", Iadd3), SMD_CHAIN_CASE("imad", Imad), SMD_CHAIN_CASE("lop3", Lop3)});
}
