// The register file: warps resident per SM against registers per thread. reg_hold<N> keeps N
// values live across a clock64 spin (an add to each per pass, so none folds or rematerialises);
// ptxas's register count for it (cudaFuncGetAttributes numRegs) is recorded with the warps that
// stayed resident on an SM at once (the most overlapping spins per SM, as max_resident counts them)
// and with the warps cudaOccupancyMaxActiveBlocksPerMultiprocessor predicts (the API's model).
// The step pattern over the sweep gives the registers per SM and the allocation granularity.
#include <utility>

#include "sched.cuh"

namespace {

constexpr int kCtaWarps = 2;               // 2-warp CTAs: the 32-CTA limit still lets 64 warps in
constexpr long long kSpin = 400000;        // cycles each warp stays resident: well past the time a full wave of CTAs takes to launch
constexpr long kMaxSpinIters = 1 << 22;    // cap of the spin loop, whatever the clock does
using Swept = std::integer_sequence<int, 8, 24, 32, 40, 48, 56, 64, 72, 80, 96, 112, 128, 144, 160, 176, 192>;

using HoldFn = void (*)(sched::WarpStamp*, unsigned*, long long, int);

}  // namespace

// N values live in registers across the whole spin; lane 0 of each warp stamps its span and SM.
template <int N>
__global__ void __launch_bounds__(kCtaWarps * 32) reg_hold(sched::WarpStamp* stamps, unsigned* sink, long long spin,
                                                           int flag) {
  unsigned v[N];
  const unsigned seed = threadIdx.x + blockIdx.x;
#pragma unroll
  for (int i = 0; i < N; ++i) v[i] = seed + i;
  const long long c0 = smd::clock_cycles();
  const unsigned long long n0 = smd::clock_ns();
  long long c1 = c0;
#pragma unroll 1
  for (long it = 0; it < kMaxSpinIters && c1 - c0 < spin; ++it) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("add.u32 %0, %0, 1;" : "+r"(v[i]));
    c1 = smd::clock_cycles();
  }
  const unsigned long long n1 = smd::clock_ns();
  unsigned x = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) x ^= v[i];
  if (threadIdx.x % 32 == 0)
    stamps[blockIdx.x * kCtaWarps + threadIdx.x / 32] = {{c0, c1, n0, n1, smd::sm_id()}, sched::warp_id()};
  if (flag)  // never true at run time, unknown to the compiler: keeps every value live
    sink[blockIdx.x * blockDim.x + threadIdx.x] = x;
}

namespace {

template <int... N>
HoldFn pick(long live, std::integer_sequence<int, N...>) {
  HoldFn fn = nullptr;
  ((fn = live == N ? reg_hold<N> : fn), ...);
  return fn;
}

template <int... N>
std::vector<smd::KernelInfo> listing(std::integer_sequence<int, N...>) {
  return {smd::KernelInfo{{{"live", N}}, "", N, 1, "reg_hold<" + std::to_string(N) + ">"}...};
}

std::vector<smd::KernelInfo> hold_kernels() { return listing(Swept{}); }

// Median over SMs of the warps each held at once.
double median_resident(const std::vector<sched::WarpStamp>& stamps, int& smid) {
  std::vector<double> per_sm;
  for (const auto& [sm, ws] : sched::by_sm(stamps)) {
    for (const auto& w : ws)
      if (w.c1 <= w.c0) smd::fail("reg_occupancy: a warp recorded no spin");
    per_sm.push_back(sched::resident(ws)), smid = int(sm);
  }
  return smd::median(per_sm);
}

void occupancy(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long live = smd::param(point, "live");
  const HoldFn fn = pick(live, Swept{});
  if (!fn) smd::fail("live=" + std::to_string(live) + " is not an instantiated reg_hold<N>: add it to Swept", 2);
  cudaFuncAttributes attr{};
  SMD_CHECK(cudaFuncGetAttributes(&attr, fn));
  if (attr.localSizeBytes)
    smd::fail("reg_hold<" + std::to_string(live) + "> spills (" + std::to_string(attr.localSizeBytes) +
              " B local): lower live so the values fit in 255 registers");
  int fit = 0;
  SMD_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, fn, kCtaWarps * 32, 0));
  // twice the CTAs an SM can hold at most, so every SM fills to its limit before the first leaves
  const int ctas = sched::attribute(cudaDevAttrMultiProcessorCount) * 2 *
                   sched::attribute(cudaDevAttrMaxBlocksPerMultiprocessor);
  sched::Buffer<sched::WarpStamp> stamps(size_t(ctas) * kCtaWarps);
  sched::Buffer<unsigned> sink(size_t(ctas) * kCtaWarps * 32);
  fn<<<ctas, kCtaWarps * 32>>>(stamps.ptr, sink.ptr, kSpin, 0);  // untimed: module load
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
  std::vector<double> warps;
  int smid = -1;
  for (int r = 0; r < repeats; ++r) {
    {
      smd::NvtxRange range(smd::range_name(id, point, "main"));
      fn<<<ctas, kCtaWarps * 32>>>(stamps.ptr, sink.ptr, kSpin, 0);
      SMD_CHECK(cudaGetLastError());
      SMD_CHECK(cudaDeviceSynchronize());
    }
    warps.push_back(median_resident(stamps.host(), smid));
  }
  smd::Record rec{id, point, "resident_warps", "warp", warps, 0, 1, 0, smid};
  smd::emit(rec);
  rec.metric = "api_warps", rec.samples = std::vector<double>(warps.size(), double(fit) * kCtaWarps);
  smd::emit(rec);
  rec.metric = "registers", rec.unit = "reg/thread", rec.samples = std::vector<double>(warps.size(), attr.numRegs);
  smd::emit(rec);
}

}  // namespace

int main(int argc, char** argv) {
  return smd::family_main(argc, argv, {{"reg_occupancy", hold_kernels, occupancy}});
}
