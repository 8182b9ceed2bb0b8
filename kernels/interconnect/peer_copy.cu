// Peer-to-peer copy bandwidth with cudaMemcpyPeerAsync, peer access enabled: unidirectional (src -> dst) and
// bidirectional (src -> dst and dst -> src at once, a stream on each GPU), versus size. src == dst is the
// same GPU's device-to-device copy: the local reference. Each timed sample holds enough copies to move at
// least kMinBytes, queued behind a held stream so the host's enqueue time is not timed; data is checked after.
#include "interconnect.cuh"

constexpr long kMinBytes = 256L << 20;            // bytes one timed sample moves per direction at least
constexpr unsigned long long kHoldNs = 1000000000;  // a held stream gives up after 1 s

// Keep a stream busy until the host has queued the timed work and sets *go (mapped host memory).
__global__ void hold(const volatile int* go) {
  const unsigned long long t0 = smd::clock_ns();
  while (*go == 0 && smd::clock_ns() - t0 < kHoldNs) {
  }
}

// The buffers of one point: a (on src) -> b (on dst), and for the reverse direction c (on dst) -> d (on src).
struct Pair {
  int src, dst;
  long bytes;
  ic::Buffer a, b, c, d;
  Pair(int s, int t, long n) : src(s), dst(t), bytes(n), a(s, n), b(t, n), c(t, n), d(s, n) {
    ic::fill(src, a.ptr, n, 1);
    ic::fill(dst, c.ptr, n, 7);
  }
};

// A host flag both GPUs can read, for `hold`.
int* go_flag() {
  static int* flag = [] {
    int* f = nullptr;
    SMD_CHECK(cudaHostAlloc(&f, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
    return f;
  }();
  return flag;
}

// Milliseconds for `copies` copies of the pair's size, one direction or both at once.
double timed_copies(Pair& p, int copies, bool both, cudaStream_t s1, cudaStream_t s2) {
  int* go = go_flag();
  *go = 0;
  cudaEvent_t start, stop, back_done;
  SMD_CHECK(cudaSetDevice(p.src));
  SMD_CHECK(cudaEventCreate(&start));
  SMD_CHECK(cudaEventCreate(&stop));
  hold<<<1, 1, 0, s1>>>(go);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaEventRecord(start, s1));
  for (int i = 0; i < copies; ++i) SMD_CHECK(cudaMemcpyPeerAsync(p.b.ptr, p.dst, p.a.ptr, p.src, p.bytes, s1));
  if (both) {  // the reverse direction on the dst GPU's stream, started by the same event, joined before stop
    SMD_CHECK(cudaSetDevice(p.dst));
    SMD_CHECK(cudaStreamWaitEvent(s2, start, 0));
    for (int i = 0; i < copies; ++i) SMD_CHECK(cudaMemcpyPeerAsync(p.d.ptr, p.src, p.c.ptr, p.dst, p.bytes, s2));
    SMD_CHECK(cudaEventCreateWithFlags(&back_done, cudaEventDisableTiming));
    SMD_CHECK(cudaEventRecord(back_done, s2));
    SMD_CHECK(cudaSetDevice(p.src));
    SMD_CHECK(cudaStreamWaitEvent(s1, back_done, 0));
  }
  SMD_CHECK(cudaEventRecord(stop, s1));
  *go = 1;
  SMD_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  SMD_CHECK(cudaEventElapsedTime(&ms, start, stop));
  SMD_CHECK(cudaEventDestroy(start));
  SMD_CHECK(cudaEventDestroy(stop));
  if (both) SMD_CHECK(cudaEventDestroy(back_done));
  return ms;
}

template <bool BOTH>
void run_copy(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  int src = 0, dst = 0;
  const long size_mb = smd::param(point, "size_mb");
  if (size_mb < 1 || size_mb > (16L << 10)) smd::fail("size_mb must be in 1..16384", 2);
  if (!ic::resolve(id, point, "src", "dst", src, dst)) return;
  Pair p(src, dst, size_mb << 20);
  cudaStream_t s1, s2;
  SMD_CHECK(cudaSetDevice(src));
  SMD_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  SMD_CHECK(cudaSetDevice(dst));
  SMD_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  const int copies = int(std::max(1L, kMinBytes / p.bytes));
  const double moved = double(p.bytes) * copies * (BOTH ? 2 : 1);
  smd::Record rec{id, point, "bandwidth", "GB/s"};
  for (int r = -1; r < repeats; ++r) {  // r = -1: untimed first sample
    const double ms = timed_copies(p, copies, BOTH, s1, s2);
    if (r >= 0) rec.samples.push_back(moved / ms / 1e6);
  }
  SMD_CHECK(cudaSetDevice(dst));
  SMD_CHECK(cudaStreamDestroy(s2));
  SMD_CHECK(cudaSetDevice(src));
  SMD_CHECK(cudaStreamDestroy(s1));
  if (ic::checksum(dst, p.b.ptr, p.bytes) != ic::pattern_sum(p.bytes / 4, 1) ||
      (BOTH && ic::checksum(src, p.d.ptr, p.bytes) != ic::pattern_sum(p.bytes / 4, 7)))
    smd::fail(id + " " + smd::params_json(point) + ": the copied data is wrong");
  rec.iterations = copies;
  smd::emit(rec);
}

int main(int argc, char** argv) {
  const auto none = [] { return std::vector<smd::KernelInfo>{}; };
  return smd::family_main(argc, argv, {{"memcpy_peer", none, run_copy<false>},
                                       {"memcpy_peer_bidir", none, run_copy<true>}});
}
