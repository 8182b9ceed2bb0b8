// Shared pieces of the geometry category: one device buffer per process (grown, never shrunk), a one-thread chase
// kernel timed as memory.cuh's chases are (an untimed lap, then n and 2n steps), and its timed launches.
#pragma once
#include "../memory/memory.cuh"

namespace geo {

constexpr size_t kPage = size_t(2) << 20;  // cudaMalloc's page on these GPUs: the arena is aligned to it

// One device allocation per process, reused by every point: it grows (at least doubling, to `first` bytes at once
// where the caller knows its sweep will need that much, and on its first growth to `most` bytes, the caller's largest
// span) to the largest span a point asks for, so a sweep of growing spans allocates once or twice, not once per point.
struct Arena {
  char* raw = nullptr;   // what cudaMalloc returned
  char* base = nullptr;  // its first 2 MiB boundary
  size_t bytes = 0;      // usable from base
};

// The process's arena holding at least `bytes` from a 2 MiB boundary, or nullptr (and `why`) where the card's free
// memory cannot hold it.
inline char* arena(size_t bytes, std::string& why, size_t first = 0, size_t most = 0) {
  static Arena a;
  if (a.bytes >= bytes) return a.base;
  const size_t before = a.bytes;
  if (a.raw) SMD_CHECK(cudaFree(a.raw));
  a = {};
  size_t free_bytes = 0, total = 0;
  SMD_CHECK(cudaMemGetInfo(&free_bytes, &total));
  const size_t room = free_bytes > (size_t(1) << 30) + kPage ? free_bytes - (size_t(1) << 30) - kPage : 0;
  if (bytes > room) {  // 1 GiB stays with the runtime
    why = "needs " + std::to_string(bytes >> 20) + " MiB of device memory, " + std::to_string(free_bytes >> 20) +
          " MiB free";
    return nullptr;
  }
  const size_t want = std::min(room, std::max({bytes, 2 * before, first, before ? most : 0}));
  SMD_CHECK(cudaMalloc(&a.raw, want + kPage));
  a.base = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(a.raw) + kPage - 1) / kPage * kPage);
  a.bytes = want;
  return a.base;
}

// Pointer k of `next` (slot addresses, in chase order) stores slot k+1's address: one cycle over every slot.
__global__ void link_slots(const uint64_t* slots, long n) {
  for (long k = blockIdx.x * long(blockDim.x) + threadIdx.x; k < n; k += long(gridDim.x) * blockDim.x)
    *reinterpret_cast<uint64_t*>(slots[k]) = slots[(k + 1) % n];
}

// Write the cycle slot[0] -> slot[1] -> ... -> slot[0] into device memory (the slots' own words).
inline void link(const std::vector<uint64_t>& slots) {
  uint64_t* d = nullptr;
  SMD_CHECK(cudaMalloc(&d, slots.size() * sizeof(uint64_t)));
  SMD_CHECK(cudaMemcpy(d, slots.data(), slots.size() * sizeof(uint64_t), cudaMemcpyHostToDevice));
  link_slots<<<256, 256>>>(d, long(slots.size()));
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
  SMD_CHECK(cudaFree(d));
}

// Thread 0 chases from *cursor: `steps` untimed (every slot once: caches and TLB warm), then n and 2n timed steps.
template <class Load>
__global__ void __launch_bounds__(32, 1) lap_kernel(uint64_t* cursor, int steps, mem::Slope* out) {
  if (threadIdx.x != 0) return;
  uint64_t p[1] = {*cursor};  // from global memory: the cursor lives in a vector register
  mem::chase<Load, 1>(p, steps);
  mem::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
  mem::chase<Load, 1>(p, steps);
  s.c1 = smd::clock_cycles();
  mem::chase<Load, 1>(p, 2 * steps);
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  *out = s;
  *cursor = p[0];
}

// `repeats` timed launches of lap_kernel<Load> over the cycle from `start` (after one untimed launch): a `latency`
// record of the mean cycles per load over each launch's 3n timed steps, with the counter values `expect` claims.
template <class Load>
void measure_laps(const std::string& id, const std::map<std::string, long>& point, int repeats, uint64_t start,
                  int steps, std::vector<std::pair<std::string, double>> expect) {
  mem::ChaseScratch scratch;
  smd::Record rec{id, point, "latency", "cycle"};
  std::vector<double> cycles, clock;
  for (int r = -1; r < repeats; ++r) {
    SMD_CHECK(cudaMemcpy(scratch.cursors, &start, sizeof(start), cudaMemcpyHostToDevice));
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"), r >= 0);
      lap_kernel<Load><<<1, 32>>>(scratch.cursors, steps, scratch.out);
      SMD_CHECK(cudaGetLastError());
      SMD_CHECK(cudaDeviceSynchronize());
    }
    mem::Slope s;
    uint64_t end = 0;
    SMD_CHECK(cudaMemcpy(&s, scratch.out, sizeof(s), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(&end, scratch.cursors, sizeof(end), cudaMemcpyDeviceToHost));
    if (end != start) smd::fail("chase did not come back to its start after whole laps: the cycle is broken");
    if (const std::string why = mem::phase_mismatch(s); !why.empty()) {
      std::fprintf(stderr, "%s %s: %s\n", id.c_str(), smd::params_json(point).c_str(), why.c_str());
      return;
    }
    if (r < 0) continue;
    rec.samples.push_back(mem::mean_step(s, steps));
    cycles.push_back(double(s.c2 - s.c0)), clock.push_back(mem::mhz(s));
    rec.smid = int(s.smid);
  }
  rec.cycles = smd::median(cycles), rec.clock_mhz = smd::median(clock), rec.iterations = steps;
  rec.variant = expect.empty() ? "" : "timed", rec.expect = std::move(expect);
  smd::emit(rec);
}

// An integer attribute of the current device.
inline long attribute(cudaDeviceAttr what) {
  int dev = 0, v = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&v, what, dev));
  return v;
}

}  // namespace geo
