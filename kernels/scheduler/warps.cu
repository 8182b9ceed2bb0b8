// Latency hiding: throughput of dependent FFMA / IADD3 / MUFU chains against the warps resident on
// an SM (1 .. the SM's maximum), one chain per warp. Every SM gets the same CTAs; per SM, resident
// warps are the most timed regions (clock64) that overlap, and throughput is its instructions over
// its span. max_resident counts co-resident warps of spinning CTAs: the SM's limit, measured.
#include "sched.cuh"

namespace {

constexpr int kIters = 32;             // x kDepth = 8192 dependent steps per warp
constexpr long long kSpin = 20000;     // cycles each max_resident warp stays resident
constexpr long kMaxSpinIters = 1 << 22;  // cap of the spin loop, whatever the clock does

struct PerSm {
  double resident, throughput;
};

using sched::attribute;
using sched::by_sm;
using sched::resident;

int sm_count() { return attribute(cudaDevAttrMultiProcessorCount); }
// Warps an SM holds at most: 64 on an H200, 48 on sm_120.
int max_warps_per_sm() { return attribute(cudaDevAttrMaxThreadsPerMultiProcessor) / 32; }

template <class Op>
void scaling(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long warps = smd::param(point, "warps");
  if (warps < 1 || warps > 64) smd::fail("warps=" + std::to_string(warps) + " out of range 1..64", 2);
  const int ctas_per_sm = warps > 32 ? 2 : 1, cta_warps = int(warps) / ctas_per_sm;
  if (cta_warps * ctas_per_sm != warps) smd::fail("warps=" + std::to_string(warps) + " above 32 must be even", 2);
  int fit = 0;
  SMD_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, sched::pipe_loop<Op, 1>, cta_warps * 32, 0));
  if (fit < ctas_per_sm)
    return smd::static_point(id, point, std::to_string(warps) + " warps do not fit on one SM: it holds " +
                                            std::to_string(max_warps_per_sm()) + " warps, " + std::to_string(fit) +
                                            " CTA(s) of " + std::to_string(cta_warps));
  const int ctas = sm_count() * ctas_per_sm;
  sched::run_pipe_loop<Op, 1>(ctas, cta_warps, kIters, ~0ull);  // untimed: module load, icache
  std::vector<double> thr, res, mhz;
  int smid = -1;
  for (int r = 0; r < repeats; ++r) {
    std::vector<sched::WarpStamp> st;
    {
      smd::NvtxRange range(smd::range_name(id, point, "main"));
      st = sched::run_pipe_loop<Op, 1>(ctas, cta_warps, kIters, ~0ull);
    }
    std::vector<double> t, n;
    for (const auto& [sm, ws] : by_sm(st)) {
      const smd::Span s = smd::span(ws);
      t.push_back(double(ws.size()) * kIters * sched::kDepth / s.cycles);
      n.push_back(resident(ws));
      mhz.push_back(s.mhz), smid = int(sm);
    }
    thr.push_back(smd::median(t));
    res.push_back(smd::median(n));
  }
  smd::Record rec{id, point, "throughput", "warp_inst/cycle/SM", thr, 0, kIters, smd::median(mhz), smid};
  smd::emit(rec);
  rec.metric = "resident_warps", rec.unit = "warp", rec.samples = res;
  smd::emit(rec);
}

__global__ void __launch_bounds__(128) resident_spin(sched::WarpStamp* stamps, long long spin) {
  const long long c0 = smd::clock_cycles();
  const unsigned long long n0 = smd::clock_ns();
  long long c1 = c0;
  for (long i = 0; i < kMaxSpinIters && c1 - c0 < spin; ++i) c1 = smd::clock_cycles();
  if (threadIdx.x % 32 == 0)
    stamps[blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32] = {{c0, c1, n0, smd::clock_ns(), smd::sm_id()},
                                                                   sched::warp_id()};
}

void max_resident(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long cta_warps = smd::param(point, "cta_warps");
  if (cta_warps < 1 || cta_warps > 4) smd::fail("cta_warps=" + std::to_string(cta_warps) + " out of range 1..4", 2);
  const int ctas = sm_count() * int(2 * max_warps_per_sm() / cta_warps);  // twice the warps an SM can hold at most
  sched::Buffer<sched::WarpStamp> stamps(size_t(ctas) * cta_warps);
  std::vector<double> warps, blocks;
  int smid = -1;
  for (int r = 0; r < repeats; ++r) {
    {
      smd::NvtxRange range(smd::range_name(id, point, "main"));
      resident_spin<<<ctas, cta_warps * 32>>>(stamps.ptr, kSpin);
      SMD_CHECK(cudaGetLastError());
      SMD_CHECK(cudaDeviceSynchronize());
    }
    std::vector<double> most;
    for (const auto& [sm, ws] : by_sm(stamps.host())) {
      if (ws.front().c1 <= ws.front().c0) smd::fail("max_resident: a warp recorded no spin");
      most.push_back(resident(ws)), smid = int(sm);
    }
    warps.push_back(*std::max_element(most.begin(), most.end()));
    blocks.push_back(warps.back() / cta_warps);
  }
  smd::Record rec{id, point, "max_resident_warps", "warp", warps, 0, 1, 0, smid};
  smd::emit(rec);
  rec.metric = "max_resident_ctas", rec.unit = "cta", rec.samples = blocks;
  smd::emit(rec);
}

template <class Op>
std::vector<smd::KernelInfo> chain_kernel() {
  return {sched::pipe_kernel<Op, 1>({}, kIters)};
}

std::vector<smd::KernelInfo> spin_kernel() { return {{{}, "", 0, 0, "resident_spin"}}; }

}  // namespace

int main(int argc, char** argv) {
  return smd::family_main(argc, argv,
                          {{"warps_ffma", chain_kernel<Ffma>, scaling<Ffma>},
                           {"warps_iadd3", chain_kernel<Iadd3>, scaling<Iadd3>},
                           {"warps_mufu", chain_kernel<Ex2>, scaling<Ex2>},
                           {"max_resident", spin_kernel, max_resident}});
}
