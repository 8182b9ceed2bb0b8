// Memory ordering: the cost of fence.acq_rel and fence.sc at cta, cluster, gpu and sys scope; a fence after N
// independent stores to distinct lines (what draining them costs) against the same stores unfenced; ld.acquire.gpu
// against ld.relaxed.gpu in a dependent chain, and st.release.gpu against st.relaxed.gpu back to back. One thread
// times each: the slope between n and 2n steps (smd::Slope), so clock reads and loop overhead cancel.
#include <cstdint>

#include "sync.cuh"

constexpr int kSteps = 256;   // timed steps: n, then 2n
constexpr int kUnroll = 8;    // steps per pass of the timed loop
constexpr int kRing = 32;     // words of the load / store chains, 4 KB apart
constexpr long kRingStride = 4096;
constexpr int kLine = 32;     // u32 words per 128 B line: each store of a fence step writes its own line
constexpr int kMaxStores = 16;

// Fences as named structs, so kernel symbols read fence_kernel<FenceScGpu,0>. The cluster scope needs sm_90.
#define SMD_FENCE(Name, ptx)                                                          \
  struct Name {                                                                       \
    __device__ __forceinline__ static void apply() { asm volatile(ptx ::: "memory"); } \
  };
SMD_FENCE(FenceAcqRelCta, "fence.acq_rel.cta;")
SMD_FENCE(FenceScCta, "fence.sc.cta;")
SMD_FENCE(FenceAcqRelGpu, "fence.acq_rel.gpu;")
SMD_FENCE(FenceScGpu, "fence.sc.gpu;")
SMD_FENCE(FenceAcqRelSys, "fence.acq_rel.sys;")
SMD_FENCE(FenceScSys, "fence.sc.sys;")
#undef SMD_FENCE
struct FenceAcqRelCluster {
  __device__ __forceinline__ static void apply() {
#if SMD_HAS(cluster)
    asm volatile("fence.acq_rel.cluster;" ::: "memory");
#else
    __trap();
#endif
  }
};
struct FenceScCluster {
  __device__ __forceinline__ static void apply() {
#if SMD_HAS(cluster)
    asm volatile("fence.sc.cluster;" ::: "memory");
#else
    __trap();
#endif
  }
};
struct NoFence {
  __device__ __forceinline__ static void apply() {}
};

// One step: N weak stores of `v`, each to its own line (step u of a pass uses lines u*N .. u*N+N-1, so no store
// repeats an address within a pass), then the fence.
template <class Fence, int N>
__device__ __forceinline__ void fence_steps(unsigned* lines, unsigned v, int steps) {
#pragma unroll 1
  for (int i = 0; i < steps; i += kUnroll)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int j = 0; j < N; ++j)
        asm volatile("st.global.u32 [%0], %1;" ::"l"(lines + (u * N + j) * kLine), "r"(v) : "memory");
      Fence::apply();
    }
}

// n untimed steps first, so that both timed phases start with the store queue as full as it will get (unfenced
// stores issue faster than they drain: a first phase into an empty queue would run faster than the second).
template <class Fence, int N>
__global__ void fence_kernel(unsigned* lines, unsigned v, int steps, sy::Slope* out) {
  fence_steps<Fence, N>(lines, v, steps);
  sy::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
  fence_steps<Fence, N>(lines, v, steps);
  s.c1 = smd::clock_cycles();
  fence_steps<Fence, N>(lines, v, 2 * steps);
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  *out = s;
}

// Loads of the ring chase: each word holds the address of the next (p = *p, no address arithmetic).
struct LoadAcquire {
  __device__ __forceinline__ static uint64_t next(uint64_t p) {
    uint64_t r;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(r) : "l"(p) : "memory");
    return r;
  }
};
struct LoadRelaxed {
  __device__ __forceinline__ static uint64_t next(uint64_t p) {
    uint64_t r;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(r) : "l"(p) : "memory");
    return r;
  }
};

template <class Load>
__device__ __forceinline__ uint64_t chase(uint64_t p, int steps) {
#pragma unroll 1
  for (int i = 0; i < steps; i += kUnroll)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) p = Load::next(p);
  return p;
}

// One thread chases the ring (32 words 4 KB apart, so about half of them have their L2 home in the near partition
// and half in the far one on H100/H200): the mean over the ring's words, n then 2n steps after a warm lap.
template <class Load>
__global__ void load_kernel(uint64_t start, int steps, sy::Slope* out, uint64_t* sink) {
  uint64_t p = chase<Load>(start, kRing);
  sy::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
  p = chase<Load>(p, steps);
  s.c1 = smd::clock_cycles();
  p = chase<Load>(p, 2 * steps);
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  *out = s;
  *sink = p;
}

// Stores of the store chains: word u of the ring (immediate offsets: no address arithmetic).
struct StoreRelease {
  __device__ __forceinline__ static void put(unsigned* p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
  }
};
struct StoreRelaxed {
  __device__ __forceinline__ static void put(unsigned* p, unsigned v) {
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
  }
};

template <class Store>
__device__ __forceinline__ void stores(unsigned* ring, unsigned v, int steps) {
#pragma unroll 1
  for (int i = 0; i < steps; i += kUnroll)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) Store::put(ring + u * (kRingStride / sizeof(unsigned)), v);
}

// One thread stores back to back, each store to the next of 8 ring words 4 KB apart: cycles per store, after n
// untimed stores (as fence_kernel).
template <class Store>
__global__ void store_kernel(unsigned* ring, unsigned v, int steps, sy::Slope* out) {
  stores<Store>(ring, v, steps);
  sy::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
  stores<Store>(ring, v, steps);
  s.c1 = smd::clock_cycles();
  stores<Store>(ring, v, 2 * steps);
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  *out = s;
}

// Buffers of one case: the store lines, the ring (as pointers for the chase) and the clock record.
struct Device {
  unsigned char* ring = nullptr;
  sy::Slope* slope = nullptr;
  uint64_t* sink = nullptr;
  Device() {
    SMD_CHECK(cudaMalloc(&ring, kRing * kRingStride));
    SMD_CHECK(cudaMemset(ring, 0, kRing * kRingStride));
    SMD_CHECK(cudaMalloc(&slope, sizeof(sy::Slope)));
    SMD_CHECK(cudaMalloc(&sink, sizeof(uint64_t)));
  }
  ~Device() {
    cudaFree(ring);
    cudaFree(slope);
    cudaFree(sink);
  }
  // Word i of the ring holds the address of word i+1 (the last, of word 0).
  uint64_t link() {
    const uint64_t base = reinterpret_cast<uint64_t>(ring);
    for (int i = 0; i < kRing; ++i) {
      const uint64_t next = base + ((i + 1) % kRing) * kRingStride;
      SMD_CHECK(cudaMemcpy(ring + i * kRingStride, &next, sizeof(next), cudaMemcpyHostToDevice));
    }
    return base;
  }
};

// The slope record of `launch` (which starts one kernel), with the clocks read back after each launch.
template <class Launch>
void run_slope(const std::string& id, const std::map<std::string, long>& point, int repeats, Device& d,
               Launch&& launch) {
  auto timed = [&] {
    launch();
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaDeviceSynchronize());
    return sy::read_slope(d.slope);
  };
  sy::emit(sy::slope_record(id, point, kSteps, repeats, timed));
}

// The kernel of a point: fence_kernel<Fence, 0> for a case without stores, else fence_kernel<Fence, N> for its N.
template <class Fence, bool STORES>
auto kernel_for(const std::map<std::string, long>& point) {
  if constexpr (!STORES) return fence_kernel<Fence, 0>;
  else switch (smd::param(point, "stores")) {
      case 1: return fence_kernel<Fence, 1>;
      case 4: return fence_kernel<Fence, 4>;
      case kMaxStores: return fence_kernel<Fence, kMaxStores>;
    }
  smd::fail("stores must be 1, 4 or 16", 2);
}

template <class Fence, bool STORES>
void run_fence(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  auto kernel = kernel_for<Fence, STORES>(point);
  Device d;
  run_slope(id, point, repeats, d, [&] {
    kernel<<<1, 1>>>(reinterpret_cast<unsigned*>(d.ring), 1u, kSteps, d.slope);
  });
}

template <class Load>
void run_load(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  Device d;
  const uint64_t start = d.link();
  run_slope(id, point, repeats, d, [&] { load_kernel<Load><<<1, 1>>>(start, kSteps, d.slope, d.sink); });
}

template <class Store>
void run_store(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  Device d;
  run_slope(id, point, repeats, d, [&] {
    store_kernel<Store><<<1, 1>>>(reinterpret_cast<unsigned*>(d.ring), 1u, kSteps, d.slope);
  });
}

// --list: one kernel per store count the case's sweep can pick (`ops` per pass: its fences, or its stores where
// the case has stores), or the one kernel of a case without a store axis.
template <bool STORES>
std::vector<smd::KernelInfo> list_fence(const char* fence) {
  const std::string name = std::string("fence_kernel<") + fence + ",";
  if (!STORES) return {sy::kernel(name + "0>", kUnroll, kSteps)};
  std::vector<smd::KernelInfo> out;
  for (long n : {1L, 4L, long(kMaxStores)})
    out.push_back(sy::kernel(name + std::to_string(n) + ">", n * kUnroll, kSteps, {{"stores", n}}));
  return out;
}

#define SMD_FENCE_CASE(id, Fence, stores) {id, [] { return list_fence<stores>(#Fence); }, run_fence<Fence, stores>}

int main(int argc, char** argv) {
  using sy::kernel;
  return smd::family_main(
      argc, argv,
      {SMD_FENCE_CASE("fence_acq_rel_cta", FenceAcqRelCta, false),
       SMD_FENCE_CASE("fence_sc_cta", FenceScCta, false),
       SMD_FENCE_CASE("fence_acq_rel_cluster", FenceAcqRelCluster, false),
       SMD_FENCE_CASE("fence_sc_cluster", FenceScCluster, false),
       SMD_FENCE_CASE("fence_acq_rel_gpu", FenceAcqRelGpu, false),
       SMD_FENCE_CASE("fence_sc_gpu", FenceScGpu, false),
       SMD_FENCE_CASE("fence_acq_rel_sys", FenceAcqRelSys, false),
       SMD_FENCE_CASE("fence_sc_sys", FenceScSys, false),
       SMD_FENCE_CASE("fence_stores_cta", FenceAcqRelCta, true),
       SMD_FENCE_CASE("fence_stores_gpu", FenceAcqRelGpu, true),
       SMD_FENCE_CASE("stores_unfenced", NoFence, true),
       {"ld_acquire_gpu", [] { return std::vector{kernel("load_kernel<LoadAcquire>", kUnroll, kSteps)}; },
        run_load<LoadAcquire>},
       {"ld_relaxed_gpu", [] { return std::vector{kernel("load_kernel<LoadRelaxed>", kUnroll, kSteps)}; },
        run_load<LoadRelaxed>},
       {"st_release_gpu", [] { return std::vector{kernel("store_kernel<StoreRelease>", kUnroll, kSteps)}; },
        run_store<StoreRelease>},
       {"st_relaxed_gpu", [] { return std::vector{kernel("store_kernel<StoreRelaxed>", kUnroll, kSteps)}; },
        run_store<StoreRelaxed>}});
}
