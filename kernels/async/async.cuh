// Shared pieces of the async category: mbarrier, bulk-copy (TMA) and cp.async wrappers (PTX syntax as in
// CUTLASS's cutlass/arch/barrier.h and cute/arch/copy_sm90_tma.hpp), the 2D tensor map built through the
// driver entry point (no libcuda link), the random chase chain, and the device sizes the benchmarks read off the card.
// The sm_90 helpers (expect_tx, try_wait, bulk and tensor copies) compile to a trap on older archs (SMD_HAS(tma)),
// where the cases using them are static rows; mbarrier init, arrive and test_wait exist from sm_80 on.
#pragma once
#include <cuda.h>  // CUtensorMap and the cuTensorMapEncode* prototypes only: the calls go through the runtime

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "../common/harness.cuh"

namespace as {

__device__ __forceinline__ uint32_t smem(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }

// mbarrier.init, then make the initialised barrier visible to the async proxy (the bulk-copy engine).
__device__ __forceinline__ void bar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%1], %0;" ::"r"(count), "r"(smem(bar)));  // sm_80 on
#if SMD_HAS(tma)  // no async proxy (and no bulk copy to make it visible to) before sm_90
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

__device__ __forceinline__ void arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(bar)) : "memory");
}

// Make this CTA's initialised barriers visible to the other CTAs of its cluster (before a cluster barrier).
__device__ __forceinline__ void fence_barrier_init() {
#if SMD_HAS(cluster)
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#else
  __trap();
#endif
}

// Arrive on the barrier at `bar`'s offset in the shared memory of cluster CTA `rank` (CUTLASS's ClusterBarrier form:
// the default .release.cta; .release.cluster would put a MEMBAR.ALL.GPU before each arrive on sm_90a).
__device__ __forceinline__ void arrive_remote(uint64_t* bar, uint32_t rank) {
#if SMD_HAS(cluster)
  asm volatile(
      "{\n\t.reg .b32 remote;\n\t"
      "mapa.shared::cluster.u32 remote, %0, %1;\n\t"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n\t}"
      ::"r"(smem(bar)), "r"(rank)
      : "memory");
#else
  __trap();
#endif
}

// Arrive once and add `bytes` to the phase's expected transaction count.
__device__ __forceinline__ void arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
#if SMD_HAS(tma)
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%1], %0;" ::"r"(bytes), "r"(smem(bar)) : "memory");
#else
  __trap();
#endif
}

__device__ __forceinline__ bool try_wait(uint64_t* bar, uint32_t parity) {
#if SMD_HAS(tma)
  uint32_t done;
  asm volatile(
      "{\n\t.reg .pred P1;\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%1], %2;\n\t"
      "selp.b32 %0, 1, 0, P1;\n\t}"
      : "=r"(done)
      : "r"(smem(bar)), "r"(parity)
      : "memory");
  return done;
#else
  __trap();
  return 0;
#endif
}

__device__ __forceinline__ bool test_wait(uint64_t* bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n\t.reg .pred P1;\n\t"
      "mbarrier.test_wait.parity.shared::cta.b64 P1, [%1], %2;\n\t"
      "selp.b32 %0, 1, 0, P1;\n\t}"
      : "=r"(done)
      : "r"(smem(bar)), "r"(parity)
      : "memory");
  return done;
}

// Spin until the barrier's phase of the given parity has completed.
__device__ __forceinline__ void wait(uint64_t* bar, uint32_t parity) {
  while (!try_wait(bar, parity)) {
  }
}

// L2 eviction policies for the .L2::cache_hint forms: 0 none (evict_normal), 1 evict_last, 2 evict_first.
__device__ __forceinline__ uint64_t policy(int kind) {
  uint64_t p;
  if (kind == 1)
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  else if (kind == 2)
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  else
    asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(p));
  return p;
}

// 1D bulk copy global -> this CTA's shared memory, completing `bytes` transactions on `bar`.
__device__ __forceinline__ void bulk_g2s(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
#if SMD_HAS(tma)
  asm volatile("cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               ::"r"(smem(dst)), "l"(src), "r"(bytes), "r"(smem(bar))
               : "memory");
#else
  __trap();
#endif
}

__device__ __forceinline__ void bulk_g2s_hint(void* dst, const void* src, uint32_t bytes, uint64_t* bar,
                                              uint64_t pol) {
#if SMD_HAS(tma)
  asm volatile(
      "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
      ::"r"(smem(dst)), "l"(src), "r"(bytes), "r"(smem(bar)), "l"(pol)
      : "memory");
#else
  __trap();
#endif
}

// 2D tensor copy of the box at (x, y) of `map` (a __grid_constant__ kernel parameter).
__device__ __forceinline__ void tensor_g2s(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar) {
#if SMD_HAS(tma)
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
      ::"r"(smem(dst)), "l"(map), "r"(smem(bar)), "r"(x), "r"(y)
      : "memory");
#else
  __trap();
#endif
}

// The 2D box at (x, y) into the same offset of the shared memory of every cluster CTA in `mask`, completing on each
// one's barrier at `bar`'s offset (SMD_HAS(tma_multicast); sm_120a would emulate it through a syscall).
__device__ __forceinline__ void tensor_g2s_multicast(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar,
                                                     uint16_t mask) {
#if SMD_HAS(tma_multicast)
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;"
      ::"r"(smem(dst)), "l"(map), "r"(smem(bar)), "r"(x), "r"(y), "h"(mask)
      : "memory");
#else
  __trap();
#endif
}

// 3D im2col copy (C, W, N map): the map's pixels per column from pixel (w, n) on, each shifted by the im2col
// offset `dw`, channels from c.
__device__ __forceinline__ void im2col_g2s(void* dst, const CUtensorMap* map, int c, int w, int n, uint16_t dw,
                                           uint64_t* bar) {
#if SMD_HAS(tma)
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cta.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2], {%6};"
      ::"r"(smem(dst)), "l"(map), "r"(smem(bar)), "r"(c), "r"(w), "r"(n), "h"(dw)
      : "memory");
#else
  __trap();
#endif
}

// Shared memory at `src` into the 2D box at (x, y): a store, or an add-reduction in the map's element type; each
// joins the thread's open bulk async-group.
__device__ __forceinline__ void tensor_s2g(const CUtensorMap* map, int x, int y, const void* src) {
#if SMD_HAS(tma)
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
               ::"l"(map), "r"(x), "r"(y), "r"(smem(src))
               : "memory");
#else
  __trap();
#endif
}

__device__ __forceinline__ void tensor_add_s2g(const CUtensorMap* map, int x, int y, const void* src) {
#if SMD_HAS(tma)
  asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2}], [%3];"
               ::"l"(map), "r"(x), "r"(y), "r"(smem(src))
               : "memory");
#else
  __trap();
#endif
}

// Close the open bulk async-group; wait until at most N groups still read shared memory; wait until all are done.
__device__ __forceinline__ void bulk_commit() {
#if SMD_HAS(tma)
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#else
  __trap();
#endif
}

template <int N>
__device__ __forceinline__ void bulk_wait_read() {
#if SMD_HAS(tma)
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
#else
  __trap();
#endif
}

__device__ __forceinline__ void bulk_wait_all() {
#if SMD_HAS(tma)
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#else
  __trap();
#endif
}

// Order this thread's generic-proxy writes of shared memory before later bulk copies reading it.
__device__ __forceinline__ void fence_async_shared() {
#if SMD_HAS(tma)
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#else
  __trap();
#endif
}

__device__ __forceinline__ uint32_t ld_shared_u32(const void* p) {
  uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(smem(p)) : "memory");
  return v;
}

// Bytes per row of the u32 (and f32) 2D tensor maps here: rows of 256 words.
constexpr int kRowBytes = 1024;

// A driver function (a cuTensorMapEncode*) through the runtime's entry-point query: no libcuda link.
template <class Fn>
Fn driver_entry(const char* name) {
  Fn fn = nullptr;
  cudaDriverEntryPointQueryResult found;
  SMD_CHECK(cudaGetDriverEntryPointByVersion(name, reinterpret_cast<void**>(&fn), 12000, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || !fn) smd::fail(std::string("driver entry point ") + name + " not found");
  return fn;
}

// Bytes per row of a 2D tensor map of `type` elements: 256 of them (a box's widest), 512 B of f16 or bf16.
inline int row_bytes(CUtensorMapDataType type) {
  return type == CU_TENSOR_MAP_DATA_TYPE_FLOAT16 || type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 ? 512 : kRowBytes;
}

// A 2D tensor map over `bytes` of `type` elements at `base` (rows of row_bytes(type)), boxes of `box_rows` whole rows.
inline CUtensorMap tensor_map(const void* base, long bytes, int box_rows,
                              CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_UINT32) {
  static const auto encode = driver_entry<decltype(&cuTensorMapEncodeTiled)>("cuTensorMapEncodeTiled");
  if (box_rows < 1 || box_rows > 256) smd::fail("tensor box rows must be in 1..256, got " + std::to_string(box_rows), 2);
  const int row = row_bytes(type);
  CUtensorMap map;
  const cuuint64_t dims[2] = {256, cuuint64_t(bytes / row)};
  const cuuint64_t strides[1] = {cuuint64_t(row)};
  const cuuint32_t box[2] = {256, cuuint32_t(box_rows)};
  const cuuint32_t elem[2] = {1, 1};
  const CUresult r = encode(&map, type, 2, const_cast<void*>(base), dims, strides, box, elem,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) smd::fail("cuTensorMapEncodeTiled failed with CUresult " + std::to_string(int(r)));
  return map;
}

// Word w of `words` holds w.
__global__ void fill_index(uint32_t* words, long n) {
  for (long w = blockIdx.x * long(blockDim.x) + threadIdx.x; w < n; w += long(gridDim.x) * blockDim.x)
    words[w] = uint32_t(w);
}

__global__ void scatter(uint8_t* base, const uint32_t* next, long slots, long slot) {
  for (long k = blockIdx.x * long(blockDim.x) + threadIdx.x; k < slots; k += long(gridDim.x) * blockDim.x)
    *reinterpret_cast<uint32_t*>(base + k * slot) = next[k];
}

// A random single cycle (Sattolo, fixed seed) over the footprint's slots, written into device memory: the first
// word of slot k holds next[k].
struct Chain {
  uint8_t* base = nullptr;
  long bytes = 0, slot = 0, slots = 0;
  std::vector<uint32_t> next;
  Chain(long footprint, long slot_bytes) : bytes(footprint), slot(slot_bytes), slots(footprint / slot_bytes) {
    if (slots < 2) smd::fail("the footprint must hold at least two slots", 2);
    std::vector<uint32_t> order(slots);
    next.resize(slots);
    std::iota(order.begin(), order.end(), 0u);
    std::mt19937_64 rng(12345);
    for (long i = slots - 1; i > 0; --i) std::swap(order[i], order[std::uniform_int_distribution<long>(0, i - 1)(rng)]);
    for (long i = 0; i < slots; ++i) next[order[i]] = order[(i + 1) % slots];
    uint32_t* dnext = nullptr;
    SMD_CHECK(cudaMalloc(&base, bytes));
    SMD_CHECK(cudaMalloc(&dnext, slots * sizeof(uint32_t)));
    SMD_CHECK(cudaMemcpy(dnext, next.data(), slots * sizeof(uint32_t), cudaMemcpyHostToDevice));
    scatter<<<1024, 256>>>(base, dnext, slots, slot);
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaDeviceSynchronize());
    SMD_CHECK(cudaFree(dnext));
  }
  Chain(const Chain&) = delete;
  Chain& operator=(const Chain&) = delete;
  ~Chain() { cudaFree(base); }
  // The slot `steps` steps after `from`.
  uint32_t after(uint32_t from, long steps) const {
    for (long i = 0; i < steps; ++i) from = next[from];
    return from;
  }
};

inline int attribute(cudaDeviceAttr what) {
  int dev = 0, v = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&v, what, dev));
  return v;
}

inline int sms() { return attribute(cudaDevAttrMultiProcessorCount); }
inline long l2_bytes() { return attribute(cudaDevAttrL2CacheSize); }

// Allow `bytes` of dynamic shared memory for `kernel`: "" when done, else why the card cannot (227 KiB per CTA on
// an H200, 99 KiB on sm_120), which the caller makes a static point.
template <class K>
std::string allow_smem(K kernel, long bytes) {
  const long optin = attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin);
  if (bytes > optin - 1024)
    return std::to_string(bytes) + " B of dynamic shared memory per CTA wanted, the card allows " +
           std::to_string(optin) + " B in all (1 KiB of it kept for the kernel's barriers)";
  SMD_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  return "";
}

// --list entry of one kernel.
inline smd::KernelInfo kernel(const std::string& symbol, long ops, long iterations = 1) {
  return {{}, "timed", ops, iterations, symbol};
}

}  // namespace as
