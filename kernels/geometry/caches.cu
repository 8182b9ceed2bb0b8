// The constant and read-only (texture) paths, one thread's warmed chases as l1.cu's (geometry.cuh's lap kernel: an
// untimed lap, then n and 2n steps, whole laps):
//  const_footprint  ld.const over a chain of `footprint_b` bytes at stride 64 B in a __constant__ bank: each step
//                   in the latency is a constant cache's size (constant memory is 64 KB: no footprint beyond it);
//  const_divergent  every lane of one warp chases its own self-loop in constant memory, `distinct` addresses among
//                   the 32 lanes: a warp's constant load is served once per distinct address;
//  nc_footprint     ld.global.nc (the read-only path) over a stride-128 B chain of `footprint_kb`;
//  tex_footprint    tex1Dfetch<int> on a texture object over linear memory, the same chain as element indices;
//  cache_attributes the total constant memory and the L2 fetch granularity limit the figures are checked against.
#include "geometry.cuh"

constexpr long kConstBytes = 64 * 1024;  // the __constant__ bank a kernel may use
constexpr long kMinSteps = 8192;         // timed steps per phase (whole laps of the chain)
constexpr int kLanes = 32;

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

// The smallest whole number of laps of a cycle of `slots` slots (rounded to loop bodies of 32) holding kMinSteps.
long lap_steps(long slots) {
  const long cycle = std::lcm(slots, 32L);
  return (kMinSteps + cycle - 1) / cycle * cycle;
}

// Every lane chases its own cursor (cursor[lane]) through constant memory: `steps` untimed, then n and 2n timed by
// lane 0 (the warp's loads issue together: a step ends when every distinct address of it is served).
__global__ void __launch_bounds__(kLanes, 1) warp_const_kernel(uint64_t* cursor, int steps, mem::Slope* out) {
  uint64_t p[1] = {cursor[threadIdx.x]};
  mem::chase<LoadConst, 1>(p, steps);
  mem::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
  mem::chase<LoadConst, 1>(p, steps);
  s.c1 = smd::clock_cycles();
  mem::chase<LoadConst, 1>(p, 2 * steps);
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  if (threadIdx.x == 0) *out = s;
  cursor[threadIdx.x] = p[0];
}

// Thread 0 chases element indices through a texture over linear memory (tex1Dfetch: the texture path's caches):
// `steps` untimed, then n and 2n timed.
__device__ __forceinline__ int tex_chase(cudaTextureObject_t tex, int i, int steps) {
#pragma unroll 1
  for (int s = 0; s < steps; s += 32)
#pragma unroll
    for (int u = 0; u < 32; ++u) i = tex1Dfetch<int>(tex, i);
  return i;
}

__global__ void __launch_bounds__(32, 1) tex_lap_kernel(cudaTextureObject_t tex, int* cursor, int steps,
                                                        mem::Slope* out) {
  if (threadIdx.x != 0) return;
  int i = tex_chase(tex, *cursor, steps);
  mem::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
  i = tex_chase(tex, i, steps);
  s.c1 = smd::clock_cycles();
  i = tex_chase(tex, i, 2 * steps);
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  *out = s;
  *cursor = i;
}

// The .const address of c_chain (ld.const takes it as the chain's pointers).
uint64_t const_address() {
  static uint64_t base = 0;
  if (base) return base;
  uint64_t* d = nullptr;
  SMD_CHECK(cudaMalloc(&d, sizeof(uint64_t)));
  const_base<<<1, 1>>>(d);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaMemcpy(&base, d, sizeof(base), cudaMemcpyDeviceToHost));
  SMD_CHECK(cudaFree(d));
  return base;
}

// c_chain holding `host`'s words (the rest zero).
void write_const(const std::vector<uint64_t>& host) {
  std::vector<uint64_t> all(kConstBytes / 8, 0);
  std::copy(host.begin(), host.end(), all.begin());
  SMD_CHECK(cudaMemcpyToSymbol(c_chain, all.data(), kConstBytes));
}

// const_footprint: a cycle of footprint_b / stride_b slots in c_chain, chased by one thread.
void run_const_footprint(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long bytes = smd::param(point, "footprint_b"), stride = smd::param(point, "stride_b");
  if (bytes < stride || bytes > kConstBytes || stride < 8 || stride % 8 || bytes % stride)
    smd::fail("footprint_b must be a multiple of stride_b (a multiple of 8) in stride_b..65536", 2);
  const uint64_t base = const_address();
  const long slots = bytes / stride;
  std::vector<uint64_t> host(bytes / 8, 0);
  for (long k = 0; k < slots; ++k) host[k * stride / 8] = base + uint64_t((k + 1) % slots) * stride;
  write_const(host);
  geo::measure_laps<LoadConst>(id, point, repeats, base, int(lap_steps(slots)), {});
}

// const_divergent: lane l's cursor is the self-loop of slot l mod `distinct` (64 B apart: one constant line each).
void run_const_divergent(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long distinct = smd::param(point, "distinct");
  if (distinct < 1 || distinct > kLanes) smd::fail("distinct must be in 1..32", 2);
  constexpr long kApart = 64;
  const uint64_t base = const_address();
  std::vector<uint64_t> host(kLanes * kApart / 8, 0), start(kLanes);
  for (long k = 0; k < distinct; ++k) host[k * kApart / 8] = base + uint64_t(k) * kApart;
  for (int l = 0; l < kLanes; ++l) start[l] = base + uint64_t(l % distinct) * kApart;
  write_const(host);
  mem::ChaseScratch scratch;
  std::vector<uint64_t> end(kLanes);
  mem::measure_launches(id, point, repeats, kMinSteps, [&] {
    SMD_CHECK(cudaMemcpy(scratch.cursors, start.data(), kLanes * sizeof(uint64_t), cudaMemcpyHostToDevice));
    warp_const_kernel<<<1, kLanes>>>(scratch.cursors, int(kMinSteps), scratch.out);
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaDeviceSynchronize());
    SMD_CHECK(cudaMemcpy(end.data(), scratch.cursors, kLanes * sizeof(uint64_t), cudaMemcpyDeviceToHost));
    if (end != start) smd::fail("a lane left its constant self-loop: the chain is broken");
    mem::Slope s;
    SMD_CHECK(cudaMemcpy(&s, scratch.out, sizeof(s), cudaMemcpyDeviceToHost));
    return s;
  });
}

// The chain of nc_footprint and tex_footprint: footprint_kb / stride_b slots from the arena's start, in order.
std::vector<uint64_t> global_chain(const std::map<std::string, long>& point, std::string& why) {
  const long kb = smd::param(point, "footprint_kb"), stride = smd::param(point, "stride_b");
  if (kb < 1 || stride < 8 || stride % 8 || kb * 1024 % stride)
    smd::fail("footprint_kb x 1024 must be a multiple of stride_b (a multiple of 8)", 2);
  char* base = geo::arena(size_t(kb) * 1024, why);
  if (!base) return {};
  std::vector<uint64_t> slots(kb * 1024 / stride);
  for (size_t k = 0; k < slots.size(); ++k) slots[k] = reinterpret_cast<uint64_t>(base) + k * stride;
  return slots;
}

// nc_footprint: the chain linked by address, chased with ld.global.nc; every load is one L1/TEX request.
void run_nc(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  std::string why;
  const auto slots = global_chain(point, why);
  if (slots.empty()) return smd::static_point(id, point, why);
  geo::link(slots);
  const long steps = lap_steps(long(slots.size()));
  geo::measure_laps<LoadNc>(id, point, repeats, slots[0], int(steps),
                            {{"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 4.0 * steps + 1}});
}

// Word 0 of slot k holds the element index (in 4 B ints from the arena's start) of slot k + 1.
__global__ void link_indices(int* base, long slots, long stride_ints) {
  for (long k = blockIdx.x * long(blockDim.x) + threadIdx.x; k < slots; k += long(gridDim.x) * blockDim.x)
    base[k * stride_ints] = int((k + 1) % slots * stride_ints);
}

// tex_footprint: the chain as element indices, read through a texture object over the arena (linear memory).
void run_tex(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  std::string why;
  const auto slots = global_chain(point, why);
  if (slots.empty()) return smd::static_point(id, point, why);
  const long stride_ints = smd::param(point, "stride_b") / 4, n = long(slots.size());
  int* base = reinterpret_cast<int*>(slots[0]);
  link_indices<<<256, 256>>>(base, n, stride_ints);
  SMD_CHECK(cudaGetLastError());
  cudaResourceDesc res{};
  res.resType = cudaResourceTypeLinear;
  res.res.linear.devPtr = base;
  res.res.linear.desc = cudaCreateChannelDesc<int>();
  res.res.linear.sizeInBytes = size_t(n) * stride_ints * 4;
  cudaTextureDesc desc{};
  desc.readMode = cudaReadModeElementType;
  cudaTextureObject_t tex = 0;
  SMD_CHECK(cudaCreateTextureObject(&tex, &res, &desc, nullptr));
  mem::ChaseScratch scratch;
  int* cursor = reinterpret_cast<int*>(scratch.cursors);
  const long steps = lap_steps(n);
  mem::measure_launches(id, point, repeats, steps, [&] {
    SMD_CHECK(cudaMemset(cursor, 0, sizeof(int)));
    tex_lap_kernel<<<1, 32>>>(tex, cursor, int(steps), scratch.out);
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaDeviceSynchronize());
    int end = -1;
    SMD_CHECK(cudaMemcpy(&end, cursor, sizeof(end), cudaMemcpyDeviceToHost));
    if (end != 0) smd::fail("texture chase did not come back to its start after whole laps: the chain is broken");
    mem::Slope s;
    SMD_CHECK(cudaMemcpy(&s, scratch.out, sizeof(s), cudaMemcpyDeviceToHost));
    return s;
  });
  SMD_CHECK(cudaDestroyTextureObject(tex));
}

// One record per quantity, read once per repeat: the total constant memory (B) and the L2 fetch granularity limit.
void run_attributes(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  smd::Record total{id, point, "constant_memory", "B"}, fetch{id, point, "l2_fetch_granularity", "B"};
  for (int r = 0; r < repeats; ++r) {
    size_t granularity = 0;
    SMD_CHECK(cudaDeviceGetLimit(&granularity, cudaLimitMaxL2FetchGranularity));
    total.samples.push_back(double(geo::attribute(cudaDevAttrTotalConstantMemory)));
    fetch.samples.push_back(double(granularity));
  }
  smd::emit(total);
  smd::emit(fetch);
}

#define SMD_LISTED(symbol) [] { return std::vector{mem::kernel(symbol, 32, kMinSteps)}; }

int main(int argc, char** argv) {
  return smd::family_main(argc, argv,
                          {{"const_footprint", SMD_LISTED("lap_kernel<LoadConst>"), run_const_footprint},
                           {"const_divergent", SMD_LISTED("warp_const_kernel"), run_const_divergent},
                           {"nc_footprint", SMD_LISTED("lap_kernel<LoadNc>"), run_nc},
                           {"tex_footprint", SMD_LISTED("tex_lap_kernel"), run_tex},
                           {"cache_attributes", [] { return std::vector<smd::KernelInfo>{}; }, run_attributes}});
}
