// tcgen05 (sm_100a): tcgen05.mma into Tensor Memory issued by one thread, committed to an mbarrier and waited for,
// short and long bodies as in mma.cuh; tcgen05.ld/.st latency. Other archs get the kernels without the instructions.
#include <cuda_runtime.h>

#include "mma.cuh"
#include "tcgen05.cuh"

namespace tcg {

constexpr int kThreads = 128;       // one warpgroup: warp w reads lanes 32w..32w+31 of D
constexpr int kShort = 16, kLong = 32;  // MMAs (or ld/st steps) per pass of the timed loop
constexpr uint32_t kColumns = 512;  // all of tensor memory (one CTA per SM): D in columns 0-255
constexpr uint32_t kSfa = 256, kSfb = 272;  // scale factors: 16 columns each
constexpr uint32_t kA = 0, kB = tile_bytes(128), kSf = kB + tile_bytes(256), kSmem = kSf + tile_bytes(128);

// The tcgen05 instructions of a kernel all name one .cta_group (PTX ISA 9.7.16.10.9.1): CTAS is 1 or 2.
template <int CTAS>
__device__ inline void alloc(uint32_t slot) {
  if constexpr (CTAS == 1) {
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(slot), "n"(kColumns));
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;");
  } else {
    asm volatile("tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(slot), "n"(kColumns));
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned;");
  }
}

template <int CTAS>
__device__ inline void dealloc(uint32_t tmem) {
  if constexpr (CTAS == 1)
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" ::"r"(tmem), "n"(kColumns));
  else
    asm volatile("tcgen05.dealloc.cta_group::2.sync.aligned.b32 %0, %1;" ::"r"(tmem), "n"(kColumns));
}

// The mbarrier arrives once every tcgen05.mma and .cp this thread issued before has completed.
template <int CTAS>
__device__ inline void commit(uint32_t bar) {
  if constexpr (CTAS == 1)
    asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" ::"r"(bar) : "memory");
  else
    asm volatile("tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.b64 [%0];" ::"r"(bar) : "memory");
}

// 128 lanes x 256 bits (8 columns) of shared memory into tensor memory.
template <int CTAS>
__device__ inline void copy(uint32_t tmem, uint64_t desc) {
  if constexpr (CTAS == 1)
    asm volatile("tcgen05.cp.cta_group::1.128x256b [%0], %1;" ::"r"(tmem), "l"(desc) : "memory");
  else
    asm volatile("tcgen05.cp.cta_group::2.128x256b [%0], %1;" ::"r"(tmem), "l"(desc) : "memory");
}

__device__ inline void wait(uint32_t bar, uint32_t parity) {
  asm volatile("{.reg .pred p; WAIT: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra WAIT;}" ::"r"(bar),
               "r"(parity)
               : "memory");
}

// All threads of the CTA (CTAS 1) or of the CTA pair (2), tensor-memory accesses ordered across the barrier.
template <int CTAS>
__device__ inline void sync() {
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
  if constexpr (CTAS == 1)
    __syncthreads();
  else
    asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::: "memory");
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
}

// tcgen05.ld / .st of NUM columns (.32x32b.xNUM) of the warp's 32 lanes, each waited for; the loaded registers are
// tied to the wait so that nothing reads them before it.
#define SMD_V8(M, o) M(v[o]), M(v[o + 1]), M(v[o + 2]), M(v[o + 3]), M(v[o + 4]), M(v[o + 5]), M(v[o + 6]), M(v[o + 7])
#define SMD_V32(M) SMD_V8(M, 0), SMD_V8(M, 8), SMD_V8(M, 16), SMD_V8(M, 24)
#define SMD_OUT(x) "=r"(x)
#define SMD_INOUT(x) "+r"(x)
#define SMD_IN(x) "r"(x)
#define SMD_R0_31 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31"
#define SMD_R1_32 \
  "%1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, " \
  "%25, %26, %27, %28, %29, %30, %31, %32"

template <int NUM>
__device__ inline void load_cols(uint32_t (&v)[NUM], uint32_t taddr) {
  static_assert(NUM == 1 || NUM == 32, "tcgen05.ld of 1 or 32 columns");
  if constexpr (NUM == 1) {
    asm volatile("tcgen05.ld.sync.aligned.32x32b.x1.b32 {%0}, [%1];" : "=r"(v[0]) : "r"(taddr));
    asm volatile("tcgen05.wait::ld.sync.aligned;" : "+r"(v[0])::"memory");
  } else {
    asm volatile("tcgen05.ld.sync.aligned.32x32b.x32.b32 {" SMD_R0_31 "}, [%32];" : SMD_V32(SMD_OUT) : "r"(taddr));
    asm volatile("tcgen05.wait::ld.sync.aligned;" : SMD_V32(SMD_INOUT)::"memory");
  }
}

template <int NUM>
__device__ inline void store_cols(const uint32_t (&v)[NUM], uint32_t taddr) {
  static_assert(NUM == 1 || NUM == 32, "tcgen05.st of 1 or 32 columns");
  if constexpr (NUM == 1)
    asm volatile("tcgen05.st.sync.aligned.32x32b.x1.b32 [%0], {%1};" ::"r"(taddr), "r"(v[0]) : "memory");
  else
    asm volatile("tcgen05.st.sync.aligned.32x32b.x32.b32 [%0], {" SMD_R1_32 "};" ::"r"(taddr), SMD_V32(SMD_IN)
                 : "memory");
  asm volatile("tcgen05.wait::st.sync.aligned;" ::: "memory");
}

// A form of tcgen05.mma: shape, CTAs, operand words (every element one small value), scale words (0: unscaled).
template <int M, int N, int K, int CTAS, uint32_t ELEMS, uint32_t SCALES>
struct Form {
  static constexpr int kM = M, kN = N, kCtas = CTAS;
  static constexpr uint32_t kElems = ELEMS, kScales = SCALES;
  static constexpr double flop = 2.0 * M * N * K;
};

// Form `Name` of .kind KIND (with block-scale qualifiers), descriptor IDESC (of kM, kN), PER_MMA what one MMA adds to
// each element of D, INT an s32 D (.kind::i8: not on sm_103a). mma(): `acc` 0 writes D = A*B.
#define SMD_TCGEN05(Name, CTAS, KIND, M, N, K, IDESC, ELEMS, SCALES, PER_MMA, INT)                               \
  struct Name : tcg::Form<M, N, K, CTAS, ELEMS, SCALES> {                                                        \
    static constexpr const char* name = #Name;                                                                  \
    static constexpr uint32_t kIdesc = IDESC;                                                                   \
    static constexpr double kPerMma = PER_MMA;                                                                  \
    static constexpr bool kInt = INT;                                                                           \
    __device__ static void mma(uint32_t d, uint64_t a, uint64_t b, uint32_t sfa, uint32_t sfb, uint32_t acc) {   \
      if constexpr (INT && !SMD_HAS(tcgen05_i8))                                                                 \
        return;                                                                                                  \
      else if constexpr (SCALES == 0)                                                                            \
        asm volatile("{.reg .pred p; setp.ne.b32 p, %4, 0; tcgen05.mma.cta_group::" #CTAS "." KIND              \
                     " [%0], %1, %2, %3, p;}" ::"r"(d),                                                          \
                     "l"(a), "l"(b), "r"(kIdesc), "r"(acc)                                                       \
                     : "memory");                                                                                \
      else                                                                                                       \
        asm volatile("{.reg .pred p; setp.ne.b32 p, %4, 0; tcgen05.mma.cta_group::" #CTAS "." KIND              \
                     " [%0], %1, %2, %3, [%5], [%6], p;}" ::"r"(d),                                              \
                     "l"(a), "l"(b), "r"(kIdesc), "r"(acc), "r"(sfa), "r"(sfb)                                   \
                     : "memory");                                                                                \
    }                                                                                                            \
  }

// Thread 0 of the even CTA times DEPTH MMAs a pass (WAIT: each committed and waited for, else one commit after the
// loop); then each warp reads its lanes of D's first and last column: CTA c, column j, thread t at out[(2c+j)*128+t].
template <class F, int WAIT, int DEPTH>
__global__ void __launch_bounds__(kThreads, 1) tcgen05_kernel(uint32_t* out, smd::Stamp* stamp, int iters) {
#if SMD_HAS(tcgen05)
  __shared__ alignas(128) uint32_t tiles[kSmem / 4];
  __shared__ alignas(8) uint64_t bar;
  __shared__ uint32_t slot;
  for (uint32_t i = threadIdx.x; i < kSmem / 4; i += blockDim.x) tiles[i] = i < kSf / 4 ? F::kElems : F::kScales;
  const uint32_t s = uint32_t(__cvta_generic_to_shared(tiles)), b = uint32_t(__cvta_generic_to_shared(&bar));
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // tcgen05.mma and .cp read through the async proxy
  if (threadIdx.x < 32) alloc<F::kCtas>(uint32_t(__cvta_generic_to_shared(&slot)));
  if (threadIdx.x == 0)  // one arrival (a commit) completes a phase; the init made visible to the cluster's arrivals
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1; fence.mbarrier_init.release.cluster;" ::"r"(b) : "memory");
  sync<F::kCtas>();
  const uint32_t tmem = slot;
  uint32_t rank = 0;
  if constexpr (F::kCtas == 2) asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  if (threadIdx.x == 0 && rank == 0) {
    const uint64_t a = smem_desc(s + kA, kLbo, kSbo), bd = smem_desc(s + kB, kLbo, kSbo);
    if constexpr (F::kScales != 0)
      for (uint32_t c = 0; c < 16; c += 8) {
        copy<F::kCtas>(tmem + kSfa + c, smem_desc(s + kSf, kLbo, kSbo));
        copy<F::kCtas>(tmem + kSfb + c, smem_desc(s + kSf, kLbo, kSbo));
      }
    F::mma(tmem, a, bd, tmem + kSfa, tmem + kSfb, 0);
    commit<F::kCtas>(b);
    wait(b, 0);
    uint32_t parity = 1;
    const long long c0 = smd::clock_cycles();
    const unsigned long long n0 = smd::clock_ns();
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
#pragma unroll
      for (int d = 0; d < DEPTH; ++d) {
        F::mma(tmem, a, bd, tmem + kSfa, tmem + kSfb, 1);
        if constexpr (WAIT) {
          commit<F::kCtas>(b);
          wait(b, parity);
          parity ^= 1;
        }
      }
    }
    if constexpr (!WAIT) {
      commit<F::kCtas>(b);
      wait(b, parity);
    }
    const long long c1 = smd::clock_cycles();
    const unsigned long long n1 = smd::clock_ns();
    *stamp = {c0, c1, n0, n1, smd::sm_id()};
  }
  sync<F::kCtas>();
  const uint32_t lane = threadIdx.x / 32 * 32;
  uint32_t first[1], last[1];
  load_cols<1>(first, tmem_at(tmem, lane, 0));
  load_cols<1>(last, tmem_at(tmem, lane, F::kN - 1));
  out[(2 * rank) * kThreads + threadIdx.x] = first[0];
  out[(2 * rank + 1) * kThreads + threadIdx.x] = last[0];
  sync<F::kCtas>();
  if (threadIdx.x < 32) dealloc<F::kCtas>(tmem);
#endif
}

// One warp times DEPTH loads (STORE: stores) of NUM columns a pass, a load's address + (the last load's first word &
// zero): `zero` is 0 at run time, unknown to the compiler.
template <int NUM, int STORE, int DEPTH>
__global__ void __launch_bounds__(32, 1) ldst_kernel(uint32_t* out, smd::Stamp* stamp, int iters, uint32_t zero) {
#if SMD_HAS(tcgen05)
  __shared__ uint32_t slot;
  alloc<1>(uint32_t(__cvta_generic_to_shared(&slot)));
  sync<1>();
  const uint32_t tmem = slot;
  uint32_t v[NUM];
  for (int i = 0; i < NUM; ++i) v[i] = zero + i;  // distinct values: each stays in its own register
  store_cols<NUM>(v, tmem);
  const long long c0 = smd::clock_cycles();
  const unsigned long long n0 = smd::clock_ns();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int d = 0; d < DEPTH; ++d) {
      if constexpr (STORE)
        store_cols<NUM>(v, tmem);
      else
        load_cols<NUM>(v, tmem + (v[0] & zero));
    }
  }
  const long long c1 = smd::clock_cycles();
  const unsigned long long n1 = smd::clock_ns();
  if (threadIdx.x == 0) *stamp = {c0, c1, n0, n1, smd::sm_id()};
  uint32_t x = 0;
  for (uint32_t y : v) x ^= y;
  out[threadIdx.x] = x;
  sync<1>();
  dealloc<1>(tmem);
#endif
}

// Why this GPU cannot run the family ("" when it can): tcgen05 needs compute capability 10.x or 11.x.
inline std::string unsupported(bool i8) {
  int dev = 0, major = 0, minor = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  SMD_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  const std::string sm = "sm_" + std::to_string(major * 10 + minor);
  if (major != 10 && major != 11) return "tcgen05 needs sm_100a, sm_103a or sm_110a, this GPU is " + sm;
  if (i8 && major * 10 + minor == 103) return "tcgen05.mma .kind::i8 is not on sm_103a (PTX ISA target notes)";
  return "";
}

// Cycles per extra step between `launch(false)` (kShort steps a pass) and `launch(true)` (kLong, in an NVTX range),
// `repeats` pairs, with the long launches' cycles, clock and SM.
struct Steps {
  std::vector<double> per_step, cycles, mhz;
  int smid = -1;
};

template <class L>
Steps time_steps(const std::string& id, const std::map<std::string, long>& point, int repeats, L launch) {
  launch(false), launch(true);  // untimed first launches (module load, instruction cache)
  const double extra = double(tc::kIters) * (kLong - kShort);
  Steps out;
  for (int r = 0; r < repeats; ++r) {
    const smd::Span s = launch(false);
    smd::Span l;
    {
      smd::NvtxRange range(smd::range_name(id, point, "long"));
      l = launch(true);
    }
    const double d = l.cycles - s.cycles;
    if (d <= 0) smd::fail(id + ": the long body took no longer than the short one (" + std::to_string(d) + " cycles)");
    out.per_step.push_back(d / extra);
    out.cycles.push_back(l.cycles), out.mhz.push_back(l.mhz), out.smid = l.smid;
  }
  return out;
}

// Device buffers of one case: D's sampled columns (or a warp's sink) and the timing stamp.
struct Buffers {
  uint32_t* out = nullptr;
  smd::Stamp* stamp = nullptr;
  Buffers() {
    SMD_CHECK(cudaMalloc(&out, sizeof(uint32_t) * 4 * kThreads));
    SMD_CHECK(cudaMalloc(&stamp, sizeof(smd::Stamp)));
  }
  ~Buffers() {
    SMD_CHECK(cudaFree(out));
    SMD_CHECK(cudaFree(stamp));
  }
  smd::Span span() const {
    std::vector<smd::Stamp> host(1);
    SMD_CHECK(cudaMemcpy(host.data(), stamp, sizeof(smd::Stamp), cudaMemcpyDeviceToHost));
    return smd::span(host);
  }
};

// One launch of tcgen05_kernel (a 2-CTA cluster for cta_group::2); every sampled element of D must be the exact sum
// of its 1 + iters * DEPTH MMAs, which a wrong descriptor would not read.
template <class F, int WAIT, int DEPTH>
smd::Span launch_mma(const Buffers& buf) {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim = {unsigned(F::kCtas), 1, 1};
  cfg.gridDim = dim3(F::kCtas), cfg.blockDim = dim3(kThreads), cfg.attrs = &attr, cfg.numAttrs = 1;
  SMD_CHECK(cudaLaunchKernelEx(&cfg, tcgen05_kernel<F, WAIT, DEPTH>, buf.out, buf.stamp, tc::kIters));
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
  std::vector<uint32_t> d(2 * F::kCtas * kThreads);
  SMD_CHECK(cudaMemcpy(d.data(), buf.out, sizeof(uint32_t) * d.size(), cudaMemcpyDeviceToHost));
  const double want = (1.0 + double(tc::kIters) * DEPTH) * F::kPerMma;
  for (uint32_t bits : d) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    const double got = F::kInt ? double(int32_t(bits)) : double(f);
    if (!(std::fabs(got - want) <= 1e-3 * want))
      smd::fail(std::string(F::name) + ": D holds " + std::to_string(got) + " where the MMAs sum to " +
                std::to_string(want) + ": an instruction or shared memory descriptor is wrong (tcgen05.cuh)");
  }
  return buf.span();
}

// Latency (wait=1: cycles per MMA round trip), throughput (MMAs per cycle per SM: a 2-CTA MMA runs on two SMs),
// FLOP/cycle/SM and TFLOPS at the recorded clock over all SMs.
template <class F, int WAIT>
void measure_mma(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  if (const std::string why = unsupported(F::kInt); !why.empty()) return smd::static_point(id, point, why);
  Buffers buf;
  const Steps t = time_steps(id, point, repeats, [&](bool longer) {
    return longer ? launch_mma<F, WAIT, kLong>(buf) : launch_mma<F, WAIT, kShort>(buf);
  });
  smd::Record rec{id, point, "", "", {}, smd::median(t.cycles), tc::kIters, smd::median(t.mhz), t.smid, "long"};
  auto emit = [&](const char* metric, const char* unit, std::vector<double> samples) {
    rec.metric = metric, rec.unit = unit, rec.samples = std::move(samples);
    smd::emit(rec);
  };
  if (WAIT) emit("latency", "cycle", t.per_step);
  std::vector<double> rate, flops, tflops;
  for (double c : t.per_step) {
    rate.push_back(1.0 / c / F::kCtas);
    flops.push_back(rate.back() * F::flop);
    tflops.push_back(flops.back() * tc::sm_count() * rec.clock_mhz * 1e6 / 1e12);
  }
  emit("throughput", "op/cycle/SM", rate);
  emit("flops", F::kInt ? "OP/cycle/SM" : "FLOP/cycle/SM", flops);
  emit("tflops", F::kInt ? "TOPS" : "TFLOPS", tflops);
}

inline std::string symbol(const char* kernel, const std::string& args) {
  return std::string(kernel) + "<" + args + ">";
}

// A case over n and wait: one kernel pair per (form, wait).
template <class... Fs>
smd::FamilyCase mma_case(const char* id) {
  return {id,
          [] {
            std::vector<smd::KernelInfo> k;
            for (int wait : {0, 1})
              for (int body : {kShort, kLong})
                (k.push_back({{{"n", Fs::kN}, {"wait", wait}},
                              body == kShort ? "short" : "long",
                              body,
                              tc::kIters,
                              symbol("tcgen05_kernel", std::string(Fs::name) + "," + std::to_string(wait) + "," +
                                                           std::to_string(body))}),
                 ...);
            return k;
          },
          [](const std::string& case_id, const std::map<std::string, long>& point, int repeats) {
            const long n = smd::param(point, "n"), wait = smd::param(point, "wait");
            const bool found = ((n == Fs::kN ? (wait ? measure_mma<Fs, 1>(case_id, point, repeats)
                                                     : measure_mma<Fs, 0>(case_id, point, repeats),
                                                true)
                                             : false) ||
                                ...);
            if (!found || (wait != 0 && wait != 1))
              smd::fail(case_id + ": n=" + std::to_string(n) + ", wait=" + std::to_string(wait) +
                        " is not compiled: use n 64, 128, 256 and wait 0 or 1", 2);
          }};
}

template <int NUM, int STORE>
void measure_ldst(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  if (const std::string why = unsupported(false); !why.empty()) return smd::static_point(id, point, why);
  Buffers buf;
  auto run = [&](auto kernel) {
    kernel<<<1, 32>>>(buf.out, buf.stamp, tc::kIters, 0u);
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaDeviceSynchronize());
    return buf.span();
  };
  const Steps t = time_steps(id, point, repeats, [&](bool longer) {
    return longer ? run(ldst_kernel<NUM, STORE, kLong>) : run(ldst_kernel<NUM, STORE, kShort>);
  });
  smd::emit({id, point, "latency", "cycle", t.per_step, smd::median(t.cycles), tc::kIters, smd::median(t.mhz), t.smid,
             "long"});
}

// A tcgen05.ld (STORE: .st) case over num, the columns per instruction.
template <int STORE>
smd::FamilyCase ldst_case(const char* id) {
  return {id,
          [] {
            std::vector<smd::KernelInfo> k;
            for (int num : {1, 32})
              for (int body : {kShort, kLong})
                k.push_back({{{"num", num}},
                             body == kShort ? "short" : "long",
                             body,
                             tc::kIters,
                             symbol("ldst_kernel", std::to_string(num) + "," + std::to_string(STORE) + "," +
                                                       std::to_string(body))});
            return k;
          },
          [](const std::string& case_id, const std::map<std::string, long>& point, int repeats) {
            switch (smd::param(point, "num")) {
              case 1: return measure_ldst<1, STORE>(case_id, point, repeats);
              case 32: return measure_ldst<32, STORE>(case_id, point, repeats);
              default:
                smd::fail(case_id + ": num=" + std::to_string(smd::param(point, "num")) +
                              " is not compiled: use 1 or 32",
                          2);
            }
          }};
}

}  // namespace tcg

// Forms at N 64, 128 and 256, and the case over them.
#define SMD_TCGEN05_N(P, CTAS, KIND, M, K, IDESC, ELEMS, SCALES, PER_MMA, INT)                             \
  SMD_TCGEN05(P##N64, CTAS, KIND, M, 64, K, IDESC, ELEMS, SCALES, PER_MMA, INT);                          \
  SMD_TCGEN05(P##N128, CTAS, KIND, M, 128, K, IDESC, ELEMS, SCALES, PER_MMA, INT);                        \
  SMD_TCGEN05(P##N256, CTAS, KIND, M, 256, K, IDESC, ELEMS, SCALES, PER_MMA, INT);                        \
  smd::FamilyCase P##Case(const char* id) { return tcg::mma_case<P##N64, P##N128, P##N256>(id); }

// Operands: f16 1/64 (0x2400), tf32 1/64, e4m3 1/8 (0x20), s8 1, e2m1 1/2 (0x1 a nibble); scales 1.0 (ue8m0 127,
// ue4m3 0x38). PER_MMA = K x a x b.
using tcg::idesc;
using tcg::idesc_scaled;
SMD_TCGEN05_N(F16, 1, "kind::f16", 128, 16, idesc(tcg::kF32, tcg::kF16, tcg::kF16, kM, kN), 0x24002400u, 0, 0x1p-8,
              false)
SMD_TCGEN05_N(Tf32, 1, "kind::tf32", 128, 8, idesc(tcg::kF32, tcg::kTf32, tcg::kTf32, kM, kN), 0x3C800000u, 0, 0x1p-9,
              false)
SMD_TCGEN05_N(E4m3, 1, "kind::f8f6f4", 128, 32, idesc(tcg::kF32, tcg::kE4m3, tcg::kE4m3, kM, kN), 0x20202020u, 0,
              0.5, false)
SMD_TCGEN05_N(S8, 1, "kind::i8", 128, 32, idesc(tcg::kS32, tcg::kS8, tcg::kS8, kM, kN), 0x01010101u, 0, 32.0, true)
SMD_TCGEN05_N(Mxf8, 1, "kind::mxf8f6f4.block_scale.scale_vec::1X", 128, 32,
              idesc_scaled(tcg::kE4m3, tcg::kE4m3, 1, kM, kN), 0x20202020u, 0x7F7F7F7Fu, 0.5, false)
SMD_TCGEN05_N(Nvf4, 1, "kind::mxf4nvf4.block_scale.scale_vec::4X", 128, 64,
              idesc_scaled(tcg::kNvf4E2m1, tcg::kNvf4E2m1, 0, kM, kN), 0x11111111u, 0x38383838u, 16.0, false)
SMD_TCGEN05_N(F16Pair, 2, "kind::f16", 256, 16, idesc(tcg::kF32, tcg::kF16, tcg::kF16, kM, kN), 0x24002400u, 0,
              0x1p-8, false)

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv,
      {F16Case("tcgen05_f16_f32"), Tf32Case("tcgen05_tf32_f32"), E4m3Case("tcgen05_e4m3_f32"),
       S8Case("tcgen05_s8_s32"), Mxf8Case("tcgen05_mxf8f6f4_f32"), Nvf4Case("tcgen05_mxf4nvf4_f32"),
       F16PairCase("tcgen05_f16_f32_cta2"), tcg::ldst_case<0>("tcgen05_ld_latency"),
       tcg::ldst_case<1>("tcgen05_st_latency")});
}
