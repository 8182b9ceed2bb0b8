// L2 geometry from every SM at once (kCtas CTAs of 256 threads, ld.global.cg: the L1 bypassed):
//  l2_bandwidth  a window of `footprint_mb` read over and over: the L2-hit bandwidth while the window fits (one
//                partition's share of it on a GPU whose L2 is split), then the fall to DRAM;
//  l2_camping    each warp reads whole 128 B lines `stride_lines` lines apart (16384 lines, 2 MB of data, always
//                within the L2): a power-of-two stride that the slice hash maps to few L2 slices against the odd
//                stride beside it;
//  l2_persist    each pass reads a 16 MB hot buffer and then a fresh L2-sized chunk of a streaming buffer, with
//                (persist 1) or without (0) an L2 set-aside and a stream access-policy window over the hot buffer;
//                the limit is put back to 0 and the persisting lines reset after each point;
//  l2_address_map  from one chosen SM, the L2 hit latency of each of 512 consecutive 128 B lines (64 KB) timed alone
//                in address order, the same lines every launch: which lines are near and which far (the L2
//                partition of each address; smdissect.latency_modes splits them, as memory's chase_near_far does for
//                random lines, whose near and far latencies are the figures of those quantities);
//  device_geometry  the attributes the figures are checked against (L2 size, persisting maximum, shared memory).
// Every launch's data is checked by a closed-form sum of the words it read.
#include "../common/blocksum.cuh"
#include "geometry.cuh"

constexpr int kCtas = 512;
constexpr int kThreads = 256;
constexpr int kLoads = 4;                                   // 16 B loads in flight per thread
constexpr long kChunk = long(kCtas) * kThreads * kLoads;    // vectors of one grid-wide round: 8 MiB
constexpr double kLaunchBytes = 2.0 * (1L << 30);           // bytes an l2_bandwidth or l2_camping launch reads
constexpr long kCampLines = 16384;                          // lines l2_camping reads (4 per warp)
constexpr long kHotBytes = 16L << 20;                       // l2_persist's hot buffer
constexpr int kPersistPasses = 8;
constexpr int kMapLines = 512;  // lines l2_address_map times, in address order (64 KB)
constexpr int kMapSteps = 4 * kMapLines;  // chased steps per phase after them: the same lines' mean latency
constexpr int kSmSlots = 16;    // sm_slot s times from SM s x SMs / 16 (memory's chase_near_far's slots)

__device__ __forceinline__ uint4 load_cg(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

__device__ __forceinline__ uint32_t load_cg(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

// Word sum of one grid-stride read of nvec vectors (a multiple of kChunk), kLoads in flight per thread.
__device__ __forceinline__ uint32_t read_span(const uint4* p, long nvec) {
  const long stride = long(gridDim.x) * blockDim.x;
  uint32_t acc = 0;
#pragma unroll 1
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < nvec; i += kLoads * stride) {
    uint4 v[kLoads];
#pragma unroll
    for (int k = 0; k < kLoads; ++k) v[k] = load_cg(p + i + k * stride);
#pragma unroll
    for (int k = 0; k < kLoads; ++k) acc += v[k].x + v[k].y + v[k].z + v[k].w;
  }
  return acc;
}

// `passes` times: the hot window, then (cold_vecs > 0) pass p's chunk of the cold buffer.
__global__ void __launch_bounds__(kThreads) window_kernel(const uint4* hot, long hot_vecs, const uint4* cold,
                                                          long cold_vecs, int passes, unsigned* sum) {
  uint32_t acc = 0;
#pragma unroll 1
  for (int pass = 0; pass < passes; ++pass) {
    acc += read_span(hot, hot_vecs);
    if (cold_vecs) acc += read_span(cold + pass * cold_vecs, cold_vecs);
  }
  smd::add_block_sum(acc, sum);
}

// Warp w reads lines w + j x warps (j < kLoads per round) of `lines` lines `stride_words` words apart, lane l word l
// of each: one whole 128 B line per load instruction.
__global__ void __launch_bounds__(kThreads) camp_kernel(const uint32_t* base, long lines, long stride_words,
                                                        int passes, unsigned* sum) {
  const long warps = long(gridDim.x) * blockDim.x / 32, lane = threadIdx.x % 32;
  const long warp = (blockIdx.x * long(blockDim.x) + threadIdx.x) / 32;
  uint32_t acc = 0;
#pragma unroll 1
  for (int pass = 0; pass < passes; ++pass)
#pragma unroll 1
    for (long m = warp; m < lines; m += kLoads * warps) {
      uint32_t v[kLoads];
#pragma unroll
      for (int k = 0; k < kLoads; ++k) v[k] = load_cg(base + (m + k * warps) * stride_words + lane);
#pragma unroll
      for (int k = 0; k < kLoads; ++k) acc += v[k];
    }
  smd::add_block_sum(acc, sum);
}

// Word w of each 16 B-vector span holds first + w; the camping lines' words hold their index among them.
__global__ void fill_words(uint32_t* p, long words, uint32_t first) {
  for (long w = blockIdx.x * long(blockDim.x) + threadIdx.x; w < words; w += long(gridDim.x) * blockDim.x)
    p[w] = first + uint32_t(w);
}

__global__ void fill_lines(uint32_t* base, long lines, long stride_words) {
  for (long w = blockIdx.x * long(blockDim.x) + threadIdx.x; w < lines * 32; w += long(gridDim.x) * blockDim.x)
    base[(w / 32) * stride_words + w % 32] = uint32_t(w);
}

// Sum of the words first .. first + n - 1 modulo 2^32.
uint32_t word_sum(uint64_t first, uint64_t n) {
  const unsigned __int128 a = first, m = n;
  return uint32_t(((2 * a + m - 1) * m / 2) & 0xffffffffu);
}

// The arena as the family's one buffer (3 GiB at first: every point of the sweeps fits).
char* buffer(size_t bytes, const std::string& id, const std::map<std::string, long>& point) {
  std::string why;
  char* base = geo::arena(bytes, why, size_t(3) << 30);
  if (!base) smd::static_point(id, point, why);
  return base;
}

void fill(void* p, long bytes) {
  fill_words<<<1024, 256>>>(static_cast<uint32_t*>(p), bytes / 4, 0);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
}

// Time `repeats` launches (after an untimed one) of `launch(stream)` on `stream`, each checked against `want`:
// GB/s of `bytes` per launch, with the L2 sectors every launch must read from the L1/TEX unit.
template <class Launch>
void time_reads(const std::string& id, const std::map<std::string, long>& point, int repeats, cudaStream_t stream,
                double bytes, uint32_t want, unsigned* sum, Launch&& launch) {
  cudaEvent_t a, b;
  SMD_CHECK(cudaEventCreate(&a));
  SMD_CHECK(cudaEventCreate(&b));
  smd::Record rec{id, point, "bandwidth", "GB/s"};
  for (int r = -1; r < repeats; ++r) {
    SMD_CHECK(cudaMemsetAsync(sum, 0, sizeof(unsigned), stream));
    float ms = 0;
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"), r >= 0);
      SMD_CHECK(cudaEventRecord(a, stream));
      launch(stream);
      SMD_CHECK(cudaGetLastError());
      SMD_CHECK(cudaEventRecord(b, stream));
      SMD_CHECK(cudaEventSynchronize(b));
    }
    SMD_CHECK(cudaEventElapsedTime(&ms, a, b));
    uint32_t got = 0;
    SMD_CHECK(cudaMemcpy(&got, sum, sizeof(got), cudaMemcpyDeviceToHost));
    if (got != want) smd::fail(id + " read the wrong data (word sum): its indexing is broken");
    if (r >= 0) rec.samples.push_back(bytes / ms / 1e6);
  }
  SMD_CHECK(cudaEventDestroy(a));
  SMD_CHECK(cudaEventDestroy(b));
  rec.iterations = 1, rec.variant = "timed";
  rec.expect = {{"lts__t_sectors_srcunit_tex_op_read.sum", bytes / 32}};
  smd::emit(rec);
}

struct Sum {
  unsigned* p = nullptr;
  Sum() { SMD_CHECK(cudaMalloc(&p, sizeof(unsigned))); }
  ~Sum() { cudaFree(p); }
};

void run_bandwidth(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long mb = smd::param(point, "footprint_mb");
  if (mb < 8 || mb % 8) smd::fail("footprint_mb must be a multiple of 8 (one round of 512 CTAs x 256 x 4 x 16 B)", 2);
  const long vecs = (mb << 20) / 16;
  char* base = buffer(size_t(mb) << 20, id, point);
  if (!base) return;
  fill(base, mb << 20);
  const int passes = int(std::max(1.0, kLaunchBytes / double(mb << 20)));
  const auto* hot = reinterpret_cast<const uint4*>(base);
  Sum sum;
  const uint32_t want = uint32_t(uint64_t(word_sum(0, 4 * vecs)) * passes);
  time_reads(id, point, repeats, 0, double(vecs) * 16 * passes, want, sum.p, [&](cudaStream_t s) {
    window_kernel<<<kCtas, kThreads, 0, s>>>(hot, vecs, nullptr, 0, passes, sum.p);
  });
}

void run_camping(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long stride = smd::param(point, "stride_lines");
  if (stride < 1 || stride > 8192) smd::fail("stride_lines must be in 1..8192", 2);
  const long stride_words = stride * 32;
  char* base = buffer(size_t(kCampLines) * stride * 128, id, point);
  if (!base) return;
  auto* words = reinterpret_cast<uint32_t*>(base);
  fill_lines<<<1024, 256>>>(words, kCampLines, stride_words);
  SMD_CHECK(cudaGetLastError());
  const int passes = int(kLaunchBytes / (kCampLines * 128.0));
  Sum sum;
  const uint32_t want = uint32_t(uint64_t(word_sum(0, kCampLines * 32)) * passes);
  time_reads(id, point, repeats, 0, kCampLines * 128.0 * passes, want, sum.p, [&](cudaStream_t s) {
    camp_kernel<<<kCtas, kThreads, 0, s>>>(words, kCampLines, stride_words, passes, sum.p);
  });
}

// The stream's access-policy window over [p, p + bytes) as persisting (hit ratio 1), or none where bytes is 0.
void set_window(cudaStream_t s, void* p, size_t bytes) {
  cudaStreamAttrValue attr{};
  attr.accessPolicyWindow.base_ptr = p;
  attr.accessPolicyWindow.num_bytes = bytes;
  attr.accessPolicyWindow.hitRatio = bytes ? 1.0f : 0.0f;
  attr.accessPolicyWindow.hitProp = bytes ? cudaAccessPropertyPersisting : cudaAccessPropertyNormal;
  attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  SMD_CHECK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &attr));
}

void run_persist(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long persist = smd::param(point, "persist");
  if (persist != 0 && persist != 1) smd::fail("persist must be 0 (no set-aside) or 1", 2);
  const long most = geo::attribute(cudaDevAttrMaxPersistingL2CacheSize);
  const long window = geo::attribute(cudaDevAttrMaxAccessPolicyWindowSize);
  if (std::min(most, window) < kHotBytes)
    return smd::static_point(id, point, "the device sets aside at most " + std::to_string(most) +
                                            " B of L2 in windows of at most " + std::to_string(window) +
                                            " B: less than the 16 MiB hot buffer");
  const long chunk = (mem::sizes().l2_bytes + kChunk * 16 - 1) / (kChunk * 16) * kChunk;  // vectors >= the L2
  const long hot_vecs = kHotBytes / 16, bytes = (hot_vecs + kPersistPasses * chunk) * 16;
  char* base = buffer(size_t(bytes), id, point);
  if (!base) return;
  auto* hot = reinterpret_cast<uint4*>(base);
  const uint4* cold = hot + hot_vecs;
  fill(hot, kHotBytes);
  fill(base + kHotBytes, bytes - kHotBytes);
  cudaStream_t stream;
  SMD_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  if (persist) {
    SMD_CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, size_t(kHotBytes)));
    set_window(stream, hot, size_t(kHotBytes));
  }
  uint64_t want = uint64_t(word_sum(0, 4 * hot_vecs)) * kPersistPasses;
  for (int p = 0; p < kPersistPasses; ++p) want += word_sum(4 * uint64_t(p * chunk), 4 * uint64_t(chunk));
  Sum sum;
  time_reads(id, point, repeats, stream, double(bytes - kHotBytes) + double(kHotBytes) * kPersistPasses,
             uint32_t(want), sum.p, [&](cudaStream_t s) {
               window_kernel<<<kCtas, kThreads, 0, s>>>(hot, hot_vecs, cold, chunk, kPersistPasses, sum.p);
             });
  set_window(stream, nullptr, 0);
  SMD_CHECK(cudaCtxResetPersistingL2Cache());
  SMD_CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0));
  SMD_CHECK(cudaStreamDestroy(stream));
}

// The first CTA on the target SM reads every line through the L2 (warm), then its thread 0 times each line's load
// alone in address order (the line's word points to the next line: ld.global.cg, a shared store of the result waits
// for it), then chases the same cycle n and 2n steps.
__global__ void address_map_kernel(unsigned target_sm, int* claimed, unsigned* dt, uint64_t* cursor, mem::Slope* out) {
  __shared__ int mine;
  __shared__ uint32_t seen;
  if (threadIdx.x == 0) mine = smd::sm_id() == target_sm && atomicCAS(claimed, 0, 1) == 0;
  __syncthreads();
  if (!mine) return;
  const uint64_t first = *cursor;
  uint64_t acc = 0;
#pragma unroll 1
  for (int k = threadIdx.x; k < kMapLines; k += blockDim.x) acc ^= LoadCg::next(first + uint64_t(k) * 128);
  if (acc == 0x9e3779b97f4a7c15ull) cursor[1] = acc;
  __syncthreads();
  if (threadIdx.x != 0) return;
  uint64_t p[1] = {first};
  const uint32_t slot = uint32_t(__cvta_generic_to_shared(&seen));
#pragma unroll 1
  for (int k = 0; k < kMapLines; ++k) {
    const long long t0 = smd::clock_cycles();
    p[0] = LoadCg::next(p[0]);
    asm volatile("st.shared.u32 [%0], %1;" ::"r"(slot), "r"(uint32_t(p[0])) : "memory");  // waits for the load
    dt[k] = unsigned(smd::clock_cycles() - t0);
  }
  mem::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
  mem::chase<LoadCg, 1>(p, kMapSteps);
  s.c1 = smd::clock_cycles();
  mem::chase<LoadCg, 1>(p, 2 * kMapSteps);
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  *out = s;
  cursor[0] = p[0];  // the chase's end: its loads are kept, and the host checks it came back to the start
}

// Raw distribution data, as chase_near_far's: `load_latency` holds every timed load of every launch in address order
// (`iterations` = kMapLines per launch), each less its launch's fixed overhead (the timed loads' mean less the mean
// of the 3n chased loads over the same lines), recorded per launch as `timing_overhead`.
void run_address_map(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long slot = smd::param(point, "sm_slot");
  if (slot < 0 || slot >= kSmSlots) smd::fail("sm_slot must be in 0..15", 2);
  const auto& c = mem::chain_for(kMapLines * 128 / 1024, 128);  // lines k -> k+1, in address order
  const unsigned target = unsigned(slot * mem::sizes().sms / kSmSlots);
  mem::ChaseScratch scratch;
  int* claimed = nullptr;
  unsigned* dt_d = nullptr;
  SMD_CHECK(cudaMalloc(&claimed, sizeof(int)));
  SMD_CHECK(cudaMalloc(&dt_d, kMapLines * sizeof(unsigned)));
  const std::unique_ptr<int, cudaError_t (*)(void*)> free_claimed(claimed, cudaFree);
  const std::unique_ptr<unsigned, cudaError_t (*)(void*)> free_dt(dt_d, cudaFree);
  smd::Record loads{id, point, "load_latency", "cycle"}, overhead{id, point, "timing_overhead", "cycle"};
  std::vector<double> cycles, clock;
  std::vector<unsigned> dt(kMapLines);
  const uint64_t start = c.address(0);
  for (int r = -1; r < repeats; ++r) {
    SMD_CHECK(cudaMemset(claimed, 0, sizeof(int)));
    SMD_CHECK(cudaMemcpy(scratch.cursors, &start, sizeof(start), cudaMemcpyHostToDevice));
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"), r >= 0);
      address_map_kernel<<<2 * mem::sizes().sms, 1024>>>(target, claimed, dt_d, scratch.cursors, scratch.out);
      SMD_CHECK(cudaGetLastError());
      SMD_CHECK(cudaDeviceSynchronize());
    }
    int ran = 0;
    mem::Slope s;
    SMD_CHECK(cudaMemcpy(&ran, claimed, sizeof(int), cudaMemcpyDeviceToHost));
    if (!ran) smd::fail("no CTA ran on SM " + std::to_string(target) + ": cannot time from it");
    SMD_CHECK(cudaMemcpy(&s, scratch.out, sizeof(s), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(dt.data(), dt_d, kMapLines * sizeof(unsigned), cudaMemcpyDeviceToHost));
    uint64_t end = 0;
    SMD_CHECK(cudaMemcpy(&end, scratch.cursors, sizeof(end), cudaMemcpyDeviceToHost));
    if (end != start) smd::fail("address-map chase did not come back to its first line: the chain is broken");
    if (const std::string why = mem::phase_mismatch(s); !why.empty()) {
      std::fprintf(stderr, "%s %s: %s\n", id.c_str(), smd::params_json(point).c_str(), why.c_str());
      return;
    }
    if (r < 0) continue;
    const double fixed = std::accumulate(dt.begin(), dt.end(), 0.0) / kMapLines - mem::mean_step(s, kMapSteps);
    for (unsigned t : dt) loads.samples.push_back(double(t) - fixed);
    overhead.samples.push_back(fixed);
    cycles.push_back(double(s.c2 - s.c0)), clock.push_back(mem::mhz(s));
  }
  loads.iterations = kMapLines, overhead.iterations = kMapSteps;
  for (smd::Record* rec : {&loads, &overhead}) {
    rec->cycles = smd::median(cycles), rec->clock_mhz = smd::median(clock), rec->smid = int(target);
    smd::emit(*rec);
  }
}

// One record per attribute (bytes), read once per repeat.
void run_attributes(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const std::pair<const char*, cudaDeviceAttr> read[] = {
      {"l2_capacity", cudaDevAttrL2CacheSize},
      {"persisting_l2_max", cudaDevAttrMaxPersistingL2CacheSize},
      {"access_policy_max_window", cudaDevAttrMaxAccessPolicyWindowSize},
      {"smem_per_sm", cudaDevAttrMaxSharedMemoryPerMultiprocessor},
      {"smem_per_block_optin", cudaDevAttrMaxSharedMemoryPerBlockOptin},
      {"smem_reserved_per_block", cudaDevAttrReservedSharedMemoryPerBlock}};
  for (const auto& [metric, attr] : read) {
    smd::Record rec{id, point, metric, "B"};
    for (int r = 0; r < repeats; ++r) rec.samples.push_back(double(geo::attribute(attr)));
    smd::emit(rec);
  }
}

int main(int argc, char** argv) {
  const auto window = [] { return std::vector{mem::kernel("window_kernel", 2 * kLoads, 1)}; };
  return smd::family_main(
      argc, argv,
      {{"l2_bandwidth", window, run_bandwidth},
       {"l2_camping", [] { return std::vector{mem::kernel("camp_kernel", kLoads, 1)}; }, run_camping},
       {"l2_persist", window, run_persist},
       {"l2_address_map", [] { return std::vector{mem::kernel("address_map_kernel", 32, kMapSteps)}; },
        run_address_map},
       {"device_geometry", [] { return std::vector<smd::KernelInfo>{}; }, run_attributes}});
}
