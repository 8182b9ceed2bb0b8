// Binary patching: ffma_chain (patch_targets.cu) run from cubins that smdissect.controlcodes.prepare
// wrote beside this binary (<binary>.cubins/): the compiler's original and copies whose chain FFMAs
// carry another stall count or an inverted yield flag. Loaded through the driver API, whose entry
// points come from the runtime (no libcuda at link time). A stall count below the FFMA latency lets
// a step read a stale x: the results, checked against the exact tid + steps, count the damage.
// reuse_patch runs ffma_operands (8 chains sharing a and b) with and without its FFMAs' .reuse flags:
// without them every FFMA reads all three sources from the register file, bank conflicts included.
#include <cuda.h>

#include <cstdio>

#include "patch_targets.cu"
#include "sched.cuh"

namespace {

constexpr int kIters = 64;  // x patch::kDepth = 8192 steps: every partial sum is exact in float
constexpr int kStallWarps = 4;
std::string cubin_dir;  // argv[0] + ".cubins", set by main
constexpr const char* kReuseCleared = "patched/reuse.patched.cubin";  // controlcodes.REUSE_CLEARED

struct Driver {
  decltype(&cuModuleLoad) load;
  decltype(&cuModuleGetFunction) function;
  decltype(&cuLaunchKernel) launch;
  decltype(&cuModuleUnload) unload;
  decltype(&cuGetErrorString) error;
};

template <class F>
void entry(const char* name, F& fn) {
  cudaDriverEntryPointQueryResult found;
  SMD_CHECK(cudaGetDriverEntryPointByVersion(name, reinterpret_cast<void**>(&fn), 12000, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || !fn) smd::fail(std::string("driver entry point ") + name + " not found");
}

const Driver& driver() {
  static const Driver d = [] {
    SMD_CHECK(cudaFree(nullptr));  // the runtime's primary context becomes current for the driver calls
    Driver x{};
    entry("cuModuleLoad", x.load), entry("cuModuleGetFunction", x.function), entry("cuLaunchKernel", x.launch);
    entry("cuModuleUnload", x.unload), entry("cuGetErrorString", x.error);
    return x;
  }();
  return d;
}

void check(CUresult r, const std::string& what) {
  if (r == CUDA_SUCCESS) return;
  const char* text = "unknown error";
  driver().error(r, &text);
  smd::fail(what + ": " + text);
}

// One cubin of the experiment, loaded; its ffma_chain kernel.
struct Module {
  CUmodule mod = nullptr;
  CUfunction fn = nullptr;
  explicit Module(const std::string& name, const char* kernel = "ffma_chain") {
    const std::string path = cubin_dir + "/" + name;
    if (FILE* f = std::fopen(path.c_str(), "rb")) std::fclose(f);
    else smd::fail(path + " missing: the build stage must run smdissect.controlcodes.prepare for this family");
    check(driver().load(&mod, path.c_str()), "cuModuleLoad " + path);
    check(driver().function(&fn, mod, kernel), std::string("cuModuleGetFunction ") + kernel + " in " + path);
  }
  Module(const Module&) = delete;
  ~Module() { driver().unload(mod); }
};

struct Outcome {
  smd::Span span;
  int wrong;          // threads whose x differs from the exact tid + steps
  double lost_steps;  // mean steps short of it
};

Outcome run(const Module& m, int warps) {
  sched::Buffer<float> in(2), out(size_t(warps) * 32);
  sched::Buffer<smd::Stamp> stamps(warps);
  in.upload({1.0f, 1.0f});
  int iters = kIters;
  void* args[] = {&in.ptr, &out.ptr, &stamps.ptr, &iters};
  check(driver().launch(m.fn, 1, 1, 1, warps * 32, 1, 1, 0, nullptr, args, nullptr), "cuLaunchKernel ffma_chain");
  SMD_CHECK(cudaDeviceSynchronize());
  const auto x = out.host();
  Outcome o{smd::span(stamps.host()), 0, 0};
  for (int t = 0; t < warps * 32; ++t) {
    const double exact = t + double(patch::kDepth) * kIters;
    o.wrong += x[t] != exact;
    o.lost_steps += (exact - x[t]) / (warps * 32);
  }
  return o;
}

double per_ffma(const Outcome& o) { return o.span.cycles / (double(patch::kDepth) * kIters); }

void stall_patch(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long k = smd::param(point, "stall");
  if (k < 1 || k > 15) smd::fail("stall=" + std::to_string(k) + " out of range 1..15", 2);
  Module original("original.cubin"), patched("patched/stall_" + std::to_string(k) + ".patched.cubin");
  run(original, kStallWarps), run(patched, kStallWarps);  // untimed: module load, icache
  std::vector<double> wrong, lost, cycles, latency, mhz;
  for (int r = 0; r < repeats; ++r) {
    const Outcome ref = run(original, kStallWarps);
    if (ref.wrong) smd::fail("the unpatched cubin got " + std::to_string(ref.wrong) + " wrong results: bad reference");
    const Outcome p = run(patched, kStallWarps);
    wrong.push_back(p.wrong), lost.push_back(p.lost_steps);
    cycles.push_back(per_ffma(p)), latency.push_back(per_ffma(ref)), mhz.push_back(p.span.mhz);
  }
  smd::Record rec{id, point, "wrong_results", "thread", wrong, 0, kIters, smd::median(mhz), -1};
  smd::emit(rec);
  rec.metric = "lost_steps", rec.unit = "step", rec.samples = lost;
  smd::emit(rec);
  rec.metric = "cycles_per_ffma", rec.unit = "cycle", rec.samples = cycles;
  smd::emit(rec);
  rec.metric = "latency", rec.samples = latency;  // the unpatched chain, same launch shape
  smd::emit(rec);
}

void yield_patch(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long warps = smd::param(point, "warps"), flipped = smd::param(point, "flipped");
  if (warps < 1 || warps > 32) smd::fail("warps=" + std::to_string(warps) + " out of range 1..32", 2);
  Module m(flipped ? "patched/yield.patched.cubin" : "original.cubin");
  run(m, int(warps));  // untimed
  std::vector<double> per_iter, wrong, mhz;
  for (int r = 0; r < repeats; ++r) {
    const Outcome o = run(m, int(warps));
    per_iter.push_back(o.span.cycles / kIters), wrong.push_back(o.wrong), mhz.push_back(o.span.mhz);
  }
  smd::Record rec{id, point, "cycles_per_iteration", "cycle", per_iter, 0, kIters, smd::median(mhz), -1};
  smd::emit(rec);
  rec.metric = "wrong_results", rec.unit = "thread", rec.samples = wrong;
  smd::emit(rec);
}

// ffma_operands over `warps` warps of one CTA: its span, and the chains that missed tid * kChains + i + steps.
Outcome run_operands(const Module& m, int warps) {
  const int threads = warps * 32;
  sched::Buffer<float> in(2), out(size_t(threads) * patch::kChains);
  sched::Buffer<smd::Stamp> stamps(warps);
  in.upload({1.0f, 1.0f});
  int iters = kIters;
  void* args[] = {&in.ptr, &out.ptr, &stamps.ptr, &iters};
  check(driver().launch(m.fn, 1, 1, 1, threads, 1, 1, 0, nullptr, args, nullptr), "cuLaunchKernel ffma_operands");
  SMD_CHECK(cudaDeviceSynchronize());
  const auto x = out.host();
  Outcome o{smd::span(stamps.host()), 0, 0};
  const double steps = double(patch::kDepth / patch::kChains) * kIters;
  for (size_t j = 0; j < x.size(); ++j) {
    o.wrong += x[j] != double(j) + steps;
    o.lost_steps += (double(j) + steps - x[j]) / double(x.size());
  }
  return o;
}

void reuse_patch(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long warps = smd::param(point, "warps"), cleared = smd::param(point, "cleared");
  if (warps < 1 || warps > 32) smd::fail("warps=" + std::to_string(warps) + " out of range 1..32", 2);
  Module m(cleared ? kReuseCleared : "original.cubin", "ffma_operands");
  run_operands(m, int(warps));  // untimed: module load, icache
  std::vector<double> thr, wrong, mhz;
  for (int r = 0; r < repeats; ++r) {
    const Outcome o = run_operands(m, int(warps));
    thr.push_back(double(warps) * patch::kDepth * kIters / o.span.cycles);
    wrong.push_back(o.wrong), mhz.push_back(o.span.mhz);
  }
  smd::Record rec{id, point, "throughput", "warp_inst/cycle/SM", thr, 0, kIters, smd::median(mhz), -1};
  smd::emit(rec);
  rec.metric = "wrong_results", rec.unit = "chain", rec.samples = wrong;
  smd::emit(rec);
}

std::vector<smd::KernelInfo> target() { return {{{}, "", patch::kDepth, kIters, "ffma_chain"}}; }
std::vector<smd::KernelInfo> operands() { return {{{}, "", patch::kDepth, kIters, "ffma_operands"}}; }

}  // namespace

int main(int argc, char** argv) {
  cubin_dir = std::string(argv[0]) + ".cubins";
  return smd::family_main(argc, argv, {{"stall_patch", target, stall_patch},
                                           {"yield_patch", target, yield_patch},
                                           {"reuse_patch", operands, reuse_patch}});
}
