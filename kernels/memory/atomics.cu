// Atomics on shared and global memory, u32 / u64 / f32 / f64: latency (one thread, each atomic's
// operand is the previous one's result) and throughput (every thread of many CTAs, results unused),
// with no contention (a word per thread) or full contention (one word for all); add, CAS, .sys add.
// Each case is one (operation, space); its sweep picks the type (0 u32, 1 u64, 2 f32, 3 f64).
#include "memory.cuh"

constexpr int kSteps = 1024;     // dependent atomics: n then 2n
// A global chain runs on each of kCells words 4 KB apart, one launch each: a word's L2 home is the near or the far L2
// partition of the timing SM (H100/H200: about 290 vs 490 cycles, half the pages each, set per process by where
// cudaMalloc's pages land), so one word times one partition by chance. latency_modes splits what the words show.
constexpr int kCells = 32;
constexpr long kCellBytes = 4096;
constexpr int kPerThread = 64;   // independent atomics per thread in the throughput kernel
constexpr int kThreads = 256;
constexpr int kCtasPerSm = 4;
// Throughput launches repeat their kPerThread atomics `passes` times, so that the grid's %globaltimer span is at least
// kTimedNs: one pass with a word per thread is ~15 us on an H200, where the CTAs' start and finish spread (a few us)
// scattered sync/atomics.cu's samples of the same grid by up to 17%. kMaxPasses covers the shortest pass, u32 shared
// adds with a word per thread (~1.3 us: 65536 atomics per SM at ~25 per cycle), and bounds a span read as ~0.
constexpr double kTimedNs = 1e6;
constexpr int kMaxPasses = 1024;
enum Space { kGlobal, kShared };

// Element types as named structs, so kernel symbols demangle to atomic_latency<Add,U32,0>.
struct U32 {
  static constexpr const char* kName = "U32";
  using T = unsigned;
};
struct U64 {
  static constexpr const char* kName = "U64";
  using T = unsigned long long;
};
struct F32 {
  static constexpr const char* kName = "F32";
  using T = float;
};
struct F64 {
  static constexpr const char* kName = "F64";
  using T = double;
};

struct Add {
  template <class T>
  __device__ __forceinline__ static T apply(T* p, T x) { return atomicAdd(p, x); }
};
struct AddSystem {
  template <class T>
  __device__ __forceinline__ static T apply(T* p, T x) { return atomicAdd_system(p, x); }
};
struct Cas {
  template <class T>
  __device__ __forceinline__ static T apply(T* p, T x) { return atomicCAS(p, x, x); }
};

// The cell holds 0 and every operand is the previous result (0): a dependent chain the compiler
// cannot shorten, and the cell never changes (finite, checked). The address is offset by threadIdx.x (0: one thread
// runs) so that it is not provably warp-uniform: on a uniform address nvcc turns a u32 atomicAdd whose result is used
// into a warp-aggregated sequence (VOTE.ANY, then either the plain atomic or a SHFL.UP scan feeding one atomic per
// warp), so each step would also time a vote, a compare and a branch.
template <class Op, class E, int SPACE>
__global__ void atomic_latency(typename E::T* cell, mem::Slope* out) {
  using T = typename E::T;
  __shared__ T local[1];
  T* p = (SPACE == kShared ? local : cell) + threadIdx.x;
  if (SPACE == kShared) *p = *cell;
  __syncthreads();
  T x = *cell;
  mem::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
#pragma unroll 1
  for (int i = 0; i < kSteps; i += 32)
#pragma unroll
    for (int u = 0; u < 32; ++u) x = Op::apply(p, x);
  s.c1 = smd::clock_cycles();
#pragma unroll 1
  for (int i = 0; i < 2 * kSteps; i += 32)
#pragma unroll
    for (int u = 0; u < 32; ++u) x = Op::apply(p, x);
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  *out = s;
  cell[1] = x + *p;
}

// kPerThread independent atomics per thread on its own word (contention 0) or on word 0 (contention 1); the
// operand (0) is a launch argument, so the compiler can neither drop nor merge them.
// The kPerThread atomics sit in a loop of `passes` passes (host-calibrated, see kTimedNs): where an atomic is a CAS
// retry loop (u64/f32/f64 add on shared memory), the timed work is then that outer loop, not the first atomic's retry
// loop.
template <class Op, class E, int SPACE>
__global__ void atomic_throughput(typename E::T* cells, typename E::T operand, int contended, int passes,
                                  smd::Stamp* stamps) {
  using T = typename E::T;
  __shared__ T local[kThreads];
  const long gid = blockIdx.x * long(blockDim.x) + threadIdx.x;
  T* p = SPACE == kShared ? &local[contended ? 0 : threadIdx.x] : &cells[contended ? 0 : gid];
  if (SPACE == kShared) local[threadIdx.x] = T(0);
  __syncthreads();
  const unsigned long long ns0 = smd::clock_ns();
  const long long c0 = smd::clock_cycles();
#pragma unroll 1
  for (int r = 0; r < passes; ++r)
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) Op::apply(p, operand);
  __syncthreads();
  const long long c1 = smd::clock_cycles();
  const unsigned long long ns1 = smd::clock_ns();
  if (threadIdx.x == 0) stamps[blockIdx.x] = {c0, c1, ns0, ns1, smd::sm_id()};
  if (SPACE == kShared && local[threadIdx.x] != T(0)) cells[gid] = local[threadIdx.x];
}

struct Device {
  void* cells = nullptr;
  mem::Slope* slope = nullptr;
  smd::Stamp* stamps = nullptr;
  int ctas = 0;
  Device() {
    ctas = mem::sizes().sms * kCtasPerSm;
    const long bytes = std::max(long(ctas) * kThreads * 8, kCells * kCellBytes);
    SMD_CHECK(cudaMalloc(&cells, bytes));
    SMD_CHECK(cudaMemset(cells, 0, bytes));
    SMD_CHECK(cudaMalloc(&slope, sizeof(mem::Slope)));
    SMD_CHECK(cudaMalloc(&stamps, ctas * sizeof(smd::Stamp)));
  }
  ~Device() {
    cudaFree(cells);
    cudaFree(slope);
    cudaFree(stamps);
  }
};

template <class Op, class E, int SPACE>
void latency(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  using T = typename E::T;
  Device d;
  const int cells = SPACE == kGlobal ? kCells : 1;
  auto launch = [&](int c) {
    T* cell = static_cast<T*>(d.cells) + c * (kCellBytes / sizeof(T));
    atomic_latency<Op, E, SPACE><<<1, 1>>>(cell, d.slope);
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaDeviceSynchronize());
    mem::Slope s;
    T result[2];
    SMD_CHECK(cudaMemcpy(&s, d.slope, sizeof(s), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(result, cell, sizeof(result), cudaMemcpyDeviceToHost));
    if (result[0] != T(0) || result[1] != T(0)) smd::fail("atomic chain changed its cell: the chain is broken");
    return s;
  };
  for (int c = 0; c < cells; ++c) launch(c);
  // samples: every cell's latency, repeat by repeat (`iterations` = cells per repeat, as latency_modes reads them)
  smd::Record rec{id, point, "latency", "cycle"};
  std::vector<double> cycles, clock;
  for (int r = 0; r < repeats; ++r) {
    for (int c = 0; c < cells; ++c) {
      mem::Slope s;
      {
        smd::NvtxRange range(smd::range_name(id, point, "timed"), c == 0);  // ncu profiles the first cell's launch
        s = launch(c);
      }
      rec.samples.push_back(mem::per_step(s, kSteps));
      cycles.push_back(double(s.c2 - s.c0)), clock.push_back(mem::mhz(s));
      rec.smid = int(s.smid);
    }
  }
  rec.cycles = smd::median(cycles), rec.clock_mhz = smd::median(clock), rec.iterations = cells;
  smd::emit(rec);
}

// The grid's %globaltimer span of one launch: first CTA's start to last CTA's end, in ns.
double grid_ns(const std::vector<smd::Stamp>& stamps) {
  unsigned long long n0 = stamps[0].ns0, n1 = stamps[0].ns1;
  for (const auto& s : stamps) n0 = std::min(n0, s.ns0), n1 = std::max(n1, s.ns1);
  return double(n1 - n0);
}

// Passes of the throughput loop that make a launch whose one-pass grid span is `stamps`' last at least kTimedNs.
int passes_for(const std::vector<smd::Stamp>& stamps) {
  const double span = std::max(grid_ns(stamps), 1.0);
  return int(std::clamp(std::ceil(kTimedNs / span), 1.0, double(kMaxPasses)));
}

// Atomics per cycle per SM: all atomics over the grid's wall-clock span (globaltimer) at the CTAs' median SM clock.
// An untimed launch of one pass sets `passes` (passes_for); the timed launches repeat the atomics that many times.
template <class Op, class E, int SPACE>
void throughput(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long contended = smd::param(point, "contention");
  if (contended != 0 && contended != 1) smd::fail("contention must be 0 (a word per thread) or 1 (one word)", 2);
  Device d;
  const int sms = mem::sizes().sms;
  std::vector<smd::Stamp> stamps(d.ctas);
  int passes = 1;
  auto launch = [&] {
    atomic_throughput<Op, E, SPACE><<<d.ctas, kThreads>>>(static_cast<typename E::T*>(d.cells), typename E::T(0),
                                                        int(contended), passes, d.stamps);
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaDeviceSynchronize());
    SMD_CHECK(cudaMemcpy(stamps.data(), d.stamps, d.ctas * sizeof(smd::Stamp), cudaMemcpyDeviceToHost));
  };
  launch();  // one pass, untimed: its span sets the passes of the timed launches
  passes = passes_for(stamps);
  launch();  // untimed at the timed length
  smd::Record rec{id, point, "throughput", "atom/cycle/SM"};
  std::vector<double> clock;
  const double ops = double(d.ctas) * kThreads * kPerThread * passes;
  for (int r = 0; r < repeats; ++r) {
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      launch();
    }
    std::vector<double> mhz;
    for (const auto& s : stamps)
      if (s.ns1 > s.ns0) mhz.push_back((s.c1 - s.c0) * 1e3 / double(s.ns1 - s.ns0));
    const double mhz_median = smd::median(mhz);
    rec.samples.push_back(ops / (grid_ns(stamps) * 1e-3 * mhz_median) / sms);
    clock.push_back(mhz_median);
  }
  rec.clock_mhz = smd::median(clock), rec.iterations = long(kPerThread) * passes;
  smd::emit(rec);
}

// A point's instantiation: its type is the index into Es (0 u32, 1 u64, 2 f32, 3 f64).
template <class Op, bool LATENCY, int SPACE, class... Es>
void run(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long type = smd::param(point, "type");
  bool ran = false;
  long index = 0;
  auto one = [&](auto e) {
    using E = decltype(e);
    if (type != index++) return;
    ran = true;
    (LATENCY ? latency<Op, E, SPACE> : throughput<Op, E, SPACE>)(id, point, repeats);
  };
  (one(Es{}), ...);
  if (!ran) smd::fail("type=" + std::to_string(type) + " is not compiled for this case", 2);
}

// --list: one kernel per type the case's sweep can select.
template <class Op, bool LATENCY, int SPACE, class... Es>
std::vector<smd::KernelInfo> list(const char* op) {
  std::vector<smd::KernelInfo> out;
  const char* names[] = {Es::kName...};
  const std::string kernel = LATENCY ? "atomic_latency<" : "atomic_throughput<";
  for (long t = 0; t < long(sizeof...(Es)); ++t)
    out.push_back(mem::kernel(kernel + op + "," + names[t] + "," + std::to_string(SPACE) + ">",
                              LATENCY ? 32 : kPerThread, LATENCY ? kSteps : 1, {{"type", t}}));
  return out;
}

#define SMD_ATOMIC_CASE(id, Op, LATENCY, SPACE, ...) \
  {id, [] { return list<Op, LATENCY, SPACE, __VA_ARGS__>(#Op); }, run<Op, LATENCY, SPACE, __VA_ARGS__>}

int main(int argc, char** argv) {
  return smd::family_main(argc, argv,
                          {SMD_ATOMIC_CASE("atomic_add_global_latency", Add, true, kGlobal, U32, U64, F32, F64),
                           SMD_ATOMIC_CASE("atomic_add_shared_latency", Add, true, kShared, U32, U64, F32, F64),
                           SMD_ATOMIC_CASE("atomic_add_system_latency", AddSystem, true, kGlobal, U32, U64, F32, F64),
                           SMD_ATOMIC_CASE("atomic_cas_global_latency", Cas, true, kGlobal, U32, U64),
                           SMD_ATOMIC_CASE("atomic_cas_shared_latency", Cas, true, kShared, U32, U64),
                           SMD_ATOMIC_CASE("atomic_add_global_throughput", Add, false, kGlobal, U32, U64, F32, F64),
                           SMD_ATOMIC_CASE("atomic_add_shared_throughput", Add, false, kShared, U32, U64, F32, F64),
                           SMD_ATOMIC_CASE("atomic_cas_global_throughput", Cas, false, kGlobal, U32, U64),
                           SMD_ATOMIC_CASE("atomic_cas_shared_throughput", Cas, false, kShared, U32, U64)});
}
