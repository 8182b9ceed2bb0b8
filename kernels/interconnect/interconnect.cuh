// Shared pieces of the interconnect category: GPU indices of a parameter point, peer access, warm-up of
// every GPU a point uses, a verifiable data pattern, and the two-count slope of a dependent chain.
// GPU parameters (src, dst, gpu, mem) count from the job's GPU: index i is CUDA device (--device + i) mod
// the device count, so src=0 is always the job's GPU and the rest of the host's GPUs follow it.
#pragma once
#include <cstdint>
#include <set>
#include <string>

#include "../common/harness.cuh"
#include "../common/slope.cuh"

namespace ic {

// The job's GPU (--device): the device current when the first point of the process resolves its GPUs.
inline int base_device() {
  static const int dev = [] {
    int d = 0;
    SMD_CHECK(cudaGetDevice(&d));
    return d;
  }();
  return dev;
}

inline int device_count() {
  int n = 0;
  SMD_CHECK(cudaGetDeviceCount(&n));
  return n;
}

// Leave the idle clock on `dev` (once per process; run_named already warmed the job's GPU).
inline void warm(int dev) {
  static std::set<int> done{base_device()};
  if (done.insert(dev).second) {
    SMD_CHECK(cudaSetDevice(dev));
    smd::warm_up();
  }
}

// Map peer `b`'s memory into `a` (no error if it already is).
inline void enable_peer(int a, int b) {
  SMD_CHECK(cudaSetDevice(a));
  const cudaError_t err = cudaDeviceEnablePeerAccess(b, 0);
  if (err == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();
  } else {
    SMD_CHECK(err);
  }
}

// The CUDA devices of GPU parameters `ka` and `kb` of a point, peer access enabled both ways between them
// and both warmed up; false (and a static row with the reason) where this host lacks the GPUs or peer access.
inline bool resolve(const std::string& id, const std::map<std::string, long>& point, const char* ka, const char* kb,
                    int& a, int& b) {
  const int base = base_device(), n = device_count();
  const long ia = smd::param(point, ka), ib = smd::param(point, kb);
  if (ia < 0 || ib < 0) smd::fail(std::string(ka) + " and " + kb + " are GPU indices >= 0", 2);
  if (std::max(ia, ib) >= n) {
    smd::static_point(id, point, "needs " + std::to_string(std::max(ia, ib) + 1) + " GPUs with peer access; " +
                                      std::to_string(n) + " present");
    return false;
  }
  a = int((base + ia) % n), b = int((base + ib) % n);
  if (a != b) {
    int ab = 0, ba = 0;
    SMD_CHECK(cudaDeviceCanAccessPeer(&ab, a, b));
    SMD_CHECK(cudaDeviceCanAccessPeer(&ba, b, a));
    if (!ab || !ba) {
      smd::static_point(id, point, "needs 2 GPUs with peer access; GPUs " + std::to_string(a) + " and " +
                                        std::to_string(b) + " lack it (cudaDeviceCanAccessPeer)");
      return false;
    }
    enable_peer(a, b);
    enable_peer(b, a);
  }
  warm(a);
  warm(b);
  return true;
}

// Word w of a pattern buffer holds w + seed: the word sum of n words has a closed form (mod 2^32).
__global__ void fill_kernel(uint32_t* p, long words, uint32_t seed) {
  for (long w = blockIdx.x * long(blockDim.x) + threadIdx.x; w < words; w += long(gridDim.x) * blockDim.x)
    p[w] = uint32_t(w) + seed;
}

__global__ void sum_kernel(const uint4* p, long nvec, unsigned* out) {
  uint32_t acc = 0;
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < nvec; i += long(gridDim.x) * blockDim.x) {
    const uint4 v = p[i];
    acc += v.x + v.y + v.z + v.w;
  }
  atomicAdd(out, acc);
}

inline uint32_t pattern_sum(long words, uint32_t seed) {
  const uint64_t n = uint64_t(words);
  return uint32_t(n * (n - 1) / 2 + n * seed);
}

// Fill `bytes` (a multiple of 16) of device memory on `dev` with the pattern.
inline void fill(int dev, void* p, long bytes, uint32_t seed) {
  SMD_CHECK(cudaSetDevice(dev));
  fill_kernel<<<1024, 256>>>(static_cast<uint32_t*>(p), bytes / 4, seed);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
}

// Word sum of `bytes` of device memory on `dev`.
inline uint32_t checksum(int dev, const void* p, long bytes) {
  SMD_CHECK(cudaSetDevice(dev));
  unsigned* out = nullptr;
  SMD_CHECK(cudaMalloc(&out, sizeof(unsigned)));
  SMD_CHECK(cudaMemset(out, 0, sizeof(unsigned)));
  sum_kernel<<<1024, 256>>>(static_cast<const uint4*>(p), bytes / 16, out);
  SMD_CHECK(cudaGetLastError());
  uint32_t got = 0;
  SMD_CHECK(cudaMemcpy(&got, out, sizeof(got), cudaMemcpyDeviceToHost));
  SMD_CHECK(cudaFree(out));
  return got;
}

// A device buffer on one GPU, freed on that GPU.
struct Buffer {
  int dev = 0;
  void* ptr = nullptr;
  Buffer(int d, long bytes) : dev(d) {
    SMD_CHECK(cudaSetDevice(d));
    SMD_CHECK(cudaMalloc(&ptr, bytes));
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    cudaSetDevice(dev);
    cudaFree(ptr);
  }
};

using smd::mhz;
using smd::per_step;
using smd::Slope;

// Why the two timed phases disagree (2n steps should take about twice n), or "" when they agree.
inline std::string phase_mismatch(const Slope& s) { return smd::phase_mismatch(s, "timed"); }

// --list entry of one kernel.
inline smd::KernelInfo kernel(const std::string& symbol, long ops, long iterations) {
  return {{}, "timed", ops, iterations, symbol};
}

}  // namespace ic
