// Target kernels of the binary-patching experiments (kernels/scheduler/patched.cu). Built on its own
// as a cubin by smdissect.controlcodes.prepare, which writes patched copies of it; extern "C" names so
// the driver API finds them (cuModuleGetFunction) and patched.cu can link the unpatched SASS too.
#include "../common/harness.cuh"

namespace patch {
constexpr int kDepth = 128;  // dependent FFMAs per loop iteration (unrolled); kDepth * iterations stays exact
}  // namespace patch

// x = x * in[0] + in[1] for kDepth * iters dependent steps, from x = thread index. With in = {1, 1} the
// exact result is tid + steps, so a step that read a stale x (stall count below the latency) shows.
extern "C" __global__ void ffma_chain(const float* in, float* out, smd::Stamp* stamps, int iters) {
  float x = float(threadIdx.x);
  const float a = in[0], b = in[1];
  __syncthreads();
  const long long c0 = smd::clock_cycles();
  const unsigned long long n0 = smd::clock_ns();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int d = 0; d < patch::kDepth; ++d) asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(a), "f"(b));
  }
  const long long c1 = smd::clock_cycles();
  const unsigned long long n1 = smd::clock_ns();
  if (threadIdx.x % 32 == 0) stamps[threadIdx.x / 32] = {c0, c1, n0, n1, smd::sm_id()};
  out[threadIdx.x] = x;
}

namespace patch {
constexpr int kChains = 8;  // independent chains of ffma_operands (ILP 8)
}  // namespace patch

// kChains independent chains x[i] = x[i] * in[0] + in[1], kDepth FFMAs per loop iteration: every FFMA reads the same
// a and b, which ptxas marks .reuse from one FFMA to the next; prepare() writes a copy with those flags cleared.
// With in = {1, 1} chain i ends exactly at tid * kChains + i + steps.
extern "C" __global__ void ffma_operands(const float* in, float* out, smd::Stamp* stamps, int iters) {
  float x[patch::kChains];
#pragma unroll
  for (int i = 0; i < patch::kChains; ++i) x[i] = float(threadIdx.x * patch::kChains + i);
  const float a = in[0], b = in[1];
  __syncthreads();
  const long long c0 = smd::clock_cycles();
  const unsigned long long n0 = smd::clock_ns();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int d = 0; d < patch::kDepth / patch::kChains; ++d)
#pragma unroll
      for (int i = 0; i < patch::kChains; ++i) asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x[i]) : "f"(a), "f"(b));
  }
  const long long c1 = smd::clock_cycles();
  const unsigned long long n1 = smd::clock_ns();
  if (threadIdx.x % 32 == 0) stamps[threadIdx.x / 32] = {c0, c1, n0, n1, smd::sm_id()};
#pragma unroll
  for (int i = 0; i < patch::kChains; ++i) out[threadIdx.x * patch::kChains + i] = x[i];
}
