// Dependent-chain benchmark: ILP independent chains of one instruction per thread, `warps` warps
// in one CTA on one SM. Two body lengths are timed and their difference (the slope) gives cycles
// per extra instruction, so loop overhead, clock reads and pipeline drain cancel out.
#pragma once
#include <initializer_list>
#include <type_traits>

#include "harness.cuh"

namespace smd {

constexpr int kBodyOps = 256;  // instructions per chain-body iteration in the short variant
constexpr int kIters = 256;    // outer-loop iterations (not unrolled)
constexpr int kMaxIlp = 8;

// Outer-loop iterations of Op's chains: Op::kIters where an op sets it (a long software sequence needs fewer
// steps for the same precision), else kIters.
template <class Op, class = void>
constexpr int kOpIters = kIters;
template <class Op>
constexpr int kOpIters<Op, std::void_t<decltype(Op::kIters)>> = Op::kIters;

template <class Op, int ILP, int DEPTH>
__global__ void chain_kernel(const typename Op::T* in, typename Op::T* sink, Stamp* stamps, int iters,
                             int flag) {
  using T = typename Op::T;
  T v[ILP];
#pragma unroll
  for (int i = 0; i < ILP; ++i) v[i] = in[i + flag * threadIdx.x];  // flag is 0: not provably warp-uniform
  const T a = in[kMaxIlp], b = in[kMaxIlp + 1];
  __syncthreads();
  const long long c0 = clock_cycles();
  const unsigned long long n0 = clock_ns();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int d = 0; d < DEPTH; ++d)
#pragma unroll
      for (int i = 0; i < ILP; ++i) v[i] = Op::apply(v[i], a, b);
  }
  const long long c1 = clock_cycles();
  const unsigned long long n1 = clock_ns();
  if (threadIdx.x % 32 == 0) stamps[threadIdx.x / 32] = {c0, c1, n0, n1, sm_id()};
  if (flag)  // never true at run time, unknown to the compiler: keeps the chains alive
#pragma unroll
    for (int i = 0; i < ILP; ++i) sink[threadIdx.x * ILP + i] = v[i];
}

// One timed launch of chain_kernel<Op, ILP, DEPTH> with `warps` warps; returns its timed span.
template <class Op, int ILP, int DEPTH>
Span launch(const typename Op::T* in, typename Op::T* sink, Stamp* stamps, int warps) {
  chain_kernel<Op, ILP, DEPTH><<<1, warps * 32>>>(in, sink, stamps, kOpIters<Op>, 0);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
  std::vector<Stamp> host(warps);
  SMD_CHECK(cudaMemcpy(host.data(), stamps, warps * sizeof(Stamp), cudaMemcpyDeviceToHost));
  return span(host);
}

template <class Op, int ILP>
void measure(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  using T = typename Op::T;
  constexpr int kShort = kBodyOps / ILP, kLong = 2 * kBodyOps / ILP;
  const int warps = int(point.at("warps"));
  if (warps < 1 || warps > 32) fail("warps=" + std::to_string(warps) + " out of range 1..32", 2);
  T seed[kMaxIlp + 2];
  Op::seed(seed);
  T *in, *sink;
  Stamp* stamps;
  SMD_CHECK(cudaMalloc(&in, sizeof(seed)));
  SMD_CHECK(cudaMalloc(&sink, warps * 32 * ILP * sizeof(T)));
  SMD_CHECK(cudaMalloc(&stamps, warps * sizeof(Stamp)));
  SMD_CHECK(cudaMemcpy(in, seed, sizeof(seed), cudaMemcpyHostToDevice));
  launch<Op, ILP, kShort>(in, sink, stamps, warps);  // untimed first launches (module load, icache)
  launch<Op, ILP, kLong>(in, sink, stamps, warps);
  std::vector<double> per_op, per_sm, cycles, mhz;
  const double extra = double(kOpIters<Op>) * (kLong - kShort);  // extra dependent steps per chain
  int smid = -1;
  for (int r = 0; r < repeats; ++r) {
    Span s, l;
    {
      // The short launch's counters serve only the latency slope check (ilp 1, one warp).
      NvtxRange range(range_name(id, point, "short"), ILP == 1 && warps == 1);
      s = launch<Op, ILP, kShort>(in, sink, stamps, warps);
    }
    {
      NvtxRange range(range_name(id, point, "long"));
      l = launch<Op, ILP, kLong>(in, sink, stamps, warps);
    }
    const double d = l.cycles - s.cycles;
    per_op.push_back(d / extra);
    per_sm.push_back(extra * ILP * warps / d);
    cycles.push_back(l.cycles);
    mhz.push_back(l.mhz);
    smid = l.smid;
  }
  SMD_CHECK(cudaFree(in));
  SMD_CHECK(cudaFree(sink));
  SMD_CHECK(cudaFree(stamps));
  Record rec{id, point, "", "", {}, median(cycles), kOpIters<Op>, median(mhz), smid};
  if (ILP == 1 && warps == 1) {
    rec.metric = "latency", rec.unit = "cycle", rec.samples = per_op;
    emit(rec);
  }
  rec.metric = "throughput", rec.unit = "warp_inst/cycle/SM", rec.samples = per_sm;
  emit(rec);
}

// What --list says of one chain kernel per variant: demangled symbol, case parameters and instructions per body.
template <class Op, int ILP>
void list_kernels(std::vector<KernelInfo>& out, const char* op_name) {
  for (int variant = 0; variant < 2; ++variant) {
    const int depth = (variant + 1) * kBodyOps / ILP;
    out.push_back({{{"ilp", ILP}}, variant ? "long" : "short", long(ILP) * depth, kOpIters<Op>,
                   "chain_kernel<" + std::string(op_name) + "," + std::to_string(ILP) + "," + std::to_string(depth) +
                       ">"});
  }
}

struct ChainCase {
  const char* id;
  const char* op_name;
  void (*run)(const std::string&, const std::map<std::string, long>&, int);
  void (*list)(std::vector<KernelInfo>&, const char*);
};

template <class Op>
void run_point(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  switch (point.at("ilp")) {
    case 1: return measure<Op, 1>(id, point, repeats);
    case 2: return measure<Op, 2>(id, point, repeats);
    case 4: return measure<Op, 4>(id, point, repeats);
    case 8: return measure<Op, 8>(id, point, repeats);
    default: fail("ilp=" + std::to_string(point.at("ilp")) + " is not compiled: use 1, 2, 4 or 8", 2);
  }
}

template <class Op>
void list_all(std::vector<KernelInfo>& out, const char* name) {
  list_kernels<Op, 1>(out, name), list_kernels<Op, 2>(out, name);
  list_kernels<Op, 4>(out, name), list_kernels<Op, 8>(out, name);
}

#define SMD_CHAIN_CASE(id, Op) ::smd::ChainCase{id, #Op, ::smd::run_point<Op>, ::smd::list_all<Op>}

// main() of a chain family: --list prints each case's kernels; otherwise run the named cases.
inline int chain_main(int argc, char** argv, std::initializer_list<ChainCase> cases) {
  Args args = parse_args(argc, argv);
  if (args.list) {
    for (const auto& c : cases) {
      std::vector<KernelInfo> kernels;
      c.list(kernels, c.op_name);
      print_listing(c.id, kernels);
    }
    return 0;
  }
  for (auto& group : args.groups) {
    for (const auto& [key, values] : group.params)
      if (key != "ilp" && key != "warps") fail("unknown parameter '" + key + "' (chain cases take ilp, warps)", 2);
    group.params.try_emplace("ilp", std::vector<long>{1});
    group.params.try_emplace("warps", std::vector<long>{1});
  }
  return run_named(args, cases);
}

}  // namespace smd
