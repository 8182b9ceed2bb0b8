// Shared pieces of the gemm families: device-side operand fill, the comparison of two outputs, the SM clock
// read right after a timed launch, and the TFLOPS of a launch time.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "../common/harness.cuh"

namespace gemm {

// A 64-bit mix of (seed, index): the operands are a function of their position, so any run can regenerate them.
__host__ __device__ inline uint64_t mix(uint64_t x) {
  x ^= x >> 33, x *= 0xff51afd7ed558ccdULL, x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

// Uniform bf16 values in [-1, 1).
__global__ void fill_bf16(__nv_bfloat16* out, long n, uint64_t seed) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n; i += long(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16(float(mix(seed * 0x9e3779b97f4a7c15ULL + i) >> 40) * 0x1p-23f - 1.0f);
}

// Bits of the largest |d - ref| and largest |ref| (non-negative floats order like their bit patterns).
__global__ void compare_bf16(const __nv_bfloat16* d, const __nv_bfloat16* ref, long n, unsigned* max_bits) {
  float diff = 0, mag = 0;
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n; i += long(gridDim.x) * blockDim.x) {
    const float r = __bfloat162float(ref[i]);
    diff = fmaxf(diff, fabsf(__bfloat162float(d[i]) - r)), mag = fmaxf(mag, fabsf(r));
  }
  atomicMax(&max_bits[0], __float_as_uint(diff));
  atomicMax(&max_bits[1], __float_as_uint(mag));
}

// max |d - ref| / max |ref| over n elements, on the device.
inline double max_rel_err(const __nv_bfloat16* d, const __nv_bfloat16* ref, long n) {
  unsigned* bits = nullptr;
  SMD_CHECK(cudaMalloc(&bits, 2 * sizeof(unsigned)));
  SMD_CHECK(cudaMemset(bits, 0, 2 * sizeof(unsigned)));
  compare_bf16<<<1024, 256>>>(d, ref, n, bits);
  SMD_CHECK(cudaGetLastError());
  unsigned host[2];
  SMD_CHECK(cudaMemcpy(host, bits, sizeof(host), cudaMemcpyDeviceToHost));
  SMD_CHECK(cudaFree(bits));
  float diff, mag;
  std::memcpy(&diff, &host[0], 4), std::memcpy(&mag, &host[1], 4);
  if (!(mag > 0)) smd::fail("the reference GEMM output is all zero: the comparison would prove nothing");
  return double(diff) / mag;
}

__global__ void clock_probe(smd::Stamp* out, long long cycles) {
  smd::Stamp s;
  s.ns0 = smd::clock_ns(), s.c0 = smd::clock_cycles();
  while (smd::clock_cycles() - s.c0 < cycles) {
  }
  s.c1 = smd::clock_cycles(), s.ns1 = smd::clock_ns(), s.smid = smd::sm_id();
  *out = s;
}

// The SM clock (MHz) just after a timed launch: ~200k cycles of clock64 over the global timer on one SM.
inline smd::Span clock_now() {
  smd::Stamp* d = nullptr;
  SMD_CHECK(cudaMalloc(&d, sizeof(smd::Stamp)));
  clock_probe<<<1, 1>>>(d, 200000);
  SMD_CHECK(cudaGetLastError());
  std::vector<smd::Stamp> s(1);
  SMD_CHECK(cudaMemcpy(s.data(), d, sizeof(smd::Stamp), cudaMemcpyDeviceToHost));
  SMD_CHECK(cudaFree(d));
  return smd::span(s);
}

inline double tflops(long m, long n, long k, double ms) { return 2.0 * m * n * k / (ms * 1e-3) / 1e12; }

// M = N = `mn` and K = `k` of a sweep point, checked against the tile the kernel needs them to be a multiple of.
struct Shape {
  long m, n, k;
};
inline Shape shape(const std::map<std::string, long>& point, long multiple) {
  const long mn = smd::param(point, "mn"), k = smd::param(point, "k");
  if (mn < multiple || k < multiple || mn % multiple || k % multiple || mn > 32768 || k > 32768)
    smd::fail("mn and k must be multiples of " + std::to_string(multiple) + " in " + std::to_string(multiple) +
                  "..32768, got mn=" + std::to_string(mn) + " k=" + std::to_string(k),
              2);
  return {mn, mn, k};
}

}  // namespace gemm
