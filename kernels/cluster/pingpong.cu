// Inter-SM round trip: a persistent grid of exactly one CTA per SM (its shared memory fills more than half an
// SM); the CTA that finds itself on SM a (%smid) and the one on SM b bounce a flag through global memory
// (atom.exch to hand the turn over, ld.acquire.gpu to poll for it). Round trip cycles as the slope over n and
// 2n trips. a == b: two warps of the one CTA on that SM play both sides (the same-SM round trip).
#include "cluster.cuh"

constexpr int kTrips = 256;  // timed round trips: n, then 2n
constexpr int kThreads = 64;
constexpr unsigned long long kPatienceNs = 2000000000ull;  // a side that waits 2 s for its turn gives up

__device__ __forceinline__ void hand_over(unsigned* flag, unsigned v) {
  asm volatile("{ .reg .b32 old; atom.relaxed.gpu.global.exch.b32 old, [%0], %1; }" ::"l"(flag), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned poll(const unsigned* flag) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
  return v;
}

// Wait until *flag == want; false if that took longer than kPatienceNs (the partner is not running).
__device__ __forceinline__ bool await(const unsigned* flag, unsigned want, unsigned long long since) {
  while (poll(flag) != want)
    if (smd::clock_ns() - since > kPatienceNs) return false;
  return true;
}

// Side A starts trip i by writing 2i+1 and ends it on reading 2i+2, which side B writes on reading 2i+1.
// status[0] counts the sides that ran, status[1] the sides that gave up waiting.
__global__ void pingpong_kernel(unsigned* flag, int sm_a, int sm_b, cl::Slope* out, unsigned* status) {
  const int smid = int(smd::sm_id()), warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const bool a = lane == 0 && smid == sm_a && warp == 0;
  const bool b = lane == 0 && smid == sm_b && warp == (sm_a == sm_b ? 1 : 0);
  if (!a && !b) return;
  atomicAdd(&status[0], 1u);
  const unsigned long long start = smd::clock_ns();
  if (b) {
    for (unsigned i = 0; i < 3 * kTrips; ++i) {
      if (!await(flag, 2 * i + 1, start)) return (void)atomicAdd(&status[1], 1u);
      hand_over(flag, 2 * i + 2);
    }
    return;
  }
  cl::Slope s;
  unsigned i = 0;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
#pragma unroll 1
  for (; i < kTrips; ++i) {
    hand_over(flag, 2 * i + 1);
    if (!await(flag, 2 * i + 2, start)) return (void)atomicAdd(&status[1], 1u);
  }
  s.c1 = smd::clock_cycles();
#pragma unroll 1
  for (; i < 3 * kTrips; ++i) {
    hand_over(flag, 2 * i + 1);
    if (!await(flag, 2 * i + 2, start)) return (void)atomicAdd(&status[1], 1u);
  }
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = unsigned(smid);
  *out = s;
}

void run_pingpong(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long sm_a = smd::param(point, "sm_a"), sm_b = smd::param(point, "sm_b");
  int dev = 0, sms = 0, optin = 0, per_sm = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  SMD_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  SMD_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  if (sm_a < 0 || sm_b < 0) smd::fail("sm_a and sm_b must be >= 0", 2);
  if (sm_a >= sms || sm_b >= sms)
    return smd::static_point(id, point, "this GPU has " + std::to_string(sms) + " SMs (ids 0.." +
                                            std::to_string(sms - 1) + ")");
  const int smem = std::min(optin, per_sm / 2 + 1024);  // more than half an SM: one CTA per SM
  SMD_CHECK(cudaFuncSetAttribute(pingpong_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  unsigned *dflag, *dstatus;
  cl::Slope* dout;
  SMD_CHECK(cudaMalloc(&dflag, 128));
  SMD_CHECK(cudaMalloc(&dstatus, 2 * sizeof(unsigned)));
  SMD_CHECK(cudaMalloc(&dout, sizeof(cl::Slope)));
  smd::Record rec{id, point, "round_trip", "cycle"};
  std::vector<double> cycles, clock;
  for (int r = -1; r < repeats; ++r) {  // r = -1: untimed first launch
    SMD_CHECK(cudaMemset(dflag, 0, 128));
    SMD_CHECK(cudaMemset(dstatus, 0, 2 * sizeof(unsigned)));
    SMD_CHECK(cudaMemset(dout, 0, sizeof(cl::Slope)));
    if (r < 0) {
      pingpong_kernel<<<sms, kThreads, smem>>>(dflag, int(sm_a), int(sm_b), dout, dstatus);
    } else {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      pingpong_kernel<<<sms, kThreads, smem>>>(dflag, int(sm_a), int(sm_b), dout, dstatus);
    }
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaDeviceSynchronize());
    unsigned status[2], last = 0;
    cl::Slope s;
    SMD_CHECK(cudaMemcpy(status, dstatus, sizeof(status), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(&last, dflag, sizeof(last), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(&s, dout, sizeof(s), cudaMemcpyDeviceToHost));
    if (status[0] != 2 || status[1] != 0)
      smd::fail("ping-pong " + std::to_string(sm_a) + " <-> " + std::to_string(sm_b) + ": " +
                std::to_string(status[0]) + " side(s) ran, " + std::to_string(status[1]) +
                " gave up waiting (one CTA per SM was not resident on every SM)");
    if (last != 6u * kTrips) smd::fail("ping-pong ended with flag " + std::to_string(last) + ", not 6 x trips");
    if (r < 0) continue;
    rec.samples.push_back(cl::per_step(s, kTrips));
    cycles.push_back(double(s.c2 - s.c0)), clock.push_back(cl::mhz(s));
    rec.smid = int(s.smid);
  }
  SMD_CHECK(cudaFree(dflag));
  SMD_CHECK(cudaFree(dstatus));
  SMD_CHECK(cudaFree(dout));
  rec.cycles = smd::median(cycles), rec.clock_mhz = smd::median(clock), rec.iterations = kTrips;
  rec.variant = "timed";
  smd::emit(rec);
}

// ops 1: one hand-over (ATOMG.EXCH) and one poll loop (LDG) per trip, the timed loop's pass.
int main(int argc, char** argv) {
  return smd::family_main(argc, argv,
                          {{"sm_pingpong", [] { return std::vector{cl::kernel("pingpong_kernel", 1, kTrips)}; },
                            run_pingpong}});
}
