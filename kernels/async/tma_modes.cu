// TMA beyond the plain tensor load (sm_90a on): .multicast::cluster loads against the same clusters' unicast loads
// of the same tiles, bulk tensor stores and add-reductions, and im2col loads. Streams: one CTA per SM (more than half
// its shared memory) whose lane 0 keeps `outstanding` copies in flight over a window of 4 L2s, timed with CUDA
// events; latencies: one thread per CTA chasing a random cycle through the copies, as latency.cu does. Every received
// tile is checked against the load buffer (word w holds w), every stored or reduced window against its source tile.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "../cluster/cluster.cuh"
#include "async.cuh"

enum Load { kUnicast, kMulticast, kIm2col };
enum Store { kStore, kReduce };
constexpr int kThreads = 32;         // stream CTAs: one warp, lane 0 issues
constexpr int kChaseThreads = 1024;  // chase CTAs: every thread reads the warm footprint first
constexpr int kMaxDepth = 32;
constexpr int kMaxTile = 65536;
constexpr long kWindowL2s = 4;  // bytes one stream launch moves: 4 L2s, so the last launch's L2 residue is small
constexpr int kSteps = 256, kUnroll = 8, kMaxBytes = 16384;  // chase: n and 2n timed steps of kUnroll per body
constexpr int kIssueReps = 32;  // tensor_store_issue: stores into each tile of its L2-resident region per launch
// im2col: a (C, W, N) tensor of u32 with 16-channel (64 B) pixels and 32-pixel (2 KB) rows
constexpr int kChannels = 16, kWidth = 32, kPixelBytes = kChannels * 4, kImageRow = kWidth * kPixelBytes;

// ---- streams of loads into shared memory ----

struct RingArgs {
  long first;             // the launch's first tile (a tile: `bytes` of the load buffer)
  int ops, bytes, depth;  // tiles per cluster, bytes per tile, tiles in flight per CTA
  unsigned* wrong;        // set where a CTA received a tile that differs from the buffer
};

// Tile t into `slot`: whole (unicast); this CTA's 1/n slice into the same slot of every CTA of the cluster
// (multicast); or as im2col pixels, the centre tap (offset 1) of a padded 3-tap filter from w = -1: whole rows.
template <int KIND>
__device__ __forceinline__ void load_tile(uint8_t* slot, const CUtensorMap* map, long t, int bytes, uint32_t rank,
                                          uint32_t n, uint64_t* bar) {
  if constexpr (KIND == kUnicast) as::tensor_g2s(slot, map, 0, int(t * bytes / as::kRowBytes), bar);
  if constexpr (KIND == kMulticast) {
    const int slice = bytes / int(n);
    as::tensor_g2s_multicast(slot + rank * slice, map, 0, int((t * bytes + rank * slice) / as::kRowBytes), bar,
                             uint16_t((1u << n) - 1));
  }
  if constexpr (KIND == kIm2col) as::im2col_g2s(slot, map, 0, -1, int(t * bytes / kImageRow), 1, bar);
}

// Lane 0 keeps `depth` tiles in flight through a ring of full barriers; tile i of cluster c is first + c + i x
// clusters for every CTA of it. Multicast: once a slot's tile has landed, the CTA arrives on that slot's empty
// barrier in every CTA of the cluster and refills it when all have. Then every lane checks each slot's last tile.
template <int KIND>
__global__ void __launch_bounds__(kThreads) load_ring(const __grid_constant__ CUtensorMap map, RingArgs a) {
  extern __shared__ __align__(1024) uint8_t ring[];
  __shared__ uint64_t full[kMaxDepth], empty[kMaxDepth];
  const uint32_t rank = cl::cta_rank(), n = cl::cluster_ctas();
  const long c = blockIdx.x / n, clusters = gridDim.x / n;
  if (threadIdx.x == 0) {
    for (int s = 0; s < a.depth; ++s) as::bar_init(&full[s], 1), as::bar_init(&empty[s], n);
    as::fence_barrier_init();
  }
  cl::sync();  // every CTA's barriers exist before a peer's copy or arrival reaches them
  if (threadIdx.x == 0) {
    int s = 0, round = 0;
#pragma unroll 1
    for (int i = 0; i < a.ops; ++i) {
      if (round) {
        as::wait(&full[s], (round - 1) & 1);
        if constexpr (KIND == kMulticast) {
#pragma unroll 1
          for (uint32_t p = 0; p < n; ++p) as::arrive_remote(&empty[s], p);
          as::wait(&empty[s], (round - 1) & 1);
        }
      }
      as::arrive_expect_tx(&full[s], a.bytes);
      load_tile<KIND>(ring + s * a.bytes, &map, a.first + c + i * clusters, a.bytes, rank, n, &full[s]);
      if (++s == a.depth) s = 0, ++round;
    }
  }
  __syncwarp();
  for (int s = 0; s < a.depth && s < a.ops; ++s) {
    const int last = s + (a.ops - 1 - s) / a.depth * a.depth;  // the last tile into slot s
    as::wait(&full[s], (last / a.depth) & 1);
    const uint32_t* got = reinterpret_cast<const uint32_t*>(ring + s * a.bytes);
    const uint32_t word = uint32_t((a.first + c + last * clusters) * (a.bytes / 4));
    for (int j = threadIdx.x; j < a.bytes / 4; j += kThreads)
      if (got[j] != word + j) *a.wrong = 1;
  }
  cl::sync();  // no CTA leaves while a peer's copy or arrival may still reach it
}

// ---- dependent latency ----

struct ChaseArgs {
  int bytes, steps, warm;  // bytes per copy, timed short phase, untimed steps before it
  long rows;               // map rows (multicast) or image rows (im2col) per slot
  uint32_t start;          // the chase's first slot
  const uint8_t* base;
  long warm_bytes;         // footprint the cluster reads first (L2-resident ones), 0 for none
  long long* clocks;       // rank 0: c0, c1, c2, smid, ns between c0 and c2
  uint32_t* ends;          // each CTA's last slot
};

// Each step copies the slot `idx` names into buffer k % 2 (multicast: issued by rank k % n to every CTA of the
// cluster; im2col: by the one CTA), waits for it there and reads the next index out of it.
template <int KIND>
__device__ __forceinline__ uint32_t chase(uint8_t (*dst)[kMaxBytes], uint64_t* bar, const CUtensorMap* map,
                                          const ChaseArgs& a, uint32_t rank, uint32_t n, uint32_t& k, uint32_t idx,
                                          int steps) {
#pragma unroll 1
  for (int s = 0; s < steps; s += kUnroll)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u, ++k) {  // k starts even: buffer u % 2 is buffer k % 2
      as::arrive_expect_tx(&bar[u & 1], a.bytes);
      if constexpr (KIND == kMulticast) {
        if ((k & (n - 1)) == rank)
          as::tensor_g2s_multicast(dst[u & 1], map, 0, int(idx * a.rows), &bar[u & 1], uint16_t((1u << n) - 1));
      } else {
        as::im2col_g2s(dst[u & 1], map, 0, -1, int(idx * a.rows), 1, &bar[u & 1]);
      }
      as::wait(&bar[u & 1], (k >> 1) & 1);
      idx = as::ld_shared_u32(dst[u & 1]);
    }
  return idx;
}

// The cluster reads the warm bytes, then lane 0 of every CTA chases warm, n and 2n steps, timing the last two.
template <int KIND>
__global__ void __launch_bounds__(kChaseThreads) chase_kernel(const __grid_constant__ CUtensorMap map, ChaseArgs a) {
  __shared__ __align__(128) uint8_t dst[2][kMaxBytes];
  __shared__ uint64_t bar[2];
  const uint32_t rank = cl::cta_rank(), n = cl::cluster_ctas();
  uint32_t acc = 0;
  for (long i = (rank * blockDim.x + threadIdx.x) * 16L; i < a.warm_bytes; i += 16L * blockDim.x * n)
    acc ^= *reinterpret_cast<const volatile uint32_t*>(a.base + i);
  if (threadIdx.x == 0) {
    as::bar_init(&bar[0], 1), as::bar_init(&bar[1], 1);
    as::fence_barrier_init();
  }
  cl::sync();
  if (threadIdx.x == 0) {
    uint32_t k = 0, idx = chase<KIND>(dst, bar, &map, a, rank, n, k, a.start, a.warm);
    const unsigned long long ns0 = smd::clock_ns();
    const long long c0 = smd::clock_cycles();
    idx = chase<KIND>(dst, bar, &map, a, rank, n, k, idx, a.steps);
    const long long c1 = smd::clock_cycles();
    idx = chase<KIND>(dst, bar, &map, a, rank, n, k, idx, 2 * a.steps);
    const long long c2 = smd::clock_cycles();
    const unsigned long long ns2 = smd::clock_ns();
    if (rank == 0) a.clocks[0] = c0, a.clocks[1] = c1, a.clocks[2] = c2, a.clocks[3] = smd::sm_id();
    if (rank == 0) a.clocks[4] = ns2 - ns0;
    a.ends[rank] = idx ^ (acc == 0x9e3779b9u);  // the warm reads stay live; the xor is 0 for any real buffer
  }
  cl::sync();  // no CTA leaves while a peer's copy may still reach it
}

// ---- streams of stores and reductions out of shared memory ----

struct StoreArgs {
  const uint8_t* tile;  // the source tile, copied into shared memory first
  long first, end, span;  // destination tiles first + CTA + i x CTAs, taken back by `span` on reaching `end`
  int ops, bytes, rows;   // copies per CTA, bytes and map rows per copy
  long long* cycles;      // per CTA: clock64 over its issue loop and the wait for the last group
};

// Lane 0 stores (or add-reduces) its shared tile into `ops` destination tiles, one bulk group each, and waits
// until at most DEPTH - 1 groups still read shared memory before the next.
template <int OP, int DEPTH>
__global__ void __launch_bounds__(kThreads) store_ring(const __grid_constant__ CUtensorMap map, StoreArgs a) {
  extern __shared__ __align__(1024) uint8_t tile[];
  for (int j = threadIdx.x; j < a.bytes / 16; j += kThreads)
    reinterpret_cast<uint4*>(tile)[j] = reinterpret_cast<const uint4*>(a.tile)[j];
  as::fence_async_shared();  // the tile's generic writes, before the bulk copies read it
  __syncthreads();
  if (threadIdx.x != 0) return;
  long t = a.first + blockIdx.x;
  const long long c0 = smd::clock_cycles();
#pragma unroll 1
  for (int i = 0; i < a.ops; ++i) {
    if constexpr (OP == kStore) as::tensor_s2g(&map, 0, int(t * a.rows), tile);
    if constexpr (OP == kReduce) as::tensor_add_s2g(&map, 0, int(t * a.rows), tile);
    as::bulk_commit();
    as::bulk_wait_read<DEPTH - 1>();
    t += gridDim.x;
    if (t >= a.end) t -= a.span;
  }
  as::bulk_wait_all();
  a.cycles[blockIdx.x] = smd::clock_cycles() - c0;
}

// Set `wrong` where a destination element is not `times` x its source-tile element (a store's u32 words: equal).
template <class T>
__global__ void check_window(const T* dst, long elems, const T* tile, long tile_elems, float times, unsigned* wrong) {
  for (long e = blockIdx.x * long(blockDim.x) + threadIdx.x; e < elems; e += long(gridDim.x) * blockDim.x) {
    const T got = dst[e], want = tile[e % tile_elems];
    if constexpr (std::is_same_v<T, uint32_t>) {
      if (got != want) *wrong = 1;
    } else if (float(got) != times * float(want)) {
      *wrong = 1;
    }
  }
}

// ---- host ----

// The load buffer (word w holds w) and the store buffer, each two windows of kWindowL2s L2s: launches alternate
// between them, so no launch finds the last one's L2 residue.
struct Buffers {
  uint8_t *load = nullptr, *store = nullptr, *tile = nullptr;
  long bytes = 0, launches = 0;
  unsigned* wrong = nullptr;
};

Buffers& buffers() {
  static Buffers b;
  if (b.load) return b;
  b.bytes = (2 * kWindowL2s * as::l2_bytes() + kMaxTile - 1) / kMaxTile * kMaxTile;
  if (cudaMalloc(&b.load, b.bytes) != cudaSuccess || cudaMalloc(&b.store, b.bytes) != cudaSuccess)
    smd::fail("cannot allocate two buffers of " + std::to_string(b.bytes >> 20) + " MiB (8 L2s each)");
  SMD_CHECK(cudaMalloc(&b.tile, kMaxTile));
  SMD_CHECK(cudaMalloc(&b.wrong, sizeof(unsigned)));
  SMD_CHECK(cudaMemset(b.wrong, 0, sizeof(unsigned)));
  as::fill_index<<<1024, 256>>>(reinterpret_cast<uint32_t*>(b.load), b.bytes / 4);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
  return b;
}

// One line naming the case where the device flagged wrong data, then clear the flag.
void check(const std::string& what) {
  unsigned wrong = 0;
  SMD_CHECK(cudaMemcpy(&wrong, buffers().wrong, sizeof(wrong), cudaMemcpyDeviceToHost));
  if (wrong) smd::fail(what);
  SMD_CHECK(cudaMemset(buffers().wrong, 0, sizeof(unsigned)));
}

// The im2col map (C, W, N) over `bytes` of u32 at `base`, copies of `pixels` pixels: its bounding box has a pixel of
// padding on either side of a row (lower and upper corner -1), so offset 1 from w = -1 reads whole rows.
CUtensorMap im2col_map(const void* base, long bytes, int pixels) {
  static const auto encode = as::driver_entry<decltype(&cuTensorMapEncodeIm2col)>("cuTensorMapEncodeIm2col");
  const cuuint64_t dims[3] = {kChannels, kWidth, cuuint64_t(bytes / kImageRow)};
  const cuuint64_t strides[2] = {kPixelBytes, kImageRow};
  const int lower[1] = {-1}, upper[1] = {-1};
  const cuuint32_t elem[3] = {1, 1, 1};
  CUtensorMap map;
  const CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT32, 3, const_cast<void*>(base), dims, strides, lower,
                            upper, kChannels, cuuint32_t(pixels), elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) smd::fail("cuTensorMapEncodeIm2col failed with CUresult " + std::to_string(int(r)));
  return map;
}

// Bytes per copy: a multiple of `unit` (whole rows of the map, each CTA's slice too) up to `most`.
long copy_bytes(const std::map<std::string, long>& point, long unit, long most) {
  const long bytes = smd::param(point, "bytes");
  if (bytes < unit || bytes > most || bytes % unit)
    smd::fail("bytes must be a multiple of " + std::to_string(unit) + " up to " + std::to_string(most), 2);
  return bytes;
}

long depth_param(const std::map<std::string, long>& point) {
  const long depth = smd::param(point, "outstanding");
  if (depth < 1 || depth > kMaxDepth || (depth & (depth - 1)))
    smd::fail("outstanding must be a power of 2 in 1..32, got " + std::to_string(depth), 2);
  return depth;
}

// Load streams: cluster (multicast, unicast), outstanding tiles per CTA, bytes per tile. GB/s: bytes landed in all
// CTAs' shared memory per second; the window is read from DRAM once, into the L2 once per copy that reads it.
template <int KIND>
void run_ring(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const int n = KIND == kIm2col ? 1 : cl::cluster_param(point);
  const long depth = depth_param(point);
  const long bytes = copy_bytes(point, KIND == kIm2col ? kImageRow : n * as::kRowBytes, kMaxTile);
  const size_t smem = cl::one_per_sm(depth * bytes);
  if (const std::string why = as::allow_smem(load_ring<KIND>, long(smem)); !why.empty())
    return smd::static_point(id, point, why);
  if (const std::string why = cl::refusal(load_ring<KIND>, n, kThreads, smem); !why.empty())
    return smd::static_point(id, point, why);
  int clusters = 0;
  SMD_CHECK(cl::max_active_clusters(load_ring<KIND>, n, kThreads, smem, clusters));
  Buffers& b = buffers();
  const long step = clusters * bytes, window = kWindowL2s * as::l2_bytes() / step * step;
  const int box_rows = int(bytes / (KIND == kMulticast ? n : 1) / as::kRowBytes);  // a multicast box: one slice
  const CUtensorMap map = KIND == kIm2col ? im2col_map(b.load, b.bytes, int(bytes / kPixelBytes))
                                          : as::tensor_map(b.load, b.bytes, box_rows);
  std::vector<double> gbs;
  for (int r = -1; r < repeats; ++r) {
    const RingArgs a{b.launches++ % 2 * (window / bytes), int(window / step), int(bytes), int(depth), b.wrong};
    double ms;
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"), r >= 0);
      ms = smd::time_ms([&] { SMD_CHECK(cl::launch(load_ring<KIND>, clusters * n, n, kThreads, smem, map, a)); });
    }
    check(id + ": a CTA received a tile that differs from the load buffer");
    if (r >= 0) gbs.push_back(double(window) * n / ms / 1e6);
  }
  smd::Record rec{id, point, "bandwidth", "GB/s", gbs};
  rec.iterations = 1, rec.variant = "timed";
  // DRAM once per window either way (the L2 keeps a tile between a cluster's unicast reads). No L2 claim: on the
  // H200 lts__t_sectors_srcunit_tex_op_read reads 1.25 x the window for multicast and unicast alike
  rec.expect = {{"dram__bytes_read.sum", double(window)}};
  smd::emit(rec);
}

// Chases: footprint_kb and bytes per copy (cluster for multicast). Slots are one copy apart; a footprint of at most
// half the L2 is read first and chased warm, a larger one from DRAM (the start carried over: no launch revisits the
// slots of the last). Every CTA must end on the slot the chain says.
template <int KIND>
void run_chase(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const int n = KIND == kMulticast ? cl::cluster_param(point) : 1;
  const long kb = smd::param(point, "footprint_kb");
  const long unit = KIND == kMulticast ? as::kRowBytes : kImageRow, bytes = copy_bytes(point, unit, kMaxBytes);
  if (kb < 1 || kb * 1024 / bytes < 2)
    smd::fail("footprint_kb must hold at least two slots of " + std::to_string(bytes) + " B", 2);
  const size_t smem = cl::one_per_sm(0);  // unused: it only keeps the cluster's CTAs on distinct SMs
  if (const std::string why = cl::refusal(chase_kernel<KIND>, n, kChaseThreads, smem); !why.empty())
    return smd::static_point(id, point, why);
  as::Chain chain(kb * 1024, bytes);
  const CUtensorMap map = KIND == kMulticast ? as::tensor_map(chain.base, chain.bytes, int(bytes / unit))
                                             : im2col_map(chain.base, chain.bytes, int(bytes / kPixelBytes));
  long long* clocks;
  uint32_t* ends;
  SMD_CHECK(cudaMalloc(&clocks, 5 * sizeof(long long)));
  SMD_CHECK(cudaMalloc(&ends, n * sizeof(uint32_t)));
  const long warm = chain.bytes <= as::l2_bytes() / 2 ? chain.bytes : 0;
  smd::Record rec{id, point, "latency", "cycle"};
  std::vector<double> cycles, mhz;
  uint32_t start = 0;
  for (int r = -1; r < repeats; ++r) {
    const ChaseArgs a{int(bytes), kSteps, kSteps, bytes / unit, start, chain.base, warm, clocks, ends};
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"), r >= 0);
      SMD_CHECK(cl::launch(chase_kernel<KIND>, n, n, kChaseThreads, smem, map, a));
      SMD_CHECK(cudaDeviceSynchronize());
    }
    long long c[5];
    std::vector<uint32_t> end(n);
    SMD_CHECK(cudaMemcpy(c, clocks, sizeof(c), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(end.data(), ends, n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    start = chain.after(start, 4 * kSteps);
    for (int q = 0; q < n; ++q)
      if (end[q] != start)
        smd::fail(id + ": CTA " + std::to_string(q) + " ended its chase on slot " + std::to_string(end[q]) +
                  ", the chain says " + std::to_string(start) + ": a copy delivered the wrong slot");
    if (r < 0) continue;
    rec.samples.push_back(double((c[2] - c[1]) - (c[1] - c[0])) / kSteps);
    cycles.push_back(double(c[2] - c[0]));
    mhz.push_back(c[4] > 0 ? (c[2] - c[0]) * 1e3 / c[4] : 0.0);
    rec.smid = int(c[3]);
  }
  SMD_CHECK(cudaFree(clocks));
  SMD_CHECK(cudaFree(ends));
  rec.cycles = smd::median(cycles), rec.iterations = kSteps;
  rec.clock_mhz = smd::median(mhz);
  smd::emit(rec);
}

using StoreKernel = void (*)(CUtensorMap, StoreArgs);

template <int OP, int... D>
StoreKernel store_kernel(long depth) {
  StoreKernel f = nullptr;
  ((depth == D ? (f = store_ring<OP, D>, 0) : 0), ...);
  return f;
}

// The destination's element type: stores move u32 words, reductions add f32, f16 or bf16 elements.
template <class T>
constexpr CUtensorMapDataType kMapType = CU_TENSOR_MAP_DATA_TYPE_UINT32;
template <>
constexpr CUtensorMapDataType kMapType<float> = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
template <>
constexpr CUtensorMapDataType kMapType<__half> = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
template <>
constexpr CUtensorMapDataType kMapType<__nv_bfloat16> = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;

// The source tile: a store's u32 words salted per launch (a window some store missed keeps an old salt), a
// reduction's element e = e % 7 + 1 (sums of a few launches stay exact in f16 and bf16).
template <class T>
void write_tile(long bytes, uint32_t salt) {
  std::vector<T> tile(bytes / sizeof(T));
  for (size_t e = 0; e < tile.size(); ++e)
    if constexpr (std::is_same_v<T, uint32_t>) tile[e] = uint32_t(e) ^ (salt * 0x9e3779b9u);
    else tile[e] = T(float(e % 7 + 1));
  SMD_CHECK(cudaMemcpy(buffers().tile, tile.data(), bytes, cudaMemcpyHostToDevice));
}

// Store (T = u32) or add-reduction (T = f32, f16, bf16) streams, one CTA per SM: once over a window of 4 L2s (`l2`
// false: GB/s stored or reduced), or kIssueReps times over a quarter of the L2 (`l2` true: copies issued per cycle
// per SM, from clock64 over each CTA's loop, the median over the CTAs). After each launch the destination is checked.
template <class T>
void run_store(const std::string& id, const std::map<std::string, long>& point, int repeats, bool l2) {
  constexpr int op = std::is_same_v<T, uint32_t> ? kStore : kReduce;
  const long depth = depth_param(point), bytes = copy_bytes(point, as::kRowBytes, kMaxTile);
  const StoreKernel f = store_kernel<op, 1, 2, 4, 8, 16, 32>(depth);
  const size_t smem = cl::one_per_sm(bytes);
  if (const std::string why = as::allow_smem(f, long(smem)); !why.empty()) return smd::static_point(id, point, why);
  Buffers& b = buffers();
  const int ctas = as::sms();
  const long step = ctas * bytes, window = (l2 ? as::l2_bytes() / 4 : kWindowL2s * as::l2_bytes()) / step * step;
  const long reps = l2 ? kIssueReps : 1, ops = window / step * reps, tiles = window / bytes;
  const int rows = int(bytes / as::row_bytes(kMapType<T>));
  const CUtensorMap map = as::tensor_map(b.store, b.bytes, rows, kMapType<T>);
  long long* cycles;
  SMD_CHECK(cudaMalloc(&cycles, ctas * sizeof(long long)));
  SMD_CHECK(cudaMemset(b.store, 0, b.bytes));
  long times[2] = {0, 0};  // the reductions each window has received since that reset
  std::vector<double> samples;
  for (int r = -1; r < repeats; ++r) {
    const long w = l2 ? 0 : b.launches++ % 2, first = w * tiles;
    write_tile<T>(bytes, uint32_t(r + 2));
    const StoreArgs a{b.tile, first, first + tiles, tiles, int(ops), int(bytes), rows, cycles};
    double ms;
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"), r >= 0);
      ms = smd::time_ms([&] { f<<<ctas, kThreads, smem>>>(map, a); });
    }
    times[w] += reps;
    check_window<T><<<4 * ctas, 256>>>(reinterpret_cast<const T*>(b.store) + first * (bytes / long(sizeof(T))),
                                       window / long(sizeof(T)), reinterpret_cast<const T*>(b.tile),
                                       bytes / long(sizeof(T)), float(times[w]), b.wrong);
    SMD_CHECK(cudaGetLastError());
    check(id + (op == kStore ? ": the destination differs from the stored tile"
                             : ": the destination differs from the source tile times the reductions into it"));
    if (r < 0) continue;
    if (!l2) {
      samples.push_back(double(window) / ms / 1e6);
      continue;
    }
    std::vector<long long> c(ctas);
    SMD_CHECK(cudaMemcpy(c.data(), cycles, ctas * sizeof(long long), cudaMemcpyDeviceToHost));
    std::vector<double> per_cta;
    for (long long x : c) per_cta.push_back(double(ops) / double(x));
    samples.push_back(smd::median(per_cta));
  }
  SMD_CHECK(cudaFree(cycles));
  smd::Record rec = l2 ? smd::Record{id, point, "issue", "copy/cycle/SM", samples}
                       : smd::Record{id, point, "bandwidth", "GB/s", samples};
  rec.iterations = ops, rec.variant = "timed";
  const char* sectors =
      op == kStore ? "lts__t_sectors_srcunit_tex_op_write.sum" : "lts__t_sectors_srcunit_tex_op_red.sum";
  rec.expect = {{sectors, double(window) * reps / 32}};
  if (op == kReduce && !l2) rec.expect.push_back({"dram__bytes_read.sum", double(window)});
  smd::emit(rec);
}

// tensor_reduce_depth's dtype: 0 f32, 1 f16, 2 bf16.
void run_reduce(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long dtype = smd::param(point, "dtype");
  if (dtype == 0) return run_store<float>(id, point, repeats, false);
  if (dtype == 1) return run_store<__half>(id, point, repeats, false);
  if (dtype == 2) return run_store<__nv_bfloat16>(id, point, repeats, false);
  smd::fail("dtype must be 0 (f32), 1 (f16) or 2 (bf16), got " + std::to_string(dtype), 2);
}

// tensor_store_issue's op: 0 store, 1 f32 add-reduction.
void run_issue(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long op = smd::param(point, "op");
  if (op == kStore) return run_store<uint32_t>(id, point, repeats, true);
  if (op == kReduce) return run_store<float>(id, point, repeats, true);
  smd::fail("op must be 0 (store) or 1 (f32 add-reduction), got " + std::to_string(op), 2);
}

std::vector<smd::KernelInfo> store_kernels(int op) {
  std::vector<smd::KernelInfo> k;
  for (int d : {1, 2, 4, 8, 16, 32})
    k.push_back({{{"outstanding", d}}, "timed", 1, 1, "store_ring<" + std::to_string(op) + "," + std::to_string(d) +
                 ">"});
  return k;
}

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv,
      {{"multicast_depth", [] { return std::vector{as::kernel("load_ring<1>", 1)}; }, run_ring<kMulticast>},
       {"multicast_unicast_depth", [] { return std::vector{as::kernel("load_ring<0>", 1)}; }, run_ring<kUnicast>},
       {"multicast_latency", [] { return std::vector{as::kernel("chase_kernel<1>", kUnroll, kSteps)}; },
        run_chase<kMulticast>},
       {"tensor_store_depth", [] { return store_kernels(kStore); },
        [](const std::string& id, const std::map<std::string, long>& p, int n) {
          run_store<uint32_t>(id, p, n, false);
        }},
       {"tensor_reduce_depth", [] { return store_kernels(kReduce); }, run_reduce},
       {"tensor_store_issue",
        [] {
          return std::vector<smd::KernelInfo>{{{{"op", kStore}}, "timed", 1, 1, "store_ring<0,32>"},
                                              {{{"op", kReduce}}, "timed", 1, 1, "store_ring<1,32>"}};
        },
        run_issue},
       {"im2col_depth", [] { return std::vector{as::kernel("load_ring<2>", 1)}; }, run_ring<kIm2col>},
       {"im2col_latency", [] { return std::vector{as::kernel("chase_kernel<2>", kUnroll, kSteps)}; },
        run_chase<kIm2col>}});
}
