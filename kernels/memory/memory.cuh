// Shared pieces of the memory category: device sizes, pointer chains, load flavours and the
// pointer-chase kernel (N independent chains, two segment lengths whose difference is the latency).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "../common/harness.cuh"
#include "../common/slope.cuh"

// Load flavours: the PTX cache operator of one dependent 64-bit global load. Global scope, so kernel
// symbols read chase_kernel<LoadCa,1> for the SASS stage.
#define SMD_GLOBAL_LOAD(Name, ptx)                                \
  struct Name {                                                   \
    __device__ __forceinline__ static uint64_t next(uint64_t p) { \
      uint64_t r;                                                 \
      asm volatile(ptx " %0, [%1];" : "=l"(r) : "l"(p));          \
      return r;                                                   \
    }                                                             \
  };
SMD_GLOBAL_LOAD(LoadDefault, "ld.global.u64")
SMD_GLOBAL_LOAD(LoadCa, "ld.global.ca.u64")
SMD_GLOBAL_LOAD(LoadCg, "ld.global.cg.u64")
SMD_GLOBAL_LOAD(LoadCs, "ld.global.cs.u64")
SMD_GLOBAL_LOAD(LoadLu, "ld.global.lu.u64")
SMD_GLOBAL_LOAD(LoadCv, "ld.global.cv.u64")
SMD_GLOBAL_LOAD(LoadNc, "ld.global.nc.u64")
#undef SMD_GLOBAL_LOAD

namespace mem {

// What the binary reads off the card instead of hard-coding one GPU's sizes.
struct Sizes {
  int sms;
  long l2_bytes, smem_block_optin, smem_sm;
  double dram_peak_gbs;  // 2 (DDR) x memory clock x bus width: the attribute-derived peak
};

inline Sizes sizes() {
  int dev = 0, sms = 0, l2 = 0, optin = 0, per_sm = 0, mem_khz = 0, bus_bits = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  SMD_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  SMD_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  SMD_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  SMD_CHECK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev));
  SMD_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev));
  return {sms, l2, optin, per_sm, 2.0 * mem_khz * 1e3 * bus_bits / 8 / 1e9};
}

// Clock reads of one timed thread (smd::Slope): per_step is the slope of its two phases, so clock reads and
// pipeline fill cancel (shared memory, atomics). A pointer-chase sample is mean_step, the mean over all 3n
// steps: with n >= 2048 the fixed cost the slope cancels (34 cycles
// on an H200: 1572898 = 3 x 16384 x 32 + 34 at the L1 level) adds under 0.006 cycle to the mean, while the
// slope weighs each load's jitter 3x more (variance 3 s^2 / n against s^2 / 3n) and, where the hit rate drifts
// along a long chain, extrapolates the drift (2b - a of phase means a, b) instead of averaging it.
using smd::mhz;
using smd::per_step;
using smd::Slope;
inline double mean_step(const Slope& s, long steps) { return double(s.c2 - s.c0) / (3.0 * steps); }

// The mean is a per-load latency only if both phases walk lines in the same cache state: then the 2n
// steps take about twice the n steps. Anything else (the first phase slowed by lines the second finds
// cached, or the reverse) fails with one line instead of emitting a wrong number.
// Why the two timed phases of a chase disagree (phase 2 should take about twice phase 1), or "" if they agree.
inline std::string phase_mismatch(const Slope& s) {
  return smd::phase_mismatch(s, "pointer chase", ": the chain's cache state changed between them");
}

constexpr int kMaxChains = 64;
constexpr int kLine = 128;  // slot size of a random chain: every step touches a new cache line

// One chase launch: the slots every thread of the CTA reads first (warm pass: caches and TLB; none where
// warm_slots is 0), the chains' start cursors, and where thread 0 writes its clocks and final cursors.
struct ChaseArgs {
  const uint64_t* warm;  // slot k's pointer is warm[k * warm_stride]
  long warm_slots, warm_stride;
  uint64_t start[kMaxChains];  // host side; the kernel reads them from `cursors`
  int warm_steps;              // untimed chase steps before c0 (see plan)
  int steps;
  Slope* out;
  uint64_t* cursors;
};

// Steps per unrolled loop body: a power of two, so that every step count of the protocol (a multiple of
// 32) is whole; the body holds 32 loads or, for N > 32, one round of N.
template <int N>
__host__ __device__ constexpr int unroll() {
  int u = 1;
  while (u * 2 * N <= 32) u *= 2;
  return u;
}

template <class Load, int N>
__device__ __forceinline__ void chase(uint64_t (&p)[N], int steps) {
#pragma unroll 1
  for (int s = 0; s < steps; s += unroll<N>())
#pragma unroll
    for (int u = 0; u < unroll<N>(); ++u)
#pragma unroll
      for (int i = 0; i < N; ++i) p[i] = Load::next(p[i]);
}

// All threads read the pointer of every slot (8 independent loads in flight each): exactly the sectors
// the chase touches, so this SM's L1, the L2 and the TLBs hold the chain and nothing else of the
// footprint (at stride 2048 B the chain's lines are 1/16 of it). The XOR is kept behind a store the
// compiler cannot drop.
__device__ __forceinline__ void warm_pass(const uint64_t* warm, long slots, long stride, uint64_t* sink) {
  uint64_t acc = 0;
  constexpr int kDepth = 8;
  const long threads = blockDim.x;
  long k = threadIdx.x;
  for (; k + (kDepth - 1) * threads < slots; k += kDepth * threads) {
    uint64_t v[kDepth];
#pragma unroll
    for (int d = 0; d < kDepth; ++d) v[d] = warm[(k + d * threads) * stride];
#pragma unroll
    for (int d = 0; d < kDepth; ++d) acc ^= v[d];
  }
  for (; k < slots; k += threads) acc ^= warm[k * stride];
  if (acc == 0x9e3779b97f4a7c15ull) sink[kMaxChains] = acc;
  __syncthreads();
}

// Threads of a chase CTA (all warm, one chases): 1024 while the N cursors fit the 64 registers a thread
// of a 1024-thread CTA may hold; 256 (up to 255 registers) for more chains, which would spill otherwise.
template <int N>
__host__ __device__ constexpr int chase_threads() {
  return N > 16 ? 256 : 1024;
}

// Warm pass by the whole CTA (if any), then thread 0 chases N chains for warm_steps (untimed), n and 2n steps.
template <class Load, int N>
__global__ void __launch_bounds__(chase_threads<N>(), 1) chase_kernel(ChaseArgs a) {
  warm_pass(a.warm, a.warm_slots, a.warm_stride, a.cursors);
  if (threadIdx.x != 0) return;
  uint64_t p[N];  // read from global memory, so the cursors live in vector registers (LDC, not ULDC)
#pragma unroll
  for (int i = 0; i < N; ++i) p[i] = a.cursors[i];
  chase<Load, N>(p, a.warm_steps);
  Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
  chase<Load, N>(p, a.steps);
  s.c1 = smd::clock_cycles();
  chase<Load, N>(p, 2 * a.steps);
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  *a.out = s;
#pragma unroll
  for (int i = 0; i < N; ++i) a.cursors[i] = p[i];
}

// Slot k of a chain of `slots` slots points to slot next[k]: k+1 (sequential stride) or a random
// single cycle (Sattolo's shuffle, fixed seed) when `random`.
inline std::vector<uint32_t> successors(long slots, bool random) {
  std::vector<uint32_t> next(slots);
  if (!random) {
    for (long k = 0; k < slots; ++k) next[k] = uint32_t((k + 1) % slots);
    return next;
  }
  std::vector<uint32_t> order(slots);
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937_64 rng(12345);
  for (long i = slots - 1; i > 0; --i) std::swap(order[i], order[std::uniform_int_distribution<long>(0, i - 1)(rng)]);
  for (long i = 0; i < slots; ++i) next[order[i]] = order[(i + 1) % slots];
  return next;
}

__global__ void scatter_chain(uint64_t* buf, const uint32_t* next, long slots, long slot_words) {
  for (long k = blockIdx.x * long(blockDim.x) + threadIdx.x; k < slots; k += long(gridDim.x) * blockDim.x)
    buf[k * slot_words] = reinterpret_cast<uint64_t>(buf + next[k] * slot_words);
}

// Slots of a chain: one per stride_b bytes of the footprint (stride_b 0: per 128 B line of a random chain).
inline long chain_slots(long footprint_kb, long stride_b) {
  return std::max(1L, footprint_kb * 1024 / (stride_b > 0 ? stride_b : kLine));
}

// A pointer chain in device memory: footprint bytes, one pointer per slot, N start cursors spread
// evenly along the cycle so N chains never share a slot at the same step.
struct Chain {
  uint64_t* buf = nullptr;
  long bytes = 0, slot = 0, slots = 0;
  std::vector<uint32_t> next;

  // stride_b > 0: sequential chain with that stride; 0: random cycle over 128 B lines.
  Chain(long footprint_kb, long stride_b) : bytes(footprint_kb * 1024), slot(stride_b > 0 ? stride_b : kLine) {
    if (footprint_kb < 1 || stride_b < 0 || (stride_b > 0 && stride_b % 8))
      smd::fail("footprint_kb >= 1 and stride_b (0 = random, else a multiple of 8) wanted, got " +
                    std::to_string(footprint_kb) + ", " + std::to_string(stride_b), 2);
    slots = chain_slots(footprint_kb, stride_b);
    next = successors(slots, stride_b == 0);
    uint32_t* dnext = nullptr;
    SMD_CHECK(cudaMalloc(&buf, bytes));
    SMD_CHECK(cudaMemset(buf, 0, bytes));
    SMD_CHECK(cudaMalloc(&dnext, slots * sizeof(uint32_t)));
    SMD_CHECK(cudaMemcpy(dnext, next.data(), slots * sizeof(uint32_t), cudaMemcpyHostToDevice));
    scatter_chain<<<1024, 256>>>(buf, dnext, slots, slot / 8);
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaDeviceSynchronize());
    SMD_CHECK(cudaFree(dnext));
  }
  Chain(const Chain&) = delete;
  Chain& operator=(const Chain&) = delete;
  ~Chain() { cudaFree(buf); }

  uint64_t address(long k) const { return reinterpret_cast<uint64_t>(buf) + uint64_t(k) * slot; }

  // Start cursors of n chains, n/slots apart along the cycle from slot 0.
  std::vector<uint64_t> starts(int n) const {
    std::vector<uint64_t> out;
    long k = 0;
    for (long step = 0, want = 0; int(out.size()) < n; ++step, k = next[k])
      if (step == want * slots / n) out.push_back(address(k)), ++want;
    return out;
  }
};

// The chain of the previous sweep point is reused when the next point has the same shape.
inline Chain& chain_for(long footprint_kb, long stride_b) {
  static std::unique_ptr<Chain> cached;
  static long key_kb = -1, key_stride = -1;
  if (!cached || key_kb != footprint_kb || key_stride != stride_b) {
    cached.reset();
    cached = std::make_unique<Chain>(footprint_kb, stride_b);
    key_kb = footprint_kb, key_stride = stride_b;
  }
  return *cached;
}

// Device scratch for one chase launch: its clocks and final cursors.
struct ChaseScratch {
  Slope* out = nullptr;
  uint64_t* cursors = nullptr;
  ChaseScratch() {
    SMD_CHECK(cudaMalloc(&out, sizeof(Slope)));
    SMD_CHECK(cudaMalloc(&cursors, (kMaxChains + 1) * sizeof(uint64_t)));
  }
  ~ChaseScratch() {
    cudaFree(out);
    cudaFree(cursors);
  }
};

// The clocks of the chase launch just enqueued, after checking each of its `n` final cursors lies in
// [base, base + bytes) (a broken chain fails here with one line).
inline Slope chase_result(const ChaseScratch& scratch, int n, uint64_t base, long bytes) {
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
  Slope s;
  std::vector<uint64_t> cursors(n);
  SMD_CHECK(cudaMemcpy(&s, scratch.out, sizeof(Slope), cudaMemcpyDeviceToHost));
  SMD_CHECK(cudaMemcpy(cursors.data(), scratch.cursors, n * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  for (uint64_t c : cursors)
    if (c < base || c >= base + uint64_t(bytes)) smd::fail("pointer chase left its footprint: the chain is broken");
  if (s.c2 <= s.c1 || s.c1 <= s.c0) smd::fail("pointer chase clocks are not increasing");
  return s;
}

// One launch of chase_kernel<Load, N> from a.start: its clocks (chase_result).
template <class Load, int N>
Slope launch_chase(ChaseArgs a, const ChaseScratch& scratch, uint64_t base, long bytes) {
  a.out = scratch.out, a.cursors = scratch.cursors;
  SMD_CHECK(cudaMemcpy(a.cursors, a.start, N * sizeof(uint64_t), cudaMemcpyHostToDevice));
  chase_kernel<Load, N><<<1, chase_threads<N>()>>>(a);
  return chase_result(scratch, N, base, bytes);
}

// Time `repeats` NVTX-wrapped launches (after one untimed launch) and emit cycles per step: `launch()` runs one
// and returns its clocks, `steps` is n (a sample averages 3n loads). A point whose phases disagree emits no record
// (one stderr line says why), so the run lists it as failed, not as a number.
template <class Launch>
void measure_launches(const std::string& id, const std::map<std::string, long>& point, int repeats, long steps,
                      Launch&& launch) {
  launch();
  smd::Record rec{id, point, "latency", "cycle"};
  std::vector<double> cycles, clock;
  for (int r = 0; r < repeats; ++r) {
    Slope s;
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      s = launch();
    }
    if (const std::string why = phase_mismatch(s); !why.empty()) {
      std::fprintf(stderr, "%s %s: %s\n", id.c_str(), smd::params_json(point).c_str(), why.c_str());
      return;
    }
    rec.samples.push_back(mean_step(s, steps));
    cycles.push_back(double(s.c2 - s.c0));
    clock.push_back(mhz(s));
    rec.smid = int(s.smid);
  }
  rec.cycles = smd::median(cycles), rec.clock_mhz = smd::median(clock), rec.iterations = steps;
  smd::emit(rec);
}

// measure_launches of chase_kernel<Load, N> with arguments `a`.
template <class Load, int N>
void measure_chase(const std::string& id, const std::map<std::string, long>& point, int repeats, ChaseArgs a,
                   uint64_t base, long bytes) {
  ChaseScratch scratch;
  measure_launches(id, point, repeats, a.steps, [&] { return launch_chase<Load, N>(a, scratch, base, bytes); });
}

// Timed steps per phase (a sample averages 3n dependent loads per chain) of a family: `near` for a footprint
// within half the L2, `far` beyond it, where one load's latency jitters by ~100 cycles (DRAM, L2 hits mixed
// with misses) and a sample must average ~200k loads to settle within a cycle (~65 ms at 660 cycles, 1.98 GHz).
struct StepRule {
  long near, far;
};
constexpr StepRule kChaseSteps{32768, 65536};  // the staircase: whole cycles of chains up to 65536 slots
constexpr StepRule kMlpSteps{16384, 65536};    // rounds of N loads

inline long min_steps(long bytes, long l2_bytes, StepRule rule) {
  return bytes > l2_bytes / 2 ? rule.far : rule.near;
}

constexpr long kWarmChase = 2048;  // untimed steps of a long chain after its warm pass (TLB, pipeline, rows)

// How a chain of `slots` slots is chased per launch: n timed steps per phase (a sample averages 3n dependent
// loads per chain), untimed warm steps before them, and whether the whole CTA reads every slot first.
struct Plan {
  long steps, warm_steps;
  bool warm_pass;
};

// A chain whose cycle (rounded up to whole loop bodies) is at most 2 x `min_steps` slots is walked in whole
// cycles: n is the first multiple of the cycle >= min_steps, and n untimed steps (at least one cycle, four
// where the cycle is <= min_steps / 4) bring the caches to the steady state of walking it. Only thread 0
// touches the chain, in the chase's own order, so every launch reaches the same state (a CTA-wide warm pass
// races 32 warps and leaves a different set of lines in a cache smaller than the chain each time). A longer
// cycle (over 65536 slots at the staircase's 32768 steps: more than 8 MB of lines) is not revisited in the
// timed steps: the CTA's warm pass reads every slot (L2, TLB), kWarmChase untimed steps follow, then n steps.
inline Plan plan(long slots, long min_steps) {
  const long cycle = std::lcm(slots, 32L);  // 32: every unroll<N>() divides it
  if (cycle <= 2 * min_steps) {
    const long n = (min_steps + cycle - 1) / cycle * cycle;
    return {n, n, false};
  }
  return {min_steps, kWarmChase, true};
}

// Chase arguments for a chain: N cursors from the chain and the steps of plan(c.slots, min_steps).
inline ChaseArgs chase_args(const Chain& c, int n, long min_steps) {
  ChaseArgs a{};
  const Plan p = plan(c.slots, min_steps);
  a.warm = c.buf;
  a.warm_slots = p.warm_pass ? c.slots : 0;
  a.warm_stride = c.slot / 8;
  auto s = c.starts(n);
  std::copy(s.begin(), s.end(), a.start);
  a.steps = int(p.steps);
  a.warm_steps = int(p.warm_steps);
  return a;
}

// The staircase (chase.cu) walks a chain in plan()'s whole cycles where plan() does. A longer chain is timed in
// kWindows windows from fixed cursors spread evenly along it, each right after one warp's in-order read of every
// slot and kWindowWarm untimed steps, with n / kWindows timed steps per phase: a sample still averages 3n loads,
// and every sample walks the same lines from the same cache state (see staircase_kernel).
constexpr int kWindows = 8;
constexpr long kWindowWarm = 512;
static_assert(kWindows <= kMaxChains, "a window's cursor is one of ChaseArgs' start cursors");

// How the staircase chases one chain: per window n timed steps per phase and warm untimed steps before them.
struct Windows {
  long steps, warm_steps;
  int windows;
  bool warm_pass;
};

inline Windows staircase_plan(long slots, long min_steps) {
  const Plan p = plan(slots, min_steps);
  if (!p.warm_pass) return {p.steps, p.warm_steps, 1, false};
  return {min_steps / kWindows, kWindowWarm, kWindows, true};
}

// --list entry of one kernel with no swept template parameter.
inline smd::KernelInfo kernel(const std::string& symbol, long ops, long iterations,
                              std::map<std::string, long> params = {}) {
  return {std::move(params), "timed", ops, iterations, symbol};
}

}  // namespace mem
