// Shared pieces of the sync category: the SM count, a --list entry, the slope of one timed thread (smd::Slope:
// c0 | n steps | c1 | 2n steps | c2), and a whole-grid rate from every CTA's stamps (memory/atomics.cu's method:
// all operations over the grid's %globaltimer span, at the median SM clock the CTAs saw).
#pragma once
#include <algorithm>
#include <cstdio>
#include <optional>
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

// Read one Slope back.
inline Slope read_slope(const Slope* device) {
  Slope s;
  SMD_CHECK(cudaMemcpy(&s, device, sizeof(s), cudaMemcpyDeviceToHost));
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

// Launches per timed sample before a point is given up: a launch whose two phases disagree (2n steps not about
// twice n: an instruction-cache miss or a preemption inside the short phase) is launched again.
constexpr int kTries = 3;

// One slope record per timed launch of `launch` (which returns the Slope of its timed thread): cycles per step, with
// the counter values `expect` the profiled launch must show. The first launch is untimed and unchecked (cold
// instruction cache, first touch); a sample whose phases disagree kTries times in a row drops the point, with its
// line on stderr (`<case> <params json>: why`), and the other points go on.
template <class Launch>
std::optional<smd::Record> slope_record(const std::string& id, const std::map<std::string, long>& point, long steps,
                                        int repeats, Launch&& launch,
                                        std::vector<std::pair<std::string, double>> expect = {}) {
  launch();  // untimed first launch
  smd::Record rec{id, point, "latency", "cycle"};
  std::vector<double> cycles, clock;
  for (int r = 0; r < repeats; ++r) {
    Slope s;
    std::string why;
    for (int t = 0; t < kTries; ++t) {
      {
        smd::NvtxRange range(smd::range_name(id, point, "timed"));
        s = launch();
      }
      why = smd::phase_mismatch(s, "timed", ", " + std::to_string(kTries) + " launches in a row");
      if (why.empty()) break;
    }
    if (!why.empty()) {
      std::fprintf(stderr, "%s %s: %s\n", id.c_str(), smd::params_json(point).c_str(), why.c_str());
      return std::nullopt;
    }
    rec.samples.push_back(per_step(s, steps));
    cycles.push_back(double(s.c2 - s.c0)), clock.push_back(mhz(s));
    rec.smid = int(s.smid);
  }
  rec.cycles = smd::median(cycles), rec.clock_mhz = smd::median(clock), rec.iterations = steps;
  rec.variant = "timed", rec.expect = std::move(expect);
  return rec;
}

// Emit the record of slope_record, where the point was not dropped.
inline void emit(const std::optional<smd::Record>& rec) {
  if (rec) smd::emit(*rec);
}

}  // namespace sy
