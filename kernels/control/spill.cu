// The cost of local memory (what a register spill reads and writes): a dependent LDL chase through a thread's
// local array (the chase of memory's load_ca, in the local space), a store and the dependent load of the same local
// word, and a loop of 64 independent FFMA accumulators forced to spill (__maxnreg__ leaves 32 registers) against
// the same loop kept in registers. One thread (the chases) or one warp (the loops), slope between n and 2n steps.
#include <cstdint>

#include "control.cuh"

constexpr int kSteps = 1024;   // steps of the short phase (the long one runs 2 x kSteps)
constexpr int kUnroll = 8;     // steps per loop pass
constexpr int kSlots = 512;    // 64-bit words of the chased local array (4 KB)
constexpr int kStride = 16;    // words from one chased slot to the next (128 B: a line each)
constexpr int kAccumulators = 64;

__device__ __forceinline__ uint64_t local_address(const void* p) {
  uint64_t a;
  asm("cvta.to.local.u64 %0, %1;" : "=l"(a) : "l"(p));
  return a;
}

__device__ __forceinline__ uint64_t ldl(uint64_t p) {
  asm volatile("ld.local.u64 %0, [%0];" : "+l"(p));
  return p;
}

__device__ __forceinline__ uint64_t chase(uint64_t p, int n) {
#pragma unroll 1
  for (int i = 0; i < n; ++i)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) p = ldl(p);
  return p;
}

// A store of the chain's value to one local word, then the load of it that the next store waits for. The load
// names the word through `again` (the same address plus a runtime zero): where ptxas sees one address, it forwards
// the stored value, drops the load and all but the last store.
__device__ __forceinline__ uint64_t round_trips(uint64_t x, uint64_t at, uint64_t again, int n) {
#pragma unroll 1
  for (int i = 0; i < n; ++i)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      asm volatile("st.local.u64 [%1], %0;\n\tld.local.u64 %0, [%2];" : "+l"(x) : "l"(at), "l"(again) : "memory");
  return x;
}

// Slots 0, kStride, 2 kStride, ... of a 4 KB local array chained in a cycle of local addresses; thread 0 chases it
// once untimed, then n and 2n steps (RoundTrip: stores and reloads one word of it instead).
template <bool RoundTrip>
__global__ void local_kernel(ctl::Args g) {
  uint64_t buf[kSlots];
  const uint64_t base = local_address(buf);
  for (int s = 0; s < kSlots; s += kStride) buf[s] = base + 8 * ((s + kStride) % kSlots);
  if (threadIdx.x != 0) return;
  uint64_t p = base;
  const uint64_t again = base + 8 * g.zero;
  p = RoundTrip ? round_trips(p, base, again, 1) : chase(p, kSlots / kStride / kUnroll);
  smd::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
  p = RoundTrip ? round_trips(p, base, again, g.steps) : chase(p, g.steps);
  s.c1 = smd::clock_cycles();
  p = RoundTrip ? round_trips(p, base, again, 2 * g.steps) : chase(p, 2 * g.steps);
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  ctl::finish(g, s, unsigned(p));
}

// 64 independent FFMA accumulators a step, each updated once (the step is 64 FFMAs, issue-bound in registers).
__device__ __forceinline__ void update(float (&acc)[kAccumulators], float a, float b, int n) {
#pragma unroll 1
  for (int i = 0; i < n; ++i)
#pragma unroll
    for (int k = 0; k < kAccumulators; ++k) asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(acc[k]) : "f"(a), "f"(b));
}

__device__ __forceinline__ void accumulate(const ctl::Args& g) {
  float acc[kAccumulators];
  const float a = __uint_as_float(g.a), b = 1e-3f;
#pragma unroll
  for (int k = 0; k < kAccumulators; ++k) acc[k] = float(g.seed[(k + g.zero * threadIdx.x) % 32]);
  update(acc, a, b, 1);
  smd::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
  update(acc, a, b, g.steps);
  s.c1 = smd::clock_cycles();
  update(acc, a, b, 2 * g.steps);
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  float sum = 0;
#pragma unroll
  for (int k = 0; k < kAccumulators; ++k) sum += acc[k];
  ctl::finish(g, s, __float_as_uint(sum));
}

// At most 32 registers a thread (__maxnreg__), fewer than 64 live accumulators need.
__global__ void __maxnreg__(32) spilled_kernel(ctl::Args g) { accumulate(g); }
__global__ void registers_kernel(ctl::Args g) { accumulate(g); }

void run(const std::string& id, const std::map<std::string, long>& point, const std::string& metric, int repeats,
         void (*kernel)(ctl::Args), long steps_per_pass, unsigned a, const ctl::Expect& expect = {}) {
  ctl::emit_steps(id, point, metric, repeats, long(kSteps) * steps_per_pass, [&](smd::Slope* out) {
    kernel<<<1, 32>>>({ctl::seeds(), a, 0u, 0u, kSteps, out, ctl::sink(), nullptr});
  }, "timed", expect);
}

// Local loads and stores one local_kernel launch executes: the chain's 32 stores, then one lap (chase) or one pass
// (round trip) untimed and 3 x kSteps timed passes of kUnroll steps.
constexpr double kChained = kSlots / kStride;
constexpr double kTimedSteps = 3.0 * kSteps * kUnroll;
const std::string kLocalLd = "smsp__sass_inst_executed_op_local_ld.sum";
const std::string kLocalSt = "smsp__sass_inst_executed_op_local_st.sum";

// The chase's point is memory's load_ca sweep point (footprint_kb 4, stride_b 128): only it is built.
void check_chase_point(const std::map<std::string, long>& point) {
  if (smd::param(point, "footprint_kb") != kSlots * 8 / 1024 || smd::param(point, "stride_b") != kStride * 8)
    smd::fail("only footprint_kb=4, stride_b=128 is built (a 4 KB local array chased in 128 B steps)", 2);
}

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv,
      {{"ldl_chase", [] { return std::vector{ctl::kernel("local_kernel<0>", kUnroll, kSteps * kUnroll)}; },
        [](const std::string& id, const std::map<std::string, long>& point, int repeats) {
          check_chase_point(point);
          run(id, point, "latency", repeats, local_kernel<false>, kUnroll, 0,
              {{kLocalLd, kChained + kTimedSteps}, {kLocalSt, kChained}});
        }},
       {"stl_ldl_round_trip", [] { return std::vector{ctl::kernel("local_kernel<1>", kUnroll, kSteps * kUnroll)}; },
        [](const std::string& id, const std::map<std::string, long>& point, int repeats) {
          run(id, point, "latency", repeats, local_kernel<true>, kUnroll, 0,
              {{kLocalLd, kUnroll + kTimedSteps}, {kLocalSt, kChained + kUnroll + kTimedSteps}});
        }},
       {"spill_forced", [] { return std::vector{ctl::kernel("spilled_kernel", kAccumulators, kSteps)}; },
        [](const std::string& id, const std::map<std::string, long>& point, int repeats) {
          run(id, point, "step", repeats, spilled_kernel, kAccumulators, 0x3f7ff972u);  // a = 0.9999
        }},
       {"spill_free", [] { return std::vector{ctl::kernel("registers_kernel", kAccumulators, kSteps)}; },
        [](const std::string& id, const std::map<std::string, long>& point, int repeats) {
          run(id, point, "step", repeats, registers_kernel, kAccumulators, 0x3f7ff972u);
        }}});
}
