// setmaxnreg cost: each of 4 warps of a CTA gives registers back (setmaxnreg.dec to `low`) and takes
// them again (setmaxnreg.inc to kHigh, the kernel's own count), with a clock read before, between and
// after. The same loop with the two instructions left out gives the clock-read overhead to subtract.
// __launch_bounds__(128, 1) lets ptxas honour setmaxnreg (else it warns C7508 and drops it).
#include "sched.cuh"

namespace {

constexpr int kWarps = 4;
constexpr int kHigh = 128;  // ptxas gives the kernel this many registers: the largest inc target
constexpr int kIters = 64;

template <int LOW, int SET>
__global__ void __launch_bounds__(kWarps * 32, 1) maxnreg_pair(long long* cost, int iters) {
  long long dec = 0, inc = 0;
#pragma unroll 1
  for (int i = 0; i < iters; ++i) {
    const long long t0 = smd::clock_cycles();
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(__CUDA_ARCH_FEAT_SM100_ALL) || defined(__CUDA_ARCH_FEAT_SM120_ALL)
    if constexpr (SET) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(LOW) : "memory");
#endif
    const long long t1 = smd::clock_cycles();
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(__CUDA_ARCH_FEAT_SM100_ALL) || defined(__CUDA_ARCH_FEAT_SM120_ALL)
    if constexpr (SET) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kHigh) : "memory");
#endif
    const long long t2 = smd::clock_cycles();
    dec += t1 - t0, inc += t2 - t1;
  }
  if (threadIdx.x % 32 == 0) cost[2 * (threadIdx.x / 32)] = dec, cost[2 * (threadIdx.x / 32) + 1] = inc;
}

// Mean cycles per dec and per inc over the warps of one launch.
template <int LOW, int SET>
std::pair<double, double> launch(long long* cost) {
  maxnreg_pair<LOW, SET><<<1, kWarps * 32>>>(cost, kIters);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
  std::vector<long long> c(2 * kWarps);
  SMD_CHECK(cudaMemcpy(c.data(), cost, c.size() * sizeof(long long), cudaMemcpyDeviceToHost));
  double dec = 0, inc = 0;
  for (int w = 0; w < kWarps; ++w) dec += c[2 * w], inc += c[2 * w + 1];
  if (dec <= 0 || inc <= 0) smd::fail("setmaxnreg: a warp recorded no cycles");
  return {dec / (kWarps * kIters), inc / (kWarps * kIters)};
}

template <int LOW>
void measure(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  cudaFuncAttributes attr;
  SMD_CHECK(cudaFuncGetAttributes(&attr, maxnreg_pair<LOW, 1>));
  if (attr.numRegs < kHigh)  // an inc above the CTA's pool would wait for registers forever
    smd::fail("maxnreg_pair has " + std::to_string(attr.numRegs) + " registers, below the inc target " +
              std::to_string(kHigh) + ": setmaxnreg.inc could never complete");
  sched::Buffer<long long> cost(2 * kWarps);
  launch<LOW, 0>(cost.ptr), launch<LOW, 1>(cost.ptr);  // untimed: module load, icache
  std::vector<double> dec, inc;
  for (int r = 0; r < repeats; ++r) {
    std::pair<double, double> base, set;
    {
      smd::NvtxRange range(smd::range_name(id, point, "clock_only"));
      base = launch<LOW, 0>(cost.ptr);
    }
    {
      smd::NvtxRange range(smd::range_name(id, point, "setmaxnreg"));
      set = launch<LOW, 1>(cost.ptr);
    }
    dec.push_back(set.first - base.first), inc.push_back(set.second - base.second);
  }
  smd::Record rec{id, point, "dec_cost", "cycle", dec, 0, kIters, 0, -1};
  smd::emit(rec);
  rec.metric = "inc_cost", rec.samples = inc;
  smd::emit(rec);
}

template <int LOW>
std::vector<smd::KernelInfo> kernels_of() {
  const std::string low = std::to_string(LOW);
  return {{{{"low", LOW}}, "clock_only", 0, kIters, "maxnreg_pair<" + low + ",0>"},
          {{{"low", LOW}}, "setmaxnreg", 2, kIters, "maxnreg_pair<" + low + ",1>"}};
}

void run(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  switch (smd::param(point, "low")) {
    case 32: return measure<32>(id, point, repeats);
    case 64: return measure<64>(id, point, repeats);
    case 96: return measure<96>(id, point, repeats);
    default: smd::fail("low=" + std::to_string(point.at("low")) + " is not compiled: use 32, 64 or 96", 2);
  }
}

std::vector<smd::KernelInfo> list() {
  auto out = kernels_of<32>();
  for (auto more : {kernels_of<64>(), kernels_of<96>()}) out.insert(out.end(), more.begin(), more.end());
  return out;
}

}  // namespace

int main(int argc, char** argv) { return smd::family_main(argc, argv, {{"setmaxnreg", list, run}}); }
