// Subnormal operands: FFMA, FMUL, FADD (plain and .ftz) and DFMA dependent chains whose operands are normal
// or subnormal. The chains are chain.cuh's (latency and ILP x warps throughput); only the seeds differ, so
// the ratio subnormal / normal of the same instruction is the penalty. Before timing, each case checks on
// the GPU that its chain really keeps subnormal values (or, with .ftz, flushes them to zero).
#include <cmath>
#include <limits>

#include "../common/chain.cuh"

struct Ffma {
  using T = float;
  __device__ static T apply(T x, T a, T b) {
    asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(a), "f"(b));
    return x;
  }
};
struct FfmaFtz {
  using T = float;
  __device__ static T apply(T x, T a, T b) {
    asm volatile("fma.rn.ftz.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(a), "f"(b));
    return x;
  }
};
struct Fmul {
  using T = float;
  __device__ static T apply(T x, T a, T) {
    asm volatile("mul.rn.f32 %0, %0, %1;" : "+f"(x) : "f"(a));
    return x;
  }
};
struct FmulFtz {
  using T = float;
  __device__ static T apply(T x, T a, T) {
    asm volatile("mul.rn.ftz.f32 %0, %0, %1;" : "+f"(x) : "f"(a));
    return x;
  }
};
struct Fadd {
  using T = float;
  __device__ static T apply(T x, T, T b) {
    asm volatile("add.rn.f32 %0, %0, %1;" : "+f"(x) : "f"(b));
    return x;
  }
};
struct FaddFtz {
  using T = float;
  __device__ static T apply(T x, T, T b) {
    asm volatile("add.rn.ftz.f32 %0, %0, %1;" : "+f"(x) : "f"(b));
    return x;
  }
};
struct Dfma {
  using T = double;
  __device__ static T apply(T x, T a, T b) {
    asm volatile("fma.rn.f64 %0, %0, %1, %2;" : "+d"(x) : "d"(a), "d"(b));
    return x;
  }
};

// Operand sets: x_i, a = 1 and a small b, so x = x*a + b (or x*a, x+b) stays in its starting class for
// every step a launch takes (at most kIters * 2 * kBodyOps = 2^17 additions of b).
template <class T>
struct Normal {
  static constexpr int kClass = FP_NORMAL;
  static void seed(T* in) {
    for (int i = 0; i < smd::kMaxIlp; ++i) in[i] = T(1) + T(i) / 8;
    in[smd::kMaxIlp] = T(1), in[smd::kMaxIlp + 1] = std::ldexp(T(1), -20);
  }
};
template <class T>
struct Subnormal {
  static constexpr int kClass = FP_SUBNORMAL;
  // x_i = (1 + i/8) * 2^-11 of the smallest normal; b = the smallest subnormal, 2^17 of which add < 2^-5 of it.
  static void seed(T* in) {
    const int exponent = std::numeric_limits<T>::min_exponent - 12;
    for (int i = 0; i < smd::kMaxIlp; ++i) in[i] = std::ldexp(T(1) + T(i) / 8, exponent);
    in[smd::kMaxIlp] = T(1), in[smd::kMaxIlp + 1] = std::numeric_limits<T>::denorm_min();
  }
};
// Subnormal operands into an .ftz instruction: every result is +0.
template <class T>
struct Flushed : Subnormal<T> {
  static constexpr int kClass = FP_ZERO;
};

// Four steps of a chain on the GPU, classified there: the class of values the timed chain computes on.
template <class Op>
__global__ void classify_kernel(const typename Op::T* in, typename Op::T min_normal, int* out) {
  using T = typename Op::T;
  T x = in[0];
#pragma unroll 1
  for (int i = 0; i < 4; ++i) x = Op::apply(x, in[smd::kMaxIlp], in[smd::kMaxIlp + 1]);
  *out = x == T(0) ? FP_ZERO : (fabs(x) < min_normal ? FP_SUBNORMAL : FP_NORMAL);
}

inline const char* class_name(int c) {
  return c == FP_ZERO ? "zero" : c == FP_SUBNORMAL ? "subnormal" : c == FP_NORMAL ? "normal" : "unknown";
}

// A case: an instruction and an operand set.
template <class Inst, template <class> class Operands>
struct Case : Inst, Operands<typename Inst::T> {
  using T = typename Inst::T;
};

// One point of a case, after checking on the GPU that the chain computes on the class of values it claims.
template <class Op>
void verified_point(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  using T = typename Op::T;
  T seed[smd::kMaxIlp + 2];
  Op::seed(seed);
  T* in;
  int* out;
  int got = -1;
  SMD_CHECK(cudaMalloc(&in, sizeof(seed)));
  SMD_CHECK(cudaMalloc(&out, sizeof(int)));
  SMD_CHECK(cudaMemcpy(in, seed, sizeof(seed), cudaMemcpyHostToDevice));
  classify_kernel<Op><<<1, 1>>>(in, std::numeric_limits<T>::min(), out);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaMemcpy(&got, out, sizeof(int), cudaMemcpyDeviceToHost));
  SMD_CHECK(cudaFree(in));
  SMD_CHECK(cudaFree(out));
  if (got != Op::kClass)
    smd::fail(id + ": the chain computes on " + class_name(got) + " values, not " + class_name(Op::kClass));
  smd::run_point<Op>(id, point, repeats);
}

// Plain global names, so that --list symbols demangle to chain_kernel<FfmaSubnormal,1,256>.
struct FfmaNormal : Case<Ffma, Normal> {};
struct FfmaSubnormal : Case<Ffma, Subnormal> {};
struct FfmaFtzSubnormal : Case<FfmaFtz, Flushed> {};
struct FmulNormal : Case<Fmul, Normal> {};
struct FmulSubnormal : Case<Fmul, Subnormal> {};
struct FmulFtzSubnormal : Case<FmulFtz, Flushed> {};
struct FaddNormal : Case<Fadd, Normal> {};
struct FaddSubnormal : Case<Fadd, Subnormal> {};
struct FaddFtzSubnormal : Case<FaddFtz, Flushed> {};
struct DfmaNormal : Case<Dfma, Normal> {};
struct DfmaSubnormal : Case<Dfma, Subnormal> {};

#define SUBNORMAL_CASE(id, Op) ::smd::ChainCase{id, #Op, verified_point<Op>, ::smd::list_all<Op>}

int main(int argc, char** argv) {
  return smd::chain_main(
      argc, argv,
      {SUBNORMAL_CASE("ffma_normal", FfmaNormal), SUBNORMAL_CASE("ffma_subnormal", FfmaSubnormal),
       SUBNORMAL_CASE("ffma_ftz_subnormal", FfmaFtzSubnormal), SUBNORMAL_CASE("fmul_normal", FmulNormal),
       SUBNORMAL_CASE("fmul_subnormal", FmulSubnormal), SUBNORMAL_CASE("fmul_ftz_subnormal", FmulFtzSubnormal),
       SUBNORMAL_CASE("fadd_normal", FaddNormal), SUBNORMAL_CASE("fadd_subnormal", FaddSubnormal),
       SUBNORMAL_CASE("fadd_ftz_subnormal", FaddFtzSubnormal), SUBNORMAL_CASE("dfma_normal", DfmaNormal),
       SUBNORMAL_CASE("dfma_subnormal", DfmaSubnormal)});
}
