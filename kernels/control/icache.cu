// Instruction-cache levels from code-footprint cliffs: a loop whose body is N straight-line FFMAs (8 independent
// chains round robin: one warp issues one a cycle while its code is cached), run by 1 warp or by 16 (4 per
// sub-partition). The body's code is N x 16 B; a sample is cycles per FFMA issued per sub-partition, from the slope
// between n and 2n passes (one untimed pass first), so the loop's own few instructions are 1/N of it. One warp times
// itself; with several, a block barrier ends each phase, so warp 0's clocks span the whole CTA's n and 2n passes (one
// warp's own phases are no measure of anything while the others' progress shifts between them).
#include "control.cuh"

constexpr int kChains = 8;               // independent FFMA chains: 8 x 4-cycle latency keeps one warp issuing
constexpr long kInstructionsPerPhase = 1 << 17;  // FFMAs the n-pass phase issues per warp (at least 2 passes)

// 256 FFMAs (4 KB of code) in one asm statement, the 8 chains round robin: the compiler front end sees one
// statement per 4 KB, so the largest body (512 KB) builds in seconds rather than unrolling 32768 statements.
#define SMD_FFMA8                                                                                              \
  "fma.rn.f32 %0, %0, %8, %9;\n\tfma.rn.f32 %1, %1, %8, %9;\n\tfma.rn.f32 %2, %2, %8, %9;\n\t"                 \
  "fma.rn.f32 %3, %3, %8, %9;\n\tfma.rn.f32 %4, %4, %8, %9;\n\tfma.rn.f32 %5, %5, %8, %9;\n\t"                 \
  "fma.rn.f32 %6, %6, %8, %9;\n\tfma.rn.f32 %7, %7, %8, %9;\n\t"
#define SMD_X2(s) s s
#define SMD_FFMA256 SMD_X2(SMD_X2(SMD_X2(SMD_X2(SMD_X2(SMD_FFMA8)))))
constexpr int kBlock = 256;  // FFMAs per asm statement

template <int N>
__device__ __forceinline__ void body(float (&v)[kChains], float a, float b) {
  static_assert(N % kBlock == 0, "a footprint is whole 4 KB blocks");
#pragma unroll
  for (int i = 0; i < N / kBlock; ++i)
    asm volatile(SMD_FFMA256
                 : "+f"(v[0]), "+f"(v[1]), "+f"(v[2]), "+f"(v[3]), "+f"(v[4]), "+f"(v[5]), "+f"(v[6]), "+f"(v[7])
                 : "f"(a), "f"(b));
}

template <int N>
__device__ __forceinline__ void passes(float (&v)[kChains], float a, float b, int n) {
#pragma unroll 1
  for (int p = 0; p < n; ++p) body<N>(v, a, b);
}

template <int N>
__global__ void icache_kernel(const float* in, int n, smd::Slope* out, float* sink, int zero, int sync) {
  float v[kChains];
#pragma unroll
  for (int i = 0; i < kChains; ++i) v[i] = in[i + zero * threadIdx.x];
  const float a = in[kChains], b = in[kChains + 1];
  passes<N>(v, a, b, 1);
  __syncthreads();
  smd::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
  passes<N>(v, a, b, n);
  if (sync) __syncthreads();  // block-uniform: the phase ends when every warp's passes have
  s.c1 = smd::clock_cycles();
  passes<N>(v, a, b, 2 * n);
  if (sync) __syncthreads();
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  if (threadIdx.x % 32 == 0) out[threadIdx.x / 32] = s;
  if (zero)
#pragma unroll
    for (int i = 0; i < kChains; ++i) sink[threadIdx.x * kChains + i] = v[i];
}

// footprint_kb -> the kernel of that many KB of FFMAs (16 B each: 64 per KB).
#define SMD_ICACHE(X) X(4) X(8) X(16) X(24) X(32) X(48) X(64) X(96) X(128) X(192) X(256) X(512)

template <int N>
void run_footprint(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long warps = smd::param(point, "warps");
  if (warps < 1 || warps > 32) smd::fail("warps=" + std::to_string(warps) + " out of range 1..32", 2);
  const int n = int(std::max(2L, kInstructionsPerPhase / N));
  const float seed[kChains + 2] = {1, 2, 3, 4, 5, 6, 7, 8, 0.999f, 0.001f};
  float *in, *sink;
  SMD_CHECK(cudaMalloc(&in, sizeof(seed)));
  SMD_CHECK(cudaMalloc(&sink, warps * 32 * kChains * sizeof(float)));
  SMD_CHECK(cudaMemcpy(in, seed, sizeof(seed), cudaMemcpyHostToDevice));
  const long per_smsp = std::max(1L, (warps + 3) / 4);  // warps w, w + 4, ... share sub-partition w % 4's issue
  const double ffmas = double(warps) * (1 + 3 * n) * N;  // every warp: the untimed pass, then n and 2n
  ctl::emit_steps(id, point, "cycles_per_instruction", repeats, long(n) * N * per_smsp, [&](smd::Slope* out) {
    icache_kernel<N><<<1, int(warps) * 32>>>(in, n, out, sink, 0, warps > 1);
  }, "timed", {{"sm__inst_executed_pipe_fma.sum", ffmas}});
  SMD_CHECK(cudaFree(in));
  SMD_CHECK(cudaFree(sink));
}

void run_icache(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long kb = smd::param(point, "footprint_kb");
#define SMD_CASE(KB) \
  if (kb == KB) return run_footprint<KB * 64>(id, point, repeats);
  SMD_ICACHE(SMD_CASE)
#undef SMD_CASE
  smd::fail("footprint_kb=" + std::to_string(kb) + " is not built (4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 512)", 2);
}

std::vector<smd::KernelInfo> icache_kernels() {
  std::vector<smd::KernelInfo> out;
#define SMD_LIST(KB)                                                                                    \
  out.push_back(ctl::kernel("icache_kernel<" + std::to_string(KB * 64) + ">", KB * 64,                 \
                            std::max(2L, kInstructionsPerPhase / (KB * 64)), {{"footprint_kb", KB}}));
  SMD_ICACHE(SMD_LIST)
#undef SMD_LIST
  return out;
}

int main(int argc, char** argv) { return smd::family_main(argc, argv, {{"icache_footprint", icache_kernels, run_icache}}); }
