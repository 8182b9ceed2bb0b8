// Tensor-core timing: ILP independent accumulator chains of one operation (mma.sync, wgmma, ldmatrix, ...)
// per issuing unit (a warp, or a warpgroup), `units` of them in one CTA on one SM. Two body lengths are
// timed; their difference gives cycles per extra operation, so loop overhead and pipeline drain cancel.
//
// An operation `Op` provides: name (its type name, for the listing), Acc (per-chain state), Ctx (loop-invariant
// operands), kThreads (threads per issuing unit), kMaxThreads, kBody (steps per short body), kPerStep
// (operations per step), flop (FLOP per operation, 0 if none; OP for an integer format, which says kInteger),
// counter (what ncu counts one per instruction), insts(major) (counted instructions per operation on a
// device of that compute-capability major, 0 = not known there), and device functions
// setup(seed) -> Ctx, init(Acc&, seed, chain), step(Acc&, const Ctx&), and host valid(const Acc&).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "harness.cuh"

namespace tc {

constexpr int kIters = 64;  // outer-loop iterations (not unrolled)

// Whether Op counts integer operations (OP/cycle/SM and TOPS) rather than FLOP: its kInteger, false where absent.
template <class Op, class = void>
struct Integer : std::false_type {};
template <class Op>
struct Integer<Op, std::void_t<decltype(Op::kInteger)>> : std::bool_constant<Op::kInteger> {};

// What ncu counts for an operation's instructions.
enum class Counter { hmma, imma, dmma, gmma, ldsm, stsm, tensor };

// The ncu metric counting `c` on a device of compute-capability `major` ("" when that chip has none).
inline std::string counter_metric(Counter c, int major) {
  switch (c) {
    case Counter::ldsm: return "sm__inst_executed_op_ldsm.sum";
    case Counter::stsm: return "sm__inst_executed_op_shared_stsm.sum";
    case Counter::tensor: return "sm__inst_executed_pipe_tensor.sum";
    default: break;
  }
  const char* op = c == Counter::hmma ? "hmma" : c == Counter::imma ? "imma" : c == Counter::dmma ? "dmma" : "gmma";
  if (major == 9) return std::string("sm__inst_executed_pipe_tensor_op_") + op + ".sum";
  if (major == 12 && (c == Counter::hmma || c == Counter::imma))
    return std::string("sm__inst_executed_pipe_tensor_subpipe_") + op + ".sum";
  return "";
}

// An operation `NAME` that is `BASE` (a template instance) under a plain name: kernel symbols and listings carry
// NAME, not the template's arguments.
#define TC_NAMED(NAME, ...)                     \
  struct NAME : __VA_ARGS__ {                   \
    static constexpr const char* name = #NAME; \
  }

// Fixed-size register fragment; trivially copyable so it can be stored and checked on the host.
template <class T, int N>
struct Frag {
  T v[N];
};

// IEEE checks of accumulator bits on the host.
inline bool finite_f32(uint32_t bits) { return (bits & 0x7F800000u) != 0x7F800000u; }
inline bool finite_f16x2(uint32_t bits) { return (bits & 0x7C00u) != 0x7C00u && (bits & 0x7C000000u) != 0x7C000000u; }

template <class Op, int ILP, int DEPTH>
__global__ void __launch_bounds__(Op::kMaxThreads, 1) tc_kernel(typename Op::Acc* out, smd::Stamp* stamps, int iters,
                                                             float seed) {
  const typename Op::Ctx ctx = Op::setup(seed);
  typename Op::Acc acc[ILP];
#pragma unroll
  for (int i = 0; i < ILP; ++i) Op::init(acc[i], seed, i);
  __syncthreads();
  const long long c0 = smd::clock_cycles();
  const unsigned long long n0 = smd::clock_ns();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int d = 0; d < DEPTH; ++d)
#pragma unroll
      for (int i = 0; i < ILP; ++i) Op::step(acc[i], ctx);
  }
  const long long c1 = smd::clock_cycles();
  const unsigned long long n1 = smd::clock_ns();
  if (threadIdx.x % 32 == 0) stamps[threadIdx.x / 32] = {c0, c1, n0, n1, smd::sm_id()};
#pragma unroll
  for (int i = 0; i < ILP; ++i) out[threadIdx.x * ILP + i] = acc[i];  // outside the timed region
}

// Device buffers of one sweep point, freed on scope exit.
template <class Op, int ILP>
struct Buffers {
  typename Op::Acc* out = nullptr;
  smd::Stamp* stamps = nullptr;
  int threads;
  explicit Buffers(int threads_) : threads(threads_) {
    SMD_CHECK(cudaMalloc(&out, sizeof(typename Op::Acc) * threads * ILP));
    SMD_CHECK(cudaMalloc(&stamps, sizeof(smd::Stamp) * (threads / 32)));
  }
  ~Buffers() {
    SMD_CHECK(cudaFree(out));
    SMD_CHECK(cudaFree(stamps));
  }
};

// One launch of tc_kernel<Op, ILP, DEPTH>: its timed span, after checking every chain's result.
template <class Op, int ILP, int DEPTH>
smd::Span launch(const Buffers<Op, ILP>& buf, float seed) {
  tc_kernel<Op, ILP, DEPTH><<<1, buf.threads>>>(buf.out, buf.stamps, kIters, seed);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
  std::vector<typename Op::Acc> acc(size_t(buf.threads) * ILP);
  SMD_CHECK(cudaMemcpy(acc.data(), buf.out, sizeof(acc[0]) * acc.size(), cudaMemcpyDeviceToHost));
  for (const auto& a : acc)
    if (!Op::valid(a)) smd::fail(std::string(Op::name) + ": a chain's result is not finite (overflow or NaN)");
  std::vector<smd::Stamp> host(buf.threads / 32);
  SMD_CHECK(cudaMemcpy(host.data(), buf.stamps, sizeof(smd::Stamp) * host.size(), cudaMemcpyDeviceToHost));
  return smd::span(host);
}

inline int sm_count() {
  int dev = 0, sms = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

inline int cc_major() {
  int dev = 0, major = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  return major;
}

// Time the short and long bodies `repeats` times; emit latency (ILP 1, one unit, one operation per step:
// cycles per dependent operation), throughput (operations/cycle/SM) and, for operations with FLOP,
// FLOP/cycle/SM and TFLOPS at the recorded clock over all SMs. Only the long launch sits in an NVTX range;
// its throughput record carries the counter the ncu run must show.
template <class Op, int ILP>
void measure(const std::string& id, const std::map<std::string, long>& point, long units, int repeats) {
  constexpr int kShort = Op::kBody / ILP, kLong = 2 * Op::kBody / ILP;
  static_assert(kShort * ILP == Op::kBody, "ILP must divide the body");
  const int threads = int(units) * Op::kThreads;
  if (units < 1 || threads > Op::kMaxThreads)
    smd::fail(id + ": " + std::to_string(units) + " units of " + std::to_string(Op::kThreads) +
              " threads exceed the kernel's " + std::to_string(Op::kMaxThreads), 2);
  Buffers<Op, ILP> buf(threads);
  const float seed = 1.0f / 64;
  launch<Op, ILP, kShort>(buf, seed);  // untimed first launches (module load, instruction cache)
  launch<Op, ILP, kLong>(buf, seed);
  const double extra = double(kIters) * (kLong - kShort);  // extra dependent steps per chain
  std::vector<double> latency, rate, cycles, mhz;
  int smid = -1;
  for (int r = 0; r < repeats; ++r) {
    const smd::Span s = launch<Op, ILP, kShort>(buf, seed);
    smd::Span l;
    {
      smd::NvtxRange range(smd::range_name(id, point, "long"));
      l = launch<Op, ILP, kLong>(buf, seed);
    }
    const double d = l.cycles - s.cycles;
    if (d <= 0)
      smd::fail(id + ": the long body took no longer than the short one (" + std::to_string(d) + " cycles)");
    latency.push_back(d / extra);
    rate.push_back(extra * ILP * units * Op::kPerStep / d);
    cycles.push_back(l.cycles), mhz.push_back(l.mhz), smid = l.smid;
  }
  smd::Record rec{id, point, "", "", {}, smd::median(cycles), kIters, smd::median(mhz), smid, "long"};
  auto emit = [&](const char* metric, const char* unit, std::vector<double> samples) {
    rec.metric = metric, rec.unit = unit, rec.samples = std::move(samples);
    smd::emit(rec);
  };
  if (ILP == 1 && units == 1 && Op::kPerStep == 1) emit("latency", "cycle", latency);
  const int major = cc_major();
  const std::string counter = counter_metric(Op::counter, major);
  if (!counter.empty() && Op::insts(major) > 0)
    rec.expect = {{counter, double(units) * (Op::kThreads / 32) * kIters * 2 * Op::kBody * Op::kPerStep *
                                Op::insts(major)}};
  emit("throughput", "op/cycle/SM", rate);
  rec.expect.clear();
  if (Op::flop == 0) return;
  std::vector<double> flops, tflops;
  for (size_t i = 0; i < rate.size(); ++i) {
    flops.push_back(rate[i] * Op::flop);
    tflops.push_back(flops.back() * sm_count() * rec.clock_mhz * 1e6 / 1e12);
  }
  emit("flops", Integer<Op>::value ? "OP/cycle/SM" : "FLOP/cycle/SM", flops);
  emit("tflops", Integer<Op>::value ? "TOPS" : "TFLOPS", tflops);
}

// The listing of one ILP: short and long kernels with their operation counts.
template <class Op, int ILP>
void list_ilp(std::vector<smd::KernelInfo>& out, const std::map<std::string, long>& params) {
  for (int body : {Op::kBody, 2 * Op::kBody}) {
    auto p = params;
    p["ilp"] = ILP;
    out.push_back({p, body == Op::kBody ? "short" : "long", body * Op::kPerStep, kIters,
                   "tc_kernel<" + std::string(Op::name) + "," + std::to_string(ILP) + "," +
                       std::to_string(body / ILP) + ">"});
  }
}

// Run one sweep point of a case whose ILP axis is 1, 2, 4 or 8 and whose units axis is `units_key`.
template <class Op>
void run_ilp(const std::string& id, const std::map<std::string, long>& point, const char* units_key,
             int repeats) {
  const long units = smd::param(point, units_key);
  switch (smd::param(point, "ilp")) {
    case 1: return measure<Op, 1>(id, point, units, repeats);
    case 2: return measure<Op, 2>(id, point, units, repeats);
    case 4: return measure<Op, 4>(id, point, units, repeats);
    case 8: return measure<Op, 8>(id, point, units, repeats);
    default: smd::fail("ilp=" + std::to_string(smd::param(point, "ilp")) + " is not compiled: use 1, 2, 4 or 8", 2);
  }
}

// A warp-level case (mma.sync, ldmatrix): sweep ilp in {1, 2, 4, 8} and warps.
template <class Op>
smd::FamilyCase warp_case(const char* id) {
  return {id,
          [] {
            std::vector<smd::KernelInfo> k;
            list_ilp<Op, 1>(k, {}), list_ilp<Op, 2>(k, {}), list_ilp<Op, 4>(k, {}), list_ilp<Op, 8>(k, {});
            return k;
          },
          [](const std::string& case_id, const std::map<std::string, long>& point, int repeats) {
            run_ilp<Op>(case_id, point, "warps", repeats);
          }};
}

}  // namespace tc
