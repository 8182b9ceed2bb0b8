// Atomics beyond memory's add and CAS: red (no result) against atom (result used) for add; min, max, exch, and, or
// on u32; f16x2 and bf16x2 add; vector red.global.v2/v4.f32 add; shared-memory atomics on the own CTA and, through
// mapa, on a peer CTA of the cluster. Latency: one thread, each atomic's operand the previous one's result, the
// slope between n and 2n (memory/atomics.cu's method), on a ring of 32 words 4 KB apart in global memory (immediate
// offsets: no address arithmetic on the chain) or on one word of shared memory. Throughput: memory/atomics.cu's grid
// (4 CTAs of 256 threads per SM, 64 independent atomics per thread, all over the grid's %globaltimer span) with
// a word per thread (contention 0, memory's encoding), one word for all (1) or a word per warp (2, 128 B apart).
#include <cmath>
#include <cstdint>

#include "../cluster/cluster.cuh"
#include "sync.cuh"

constexpr int kSteps = 1024;      // dependent atomics: n then 2n
constexpr int kUnroll = 32;       // atomics per pass of the latency loop: one per ring word
constexpr long kWordStride = 1024;  // u32 words between ring words: 4 KB
constexpr int kPerThread = 64;    // independent atomics per thread in the throughput kernels
constexpr int kThreads = 256;
constexpr int kCtasPerSm = 4;
// Throughput launches repeat their kPerThread atomics `passes` times (passes_of), so that a launch lasts about 1 ms on
// an H200: one pass with a word per thread is ~15 us (global) or ~1.3 us (shared), where the CTAs' start and finish
// spread (a few us) scattered the samples by up to 17%. The passes are fixed per point, not timed, so that the
// profiled process (ncu) runs the very launch whose counters the run's records claim.
// Warp-level SASS instructions of each kind a launch executes (ncu): the count every record claims.
constexpr const char* kGlobalAtom = "smsp__sass_inst_executed_op_global_atom.sum";
constexpr const char* kGlobalRed = "smsp__sass_inst_executed_op_global_red.sum";
constexpr const char* kSharedAtom = "smsp__sass_inst_executed_op_shared_atom.sum";

// Global atomics whose result is used (x' = atom(p, x)) and reductions (red: no result), as named structs so that
// symbols read atom_latency<AtomMin>; kWords: u32 words one operation covers (its alignment, for a word per thread);
// kDistinct: the throughput kernel gives each of a thread's atomics its own operand, because ptxas merges repeated
// idempotent reductions of one value on one address (64 red.or of x became one REDG.E.OR).
#define SMD_ATOM(Name, ptx)                                                                        \
  struct Name {                                                                                    \
    static constexpr int kWords = 1;                                                               \
    static constexpr bool kDistinct = false;                                                       \
    __device__ __forceinline__ static unsigned apply(unsigned* p, unsigned x) {                    \
      unsigned r;                                                                                  \
      asm volatile(ptx " %0, [%1], %2;" : "=r"(r) : "l"(p), "r"(x) : "memory");                    \
      return r;                                                                                    \
    }                                                                                              \
  };
#define SMD_RED(Name, ptx, distinct)                                                               \
  struct Name {                                                                                    \
    static constexpr int kWords = 1;                                                               \
    static constexpr bool kDistinct = distinct;                                                    \
    __device__ __forceinline__ static void apply(unsigned* p, unsigned x) {                        \
      asm volatile(ptx " [%0], %1;" ::"l"(p), "r"(x) : "memory");                                  \
    }                                                                                              \
  };
SMD_ATOM(AtomAdd, "atom.global.add.u32")
SMD_ATOM(AtomMin, "atom.global.min.u32")
SMD_ATOM(AtomMax, "atom.global.max.u32")
SMD_ATOM(AtomExch, "atom.global.exch.b32")
SMD_ATOM(AtomAnd, "atom.global.and.b32")
SMD_ATOM(AtomOr, "atom.global.or.b32")
SMD_ATOM(AtomAddF16x2, "atom.global.add.noftz.f16x2")
SMD_RED(RedAdd, "red.global.add.u32", false)
SMD_RED(RedMin, "red.global.min.u32", true)
SMD_RED(RedMax, "red.global.max.u32", true)
SMD_RED(RedAnd, "red.global.and.b32", true)
SMD_RED(RedOr, "red.global.or.b32", true)
SMD_RED(RedAddF16x2, "red.global.add.noftz.f16x2", false)
#undef SMD_ATOM
#undef SMD_RED
// sm_90 and newer only (PTX: bf16x2 atom/red and vector red need sm_90): a trap below it, where the cases are static.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define SMD_SM90(body) __trap();
#else
#define SMD_SM90(body) body
#endif
struct AtomAddBf16x2 {
  static constexpr int kWords = 1;
  static constexpr bool kDistinct = false;
  __device__ __forceinline__ static unsigned apply(unsigned* p, unsigned x) {
    unsigned r = 0;
    SMD_SM90(asm volatile("atom.global.add.noftz.bf16x2 %0, [%1], %2;" : "=r"(r) : "l"(p), "r"(x) : "memory");)
    return r;
  }
};
struct RedAddBf16x2 {
  static constexpr int kWords = 1;
  static constexpr bool kDistinct = false;
  __device__ __forceinline__ static void apply(unsigned* p, unsigned x) {
    SMD_SM90(asm volatile("red.global.add.noftz.bf16x2 [%0], %1;" ::"l"(p), "r"(x) : "memory");)
  }
};
// Vector reductions: 2 or 4 f32 adds in one instruction (the operand's bits as f32: 0, so the cells stay 0).
struct RedAddV2F32 {
  static constexpr int kWords = 2;
  static constexpr bool kDistinct = false;
  __device__ __forceinline__ static void apply(unsigned* p, unsigned x) {
    SMD_SM90(asm volatile("red.global.v2.f32.add [%0], {%1, %1};" ::"l"(p), "f"(__uint_as_float(x)) : "memory");)
  }
};
struct RedAddV4F32 {
  static constexpr int kWords = 4;
  static constexpr bool kDistinct = false;
  __device__ __forceinline__ static void apply(unsigned* p, unsigned x) {
    SMD_SM90(asm volatile("red.global.v4.f32.add [%0], {%1, %1, %1, %1};" ::"l"(p), "f"(__uint_as_float(x))
                          : "memory");)
  }
};
#undef SMD_SM90
// Shared-memory adds on a shared::cta address (the own CTA) or a shared::cluster one (a peer CTA, through mapa).
struct AtomShared {
  __device__ __forceinline__ static unsigned apply(uint32_t a, unsigned x) {
    unsigned r;
    asm volatile("atom.shared.add.u32 %0, [%1], %2;" : "=r"(r) : "r"(a), "r"(x) : "memory");
    return r;
  }
};
struct RedShared {
  __device__ __forceinline__ static void apply(uint32_t a, unsigned x) {
    asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(a), "r"(x) : "memory");
  }
};
struct AtomCluster {
  __device__ __forceinline__ static unsigned apply(uint32_t a, unsigned x) {
    unsigned r = 0;
#if SMD_HAS(cluster)
    asm volatile("atom.shared::cluster.add.u32 %0, [%1], %2;" : "=r"(r) : "r"(a), "r"(x) : "memory");
#else
    __trap();
#endif
    return r;
  }
};
struct RedCluster {
  __device__ __forceinline__ static void apply(uint32_t a, unsigned x) {
#if SMD_HAS(cluster)
    asm volatile("red.shared::cluster.add.u32 [%0], %1;" ::"r"(a), "r"(x) : "memory");
#else
    __trap();
#endif
  }
};

// n then 2n dependent atomics, word u of the ring at step u of each pass.
template <class Op>
__device__ __forceinline__ unsigned ring_chain(unsigned* ring, unsigned x, int steps) {
#pragma unroll 1
  for (int i = 0; i < steps; i += kUnroll)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) x = Op::apply(ring + u * kWordStride, x);
  return x;
}

// One thread: the ring's cells hold 0 and so does x, so every atomic leaves its cell 0 (checked).
// The ring is offset by threadIdx.x (0: one thread runs) so that its address is not provably warp-uniform: on a
// uniform address ptxas turns an atom.add whose result is used into a warp-aggregated sequence (VOTE.ANY, SHFL.UP
// scan), as memory/atomics.cu found for atomicAdd.
template <class Op>
__global__ void atom_latency(unsigned* cells, sy::Slope* out) {
  unsigned* ring = cells + threadIdx.x;
  unsigned x = *ring;  // 0, unknown to the compiler
  sy::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
  x = ring_chain<Op>(ring, x, kSteps);
  s.c1 = smd::clock_cycles();
  x = ring_chain<Op>(ring, x, 2 * kSteps);
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  *out = s;
  cells[1] = x;
}

template <class Op>
__device__ __forceinline__ unsigned word_chain(uint32_t a, unsigned x, int steps) {
#pragma unroll 1
  for (int i = 0; i < steps; i += kUnroll)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) x = Op::apply(a, x);
  return x;
}

// One thread of rank 0 chains on one shared word: its own CTA's (AtomShared) or the peer's, rank 1 (AtomCluster).
// Launched as one cluster of two CTAs for the cluster op (the peer waits in the closing cluster barrier), else alone.
template <class Op, int CLUSTER>
__global__ void atom_shared_latency(unsigned* cell, sy::Slope* out) {
  __shared__ unsigned word[32];
  word[threadIdx.x] = cell[threadIdx.x];  // 0
  if constexpr (CLUSTER) cl::sync();
  else __syncthreads();
  uint32_t a = cl::smem_addr(&word[threadIdx.x]);
  if constexpr (CLUSTER) a = cl::mapa(a, 1);
  if (!CLUSTER || cl::cta_rank() == 0) {
    unsigned x = cell[threadIdx.x];
    sy::Slope s;
    s.ns0 = smd::clock_ns();
    s.c0 = smd::clock_cycles();
    x = word_chain<Op>(a, x, kSteps);
    s.c1 = smd::clock_cycles();
    x = word_chain<Op>(a, x, 2 * kSteps);
    s.c2 = smd::clock_cycles();
    s.ns2 = smd::clock_ns();
    s.smid = smd::sm_id();
    *out = s;
    cell[1] = x;
  }
  if constexpr (CLUSTER) cl::sync();
  if (word[threadIdx.x] != 0) cell[2] = word[threadIdx.x];
}

// Which word a thread hits: (index >> shift) * scale, from launch arguments so that no address is provably
// warp-uniform (ptxas turns a red on a uniform address into a warp reduction: REDUX + one RED per warp).
__device__ __forceinline__ long word_of(long index, int shift, int scale) { return (index >> shift) * scale; }

// Throughput on global memory: kPerThread independent atomics per thread on its word. RESULT: an atom whose results
// are summed into a store the compiler cannot drop; else a red.
template <class Op, int RESULT>
__global__ void global_throughput(unsigned* cells, unsigned x, int shift, int scale, int passes, smd::Stamp* stamps) {
  const long gid = blockIdx.x * long(blockDim.x) + threadIdx.x;
  unsigned* p = cells + word_of(gid, shift, scale) * Op::kWords;
  unsigned acc = 0;
  __syncthreads();
  const unsigned long long ns0 = smd::clock_ns();
  const long long c0 = smd::clock_cycles();
#pragma unroll 1
  for (int r = 0; r < passes; ++r)
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const unsigned operand = Op::kDistinct ? x + i : x;
      if constexpr (RESULT) acc += Op::apply(p, operand);
      else Op::apply(p, operand);
    }
  __syncthreads();
  const long long c1 = smd::clock_cycles();
  const unsigned long long ns1 = smd::clock_ns();
  if (threadIdx.x == 0) stamps[blockIdx.x] = {c0, c1, ns0, ns1, smd::sm_id()};
  if (RESULT && acc == 0xdeadbeef) cells[gid] = acc;
}

// Throughput on shared memory: the CTA's own words (red.shared) or those of the cluster peer, rank ^ 1
// (red.shared::cluster, clusters of two).
template <class Op, int CLUSTER>
__global__ void shared_throughput(unsigned* cells, unsigned x, int shift, int scale, int passes, smd::Stamp* stamps) {
  __shared__ unsigned words[kThreads];
  words[threadIdx.x] = 0;
  if constexpr (CLUSTER) cl::sync();
  else __syncthreads();
  uint32_t a = cl::smem_addr(&words[word_of(threadIdx.x, shift, scale)]);
  if constexpr (CLUSTER) a = cl::mapa(a, cl::cta_rank() ^ 1);
  const unsigned long long ns0 = smd::clock_ns();
  const long long c0 = smd::clock_cycles();
#pragma unroll 1
  for (int r = 0; r < passes; ++r)
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) Op::apply(a, x);
  __syncthreads();
  const long long c1 = smd::clock_cycles();
  const unsigned long long ns1 = smd::clock_ns();
  if (threadIdx.x == 0) stamps[blockIdx.x] = {c0, c1, ns0, ns1, smd::sm_id()};
  if constexpr (CLUSTER) cl::sync();
  if (words[threadIdx.x] != 0) cells[blockIdx.x * long(blockDim.x) + threadIdx.x] = words[threadIdx.x];
}

// Buffers of one case: the cells (every word of the grid, or the ring), the clock record and the CTAs' stamps.
struct Device {
  unsigned* cells = nullptr;
  sy::Slope* slope = nullptr;
  smd::Stamp* stamps = nullptr;
  int sms = 0, ctas = 0;
  Device() {
    sms = sy::sms(), ctas = sms * kCtasPerSm;
    const long bytes = std::max(long(ctas) * kThreads, kUnroll * kWordStride) * 4 * long(sizeof(unsigned));
    SMD_CHECK(cudaMalloc(&cells, bytes));
    SMD_CHECK(cudaMemset(cells, 0, bytes));
    SMD_CHECK(cudaMalloc(&slope, sizeof(sy::Slope)));
    SMD_CHECK(cudaMalloc(&stamps, ctas * sizeof(smd::Stamp)));
  }
  ~Device() {
    cudaFree(cells);
    cudaFree(slope);
    cudaFree(stamps);
  }
  // The first words of the cells, which every chain must leave 0.
  void check_cells() const {
    unsigned head[3];
    SMD_CHECK(cudaMemcpy(head, cells, sizeof(head), cudaMemcpyDeviceToHost));
    if (head[0] || head[1] || head[2]) smd::fail("an atomic chain changed its cells: the chain is broken");
  }
};

// `type` is memory's axis (0: u32), given where a case's points must match memory/atomic_add_*'s point for point.
void check_type(const std::map<std::string, long>& point) {
  if (point.count("type") && point.at("type") != 0) smd::fail("type must be 0 (u32, memory's encoding)", 2);
}

// Cluster launch of `kernel` in clusters of two, or the reason it cannot run here ("").
template <class... Params, class... Args>
std::string launch_pairs(void (*kernel)(Params...), int ctas, int threads, Args... args) {
  if (const std::string why = cl::refusal(kernel, 2, threads, 0); !why.empty()) return why;
  const cudaError_t err = cl::launch(kernel, ctas, 2, threads, 0, args...);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("cluster launch refused: ") + cudaGetErrorString(err);
  }
  return "";
}

// Latency: global ring (SPACE 0), own shared word (1) or the cluster peer's (2).
template <class Op, int SPACE>
void latency(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  check_type(point);
  Device d;
  std::string refused;
  auto launch = [&] {
    if constexpr (SPACE == 0) atom_latency<Op><<<1, 1>>>(d.cells, d.slope);
    else if constexpr (SPACE == 1) atom_shared_latency<Op, 0><<<1, 1>>>(d.cells, d.slope);
    else refused = launch_pairs(atom_shared_latency<Op, 1>, 2, 1, d.cells, d.slope);
    if (!refused.empty()) return sy::Slope{};
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaDeviceSynchronize());
    d.check_cells();
    return sy::read_slope(d.slope);
  };
  launch();
  if (!refused.empty()) return smd::static_point(id, point, refused);
  std::vector<std::pair<std::string, double>> expect;  // the cluster path's ATOM counts as no global/shared atom
  if (SPACE < 2) expect.push_back({SPACE == 0 ? kGlobalAtom : kSharedAtom, 3.0 * kSteps});
  sy::emit(sy::slope_record(id, point, kSteps, repeats, launch, expect));
}

// Passes of the throughput loop at a contention (0 a word per thread, 1 one word, 2 a word per warp) in global or
// shared memory: about 1 ms a launch on an H200 (global: 15 us, 6.6 ms, 130 us a pass; shared: 1.3 us, 33 us).
int passes_of(long contention, bool shared) {
  static const int kGlobal[] = {64, 1, 8}, kShared[] = {512, 32, 64};
  return (shared ? kShared : kGlobal)[contention];
}

// Atomics per cycle per SM under the point's contention: 0 a word per thread, 1 one word, 2 a word per warp.
// `counter`: the ncu count of its atomics (one per warp and atomic), or none where no counter names them.
template <class Kernel>
void throughput(const std::string& id, const std::map<std::string, long>& point, int repeats, Kernel kernel,
                bool pairs, bool shared, const char* counter) {
  check_type(point);
  const long contention = smd::param(point, "contention");
  if (contention < 0 || contention > 2)
    smd::fail("contention must be 0 (a word per thread), 1 (one word) or 2 (a word per warp)", 2);
  const int shift = contention == 2 ? 5 : 0, scale = contention == 1 ? 0 : contention == 2 ? 32 : 1;
  Device d;
  std::vector<smd::Stamp> stamps(d.ctas);
  std::string refused;
  const int passes = passes_of(contention, shared);
  auto launch = [&] {
    if (pairs) refused = launch_pairs(kernel, d.ctas, kThreads, d.cells, 0u, shift, scale, passes, d.stamps);
    else kernel<<<d.ctas, kThreads>>>(d.cells, 0u, shift, scale, passes, d.stamps);
    if (!refused.empty()) return;
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaDeviceSynchronize());
    SMD_CHECK(cudaMemcpy(stamps.data(), d.stamps, d.ctas * sizeof(smd::Stamp), cudaMemcpyDeviceToHost));
  };
  launch();  // untimed
  if (!refused.empty()) return smd::static_point(id, point, refused);
  smd::Record rec{id, point, "throughput", "atom/cycle/SM"};
  std::vector<double> clock;
  const double ops = double(d.ctas) * kThreads * kPerThread * passes;
  for (int r = 0; r < repeats; ++r) {
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      launch();
    }
    double mhz = 0;
    rec.samples.push_back(sy::rate_per_sm(stamps, ops, d.sms, mhz));
    clock.push_back(mhz);
  }
  rec.clock_mhz = smd::median(clock), rec.iterations = long(kPerThread) * passes, rec.variant = "timed";
  if (counter) rec.expect = {{counter, double(d.ctas) * (kThreads / 32) * kPerThread * passes}};
  smd::emit(rec);
}

template <class Op, int RESULT>
void run_global(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  throughput(id, point, repeats, global_throughput<Op, RESULT>, false, false, RESULT ? kGlobalAtom : kGlobalRed);
}

template <class Op, int CLUSTER>
void run_shared(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  throughput(id, point, repeats, shared_throughput<Op, CLUSTER>, CLUSTER, true, CLUSTER ? nullptr : kSharedAtom);
}

std::vector<smd::KernelInfo> latency_kernel(const std::string& symbol) {
  return {sy::kernel(symbol, kUnroll, kSteps)};
}
std::vector<smd::KernelInfo> throughput_kernel(const std::string& symbol) {
  return {sy::kernel(symbol, kPerThread, 1)};
}

#define SMD_LATENCY(id, Op) {id, [] { return latency_kernel("atom_latency<" #Op ">"); }, latency<Op, 0>}
#define SMD_GLOBAL(id, Op, RESULT) \
  {id, [] { return throughput_kernel("global_throughput<" #Op "," #RESULT ">"); }, run_global<Op, RESULT>}

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv,
      {SMD_LATENCY("atom_add_latency", AtomAdd),
       SMD_LATENCY("atom_min_latency", AtomMin),
       SMD_LATENCY("atom_max_latency", AtomMax),
       SMD_LATENCY("atom_exch_latency", AtomExch),
       SMD_LATENCY("atom_and_latency", AtomAnd),
       SMD_LATENCY("atom_or_latency", AtomOr),
       SMD_LATENCY("atom_add_f16x2_latency", AtomAddF16x2),
       SMD_LATENCY("atom_add_bf16x2_latency", AtomAddBf16x2),
       {"atom_add_shared_latency", [] { return latency_kernel("atom_shared_latency<AtomShared,0>"); },
        latency<AtomShared, 1>},
       {"atom_add_cluster_latency", [] { return latency_kernel("atom_shared_latency<AtomCluster,1>"); },
        latency<AtomCluster, 2>},
       SMD_GLOBAL("red_add", RedAdd, 0),
       SMD_GLOBAL("atom_add", AtomAdd, 1),
       SMD_GLOBAL("red_min", RedMin, 0),
       SMD_GLOBAL("red_max", RedMax, 0),
       SMD_GLOBAL("red_and", RedAnd, 0),
       SMD_GLOBAL("red_or", RedOr, 0),
       SMD_GLOBAL("atom_exch", AtomExch, 1),
       SMD_GLOBAL("red_add_f16x2", RedAddF16x2, 0),
       SMD_GLOBAL("red_add_bf16x2", RedAddBf16x2, 0),
       SMD_GLOBAL("red_add_v2_f32", RedAddV2F32, 0),
       SMD_GLOBAL("red_add_v4_f32", RedAddV4F32, 0),
       {"red_add_shared", [] { return throughput_kernel("shared_throughput<RedShared,0>"); }, run_shared<RedShared, 0>},
       {"red_add_cluster", [] { return throughput_kernel("shared_throughput<RedCluster,1>"); },
        run_shared<RedCluster, 1>}});
}
