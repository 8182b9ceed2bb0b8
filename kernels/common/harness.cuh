// smdissect benchmark harness: the binary protocol of docs/design.md, shared by every case family.
// Arguments, one-line errors, clock reads, warm-up, NVTX ranges and JSON-lines records.
#pragma once
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include "features.cuh"  // SMD_HAS(feature): compile a body out where the arch lacks it

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace smd {

// Print one line naming the problem and exit: the protocol's only error path.
[[noreturn]] inline void fail(const std::string& msg, int code = 1) {
  std::fprintf(stderr, "error: %s\n", msg.c_str());
  std::exit(code);
}

#define SMD_CHECK(call)                                                                    \
  do {                                                                                     \
    cudaError_t err_ = (call);                                                             \
    if (err_ != cudaSuccess)                                                               \
      ::smd::fail(std::string(#call) + ": " + cudaGetErrorString(err_) + " (" + __FILE__ + \
                  ":" + std::to_string(__LINE__) + ")");                                   \
  } while (0)

// Named cases over one sweep (the cross product of `params`).
struct Group {
  std::vector<std::string> cases;
  std::map<std::string, std::vector<long>> params;
};

// Command line of every benchmark binary: --case ID (repeatable), --param k=v1,v2 (repeatable, the sweep is
// their cross product), --then (the next group of cases and params), --repeats N, --device N, --list. The groups
// run in order in this one process.
struct Args {
  std::vector<Group> groups{Group{}};
  int repeats = 9;
  int device = 0;
  bool list = false;
};

inline std::vector<long> parse_values(const std::string& key, const std::string& text) {
  std::vector<long> out;
  std::stringstream ss(text);
  for (std::string tok; std::getline(ss, tok, ',');) {
    char* end = nullptr;
    long v = std::strtol(tok.c_str(), &end, 10);
    if (tok.empty() || *end != '\0') fail("--param " + key + ": '" + tok + "' is not an integer", 2);
    out.push_back(v);
  }
  return out;
}

inline Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(k + " needs a value", 2);
      return argv[++i];
    };
    if (k == "--case") {
      a.groups.back().cases.push_back(value());
    } else if (k == "--param") {
      std::string kv = value();
      auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) fail("--param wants k=v1,v2,..., got '" + kv + "'", 2);
      a.groups.back().params[kv.substr(0, eq)] = parse_values(kv.substr(0, eq), kv.substr(eq + 1));
    } else if (k == "--then") {
      a.groups.emplace_back();
    } else if (k == "--repeats") {
      a.repeats = std::atoi(value().c_str());
      if (a.repeats < 1) fail("--repeats must be >= 1", 2);
    } else if (k == "--device") {
      a.device = std::atoi(value().c_str());
    } else if (k == "--list") {
      a.list = true;
    } else {
      fail("unknown argument '" + k + "' (use --case, --param, --then, --repeats, --device, --list)", 2);
    }
  }
  return a;
}

// Cross product of the swept parameters, in a stable order.
inline std::vector<std::map<std::string, long>> sweep(const std::map<std::string, std::vector<long>>& axes) {
  std::vector<std::map<std::string, long>> points{{}};
  for (const auto& [key, values] : axes) {
    std::vector<std::map<std::string, long>> next;
    for (const auto& p : points)
      for (long v : values) {
        auto q = p;
        q[key] = v;
        next.push_back(q);
      }
    points = next;
  }
  return points;
}

// Canonical JSON of a parameter point: sorted keys, no spaces (matches the Python side).
inline std::string params_json(const std::map<std::string, long>& p) {
  std::string s = "{";
  for (const auto& [k, v] : p) s += (s.size() > 1 ? ",\"" : "\"") + k + "\":" + std::to_string(v);
  return s + "}";
}

inline std::string json_list(const std::vector<double>& xs) {
  std::ostringstream o;
  o.precision(10);
  o << '[';
  for (size_t i = 0; i < xs.size(); ++i) o << (i ? "," : "") << xs[i];
  return o.str() + "]";
}

inline double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  size_t n = xs.size();
  return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

// The protocol's version, the first field of every JSON line (records and --list): smdissect.protocol.VERSION
// is the same number (tests/test_protocol.py), and the run stage refuses a line of another version.
constexpr int kProtocol = 1;

// One measurement: the protocol's JSON-lines record.
struct Record {
  std::string case_id;
  std::map<std::string, long> params;
  std::string metric, unit;
  std::vector<double> samples;
  double cycles = 0;       // median cycles of the timed region
  long long iterations = 0;
  double clock_mhz = 0;    // SM clock during the timed region (clock64 ticks per globaltimer us)
  int smid = -1;
  std::string variant;     // the NVTX variant whose ncu counters `expect` describes
  std::vector<std::pair<std::string, double>> expect;  // ncu metric -> value the launch must show
};

inline void emit(const Record& r) {
  std::ostringstream o;
  o.precision(10);
  o << "{\"protocol\":" << kProtocol << ",\"case\":\"" << r.case_id << "\",\"params\":" << params_json(r.params)
    << ",\"metric\":\"" << r.metric << "\",\"unit\":\"" << r.unit << "\",\"value\":" << median(r.samples)
    << ",\"samples\":" << json_list(r.samples) << ",\"cycles\":" << r.cycles
    << ",\"iterations\":" << r.iterations << ",\"clock_mhz\":" << r.clock_mhz
    << ",\"smid\":" << r.smid;
  if (!r.variant.empty()) o << ",\"variant\":\"" << r.variant << "\"";
  if (!r.expect.empty()) {
    o << ",\"expect\":{";
    for (size_t i = 0; i < r.expect.size(); ++i)
      o << (i ? "," : "") << '"' << r.expect[i].first << "\":" << r.expect[i].second;
    o << '}';
  }
  o << "}\n";
  std::fputs(o.str().c_str(), stdout);
  std::fflush(stdout);
}

// Device-side clocks: SM cycles, nanosecond wall time, and the SM a warp runs on.
__device__ __forceinline__ long long clock_cycles() {
  long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
  return t;
}
__device__ __forceinline__ unsigned long long clock_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
  return t;
}
__device__ __forceinline__ unsigned sm_id() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

// What each warp's lane 0 records around its timed region.
struct Stamp {
  long long c0, c1;
  unsigned long long ns0, ns1;
  unsigned smid;
};

// Timed-region summary of one launch: first start to last end over all warps of the block.
struct Span {
  double cycles, mhz;
  int smid;
};

inline Span span(const std::vector<Stamp>& s) {
  long long c0 = s[0].c0, c1 = s[0].c1;
  unsigned long long n0 = s[0].ns0, n1 = s[0].ns1;
  for (const auto& x : s) {
    c0 = std::min(c0, x.c0), c1 = std::max(c1, x.c1);
    n0 = std::min(n0, x.ns0), n1 = std::max(n1, x.ns1);
  }
  double us = (n1 - n0) * 1e-3;
  return {double(c1 - c0), us > 0 ? (c1 - c0) / us : 0.0, int(s[0].smid)};
}

__global__ void warm_up_kernel(float* sink, long long cycles) {
  long long t0 = clock_cycles();
  float x = threadIdx.x;
  while (clock_cycles() - t0 < cycles) x = x * 0.999f + 0.001f;
  if (x == -1.0f) *sink = x;
}

// Keep every SM busy for about `ms` so the card leaves its idle clock before timing.
inline void warm_up(double ms = 200) {
  int dev = 0, sms = 0, khz = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  SMD_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));
  float* sink = nullptr;
  SMD_CHECK(cudaMalloc(&sink, sizeof(float)));
  warm_up_kernel<<<sms * 4, 256>>>(sink, (long long)(ms * khz));
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
  SMD_CHECK(cudaFree(sink));
}

// One NVTX push/pop range per timed launch, "smd:<case>:<params json>:<variant>", so ncu
// (--nvtx-include) and the parser map each profiled kernel back to its case. A launch that no check needs
// counters for passes profiled = false: it runs outside any range, and ncu does not replay it.
struct NvtxRange {
  explicit NvtxRange(const std::string& name, bool profiled = true) : on(profiled) {
    if (on) nvtxRangePushA(name.c_str());
  }
  ~NvtxRange() {
    if (on) nvtxRangePop();
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
  const bool on;
};

inline std::string range_name(const std::string& case_id, const std::map<std::string, long>& p,
                              const std::string& variant) {
  return "smd:" + case_id + ":" + params_json(p) + ":" + variant;
}

inline void select_device(int device) {
  int n = 0;
  SMD_CHECK(cudaGetDeviceCount(&n));
  if (device < 0 || device >= n)
    fail("--device " + std::to_string(device) + " out of range: " + std::to_string(n) + " GPU(s) present", 2);
  SMD_CHECK(cudaSetDevice(device));
}

// A swept parameter of the current point; its absence is a one-line error.
inline long param(const std::map<std::string, long>& point, const std::string& key) {
  auto it = point.find(key);
  if (it == point.end()) fail("missing --param " + key + "=...", 2);
  return it->second;
}

// Elapsed milliseconds of whatever `launch` enqueues on the default stream (CUDA events).
template <class F>
double time_ms(F&& launch) {
  cudaEvent_t a, b;
  SMD_CHECK(cudaEventCreate(&a));
  SMD_CHECK(cudaEventCreate(&b));
  SMD_CHECK(cudaEventRecord(a));
  launch();
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaEventRecord(b));
  SMD_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  SMD_CHECK(cudaEventElapsedTime(&ms, a, b));
  SMD_CHECK(cudaEventDestroy(a));
  SMD_CHECK(cudaEventDestroy(b));
  return ms;
}

// A point this device cannot run (one GPU where a case needs two, say): no record, and a stderr line the run
// stage turns into a static row with this reason.
inline void static_point(const std::string& id, const std::map<std::string, long>& p, const std::string& why) {
  std::fprintf(stderr, "static: %s %s: %s\n", id.c_str(), params_json(p).c_str(), why.c_str());
}

// One kernel as --list describes it to the SASS stage (symbol as cuobjdump demangles it).
struct KernelInfo {
  std::map<std::string, long> params;
  std::string variant;
  long ops = 0;
  long iterations = 0;
  std::string symbol;
};

// A case of a generic family: its kernels (no GPU needed) and how to measure one sweep point.
struct FamilyCase {
  const char* id;
  std::vector<KernelInfo> (*list)();
  void (*run)(const std::string& id, const std::map<std::string, long>& point, int repeats);
};

inline void print_listing(const char* id, const std::vector<KernelInfo>& kernels) {
  std::string s = "{\"protocol\":" + std::to_string(kProtocol) + ",\"case\":\"" + id + "\",\"kernels\":[";
  for (size_t i = 0; i < kernels.size(); ++i) {
    const auto& k = kernels[i];
    s += (i ? ",{" : "{") + std::string("\"params\":") + params_json(k.params) + ",\"variant\":\"" + k.variant +
         "\",\"ops\":" + std::to_string(k.ops) + ",\"iterations\":" + std::to_string(k.iterations) +
         ",\"symbol\":\"" + k.symbol + "\"}";
  }
  std::printf("%s]}\n", s.c_str());
}

// The case named `id`; an unknown one is a one-line error.
template <class Case>
const Case& find_case(const std::string& id, std::initializer_list<Case> cases) {
  for (const auto& c : cases)
    if (id == c.id) return c;
  fail("unknown case '" + id + "' (see --list)", 2);
}

// Run each group's named cases over its sweep, after selecting the device and warming it up once; an unknown
// case or a group without one is a one-line error, before the GPU is touched. `Case` has `id` and
// `run(id, point, repeats)`.
template <class Case>
int run_named(const Args& args, std::initializer_list<Case> cases) {
  for (const auto& group : args.groups) {
    if (group.cases.empty()) fail("no --case given (see --list)", 2);
    for (const auto& id : group.cases) find_case(id, cases);
  }
  select_device(args.device);
  warm_up();
  for (const auto& group : args.groups)
    for (const auto& id : group.cases) {
      const Case& c = find_case(id, cases);
      for (const auto& point : sweep(group.params)) c.run(id, point, args.repeats);
    }
  return 0;
}

// main() of a generic family: --list describes every case's kernels; otherwise run each group's named cases
// over its sweep, after selecting the device and warming it up.
inline int family_main(int argc, char** argv, std::initializer_list<FamilyCase> cases) {
  Args args = parse_args(argc, argv);
  if (args.list) {
    for (const auto& c : cases) print_listing(c.id, c.list());
    return 0;
  }
  return run_named(args, cases);
}

}  // namespace smd
