// Branches in a dependent chain, one warp: a uniform if/else taken or not taken, divergent if/else nested 0-4
// deep, a short if/else ptxas predicates, and direct and indirect calls. Every step is dependent IMADs (control.cuh),
// timed as the slope between n and 2n steps; what a path or a call adds is its step against the chain alone
// (branch_chain). Which path a step takes is a kernel argument, so each pair of figures runs the same SASS.
#include "control.cuh"

constexpr int kArm = 8;        // IMADs per arm: ptxas keeps arms of 8 as branches (of 4 it predicates them)
constexpr int kShortArm = 4;   // the arm ptxas predicates on every checked arch
constexpr int kSteps = 256;    // steps of the short phase (the long one runs 2 x kSteps)
constexpr int kUnroll = 4;     // steps per loop pass of the chain, uniform-branch and call kernels

// n loop passes of U steps of Step.
template <class Step, int U>
__device__ __forceinline__ unsigned steps(unsigned x, const ctl::Args& g, int n) {
#pragma unroll 1
  for (int i = 0; i < n; ++i)
#pragma unroll
    for (int u = 0; u < U; ++u) x = Step::step(x, g, unsigned(i * U + u));
  return x;
}

// Three clock reads around n and 2n passes (one untimed pass first), lane 0 of each warp recording.
template <class Step, int U>
__device__ __forceinline__ void timed(ctl::Args g) {
  unsigned x = g.seed[threadIdx.x * g.zero];
  x = steps<Step, U>(x, g, 1);
  smd::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
  x = steps<Step, U>(x, g, g.steps);
  s.c1 = smd::clock_cycles();
  x = steps<Step, U>(x, g, 2 * g.steps);
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  ctl::finish(g, s, x);
}

// The chain alone: kArm dependent IMADs a step.
struct Chain {
  __device__ __forceinline__ static unsigned step(unsigned x, const ctl::Args& g, unsigned) {
    return ctl::arm<kArm>(x, g.a);
  }
};

// A uniform if/else of kArm IMADs an arm: bit (i mod kUnroll) of `select` picks the arm of step i (0: the else arm,
// which ptxas reaches by a taken branch; all ones: the then arm it falls through to, closed by a jump to the join).
// The condition is one LOP3 of a register loaded before the loop (the first step's predicate ptxas hoists out of it),
// not a computation on the loop counter whose dependent uniform ops the branch would wait for.
struct Uniform {
  __device__ __forceinline__ static unsigned step(unsigned x, const ctl::Args& g, unsigned i) {
    unsigned select = g.select;
    asm volatile("" : "+r"(select));  // opaque to the compiler front end: no unswitched copy of the loop
    if ((select >> (i % kUnroll)) & 1) return ctl::arm<kArm>(x, g.a);
    return ctl::arm<kArm, true>(x, g.a);
  }
};

// If/else nested D deep: level k splits on bit k of (lane & select), so select = 31 splits the warp into 2^D lane
// groups, each down a path of its own (serialized), and select = 0 sends the whole warp down one. Leaf `Id` is L IMADs
// with an operand of its own, so no two leaves merge; the path passes an empty asm each step, so the loop is not
// unswitched, and each level tests a register set before the loop (not a value computed on the loop counter).
template <int D, int L, int Id = 0>
__device__ __forceinline__ unsigned tree(unsigned x, unsigned a, unsigned path) {
  if constexpr (D == 0) {
    return ctl::arm<L, Id % 2 == 1>(x, a + Id / 2);
  } else {
    if ((path >> (D - 1)) & 1) return tree<D - 1, L, 2 * Id + 1>(x, a, path);
    return tree<D - 1, L, 2 * Id>(x, a, path);
  }
}

template <int D, int L>
struct Nested {
  __device__ __forceinline__ static unsigned step(unsigned x, const ctl::Args& g, unsigned i) {
    unsigned path = threadIdx.x & g.select;
    asm volatile("" : "+r"(path));  // opaque to the compiler front end: no unswitched copy of the loop
    return tree<D, L>(x, g.a, path);
  }
};

// Calls of a __noinline__ function of one IMAD: direct, or through a pointer from a table (lane bit `select` picks
// the entry: select 5 gives every lane entry 0, select 0 alternates the two targets between neighbouring lanes).
__device__ __noinline__ unsigned callee(unsigned x, unsigned a) { return ctl::imad(x, a); }
__device__ __noinline__ unsigned callee_alt(unsigned x, unsigned a) { return ctl::imad_alt(x, a); }
using Callee = unsigned (*)(unsigned, unsigned);
__device__ Callee targets[2] = {callee, callee_alt};

template <bool Indirect>
struct Call {
  __device__ __forceinline__ static unsigned step(unsigned x, const ctl::Args& g, unsigned) {
    if constexpr (Indirect) return reinterpret_cast<Callee>(g.fn)(x, g.a);
    return callee(x, g.a);
  }
};

// The kernels, one per kind of step (integer template arguments only: their symbols are what --list names).
template <int U>
__global__ void chain_kernel(ctl::Args g) { timed<Chain, U>(g); }
template <int U>
__global__ void uniform_kernel(ctl::Args g) { timed<Uniform, U>(g); }
template <int D, int L>
__global__ void nested_kernel(ctl::Args g) { timed<Nested<D, L>, 1>(g); }
// The indirect kernel picks its lane's target once, before the clocks: the loop calls through a register.
// The callee's operand is made a runtime value (xor a runtime zero), so ptxas keeps it in a register across the
// calls rather than reloading the constant (ULDC) on the path into every call.
template <bool Indirect, int U>
__global__ void call_kernel(ctl::Args g) {
  g.a ^= threadIdx.x & g.zero;
  if constexpr (Indirect) g.fn = reinterpret_cast<const void*>(targets[(threadIdx.x >> g.select) & 1]);
  timed<Call<Indirect>, U>(g);
}

constexpr double kPasses = 1 + 3 * kSteps;  // loop passes a launch runs: the untimed one, then n and 2n

// One record of `metric`: `kernel` (one warp) over kSteps and 2 x kSteps loop passes of U steps each; `expect`:
// the counters its launch must show.
void run(const std::string& id, const std::map<std::string, long>& point, const std::string& metric, int repeats,
         void (*kernel)(ctl::Args), int U, unsigned select, const ctl::Expect& expect = {}) {
  ctl::emit_steps(id, point, metric, repeats, long(kSteps) * U, [&](smd::Slope* out) {
    kernel<<<1, 32>>>({ctl::seeds(), 0x9e3779b9u, select, 0u, kSteps, out, ctl::sink(), nullptr});
  }, metric, expect);
}

void run_chain(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  run(id, point, "step", repeats, chain_kernel<kUnroll>, kUnroll, 0u);
}

// The branches each path executes: a taken step one (its conditional branch), a not-taken step two (the branch
// falling through and the then arm's jump to the join), and the loop's back-edge once a pass.
void run_uniform(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const std::string branches = "smsp__sass_inst_executed_op_branch.sum";
  run(id, point, "taken", repeats, uniform_kernel<kUnroll>, kUnroll, 0u, {{branches, kPasses * (kUnroll + 1)}});
  run(id, point, "not_taken", repeats, uniform_kernel<kUnroll>, kUnroll, ~0u,
      {{branches, kPasses * (2 * kUnroll + 1)}});
}

template <int D>
void run_depth(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  run(id, point, "divergent", repeats, nested_kernel<D, kArm>, 1, 31u);
  run(id, point, "uniform", repeats, nested_kernel<D, kArm>, 1, 0u);
}

void run_nested(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  switch (smd::param(point, "depth")) {
    case 0: return run_depth<0>(id, point, repeats);
    case 1: return run_depth<1>(id, point, repeats);
    case 2: return run_depth<2>(id, point, repeats);
    case 3: return run_depth<3>(id, point, repeats);
    case 4: return run_depth<4>(id, point, repeats);
    default: smd::fail("depth=" + std::to_string(smd::param(point, "depth")) + " out of range 0..4", 2);
  }
}

void run_predicated(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  run(id, point, "divergent", repeats, nested_kernel<1, kShortArm>, 1, 31u);
  run(id, point, "uniform", repeats, nested_kernel<1, kShortArm>, 1, 0u);
}

void run_direct(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  run(id, point, "step", repeats, call_kernel<false, kUnroll>, kUnroll, 0u);
}

void run_indirect(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  run(id, point, "uniform", repeats, call_kernel<true, kUnroll>, kUnroll, 5u);
  run(id, point, "divergent", repeats, call_kernel<true, kUnroll>, kUnroll, 0u);
}

// ops: what each case's SASS expectations count in one pass of its timed loop (manifest).
std::vector<smd::KernelInfo> nested_kernels() {
  std::vector<smd::KernelInfo> out;
  for (int d = 0; d <= 4; ++d)
    out.push_back(ctl::kernel("nested_kernel<" + std::to_string(d) + ",8>", (1 << d) - 1, kSteps, {{"depth", d}}));
  return out;
}

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv,
      {{"branch_chain", [] { return std::vector{ctl::kernel("chain_kernel<4>", kArm * kUnroll, kSteps * kUnroll)}; },
        run_chain},
       {"branch_uniform", [] { return std::vector{ctl::kernel("uniform_kernel<4>", kUnroll, kSteps * kUnroll)}; },
        run_uniform},
       {"branch_divergence", nested_kernels, run_nested},
       {"branch_predicated", [] { return std::vector{ctl::kernel("nested_kernel<1,4>", 1, kSteps)}; },
        run_predicated},
       {"call_direct", [] { return std::vector{ctl::kernel("call_kernel<0,4>", kUnroll, kSteps * kUnroll)}; },
        run_direct},
       {"call_indirect", [] { return std::vector{ctl::kernel("call_kernel<1,4>", kUnroll, kSteps * kUnroll)}; },
        run_indirect}});
}
