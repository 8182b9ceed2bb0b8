// CTA barriers and what waits like one: bar.sync (__syncthreads) against warps per CTA, named barriers of half the
// CTA each, the bar.arrive / bar.sync producer-consumer round trip, bar.warp.sync (__syncwarp) with a full mask, the
// grid-wide barrier of a cooperative launch (cooperative_groups grid.sync()) and nanosleep's real sleep. Every
// figure but nanosleep's is the slope between n and 2n steps of thread 0's clock (smd::Slope), so clock reads and
// loop overhead cancel; every thread of the CTA (the grid, for grid.sync) takes part in every barrier.
#include <cooperative_groups.h>

#include "sync.cuh"

namespace cg = cooperative_groups;

constexpr int kSteps = 256;  // timed barriers: n, then 2n
constexpr int kUnroll = 32;  // barriers per pass of the timed loop
// syncwarp's IMAD steps, n: ~4 cycles each, so its shorter phase spans ~16k cycles, where one cold instruction fetch
// (hundreds of cycles) cannot unbalance the two phases as it did at 256 steps (~1k cycles)
constexpr int kWarpSteps = 4096;
constexpr int kGridSteps = 64;
constexpr int kSleepUnroll = 8;

__device__ __forceinline__ void bar_sync_0() { asm volatile("bar.sync 0;" ::: "memory"); }

// Thread 0's slope of `steps` then 2 x `steps` calls of body(); every thread runs the same loops.
template <class Body>
__device__ __forceinline__ void timed(int steps, sy::Slope* out, Body body) {
  sy::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
#pragma unroll 1
  for (int i = 0; i < steps; i += kUnroll)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) body();
  s.c1 = smd::clock_cycles();
#pragma unroll 1
  for (int i = 0; i < 2 * steps; i += kUnroll)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) body();
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  if (threadIdx.x == 0) *out = s;
}

// bar.sync 0 (what __syncthreads() compiles to) by every thread of a CTA of `warps` warps. Every CTA kernel here
// starts with one barrier, so that no warp's late start lands in the first timed phase.
__global__ void bar_sync_kernel(int steps, sy::Slope* out) {
  __syncthreads();
  timed(steps, out, [] { bar_sync_0(); });
}

// Two named barriers at once: warps of the first half sync on barrier 1 (timed), the second half on barrier 2, each
// with a thread count of half the CTA (bar.sync id, count; an immediate id, so ptxas need not pack id and count into
// one register each step as it does for two register operands).
__global__ void bar_named_kernel(int steps, sy::Slope* out) {
  const unsigned half = blockDim.x / 2;
  __syncthreads();
  if (threadIdx.x < half) {
    timed(steps, out, [&] { asm volatile("bar.sync 1, %0;" ::"r"(half) : "memory"); });
  } else {
#pragma unroll 1
    for (int i = 0; i < 3 * steps; i += kUnroll)
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) asm volatile("bar.sync 2, %0;" ::"r"(half) : "memory");
  }
}

// Producer / consumer: the first half of the warps arrive on barrier 1 (bar.arrive: no wait) and wait on barrier 2;
// the second half wait on 1 and arrive on 2. One step of the producers' loop is the round trip through both.
__global__ void bar_arrive_kernel(int steps, sy::Slope* out) {
  const unsigned all = blockDim.x;
  __syncthreads();
  if (threadIdx.x < all / 2) {
    timed(steps, out, [&] {
      asm volatile("bar.arrive 1, %0;" ::"r"(all) : "memory");
      asm volatile("bar.sync 2, %0;" ::"r"(all) : "memory");
    });
  } else {
#pragma unroll 1
    for (int i = 0; i < 3 * steps; i += kUnroll)
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        asm volatile("bar.sync 1, %0;" ::"r"(all) : "memory");
        asm volatile("bar.arrive 2, %0;" ::"r"(all) : "memory");
      }
  }
}

// One warp's dependent mad.lo.u32 chain (x = x * k + 1, k = 1 at run time: ptxas cannot fold it as it folds a chain of
// adds into one IMAD), with bar.warp.sync -1 (what __syncwarp() compiles to) after each step where SYNC: the
// difference of the two is what the warp barrier adds to a step.
template <int SYNC>
__global__ void syncwarp_kernel(unsigned k, int steps, sy::Slope* out, unsigned* sink) {
  unsigned x = threadIdx.x;
  timed(steps, out, [&] {
    asm volatile("mad.lo.u32 %0, %0, %1, 1;" : "+r"(x) : "r"(k));
    if (SYNC) asm volatile("bar.warp.sync -1;" ::: "memory");
  });
  if (x == 0xdeadbeef) *sink = x;
}

// The whole grid's barrier: every thread of every CTA calls grid.sync(), one per pass of the timed loop, after an
// untimed one that waits for the last CTA to start (else the launch's spread of CTA starts lands in the first phase).
__global__ void grid_sync_kernel(int steps, sy::Slope* out) {
  cg::grid_group grid = cg::this_grid();
  grid.sync();
  sy::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
#pragma unroll 1
  for (int i = 0; i < steps; ++i) grid.sync();
  s.c1 = smd::clock_cycles();
#pragma unroll 1
  for (int i = 0; i < 2 * steps; ++i) grid.sync();
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  if (blockIdx.x == 0 && threadIdx.x == 0) *out = s;
}

// Both clocks at the three reads of the nanosleep loop: clock64 and %globaltimer.
struct Sleep {
  long long c[3];
  unsigned long long ns[3];
  unsigned smid;
};

// One thread sleeps `request` ns, n then 2n times, reading both clocks between the phases.
__global__ void nanosleep_kernel(unsigned request, int steps, Sleep* out) {
  Sleep s;
  auto sleeps = [&](int count) {
#pragma unroll 1
    for (int i = 0; i < count; i += kSleepUnroll)
#pragma unroll
      for (int u = 0; u < kSleepUnroll; ++u) asm volatile("nanosleep.u32 %0;" ::"r"(request) : "memory");
  };
  s.ns[0] = smd::clock_ns(), s.c[0] = smd::clock_cycles();
  sleeps(steps);
  s.c[1] = smd::clock_cycles(), s.ns[1] = smd::clock_ns();
  sleeps(2 * steps);
  s.c[2] = smd::clock_cycles(), s.ns[2] = smd::clock_ns();
  s.smid = smd::sm_id();
  *out = s;
}

// A CTA size given as warps: 1..32.
int warps_param(const std::map<std::string, long>& point, long lowest, long step) {
  const long w = smd::param(point, "warps");
  if (w < lowest || w > 32 || w % step)
    smd::fail("warps must be a multiple of " + std::to_string(step) + " in " + std::to_string(lowest) + "..32", 2);
  return int(w);
}

template <void (*Kernel)(int, sy::Slope*), int LOWEST, int STEP>
void run_cta(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const int threads = 32 * warps_param(point, LOWEST, STEP);
  sy::Slope* d;
  SMD_CHECK(cudaMalloc(&d, sizeof(sy::Slope)));
  auto launch = [&] {
    Kernel<<<1, threads>>>(kSteps, d);
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaDeviceSynchronize());
    return sy::read_slope(d);
  };
  sy::emit(sy::slope_record(id, point, kSteps, repeats, launch));
  SMD_CHECK(cudaFree(d));
}

void run_syncwarp(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long sync = smd::param(point, "sync");
  if (sync != 0 && sync != 1) smd::fail("sync must be 0 (the add chain alone) or 1 (bar.warp.sync after each add)", 2);
  sy::Slope* d;
  unsigned* sink;
  SMD_CHECK(cudaMalloc(&d, sizeof(sy::Slope)));
  SMD_CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  auto launch = [&] {
    (sync ? syncwarp_kernel<1> : syncwarp_kernel<0>)<<<1, 32>>>(1u, kWarpSteps, d, sink);
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaDeviceSynchronize());
    return sy::read_slope(d);
  };
  sy::emit(sy::slope_record(id, point, kWarpSteps, repeats, launch));
  SMD_CHECK(cudaFree(d));
  SMD_CHECK(cudaFree(sink));
}

// grid.sync() over one CTA per SM (full 0) or every CTA that fits at once (full 1), 256 threads each: cycles per
// barrier, and ns per barrier at the SM clock of the same launch (clock64 over %globaltimer).
void run_grid_sync(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long full = smd::param(point, "full");
  if (full != 0 && full != 1) smd::fail("full must be 0 (one CTA per SM) or 1 (every CTA that fits)", 2);
  constexpr int kThreads = 256;
  int dev = 0, cooperative = 0, per_sm = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, dev));
  if (!cooperative) return smd::static_point(id, point, "the device does not support cooperative launch");
  SMD_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_sync_kernel, kThreads, 0));
  const int ctas = sy::sms() * (full ? per_sm : 1);
  sy::Slope* d;
  SMD_CHECK(cudaMalloc(&d, sizeof(sy::Slope)));
  int steps = kGridSteps;
  void* args[] = {&steps, &d};
  bool refused = false;
  auto launch = [&] {
    cudaError_t err = cudaLaunchCooperativeKernel((void*)grid_sync_kernel, ctas, kThreads, args, 0, 0);
    if (err != cudaSuccess) {
      cudaGetLastError();
      refused = true;
      return sy::Slope{};
    }
    SMD_CHECK(cudaDeviceSynchronize());
    return sy::read_slope(d);
  };
  launch();
  if (refused) {
    SMD_CHECK(cudaFree(d));
    return smd::static_point(id, point, "cooperative launch of " + std::to_string(ctas) + " CTAs refused");
  }
  const std::optional<smd::Record> slope = sy::slope_record(id, point, kGridSteps, repeats, launch);
  SMD_CHECK(cudaFree(d));
  if (!slope) return;
  const smd::Record& rec = *slope;
  smd::Record ns{id, point, "time", "ns"};
  for (double cycles : rec.samples) ns.samples.push_back(cycles / rec.clock_mhz * 1e3);
  ns.cycles = rec.cycles, ns.clock_mhz = rec.clock_mhz, ns.iterations = rec.iterations, ns.smid = rec.smid;
  ns.variant = "timed";
  smd::emit(rec);
  smd::emit(ns);
}

// Sleeps per phase: enough that the shortest sleeps span many %globaltimer steps, few for the long ones.
long sleep_steps(long request) { return request >= 1000 ? 16 : 256; }

// nanosleep of `request_ns`: ns per call by %globaltimer and cycles per call by clock64, each the slope of n and 2n.
void run_nanosleep(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long request = smd::param(point, "request_ns");
  if (request < 0 || request > 1000000)
    smd::fail("request_ns must be in 0..1000000 (nanosleep's upper bound: 1 ms)", 2);
  const long steps = sleep_steps(request);
  Sleep* d;
  SMD_CHECK(cudaMalloc(&d, sizeof(Sleep)));
  auto launch = [&] {
    nanosleep_kernel<<<1, 1>>>(unsigned(request), int(steps), d);
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaDeviceSynchronize());
    Sleep s;
    SMD_CHECK(cudaMemcpy(&s, d, sizeof(s), cudaMemcpyDeviceToHost));
    return s;
  };
  launch();
  smd::Record ns{id, point, "sleep_ns", "ns"}, cycles{id, point, "sleep_cycles", "cycle"};
  std::vector<double> clock, span;
  for (int r = 0; r < repeats; ++r) {
    Sleep s;
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      s = launch();
    }
    ns.samples.push_back(double((s.ns[2] - s.ns[1]) - (s.ns[1] - s.ns[0])) / steps);
    cycles.samples.push_back(double((s.c[2] - s.c[1]) - (s.c[1] - s.c[0])) / steps);
    clock.push_back(s.ns[2] > s.ns[0] ? (s.c[2] - s.c[0]) * 1e3 / double(s.ns[2] - s.ns[0]) : 0.0);
    span.push_back(double(s.c[2] - s.c[0]));
    ns.smid = cycles.smid = int(s.smid);
  }
  for (smd::Record* rec : {&ns, &cycles}) {
    rec->cycles = smd::median(span), rec->clock_mhz = smd::median(clock), rec->iterations = steps;
    rec->variant = "timed";
    smd::emit(*rec);
  }
  SMD_CHECK(cudaFree(d));
}

int main(int argc, char** argv) {
  using sy::kernel;
  return smd::family_main(
      argc, argv,
      {{"bar_sync", [] { return std::vector{kernel("bar_sync_kernel", kUnroll, kSteps)}; },
        run_cta<bar_sync_kernel, 1, 1>},
       {"bar_named", [] { return std::vector{kernel("bar_named_kernel", kUnroll, kSteps)}; },
        run_cta<bar_named_kernel, 2, 2>},
       {"bar_arrive", [] { return std::vector{kernel("bar_arrive_kernel", kUnroll, kSteps)}; },
        run_cta<bar_arrive_kernel, 2, 2>},
       {"syncwarp",
        [] {
          return std::vector{kernel("syncwarp_kernel<0>", kUnroll, kWarpSteps, {{"sync", 0}}),
                             kernel("syncwarp_kernel<1>", kUnroll, kWarpSteps, {{"sync", 1}})};
        },
        run_syncwarp},
       {"grid_sync", [] { return std::vector{kernel("grid_sync_kernel", 1, kGridSteps)}; }, run_grid_sync},
       {"nanosleep", [] { return std::vector{kernel("nanosleep_kernel", kSleepUnroll, 16)}; }, run_nanosleep}});
}
