// Ping-pong between two GPUs: one thread on GPU `src` and one on GPU `dst` bounce a flag that lives in src's
// memory (ld.acquire.sys polls, st.release.sys hand-offs); the round-trip time is the %globaltimer span of
// kRounds round trips after kWarmRounds. Both kernels run at once (a stream on each GPU, then both are
// synchronized); src == dst runs both threads on one GPU (two streams), the on-chip reference. A thread that
// waits more than kTimeoutNs gives up, so a pair that does not run concurrently fails with one line.
#include "interconnect.cuh"

constexpr int kWarmRounds = 64;
constexpr int kRounds = 4096;
constexpr unsigned long long kTimeoutNs = 1000000000;

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_release(unsigned* p, unsigned v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// What each side reports: its clocks over the timed rounds (pinger) and whether it gave up waiting.
struct Side {
  long long c0, c1;
  unsigned long long ns0, ns1;
  unsigned smid, timed_out;
};

// Round i of `role`: wait for the partner's 2i + role, hand over 2i + role + 1; false if the wait timed out.
__device__ __forceinline__ bool round_trip(unsigned* flag, int role, int i, unsigned long long deadline) {
  const unsigned want = 2u * i + role;
  while (load_acquire(flag) != want)
    if (smd::clock_ns() > deadline) return false;
  store_release(flag, want + 1);
  return true;
}

// Role 0 (ping) waits for 2i and writes 2i+1; role 1 (pong) waits for 2i+1 and writes 2i+2. The warm rounds and the
// timed rounds are two loops, so the clock read that starts the timing sits between them, not inside a loop (the
// timed loop of the SASS checks is then the timed rounds' loop, not the poll loop of one round).
__global__ void ping_pong(unsigned* flag, int role, Side* out) {
  const unsigned long long deadline = smd::clock_ns() + kTimeoutNs;
  Side s{};
  int i = 0;
  for (; i < kWarmRounds; ++i)
    if (!round_trip(flag, role, i, deadline)) {
      s.timed_out = 1;
      *out = s;
      return;
    }
  if (role == 0) s.ns0 = smd::clock_ns(), s.c0 = smd::clock_cycles();
  for (; i < kWarmRounds + kRounds; ++i)
    if (!round_trip(flag, role, i, deadline)) {
      s.timed_out = 1;
      *out = s;
      return;
    }
  if (role == 0) {  // the last round trip ends when pong's final hand-off arrives
    while (load_acquire(flag) != 2u * (kWarmRounds + kRounds))
      if (smd::clock_ns() > deadline) {
        s.timed_out = 1;
        break;
      }
    s.c1 = smd::clock_cycles(), s.ns1 = smd::clock_ns();
  }
  s.smid = smd::sm_id();
  *out = s;
}

void run_ping_pong(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  int src = 0, dst = 0;
  if (!ic::resolve(id, point, "src", "dst", src, dst)) return;
  ic::Buffer flag(src, sizeof(unsigned)), ping(src, sizeof(Side)), pong(dst, sizeof(Side));
  auto* f = static_cast<unsigned*>(flag.ptr);
  cudaStream_t s1, s2;
  SMD_CHECK(cudaSetDevice(src));
  SMD_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  SMD_CHECK(cudaSetDevice(dst));
  SMD_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  smd::Record rec{id, point, "round_trip", "ns"};
  std::vector<double> cycles, clock;
  for (int r = -1; r < repeats; ++r) {  // r = -1: untimed first exchange
    SMD_CHECK(cudaSetDevice(src));
    SMD_CHECK(cudaMemset(f, 0, sizeof(unsigned)));
    SMD_CHECK(cudaDeviceSynchronize());
    ping_pong<<<1, 1, 0, s1>>>(f, 0, static_cast<Side*>(ping.ptr));
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaSetDevice(dst));
    ping_pong<<<1, 1, 0, s2>>>(f, 1, static_cast<Side*>(pong.ptr));
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaStreamSynchronize(s2));
    SMD_CHECK(cudaSetDevice(src));
    SMD_CHECK(cudaStreamSynchronize(s1));
    Side a{}, b{};
    unsigned last = 0;
    SMD_CHECK(cudaMemcpy(&a, ping.ptr, sizeof(a), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(&b, pong.ptr, sizeof(b), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(&last, f, sizeof(last), cudaMemcpyDeviceToHost));
    if (a.timed_out || b.timed_out || last != 2u * (kWarmRounds + kRounds)) {
      std::fprintf(stderr, "%s %s: ping-pong gave up after 1 s (flag at %u of %u): the two kernels did not run "
                   "concurrently or a hand-off was lost\n", id.c_str(), smd::params_json(point).c_str(), last,
                   2u * (kWarmRounds + kRounds));
      return;
    }
    if (r < 0) continue;
    rec.samples.push_back(double(a.ns1 - a.ns0) / kRounds);
    cycles.push_back(double(a.c1 - a.c0));
    clock.push_back(a.ns1 > a.ns0 ? (a.c1 - a.c0) * 1e3 / double(a.ns1 - a.ns0) : 0.0);
    rec.smid = int(a.smid);
  }
  SMD_CHECK(cudaStreamDestroy(s1));
  SMD_CHECK(cudaSetDevice(dst));
  SMD_CHECK(cudaStreamDestroy(s2));
  rec.cycles = smd::median(cycles), rec.clock_mhz = smd::median(clock), rec.iterations = kRounds;
  smd::emit(rec);
}

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv, {{"ping_pong", [] { return std::vector{ic::kernel("ping_pong", 1, kRounds)}; }, run_ping_pong}});
}
