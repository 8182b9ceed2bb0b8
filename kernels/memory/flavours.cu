// L1-hit and L2-hit latency of each load flavour (cache operator): the same warmed pointer chase with
// ld.global{,.ca,.cg,.cs,.lu,.cv,.nc} and with ld.const from a __constant__ chain.
#include "memory.cuh"

constexpr int kSteps = 2048;
constexpr long kConstBytes = 64 * 1024;  // the __constant__ bank a kernel may use

__constant__ uint64_t c_chain[kConstBytes / 8];

// A dependent load from constant space: the cursor is a .const address, as LDC takes it.
struct LoadConst {
  __device__ __forceinline__ static uint64_t next(uint64_t p) {
    uint64_t r;
    asm volatile("ld.const.u64 %0, [%1];" : "=l"(r) : "l"(p));
    return r;
  }
};

__global__ void const_base(uint64_t* out) {
  uint64_t base;
  asm("mov.u64 %0, c_chain;" : "=l"(base));
  *out = base;
}

template <class Load>
void run_global(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const auto& c = mem::chain_for(smd::param(point, "footprint_kb"), smd::param(point, "stride_b"));
  mem::measure_chase<Load, 1>(id, point, repeats, mem::chase_args(c, 1, kSteps), c.address(0), c.bytes);
}

// The chain lives in c_chain at .const addresses; an untimed chase over every slot warms the constant
// caches (the warm pass reads global memory only).
void run_const(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long bytes = smd::param(point, "footprint_kb") * 1024, stride = smd::param(point, "stride_b");
  if (bytes > kConstBytes || stride < 8 || stride % 8)
    smd::fail("ld.const chase wants footprint_kb <= 64 and stride_b a multiple of 8", 2);
  uint64_t* dbase = nullptr;
  uint64_t base = 0;
  SMD_CHECK(cudaMalloc(&dbase, sizeof(uint64_t)));
  const_base<<<1, 1>>>(dbase);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaMemcpy(&base, dbase, sizeof(base), cudaMemcpyDeviceToHost));
  SMD_CHECK(cudaFree(dbase));
  const long slots = std::max(1L, bytes / stride);
  std::vector<uint64_t> host(kConstBytes / 8, 0);
  for (long k = 0; k < slots; ++k) host[k * stride / 8] = base + ((k + 1) % slots) * stride;
  SMD_CHECK(cudaMemcpyToSymbol(c_chain, host.data(), kConstBytes));
  mem::ChaseArgs a{};
  a.start[0] = base;
  a.warm_steps = int((slots + 31) / 32 * 32);
  a.steps = kSteps;
  mem::measure_chase<LoadConst, 1>(id, point, repeats, a, base, bytes);
}

#define SMD_FLAVOUR(id, Load, runner) \
  {id, [] { return std::vector{mem::kernel("chase_kernel<" #Load ",1>", 32, kSteps)}; }, runner}

int main(int argc, char** argv) {
  return smd::family_main(argc, argv,
                          {SMD_FLAVOUR("load_default", LoadDefault, run_global<LoadDefault>),
                           SMD_FLAVOUR("load_ca", LoadCa, run_global<LoadCa>),
                           SMD_FLAVOUR("load_cg", LoadCg, run_global<LoadCg>),
                           SMD_FLAVOUR("load_cs", LoadCs, run_global<LoadCs>),
                           SMD_FLAVOUR("load_lu", LoadLu, run_global<LoadLu>),
                           SMD_FLAVOUR("load_cv", LoadCv, run_global<LoadCv>),
                           SMD_FLAVOUR("load_nc", LoadNc, run_global<LoadNc>),
                           SMD_FLAVOUR("load_const", LoadConst, run_const)});
}
