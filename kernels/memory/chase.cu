// Pointer-chase latency: the staircase over footprint x stride (stride_b 0 = random permutation of
// 128 B lines), and the per-load latency distribution of an L2-resident footprint seen from chosen SMs (whether
// it has one L2 mode or two, the near and the far partition, is decided from it by smdissect.latency_modes).
#include "memory.cuh"

constexpr long kNearFarSteps = 16384;  // chased steps per phase of the near/far case (L2-resident)
constexpr int kTimedLoads = 512;       // individually timed loads per launch of the near/far case (9 launches: 4608)
constexpr int kSmSlots = 16;           // sm_slot s runs on SM s * SMs / 16
using NearFarLoad = LoadCg;            // L2 only: no load of the near/far case can hit the L1

// Lane l of the kernel's one warp reads slots r + l + 32 d (d < 64) of each round r of 2048 slots, through the L2
// only (ld.global.cg: no line of the footprint is left in the L1; the slot's low word is enough to fetch its
// sector); the round's XOR waits for its loads before the next round issues. One warp issues in program order, so
// every slot reaches the L2 in address order (to within a round) each time, and a footprint larger than the L2
// leaves the same lines resident, where a CTA's racing warps (mem::warm_pass) leave a different set each launch.
__device__ __forceinline__ void ordered_warm(const uint64_t* warm, long slots, long stride, uint64_t* sink) {
  constexpr int kDepth = 64;
  const long lane_step = 32 * stride * long(sizeof(uint64_t));  // bytes from one of a lane's slots to its next
  uint32_t acc = 0;
#pragma unroll 1
  for (long round = 0; round < slots; round += 32 * kDepth) {
    uint64_t at = reinterpret_cast<uint64_t>(warm + (round + threadIdx.x) * stride);
    const long left = slots - round - threadIdx.x;  // slots from this lane's first to the chain's end
    uint32_t v[kDepth];
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      v[d] = 0;
      if (32 * d < left)  // one address register, stepped in place: the 64 loads need no 64 addresses
        asm volatile("ld.global.cg.u32 %0, [%1];\n\tadd.s64 %1, %1, %2;" : "=r"(v[d]), "+l"(at) : "l"(lane_step));
    }
#pragma unroll
    for (int d = 0; d < kDepth; ++d) acc ^= v[d];
  }
  if (acc == 0x9e3779b9u) sink[mem::kMaxChains] = acc;
}

// One warp, `windows` times: its ordered read of every slot (none where warm_slots is 0), then lane 0 chases from
// cursor w for warm_steps (untimed), n and 2n steps while the other lanes wait (no other warp stalls on a barrier
// meanwhile). The clocks written are sums over the windows (c0 = 0, c1 = the n-step phases, c2 - c1 = the 2n-step
// phases, ns2 = their nanoseconds).
__global__ void __launch_bounds__(32, 1) staircase_kernel(mem::ChaseArgs a, int windows) {
  mem::Slope sum{0, 0, 0, 0, 0, 0};
#pragma unroll 1
  for (int w = 0; w < windows; ++w) {
    ordered_warm(a.warm, a.warm_slots, a.warm_stride, a.cursors);
    if (threadIdx.x == 0) {
      uint64_t p[1] = {a.cursors[w]};
      mem::chase<LoadCa, 1>(p, a.warm_steps);
      const unsigned long long ns0 = smd::clock_ns();
      const long long c0 = smd::clock_cycles();
      mem::chase<LoadCa, 1>(p, a.steps);
      const long long c1 = smd::clock_cycles();
      mem::chase<LoadCa, 1>(p, 2 * a.steps);
      const long long c2 = smd::clock_cycles();
      sum.ns2 += smd::clock_ns() - ns0;
      sum.c1 += c1 - c0, sum.c2 += c2 - c0;
      a.cursors[w] = p[0];
    }
    __syncwarp();
  }
  if (threadIdx.x == 0) {
    sum.smid = smd::sm_id();
    *a.out = sum;
  }
}

// One staircase point: whole cycles of a short chain (chase_kernel, whose L1 state repeats launch after launch, as
// the committed run shows), or mem::kWindows windows of a long one (staircase_kernel; mem::staircase_plan).
void run_chase(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const auto& c = mem::chain_for(smd::param(point, "footprint_kb"), smd::param(point, "stride_b"));
  const long min_steps = mem::min_steps(c.bytes, mem::sizes().l2_bytes, mem::kChaseSteps);
  const mem::Windows plan = mem::staircase_plan(c.slots, min_steps);
  if (!plan.warm_pass) {  // whole cycles of a short chain: the CTA kernel after untimed whole cycles
    mem::measure_chase<LoadCa, 1>(id, point, repeats, mem::chase_args(c, 1, min_steps), c.address(0), c.bytes);
    return;
  }
  mem::ChaseArgs a{};
  a.warm = c.buf;
  a.warm_slots = c.slots;
  a.warm_stride = c.slot / 8;
  const auto starts = c.starts(plan.windows);
  std::copy(starts.begin(), starts.end(), a.start);
  a.steps = int(plan.steps), a.warm_steps = int(plan.warm_steps);
  mem::ChaseScratch scratch;
  a.out = scratch.out, a.cursors = scratch.cursors;
  mem::measure_launches(id, point, repeats, plan.steps * plan.windows, [&] {
    SMD_CHECK(cudaMemcpy(a.cursors, a.start, plan.windows * sizeof(uint64_t), cudaMemcpyHostToDevice));
    staircase_kernel<<<1, 32>>>(a, plan.windows);
    return mem::chase_result(scratch, plan.windows, c.address(0), c.bytes);
  });
}

// The first CTA on the target SM warms the footprint; its thread 0 times kTimedLoads loads one by one (the
// shared store of each result makes the clock read wait for it), then the n and 2n phases as usual. Every launch
// starts from the same cursor, so it times the same lines in the same order.
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
  mem::chase<NearFarLoad, 1>(p, a.warm_steps);
#pragma unroll 1
  for (int k = 0; k < kTimedLoads; ++k) {
    const long long t0 = smd::clock_cycles();
    p[0] = NearFarLoad::next(p[0]);
    asm volatile("st.shared.u32 [%0], %1;" ::"r"(slot), "r"(uint32_t(p[0])) : "memory");  // waits for the load
    dt[k] = unsigned(smd::clock_cycles() - t0);
  }
  mem::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
  mem::chase<NearFarLoad, 1>(p, a.steps);
  s.c1 = smd::clock_cycles();
  mem::chase<NearFarLoad, 1>(p, 2 * a.steps);
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  *a.out = s;
  a.cursors[0] = p[0];
}

// Raw distribution data only (smdissect.latency_modes finds the modes): `load_latency` holds every timed load of
// every launch, launch after launch (its `iterations` is kTimedLoads, the loads per launch), each less its launch's
// fixed timing overhead (two clock reads and a shared store): the launch's mean timed load less the mean latency of
// its 3n chased loads (the same footprint, no clock reads between them), recorded per launch as `timing_overhead`.
// No load is dropped: misses and both partitions' hits are all there.
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
  SMD_CHECK(cudaMalloc(&dt_d, kTimedLoads * sizeof(unsigned)));
  const std::unique_ptr<int, cudaError_t (*)(void*)> free_claimed(claimed_d, cudaFree);
  const std::unique_ptr<unsigned, cudaError_t (*)(void*)> free_dt(dt_d, cudaFree);
  smd::Record loads{id, point, "load_latency", "cycle"}, overhead{id, point, "timing_overhead", "cycle"};
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
    std::vector<unsigned> dt(kTimedLoads);
    SMD_CHECK(cudaMemcpy(&claimed, claimed_d, sizeof(int), cudaMemcpyDeviceToHost));
    if (!claimed) smd::fail("no CTA ran on SM " + std::to_string(target) + ": cannot time from it");
    SMD_CHECK(cudaMemcpy(&s, scratch.out, sizeof(s), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(dt.data(), dt_d, kTimedLoads * sizeof(unsigned), cudaMemcpyDeviceToHost));
    uint64_t end = 0;
    SMD_CHECK(cudaMemcpy(&end, scratch.cursors, sizeof(end), cudaMemcpyDeviceToHost));
    if (s.smid != target) smd::fail("near/far CTA ran on the wrong SM");
    if (end < c.address(0) || end >= c.address(0) + uint64_t(c.bytes)) smd::fail("near/far chase left its footprint");
    if (const std::string why = mem::phase_mismatch(s); !why.empty()) {
      std::fprintf(stderr, "%s %s: %s\n", id.c_str(), smd::params_json(point).c_str(), why.c_str());
      return;
    }
    if (r < 0) continue;
    const double fixed = std::accumulate(dt.begin(), dt.end(), 0.0) / kTimedLoads - mem::mean_step(s, a.steps);
    for (unsigned t : dt) loads.samples.push_back(double(t) - fixed);
    overhead.samples.push_back(fixed);
    cycles.push_back(double(s.c2 - s.c0)), clock.push_back(mem::mhz(s));
  }
  loads.iterations = kTimedLoads, overhead.iterations = a.steps;
  for (smd::Record* rec : {&loads, &overhead}) {
    rec->cycles = smd::median(cycles), rec->clock_mhz = smd::median(clock);
    rec->smid = int(target);
    smd::emit(*rec);
  }
}

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv,
      {{"chase",
        [] {
          return std::vector{mem::kernel("chase_kernel<LoadCa,1>", 32, mem::kChaseSteps.near),
                             mem::kernel("staircase_kernel", 32, mem::kChaseSteps.near)};
        },
        run_chase},
       {"chase_near_far", [] { return std::vector{mem::kernel("near_far_kernel", 32, kNearFarSteps)}; },
        run_near_far}});
}
