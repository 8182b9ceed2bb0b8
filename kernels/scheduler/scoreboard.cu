// Scoreboard depth: one thread issues N independent L2 loads (ld.global.cg, distinct 128-byte lines)
// back to back, then sums them; the sum feeds the next iteration's addresses, so iterations do not
// overlap. Cycles per iteration stay near one L2 latency while the loads overlap; past the number
// the SM can track, they grow by a latency step (the knee).
#include "sched.cuh"

namespace {

constexpr int kIters = 256;
constexpr int kStride = 32;  // words: one 128-byte line per load
constexpr int kMaxLoads = 32;

template <int N>
__global__ void loads_then_use(const unsigned* data, unsigned* sink, smd::Stamp* stamp, int iters) {
  unsigned off = 0;  // stays 0 (data is zeros), but the compiler cannot know
  const long long c0 = smd::clock_cycles();
  const unsigned long long n0 = smd::clock_ns();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
    unsigned v[N];
#pragma unroll
    for (int i = 0; i < N; ++i)
      asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v[i]) : "l"(data + off + i * kStride) : "memory");
    unsigned sum = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) sum += v[i];
    off = sum;
  }
  const long long c1 = smd::clock_cycles();
  *stamp = {c0, c1, n0, smd::clock_ns(), smd::sm_id()};
  *sink = off;
}

template <int N>
smd::Span launch(const unsigned* data, unsigned* sink, smd::Stamp* stamp) {
  loads_then_use<N><<<1, 1>>>(data, sink, stamp, kIters);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
  smd::Stamp s;
  SMD_CHECK(cudaMemcpy(&s, stamp, sizeof(s), cudaMemcpyDeviceToHost));
  return smd::span({s});
}

template <int N>
void measure(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  sched::Buffer<unsigned> data(size_t(kMaxLoads) * kStride), sink(1);
  sched::Buffer<smd::Stamp> stamp(1);
  launch<N>(data.ptr, sink.ptr, stamp.ptr);  // untimed: module load, lines into L2
  std::vector<double> per_iter, mhz;
  int smid = -1;
  for (int r = 0; r < repeats; ++r) {
    smd::Span s;
    {
      smd::NvtxRange range(smd::range_name(id, point, "main"));
      s = launch<N>(data.ptr, sink.ptr, stamp.ptr);
    }
    if (sink.host()[0] != 0) smd::fail("scoreboard: the loads returned nonzero data (buffer not zeroed)");
    per_iter.push_back(s.cycles / kIters);
    mhz.push_back(s.mhz), smid = s.smid;
  }
  smd::Record rec{id, point, "cycles_per_iteration", "cycle", per_iter, 0, kIters, smd::median(mhz), smid};
  rec.variant = "main";
  rec.expect = {{"smsp__inst_executed_op_global_ld.sum", double(N) * kIters}};
  smd::emit(rec);
}

template <int... Ns>
struct Loads {
  static void run(const std::string& id, const std::map<std::string, long>& point, int repeats) {
    const long n = smd::param(point, "loads");
    bool done = false;
    ((n == Ns ? (measure<Ns>(id, point, repeats), done = true) : false), ...);
    if (!done) smd::fail("loads=" + std::to_string(n) + " is not compiled (see --list)", 2);
  }
  static std::vector<smd::KernelInfo> list() {
    return {{{{"loads", Ns}}, "", Ns, kIters, "loads_then_use<" + std::to_string(Ns) + ">"}...};
  }
};

using Compiled = Loads<1, 2, 4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32>;

}  // namespace

int main(int argc, char** argv) {
  return smd::family_main(argc, argv, {{"scoreboard_depth", Compiled::list, Compiled::run}});
}
