// Streaming reads of one 4 GiB DRAM buffer, all in this binary so their bandwidths compare within one run:
// the bulk-copy engine (cp.async.bulk 1D and cp.async.bulk.tensor.2d into an mbarrier-guarded ring of
// `outstanding` slots per CTA, one producer thread, four consumer warps summing every word), the L2 cache-hint
// variant on an L2-sized working set, cp.async (LDGSTS) with a per-thread ring, and plain LDG.128 as reference.
// Word w of the buffer holds w, so every launch's sum has a closed form and is checked.
#include "../common/blocksum.cuh"
#include "async.cuh"

enum Kind { kBulk, kBulkHint, kTensor };
constexpr long kBufferBytes = 4L << 30;  // >= 4 GB: dozens of L2s
constexpr long kCtaQuota = 32L << 20;    // bytes one CTA streams per launch at most (bounds small-grid launches)
constexpr int kMaxDepth = 32;
constexpr int kConsumerWarps = 4;
constexpr int kTmaThreads = 32 * (1 + kConsumerWarps);
constexpr int kThreads = 256;  // LDG / LDGSTS CTAs

struct TmaArgs {
  const uint8_t* src;
  long first_op;  // the window's first op, in units of `bytes`
  int ops_per_cta, bytes, depth, policy;
  unsigned* sum;
};

// Warp 0 lane 0 keeps `depth` copies in flight (slot s waits on empty[s] before reuse); warps 1..4 wait on
// full[s], sum the slot's words and release it. Op i of CTA b reads op first_op + b + i x grid.
template <int KIND>
__global__ void __launch_bounds__(kTmaThreads) tma_stream(const __grid_constant__ CUtensorMap map, TmaArgs a) {
  extern __shared__ __align__(1024) uint8_t stage[];
  __shared__ uint64_t full[kMaxDepth], empty[kMaxDepth];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0)
    for (int s = 0; s < a.depth; ++s) as::bar_init(&full[s], 1), as::bar_init(&empty[s], kConsumerWarps);
  __syncthreads();
  uint32_t acc = 0;
  if (warp == 0 && lane == 0) {
    const uint64_t pol = KIND == kBulkHint ? as::policy(a.policy) : 0;
#pragma unroll 1
    for (int i = 0; i < a.ops_per_cta; ++i) {
      const int slot = i % a.depth, round = i / a.depth;
      if (round) as::wait(&empty[slot], (round - 1) & 1);
      const long op = a.first_op + blockIdx.x + long(i) * gridDim.x;
      uint8_t* dst = stage + slot * a.bytes;
      as::arrive_expect_tx(&full[slot], a.bytes);
      if constexpr (KIND == kBulk) as::bulk_g2s(dst, a.src + op * a.bytes, a.bytes, &full[slot]);
      if constexpr (KIND == kBulkHint) as::bulk_g2s_hint(dst, a.src + op * a.bytes, a.bytes, &full[slot], pol);
      if constexpr (KIND == kTensor) as::tensor_g2s(dst, &map, 0, int(op * (a.bytes / as::kRowBytes)), &full[slot]);
    }
  } else if (warp > 0) {
#pragma unroll 1
    for (int i = 0; i < a.ops_per_cta; ++i) {
      const int slot = i % a.depth, round = i / a.depth;
      as::wait(&full[slot], round & 1);
      const uint4* v = reinterpret_cast<const uint4*>(stage + slot * a.bytes);
#pragma unroll 4
      for (int k = threadIdx.x - 32; k < a.bytes / 16; k += 32 * kConsumerWarps) {
        const uint4 x = v[k];
        acc += x.x + x.y + x.z + x.w;
      }
      __syncwarp();
      if (lane == 0) as::arrive(&empty[slot]);
    }
  }
  smd::add_block_sum(acc, a.sum);
}

// Plain grid-stride LDG.128 streaming, LOADS independent 16 B loads in flight per thread.
template <int LOADS>
__global__ void __launch_bounds__(kThreads) ldg_stream(const uint4* src, long first, long nvec, unsigned* sum) {
  const long stride = long(gridDim.x) * blockDim.x;
  uint32_t acc = 0;
#pragma unroll 1
  for (long i = first + blockIdx.x * long(blockDim.x) + threadIdx.x; i < first + nvec; i += LOADS * stride) {
    uint4 v[LOADS];
#pragma unroll
    for (int k = 0; k < LOADS; ++k) v[k] = src[i + k * stride];
#pragma unroll
    for (int k = 0; k < LOADS; ++k) acc += v[k].x + v[k].y + v[k].z + v[k].w;
  }
  smd::add_block_sum(acc, sum);
}

__device__ __forceinline__ void cp_async16(uint4* dst, const uint4* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(as::smem(dst)), "l"(src) : "memory");
}

// cp.async streaming: each thread keeps STAGES 16 B copies in flight (one commit group each) in its own ring
// slots, waits for the oldest (cp.async.wait_group STAGES-1), sums it and refills the slot.
template <int STAGES>
__global__ void __launch_bounds__(kThreads) ldgsts_stream(const uint4* src, long first, long nvec, unsigned* sum) {
  __shared__ uint4 ring[STAGES][kThreads];
  const long stride = long(gridDim.x) * blockDim.x, n = nvec / stride;
  const uint4* mine = src + first + blockIdx.x * long(blockDim.x) + threadIdx.x;
  uint32_t acc = 0;
#pragma unroll
  for (int s = 0; s < STAGES; ++s) {
    if (s < n) cp_async16(&ring[s][threadIdx.x], mine + s * stride);
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
#pragma unroll 1
  for (long k = 0; k < n; ++k) {
    asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 1) : "memory");
    const uint4 v = ring[k % STAGES][threadIdx.x];
    acc += v.x + v.y + v.z + v.w;
    if (k + STAGES < n) cp_async16(&ring[k % STAGES][threadIdx.x], mine + (k + STAGES) * stride);
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
  smd::add_block_sum(acc, sum);
}

// Sum of words [first, first + n) of the buffer modulo 2^32.
uint32_t window_sum(long first, long n) {
  const unsigned __int128 a = uint64_t(first), m = uint64_t(n);
  return uint32_t(((2 * a + m - 1) * m / 2) & 0xffffffffu);
}

struct Buffer {
  uint8_t* data = nullptr;
  unsigned* sum = nullptr;
  long launches = 0;  // rotates the window of small-grid launches through the buffer
};

Buffer& buffer() {
  static Buffer b;
  if (b.data) return b;
  if (cudaMalloc(&b.data, kBufferBytes) != cudaSuccess)
    smd::fail("cannot allocate the " + std::to_string(kBufferBytes >> 30) + " GiB streaming buffer");
  SMD_CHECK(cudaMalloc(&b.sum, sizeof(unsigned)));
  as::fill_index<<<1024, 256>>>(reinterpret_cast<uint32_t*>(b.data), kBufferBytes / 4);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
  return b;
}

// Time `repeats` launches of `launch(first_byte)` (after one untimed), each reading `window` bytes of a window
// rotated through the buffer (start a multiple of `align`), check each sum and emit GB/s. The DRAM byte count
// is expected where a window is at least 2 L2s, so the previous launch's L2 residue is a small part of it.
template <class Launch>
void measure(const std::string& id, const std::map<std::string, long>& point, int repeats, long window, long align,
             Launch&& launch) {
  Buffer& b = buffer();
  if (window <= 0) smd::fail("the point's grid x bytes per step exceeds the buffer", 2);
  const long windows = kBufferBytes / window;
  std::vector<double> gbs;
  for (int r = -1; r < repeats; ++r) {
    const long first = (b.launches++ % windows) * window / align * align;
    SMD_CHECK(cudaMemset(b.sum, 0, sizeof(unsigned)));
    double ms;
    if (r < 0) {
      ms = smd::time_ms([&] { launch(first); });
    } else {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      ms = smd::time_ms([&] { launch(first); });
      gbs.push_back(window / ms / 1e6);
    }
    uint32_t got = 0;
    SMD_CHECK(cudaMemcpy(&got, b.sum, sizeof(got), cudaMemcpyDeviceToHost));
    if (got != window_sum(first / 4, window / 4)) smd::fail(id + ": the streamed data summed wrong");
  }
  smd::Record rec{id, point, "bandwidth", "GB/s", gbs};
  rec.iterations = 1;
  if (window >= 2 * as::l2_bytes()) rec.variant = "timed", rec.expect = {{"dram__bytes_read.sum", double(window)}};
  smd::emit(rec);
}

template <int KIND>
void launch_tma(const CUtensorMap& map, int ctas, long first_byte, long window, int bytes, int depth, int policy) {
  const TmaArgs a{buffer().data, first_byte / bytes, int(window / bytes / ctas), bytes, depth, policy, buffer().sum};
  tma_stream<KIND><<<ctas, kTmaThreads, depth * bytes>>>(map, a);
}

// The tensor map of the whole buffer for boxes of `bytes` (whole rows), rebuilt only when the box changes.
const CUtensorMap& buffer_map(int bytes) {
  static CUtensorMap map;
  static int rows = -1;
  if (rows != bytes / as::kRowBytes) rows = bytes / as::kRowBytes, map = as::tensor_map(buffer().data, kBufferBytes, rows);
  return map;
}

// Bulk or tensor streaming: ctas (0 = one per SM), outstanding copies per CTA (a power of 2 up to 32), bytes per copy.
template <int KIND>
void run_tma(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long ctas_p = smd::param(point, "ctas"), depth = smd::param(point, "outstanding");
  const long bytes = smd::param(point, "bytes");
  const int ctas = ctas_p == 0 ? as::sms() : int(ctas_p);
  if (ctas < 1 || ctas > 65535) smd::fail("ctas must be 0 (one per SM) or in 1..65535", 2);
  if (depth < 1 || depth > kMaxDepth || (depth & (depth - 1)))
    smd::fail("outstanding must be a power of 2 in 1..32, got " + std::to_string(depth), 2);
  const long unit = KIND == kTensor ? as::kRowBytes : 16;
  if (bytes < unit || bytes % unit || (KIND == kTensor && bytes / unit > 256))
    smd::fail("bytes must be a multiple of " + std::to_string(unit) + (KIND == kTensor ? " up to 256 rows" : ""), 2);
  if (const std::string why = as::allow_smem(tma_stream<KIND>, depth * bytes); !why.empty())
    return smd::static_point(id, point, why);
  const CUtensorMap& map = KIND == kTensor ? buffer_map(int(bytes)) : CUtensorMap{};
  const long step = ctas * bytes, window = std::min(kBufferBytes, ctas * kCtaQuota) / step * step;
  measure(id, point, repeats, window, bytes, [&](long first) {
    launch_tma<KIND>(map, ctas, first, window, int(bytes), int(depth), 0);
  });
}

using VecLaunch = void (*)(const uint4*, long, long, unsigned*);

template <template <int> class K, int... N>
VecLaunch pick_kernel(long n, const char* what) {
  VecLaunch f = nullptr;
  ((n == N ? (f = K<N>::fn, 0) : 0), ...);
  if (!f) smd::fail(std::string(what) + " must be one of 1, 2, 4, 8, got " + std::to_string(n), 2);
  return f;
}
template <int N>
struct Ldg {
  static constexpr VecLaunch fn = ldg_stream<N>;
};
template <int N>
struct Ldgsts {
  static constexpr VecLaunch fn = ldgsts_stream<N>;
};

// LDG.128 (`loads` in flight per thread) or LDGSTS (`stages`) streaming with ctas_per_sm x SMs CTAs.
template <bool ASYNC>
void run_vec(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long per_sm = smd::param(point, "ctas_per_sm"), depth = smd::param(point, ASYNC ? "stages" : "loads");
  if (per_sm < 1 || per_sm > 32) smd::fail("ctas_per_sm must be in 1..32", 2);
  const VecLaunch f = ASYNC ? pick_kernel<Ldgsts, 1, 2, 4, 8>(depth, "stages") : pick_kernel<Ldg, 1, 2, 4, 8>(depth, "loads");
  int fit = 0;  // 8 x 256 threads fill an H200 SM; an sm_120 SM holds 1536 threads and 100 KiB of shared memory
  SMD_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, f, kThreads, 0));
  if (fit < per_sm)
    return smd::static_point(id, point, std::to_string(per_sm) + " CTAs of this kernel do not fit on one SM (" +
                                            std::to_string(fit) + " do)");
  const int ctas = int(per_sm * as::sms());
  const long step = long(ctas) * kThreads * 16 * (ASYNC ? 1 : depth);
  const long window = std::min(kBufferBytes, ctas * kCtaQuota) / step * step;
  measure(id, point, repeats, window, 16, [&](long first) {
    f<<<ctas, kThreads>>>(reinterpret_cast<const uint4*>(buffer().data), first / 16, window / 16, buffer().sum);
  });
}

// L2 cache hints: bulk-read a working set of half the L2 (policy 1, 3: evict_last), stream 4 L2s of other data
// (policy 2: evict_first), then time a bulk re-read of the working set (evict_normal, which also resets the lines'
// priority). Policy 0 hints nothing; policy 3 also sets aside the largest persisting L2 the card allows.
void run_hint(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long pol = smd::param(point, "policy");
  if (pol < 0 || pol > 3) smd::fail("policy must be 0 (none), 1 (evict_last), 2 (evict_first) or 3 (evict_last + "
                                    "persisting set-aside)", 2);
  const int ctas = as::sms(), bytes = 4096, depth = 16;
  const long step = long(ctas) * bytes, work = as::l2_bytes() / 2 / step * step, other = 4 * as::l2_bytes() / step * step;
  if (const std::string why = as::allow_smem(tma_stream<kBulkHint>, depth * bytes); !why.empty())
    return smd::static_point(id, point, why);
  const int persisting = as::attribute(cudaDevAttrMaxPersistingL2CacheSize);
  if (pol == 3 && persisting == 0)
    return smd::static_point(id, point, "the card sets no L2 aside for persisting lines "
                                        "(cudaDevAttrMaxPersistingL2CacheSize 0)");
  const CUtensorMap none{};
  if (pol == 3) SMD_CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, persisting));
  Buffer& b = buffer();
  std::vector<double> gbs;
  for (int r = -1; r < repeats; ++r) {
    SMD_CHECK(cudaMemset(b.sum, 0, sizeof(unsigned)));
    launch_tma<kBulkHint>(none, ctas, 0, work, bytes, depth, pol == 1 || pol == 3 ? 1 : 0);
    launch_tma<kBulkHint>(none, ctas, work, other, bytes, depth, pol == 2 ? 2 : 0);
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaDeviceSynchronize());
    uint32_t before = 0, got = 0;
    SMD_CHECK(cudaMemcpy(&before, b.sum, sizeof(before), cudaMemcpyDeviceToHost));
    auto reread = [&] { launch_tma<kBulkHint>(none, ctas, 0, work, bytes, depth, 0); };
    if (r < 0) {
      smd::time_ms(reread);
    } else {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      gbs.push_back(work / smd::time_ms(reread) / 1e6);
    }
    SMD_CHECK(cudaMemcpy(&got, b.sum, sizeof(got), cudaMemcpyDeviceToHost));
    if (before != uint32_t(window_sum(0, work / 4) + window_sum(work / 4, other / 4)) ||
        got - before != window_sum(0, work / 4))
      smd::fail(id + ": the streamed data summed wrong");
  }
  if (pol == 3) {
    SMD_CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0));
    SMD_CHECK(cudaCtxResetPersistingL2Cache());
  }
  smd::Record rec{id, point, "bandwidth", "GB/s", gbs};
  rec.iterations = 1;
  smd::emit(rec);
}

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv,
      {{"bulk_depth", [] { return std::vector{as::kernel("tma_stream<0>", 1)}; }, run_tma<kBulk>},
       {"bulk_ctas", [] { return std::vector{as::kernel("tma_stream<0>", 1)}; }, run_tma<kBulk>},
       {"tensor_depth", [] { return std::vector{as::kernel("tma_stream<2>", 1)}; }, run_tma<kTensor>},
       {"tensor_ctas", [] { return std::vector{as::kernel("tma_stream<2>", 1)}; }, run_tma<kTensor>},
       {"bulk_l2_hint", [] { return std::vector{as::kernel("tma_stream<1>", 1)}; }, run_hint},
       {"ldg_stream",
        [] {
          std::vector<smd::KernelInfo> k;
          for (int n : {1, 2, 4, 8}) k.push_back({{{"loads", n}}, "timed", n, 1, "ldg_stream<" + std::to_string(n) + ">"});
          return k;
        },
        run_vec<false>},
       {"cp_async_stream",
        [] {
          std::vector<smd::KernelInfo> k;  // ops 1: each pass of the steady-state loop refills one stage
          for (int n : {1, 2, 4, 8})
            k.push_back({{{"stages", n}}, "timed", 1, 1, "ldgsts_stream<" + std::to_string(n) + ">"});
          return k;
        },
        run_vec<true>}});
}
