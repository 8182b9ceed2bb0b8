// Three clock reads of one timed thread: c0 | n steps | c1 | 2n steps | c2. One step costs the slope
// ((c2-c1) - (c1-c0)) / n, so clock reads, loop overhead and pipeline fill cancel.
#pragma once
#include <string>

namespace smd {

struct Slope {
  long long c0, c1, c2;
  unsigned long long ns0, ns2;
  unsigned smid;
};

inline double per_step(const Slope& s, long steps) { return double((s.c2 - s.c1) - (s.c1 - s.c0)) / steps; }
inline double mhz(const Slope& s) { return s.ns2 > s.ns0 ? (s.c2 - s.c0) * 1e3 / double(s.ns2 - s.ns0) : 0.0; }

// Why the two phases of `what` disagree (2n steps should take about twice n), then `why`; "" when they agree.
inline std::string phase_mismatch(const Slope& s, const std::string& what, const std::string& why = "") {
  const double t1 = double(s.c1 - s.c0), t2 = double(s.c2 - s.c1);
  if (t2 >= 1.5 * t1 && t2 <= 2.5 * t1) return "";
  return what + " phases disagree: n steps took " + std::to_string(s.c1 - s.c0) + " cycles, 2n steps " +
         std::to_string(s.c2 - s.c1) + " (want about 2x)" + why;
}

}  // namespace smd
