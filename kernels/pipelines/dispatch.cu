// Dispatch latency: one warp reads clock64, runs N dependent ops on the value read, reads clock64 again.
// The same launch times a bare back-to-back clock read pair; their difference at N = 1 is the dispatch
// latency (cycles until the first dependent op on a fresh clock value issues), the slope over N the op's.
#include "../common/harness.cuh"

constexpr int kReps = 64;  // timed pairs per launch; a launch's sample is their median

struct Iadd3 {
  // Two PTX adds: ptxas fuses them into one three-input IADD3.
  __device__ static unsigned apply(unsigned x, unsigned a, unsigned b) {
    asm volatile("add.u32 %0, %0, %1;\n\tadd.u32 %0, %0, %2;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

struct Imad {
  __device__ static unsigned apply(unsigned x, unsigned a, unsigned b) {
    asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

// Lane 0 times. The operands come from global memory, so the ops stay vector ops (IADD3, IMAD): on values
// ptxas sees as warp-uniform it would issue uniform-datapath ops instead. ptxas alternates S2UR and CS2R for
// the clock reads; the tests check that the bare and the timed pair use the same two.
template <class Op, int N>
__global__ void dispatch_kernel(const unsigned* operands, int* bare, int* elapsed, unsigned* sink, unsigned* smid) {
  const unsigned a = operands[0], b = operands[1];
  unsigned acc = 0;
  if (threadIdx.x == 0) {
#pragma unroll 1
    for (int r = 0; r < kReps; ++r) {
      const long long b0 = smd::clock_cycles();
      const long long b1 = smd::clock_cycles();
      const long long t0 = smd::clock_cycles();
      unsigned x = unsigned(t0);
#pragma unroll
      for (int i = 0; i < N; ++i) x = Op::apply(x, a, b);
      const long long t1 = smd::clock_cycles();
      bare[r] = int(b1 - b0), elapsed[r] = int(t1 - t0);
      acc ^= x;
    }
  }
  sink[threadIdx.x] = acc;
  *smid = smd::sm_id();
}

constexpr int kCounts[] = {0, 1, 2, 4, 8};  // the N this family compiles

struct Buffers {
  unsigned* operands;
  int *bare, *elapsed;
  unsigned *sink, *smid;
};

template <class Op, int N>
void launch(const Buffers& d) {
  dispatch_kernel<Op, N><<<1, 32>>>(d.operands, d.bare, d.elapsed, d.sink, d.smid);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
}

template <class Op>
void launch_n(int n, const Buffers& d) {
  switch (n) {
    case 0: return launch<Op, 0>(d);
    case 1: return launch<Op, 1>(d);
    case 2: return launch<Op, 2>(d);
    case 4: return launch<Op, 4>(d);
    case 8: return launch<Op, 8>(d);
    default: smd::fail("n=" + std::to_string(n) + " is not compiled: use 0, 1, 2, 4 or 8", 2);
  }
}

// One launch's clock-pair differences; a pair read far out of order or apart means clock64 was misread.
std::vector<double> fetch(const int* device) {
  std::vector<int> host(kReps);
  SMD_CHECK(cudaMemcpy(host.data(), device, sizeof(host[0]) * kReps, cudaMemcpyDeviceToHost));
  for (int c : host)
    if (c < -64 || c > 10000) smd::fail("dispatch: clock pair " + std::to_string(c) + " cycles apart: clock64 misread");
  return {host.begin(), host.end()};
}

template <class Op>
void measure(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const int n = int(smd::param(point, "n"));
  Buffers d{};
  const unsigned operands[2] = {0x9E3779B9u, 0x7F4A7C15u};
  SMD_CHECK(cudaMalloc(&d.operands, sizeof(operands)));
  SMD_CHECK(cudaMemcpy(d.operands, operands, sizeof(operands), cudaMemcpyHostToDevice));
  SMD_CHECK(cudaMalloc(&d.bare, kReps * sizeof(int)));
  SMD_CHECK(cudaMalloc(&d.elapsed, kReps * sizeof(int)));
  SMD_CHECK(cudaMalloc(&d.sink, 32 * sizeof(unsigned)));
  SMD_CHECK(cudaMalloc(&d.smid, sizeof(unsigned)));
  launch_n<Op>(n, d);  // untimed first launch (module load, instruction cache)
  std::vector<double> bare, elapsed, dispatch;
  for (int r = 0; r < repeats; ++r) {
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      launch_n<Op>(n, d);
    }
    bare.push_back(smd::median(fetch(d.bare)));
    elapsed.push_back(smd::median(fetch(d.elapsed)));
    dispatch.push_back(elapsed.back() - bare.back());
  }
  unsigned smid = 0;
  SMD_CHECK(cudaMemcpy(&smid, d.smid, sizeof(smid), cudaMemcpyDeviceToHost));
  SMD_CHECK(cudaFree(d.operands));
  SMD_CHECK(cudaFree(d.bare));
  SMD_CHECK(cudaFree(d.elapsed));
  SMD_CHECK(cudaFree(d.sink));
  SMD_CHECK(cudaFree(d.smid));
  // clock_mhz stays 0 (not measured): a launch's few thousand cycles are below the ns timer's resolution.
  smd::Record rec{id, point, "clock_to_clock", "cycle", bare, smd::median(elapsed), kReps, 0, int(smid)};
  smd::emit(rec);
  rec.metric = "elapsed", rec.samples = elapsed;
  smd::emit(rec);
  rec.metric = "dispatch", rec.samples = dispatch;
  smd::emit(rec);
}

// The kernels of the op named `op`, one per compiled N; `ops` counts the dependent ops.
std::vector<smd::KernelInfo> listing(const std::string& op) {
  std::vector<smd::KernelInfo> out;
  for (int n : kCounts)
    out.push_back({{{"n", n}}, "timed", n, kReps, "dispatch_kernel<" + op + "," + std::to_string(n) + ">"});
  return out;
}

int main(int argc, char** argv) {
  return smd::family_main(argc, argv,
                          {{"dispatch_iadd3", [] { return listing("Iadd3"); }, measure<Iadd3>},
                           {"dispatch_imad", [] { return listing("Imad"); }, measure<Imad>}});
}
