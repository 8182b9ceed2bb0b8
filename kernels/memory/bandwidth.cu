// Bandwidth: DRAM read / write / copy versus CTAs and 16 B loads in flight per thread, L2 read (a
// buffer of 1/4 of the L2 read many times), L1 and shared-memory read per SM, and cudaMemcpyAsync
// device-to-device as the library reference. Every launch's data is checked by a closed-form sum.
// device_attributes: what the card reports of itself (the sizes the other cases read instead of hard-coding).
#include "../common/blocksum.cuh"
#include "memory.cuh"

enum Mode { kRead, kWrite, kCopy, kReadL2 };
constexpr int kThreads = 256;         // threads per CTA of the streaming kernels
constexpr long kCtaQuota = 8L << 20;  // bytes one CTA streams per launch at most (bounds small-grid launches)
constexpr long kBufferL2s = 64;       // DRAM buffers: 64 x the L2, so at most 1/64 of a launch can hit in L2
constexpr long kL2Bytes = 2L << 30;   // bytes an L2 launch reads (passes over its L2-resident window)
constexpr int kTile = 2048;           // 16 B vectors per CTA of the L1 / shared kernels (32 KiB)
constexpr int kTileReps = 512;

// Word w of every buffer holds w: a window's word sum has a closed form.
__device__ __forceinline__ uint4 pattern(long vec) {
  const uint32_t w = uint32_t(4 * vec);
  return {w, w + 1, w + 2, w + 3};
}

__device__ __forceinline__ uint4 load_cg(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

// Grid-stride streaming of nvec 16 B vectors (a multiple of LOADS x threads), LOADS independent
// accesses in flight per thread; `first` is the window's vector index in its buffer.
template <int MODE, int LOADS>
__global__ void stream_kernel(const uint4* src, uint4* dst, long first, long nvec, int passes, unsigned* sum) {
  const long stride = long(gridDim.x) * blockDim.x;
  uint32_t acc = 0;
#pragma unroll 1
  for (int pass = 0; pass < passes; ++pass)
#pragma unroll 1
    for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < nvec; i += LOADS * stride) {
      uint4 v[LOADS];
#pragma unroll
      for (int k = 0; k < LOADS; ++k) {
        if constexpr (MODE == kWrite) v[k] = pattern(first + i + k * stride);
        if constexpr (MODE == kReadL2) v[k] = load_cg(src + i + k * stride);
        if constexpr (MODE == kRead || MODE == kCopy) v[k] = src[i + k * stride];
      }
#pragma unroll
      for (int k = 0; k < LOADS; ++k) {
        if constexpr (MODE == kRead || MODE == kReadL2) acc += v[k].x + v[k].y + v[k].z + v[k].w;
        if constexpr (MODE == kWrite || MODE == kCopy) dst[i + k * stride] = v[k];
      }
    }
  if constexpr (MODE == kRead || MODE == kReadL2) smd::add_block_sum(acc, sum);
}

// Sum of words [4 first, 4 (first + nvec)) modulo 2^32: what a read of that window must return.
uint32_t window_sum(long first, long nvec) {
  const unsigned __int128 a = 4 * uint64_t(first), n = 4 * uint64_t(nvec);
  return uint32_t(((2 * a + n - 1) * n / 2) & 0xffffffffu);
}

// The two DRAM buffers, allocated once (64 x L2 each: 3.8 GB on an H200; at most a quarter of the free memory each,
// for a card whose L2 is large against its DRAM), the source filled with the pattern.
struct Buffers {
  uint4 *src = nullptr, *dst = nullptr;
  unsigned* sum = nullptr;
  long vecs = 0;
  long launches = 0;  // rotates the window of small-grid launches through the buffer
};

Buffers& buffers() {
  static Buffers b;
  if (b.src) return b;
  const long chunk = 1L << 22;  // vectors: a multiple of every grid x threads x loads used here
  size_t free_bytes = 0, total_bytes = 0;
  SMD_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const long room = long(free_bytes / 4 / sizeof(uint4));
  b.vecs = std::max(chunk, std::min(kBufferL2s * mem::sizes().l2_bytes / 16, room) / chunk * chunk);
  SMD_CHECK(cudaMalloc(&b.src, b.vecs * sizeof(uint4)));
  SMD_CHECK(cudaMalloc(&b.dst, b.vecs * sizeof(uint4)));
  SMD_CHECK(cudaMalloc(&b.sum, sizeof(unsigned)));
  stream_kernel<kWrite, 4><<<1024, kThreads>>>(nullptr, b.src, 0, b.vecs, 1, nullptr);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
  return b;
}

// Sum of a window of `data` (a check of what a write or copy left there); nvec is a multiple of ctas x threads.
uint32_t read_sum(const uint4* data, long first, long nvec, int ctas) {
  Buffers& b = buffers();
  SMD_CHECK(cudaMemset(b.sum, 0, sizeof(unsigned)));
  stream_kernel<kRead, 1><<<ctas, kThreads>>>(data + first, nullptr, first, nvec, 1, b.sum);
  SMD_CHECK(cudaGetLastError());
  uint32_t got = 0;
  SMD_CHECK(cudaMemcpy(&got, b.sum, sizeof(got), cudaMemcpyDeviceToHost));
  return got;
}

struct Window {
  long first, nvec;
  int passes;
};

template <int MODE, int LOADS>
void launch(int ctas, const Window& w) {
  Buffers& b = buffers();
  stream_kernel<MODE, LOADS><<<ctas, kThreads>>>(b.src + w.first, b.dst + w.first, w.first, w.nvec, w.passes, b.sum);
}

using Launch = void (*)(int, const Window&);

template <int MODE, int... Ls>
Launch pick(long loads) {
  Launch f = nullptr;
  ((loads == Ls ? (f = launch<MODE, Ls>, true) : false), ...);
  if (!f) smd::fail("loads=" + std::to_string(loads) + " is not compiled (1, 2, 4, 8)", 2);
  return f;
}

// bandwidth and fraction_of_peak records of one point (GB/s counts every byte read plus every byte written).
void emit_bandwidth(const std::string& id, const std::map<std::string, long>& point, const std::vector<double>& gbs,
                    const std::vector<std::pair<std::string, double>>& expect) {
  const double peak = mem::sizes().dram_peak_gbs;
  smd::Record rec{id, point, "bandwidth", "GB/s", gbs};
  rec.cycles = 0, rec.iterations = 1, rec.variant = expect.empty() ? "" : "timed", rec.expect = expect;
  smd::emit(rec);
  if (id.rfind("dram_", 0) != 0 && id != "memcpy_d2d") return;
  if (peak <= 0) {  // a unified-memory part may report no memory clock: no peak to divide by
    std::fprintf(stderr, "%s %s: no fraction_of_peak: the card reports no memory clock or bus width\n", id.c_str(),
                 smd::params_json(point).c_str());
    return;
  }
  smd::Record frac{id, point, "fraction_of_peak", "fraction"};
  for (double g : gbs) frac.samples.push_back(g / peak);
  frac.iterations = 1;
  smd::emit(frac);
}

// A DRAM or L2 streaming point: window, timed launches, the window's data checked after the last one.
template <int MODE>
void run_stream(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long ctas = smd::param(point, "ctas"), loads = smd::param(point, "loads");
  if (ctas < 1 || ctas > 65535) smd::fail("ctas must be in 1..65535", 2);
  Buffers& b = buffers();
  const Launch f = pick<MODE, 1, 2, 4, 8>(loads);
  const long chunk = ctas * kThreads * loads;
  const long room = MODE == kReadL2 ? mem::sizes().l2_bytes / 4 / 16 : std::min(b.vecs, ctas * kCtaQuota / 16);
  Window w{0, room / chunk * chunk, 1};
  if (w.nvec == 0)  // an L2 window under 8 MiB (an L2 under 32 MiB) cannot hold 512 CTAs x 4 loads
    return smd::static_point(id, point, "one pass of ctas x threads x loads x 16 B = " + std::to_string(chunk * 16) +
                                            " B exceeds the window of " + std::to_string(room * 16) + " B" +
                                            (MODE == kReadL2 ? " (a quarter of the L2)" : ""));
  if (MODE == kReadL2) w.passes = int(std::max(1L, kL2Bytes / (w.nvec * 16)));
  const long windows = MODE == kReadL2 ? 1 : b.vecs / w.nvec;  // the L2 window stays put
  const double moved = double(w.nvec) * 16 * w.passes * (MODE == kCopy ? 2 : 1);
  std::vector<double> gbs;
  for (int r = -1; r < repeats; ++r) {  // r = -1: untimed first launch
    w.first = (b.launches++ % windows) * w.nvec;
    SMD_CHECK(cudaMemset(b.sum, 0, sizeof(unsigned)));
    double ms;
    if (r < 0) {
      ms = smd::time_ms([&] { f(int(ctas), w); });
    } else {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      ms = smd::time_ms([&] { f(int(ctas), w); });
      gbs.push_back(moved / ms / 1e6);
    }
    if (MODE == kRead || MODE == kReadL2) {
      uint32_t got = 0;
      SMD_CHECK(cudaMemcpy(&got, b.sum, sizeof(got), cudaMemcpyDeviceToHost));
      if (got != uint32_t(uint64_t(window_sum(w.first, w.nvec)) * w.passes))
        smd::fail("read kernel returned the wrong sum: data or indexing is broken");
    }
  }
  if (MODE == kWrite || MODE == kCopy) {  // clear the window, write it once more, check it
    SMD_CHECK(cudaMemset(b.dst + w.first, 0, w.nvec * sizeof(uint4)));
    f(int(ctas), w);
    SMD_CHECK(cudaGetLastError());
    if (read_sum(b.dst, w.first, w.nvec, int(ctas)) != window_sum(w.first, w.nvec))
      smd::fail("write/copy left the wrong data in its window");
  }
  // Counter expectations only where the window is the whole buffer (>= 64 x L2: L2 residue < 2%).
  std::vector<std::pair<std::string, double>> expect;
  const double bytes = double(w.nvec) * 16 * w.passes;
  if (MODE == kReadL2) expect = {{"lts__t_sectors_srcunit_tex_op_read.sum", bytes / 32}};
  if (MODE != kReadL2 && w.nvec == b.vecs) {
    expect = {{"dram__bytes.sum", moved}};
    if (MODE != kWrite) expect.push_back({"lts__t_sectors_srcunit_tex_op_read.sum", bytes / 32});
    if (MODE != kRead) expect.push_back({"lts__t_sectors_srcunit_tex_op_write.sum", bytes / 32});
  }
  emit_bandwidth(id, point, gbs, expect);
}

// Each CTA reads its own 32 KiB tile kTileReps times: from L1 (global loads, warmed by a first read)
// or from shared memory (filled from global first). Two independent 16 B loads in flight per thread.
// Pass r reads the tile rotated by r warps' worth of vectors: every pass reads every vector once, warp-aligned,
// and no address is loop-invariant, so ptxas cannot hoist the loads out of the pass loop (it did: the counters
// saw 2 of 513 passes while the SASS held the right number of loads, outside the loop).
template <bool SHARED>
__global__ void __launch_bounds__(1024) tile_kernel(const uint4* src, smd::Stamp* stamps, unsigned* sum) {
  constexpr int kPer = kTile / 1024;
  __shared__ uint4 tile[SHARED ? kTile : 1];
  const uint4* mine = src + long(blockIdx.x) * kTile;
  uint32_t acc = 0;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const uint4 v = mine[threadIdx.x + k * 1024];
    if constexpr (SHARED) tile[threadIdx.x + k * 1024] = v;
    else acc += v.x + v.y + v.z + v.w;
  }
  __syncthreads();
  const unsigned long long ns0 = smd::clock_ns();
  const long long c0 = smd::clock_cycles();
#pragma unroll 1
  for (int r = 0; r < kTileReps; ++r) {
    uint4 v[kPer];
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int i = (threadIdx.x + k * 1024 + r * 32) & (kTile - 1);
      if constexpr (SHARED)
        asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v[k].x), "=r"(v[k].y), "=r"(v[k].z), "=r"(v[k].w)
                     : "r"(uint32_t(__cvta_generic_to_shared(tile + i))));
      else
        asm volatile("ld.global.ca.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v[k].x), "=r"(v[k].y), "=r"(v[k].z), "=r"(v[k].w)
                     : "l"(mine + i));
    }
#pragma unroll
    for (int k = 0; k < kPer; ++k) acc += v[k].x + v[k].y + v[k].z + v[k].w;
  }
  const long long c1 = smd::clock_cycles();
  const unsigned long long ns1 = smd::clock_ns();
  if (threadIdx.x == 0) stamps[blockIdx.x] = {c0, c1, ns0, ns1, smd::sm_id()};
  smd::add_block_sum(acc, sum);
}

// Bytes per cycle per SM: each SM's CTAs' bytes over its own clock span (first start to last end).
double per_sm_rate(const std::vector<smd::Stamp>& stamps, double bytes_per_cta, double& mhz) {
  std::map<unsigned, std::vector<smd::Stamp>> by_sm;
  for (const auto& s : stamps) by_sm[s.smid].push_back(s);
  std::vector<double> rates, clocks;
  for (const auto& [sm, group] : by_sm) {
    const smd::Span sp = smd::span(group);
    rates.push_back(bytes_per_cta * group.size() / sp.cycles);
    clocks.push_back(sp.mhz);
  }
  mhz = smd::median(clocks);
  return smd::median(rates);
}

template <bool SHARED>
void run_tile(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  Buffers& b = buffers();
  const int ctas = mem::sizes().sms;
  smd::Stamp* dstamps;
  SMD_CHECK(cudaMalloc(&dstamps, ctas * sizeof(smd::Stamp)));
  auto launch = [&] {
    SMD_CHECK(cudaMemset(b.sum, 0, sizeof(unsigned)));
    tile_kernel<SHARED><<<ctas, 1024>>>(b.src, dstamps, b.sum);
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaDeviceSynchronize());
    uint32_t got = 0;
    SMD_CHECK(cudaMemcpy(&got, b.sum, sizeof(got), cudaMemcpyDeviceToHost));
    const uint32_t want = window_sum(0, long(ctas) * kTile) * uint32_t(SHARED ? kTileReps : kTileReps + 1);
    if (got != want) smd::fail("tile kernel returned the wrong sum");
  };
  launch();
  const double per_cta = double(kTile) * 16 * kTileReps;
  smd::Record rec{id, point, "bandwidth_per_sm", "B/cycle/SM"};
  std::vector<double> clock;
  std::vector<smd::Stamp> stamps(ctas);
  for (int r = 0; r < repeats; ++r) {
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      launch();
    }
    SMD_CHECK(cudaMemcpy(stamps.data(), dstamps, ctas * sizeof(smd::Stamp), cudaMemcpyDeviceToHost));
    double mhz = 0;
    rec.samples.push_back(per_sm_rate(stamps, per_cta, mhz));
    clock.push_back(mhz);
  }
  SMD_CHECK(cudaFree(dstamps));
  rec.clock_mhz = smd::median(clock), rec.iterations = kTileReps, rec.smid = -1, rec.variant = "timed";
  const double tiles = double(ctas) * kTile * 16;
  if constexpr (SHARED) rec.expect = {{"sm__sass_data_bytes_mem_shared_op_ld.sum", tiles * kTileReps}};
  else rec.expect = {{"l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum", tiles * (kTileReps + 1)}};
  smd::emit(rec);
}

// cudaMemcpyAsync device to device of one whole buffer: the runtime's own copy (not under NVTX: it
// may run on a copy engine, which ncu does not profile). GB/s counts bytes read plus bytes written.
void run_memcpy(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  Buffers& b = buffers();
  const size_t bytes = b.vecs * sizeof(uint4);
  SMD_CHECK(cudaMemset(b.dst, 0, bytes));
  smd::time_ms([&] { SMD_CHECK(cudaMemcpyAsync(b.dst, b.src, bytes, cudaMemcpyDeviceToDevice)); });
  std::vector<double> gbs;
  for (int r = 0; r < repeats; ++r)
    gbs.push_back(2.0 * bytes / smd::time_ms([&] {
      SMD_CHECK(cudaMemcpyAsync(b.dst, b.src, bytes, cudaMemcpyDeviceToDevice));
    }) / 1e6);
  if (read_sum(b.dst, 0, b.vecs, 1024) != window_sum(0, b.vecs)) smd::fail("cudaMemcpyAsync left the wrong data");
  emit_bandwidth(id, point, gbs, {});
}

// The card's own report (cudaDeviceGetAttribute, cudaMemGetInfo), read once per repeat: no kernel, no timing.
void run_attributes(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  int dev = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  const auto attribute = [dev](cudaDeviceAttr a) {
    int v = 0;
    SMD_CHECK(cudaDeviceGetAttribute(&v, a, dev));
    return double(v);
  };
  const auto dram_bytes = [] {
    size_t free_bytes = 0, total_bytes = 0;
    SMD_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    return double(total_bytes);
  };
  std::vector<smd::Record> recs = {{id, point, "sm_count", "sm"},        {id, point, "l2_capacity", "byte"},
                                   {id, point, "dram_capacity", "byte"}, {id, point, "dram_bus_width", "bit"},
                                   {id, point, "memory_clock", "MHz"},   {id, point, "smem_per_sm", "byte"}};
  for (int r = 0; r < repeats; ++r) {
    const double reads[] = {attribute(cudaDevAttrMultiProcessorCount),
                            attribute(cudaDevAttrL2CacheSize),
                            dram_bytes(),
                            attribute(cudaDevAttrGlobalMemoryBusWidth),
                            attribute(cudaDevAttrMemoryClockRate) / 1e3,
                            attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor)};
    for (size_t m = 0; m < recs.size(); ++m) recs[m].samples.push_back(reads[m]);
  }
  for (auto& rec : recs) rec.iterations = 1, smd::emit(rec);
}

template <int MODE>
std::vector<smd::KernelInfo> stream_list() {
  std::vector<smd::KernelInfo> out;
  for (int loads : {1, 2, 4, 8})
    out.push_back(mem::kernel("stream_kernel<" + std::to_string(MODE) + "," + std::to_string(loads) + ">", loads, 1,
                              {{"loads", loads}}));
  return out;
}

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv,
      {{"dram_read", stream_list<kRead>, run_stream<kRead>},
       {"dram_write", stream_list<kWrite>, run_stream<kWrite>},
       {"dram_copy", stream_list<kCopy>, run_stream<kCopy>},
       {"l2_read", stream_list<kReadL2>, run_stream<kReadL2>},
       {"l1_read", [] { return std::vector{mem::kernel("tile_kernel<0>", 2, kTileReps)}; }, run_tile<false>},
       {"smem_read", [] { return std::vector{mem::kernel("tile_kernel<1>", 2, kTileReps)}; }, run_tile<true>},
       {"memcpy_d2d", [] { return std::vector<smd::KernelInfo>{}; }, run_memcpy},
       {"device_attributes", [] { return std::vector<smd::KernelInfo>{}; }, run_attributes}});
}
