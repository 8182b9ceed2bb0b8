// Memory-level parallelism: N independent pointer chases in one thread (N loads in flight per round).
// While the load queue keeps up, cycles per round stay at one load's latency; where they grow, the
// outstanding-load limit is reached.
#include "memory.cuh"

template <int N>
void run_n(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const auto& c = mem::chain_for(smd::param(point, "footprint_kb"), 0);
  if (c.slots < 4L * N) smd::fail("footprint too small for " + std::to_string(N) + " disjoint chains", 2);
  const long steps = mem::min_steps(c.bytes, mem::sizes().l2_bytes, mem::kMlpSteps);
  mem::measure_chase<LoadCa, N>(id, point, repeats, mem::chase_args(c, N, steps), c.address(0), c.bytes);
}

template <int... Ns>
struct Loads {
  static void run(const std::string& id, const std::map<std::string, long>& point, int repeats) {
    const long n = smd::param(point, "loads");
    bool ran = false;
    ((n == Ns ? (run_n<Ns>(id, point, repeats), ran = true) : false), ...);
    if (!ran) smd::fail("loads=" + std::to_string(n) + " is not compiled (1,2,4,6,8,12,16,24,32,48,64)", 2);
  }
  static std::vector<smd::KernelInfo> list() {
    return {mem::kernel("chase_kernel<LoadCa," + std::to_string(Ns) + ">", long(Ns) * mem::unroll<Ns>(),
                        mem::kMlpSteps.near, {{"loads", Ns}})...};
  }
};
using Compiled = Loads<1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64>;

int main(int argc, char** argv) { return smd::family_main(argc, argv, {{"mlp", Compiled::list, Compiled::run}}); }
