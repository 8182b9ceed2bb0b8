// FlashAttention-2 forward tile loop (mma.sync path, as FA2 runs on sm_80..sm_120): one CTA = 4 warps = a
// 64-row Q tile (16 rows per warp, Q fragments kept in registers), K/V tiles of 64 rows streamed through
// shared memory by cp.async (double-buffered, padded rows so ldmatrix is conflict-free). Per K/V tile:
// S = Q K^T (mma.sync m16n8k16, bf16/f16 -> f32), online softmax (row max, ex2.approx on s*scale*log2e - m,
// row sum, rescale of O), O += P V. Variants (a template flag) drop or double one stage so the per-tile
// cycles (clock64 around the tile loop / tiles) split into tensor-core and softmax (ALU/SFU) time.
// Every variant's output lands in global memory; full, no_softmax and double_qk are checked against a host
// reference on a small shape first, and the TFLOPS case checks rows of its own large output.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "../common/harness.cuh"

enum Variant { kFull, kNoSoftmax, kNoQk, kNoPv, kNoQkNoPv, kDoubleSoftmax, kDoubleQk, kVariants };
constexpr const char* kVariantName[kVariants] = {"full",    "no_softmax",     "no_qk",    "no_pv",
                                                 "no_qk_no_pv", "double_softmax", "double_qk"};
constexpr int kRows = 64;     // Q rows per CTA, 16 per warp
constexpr int kKeys = 64;     // K/V rows per tile
constexpr int kThreads = 128;
constexpr int kPad = 8;       // elements of padding per shared row: ldmatrix's 8 rows hit distinct banks
constexpr int kTileSeqlen = 4096;  // keys per CTA in the per-tile cases: 64 tiles
constexpr float kLog2e = 1.4426950408889634f;

__host__ __device__ constexpr bool has_qk(int v) { return v != kNoQk && v != kNoQkNoPv; }
__host__ __device__ constexpr bool has_pv(int v) { return v != kNoPv && v != kNoQkNoPv; }
__host__ __device__ constexpr bool has_softmax(int v) { return v != kNoSoftmax; }

// mma.sync m16n8k16 HMMAs one warp issues per K/V tile.
constexpr long hmma_per_tile(int d, int v) {
  const long qk = 8 * (d / 16), pv = (d / 8) * (kKeys / 16);
  return (has_qk(v) ? qk : 0) * (v == kDoubleQk ? 2 : 1) + (has_pv(v) ? pv : 0);
}

template <class T>
struct Mma;
template <>
struct Mma<__nv_bfloat16> {
  __device__ static void run(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  __device__ static uint32_t pack(float lo, float hi) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
};
template <>
struct Mma<__half> {
  __device__ static void run(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  __device__ static uint32_t pack(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
};

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ uint32_t smem_addr(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}

// cp.async of a 64 x D tile (row stride D in global, D + kPad in shared), 16 B per copy.
template <int D, class T>
__device__ __forceinline__ void load_tile(T* dst, const T* src) {
  constexpr int kChunks = kKeys * D / 8;
#pragma unroll
  for (int c = threadIdx.x; c < kChunks; c += kThreads) {
    const int row = c / (D / 8), col = (c % (D / 8)) * 8;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(dst + row * (D + kPad) + col)),
                 "l"(src + long(row) * D + col));
  }
  asm volatile("cp.async.commit_group;");
}

// Online softmax of one warp's S (16 rows x 64 keys; this thread: rows g and g+8) in place: S becomes P,
// m/l the running max and (per-thread partial) sum, O rescaled by exp2((m_old - m_new) * scale).
template <int D>
__device__ __forceinline__ void softmax(float (&s)[8][4], float (&m)[2], float (&l)[2], float (&o)[D / 8][4],
                                        float scale_log2) {
  float mx[2] = {m[0], m[1]};
#pragma unroll
  for (int n = 0; n < 8; ++n) mx[0] = fmaxf(mx[0], fmaxf(s[n][0], s[n][1])), mx[1] = fmaxf(mx[1], fmaxf(s[n][2], s[n][3]));
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
  }
  float alpha[2], sum[2] = {0.f, 0.f}, ms[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    alpha[r] = ex2((m[r] - mx[r]) * scale_log2);
    ms[r] = mx[r] * scale_log2;
    m[r] = mx[r];
  }
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      s[n][e] = ex2(fmaf(s[n][e], scale_log2, -ms[e / 2]));
      sum[e / 2] += s[n][e];
    }
#pragma unroll
  for (int r = 0; r < 2; ++r) l[r] = l[r] * alpha[r] + sum[r];
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[n][e] *= alpha[e / 2];
}

struct Problem {
  const void *q, *k, *v;
  void* o;
  int seqlen;          // keys (and queries) per head
  int qtiles;          // seqlen / 64
  float scale_log2;    // softmax scale x log2(e)
  float s_step;        // no_qk: the stand-in S moves by this much per tile (so nothing is loop-invariant)
  long long* cycles;   // per CTA: clock64 span of the tile loop (null: not recorded)
  unsigned long long* ns;
  unsigned* smid;
};

template <class T, int D, int V>
__global__ void __launch_bounds__(kThreads) flash_fwd(Problem p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  constexpr int kStride = D + kPad;
  T* sq = reinterpret_cast<T*>(smem_raw);
  T* skv = sq + kRows * kStride;  // [buffer][K, V][64][kStride]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long head = blockIdx.x / p.qtiles, qtile = blockIdx.x % p.qtiles;
  const T* q = static_cast<const T*>(p.q) + (head * p.seqlen + qtile * kRows) * D;
  const T* k = static_cast<const T*>(p.k) + head * p.seqlen * D;
  const T* v = static_cast<const T*>(p.v) + head * p.seqlen * D;
  const int tiles = p.seqlen / kKeys;
  auto kbuf = [&](int b) { return skv + (2 * b) * kKeys * kStride; };
  auto vbuf = [&](int b) { return skv + (2 * b + 1) * kKeys * kStride; };

  load_tile<D>(sq, q);
  load_tile<D>(kbuf(0), k);
  load_tile<D>(vbuf(0), v);
  asm volatile("cp.async.wait_group 2;");
  __syncthreads();
  uint32_t qf[D / 16][4];  // A fragments of this warp's 16 rows
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) ldsm_x4(qf[kk], sq + (warp * 16 + lane % 16) * kStride + kk * 16 + (lane / 16) * 8);

  float o[D / 8][4] = {}, m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  float m2[2] = {-INFINITY, -INFINITY}, l2[2] = {0.f, 0.f};  // double_softmax's second pass
  float s_base[8][4];  // no_qk's stand-in S: distinct per element, moved per tile
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) s_base[n][e] = __uint_as_float(qf[n % (D / 16)][e]) * 0.f + float(n * 4 + e + lane);

  __syncthreads();
  const long long c0 = smd::clock_cycles();
  const unsigned long long ns0 = smd::clock_ns();
#pragma unroll 1
  for (int j = 0; j < tiles; ++j) {
    const int buf = j & 1;
    if (j + 1 < tiles) {
      load_tile<D>(kbuf(buf ^ 1), k + long(j + 1) * kKeys * D);
      load_tile<D>(vbuf(buf ^ 1), v + long(j + 1) * kKeys * D);
      asm volatile("cp.async.wait_group 2;");
    } else {
      asm volatile("cp.async.wait_group 0;");
    }
    __syncthreads();
    const T* sk = kbuf(buf);
    const T* sv = vbuf(buf);

    float s[8][4];
    if constexpr (has_qk(V)) {
#pragma unroll
      for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[n][e] = 0.f;
#pragma unroll
      for (int pass = 0; pass < (V == kDoubleQk ? 2 : 1); ++pass)  // double_qk: the whole stage again, S += Q K^T
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
          for (int nn = 0; nn < 4; ++nn) {  // 16 keys per ldmatrix.x4: two n-tiles x (d, d + 8)
            uint32_t b[4];
            ldsm_x4(b, sk + (nn * 16 + (lane / 16) * 8 + lane % 8) * kStride + kk * 16 + ((lane / 8) % 2) * 8);
            Mma<T>::run(s[2 * nn], qf[kk], b[0], b[1]);
            Mma<T>::run(s[2 * nn + 1], qf[kk], b[2], b[3]);
          }
    } else {
#pragma unroll
      for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[n][e] = fmaf(float(j), p.s_step, s_base[n][e]);
    }

    if constexpr (has_softmax(V)) softmax<D>(s, m, l, o, p.scale_log2);
    if constexpr (V == kDoubleSoftmax) softmax<D>(s, m2, l2, o, p.scale_log2);

    if constexpr (has_pv(V)) {
#pragma unroll
      for (int kk = 0; kk < kKeys / 16; ++kk) {  // P's A fragment for keys 16kk..16kk+15 from two S n-tiles
        const uint32_t a[4] = {Mma<T>::pack(s[2 * kk][0], s[2 * kk][1]), Mma<T>::pack(s[2 * kk][2], s[2 * kk][3]),
                               Mma<T>::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                               Mma<T>::pack(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int nn = 0; nn < D / 16; ++nn) {  // 16 columns of d per ldmatrix.x4.trans
          uint32_t b[4];
          ldsm_x4_trans(b, sv + (kk * 16 + lane % 8 + ((lane / 8) % 2) * 8) * kStride + nn * 16 + (lane / 16) * 8);
          Mma<T>::run(o[2 * nn], a, b[0], b[1]);
          Mma<T>::run(o[2 * nn + 1], a, b[2], b[3]);
        }
      }
    } else {  // P still feeds the output: the row sums of this tile's P
#pragma unroll
      for (int n = 0; n < 8; ++n) o[n % (D / 8)][n % 4] += s[n][0] + s[n][1] + s[n][2] + s[n][3];
    }
    __syncthreads();  // everyone is done with buffer `buf` before the next iteration refills it
  }
  const long long c1 = smd::clock_cycles();
  const unsigned long long ns1 = smd::clock_ns();
  if (threadIdx.x == 0 && p.cycles) {
    p.cycles[blockIdx.x] = c1 - c0;
    p.ns[blockIdx.x] = ns1 - ns0;
    p.smid[blockIdx.x] = smd::sm_id();
  }

  // Epilogue: full row sums (quad reduction), O / l (O unnormalized where there is no softmax).
  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float total = l[r] * (V == kDoubleSoftmax ? l2[r] : 1.f);
    total += __shfl_xor_sync(0xffffffffu, total, 1);
    total += __shfl_xor_sync(0xffffffffu, total, 2);
    inv[r] = has_softmax(V) ? 1.f / total : 1.f;
  }
  T* out = static_cast<T*>(p.o) + (head * p.seqlen + qtile * kRows + warp * 16 + lane / 4) * D;
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const uint32_t packed = Mma<T>::pack(o[n][2 * r] * inv[r], o[n][2 * r + 1] * inv[r]);
      *reinterpret_cast<uint32_t*>(out + r * 8 * D + n * 8 + (lane % 4) * 2) = packed;
    }
}

template <int D>
constexpr int smem_bytes() {
  return (kRows + 4 * kKeys) * (D + kPad) * 2;
}

// ---------------------------------------------------------------- host side

// Input element i of tensor `which` (0 q, 1 k, 2 v): a hash in [-range, range), the same on host and device.
__host__ __device__ inline float input_value(long i, int which) {
  uint64_t x = uint64_t(i) * 0x9e3779b97f4a7c15ull + uint64_t(which + 1) * 0xbf58476d1ce4e5b9ull;
  x ^= x >> 31, x *= 0x94d049bb133111ebull, x ^= x >> 29;
  const float range = which == 2 ? 1.f : 2.f;
  return (float(x & 0xffff) / 65536.f * 2.f - 1.f) * range;
}

template <class T>
__global__ void fill(T* x, long n, int which) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n; i += long(gridDim.x) * blockDim.x)
    x[i] = T(input_value(i, which));
}

template <class T>
float rounded(float x) {
  return float(T(x));
}

// A problem in device memory: bh heads of seqlen x d, inputs filled by the hash.
template <class T>
struct Tensors {
  T *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  long elems;
  Tensors(long bh, long seqlen, int d) : elems(bh * seqlen * d) {
    for (auto [ptr, which] : {std::pair{&q, 0}, {&k, 1}, {&v, 2}}) {
      SMD_CHECK(cudaMalloc(ptr, elems * sizeof(T)));
      fill<<<1024, 256>>>(*ptr, elems, which);
    }
    SMD_CHECK(cudaMalloc(&o, elems * sizeof(T)));
    SMD_CHECK(cudaMemset(o, 0, elems * sizeof(T)));
    SMD_CHECK(cudaDeviceSynchronize());
  }
  Tensors(const Tensors&) = delete;
  Tensors& operator=(const Tensors&) = delete;
  ~Tensors() {
    cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(o);
  }
};

// Per-CTA clocks of the tile loop.
struct Clocks {
  long long* cycles = nullptr;
  unsigned long long* ns = nullptr;
  unsigned* smid = nullptr;
  int ctas;
  explicit Clocks(int n) : ctas(n) {
    SMD_CHECK(cudaMalloc(&cycles, n * sizeof(long long)));
    SMD_CHECK(cudaMalloc(&ns, n * sizeof(unsigned long long)));
    SMD_CHECK(cudaMalloc(&smid, n * sizeof(unsigned)));
  }
  Clocks(const Clocks&) = delete;
  Clocks& operator=(const Clocks&) = delete;
  ~Clocks() {
    cudaFree(cycles), cudaFree(ns), cudaFree(smid);
  }
  // (median cycles per tile over CTAs, SM clock MHz, smid of CTA 0)
  smd::Span per_tile(int tiles) const {
    std::vector<long long> c(ctas);
    std::vector<unsigned long long> t(ctas);
    unsigned s = 0;
    SMD_CHECK(cudaMemcpy(c.data(), cycles, ctas * sizeof(long long), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(t.data(), ns, ctas * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(&s, smid, sizeof(unsigned), cudaMemcpyDeviceToHost));
    std::vector<double> per(ctas), mhz(ctas);
    for (int i = 0; i < ctas; ++i) per[i] = double(c[i]) / tiles, mhz[i] = t[i] ? c[i] * 1e3 / double(t[i]) : 0.0;
    return {smd::median(per), smd::median(mhz), int(s)};
  }
};

template <class T, int D, int V>
void launch(const Tensors<T>& t, long bh, int seqlen, int ctas, const Clocks* clocks) {
  Problem p{t.q, t.k, t.v, t.o, seqlen, seqlen / kRows, kLog2e / std::sqrt(float(D)), 0.125f,
            clocks ? clocks->cycles : nullptr, clocks ? clocks->ns : nullptr, clocks ? clocks->smid : nullptr};
  if (ctas > bh * p.qtiles) smd::fail("internal: more CTAs than Q tiles");
  flash_fwd<T, D, V><<<ctas, kThreads, smem_bytes<D>()>>>(p);
}

template <class T, int D>
void allow_smem() {
  auto set = [](auto kernel) {
    SMD_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes<D>()));
  };
  set(flash_fwd<T, D, kFull>);
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    set(flash_fwd<T, D, kNoSoftmax>), set(flash_fwd<T, D, kNoQk>), set(flash_fwd<T, D, kNoPv>);
    set(flash_fwd<T, D, kNoQkNoPv>), set(flash_fwd<T, D, kDoubleSoftmax>), set(flash_fwd<T, D, kDoubleQk>);
  }
}

// Host reference of the first `rows` query rows of head 0 (all seqlen keys): softmax(scale Q K^T) V, or
// bf16(Q K^T) V (unscaled, unnormalized) for no_softmax; inputs rounded to T as the device holds them.
template <class T>
std::vector<float> reference(int d, int seqlen, int rows, int variant) {
  std::vector<float> q(long(rows) * d), k(long(seqlen) * d), v(long(seqlen) * d);
  for (long i = 0; i < long(rows) * d; ++i) q[i] = rounded<T>(input_value(i, 0));
  for (long i = 0; i < long(seqlen) * d; ++i) k[i] = rounded<T>(input_value(i, 1)), v[i] = rounded<T>(input_value(i, 2));
  const float scale = (variant == kDoubleQk ? 2.f : 1.f) / std::sqrt(float(d));
  std::vector<float> out(long(rows) * d), s(seqlen);
  for (int r = 0; r < rows; ++r) {
    float mx = -INFINITY, sum = 0.f;
    for (int j = 0; j < seqlen; ++j) {
      float dot = 0.f;
      for (int c = 0; c < d; ++c) dot += q[long(r) * d + c] * k[long(j) * d + c];
      s[j] = dot, mx = std::max(mx, dot);
    }
    for (int j = 0; j < seqlen; ++j) {
      s[j] = variant == kNoSoftmax ? rounded<T>(s[j]) : std::exp((s[j] - mx) * scale);
      sum += s[j];
    }
    std::vector<float> acc(d, 0.f);
    for (int j = 0; j < seqlen; ++j)
      for (int c = 0; c < d; ++c) acc[c] += s[j] * v[long(j) * d + c];
    for (int c = 0; c < d; ++c) out[long(r) * d + c] = variant == kNoSoftmax ? acc[c] : acc[c] / sum;
  }
  return out;
}

// The first `rows` rows of head 0 of the device output against the host reference (error relative to the
// largest reference value, at least 1); every output element must be finite. One line and exit on failure.
template <class T>
void check_output(const Tensors<T>& t, int d, int seqlen, int rows, int variant) {
  std::vector<T> got(t.elems);
  SMD_CHECK(cudaMemcpy(got.data(), t.o, t.elems * sizeof(T), cudaMemcpyDeviceToHost));
  for (long i = 0; i < t.elems; ++i)
    if (!std::isfinite(float(got[i])))
      smd::fail(std::string(kVariantName[variant]) + ": output element " + std::to_string(i) + " is not finite");
  if (variant != kFull && variant != kNoSoftmax && variant != kDoubleQk) return;
  const auto want = reference<T>(d, seqlen, rows, variant);
  double err = 0, top = 1;
  for (size_t i = 0; i < want.size(); ++i)
    err = std::max(err, double(std::fabs(float(got[i]) - want[i]))), top = std::max(top, double(std::fabs(want[i])));
  if (err > 0.03 * top)
    smd::fail(std::string(kVariantName[variant]) + " d=" + std::to_string(d) + " seqlen=" + std::to_string(seqlen) +
              ": output differs from the host reference by " + std::to_string(err) + " (max |ref| " +
              std::to_string(top) + ")");
}

// Each kernel computes a small problem (2 heads x 256) once and is checked before it is timed.
template <class T, int D, int V>
void verify_once() {
  static bool done = false;
  if (done) return;
  allow_smem<T, D>();
  Tensors<T> t(2, 256, D);
  launch<T, D, V>(t, 2, 256, 2 * 256 / kRows, nullptr);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
  check_output(t, D, 256, 256, V);
  done = true;
}

using Point = std::map<std::string, long>;
using Bf16 = __nv_bfloat16;

int sm_count() {
  int dev = 0, sms = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

// The per-tile cases' launch: ctas_per_sm CTAs on every SM (one wave), each a 64-row Q tile over 4096 keys.
struct TileShape {
  int ctas;
  long bh;
};

template <int D, int V>
TileShape tile_shape(const std::string& id, const Point& point) {
  const long per_sm = smd::param(point, "ctas_per_sm");
  if (per_sm < 1 || per_sm > 8) smd::fail("ctas_per_sm must be 1..8, got " + std::to_string(per_sm), 2);
  int fit = 0;
  SMD_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, flash_fwd<Bf16, D, V>, kThreads, smem_bytes<D>()));
  if (fit < per_sm) {
    smd::static_point(id, point, std::to_string(per_sm) + " CTAs of head_dim " + std::to_string(D) +
                                     " do not fit on one SM (" + std::to_string(fit) + " do)");
    return {0, 0};
  }
  const int ctas = int(per_sm) * sm_count(), qtiles = kTileSeqlen / kRows;
  return {ctas, (ctas + qtiles - 1) / qtiles};
}

// Cycles per K/V tile of one variant: median over the CTAs of one launch, per repeat.
template <int D, int V>
void run_tile(const std::string& id, const Point& point, int repeats) {
  verify_once<Bf16, D, V>();
  const TileShape shape = tile_shape<D, V>(id, point);
  if (!shape.ctas) return;
  Tensors<Bf16> t(shape.bh, kTileSeqlen, D);
  Clocks clocks(shape.ctas);
  const int tiles = kTileSeqlen / kKeys;
  launch<Bf16, D, V>(t, shape.bh, kTileSeqlen, shape.ctas, &clocks);
  SMD_CHECK(cudaDeviceSynchronize());
  smd::Record rec{id, point, "cycles_per_tile", "cycle"};
  rec.variant = kVariantName[V];
  std::vector<double> mhz;
  for (int r = 0; r < repeats; ++r) {
    {
      smd::NvtxRange range(smd::range_name(id, point, rec.variant));
      launch<Bf16, D, V>(t, shape.bh, kTileSeqlen, shape.ctas, &clocks);
      SMD_CHECK(cudaGetLastError());
      SMD_CHECK(cudaDeviceSynchronize());
    }
    const smd::Span s = clocks.per_tile(tiles);
    rec.samples.push_back(s.cycles), mhz.push_back(s.mhz), rec.smid = s.smid;
  }
  check_output(t, D, kTileSeqlen, 0, V);
  rec.cycles = smd::median(rec.samples) * tiles, rec.iterations = tiles, rec.clock_mhz = smd::median(mhz);
  if (const long hmma = hmma_per_tile(D, V))
    rec.expect = {{"sm__inst_executed_pipe_tensor.sum", double(shape.ctas) * (kThreads / 32) * tiles * hmma}};
  smd::emit(rec);
}

// A stage's share of the full variant's per-tile cycles: (full - without) / full in %, from launches of the two
// variants alternating (each in its own NVTX range), so clock drift hits both alike.
template <int D, int Without>
void run_share(const std::string& id, const Point& point, int repeats, const char* metric) {
  verify_once<Bf16, D, kFull>();
  verify_once<Bf16, D, Without>();
  const TileShape shape = tile_shape<D, Without>(id, point);
  if (!shape.ctas || !tile_shape<D, kFull>(id, point).ctas) return;
  Tensors<Bf16> t(shape.bh, kTileSeqlen, D);
  Clocks clocks(shape.ctas);
  const int tiles = kTileSeqlen / kKeys;
  smd::Record rec{id, point, metric, "%"};
  std::vector<double> full_cycles, mhz;
  for (int r = 0; r < repeats; ++r) {
    double cycles[2];
    for (int which = 0; which < 2; ++which) {
      {
        smd::NvtxRange range(smd::range_name(id, point, kVariantName[which ? Without : kFull]));
        if (which) launch<Bf16, D, Without>(t, shape.bh, kTileSeqlen, shape.ctas, &clocks);
        else launch<Bf16, D, kFull>(t, shape.bh, kTileSeqlen, shape.ctas, &clocks);
        SMD_CHECK(cudaGetLastError());
        SMD_CHECK(cudaDeviceSynchronize());
      }
      const smd::Span s = clocks.per_tile(tiles);
      cycles[which] = s.cycles, rec.smid = s.smid;
      if (!which) mhz.push_back(s.mhz);
    }
    rec.samples.push_back(100.0 * (cycles[0] - cycles[1]) / cycles[0]);
    full_cycles.push_back(cycles[0]);
  }
  rec.cycles = smd::median(full_cycles) * tiles, rec.iterations = tiles, rec.clock_mhz = smd::median(mhz);
  smd::emit(rec);
}

// Whole-kernel throughput of the full variant: bh heads x seqlen, 4 bh seqlen^2 d FLOP per launch (CUDA events);
// 64 rows of the timed output are checked against the host reference.
template <class T, int D>
void run_tflops(const std::string& id, const Point& point, int repeats) {
  const long bh = smd::param(point, "bh"), seqlen = smd::param(point, "seqlen");
  if (bh < 1 || seqlen < kKeys || seqlen % kKeys || seqlen > (1 << 16))
    smd::fail("bh >= 1 and seqlen a multiple of 64 up to 65536 wanted, got " + std::to_string(bh) + ", " +
                  std::to_string(seqlen), 2);
  verify_once<T, D, kFull>();
  Tensors<T> t(bh, seqlen, D);
  const int ctas = int(bh * seqlen / kRows);
  Clocks clocks(ctas);
  launch<T, D, kFull>(t, bh, int(seqlen), ctas, &clocks);
  SMD_CHECK(cudaDeviceSynchronize());
  const double flop = 4.0 * bh * double(seqlen) * seqlen * D;
  smd::Record tflops{id, point, "tflops", "TFLOPS"}, ms{id, point, "ms", "ms"};
  std::vector<double> mhz;
  for (int r = 0; r < repeats; ++r) {
    double elapsed;
    {
      smd::NvtxRange range(smd::range_name(id, point, "full"));
      elapsed = smd::time_ms([&] { launch<T, D, kFull>(t, bh, int(seqlen), ctas, &clocks); });
    }
    const smd::Span s = clocks.per_tile(int(seqlen / kKeys));
    ms.samples.push_back(elapsed), tflops.samples.push_back(flop / (elapsed * 1e-3) / 1e12);
    mhz.push_back(s.mhz), tflops.smid = ms.smid = s.smid;
    tflops.cycles = ms.cycles = s.cycles * double(seqlen / kKeys);
  }
  check_output(t, D, int(seqlen), kRows, kFull);
  for (auto* rec : {&tflops, &ms}) {
    rec->iterations = seqlen / kKeys, rec->clock_mhz = smd::median(mhz), rec->variant = "full";
    rec->expect = {{"sm__inst_executed_pipe_tensor.sum", double(ctas) * (kThreads / 32) * (seqlen / kKeys) *
                                                              hmma_per_tile(D, kFull)}};
  }
  smd::emit(tflops);
  smd::emit(ms);
}

// ---------------------------------------------------------------- cases

template <class T>
std::string symbol(int d, int v) {
  return std::string("flash_fwd<") + (std::is_same_v<T, Bf16> ? "__nv_bfloat16" : "__half") + "," +
         std::to_string(d) + "," + std::to_string(v) + ">";
}

// --list: one kernel per head dim and variant; ops = the HMMAs one tile-loop body holds.
std::vector<smd::KernelInfo> kernels(std::initializer_list<int> variants, bool both_types = false) {
  std::vector<smd::KernelInfo> out;
  for (int d : {64, 128})
    for (int v : variants) {
      out.push_back({{{"head_dim", d}}, kVariantName[v], hmma_per_tile(d, v), kTileSeqlen / kKeys, symbol<Bf16>(d, v)});
      if (both_types)
        out.push_back({{{"dtype", 1}, {"head_dim", d}}, kVariantName[v], hmma_per_tile(d, v), 0, symbol<__half>(d, v)});
    }
  return out;
}

// Dispatch on the head_dim parameter (64 or 128).
#define SMD_BY_HEAD_DIM(fn, ...)                                                                            \
  [](const std::string& id, const Point& point, int repeats) {                                            \
    const long d = smd::param(point, "head_dim");                                                         \
    if (d == 64) return fn<64 __VA_OPT__(, ) __VA_ARGS__>(id, point, repeats);                            \
    if (d == 128) return fn<128 __VA_OPT__(, ) __VA_ARGS__>(id, point, repeats);                          \
    smd::fail("head_dim must be 64 or 128, got " + std::to_string(d), 2);                                 \
  }

template <int D, int Without, int Metric>
void share(const std::string& id, const Point& point, int repeats) {
  run_share<D, Without>(id, point, repeats, Metric ? "tensor_share" : "softmax_share");
}

template <int D>
void tflops(const std::string& id, const Point& point, int repeats) {
  const long dtype = smd::param(point, "dtype");
  if (dtype == 0) return run_tflops<Bf16, D>(id, point, repeats);
  if (dtype == 1) return run_tflops<__half, D>(id, point, repeats);
  smd::fail("dtype must be 0 (bf16) or 1 (f16), got " + std::to_string(dtype), 2);
}

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv,
      {{"tile_full", [] { return kernels({kFull}); }, SMD_BY_HEAD_DIM(run_tile, kFull)},
       {"tile_no_softmax", [] { return kernels({kNoSoftmax}); }, SMD_BY_HEAD_DIM(run_tile, kNoSoftmax)},
       {"tile_no_qk", [] { return kernels({kNoQk}); }, SMD_BY_HEAD_DIM(run_tile, kNoQk)},
       {"tile_no_pv", [] { return kernels({kNoPv}); }, SMD_BY_HEAD_DIM(run_tile, kNoPv)},
       {"tile_no_qk_no_pv", [] { return kernels({kNoQkNoPv}); }, SMD_BY_HEAD_DIM(run_tile, kNoQkNoPv)},
       {"tile_double_softmax", [] { return kernels({kDoubleSoftmax}); }, SMD_BY_HEAD_DIM(run_tile, kDoubleSoftmax)},
       {"tile_double_qk", [] { return kernels({kDoubleQk}); }, SMD_BY_HEAD_DIM(run_tile, kDoubleQk)},
       {"softmax_share", [] { return kernels({kFull, kNoSoftmax}); }, SMD_BY_HEAD_DIM(share, kNoSoftmax, 0)},
       {"tensor_share", [] { return kernels({kFull, kNoQkNoPv}); }, SMD_BY_HEAD_DIM(share, kNoQkNoPv, 1)},
       {"flash_tflops", [] { return kernels({kFull}, true); }, SMD_BY_HEAD_DIM(tflops)}});
}
