// Shared memory: load-to-use latency of 32/64/128-bit loads, bank conflicts 1..32-way, broadcast,
// and the largest dynamic allocation one CTA can launch with (every word written and read back).
#include "memory.cuh"

constexpr int kSteps = 2048;     // timed dependent loads per lane: n then 2n
constexpr int kWords = 32 * 32;  // 32 banks x 32 rows of 4 B: room for a 32-way conflict

// One dependent shared load of BITS bits; its first word is the next address, the others go into `rest`
// (off the chain) so the load keeps its width.
template <int BITS>
__device__ __forceinline__ uint32_t lds(uint32_t a, uint32_t& rest) {
  uint32_t r, s = 0, t = 0, u = 0;
  if constexpr (BITS == 32) asm volatile("ld.shared.u32 %0, [%1];" : "=r"(r) : "r"(a));
  if constexpr (BITS == 64) asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(r), "=r"(s) : "r"(a));
  if constexpr (BITS == 128)
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r), "=r"(s), "=r"(t), "=r"(u) : "r"(a));
  rest ^= s ^ t ^ u;
  return r;
}

template <int BITS>
__device__ __forceinline__ uint32_t lds_chain(uint32_t a, int steps, uint32_t& rest) {
#pragma unroll 1
  for (int i = 0; i < steps; i += 32)
#pragma unroll
    for (int u = 0; u < 32; ++u) a = lds<BITS>(a, rest);
  return a;
}

// One warp; lane l chases the element lane_elem[l], which points to itself, so the lanes' addresses
// (and hence the bank conflicts) are the same at every step.
template <int BITS>
__global__ void smem_chase(const uint32_t* lane_elem, mem::Slope* out, uint32_t* sink) {
  __shared__ __align__(16) uint32_t words[kWords * 4];
  constexpr uint32_t kElem = BITS / 32;  // words per element
  const uint32_t base = uint32_t(__cvta_generic_to_shared(words));
  for (uint32_t w = threadIdx.x; w < kWords * kElem; w += blockDim.x) words[w] = w % kElem ? 0u : base + 4u * w;
  __syncthreads();
  uint32_t a = base + 4u * kElem * lane_elem[threadIdx.x], rest = 0;
  mem::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
  a = lds_chain<BITS>(a, kSteps, rest);
  s.c1 = smd::clock_cycles();
  a = lds_chain<BITS>(a, 2 * kSteps, rest);
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  if (threadIdx.x == 0) *out = s;
  sink[threadIdx.x] = (a - base) | rest;  // rest is 0: the other words hold 0
}

template <int BITS>
mem::Slope launch(const uint32_t* lane_elem, mem::Slope* out, uint32_t* sink) {
  smem_chase<BITS><<<1, 32>>>(lane_elem, out, sink);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
  mem::Slope s;
  SMD_CHECK(cudaMemcpy(&s, out, sizeof(s), cudaMemcpyDeviceToHost));
  return s;
}

// Time the warp chase with lane l on element lane_elem[l]; check every lane ended where it began.
void measure(const std::string& id, const std::map<std::string, long>& point, int repeats, int bits,
             const std::vector<uint32_t>& lane_elem) {
  auto* run = bits == 32 ? launch<32> : bits == 64 ? launch<64> : bits == 128 ? launch<128> : nullptr;
  if (!run) smd::fail("bits must be 32, 64 or 128", 2);
  uint32_t *elems, *sink;
  mem::Slope* out;
  SMD_CHECK(cudaMalloc(&elems, 32 * sizeof(uint32_t)));
  SMD_CHECK(cudaMalloc(&sink, 32 * sizeof(uint32_t)));
  SMD_CHECK(cudaMalloc(&out, sizeof(mem::Slope)));
  SMD_CHECK(cudaMemcpy(elems, lane_elem.data(), 32 * sizeof(uint32_t), cudaMemcpyHostToDevice));
  run(elems, out, sink);
  smd::Record rec{id, point, "latency", "cycle"};
  std::vector<double> cycles, clock;
  for (int r = 0; r < repeats; ++r) {
    mem::Slope s;
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      s = run(elems, out, sink);
    }
    rec.samples.push_back(mem::per_step(s, kSteps));
    cycles.push_back(double(s.c2 - s.c0)), clock.push_back(mem::mhz(s));
    rec.smid = int(s.smid);
  }
  std::vector<uint32_t> ends(32);
  SMD_CHECK(cudaMemcpy(ends.data(), sink, 32 * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  for (int l = 0; l < 32; ++l)
    if (ends[l] != 4u * (bits / 32) * lane_elem[l]) smd::fail("shared chase of lane " + std::to_string(l) + " moved");
  SMD_CHECK(cudaFree(elems));
  SMD_CHECK(cudaFree(sink));
  SMD_CHECK(cudaFree(out));
  rec.cycles = smd::median(cycles), rec.clock_mhz = smd::median(clock), rec.iterations = kSteps;
  smd::emit(rec);
}

// Conflict-free: lane l reads element l.
void run_latency(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  std::vector<uint32_t> elems(32);
  for (uint32_t l = 0; l < 32; ++l) elems[l] = l;
  measure(id, point, repeats, int(smd::param(point, "bits")), elems);
}

// `ways` consecutive lanes share bank l / ways, each in its own row l % ways: a ways-way conflict.
void run_conflict(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long ways = smd::param(point, "ways");
  if (ways < 1 || ways > 32) smd::fail("ways must be in 1..32", 2);
  std::vector<uint32_t> elems(32);
  for (uint32_t l = 0; l < 32; ++l) elems[l] = uint32_t((l % ways) * 32 + l / ways);
  measure(id, point, repeats, 32, elems);
}

// Every lane reads element 0: one word broadcast to the warp.
void run_broadcast(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  measure(id, point, repeats, int(smd::param(point, "bits")), std::vector<uint32_t>(32, 0));
}

__global__ void fill_check(uint32_t words, unsigned* bad) {
  extern __shared__ uint32_t dyn[];
  for (uint32_t w = threadIdx.x; w < words; w += blockDim.x) dyn[w] = w * 2654435761u;
  __syncthreads();
  for (uint32_t w = threadIdx.x; w < words; w += blockDim.x)
    if (dyn[words - 1 - w] != (words - 1 - w) * 2654435761u) atomicAdd(bad, 1u);
}

// Largest dynamic shared memory (1 KiB steps around the opt-in attribute) that launches and holds
// every word; a launch the runtime refuses ends the search.
void run_capacity(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long optin_kb = mem::sizes().smem_block_optin / 1024;
  unsigned* bad;
  SMD_CHECK(cudaMalloc(&bad, sizeof(unsigned)));
  smd::Record rec{id, point, "capacity_per_block", "byte"};
  for (int r = 0; r < repeats; ++r) {
    long best = 0;
    for (long kb = std::max(1L, optin_kb - 4); kb <= optin_kb + 4; ++kb) {
      const int bytes = int(kb * 1024);
      cudaError_t err = cudaFuncSetAttribute(fill_check, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
      if (err == cudaSuccess) {
        SMD_CHECK(cudaMemset(bad, 0, sizeof(unsigned)));
        fill_check<<<1, 1024, bytes>>>(uint32_t(bytes / 4), bad);
        err = cudaGetLastError();
      }
      if (err != cudaSuccess) {
        cudaGetLastError();  // the refusal is the answer, not an error of this program
        break;
      }
      unsigned wrong = 0;
      SMD_CHECK(cudaDeviceSynchronize());
      SMD_CHECK(cudaMemcpy(&wrong, bad, sizeof(unsigned), cudaMemcpyDeviceToHost));
      if (wrong) smd::fail(std::to_string(wrong) + " shared words read back wrong at " + std::to_string(kb) + " KiB");
      best = bytes;
    }
    if (best == 0) smd::fail("no dynamic shared memory size near the opt-in limit launched");
    rec.samples.push_back(double(best));
  }
  SMD_CHECK(cudaFree(bad));
  smd::emit(rec);
}

int main(int argc, char** argv) {
  auto chases = [] {
    return std::vector{mem::kernel("smem_chase<32>", 32, kSteps, {{"bits", 32}}),
                       mem::kernel("smem_chase<64>", 32, kSteps, {{"bits", 64}}),
                       mem::kernel("smem_chase<128>", 32, kSteps, {{"bits", 128}})};
  };
  return smd::family_main(
      argc, argv,
      {{"smem_latency", chases, run_latency},
       {"smem_bank_conflict", [] { return std::vector{mem::kernel("smem_chase<32>", 32, kSteps)}; }, run_conflict},
       {"smem_broadcast", chases, run_broadcast},
       {"smem_capacity", [] { return std::vector{mem::kernel("fill_check", 0, 1)}; }, run_capacity}});
}
