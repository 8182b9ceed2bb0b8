// Pipe independence: one CTA on one SM, warps [0, w) run op class X and warps [w, 2w) class Y, every warp
// issuing its class's independent chains for the same clock64 window. Each class's throughput alone and
// beside the other shows whether X and Y share a pipe (or the issue slot) or run side by side.
#include <cmath>
#include <cstring>
#include <tuple>
#include <utility>

#include "../common/harness.cuh"

constexpr long long kWindow = 1LL << 20;  // cycles each warp keeps issuing (about 0.5 ms at 2 GHz)
constexpr int kMaxBodies = 1 << 16;       // iteration cap, so a clock that does not advance cannot hang
constexpr int kMinBodies = 8;             // fewer bodies in the window: the body is too long to time
constexpr int kSeedWords = 10;            // per class: up to 8 chain starts and two operands
constexpr int kMaxWarps = 32;
constexpr int kLdsIlp = 8;

__shared__ unsigned lds_ring[kLdsIlp * 32];  // each word holds its own shared address: a self-loop chase

struct UniformSeed {
  unsigned v[kSeedWords];
};

// What each warp reports: its timed span, the bodies it finished in the window, whether its values are sane.
struct Tally {
  smd::Stamp stamp;
  int bodies;
  int ok;
  unsigned digest;
};

// XOR of every 32-bit word of the chain values: stored after the window, it keeps the chains alive.
template <class T, int N>
__device__ unsigned fold(const T (&v)[N]) {
  unsigned d = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    unsigned w[sizeof(T) / 4];
    std::memcpy(w, &v[i], sizeof(T));
#pragma unroll
    for (unsigned x : w) d ^= x;
  }
  return d;
}

// ILP independent chains of one scalar op (x = Op(x, a, b)), DEPTH steps per body; seeds from global memory.
template <class Op, int ILP, int DEPTH>
struct Chains {
  using T = typename Op::T;
  static constexpr int kOps = ILP * DEPTH;
  T v[ILP], a, b;
  __device__ Chains(const unsigned long long* seed, const UniformSeed&) {
    const T* s = reinterpret_cast<const T*>(seed);
#pragma unroll
    for (int i = 0; i < ILP; ++i) v[i] = s[i];
    a = s[ILP], b = s[ILP + 1];
  }
  __device__ void body() {
#pragma unroll
    for (int d = 0; d < DEPTH; ++d)
#pragma unroll
      for (int i = 0; i < ILP; ++i) v[i] = Op::apply(v[i], a, b);
  }
  __device__ bool ok() const {
    bool good = true;
#pragma unroll
    for (int i = 0; i < ILP; ++i) good &= Op::sane(v[i]);
    return good;
  }
  __device__ unsigned digest() const { return fold(v); }
  static void seed(unsigned long long* words) {
    T s[ILP + 2];
    Op::seed(s, ILP);
    std::memcpy(words, s, sizeof(s));
  }
};

struct FmaF32 {
  using T = float;
  static void seed(T* s, int n) {
    for (int i = 0; i < n; ++i) s[i] = 1.0f + i;
    s[n] = 0.999f, s[n + 1] = 0.001f;
  }
  __device__ static T apply(T x, T a, T b) {
    asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(a), "f"(b));
    return x;
  }
  __device__ static bool sane(T x) { return isfinite(x); }
};

struct FmaF16x2 {
  using T = unsigned;  // two packed halves
  static void seed(T* s, int n) {
    for (int i = 0; i < n; ++i) s[i] = 0x3C003C00u + i;  // ~(1.0, 1.0)
    s[n] = 0x3BFE3BFEu, s[n + 1] = 0x14001400u;           // ~0.999, ~0.001
  }
  __device__ static T apply(T x, T a, T b) {
    asm volatile("fma.rn.f16x2 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
  __device__ static bool sane(T x) { return (x & 0x7C00u) != 0x7C00u && (x & 0x7C000000u) != 0x7C000000u; }
};

struct Lop3 {
  using T = unsigned;
  static void seed(T* s, int n) {
    for (int i = 0; i < n; ++i) s[i] = 17u * i + 1u;
    s[n] = 0x9E3779B9u, s[n + 1] = 0x7F4A7C15u;
  }
  __device__ static T apply(T x, T a, T b) {
    asm volatile("lop3.b32 %0, %0, %1, %2, 0x96;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
  __device__ static bool sane(T) { return true; }  // every bit pattern is a valid result
};

struct MadU32 : Lop3 {
  __device__ static T apply(T x, T a, T b) {
    asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

struct FmaF64 {
  using T = double;
  static void seed(T* s, int n) {
    for (int i = 0; i < n; ++i) s[i] = 1.0 + i;
    s[n] = 0.999, s[n + 1] = 0.001;
  }
  __device__ static T apply(T x, T a, T b) {
    asm volatile("fma.rn.f64 %0, %0, %1, %2;" : "+d"(x) : "d"(a), "d"(b));
    return x;
  }
  __device__ static bool sane(T x) { return isfinite(x); }
};

// x = 2^-x: the negation folds into the MUFU operand and the chain stays bounded.
struct Ex2 {
  using T = float;
  static void seed(T* s, int n) {
    for (int i = 0; i < n + 2; ++i) s[i] = 0.5f + 0.01f * i;
  }
  __device__ static T apply(T x, T, T) {
    asm volatile("{.reg .f32 t; neg.f32 t, %0; ex2.approx.ftz.f32 %0, t;}" : "+f"(x));
    return x;
  }
  __device__ static bool sane(T x) { return isfinite(x); }
};

struct Ffma : Chains<FmaF32, 8, 16> {
  using Chains::Chains;
  static constexpr const char* kCase = "coissue_ffma";
  static constexpr const char* kPipe = "fma";  // the ncu pipe that counts every instruction of the class
};

struct Hfma2 : Chains<FmaF16x2, 8, 16> {
  using Chains::Chains;
  static constexpr const char* kCase = "coissue_hfma2";
  // Plain HFMA2 only (no HFMA2.MMA, which would count on tensor: the tests check the SASS).
  static constexpr const char* kPipe = "fma_type_fp16";
};

struct Alu : Chains<Lop3, 8, 16> {
  using Chains::Chains;
  static constexpr const char* kCase = "coissue_alu";
  static constexpr const char* kPipe = "alu";
};

struct Imad : Chains<MadU32, 8, 16> {
  using Chains::Chains;
  static constexpr const char* kCase = "coissue_imad";
  static constexpr const char* kPipe = "fma";
};

struct Fp64 : Chains<FmaF64, 8, 8> {
  using Chains::Chains;
  static constexpr const char* kCase = "coissue_fp64";
  static constexpr const char* kPipe = "fp64";
};

struct Xu : Chains<Ex2, 8, 4> {
  using Chains::Chains;
  static constexpr const char* kCase = "coissue_xu";
  static constexpr const char* kPipe = "xu";
};

// Shared-memory loads: 8 self-loop chases per lane (ld.shared v, [v]), conflict-free (lane l, word 32 i + l).
struct Lsu {
  static constexpr int kOps = kLdsIlp * 16;
  static constexpr const char* kCase = "coissue_lsu";
  unsigned v[kLdsIlp], start[kLdsIlp];
  __device__ Lsu(const unsigned long long*, const UniformSeed&) {
#pragma unroll
    for (int i = 0; i < kLdsIlp; ++i)
      v[i] = start[i] = unsigned(__cvta_generic_to_shared(&lds_ring[32 * i + threadIdx.x % 32]));
  }
  __device__ void body() {
#pragma unroll
    for (int d = 0; d < 16; ++d)
#pragma unroll
      for (int i = 0; i < kLdsIlp; ++i) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(v[i]));
  }
  __device__ bool ok() const {
    bool good = true;
#pragma unroll
    for (int i = 0; i < kLdsIlp; ++i) good &= v[i] == start[i];
    return good;
  }
  __device__ unsigned digest() const { return fold(v); }
  static void seed(unsigned long long*) {}
  static constexpr const char* kPipe = "lsu";
};

// Warp-uniform integer chains: operands from the kernel's parameters, in uniform control flow (see
// coissue_kernel). ptxas puts some chains on the uniform datapath (UIADD3, ULOP3) and the rest on the vector
// ALU, a split it chooses itself, so the class claims no single pipe (kPipe null): ncu's pipe counts show it.
struct Uniform {
  static constexpr int kIlp = 8, kDepth = 8, kOps = 2 * kIlp * kDepth;
  static constexpr const char* kCase = "coissue_uniform";
  static constexpr const char* kPipe = nullptr;
  unsigned v[kIlp], a, b;
  __device__ Uniform(const unsigned long long*, const UniformSeed& u) {
#pragma unroll
    for (int i = 0; i < kIlp; ++i) v[i] = u.v[i];
    a = u.v[8], b = u.v[9];
  }
  __device__ void body() {
#pragma unroll
    for (int d = 0; d < kDepth; ++d)
#pragma unroll
      for (int i = 0; i < kIlp; ++i) v[i] = (v[i] + a) ^ b;  // plain C++: inline PTX would stay per-thread
  }
  __device__ bool ok() const { return true; }  // every bit pattern is a valid result
  __device__ unsigned digest() const { return fold(v); }
  static void seed(unsigned long long*) {}
};

// mma.sync m16n8k16 f16 (HMMA.16816): 8 independent accumulators, 4 steps each per body.
struct Tensor {
  static constexpr int kIlp = 8, kDepth = 4, kOps = kIlp * kDepth;
  static constexpr const char* kCase = "coissue_tensor";
  unsigned a[4], b[2], c[kIlp][2];
  __device__ Tensor(const unsigned long long* seed, const UniformSeed&) {
    const unsigned* s = reinterpret_cast<const unsigned*>(seed);
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = s[0];
    b[0] = b[1] = s[1];
#pragma unroll
    for (int i = 0; i < kIlp; ++i) c[i][0] = c[i][1] = s[2] + i;
  }
  __device__ void body() {
#pragma unroll
    for (int d = 0; d < kDepth; ++d)
#pragma unroll
      for (int i = 0; i < kIlp; ++i)
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};"
            : "+r"(c[i][0]), "+r"(c[i][1])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  __device__ bool ok() const {
    bool good = true;
#pragma unroll
    for (int i = 0; i < kIlp; ++i) good &= FmaF16x2::sane(c[i][0]) && FmaF16x2::sane(c[i][1]);
    return good;
  }
  __device__ unsigned digest() const { return fold(c); }
  static void seed(unsigned long long* words) {
    const unsigned s[3] = {0x04000400u, 0x3C003C00u, 0x3C003C00u};  // A = 2^-14, B = 1: C grows by 2^-10
    std::memcpy(words, s, sizeof(s));
  }
  static constexpr const char* kPipe = "tensor";
};

// The op classes, in the order of the `x`/`y` indices of the manifest.
using Classes = std::tuple<Ffma, Hfma2, Alu, Imad, Fp64, Xu, Lsu, Uniform, Tensor>;
constexpr int kClasses = int(std::tuple_size_v<Classes>);

struct Seeds {
  unsigned long long w[kClasses][kSeedWords];
};

// One warp runs class C until the shared deadline (checked once per body).
template <class C>
__device__ Tally timed(const Seeds* seeds, const UniformSeed& u, int cls, long long deadline) {
  C chains(seeds->w[cls], u);
  const long long c0 = smd::clock_cycles();
  const unsigned long long n0 = smd::clock_ns();
  int n = 0;
#pragma unroll 1
  for (; __reduce_or_sync(~0u, n < kMaxBodies && smd::clock_cycles() < deadline); ++n) chains.body();
  const long long c1 = smd::clock_cycles();
  const unsigned long long n1 = smd::clock_ns();
  const int ok = __all_sync(0xffffffffu, chains.ok());
  return {{c0, c1, n0, n1, smd::sm_id()}, n, ok, __reduce_xor_sync(0xffffffffu, chains.digest())};
}

template <int I = 0>
__device__ Tally run_class(const Seeds* seeds, const UniformSeed& u, int cls, long long deadline) {
  if constexpr (I < kClasses) {
    if (cls == I) return timed<std::tuple_element_t<I, Classes>>(seeds, u, I, deadline);
    return run_class<I + 1>(seeds, u, cls, deadline);
  }
  return {};  // unreachable: the host checks the class indices (and fails on a warp with no bodies)
}

__global__ void __launch_bounds__(1024, 1)
    coissue_kernel(const Seeds* seeds, UniformSeed u, int class_a, int class_b, int warps_a, Tally* tallies) {
  __shared__ long long start;
  for (int k = threadIdx.x; k < kLdsIlp * 32; k += blockDim.x)
    lds_ring[k] = unsigned(__cvta_generic_to_shared(&lds_ring[k]));
  __syncthreads();
  if (threadIdx.x == 0) start = smd::clock_cycles();
  __syncthreads();
  // Reduced across the warp, the class index is a uniform value to ptxas, and so is the loop's exit test in
  // timed(): each class's loop runs in uniform control flow, which the uniform datapath needs.
  const int warp = threadIdx.x / 32;
  const int cls = __reduce_max_sync(~0u, warp < warps_a ? class_a : class_b);
  const long long deadline = start + kWindow;
  const Tally t = run_class(seeds, u, cls, deadline);
  if (threadIdx.x % 32 == 0) tallies[warp] = t;
}

// Host-side facts of each class, gathered from the tuple.
struct ClassInfo {
  const char* id;
  int ops;
  const char* pipe;
  void (*seed)(unsigned long long*);
};

template <std::size_t... I>
std::vector<ClassInfo> class_infos(std::index_sequence<I...>) {
  return {ClassInfo{std::tuple_element_t<I, Classes>::kCase, std::tuple_element_t<I, Classes>::kOps,
                    std::tuple_element_t<I, Classes>::kPipe, std::tuple_element_t<I, Classes>::seed}...};
}
const std::vector<ClassInfo> kInfo = class_infos(std::make_index_sequence<kClasses>{});

std::string class_name(int cls) { return std::string(kInfo[cls].id).substr(std::string("coissue_").size()); }

// One launch's measurement of one warp group: its throughput and the bodies it finished.
struct GroupRate {
  double per_sm = 0;  // warp instructions per cycle per SM: the sum of each warp's own rate
  long long bodies = 0;
};

GroupRate group_rate(const std::vector<Tally>& t, int first, int count, int cls) {
  GroupRate g;
  for (int w = first; w < first + count; ++w) {
    const Tally& x = t[w];
    if (!x.ok) smd::fail("coissue: class " + class_name(cls) + " ended with a corrupt or non-finite value");
    if (x.bodies >= kMaxBodies) smd::fail("coissue: hit the iteration cap: clock64 did not advance");
    if (x.bodies < kMinBodies) smd::fail("coissue: class " + class_name(cls) + " finished too few bodies in time");
    g.per_sm += double(x.bodies) * kInfo[cls].ops / double(x.stamp.c1 - x.stamp.c0);
    g.bodies += x.bodies;
  }
  return g;
}

struct Device {
  Seeds* seeds;
  Tally* tallies;
  UniformSeed uniform;
};

std::vector<Tally> launch(const Device& d, int class_a, int class_b, int warps_a, int warps) {
  coissue_kernel<<<1, warps * 32>>>(d.seeds, d.uniform, class_a, class_b, warps_a, d.tallies);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
  std::vector<Tally> host(warps);
  SMD_CHECK(cudaMemcpy(host.data(), d.tallies, warps * sizeof(Tally), cudaMemcpyDeviceToHost));
  return host;
}

// ncu instruction counts per pipe the pair launch must show, from the bodies each group finished.
std::vector<std::pair<std::string, double>> pipe_counts(int x, long long bx, int y, long long by) {
  std::map<std::string, double> sum;
  if (kInfo[x].pipe) sum[kInfo[x].pipe] += double(bx) * kInfo[x].ops;
  if (kInfo[y].pipe) sum[kInfo[y].pipe] += double(by) * kInfo[y].ops;
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [pipe, n] : sum) out.emplace_back("sm__inst_executed_pipe_" + pipe + ".sum", n);
  return out;
}

Device setup() {
  Device d{};
  Seeds host{};
  for (int c = 0; c < kClasses; ++c) kInfo[c].seed(host.w[c]);
  for (int i = 0; i < 8; ++i) d.uniform.v[i] = 0x01000193u * (i + 1);
  d.uniform.v[8] = 0x9E3779B9u, d.uniform.v[9] = 0x7F4A7C15u;
  SMD_CHECK(cudaMalloc(&d.seeds, sizeof(Seeds)));
  SMD_CHECK(cudaMalloc(&d.tallies, kMaxWarps * sizeof(Tally)));
  SMD_CHECK(cudaMemcpy(d.seeds, &host, sizeof(Seeds), cudaMemcpyHostToDevice));
  return d;
}

template <int X>
void measure(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long x = smd::param(point, "x"), y = smd::param(point, "y"), w = smd::param(point, "warps_per_group");
  if (x != X) smd::fail(id + " measures class x=" + std::to_string(X) + ", got x=" + std::to_string(x), 2);
  if (y < 0 || y >= kClasses)
    smd::fail("y=" + std::to_string(y) + " out of range 0.." + std::to_string(kClasses - 1), 2);
  if (w < 1 || 2 * w > kMaxWarps) smd::fail("warps_per_group=" + std::to_string(w) + " out of range 1..16", 2);
  const int wi = int(w), yi = int(y);
  Device d = setup();
  launch(d, X, yi, wi, 2 * wi);  // untimed first launch (module load, instruction cache)
  std::vector<double> alone_x, alone_y, pair_x, pair_y, slow_x, slow_y, cycles, mhz;
  std::vector<std::pair<std::string, double>> expect;
  long long bodies_x = 0, bodies_y = 0;
  int smid = -1;
  for (int r = 0; r < repeats; ++r) {
    alone_x.push_back(group_rate(launch(d, X, X, wi, wi), 0, wi, X).per_sm);
    alone_y.push_back(group_rate(launch(d, yi, yi, wi, wi), 0, wi, yi).per_sm);
    std::vector<Tally> t;
    {
      smd::NvtxRange range(smd::range_name(id, point, "pair"));
      t = launch(d, X, yi, wi, 2 * wi);
    }
    const GroupRate gx = group_rate(t, 0, wi, X), gy = group_rate(t, wi, wi, yi);
    std::vector<smd::Stamp> stamps;
    for (const Tally& k : t) stamps.push_back(k.stamp);
    const smd::Span s = smd::span(stamps);
    pair_x.push_back(gx.per_sm), pair_y.push_back(gy.per_sm);
    slow_x.push_back(alone_x.back() / gx.per_sm), slow_y.push_back(alone_y.back() / gy.per_sm);
    cycles.push_back(s.cycles), mhz.push_back(s.mhz), smid = s.smid;
    bodies_x = gx.bodies, bodies_y = gy.bodies;
    expect = pipe_counts(X, bodies_x, yi, bodies_y);  // the last pair launch is the one ncu profiles
  }
  SMD_CHECK(cudaFree(d.seeds));
  SMD_CHECK(cudaFree(d.tallies));
  smd::Record rec{id, point, "", "warp_inst/cycle/SM", {}, smd::median(cycles), 0, smd::median(mhz), smid};
  auto emit = [&](const char* metric, const std::vector<double>& samples, long long bodies) {
    rec.metric = metric, rec.samples = samples, rec.iterations = bodies;
    smd::emit(rec);
  };
  rec.variant = "pair", rec.expect = expect;
  emit("throughput_x", pair_x, bodies_x);
  rec.expect.clear();
  emit("throughput_y", pair_y, bodies_y);
  rec.variant.clear();
  emit("throughput_x_alone", alone_x, 0);
  emit("throughput_y_alone", alone_y, 0);
  rec.unit = "ratio";
  emit("slowdown_x", slow_x, 0);
  emit("slowdown_y", slow_y, 0);
}

template <int X>
std::vector<smd::KernelInfo> listing() {
  return {{{{"x", X}}, "pair", kInfo[X].ops, 0, "coissue_kernel"}};
}

template <std::size_t... I>
int run(int argc, char** argv, std::index_sequence<I...>) {
  return smd::family_main(argc, argv, {smd::FamilyCase{kInfo[I].id, listing<int(I)>, measure<int(I)>}...});
}

int main(int argc, char** argv) { return run(argc, argv, std::make_index_sequence<kClasses>{}); }
