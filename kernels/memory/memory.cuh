// Shared pieces of the memory category: device sizes, pointer chains, load flavours and the
// pointer-chase kernel (N independent chains, two segment lengths whose difference is the latency).
#pragma once
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>

#include "../common/harness.cuh"

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

// Clock reads of one timed thread: c0 | n steps | c1 | 2n steps | c2. The latency per step is the
// slope ((c2-c1) - (c1-c0)) / n, so clock reads, loop overhead and pipeline fill cancel.
struct Slope {
  long long c0, c1, c2;
  unsigned long long ns0, ns2;
  unsigned smid;
};

inline double per_step(const Slope& s, long steps) { return double((s.c2 - s.c1) - (s.c1 - s.c0)) / steps; }
inline double mhz(const Slope& s) { return s.ns2 > s.ns0 ? (s.c2 - s.c0) * 1e3 / double(s.ns2 - s.ns0) : 0.0; }


constexpr int kMaxChains = 64;
constexpr int kLine = 128;  // slot size of a random chain: every step touches a new cache line

// One chase launch: the footprint every thread of the CTA reads first (warm pass: caches and TLB),
// the chains' start cursors, and where thread 0 writes its clocks and final cursors.
struct ChaseArgs {
  const uint4* warm;
  long warm_vecs;
  uint64_t start[kMaxChains];  // host side; the kernel reads them from `cursors`
  int warm_steps;  // untimed chase steps before c0 (warms caches the warm pass cannot reach)
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

// All threads read the footprint (8 independent 16 B loads in flight each), so this SM's L1, the L2
// and the TLBs hold it; the XOR is kept behind a store the compiler cannot drop.
__device__ __forceinline__ void warm_pass(const uint4* warm, long vecs, uint64_t* sink) {
  unsigned acc = 0;
  constexpr int kDepth = 8;
  long i = threadIdx.x;
  for (; i + (kDepth - 1) * long(blockDim.x) < vecs; i += kDepth * long(blockDim.x)) {
    uint4 v[kDepth];
#pragma unroll
    for (int k = 0; k < kDepth; ++k) v[k] = warm[i + k * long(blockDim.x)];
#pragma unroll
    for (int k = 0; k < kDepth; ++k) acc ^= v[k].x ^ v[k].w;
  }
  for (; i < vecs; i += blockDim.x) acc ^= warm[i].x;
  if (acc == 0x9e3779b9u) sink[kMaxChains] = acc;
  __syncthreads();
}

// Warm pass by the whole CTA, then thread 0 chases N chains for n and 2n steps.
template <class Load, int N>
__global__ void __launch_bounds__(1024, 1) chase_kernel(ChaseArgs a) {  // the warm pass uses 1024 threads

  warm_pass(a.warm, a.warm_vecs, a.cursors);
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
    slots = std::max(1L, bytes / slot);
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

// One launch of chase_kernel<Load, N> from a.start: its clocks, after checking every final cursor lies in
// [base, base + bytes) (a broken chain fails here with one line).
template <class Load, int N>
Slope launch_chase(ChaseArgs a, const ChaseScratch& scratch, uint64_t base, long bytes) {
  a.out = scratch.out, a.cursors = scratch.cursors;
  SMD_CHECK(cudaMemcpy(a.cursors, a.start, N * sizeof(uint64_t), cudaMemcpyHostToDevice));
  chase_kernel<Load, N><<<1, 1024>>>(a);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
  Slope s;
  uint64_t cursors[N];
  SMD_CHECK(cudaMemcpy(&s, scratch.out, sizeof(Slope), cudaMemcpyDeviceToHost));
  SMD_CHECK(cudaMemcpy(cursors, scratch.cursors, sizeof(cursors), cudaMemcpyDeviceToHost));
  for (uint64_t c : cursors)
    if (c < base || c >= base + uint64_t(bytes)) smd::fail("pointer chase left its footprint: the chain is broken");
  if (s.c2 <= s.c1 || s.c1 <= s.c0) smd::fail("pointer chase clocks are not increasing");
  return s;
}

// Time `repeats` NVTX-wrapped launches (after one untimed launch) and emit cycles per step.
template <class Load, int N>
void measure_chase(const std::string& id, const std::map<std::string, long>& point, int repeats, ChaseArgs a,
                   uint64_t base, long bytes) {
  ChaseScratch scratch;
  launch_chase<Load, N>(a, scratch, base, bytes);
  smd::Record rec{id, point, "latency", "cycle"};
  std::vector<double> cycles, clock;
  for (int r = 0; r < repeats; ++r) {
    Slope s;
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      s = launch_chase<Load, N>(a, scratch, base, bytes);
    }
    rec.samples.push_back(per_step(s, a.steps));
    cycles.push_back(double(s.c2 - s.c0));
    clock.push_back(mhz(s));
    rec.smid = int(s.smid);
  }
  rec.cycles = smd::median(cycles), rec.clock_mhz = smd::median(clock), rec.iterations = a.steps;
  smd::emit(rec);
}

// Chase arguments for a chain: warm the whole footprint, N cursors from the chain.
inline ChaseArgs chase_args(const Chain& c, int n, int steps) {
  ChaseArgs a{};
  a.warm = reinterpret_cast<const uint4*>(c.buf);
  a.warm_vecs = c.bytes / 16;
  auto s = c.starts(n);
  std::copy(s.begin(), s.end(), a.start);
  a.steps = steps;
  return a;
}

// --list entry of one kernel with no swept template parameter.
inline smd::KernelInfo kernel(const std::string& symbol, long ops, long iterations,
                              std::map<std::string, long> params = {}) {
  return {std::move(params), "timed", ops, iterations, symbol};
}

}  // namespace mem
