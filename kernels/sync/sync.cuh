// Shared pieces of the sync category: the SM count, a --list entry, the slope of one timed thread (smd::Slope:
// c0 | n steps | c1 | 2n steps | c2), and a whole-grid rate from every CTA's stamps (memory/atomics.cu's method:
// all operations over the grid's %globaltimer span, at the median SM clock the CTAs saw).
#pragma once
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "../common/harness.cuh"
#include "../common/slope.cuh"

namespace sy {

using smd::mhz;
using smd::per_step;
using smd::Slope;

inline int sms() {
  int dev = 0, n = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
  return n;
}

// --list entry of one kernel: `ops` claimed instructions per pass of its timed loop, `iterations` timed steps (n).
inline smd::KernelInfo kernel(const std::string& symbol, long ops, long iterations,
                              std::map<std::string, long> params = {}) {
  return {std::move(params), "timed", ops, iterations, symbol};
}

// Read one Slope back, check that its two phases agree (2n steps take about twice n) and return it.
inline Slope read_slope(const Slope* device, const std::string& what) {
  Slope s;
  SMD_CHECK(cudaMemcpy(&s, device, sizeof(s), cudaMemcpyDeviceToHost));
  if (const std::string why = smd::phase_mismatch(s, what); !why.empty()) smd::fail(why);
  return s;
}

// Operations per cycle per SM of one launch: `ops` over the CTAs' %globaltimer span at their median clock.
inline double rate_per_sm(const std::vector<smd::Stamp>& stamps, double ops, int sms, double& clock_mhz) {
  unsigned long long n0 = stamps[0].ns0, n1 = stamps[0].ns1;
  std::vector<double> clock;
  for (const auto& s : stamps) {
    n0 = std::min(n0, s.ns0), n1 = std::max(n1, s.ns1);
    if (s.ns1 > s.ns0) clock.push_back((s.c1 - s.c0) * 1e3 / double(s.ns1 - s.ns0));
  }
  clock_mhz = clock.empty() ? 0.0 : smd::median(clock);
  const double cycles = (n1 - n0) * 1e-3 * clock_mhz;
  return cycles > 0 ? ops / cycles / sms : 0.0;
}

// One slope record per launch of `launch` (which returns the Slope of its timed thread): cycles per step, with the
// counter values `expect` the profiled launch must show.
template <class Launch>
smd::Record slope_record(const std::string& id, const std::map<std::string, long>& point, long steps, int repeats,
                         Launch&& launch, std::vector<std::pair<std::string, double>> expect = {}) {
  launch();  // untimed first launch
  smd::Record rec{id, point, "latency", "cycle"};
  std::vector<double> cycles, clock;
  for (int r = 0; r < repeats; ++r) {
    Slope s;
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      s = launch();
    }
    rec.samples.push_back(per_step(s, steps));
    cycles.push_back(double(s.c2 - s.c0)), clock.push_back(mhz(s));
    rec.smid = int(s.smid);
  }
  rec.cycles = smd::median(cycles), rec.clock_mhz = smd::median(clock), rec.iterations = steps;
  rec.variant = "timed", rec.expect = std::move(expect);
  return rec;
}

}  // namespace sy
