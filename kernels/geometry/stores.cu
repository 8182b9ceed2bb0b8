// Store cache operators, prefetch and L2 sector promotion, one case per operator (its own SASS):
//  reload_<op>     a warmed one-thread ld.global.ca chase over a 4 KB chain (32 lines, held by the L1), each load
//                  followed by a store with operator <op> (wb, cg, cs, wt, na = L1::no_allocate; none: no store) to
//                  word 1 of the line just read: the next lap's load of that line is an L1 hit where the store left
//                  the line in the L1, an L2 hit where it evicted or invalidated it;
//  roundtrip_<op>  one word that points to itself: st.<op> of the cursor to it, then ld.global.ca of it, step after
//                  dependent step: a store's latency to a load of the same address;
//  prefetch_<op>   a sequential ld.global.ca chase with prefetch.global.L2 or .L1 (none: no prefetch) of the line 16
//                  steps ahead before each load, over an L2-resident chain (2 MB at 128 B) and a DRAM one (256 MB at
//                  4 KB);
//  promote_<hint>  every thread reads one word per 256 B (one 32 B sector of every other line) of a 512 MiB buffer
//                  with ld.global{,.L2::64B,.L2::128B,.L2::256B}: the DRAM bytes each load brings (counters).
#include "../common/blocksum.cuh"
#include "geometry.cuh"

constexpr long kMinSteps = 8192;           // timed steps per phase (whole laps of the chain)
constexpr int kAhead = 16;                 // prefetch_*: lines ahead of the load
constexpr long kNearLines = 16384;         // prefetch_* level 2: 2 MB at 128 B, past the L1, within the L2
constexpr long kFarStride = 4096;          // prefetch_* level 3: a line per 4 KB (no two in one DRAM page burst)
constexpr long kPromoStride = 256;         // bytes between its loads
constexpr int kPromoThreads = 256;

// A 64-bit store with one cache operator to the word `p` points at (StoreNone: no store), and the two steps that use
// it: store_reload's (Reload*: the chase's load, then the store of the loaded pointer to word 1 of the same line) and
// store_roundtrip's (Round*: the cursor stored to the word it points at, then that word loaded: the next cursor).
struct StoreNone {
  __device__ __forceinline__ static void put(uint64_t, uint64_t) {}
};
#define SMD_STORE_STEPS(Name, Store)                                   \
  struct Reload##Name {                                                \
    __device__ __forceinline__ static uint64_t next(uint64_t p) {      \
      const uint64_t q = LoadCa::next(p);                              \
      Store::put(p + 8, q);                                            \
      return q;                                                        \
    }                                                                  \
  };                                                                   \
  struct Round##Name {                                                 \
    __device__ __forceinline__ static uint64_t next(uint64_t p) {      \
      Store::put(p, p);                                                \
      return LoadCa::next(p);                                          \
    }                                                                  \
  };
#define SMD_GLOBAL_STORE(Name, ptx)                                    \
  struct Store##Name {                                                 \
    __device__ __forceinline__ static void put(uint64_t p, uint64_t v) { \
      asm volatile(ptx " [%0], %1;" ::"l"(p), "l"(v) : "memory");      \
    }                                                                  \
  };                                                                   \
  SMD_STORE_STEPS(Name, Store##Name)
SMD_STORE_STEPS(None, StoreNone)
SMD_GLOBAL_STORE(Wb, "st.global.wb.u64")
SMD_GLOBAL_STORE(Cg, "st.global.cg.u64")
SMD_GLOBAL_STORE(Cs, "st.global.cs.u64")
SMD_GLOBAL_STORE(Wt, "st.global.wt.u64")
SMD_GLOBAL_STORE(Na, "st.global.L1::no_allocate.u64")
#undef SMD_GLOBAL_STORE
#undef SMD_STORE_STEPS

// prefetch_chase's step: a prefetch of the line kAhead lines (of `stride` bytes) ahead, then the chase's load.
#define SMD_PREFETCH_LOAD(Name, ptx, stride)                                \
  struct Name {                                                             \
    __device__ __forceinline__ static uint64_t next(uint64_t p) {           \
      asm volatile(ptx " [%0];" ::"l"(p + kAhead * (stride)) : "memory");   \
      return LoadCa::next(p);                                               \
    }                                                                       \
  };
SMD_PREFETCH_LOAD(PrefetchL2Near, "prefetch.global.L2", 128)
SMD_PREFETCH_LOAD(PrefetchL1Near, "prefetch.global.L1", 128)
SMD_PREFETCH_LOAD(PrefetchL2Far, "prefetch.global.L2", kFarStride)
SMD_PREFETCH_LOAD(PrefetchL1Far, "prefetch.global.L1", kFarStride)
#undef SMD_PREFETCH_LOAD

// A 32-bit load with one L2 sector-promotion hint (none, 64, 128, 256 B).
#define SMD_PROMOTED_LOAD(Name, ptx)                                  \
  struct Name {                                                       \
    __device__ __forceinline__ static uint32_t get(const uint32_t* p) { \
      uint32_t r;                                                     \
      asm volatile(ptx " %0, [%1];" : "=r"(r) : "l"(p));              \
      return r;                                                       \
    }                                                                 \
  };
SMD_PROMOTED_LOAD(Promote0, "ld.global.u32")
SMD_PROMOTED_LOAD(Promote64, "ld.global.L2::64B.u32")
SMD_PROMOTED_LOAD(Promote128, "ld.global.L2::128B.u32")
SMD_PROMOTED_LOAD(Promote256, "ld.global.L2::256B.u32")
#undef SMD_PROMOTED_LOAD

// Thread t reads word 0 of every kPromoStride-byte block t, t + threads, ...: one sector per two lines.
template <class Load>
__global__ void __launch_bounds__(kPromoThreads) promote_kernel(const uint32_t* base, long blocks, unsigned* sum) {
  const long words = kPromoStride / 4;
  uint32_t acc = 0;
#pragma unroll 1
  for (long b = blockIdx.x * long(blockDim.x) + threadIdx.x; b < blocks; b += long(gridDim.x) * blockDim.x)
    acc += Load::get(base + b * words);
  smd::add_block_sum(acc, sum);
}

// The warmed chase of `slots` slots `stride` bytes apart from the arena's start, by geo::lap_kernel<Step>, with
// the counters `expect` names (given the timed steps n).
template <class Step, class Counters>
void chase_chain(const std::string& id, const std::map<std::string, long>& point, int repeats, long slots, long stride,
                 Counters&& expect) {
  std::string why;
  char* base = geo::arena(size_t(slots + kAhead) * stride, why);  // + the prefetches' lines past the chain's end
  if (!base) return smd::static_point(id, point, why);
  std::vector<uint64_t> chain(slots);
  for (long k = 0; k < slots; ++k) chain[k] = reinterpret_cast<uint64_t>(base) + uint64_t(k) * stride;
  geo::link(chain);
  const long cycle = std::lcm(slots, 32L), steps = (kMinSteps + cycle - 1) / cycle * cycle;
  geo::measure_laps<Step>(id, point, repeats, chain[0], int(steps), expect(double(steps)));
}

using Expect = std::vector<std::pair<std::string, double>>;

// Counters of a reload_* or roundtrip_* launch: one L1 request per load (4 laps of n and the cursor's load) and one
// per store (none for reload_none; the launch's own result stores are noise in 4n).
template <bool Stores>
Expect load_store_requests(double steps) {
  Expect out{{"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 4 * steps + 1}};
  if (Stores) out.push_back({"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", 4 * steps});
  return out;
}

// reload_*: the chain of footprint_kb at stride_b (every line held by the L1) chased by Step (Reload<op>).
template <class Step, bool Stores = true>
void run_reload(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long kb = smd::param(point, "footprint_kb"), stride = smd::param(point, "stride_b");
  if (kb < 1 || stride < 16 || stride % 8 || kb * 1024 % stride)
    smd::fail("footprint_kb x 1024 must be a multiple of stride_b (a multiple of 8, at least 16: word 1 is stored)", 2);
  chase_chain<Step>(id, point, repeats, kb * 1024 / stride, stride, load_store_requests<Stores>);
}

// roundtrip_*: one self-pointing word; the step Step (Round<op>).
template <class Step>
void run_roundtrip(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  chase_chain<Step>(id, point, repeats, 1, mem::kLine, load_store_requests<true>);
}

// Reads `words` words through the L2 (ld.global.cg): after it the L2 holds this buffer, none of a chain.
__global__ void evict_l2(const uint64_t* p, long words, uint64_t* sink) {
  uint64_t acc = 0;
  for (long k = blockIdx.x * long(blockDim.x) + threadIdx.x; k < words; k += long(gridDim.x) * blockDim.x)
    acc ^= LoadCg::next(reinterpret_cast<uint64_t>(p + k));
  if (acc == 0x9e3779b97f4a7c15ull) *sink = acc;
}

// prefetch_* at level 3: a chain of 4n lines kFarStride apart, chased once per launch (n untimed, then n and 2n,
// every load a new line) right after evict_l2 read 4 L2s of another buffer: every load a DRAM read but for what the
// prefetch brought in. A `latency` record of the mean cycles per load over the 3n timed steps.
template <class Step>
void run_cold(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long lines = 4 * kMinSteps, bytes = (lines + kAhead) * kFarStride;
  std::string why;
  char* base = geo::arena(size_t(bytes), why);
  if (!base) return smd::static_point(id, point, why);
  static uint64_t* flush = nullptr;
  const long flush_words = 4 * mem::sizes().l2_bytes / 8;
  if (!flush) SMD_CHECK(cudaMalloc(&flush, flush_words * 8 + 8));
  std::vector<uint64_t> chain(lines);
  for (long k = 0; k < lines; ++k) chain[k] = reinterpret_cast<uint64_t>(base) + uint64_t(k) * kFarStride;
  geo::link(chain);
  mem::ChaseScratch scratch;
  const int steps = int(kMinSteps);
  mem::measure_launches(id, point, repeats, steps, [&] {
    evict_l2<<<1024, 256>>>(flush, flush_words, flush + flush_words);
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaMemcpy(scratch.cursors, &chain[0], sizeof(uint64_t), cudaMemcpyHostToDevice));
    geo::lap_kernel<Step><<<1, 32>>>(scratch.cursors, steps, scratch.out);
    return mem::chase_result(scratch, 1, chain[0], bytes);
  });
}

// prefetch_*: level 2, the warmed L2-resident chain (kNearLines at 128 B, whole laps); level 3, run_cold's.
template <class Near, class Far>
void run_prefetch(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long level = smd::param(point, "level");
  const auto none = [](double) { return Expect{}; };
  if (level == 2) return chase_chain<Near>(id, point, repeats, kNearLines, mem::kLine, none);
  if (level == 3) return run_cold<Far>(id, point, repeats);
  smd::fail("level must be 2 (an L2-resident chain) or 3 (DRAM: the L2 evicted before each launch)", 2);
}

__global__ void fill_blocks(uint32_t* base, long blocks) {
  for (long b = blockIdx.x * long(blockDim.x) + threadIdx.x; b < blocks; b += long(gridDim.x) * blockDim.x)
    base[b * (kPromoStride / 4)] = uint32_t(b);
}

// GB/s of the sectors the loads ask for (32 B each), every launch's word sum checked; the launch must read one L2
// sector per load and bring `fetch` bytes per load from DRAM (the hint's size, or the L2 fetch granularity limit).
template <class Load>
void time_promotion(const std::string& id, const std::map<std::string, long>& point, int repeats, double fetch) {
  std::string why;
  const long mb = smd::param(point, "footprint_mb");
  if (mb < 1) smd::fail("footprint_mb must be at least 1", 2);
  char* base = geo::arena(size_t(mb) << 20, why);
  if (!base) return smd::static_point(id, point, why);
  const long blocks = (mb << 20) / kPromoStride;
  auto* words = reinterpret_cast<uint32_t*>(base);
  fill_blocks<<<1024, 256>>>(words, blocks);
  SMD_CHECK(cudaGetLastError());
  unsigned* sum = nullptr;
  SMD_CHECK(cudaMalloc(&sum, sizeof(unsigned)));
  const std::unique_ptr<unsigned, cudaError_t (*)(void*)> free_sum(sum, cudaFree);
  const uint32_t want = uint32_t((uint64_t(blocks) * uint64_t(blocks - 1) / 2) & 0xffffffffu);
  cudaEvent_t a, b;
  SMD_CHECK(cudaEventCreate(&a));
  SMD_CHECK(cudaEventCreate(&b));
  smd::Record rec{id, point, "bandwidth", "GB/s"};
  const int ctas = int(4 * mem::sizes().sms);
  for (int r = -1; r < repeats; ++r) {
    SMD_CHECK(cudaMemset(sum, 0, sizeof(unsigned)));
    float ms = 0;
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"), r >= 0);
      SMD_CHECK(cudaEventRecord(a));
      promote_kernel<Load><<<ctas, kPromoThreads>>>(words, blocks, sum);
      SMD_CHECK(cudaGetLastError());
      SMD_CHECK(cudaEventRecord(b));
      SMD_CHECK(cudaEventSynchronize(b));
    }
    SMD_CHECK(cudaEventElapsedTime(&ms, a, b));
    uint32_t got = 0;
    SMD_CHECK(cudaMemcpy(&got, sum, sizeof(got), cudaMemcpyDeviceToHost));
    if (got != want) smd::fail(id + " read the wrong data (word sum): its indexing is broken");
    if (r >= 0) rec.samples.push_back(blocks * 32.0 / ms / 1e6);
  }
  SMD_CHECK(cudaEventDestroy(a));
  SMD_CHECK(cudaEventDestroy(b));
  rec.iterations = blocks, rec.variant = "timed";
  rec.expect = {{"lts__t_sectors_srcunit_tex_op_read.sum", double(blocks)},
                {"dram__bytes_read.sum", double(blocks) * fetch}};
  smd::emit(rec);
}

// promote_*: the read with hint Load; `hint` the bytes it asks the L2 to fetch (0: none), the DRAM bytes per load
// the launch must show at least the L2 fetch granularity limit (cudaLimitMaxL2FetchGranularity) and 32 B.
template <class Load, int Hint>
void run_promotion(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  size_t limit = 0;
  SMD_CHECK(cudaDeviceGetLimit(&limit, cudaLimitMaxL2FetchGranularity));
  time_promotion<Load>(id, point, repeats, double(std::max<size_t>({32, limit, size_t(Hint)})));
}

// --list entries of one case: its kernel per value of the swept axes that pick it.
std::vector<smd::KernelInfo> listed(std::initializer_list<std::pair<const char*, std::map<std::string, long>>> each) {
  std::vector<smd::KernelInfo> out;
  for (const auto& [symbol, params] : each) out.push_back(mem::kernel(symbol, 32, kMinSteps, params));
  return out;
}

#define SMD_CASE(id, symbol, runner) {id, [] { return listed({{symbol, {}}}); }, runner}
#define SMD_PREFETCH(id, near, far, runner)                                                          \
  {id, [] { return listed({{near, {{"level", 2}}}, {far, {{"level", 3}}}}); }, runner}

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv,
      {SMD_CASE("reload_none", "lap_kernel<ReloadNone>", (run_reload<ReloadNone, false>)),
       SMD_CASE("reload_wb", "lap_kernel<ReloadWb>", run_reload<ReloadWb>),
       SMD_CASE("reload_cg", "lap_kernel<ReloadCg>", run_reload<ReloadCg>),
       SMD_CASE("reload_cs", "lap_kernel<ReloadCs>", run_reload<ReloadCs>),
       SMD_CASE("reload_wt", "lap_kernel<ReloadWt>", run_reload<ReloadWt>),
       SMD_CASE("reload_na", "lap_kernel<ReloadNa>", run_reload<ReloadNa>),
       SMD_CASE("roundtrip_wb", "lap_kernel<RoundWb>", run_roundtrip<RoundWb>),
       SMD_CASE("roundtrip_cg", "lap_kernel<RoundCg>", run_roundtrip<RoundCg>),
       SMD_CASE("roundtrip_cs", "lap_kernel<RoundCs>", run_roundtrip<RoundCs>),
       SMD_CASE("roundtrip_wt", "lap_kernel<RoundWt>", run_roundtrip<RoundWt>),
       SMD_CASE("roundtrip_na", "lap_kernel<RoundNa>", run_roundtrip<RoundNa>),
       SMD_PREFETCH("prefetch_none", "lap_kernel<LoadCa>", "lap_kernel<LoadCa>", (run_prefetch<LoadCa, LoadCa>)),
       SMD_PREFETCH("prefetch_l2", "lap_kernel<PrefetchL2Near>", "lap_kernel<PrefetchL2Far>",
                    (run_prefetch<PrefetchL2Near, PrefetchL2Far>)),
       SMD_PREFETCH("prefetch_l1", "lap_kernel<PrefetchL1Near>", "lap_kernel<PrefetchL1Far>",
                    (run_prefetch<PrefetchL1Near, PrefetchL1Far>)),
       {"promote_none", [] { return std::vector{mem::kernel("promote_kernel<Promote0>", 1, 1)}; },
        run_promotion<Promote0, 0>},
       {"promote_64", [] { return std::vector{mem::kernel("promote_kernel<Promote64>", 1, 1)}; },
        run_promotion<Promote64, 64>},
       {"promote_128", [] { return std::vector{mem::kernel("promote_kernel<Promote128>", 1, 1)}; },
        run_promotion<Promote128, 128>},
       {"promote_256", [] { return std::vector{mem::kernel("promote_kernel<Promote256>", 1, 1)}; },
        run_promotion<Promote256, 256>}});
}
