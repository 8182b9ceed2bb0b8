// Shared pieces of the scheduler families: the pipe operations they time, device buffers, the
// per-warp stamp (clocks, SM, %warpid) that a launch's host side analyses and the warps an SM held at once.
#pragma once
#include <vector>

#include "../common/harness.cuh"

// Op types live at global scope so kernel symbols demangle as pipe_loop<Ffma,8>.
// One dependent step on one pipe; a and b come from memory so nothing folds.
struct Ffma {
  using T = float;
  static constexpr const char* name = "Ffma";
  static constexpr T a = 0.999f, b = 0.001f;
  __device__ static T apply(T x, T a, T b) {
    asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(a), "f"(b));
    return x;
  }
};

struct Iadd3 {
  using T = unsigned;
  static constexpr const char* name = "Iadd3";
  static constexpr T a = 1, b = 3;
  __device__ static T apply(T x, T a, T b) {  // two adds: one IADD3
    asm volatile("{add.u32 %0, %0, %1; add.u32 %0, %0, %2;}" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

struct Ex2 {
  using T = float;
  static constexpr const char* name = "Ex2";
  static constexpr T a = 0.f, b = 0.f;
  __device__ static T apply(T x, T, T) {  // x = 2^-x stays bounded; the negation folds into MUFU
    asm volatile("{.reg .f32 t; neg.f32 t, %0; ex2.approx.ftz.f32 %0, t;}" : "+f"(x));
    return x;
  }
};

namespace sched {

__device__ __forceinline__ unsigned warp_id() {
  unsigned w;
  asm volatile("mov.u32 %0, %%warpid;" : "=r"(w));
  return w;
}

// What lane 0 of each warp records: its timed region, SM and hardware warp slot.
struct WarpStamp {
  smd::Stamp s;
  unsigned warpid;
};

// Most intervals open at once: sweep over starts (+1) and ends (-1), ends first on ties.
inline int max_overlap(std::vector<std::pair<long long, int>> events) {
  std::sort(events.begin(), events.end());
  int open = 0, most = 0;
  for (const auto& e : events) most = std::max(most, open += e.second);
  return most;
}

// Each SM's warp stamps.
inline std::map<unsigned, std::vector<smd::Stamp>> by_sm(const std::vector<WarpStamp>& st) {
  std::map<unsigned, std::vector<smd::Stamp>> out;
  for (const auto& w : st) out[w.s.smid].push_back(w.s);
  return out;
}

// The most of these warps (of one SM) whose timed regions overlap: the warps it held at once.
inline int resident(const std::vector<smd::Stamp>& warps) {
  std::vector<std::pair<long long, int>> events;
  for (const auto& s : warps) events.push_back({s.c0, 1}), events.push_back({s.c1, -1});
  return max_overlap(events);
}

// One attribute of the current device.
inline int attribute(cudaDeviceAttr what) {
  int dev = 0, v = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&v, what, dev));
  return v;
}

// A device array that frees itself; `host()` copies it back.
template <class T>
struct Buffer {
  T* ptr = nullptr;
  size_t n;
  explicit Buffer(size_t count) : n(count) {
    SMD_CHECK(cudaMalloc(&ptr, n * sizeof(T)));
    SMD_CHECK(cudaMemset(ptr, 0, n * sizeof(T)));
  }
  Buffer(const Buffer&) = delete;
  ~Buffer() { cudaFree(ptr); }
  std::vector<T> host() const {
    std::vector<T> out(n);
    SMD_CHECK(cudaMemcpy(out.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost));
    return out;
  }
  void upload(const std::vector<T>& v) {
    SMD_CHECK(cudaMemcpy(ptr, v.data(), std::min(n, v.size()) * sizeof(T), cudaMemcpyHostToDevice));
  }
};

// `ILP` independent chains of `Op`, kDepth steps per iteration, in the warps of `active` (bit w =
// warp w of the CTA); the others exit at once. 32 registers at most, so two 1024-thread CTAs fit an SM.
constexpr int kDepth = 256;
template <class Op, int ILP>
__global__ void __launch_bounds__(1024, 2)
    pipe_loop(const typename Op::T* in, typename Op::T* sink, WarpStamp* stamps, int iters,
              unsigned long long active, int flag) {
  using T = typename Op::T;
  const unsigned w = threadIdx.x / 32;
  if (!((active >> w) & 1ull)) return;
  T v[ILP];
#pragma unroll
  for (int i = 0; i < ILP; ++i) v[i] = in[2 + i];
  const T a = in[0], b = in[1];
  const long long c0 = smd::clock_cycles();
  const unsigned long long n0 = smd::clock_ns();
#pragma unroll 1
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int d = 0; d < kDepth; ++d)
#pragma unroll
      for (int i = 0; i < ILP; ++i) v[i] = Op::apply(v[i], a, b);
  const long long c1 = smd::clock_cycles();
  const unsigned long long n1 = smd::clock_ns();
  if (threadIdx.x % 32 == 0)
    stamps[blockIdx.x * (blockDim.x / 32) + w] = {{c0, c1, n0, n1, smd::sm_id()}, warp_id()};
  if (flag)  // never true at run time, unknown to the compiler: keeps the chains alive
#pragma unroll
    for (int i = 0; i < ILP; ++i) sink[threadIdx.x * ILP + i] = v[i];
}

// The kernel's inputs: a, b, then one distinct start value per chain.
template <class Op>
std::vector<typename Op::T> inputs() {
  std::vector<typename Op::T> in{Op::a, Op::b};
  for (int i = 0; i < 8; ++i) in.push_back(typename Op::T(1 + i));
  return in;
}

// `pipe_loop<Op, ILP>` over `ctas` CTAs of `warps` warps each; every warp's stamp, after checking
// that each active warp wrote one.
template <class Op, int ILP>
std::vector<WarpStamp> run_pipe_loop(int ctas, int warps, int iters, unsigned long long active) {
  Buffer<typename Op::T> in(2 + 8), sink(size_t(warps) * 32 * ILP);
  Buffer<WarpStamp> stamps(size_t(ctas) * warps);
  in.upload(inputs<Op>());
  pipe_loop<Op, ILP><<<ctas, warps * 32>>>(in.ptr, sink.ptr, stamps.ptr, iters, active, 0);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
  auto out = stamps.host();
  for (size_t i = 0; i < out.size(); ++i)
    if (((active >> (i % warps)) & 1ull) && out[i].s.c1 <= out[i].s.c0)
      smd::fail(std::string(Op::name) + ": warp " + std::to_string(i) + " recorded no timed region");
  return out;
}

// What --list says of one pipe_loop instantiation.
template <class Op, int ILP>
smd::KernelInfo pipe_kernel(std::map<std::string, long> params, long iters) {
  return {params, "", long(kDepth) * ILP, iters,
          "pipe_loop<" + std::string(Op::name) + "," + std::to_string(ILP) + ">"};
}

}  // namespace sched
