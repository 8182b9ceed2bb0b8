// Shared pieces of the async category: mbarrier, bulk-copy (TMA) and cp.async wrappers (PTX syntax as in
// CUTLASS's cutlass/arch/barrier.h and cute/arch/copy_sm90_tma.hpp), the 2D tensor map built through the
// driver entry point (no libcuda link), and the device sizes the benchmarks read off the card.
// The sm_90 helpers (expect_tx, try_wait, bulk and tensor copies) compile to a trap on older archs (SMD_HAS(tma)),
// where the cases using them are static rows; mbarrier init, arrive and test_wait exist from sm_80 on.
#pragma once
#include <cuda.h>  // CUtensorMap and the cuTensorMapEncodeTiled prototype only: the call goes through the runtime

#include <cstdint>
#include <string>

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

__device__ __forceinline__ uint32_t ld_shared_u32(const void* p) {
  uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(smem(p)) : "memory");
  return v;
}

// Bytes per row of every 2D tensor map here: a buffer of u32 viewed as rows of 256 words.
constexpr int kRowBytes = 1024;

// A 2D tensor map over `bytes` of u32 at `base` (rows of kRowBytes), boxes of `box_rows` whole rows.
inline CUtensorMap tensor_map(const void* base, long bytes, int box_rows) {
  using Encode = decltype(&cuTensorMapEncodeTiled);
  static Encode encode = [] {
    Encode fn = nullptr;
    cudaDriverEntryPointQueryResult found;
    SMD_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&fn), 12000,
                                               cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || !fn) smd::fail("driver entry point cuTensorMapEncodeTiled not found");
    return fn;
  }();
  if (box_rows < 1 || box_rows > 256) smd::fail("tensor box rows must be in 1..256, got " + std::to_string(box_rows), 2);
  CUtensorMap map;
  const cuuint64_t dims[2] = {kRowBytes / 4, cuuint64_t(bytes / kRowBytes)};
  const cuuint64_t strides[1] = {kRowBytes};
  const cuuint32_t box[2] = {kRowBytes / 4, cuuint32_t(box_rows)};
  const cuuint32_t elem[2] = {1, 1};
  const CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT32, 2, const_cast<void*>(base), dims, strides, box, elem,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) smd::fail("cuTensorMapEncodeTiled failed with CUresult " + std::to_string(int(r)));
  return map;
}

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
