// Issue cost of the synchronisation around async copies: clock64 around n and 2n loop bodies of kUnroll
// back-to-back ops of lane 0 of one warp; the cost is
// the slope per op, so clock reads and loop overhead cancel.
#include <memory>
#include <type_traits>

#include "async.cuh"

constexpr int kUnroll = 32;
constexpr int kIters = 64;  // loop bodies of the short phase; the long one runs 2 x kIters

struct Ctx {
  uint64_t* bar;        // arrive: pending count far above what the loop arrives; waits: phase 0 complete
  uint8_t* smem_map;    // a 128 B tensor map in shared memory (tensormap.replace target)
  const void* gmem_map;  // a tensor map in global memory (fence.proxy.tensormap acquire target)
};

struct MbarArrive {
  __device__ __forceinline__ static uint32_t op(const Ctx& c, uint32_t) {
    as::arrive(c.bar);
    return 0;
  }
};
struct MbarTryWait {
  __device__ __forceinline__ static uint32_t op(const Ctx& c, uint32_t) { return as::try_wait(c.bar, 0); }
};
struct MbarTestWait {
  __device__ __forceinline__ static uint32_t op(const Ctx& c, uint32_t) { return as::test_wait(c.bar, 0); }
};
struct FenceProxyAsync {
  __device__ __forceinline__ static uint32_t op(const Ctx&, uint32_t) {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    return 0;
  }
};
// tensormap.replace of the global address in a shared-memory tensor map is a store of the field; ptxas drops
// stores that the next one overwrites, so each replace is read back (the next address depends on it): the cost
// is the replace plus a dependent ld.shared of the field.
struct TensormapReplace {
  __device__ __forceinline__ static uint32_t op(const Ctx& c, uint32_t last) {
    asm volatile("tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;"
                 ::"r"(as::smem(c.smem_map)), "l"(uint64_t(c.gmem_map) + 16 * (last & 1))
                 : "memory");
    return as::ld_shared_u32(c.smem_map);
  }
};
struct FenceTensormapAcquire {
  __device__ __forceinline__ static uint32_t op(const Ctx& c, uint32_t) {
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(c.gmem_map) : "memory");
    return 0;
  }
};

template <class Op>
__device__ __forceinline__ uint32_t body(const Ctx& c, int iters) {
  uint32_t acc = 0, last = 0;
#pragma unroll 1
  for (int i = 0; i < iters; ++i)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc += last = Op::op(c, last);
  return acc;
}

// out: c0, c1, c2, smid, ns from c0 to c2, and the ops' results (kept live).
template <class Op>
__global__ void cost_kernel(const void* gmem_map, long long* out) {
  __shared__ __align__(128) uint8_t smem_map[128];
  __shared__ uint64_t bar;
  const int lane = threadIdx.x % 32;
  if (lane < 16) reinterpret_cast<uint64_t*>(smem_map)[lane] = reinterpret_cast<const uint64_t*>(gmem_map)[lane];
  if (lane == 0) {
    as::bar_init(&bar, std::is_same_v<Op, MbarArrive> ? (1u << 20) - 1 : 1u);
    if (!std::is_same_v<Op, MbarArrive>) as::arrive(&bar);  // phase 0 completes: every wait finds it done
  }
  __syncwarp();
  const Ctx c{&bar, smem_map, gmem_map};
  if (lane != 0) return;
  uint32_t acc = body<Op>(c, 1);
  const unsigned long long ns0 = smd::clock_ns();
  const long long c0 = smd::clock_cycles();
  acc += body<Op>(c, kIters);
  const long long c1 = smd::clock_cycles();
  acc += body<Op>(c, 2 * kIters);
  const long long c2 = smd::clock_cycles();
  const unsigned long long ns2 = smd::clock_ns();
  {
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = smd::sm_id(), out[4] = ns2 - ns0;
    out[5] = acc + reinterpret_cast<const uint32_t*>(smem_map)[0];
  }
}

// Each launch: per-op slope over kIters and 2 x kIters bodies; the results are checked where they are known.
template <class Op>
void run_cost(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  static_assert(3 * kIters * kUnroll + kUnroll < (1 << 20) - 1, "arrivals must not complete the barrier's phase");
  uint8_t* gmap;
  long long* out;
  SMD_CHECK(cudaMalloc(&gmap, 128));
  SMD_CHECK(cudaMalloc(&out, 6 * sizeof(long long)));
  const CUtensorMap map = as::tensor_map(gmap, 64L * as::kRowBytes, 1);  // any valid map: only its bytes matter
  SMD_CHECK(cudaMemcpy(gmap, &map, sizeof(map), cudaMemcpyHostToDevice));
  smd::Record rec{id, point, "cost", "cycle"};
  std::vector<double> cycles, mhz;
  const long ops = long(kIters) * kUnroll;
  for (int r = -1; r < repeats; ++r) {
    {
      std::unique_ptr<smd::NvtxRange> range(r < 0 ? nullptr : new smd::NvtxRange(smd::range_name(id, point, "timed")));
      cost_kernel<Op><<<1, 32>>>(gmap, out);
      SMD_CHECK(cudaGetLastError());
      SMD_CHECK(cudaDeviceSynchronize());
    }
    long long c[6];
    SMD_CHECK(cudaMemcpy(c, out, sizeof(c), cudaMemcpyDeviceToHost));
    const uint32_t results = uint32_t(c[5]) - reinterpret_cast<const uint32_t*>(&map)[0];
    if ((std::is_same_v<Op, MbarTryWait> || std::is_same_v<Op, MbarTestWait>) && results != uint32_t(3 * ops + kUnroll))
      smd::fail(id + ": a wait on the completed phase returned false");
    if (r < 0) continue;
    rec.samples.push_back(double((c[2] - c[1]) - (c[1] - c[0])) / ops);
    cycles.push_back(double(c[2] - c[0]));
    mhz.push_back(c[4] > 0 ? (c[2] - c[0]) * 1e3 / c[4] : 0.0);
    rec.smid = int(c[3]);
  }
  SMD_CHECK(cudaFree(gmap));
  SMD_CHECK(cudaFree(out));
  rec.cycles = smd::median(cycles), rec.clock_mhz = smd::median(mhz), rec.iterations = ops;
  smd::emit(rec);
}

template <class Op>
std::vector<smd::KernelInfo> listing(const char* name) {
  return {as::kernel(std::string("cost_kernel<") + name + ">", kUnroll, long(kIters) * kUnroll)};
}

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv,
      {{"mbarrier_arrive_cost", [] { return listing<MbarArrive>("MbarArrive"); }, run_cost<MbarArrive>},
       {"mbarrier_try_wait_cost", [] { return listing<MbarTryWait>("MbarTryWait"); }, run_cost<MbarTryWait>},
       {"mbarrier_test_wait_cost", [] { return listing<MbarTestWait>("MbarTestWait"); }, run_cost<MbarTestWait>},
       {"fence_proxy_async_cost", [] { return listing<FenceProxyAsync>("FenceProxyAsync"); }, run_cost<FenceProxyAsync>},
       {"tensormap_replace_cost", [] { return listing<TensormapReplace>("TensormapReplace"); },
        run_cost<TensormapReplace>},
       {"fence_proxy_tensormap_cost", [] { return listing<FenceTensormapAcquire>("FenceTensormapAcquire"); },
        run_cost<FenceTensormapAcquire>}});
}
