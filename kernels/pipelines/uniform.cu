// Uniform-datapath instruction table: UIADD3, UIMAD, ULOP3, USHF, UPOPC as dependent chains, timed like
// chain.cuh (two body lengths, the slope is cycles per instruction). chain.cuh loads its seeds per thread, so
// ptxas keeps those chains on vector registers; here the chain values come from the kernel's parameters (warp-
// uniform) and, because ptxas moves a uniform value to the uniform datapath only when vector registers are
// scarce, kPad per-thread values stay live across the timed loop under a 64-register cap (__launch_bounds__(1024,
// 1)). The pads cost no instruction inside the loop; the tests check that the loop's ops are all U* opcodes.
#include "ops.cuh"

constexpr int kPad = 44;  // per-thread values held live across the timed loop (more spills the clock value)

struct UniformArgs {  // by value: kernel parameters, provably the same in every lane
  unsigned v[smd::kMaxIlp], a, b;
};

struct Uiadd3 : U32Op {  // two PTX adds: one three-input UIADD3
  __device__ static T apply(T x, T a, T b) {
    asm volatile("add.u32 %0, %0, %1;\n\tadd.u32 %0, %0, %2;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

struct Uimad : U32Op {
  __device__ static T apply(T x, T a, T b) {
    asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

struct Ulop3 : U32Op {
  __device__ static T apply(T x, T a, T b) {
    asm volatile("lop3.b32 %0, %0, %1, %2, 0x96;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

struct Ushf : U32Op {  // rotate by a register amount
  __device__ static T apply(T x, T a, T) {
    asm volatile("shf.l.wrap.b32 %0, %0, %0, %1;" : "+r"(x) : "r"(a));
    return x;
  }
};

struct Upopc : U32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("popc.b32 %0, %0;" : "+r"(x));
    return x;
  }
};

template <class Op, int ILP, int DEPTH>
__global__ void __launch_bounds__(1024, 1)
    uniform_kernel(UniformArgs args, unsigned* sink, smd::Stamp* stamps, int iters, int flag) {
  unsigned v[ILP], pad[kPad];
#pragma unroll
  for (int i = 0; i < ILP; ++i) v[i] = args.v[i];
#pragma unroll
  for (int j = 0; j < kPad; ++j) {
    pad[j] = threadIdx.x * (j + 3);
    asm volatile("" : "+r"(pad[j]));  // opaque: ptxas must keep it in a register, not recompute it later
  }
  const unsigned a = args.a, b = args.b;
  __syncthreads();
  const long long c0 = smd::clock_cycles();
  const unsigned long long n0 = smd::clock_ns();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int d = 0; d < DEPTH; ++d)
#pragma unroll
      for (int i = 0; i < ILP; ++i) v[i] = Op::apply(v[i], a, b);
  }
  const long long c1 = smd::clock_cycles();
  const unsigned long long n1 = smd::clock_ns();
  if (threadIdx.x % 32 == 0) stamps[threadIdx.x / 32] = {c0, c1, n0, n1, smd::sm_id()};
  unsigned s = 0;
#pragma unroll
  for (int j = 0; j < kPad; ++j) {
    asm volatile("" : "+r"(pad[j]));
    s ^= pad[j];
  }
  if (flag)  // never true at run time, unknown to the compiler: keeps the chains and the pads alive
#pragma unroll
    for (int i = 0; i < ILP; ++i) sink[threadIdx.x * ILP + i] = v[i] ^ s;
}

template <class Op, int ILP, int DEPTH>
smd::Span launch(const UniformArgs& args, unsigned* sink, smd::Stamp* stamps, int warps) {
  uniform_kernel<Op, ILP, DEPTH><<<1, warps * 32>>>(args, sink, stamps, smd::kIters, 0);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
  std::vector<smd::Stamp> host(warps);
  SMD_CHECK(cudaMemcpy(host.data(), stamps, warps * sizeof(smd::Stamp), cudaMemcpyDeviceToHost));
  return smd::span(host);
}

// The chain.cuh protocol: latency at ILP 1 and 1 warp, throughput (warp_inst/cycle/SM) at every point.
template <class Op, int ILP>
void measure(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  constexpr int kShort = smd::kBodyOps / ILP, kLong = 2 * smd::kBodyOps / ILP;
  const int warps = int(point.at("warps"));
  if (warps < 1 || warps > 32) smd::fail("warps=" + std::to_string(warps) + " out of range 1..32", 2);
  unsigned seed[smd::kMaxIlp + 2];
  Op::seed(seed);
  UniformArgs args;
  for (int i = 0; i < smd::kMaxIlp; ++i) args.v[i] = seed[i];
  args.a = seed[smd::kMaxIlp], args.b = seed[smd::kMaxIlp + 1];
  unsigned* sink;
  smd::Stamp* stamps;
  SMD_CHECK(cudaMalloc(&sink, warps * 32 * ILP * sizeof(unsigned)));
  SMD_CHECK(cudaMalloc(&stamps, warps * sizeof(smd::Stamp)));
  launch<Op, ILP, kShort>(args, sink, stamps, warps);  // untimed first launches (module load, icache)
  launch<Op, ILP, kLong>(args, sink, stamps, warps);
  std::vector<double> per_op, per_sm, cycles, mhz;
  const double extra = double(smd::kIters) * (kLong - kShort);
  int smid = -1;
  for (int r = 0; r < repeats; ++r) {
    smd::Span s, l;
    {
      smd::NvtxRange range(smd::range_name(id, point, "short"), ILP == 1 && warps == 1);  // as chain.cuh
      s = launch<Op, ILP, kShort>(args, sink, stamps, warps);
    }
    {
      smd::NvtxRange range(smd::range_name(id, point, "long"));
      l = launch<Op, ILP, kLong>(args, sink, stamps, warps);
    }
    const double d = l.cycles - s.cycles;
    per_op.push_back(d / extra), per_sm.push_back(extra * ILP * warps / d);
    cycles.push_back(l.cycles), mhz.push_back(l.mhz), smid = l.smid;
  }
  SMD_CHECK(cudaFree(sink));
  SMD_CHECK(cudaFree(stamps));
  smd::Record rec{id, point, "", "", {}, smd::median(cycles), smd::kIters, smd::median(mhz), smid};
  if (ILP == 1 && warps == 1) {
    rec.metric = "latency", rec.unit = "cycle", rec.samples = per_op;
    smd::emit(rec);
  }
  rec.metric = "throughput", rec.unit = "warp_inst/cycle/SM", rec.samples = per_sm;
  smd::emit(rec);
}

template <class Op, int ILP>
void list_ilp(std::vector<smd::KernelInfo>& out, const char* name) {
  for (int variant = 0; variant < 2; ++variant) {
    const int depth = (variant + 1) * smd::kBodyOps / ILP;
    out.push_back({{{"ilp", ILP}}, variant ? "long" : "short", long(ILP) * depth, smd::kIters,
                   "uniform_kernel<" + std::string(name) + "," + std::to_string(ILP) + "," + std::to_string(depth) +
                       ">"});
  }
}

template <class Op>
void run_point(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  switch (point.at("ilp")) {
    case 1: return measure<Op, 1>(id, point, repeats);
    case 2: return measure<Op, 2>(id, point, repeats);
    case 4: return measure<Op, 4>(id, point, repeats);
    case 8: return measure<Op, 8>(id, point, repeats);
    default: smd::fail("ilp=" + std::to_string(point.at("ilp")) + " is not compiled: use 1, 2, 4 or 8", 2);
  }
}

template <class Op>
void list_all(std::vector<smd::KernelInfo>& out, const char* name) {
  list_ilp<Op, 1>(out, name), list_ilp<Op, 2>(out, name), list_ilp<Op, 4>(out, name), list_ilp<Op, 8>(out, name);
}

#define UNIFORM_CASE(id, Op) ::smd::ChainCase{id, #Op, run_point<Op>, list_all<Op>}

int main(int argc, char** argv) {
  return smd::chain_main(argc, argv,
                         {UNIFORM_CASE("uiadd3", Uiadd3), UNIFORM_CASE("uimad", Uimad), UNIFORM_CASE("ulop3", Ulop3),
                          UNIFORM_CASE("ushf", Ushf), UNIFORM_CASE("upopc", Upopc)});
}
