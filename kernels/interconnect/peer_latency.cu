// Latency of one thread on GPU `gpu` reaching memory of GPU `mem` (gpu == mem: local, else the peer-mapped
// pointer): dependent system-scope atomics (atom.add.sys, each operand the previous result) and a dependent
// 64-bit pointer chase over a random permutation of 128 B lines. Both are the slope between n and 2n steps.
#include <memory>
#include <numeric>
#include <random>

#include "interconnect.cuh"

constexpr int kAtomicSteps = 512;  // dependent atomics: n then 2n
constexpr int kChaseSteps = 1024;  // dependent loads: n then 2n
constexpr int kUnroll = 32;
constexpr long kLine = 128;  // chain slot: every step touches a new line
constexpr int kWarmThreads = 1024;

// The cell holds 0 and every operand is the previous result (0): a dependent chain the compiler cannot
// shorten, and the cell never changes (checked, and safe to replay).
__global__ void atomic_sys_latency(unsigned long long* cell, ic::Slope* out, unsigned long long* result) {
  unsigned long long x = *cell;
  ic::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
#pragma unroll 1
  for (int i = 0; i < kAtomicSteps; i += kUnroll)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) x = atomicAdd_system(cell, x);
  s.c1 = smd::clock_cycles();
#pragma unroll 1
  for (int i = 0; i < 2 * kAtomicSteps; i += kUnroll)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) x = atomicAdd_system(cell, x);
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  *out = s;
  *result = x;
}

__device__ __forceinline__ uint64_t next(uint64_t p) {
  uint64_t r;
  asm volatile("ld.global.u64 %0, [%1];" : "=l"(r) : "l"(p));
  return r;
}

// The whole CTA reads every slot first (caches and TLB hold the chain), then thread 0 chases n and 2n steps.
__global__ void __launch_bounds__(kWarmThreads, 1)
    peer_chase(const uint64_t* slots, long count, long slot_words, uint64_t start, ic::Slope* out, uint64_t* end) {
  uint64_t acc = 0;
  constexpr int kDepth = 8;  // independent warm loads in flight per thread
  long k = threadIdx.x;
  for (; k + (kDepth - 1) * long(blockDim.x) < count; k += kDepth * long(blockDim.x)) {
    uint64_t v[kDepth];
#pragma unroll
    for (int d = 0; d < kDepth; ++d) v[d] = slots[(k + d * long(blockDim.x)) * slot_words];
#pragma unroll
    for (int d = 0; d < kDepth; ++d) acc ^= v[d];
  }
  for (; k < count; k += blockDim.x) acc ^= slots[k * slot_words];
  if (acc == 0x9e3779b97f4a7c15ull) end[1] = acc;
  __syncthreads();
  if (threadIdx.x != 0) return;
  uint64_t p = start;
  ic::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
#pragma unroll 1
  for (int i = 0; i < kChaseSteps; i += kUnroll)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) p = next(p);
  s.c1 = smd::clock_cycles();
#pragma unroll 1
  for (int i = 0; i < 2 * kChaseSteps; i += kUnroll)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) p = next(p);
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  *out = s;
  end[0] = p;
}

// Per-launch outputs on the timing GPU.
struct Scratch {
  ic::Buffer slope, result;
  explicit Scratch(int dev) : slope(dev, sizeof(ic::Slope)), result(dev, 2 * sizeof(uint64_t)) {}
  ic::Slope read(uint64_t* value) const {
    ic::Slope s;
    SMD_CHECK(cudaMemcpy(&s, slope.ptr, sizeof(s), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(value, result.ptr, sizeof(uint64_t), cudaMemcpyDeviceToHost));
    if (s.c2 <= s.c1 || s.c1 <= s.c0) smd::fail("clocks of the timed thread are not increasing");
    return s;
  }
};

// Untimed launch, then `repeats` NVTX-wrapped launches: cycles per step, each launch's result checked by
// `valid`; a point whose phases disagree emits no record (one stderr line says why).
template <class Launch, class Valid>
void measure(const std::string& id, const std::map<std::string, long>& point, int repeats, int steps,
             const Scratch& scratch, Launch launch, Valid valid) {
  smd::Record rec{id, point, "latency", "cycle"};
  std::vector<double> cycles, clock;
  for (int r = -1; r < repeats; ++r) {
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"), r >= 0);
      launch();
      SMD_CHECK(cudaGetLastError());
      SMD_CHECK(cudaDeviceSynchronize());
    }
    uint64_t value = 0;
    const ic::Slope s = scratch.read(&value);
    if (!valid(value)) smd::fail(id + " " + smd::params_json(point) + ": the timed thread's result is wrong");
    if (r < 0) continue;
    if (const std::string why = ic::phase_mismatch(s); !why.empty()) {
      std::fprintf(stderr, "%s %s: %s\n", id.c_str(), smd::params_json(point).c_str(), why.c_str());
      return;
    }
    rec.samples.push_back(ic::per_step(s, steps));
    cycles.push_back(double(s.c2 - s.c0));
    clock.push_back(ic::mhz(s));
    rec.smid = int(s.smid);
  }
  rec.cycles = smd::median(cycles), rec.clock_mhz = smd::median(clock), rec.iterations = steps;
  smd::emit(rec);
}

void run_atomic(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  int gpu = 0, mem = 0;
  if (!ic::resolve(id, point, "gpu", "mem", gpu, mem)) return;
  if (gpu != mem) {
    int native = 0;
    SMD_CHECK(cudaDeviceGetP2PAttribute(&native, cudaDevP2PAttrNativeAtomicSupported, gpu, mem));
    if (!native) {
      smd::static_point(id, point, "the link between GPUs " + std::to_string(gpu) + " and " + std::to_string(mem) +
                                       " has no native atomics (cudaDevP2PAttrNativeAtomicSupported = 0)");
      return;
    }
  }
  ic::Buffer cell(mem, sizeof(unsigned long long));
  SMD_CHECK(cudaMemset(cell.ptr, 0, sizeof(unsigned long long)));
  SMD_CHECK(cudaDeviceSynchronize());
  Scratch scratch(gpu);
  auto* word = static_cast<unsigned long long*>(cell.ptr);
  auto* slope = static_cast<ic::Slope*>(scratch.slope.ptr);
  auto* result = static_cast<unsigned long long*>(scratch.result.ptr);
  SMD_CHECK(cudaSetDevice(gpu));
  measure(id, point, repeats, kAtomicSteps, scratch, [&] { atomic_sys_latency<<<1, 1>>>(word, slope, result); },
          [](uint64_t x) { return x == 0; });
}

// Successor of each line of a random single cycle over `slots` lines (Sattolo's shuffle, fixed seed), kept for
// the last slot count asked.
const std::vector<uint32_t>& successors(long slots) {
  static std::vector<uint32_t> next;
  if (long(next.size()) == slots) return next;
  std::vector<uint32_t> order(slots);
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937_64 rng(12345);
  for (long i = slots - 1; i > 0; --i) std::swap(order[i], order[std::uniform_int_distribution<long>(0, i - 1)(rng)]);
  next.assign(slots, 0);
  for (long i = 0; i < slots; ++i) next[order[i]] = order[(i + 1) % slots];
  return next;
}

__global__ void scatter_chain(uint64_t* buf, const uint32_t* next, long slots) {
  for (long k = blockIdx.x * long(blockDim.x) + threadIdx.x; k < slots; k += long(gridDim.x) * blockDim.x)
    buf[k * (kLine / 8)] = reinterpret_cast<uint64_t>(buf + next[k] * (kLine / 8));
}

// The chain in `bytes` of GPU `dev`: line k points to line next[k] (addresses valid on every peer, UVA).
struct Chain {
  ic::Buffer buf;
  long slots;
  Chain(int dev, long bytes) : buf(dev, bytes), slots(bytes / kLine) {
    const auto& next = successors(slots);
    ic::Buffer dnext(dev, slots * sizeof(uint32_t));
    SMD_CHECK(cudaMemcpy(dnext.ptr, next.data(), slots * sizeof(uint32_t), cudaMemcpyHostToDevice));
    scatter_chain<<<1024, 256>>>(static_cast<uint64_t*>(buf.ptr), static_cast<const uint32_t*>(dnext.ptr), slots);
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaDeviceSynchronize());
  }
  uint64_t base() const { return reinterpret_cast<uint64_t>(buf.ptr); }
};

// Chains of one footprint, one per GPU that holds one, kept while the sweep stays at that footprint.
Chain& chain_for(int dev, long footprint_mb) {
  static std::map<int, std::unique_ptr<Chain>> chains;
  static long kept_mb = -1;
  if (kept_mb != footprint_mb) chains.clear(), kept_mb = footprint_mb;
  auto& c = chains[dev];
  if (!c) c = std::make_unique<Chain>(dev, footprint_mb << 20);
  return *c;
}

void run_chase(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  int gpu = 0, mem = 0;
  const long footprint_mb = smd::param(point, "footprint_mb");
  if (footprint_mb < 1 || footprint_mb > 4096) smd::fail("footprint_mb must be in 1..4096", 2);
  if (!ic::resolve(id, point, "gpu", "mem", gpu, mem)) return;
  Chain& chain = chain_for(mem, footprint_mb);
  Scratch scratch(gpu);
  const auto* slots = static_cast<const uint64_t*>(chain.buf.ptr);
  auto* slope = static_cast<ic::Slope*>(scratch.slope.ptr);
  auto* end = static_cast<uint64_t*>(scratch.result.ptr);
  const uint64_t lo = chain.base(), hi = lo + uint64_t(footprint_mb << 20);
  SMD_CHECK(cudaSetDevice(gpu));
  measure(id, point, repeats, kChaseSteps, scratch,
          [&] { peer_chase<<<1, kWarmThreads>>>(slots, chain.slots, kLine / 8, lo, slope, end); },
          [&](uint64_t p) { return p >= lo && p < hi && (p - lo) % kLine == 0; });
}

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv,
      {{"atomic_sys_latency", [] { return std::vector{ic::kernel("atomic_sys_latency", kUnroll, kAtomicSteps)}; },
        run_atomic},
       {"peer_chase", [] { return std::vector{ic::kernel("peer_chase", kUnroll, kChaseSteps)}; }, run_chase}});
}
