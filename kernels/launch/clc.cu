// Cluster launch control (PTX ISA 8.6, sm_100+): a grid of many more CTAs than fit; each CTA runs its own tile,
// then cancels a CTA of the same grid that has not launched yet and runs that CTA's tile instead, until a
// cancel fails. Thread 0 times each round trip (mbarrier.arrive.expect_tx, clusterlaunchcontrol.try_cancel,
// the mbarrier wait for the 16 B response, query_cancel.is_canceled and get_first_ctaid::x) with clock64.
// Every tile must run exactly once (checked). Below sm_100 the kernel body is compiled out (the kernel still
// exists for the SASS listing) and the point is static.
#include <cstdint>

#include "../common/harness.cuh"

constexpr int kThreads = 128;

struct ClcStats {
  long long ok_cycles, fail_cycles, c0, c1;  // summed successful round trips, the failing one, CTA span
  unsigned long long ns0, ns1;
  unsigned ok, smid;
};

__global__ void __launch_bounds__(kThreads) clc_kernel(unsigned* runs, ClcStats* stats) {
#if __CUDA_ARCH__ >= 1000
  __shared__ alignas(16) uint4 response;
  __shared__ alignas(8) uint64_t bar;
  __shared__ int next;
  const uint32_t resp = uint32_t(__cvta_generic_to_shared(&response)), mbar = uint32_t(__cvta_generic_to_shared(&bar));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(mbar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  ClcStats s = {};
  s.ns0 = smd::clock_ns(), s.c0 = smd::clock_cycles();
  uint32_t phase = 0;
  for (int tile = blockIdx.x; tile >= 0;) {
    if (threadIdx.x == 0) {
      atomicAdd(&runs[tile], 1u);  // the tile's work
      const long long t0 = smd::clock_cycles();
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 16;" ::"r"(mbar) : "memory");
      asm volatile("clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128 [%0], [%1];"
                   ::"r"(resp), "r"(mbar) : "memory");
      for (uint32_t done = 0; !done;)
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.b32 %0, 1, 0, p;\n\t}" : "=r"(done) : "r"(mbar), "r"(phase) : "memory");
      phase ^= 1;
      const uint4 v = response;
      uint32_t canceled, first;
      asm volatile("{\n\t.reg .b128 r;\n\t.reg .pred p;\n\tmov.b128 r, {%2, %3};\n\t"
                   "clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 p, r;\n\tselp.b32 %0, 1, 0, p;\n\t"
                   "clusterlaunchcontrol.query_cancel.get_first_ctaid::x.b32.b128 %1, r;\n\t}"
                   : "=r"(canceled), "=r"(first)
                   : "l"((uint64_t(v.y) << 32) | v.x), "l"((uint64_t(v.w) << 32) | v.z));
      const long long t1 = smd::clock_cycles();
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the next response overwrites this one
      if (canceled) s.ok_cycles += t1 - t0, ++s.ok;
      else s.fail_cycles = t1 - t0;
      next = canceled ? int(first) : -1;
    }
    __syncthreads();
    tile = next;
    __syncthreads();
  }
  s.c1 = smd::clock_cycles(), s.ns1 = smd::clock_ns(), s.smid = smd::sm_id();
  if (threadIdx.x == 0) stats[blockIdx.x] = s;
#endif
}

void run_clc(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long per_sm = smd::param(point, "ctas_per_sm");
  int dev = 0, major = 0, minor = 0, sms = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  SMD_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  SMD_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  if (major < 10)
    return smd::static_point(id, point, "clusterlaunchcontrol needs sm_100 or newer, this GPU is sm_" +
                                            std::to_string(major * 10 + minor));
  if (per_sm < 1 || per_sm * sms > 65535) smd::fail("ctas_per_sm must be in 1..65535 / SMs", 2);
  const int ctas = int(per_sm * sms);
  unsigned* runs;
  ClcStats* dstats;
  SMD_CHECK(cudaMalloc(&runs, ctas * sizeof(unsigned)));
  SMD_CHECK(cudaMalloc(&dstats, ctas * sizeof(ClcStats)));
  std::vector<unsigned> got(ctas);
  std::vector<ClcStats> stats(ctas);
  smd::Record trip{id, point, "round_trip", "cycle"}, failed{id, point, "failed_round_trip", "cycle"},
      share{id, point, "canceled_share", "fraction"};
  std::vector<double> clocks;
  for (int r = -1; r < repeats; ++r) {  // r = -1: untimed first launch
    SMD_CHECK(cudaMemset(runs, 0, ctas * sizeof(unsigned)));
    SMD_CHECK(cudaMemset(dstats, 0, ctas * sizeof(ClcStats)));
    if (r < 0) {
      clc_kernel<<<ctas, kThreads>>>(runs, dstats);
    } else {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      clc_kernel<<<ctas, kThreads>>>(runs, dstats);
    }
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaDeviceSynchronize());
    SMD_CHECK(cudaMemcpy(got.data(), runs, ctas * sizeof(unsigned), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(stats.data(), dstats, ctas * sizeof(ClcStats), cudaMemcpyDeviceToHost));
    for (int t = 0; t < ctas; ++t)
      if (got[t] != 1) smd::fail("tile " + std::to_string(t) + " ran " + std::to_string(got[t]) + " times, want 1");
    if (r < 0) continue;
    double ok_cycles = 0, ok = 0;
    std::vector<double> fails, mhz;
    for (const ClcStats& s : stats) {
      if (s.c1 == 0) continue;  // a canceled CTA never ran
      ok_cycles += double(s.ok_cycles), ok += s.ok;
      fails.push_back(double(s.fail_cycles));
      if (s.ns1 > s.ns0) mhz.push_back(double(s.c1 - s.c0) * 1e3 / double(s.ns1 - s.ns0));
    }
    if (ok == 0) smd::fail("no try_cancel succeeded: every CTA launched before any cancel");
    trip.samples.push_back(ok_cycles / ok);
    failed.samples.push_back(smd::median(fails));
    share.samples.push_back(ok / ctas);
    clocks.push_back(mhz.empty() ? 0.0 : smd::median(mhz));
  }
  SMD_CHECK(cudaFree(runs));
  SMD_CHECK(cudaFree(dstats));
  trip.cycles = smd::median(trip.samples);
  for (smd::Record* rec : {&trip, &failed, &share}) {
    rec->iterations = 1, rec->clock_mhz = smd::median(clocks), rec->variant = "timed";
    smd::emit(*rec);
  }
}

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv, {{"clc_try_cancel", [] { return std::vector<smd::KernelInfo>{{{}, "timed", 1, 1, "clc_kernel"}}; },
                    run_clc}});
}
