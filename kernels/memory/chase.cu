// Pointer-chase latency: the staircase over footprint x stride (stride_b 0 = random permutation of
// 128 B lines), and the per-load latency distribution of an L2-resident footprint seen from chosen SMs
// (two clusters: the near and the far L2 partition).
#include <algorithm>
#include <array>

#include "memory.cuh"

constexpr long kNearFarSteps = 16384;  // chased steps per phase of the near/far case (L2-resident)
constexpr int kHist = 1024;            // individually timed loads of the near/far case
constexpr int kSmSlots = 16;           // sm_slot s runs on SM s * SMs / 16

void run_chase(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const auto& c = mem::chain_for(smd::param(point, "footprint_kb"), smd::param(point, "stride_b"));
  const long steps = mem::min_steps(c.bytes, mem::sizes().l2_bytes, mem::kChaseSteps);
  mem::measure_chase<LoadCa, 1>(id, point, repeats, mem::chase_args(c, 1, steps), c.address(0), c.bytes);
}

// The first CTA on the target SM warms the footprint; its thread 0 times kHist loads one by one (the
// shared store of each result makes the clock read wait for it), then the n and 2n phases as usual.
__global__ void near_far_kernel(unsigned target_sm, int* claimed, unsigned* dt, mem::ChaseArgs a) {
  __shared__ int mine;
  __shared__ uint32_t seen;
  if (threadIdx.x == 0) mine = smd::sm_id() == target_sm && atomicCAS(claimed, 0, 1) == 0;
  __syncthreads();
  if (!mine) return;
  mem::warm_pass(a.warm, a.warm_slots, a.warm_stride, a.cursors);
  if (threadIdx.x != 0) return;
  uint64_t p[1] = {a.start[0]};
  const uint32_t slot = uint32_t(__cvta_generic_to_shared(&seen));
  mem::chase<LoadCa, 1>(p, a.warm_steps);
#pragma unroll 1
  for (int k = 0; k < kHist; ++k) {
    const long long t0 = smd::clock_cycles();
    p[0] = LoadCa::next(p[0]);
    asm volatile("st.shared.u32 [%0], %1;" ::"r"(slot), "r"(uint32_t(p[0])) : "memory");  // waits for the load
    dt[k] = unsigned(smd::clock_cycles() - t0);
  }
  mem::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
  mem::chase<LoadCa, 1>(p, a.steps);
  s.c1 = smd::clock_cycles();
  mem::chase<LoadCa, 1>(p, 2 * a.steps);
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  *a.out = s;
  a.cursors[0] = p[0];
}

// Split per-load latencies into two clusters (2-means on one axis): {near mean, far mean, far share}.
std::array<double, 3> two_means(const std::vector<double>& xs) {
  auto [lo, hi] = std::minmax_element(xs.begin(), xs.end());
  double a = *lo, b = *hi, share = 0;
  for (int it = 0; it < 64; ++it) {
    const double cut = 0.5 * (a + b);
    double sa = 0, sb = 0;
    long na = 0, nb = 0;
    for (double x : xs) (x <= cut ? (sa += x, ++na) : (sb += x, ++nb));
    a = na ? sa / na : a, b = nb ? sb / nb : a;
    share = double(nb) / xs.size();
  }
  return {a, b, share};
}

void run_near_far(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long slot = smd::param(point, "sm_slot");
  if (slot < 0 || slot >= kSmSlots) smd::fail("sm_slot must be in 0..15", 2);
  const auto& c = mem::chain_for(smd::param(point, "footprint_kb"), 0);
  const mem::Sizes sz = mem::sizes();
  const unsigned target = unsigned(slot * sz.sms / kSmSlots);
  mem::ChaseArgs a = mem::chase_args(c, 1, kNearFarSteps);
  mem::ChaseScratch scratch;
  a.out = scratch.out, a.cursors = scratch.cursors;
  int* claimed_d;
  unsigned* dt_d;
  SMD_CHECK(cudaMalloc(&claimed_d, sizeof(int)));
  SMD_CHECK(cudaMalloc(&dt_d, kHist * sizeof(unsigned)));
  smd::Record near{id, point, "latency_near", "cycle"}, far{id, point, "latency_far", "cycle"},
      share{id, point, "far_share", "fraction"};
  std::vector<double> cycles, clock;
  auto launch = [&] {
    near_far_kernel<<<2 * sz.sms, 1024>>>(target, claimed_d, dt_d, a);
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaDeviceSynchronize());
  };
  for (int r = -1; r < repeats; ++r) {  // r = -1: untimed first launch
    SMD_CHECK(cudaMemset(claimed_d, 0, sizeof(int)));
    if (r < 0) {
      launch();
    } else {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      launch();
    }
    int claimed = 0;
    mem::Slope s;
    std::vector<unsigned> dt(kHist);
    SMD_CHECK(cudaMemcpy(&claimed, claimed_d, sizeof(int), cudaMemcpyDeviceToHost));
    if (!claimed) smd::fail("no CTA ran on SM " + std::to_string(target) + ": cannot time from it");
    SMD_CHECK(cudaMemcpy(&s, scratch.out, sizeof(s), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(dt.data(), dt_d, kHist * sizeof(unsigned), cudaMemcpyDeviceToHost));
    uint64_t end = 0;
    SMD_CHECK(cudaMemcpy(&end, scratch.cursors, sizeof(end), cudaMemcpyDeviceToHost));
    if (s.smid != target) smd::fail("near/far CTA ran on the wrong SM");
    if (end < c.address(0) || end >= c.address(0) + uint64_t(c.bytes)) smd::fail("near/far chase left its footprint");
    if (const std::string why = mem::phase_mismatch(s); !why.empty()) smd::fail(why);
    if (r < 0) continue;
    // Each individually timed load also holds a shared store and two clock reads: that overhead is
    // the mean of the one-by-one timings minus the mean latency of the 3n chased loads of the same launch.
    const double chased = mem::mean_step(s, a.steps);
    double mean = 0;
    for (unsigned d : dt) mean += d / double(kHist);
    std::vector<double> corrected;
    for (unsigned d : dt) corrected.push_back(d - (mean - chased));
    const auto [n, f, sh] = two_means(corrected);
    near.samples.push_back(n), far.samples.push_back(f), share.samples.push_back(sh);
    cycles.push_back(double(s.c2 - s.c0)), clock.push_back(mem::mhz(s));
  }
  SMD_CHECK(cudaFree(claimed_d));
  SMD_CHECK(cudaFree(dt_d));
  for (smd::Record* rec : {&near, &far, &share}) {
    rec->cycles = smd::median(cycles), rec->clock_mhz = smd::median(clock), rec->iterations = kHist;
    rec->smid = int(target);
    smd::emit(*rec);
  }
}

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv,
      {{"chase", [] { return std::vector{mem::kernel("chase_kernel<LoadCa,1>", 32, mem::kChaseSteps.near)}; },
        run_chase},
       {"chase_near_far", [] { return std::vector{mem::kernel("near_far_kernel", 32, kNearFarSteps)}; },
        run_near_far}});
}
