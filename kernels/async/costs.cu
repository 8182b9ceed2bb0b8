// Issue cost of the synchronisation around async copies: clock64 around n and 2n loop bodies of kUnroll
// back-to-back ops of lane 0 of one warp; the cost is
// the slope per op, so clock reads and loop overhead cancel. elect.sync is timed as a dependent loop step against
// the same step without it (elect_kernel below).
#include <type_traits>

#include "../common/slope.cuh"
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
#if SMD_HAS(tma)
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
    return 0;
  }
};
// tensormap.replace of the global address in a shared-memory tensor map is a store of the field; ptxas drops
// stores that the next one overwrites, so each replace is read back (the next address depends on it): the cost
// is the replace plus a dependent ld.shared of the field.
struct TensormapReplace {
  __device__ __forceinline__ static uint32_t op(const Ctx& c, uint32_t last) {
#if SMD_HAS(tma)
    asm volatile("tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;"
                 ::"r"(as::smem(c.smem_map)), "l"(uint64_t(c.gmem_map) + 16 * (last & 1))
                 : "memory");
#endif
    return as::ld_shared_u32(c.smem_map);
  }
};
struct FenceTensormapAcquire {
  __device__ __forceinline__ static uint32_t op(const Ctx& c, uint32_t) {
#if SMD_HAS(tma)
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(c.gmem_map) : "memory");
#endif
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
      smd::NvtxRange range(smd::range_name(id, point, "timed"), r >= 0);
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

// elect.sync compiles to ELECT, which reads no operand: the membermask only promises that every executing thread is
// in it (ptxas drops a warp-uniform mask and guards a varying one with WARPSYNC), so a chain through the mask never
// reaches ELECT, and ptxas keeps one ELECT per basic block (2 of 32 unrolled ones survived). Each step is therefore
// one loop iteration whose exit test waits on that step's lane id: ELECT, its move to a register, SHF, LOP3 into the
// counter, IADD, ISETP, BRA; the next ELECT issues only once that branch resolves. The control loop runs the same
// step without the ELECT (its SHF shifts the counter instead); step minus control is what elect.sync adds. Both
// loops keep the counter in vector registers: the ELECT loop because its lane id is moved to one, the control loop
// because its shift (31, as the ELECT loop's) is loaded per lane (with a kernel argument, sm_120a ran one control loop
// on the uniform datapath; a per-lane shift in the ELECT loop makes ptxas guard each ELECT against divergence).
constexpr uint32_t kElectSteps = 2048;  // loop steps of the short phase; the long one runs 2 x kElectSteps

template <bool Elect>
__device__ __forceinline__ uint32_t elect_steps(uint32_t shift, uint32_t n) {
  uint32_t i = 0;
#pragma unroll 1
  for (; i < n; ++i) {
    uint32_t t;  // a lane id, or the counter (< 2^31), shifted right by 31: 0 at run time, unknown to ptxas
    if constexpr (Elect)
#if SMD_HAS(elect)
      asm volatile("{\n\t.reg .pred p;\n\telect.sync %0|p, 0xffffffff;\n\tshr.b32 %0, %0, %1;\n\t}"
                   : "=r"(t)
                   : "r"(shift));
#else
      __trap(), t = 0;
#endif
    else
      asm volatile("shr.b32 %0, %1, %2;" : "=r"(t) : "r"(i), "r"(shift));
    i ^= t;
  }
  return i;  // n when every t was 0
}

// What each warp's lane 0 writes: both loops' clock reads, their step counts (3n each when every t was 0), and one
// election after the timing (the lane id it returned and the ballot of its predicate: exactly that lane).
struct ElectOut {
  smd::Slope elect, control;
  uint32_t elect_steps, control_steps, leader, elected;
};

__global__ void elect_kernel(uint32_t shift, const uint32_t* lane_shifts, uint32_t n, ElectOut* out) {
  ElectOut o;
  const uint32_t lane_shift = lane_shifts[threadIdx.x % 32];
  __syncthreads();
  o.elect.ns0 = smd::clock_ns();
  o.elect.c0 = smd::clock_cycles();
  o.elect_steps = elect_steps<true>(shift, n);
  o.elect.c1 = smd::clock_cycles();
  o.elect_steps += elect_steps<true>(shift, 2 * n);
  o.elect.c2 = smd::clock_cycles();
  o.elect.ns2 = smd::clock_ns();
  __syncthreads();  // every warp leaves the ELECT loops before any enters the control loops
  o.control.ns0 = smd::clock_ns();
  o.control.c0 = smd::clock_cycles();
  o.control_steps = elect_steps<false>(lane_shift, n);
  o.control.c1 = smd::clock_cycles();
  o.control_steps += elect_steps<false>(lane_shift, 2 * n);
  o.control.c2 = smd::clock_cycles();
  o.control.ns2 = smd::clock_ns();
  uint32_t is_leader = 0;
#if SMD_HAS(elect)
  asm volatile("{\n\t.reg .pred p;\n\telect.sync %0|p, 0xffffffff;\n\tselp.u32 %1, 1, 0, p;\n\t}"
               : "=r"(o.leader), "=r"(is_leader));
#else
  o.leader = 0;
#endif
  o.elected = __ballot_sync(0xffffffffu, is_leader);
  o.elect.smid = o.control.smid = smd::sm_id();
  if (threadIdx.x % 32 == 0) out[threadIdx.x / 32] = o;
}

// One warp: the latency ELECT adds to a dependent chain (metrics step, control and cost), per launch from the step
// and control slopes, after checking the loops' results and the check election. (A 32-warp launch failed on the H200
// and was dropped: its n and 2n phases do not scale cleanly while 8 warps share each scheduler.)
void run_elect(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const std::vector<uint32_t> shift(32, 31);
  uint32_t* lane_shifts;
  ElectOut* out;
  SMD_CHECK(cudaMalloc(&lane_shifts, 32 * sizeof(uint32_t)));
  SMD_CHECK(cudaMemcpy(lane_shifts, shift.data(), 32 * sizeof(uint32_t), cudaMemcpyHostToDevice));
  SMD_CHECK(cudaMalloc(&out, sizeof(ElectOut)));
  smd::Record cost{id, point, "cost", "cycle"}, step{id, point, "step", "cycle"};
  smd::Record control{id, point, "control", "cycle"};
  std::vector<double> cycles, mhz;
  for (int r = -1; r < repeats; ++r) {
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"), r >= 0);
      elect_kernel<<<1, 32>>>(31, lane_shifts, kElectSteps, out);
      SMD_CHECK(cudaGetLastError());
      SMD_CHECK(cudaDeviceSynchronize());
    }
    ElectOut w;
    SMD_CHECK(cudaMemcpy(&w, out, sizeof(ElectOut), cudaMemcpyDeviceToHost));
    if (w.elect_steps != 3 * kElectSteps || w.control_steps != 3 * kElectSteps)
      smd::fail(id + ": a loop ran " + std::to_string(w.elect_steps) + " / " + std::to_string(w.control_steps) +
                " steps, not " + std::to_string(3 * kElectSteps) + ": a shifted lane id or counter was not 0");
    if (w.leader >= 32 || w.elected != (1u << w.leader))
      smd::fail(id + ": elect.sync returned lane " + std::to_string(w.leader) + " but the lanes it elected were " +
                std::to_string(w.elected) + " (want exactly that lane)");
    for (const smd::Slope* s : {&w.elect, &w.control})
      if (const std::string why = smd::phase_mismatch(*s, s == &w.elect ? "elect.sync" : "control"); !why.empty())
        smd::fail(id + ": " + why);
    if (r < 0) continue;
    const double e = smd::per_step(w.elect, kElectSteps), c = smd::per_step(w.control, kElectSteps);
    step.samples.push_back(e), control.samples.push_back(c), cost.samples.push_back(e - c);
    cycles.push_back(double(w.elect.c2 - w.elect.c0)), mhz.push_back(smd::mhz(w.elect));
    cost.smid = step.smid = control.smid = int(w.elect.smid);
  }
  SMD_CHECK(cudaFree(out));
  SMD_CHECK(cudaFree(lane_shifts));
  for (smd::Record* rec : {&cost, &step, &control}) {
    rec->cycles = smd::median(cycles), rec->clock_mhz = smd::median(mhz), rec->iterations = kElectSteps;
    smd::emit(*rec);
  }
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
        run_cost<FenceTensormapAcquire>},
       {"elect_sync_cost", [] { return std::vector{as::kernel("elect_kernel", 1, kElectSteps)}; }, run_elect}});
}
