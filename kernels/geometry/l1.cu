// L1 geometry from one thread's ld.global.ca chases:
//  l1_sector   the first, cold lap over a 4 KB chain at stride 8..256 B, each load timed alone (L2-warm lines, a
//              region of the buffer no launch has read through the L1 before): the loads that miss are those that
//              touch a new sector (or line), so their share gives the fill granularity; the l1tex/lts counters
//              count the same sectors;
//  l1_capacity the warmed chase's latency against footprint at stride 128 B, for several shared-memory carveouts
//              (cudaFuncAttributePreferredSharedMemoryCarveout): where it leaves the L1-hit level is the L1's size;
//  l1_line     the same at strides 64 and 256 B (a chain at 256 B touches every other 128 B line: its capacity
//              footprint doubles only where a line is at most 128 B);
//  l1_ways     `lines` lines `stride_kb` apart chased in a cycle: past the ways of a set, lines that share one set
//              evict each other and the latency leaves the L1-hit level.
#include "geometry.cuh"

constexpr long kSectorBytes = 4096;            // l1_sector's chain: 4 KB, far inside the L1
constexpr int kMaxTimed = int(kSectorBytes / 8);  // loads of one lap at the finest stride (8 B)
constexpr long kRegions = 256;                 // l1_sector regions: each launch reads one no launch read before
constexpr long kMinSteps = 8192;               // timed steps per phase of the warmed chases (whole laps)

// The smallest whole number of laps of a cycle of `slots` slots (rounded to loop bodies of 32) holding min steps.
long lap_steps(long slots, long min_steps) {
  const long cycle = std::lcm(slots, 32L);
  return (min_steps + cycle - 1) / cycle * cycle;
}

// Every word of [p, p + bytes) read through the L2 only (ld.global.cg): the lines are L2 hits, none is in an L1.
__global__ void warm_l2(const uint64_t* p, long words, uint64_t* sink) {
  uint64_t acc = 0;
  for (long k = blockIdx.x * long(blockDim.x) + threadIdx.x; k < words; k += long(gridDim.x) * blockDim.x)
    acc ^= LoadCg::next(reinterpret_cast<uint64_t>(p + k));
  if (acc == 0x9e3779b97f4a7c15ull) *sink = acc;
}

// Thread 0 times each load of its first (cold) lap of `lap` loads alone, then each of a second (warm) lap the same
// way (the same timing code over L1 hits: the fixed overhead), then chases n and 2n steps untimed per load.
__global__ void __launch_bounds__(32, 1) cold_lap_kernel(uint64_t* cursor, int lap, int steps, unsigned* dt,
                                                         mem::Slope* out) {
  __shared__ unsigned times[2 * kMaxTimed];
  __shared__ uint32_t seen;
  if (threadIdx.x != 0) return;
  uint64_t p[1] = {*cursor};
  const uint32_t slot = uint32_t(__cvta_generic_to_shared(&seen));
#pragma unroll 1
  for (int k = 0; k < 2 * lap; ++k) {
    const long long t0 = smd::clock_cycles();
    p[0] = LoadCa::next(p[0]);
    asm volatile("st.shared.u32 [%0], %1;" ::"r"(slot), "r"(uint32_t(p[0])) : "memory");  // waits for the load
    times[k] = unsigned(smd::clock_cycles() - t0);
  }
  mem::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
  mem::chase<LoadCa, 1>(p, steps);
  s.c1 = smd::clock_cycles();
  mem::chase<LoadCa, 1>(p, 2 * steps);
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  for (int k = 0; k < 2 * lap; ++k) dt[k] = times[k];
  *out = s;
  *cursor = p[0];
}

// The l1_sector buffer: kRegions regions of kSectorBytes, every word an L2 hit after warm_l2; `next` the region the
// next launch reads (each launch its own, so no line of it has been in an L1).
struct Regions {
  char* base = nullptr;
  long next = 0;
};

Regions& regions() {
  static Regions r;
  if (r.base) return r;
  std::string why;
  r.base = geo::arena(size_t(kRegions * kSectorBytes), why);
  if (!r.base) smd::fail("l1_sector " + why);
  return r;
}

void warm_regions(uint64_t* sink) {
  warm_l2<<<64, 256>>>(reinterpret_cast<const uint64_t*>(regions().base), kRegions * kSectorBytes / 8, sink);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
}

// Records: `load_latency` (every load of each launch's cold lap, less the launch's fixed overhead: its warm lap's
// mean timed load less the mean of its 3n chased L1 hits; `iterations` = loads per launch), `timing_overhead` (that
// overhead per launch) and `latency` (the chased L1 hits, cycles per load) with the counters its launch must show:
// one L2 sector read per distinct sector the chain touches (plus the cursor's load), and one L1 request per load.
void run_sector(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long stride = smd::param(point, "stride_b");
  if (stride < 8 || stride > 1024 || stride % 8) smd::fail("stride_b must be a multiple of 8 in 8..1024", 2);
  const int lap = int(kSectorBytes / stride);
  const int steps = int(lap_steps(lap, kMinSteps));
  mem::ChaseScratch scratch;
  unsigned* dt_d = nullptr;
  SMD_CHECK(cudaMalloc(&dt_d, 2 * kMaxTimed * sizeof(unsigned)));
  const std::unique_ptr<unsigned, cudaError_t (*)(void*)> free_dt(dt_d, cudaFree);
  Regions& reg = regions();
  warm_regions(scratch.cursors + mem::kMaxChains);
  smd::Record loads{id, point, "load_latency", "cycle"}, overhead{id, point, "timing_overhead", "cycle"};
  smd::Record hits{id, point, "latency", "cycle"};
  std::vector<double> cycles, clock;
  std::vector<unsigned> dt(2 * lap);
  for (int r = -1; r < repeats; ++r) {
    const uint64_t start = reinterpret_cast<uint64_t>(reg.base + (reg.next++ % kRegions) * kSectorBytes);
    std::vector<uint64_t> slots(lap);
    for (int k = 0; k < lap; ++k) slots[k] = start + uint64_t(k) * stride;
    geo::link(slots);
    SMD_CHECK(cudaMemcpy(scratch.cursors, &start, sizeof(start), cudaMemcpyHostToDevice));
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"), r >= 0);
      cold_lap_kernel<<<1, 32>>>(scratch.cursors, lap, steps, dt_d, scratch.out);
      SMD_CHECK(cudaGetLastError());
      SMD_CHECK(cudaDeviceSynchronize());
    }
    mem::Slope s;
    SMD_CHECK(cudaMemcpy(&s, scratch.out, sizeof(s), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(dt.data(), dt_d, 2 * lap * sizeof(unsigned), cudaMemcpyDeviceToHost));
    if (const std::string why = mem::phase_mismatch(s); !why.empty()) {
      std::fprintf(stderr, "%s %s: %s\n", id.c_str(), smd::params_json(point).c_str(), why.c_str());
      return;
    }
    if (r < 0) continue;
    const double hit = mem::mean_step(s, steps);
    const double fixed = std::accumulate(dt.begin() + lap, dt.end(), 0.0) / lap - hit;
    for (int k = 0; k < lap; ++k) loads.samples.push_back(double(dt[k]) - fixed);
    overhead.samples.push_back(fixed), hits.samples.push_back(hit);
    cycles.push_back(double(s.c2 - s.c0)), clock.push_back(mem::mhz(s));
    loads.smid = overhead.smid = hits.smid = int(s.smid);
  }
  loads.iterations = lap, overhead.iterations = lap, hits.iterations = steps;
  const double sectors = double(kSectorBytes) / std::max(stride, 32L) + 1;  // + the cursor's own load
  hits.variant = "timed";
  hits.expect = {{"lts__t_sectors_srcunit_tex_op_read.sum", sectors},
                 {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 2.0 * lap + 3.0 * steps + 1}};
  for (smd::Record* rec : {&loads, &overhead, &hits}) {
    rec->cycles = smd::median(cycles), rec->clock_mhz = smd::median(clock);
    smd::emit(*rec);
  }
}

// A warmed chase of `slots` slots `stride` bytes apart (l1_capacity, l1_line, l1_ways) at the point's carveout.
void run_chain(const std::string& id, const std::map<std::string, long>& point, int repeats, long slots,
               long stride) {
  const long carveout = smd::param(point, "carveout");
  if (carveout < 0 || carveout > 100) smd::fail("carveout must be a percentage, 0..100", 2);
  if (slots < 1 || stride < 8 || stride % 8) smd::fail("a chain wants at least one slot and a stride of 8k B", 2);
  std::string why;
  char* base = geo::arena(size_t(slots) * stride, why);
  if (!base) return smd::static_point(id, point, why);
  std::vector<uint64_t> chain(slots);
  for (long k = 0; k < slots; ++k) chain[k] = reinterpret_cast<uint64_t>(base) + uint64_t(k) * stride;
  geo::link(chain);
  SMD_CHECK(cudaFuncSetAttribute(geo::lap_kernel<LoadCa>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                 int(carveout)));
  const long steps = lap_steps(slots, kMinSteps);
  geo::measure_laps<LoadCa>(id, point, repeats, chain[0], int(steps),
                            {{"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 4.0 * steps + 1}});
}

void run_footprint(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long kb = smd::param(point, "footprint_kb"), stride = smd::param(point, "stride_b");
  if (kb < 1 || stride < 8 || kb * 1024 % stride) smd::fail("footprint_kb x 1024 must be a multiple of the stride", 2);
  run_chain(id, point, repeats, kb * 1024 / stride, stride);
}

void run_ways(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long lines = smd::param(point, "lines"), stride_kb = smd::param(point, "stride_kb");
  if (lines < 1 || lines > 4096 || stride_kb < 1) smd::fail("lines must be in 1..4096 and stride_kb >= 1", 2);
  run_chain(id, point, repeats, lines, stride_kb * 1024);
}

int main(int argc, char** argv) {
  const auto chase = [] { return std::vector{mem::kernel("lap_kernel<LoadCa>", 32, kMinSteps)}; };
  return smd::family_main(argc, argv,
                          {{"l1_sector", [] { return std::vector{mem::kernel("cold_lap_kernel", 32, kMinSteps)}; },
                            run_sector},
                           {"l1_capacity", chase, run_footprint},
                           {"l1_line", chase, run_footprint},
                           {"l1_ways", chase, run_ways}});
}
