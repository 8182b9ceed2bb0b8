// What the control families share: the dependent IMAD step every timed chain is made of, and one warp's slope
// (c0 | n steps | c1 | 2n steps | c2, slope.cuh) turned into records of cycles per step.
#pragma once
#include <functional>
#include <map>
#include <utility>
#include <string>
#include <vector>

#include "../common/harness.cuh"
#include "../common/slope.cuh"

namespace ctl {

// One dependent IMAD (x = x * x + a): ptxas can neither fold two of them nor hoist one out of a loop.
__device__ __forceinline__ unsigned imad(unsigned x, unsigned a) {
  asm volatile("mad.lo.u32 %0, %0, %0, %1;" : "+r"(x) : "r"(a));
  return x;
}
// The same work with the operands in another order (x = x * a + x): an arm that differs from imad's, so that no
// compiler merges two arms into one with a select.
__device__ __forceinline__ unsigned imad_alt(unsigned x, unsigned a) {
  asm volatile("mad.lo.u32 %0, %0, %1, %0;" : "+r"(x) : "r"(a));
  return x;
}

// L dependent IMADs: one arm of an if/else (Alt: the other form).
template <int L, bool Alt = false>
__device__ __forceinline__ unsigned arm(unsigned x, unsigned a) {
#pragma unroll
  for (int i = 0; i < L; ++i) x = Alt ? imad_alt(x, a) : imad(x, a);
  return x;
}

// Kernel arguments every control kernel takes: the seed (per lane, not provably warp-uniform), the chain's
// operand, a selector (which path, which lanes), a runtime zero, the steps of the short phase, and where to write.
struct Args {
  const unsigned* seed;
  unsigned a, select, zero;
  int steps;
  smd::Slope* out;
  unsigned* sink;
  const void* fn;  // a device function the kernel picks for itself (an indirect call's target)
};

// Lane 0 of warp w records its clocks; the chain's value is stored only where the runtime zero is not.
__device__ __forceinline__ void finish(const Args& g, const smd::Slope& s, unsigned x) {
  if (threadIdx.x % 32 == 0) g.out[threadIdx.x / 32] = s;
  if (g.zero) g.sink[threadIdx.x] = x;
}

// What ncu must count in one timed launch: metric -> value (the record's `expect`).
using Expect = std::vector<std::pair<std::string, double>>;

// Run `launch` (one untimed launch first), and emit `metric`: cycles per step of warp 0's slope over `steps` steps,
// one sample per timed launch, the launches in NVTX ranges of `variant`, whose counters must show `expect`. A launch
// whose 2n-step phase did not take about twice its n-step one is reported on stderr and the point left out.
inline void emit_steps(const std::string& id, const std::map<std::string, long>& point, const std::string& metric,
                       int repeats, long steps, const std::function<void(smd::Slope*)>& launch,
                       const std::string& variant = "timed", const Expect& expect = {}) {
  smd::Slope* out;
  SMD_CHECK(cudaMalloc(&out, 32 * sizeof(smd::Slope)));
  smd::Record rec{id, point, metric, "cycle"};
  std::vector<double> cycles, mhz;
  for (int r = -1; r < repeats; ++r) {
    {
      smd::NvtxRange range(smd::range_name(id, point, variant), r >= 0);
      launch(out);
      SMD_CHECK(cudaGetLastError());
      SMD_CHECK(cudaDeviceSynchronize());
    }
    smd::Slope s;
    SMD_CHECK(cudaMemcpy(&s, out, sizeof(s), cudaMemcpyDeviceToHost));
    if (const std::string why = smd::phase_mismatch(s, metric); !why.empty()) {
      std::fprintf(stderr, "%s %s: %s\n", id.c_str(), smd::params_json(point).c_str(), why.c_str());
      SMD_CHECK(cudaFree(out));
      return;
    }
    if (r < 0) continue;
    rec.samples.push_back(smd::per_step(s, steps));
    cycles.push_back(double(s.c2 - s.c0)), mhz.push_back(smd::mhz(s));
    rec.smid = int(s.smid);
  }
  SMD_CHECK(cudaFree(out));
  rec.cycles = smd::median(cycles), rec.clock_mhz = smd::median(mhz), rec.iterations = steps;
  rec.variant = variant, rec.expect = expect;
  smd::emit(rec);
}

// The seed of every lane (all equal, so a path taken by all lanes stays uniform at run time), on the device.
inline unsigned* seeds() {
  static unsigned* d = nullptr;
  if (!d) {
    std::vector<unsigned> h(1024, 3u);
    SMD_CHECK(cudaMalloc(&d, h.size() * sizeof(unsigned)));
    SMD_CHECK(cudaMemcpy(d, h.data(), h.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
  }
  return d;
}

inline unsigned* sink() {
  static unsigned* d = nullptr;
  if (!d) SMD_CHECK(cudaMalloc(&d, 1024 * sizeof(unsigned)));
  return d;
}

// A kernel's listing: its symbol, ops (what its SASS expectations count in one pass) and steps per pass.
inline smd::KernelInfo kernel(const std::string& symbol, long ops, long iterations,
                              std::map<std::string, long> params = {}) {
  return {std::move(params), "timed", ops, iterations, symbol};
}

}  // namespace ctl
