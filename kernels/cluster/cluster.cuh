// Shared pieces of the cluster category: cluster special registers, barrier.cluster, mapa and
// shared::cluster loads/stores (PTX spelled as in CUTLASS's cute/arch/cluster_sm90.hpp), the two-count
// slope of a timed loop, a cluster launch (cudaLaunchKernelEx + cudaLaunchAttributeClusterDimension) and the
// shared memory that keeps one CTA per SM. The async category's multicast cases include it too.
// The cluster helpers compile to a trap on archs without clusters (SMD_HAS(cluster)), where their cases are static.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "../common/harness.cuh"
#include "../common/slope.cuh"

namespace cl {

__device__ __forceinline__ uint32_t cta_rank() {
#if SMD_HAS(cluster)
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
#else
  __trap();
  return 0;
#endif
}
__device__ __forceinline__ uint32_t cluster_ctas() {
#if SMD_HAS(cluster)
  uint32_t n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
#else
  __trap();
  return 0;
#endif
}
__device__ __forceinline__ uint32_t cluster_id() {
#if SMD_HAS(cluster)
  uint32_t x;
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(x));
  return x;
#else
  __trap();
  return 0;
#endif
}
__device__ __forceinline__ uint32_t nsmid() {
  uint32_t n;
  asm volatile("mov.u32 %0, %%nsmid;" : "=r"(n));
  return n;
}

// barrier.cluster: arrive (release by default, or relaxed) and wait (acquire), every thread of the CTA.
__device__ __forceinline__ void arrive() {
#if SMD_HAS(cluster)
  asm volatile("barrier.cluster.arrive.aligned;" ::: "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void arrive_relaxed() {
#if SMD_HAS(cluster)
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::);
#else
  __trap();
#endif
}
__device__ __forceinline__ void wait() {
#if SMD_HAS(cluster)
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void sync() { arrive(), wait(); }

// The shared::cluster address of `smem` (a shared::cta address) in the CTA of cluster rank `rank`.
__device__ __forceinline__ uint32_t mapa(uint32_t smem, uint32_t rank) {
#if SMD_HAS(cluster)
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(smem), "r"(rank));
  return r;
#else
  __trap();
  return 0;
#endif
}
__device__ __forceinline__ uint32_t smem_addr(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ uint32_t ld_cluster(uint32_t a) {
#if SMD_HAS(cluster)
  uint32_t r;
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(r) : "r"(a) : "memory");
  return r;
#else
  __trap();
  return 0;
#endif
}
__device__ __forceinline__ uint32_t ld_local(uint32_t a) {
  uint32_t r;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(r) : "r"(a) : "memory");
  return r;
}
__device__ __forceinline__ void st_cluster(uint32_t a, uint32_t v) {
#if SMD_HAS(cluster)
  asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(a), "r"(v) : "memory");
#else
  __trap();
#endif
}

using smd::mhz;
using smd::per_step;
using smd::Slope;

// Let `kernel` run in clusters of `cluster` CTAs (sizes above 8 need the non-portable attribute) with `smem`
// bytes of dynamic shared memory, and fill `cfg` for a 1-D grid of `ctas` CTAs in such clusters (`attr` holds
// its cluster dimension). Returns the first refusal instead of failing: a refused size is a result.
template <class... Params>
cudaError_t cluster_config(void (*kernel)(Params...), int ctas, int cluster, int threads, size_t smem,
                           cudaLaunchConfig_t& cfg, cudaLaunchAttribute& attr) {
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, cluster > 8);
  if (err == cudaSuccess && smem > 48 * 1024)
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  attr = {};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = unsigned(cluster);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg = {};
  cfg.gridDim = dim3(unsigned(ctas));
  cfg.blockDim = dim3(unsigned(threads));
  cfg.dynamicSmemBytes = smem;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  return err;
}

// Launch `kernel` as a 1-D grid of clusters of `cluster` CTAs. Returns the launch's error instead of failing.
template <class... Params, class... Args>
cudaError_t launch(void (*kernel)(Params...), int ctas, int cluster, int threads, size_t smem, Args... args) {
  cudaLaunchConfig_t cfg;
  cudaLaunchAttribute attr;
  cudaError_t err = cluster_config(kernel, ctas, cluster, threads, smem, cfg, attr);
  if (err != cudaSuccess) return err;
  err = cudaLaunchKernelEx(&cfg, kernel, Params(args)...);
  if (err == cudaSuccess) err = cudaGetLastError();
  return err;
}

// How many clusters of `cluster` CTAs can be resident at once (0: the size cannot launch at all), or the
// error that refused the question.
template <class... Params>
cudaError_t max_active_clusters(void (*kernel)(Params...), int cluster, int threads, size_t smem, int& out) {
  out = 0;
  cudaLaunchConfig_t cfg;
  cudaLaunchAttribute attr;
  const cudaError_t err = cluster_config(kernel, cluster, cluster, threads, smem, cfg, attr);
  return err != cudaSuccess ? err : cudaOccupancyMaxActiveClusters(&out, kernel, &cfg);
}

// A cluster size outside 1..16, or one that is not a power of two, is a one-line error.
inline int cluster_param(const std::map<std::string, long>& point) {
  const long c = smd::param(point, "cluster");
  if (c < 1 || c > 16 || (c & (c - 1))) smd::fail("cluster must be 1, 2, 4, 8 or 16", 2);
  return int(c);
}

// Why a cluster size cannot run here ("" if it can): the runtime's refusal or no resident cluster.
template <class... Params>
std::string refusal(void (*kernel)(Params...), int cluster, int threads, size_t smem) {
  int active = 0;
  cudaError_t err = max_active_clusters(kernel, cluster, threads, smem, active);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("clusters of ") + std::to_string(cluster) + " CTAs refused: " + cudaGetErrorString(err);
  }
  if (active == 0) return "no cluster of " + std::to_string(cluster) + " CTAs fits on this GPU (max active clusters 0)";
  return "";
}

// Dynamic shared memory per CTA that keeps one CTA per SM: more than half of an SM's (at least `need` bytes).
inline size_t one_per_sm(size_t need) {
  int dev = 0, optin = 0, per_sm = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  SMD_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  return std::max(need, size_t(std::min(optin, per_sm / 2 + 1024)));
}

// --list entry of one kernel.
inline smd::KernelInfo kernel(const std::string& symbol, long ops, long iterations,
                              std::map<std::string, long> params = {}) {
  return {std::move(params), "timed", ops, iterations, symbol};
}

}  // namespace cl
