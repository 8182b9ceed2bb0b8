// Power: board power (NVML) of sustained FP32 FFMA, FP16 HFMA2, BF16 mma.sync and FP64 DFMA work on 1..all SMs,
// and of the idle card. `sms` persistent CTAs of 1024 threads, each asking for over half an SM's shared memory,
// so that no two share an SM (checked with %smid), loop until their own %globaltimer deadline. The host waits
// until every CTA runs, lets power settle, and reads NVML's energy counter at the start and end of a window
// (each read aligned to the counter's next update) while sampling power, SM clock, temperature and clock event
// (throttle) reasons; the kernel must still be running when the window closes. NVML is loaded at run time
// (dlopen) and the device is matched to the CUDA device by UUID, since NVML ignores CUDA_VISIBLE_DEVICES.
// Clocks and power limits are never changed. One sustained window per point: --repeats is ignored.
// clock_limits reads the card's clock and power-limit settings (NVML) beside the CUDA device attributes;
// power_soak runs the BF16 mma.sync load on every SM for `seconds` while NVML is read every 100 ms, and the
// kernel stamps clock64 and %globaltimer every 100 ms on each SM (the clock the SMs ran, bin by bin).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <thread>

#include "../common/harness.cuh"
#include "../common/nvml.cuh"

constexpr int kThreads = 1024;
constexpr double kSettleS = 0.25;  // after every CTA started, before the window opens
constexpr double kWindowS = 1.0;   // the measured window
constexpr double kEdgeS = 0.1;     // longest wait for the energy counter's next update at each end of the window
constexpr double kTailS = 0.3;     // margin: the kernel outlasts the window by at least this
constexpr double kIdleSettleS = 2.0;
constexpr double kPollS = 0.025;   // NVML sampling period inside the window

// ---- deterministic operands, the same on host and device ----

__host__ __device__ inline uint32_t mix(uint32_t x) {
  x ^= x >> 16, x *= 0x7feb352du, x ^= x >> 15, x *= 0x846ca68bu, x ^= x >> 16;
  return x;
}
// c of the map x -> x*x + c: -(1.8125 + k/128), exact in fp16/fp32/fp64; chaotic, and [c, c*c + c] is invariant
// under a correctly rounded FMA (monotone in x*x <= c*c), so every chain stays in it whatever its length.
__host__ __device__ inline double chaos_c(uint32_t thread) { return -(1.8125 + (mix(thread) & 15) / 128.0); }
__host__ __device__ inline double chaos_x0(uint32_t thread, int k) {
  return 2.8 * ((mix(thread * 64u + k + 1u) >> 8) * (1.0 / 16777216.0)) - 1.4;
}
// bf16 operand i of a thread: random sign and 7-bit mantissa, magnitude in [0.5, 2).
__host__ __device__ inline uint16_t bf16_bits(uint32_t thread, int i) {
  const uint32_t h = mix(thread * 64u + i + 0x9e3779b9u);
  return uint16_t((h & 0x8000u) | ((126u + ((h >> 7) & 1u)) << 7) | (h & 0x7fu));
}
// accumulator start value j of a thread: a multiple of 1/8 in [-2, 2].
__host__ __device__ inline float acc0(uint32_t thread, int j) {
  return float(int(mix(thread * 64u + j + 7u) % 33u) - 16) / 8;
}

// Host check of a scalar chaos chain: inside [c, c*c + c] (slack for fp16 rounding of the bound), and moved.
struct ChaosCheck {
  long moved = 0, total = 0;
  std::string bad;
  void add(uint32_t t, int k, double x) {
    const double c = chaos_c(t), x0 = chaos_x0(t, k);
    if (!(x >= c - 0.01 && x <= c * c + c + 0.01) && bad.empty())
      bad = "thread " + std::to_string(t) + " chain " + std::to_string(k) + " left [c, c*c+c]: " + std::to_string(x);
    moved += std::fabs(x - x0) > 1e-3, ++total;
  }
  std::string verdict() const {
    if (!bad.empty()) return bad;
    return 2 * moved < total ? "most chains ended where they started: the loop did not run" : "";
  }
  // The verdict on `chains` chains per thread, stored thread by thread in `out`.
  static std::string of(const std::vector<double>& out, uint32_t threads, int chains) {
    ChaosCheck check;
    for (uint32_t t = 0; t < threads; ++t)
      for (int k = 0; k < chains; ++k) check.add(t, k, out[size_t(t) * chains + k]);
    return check.verdict();
  }
};

// ---- the sustained operations: one loop body is kOps instructions per thread ----

// FP32 FFMA or FP64 DFMA chains x <- x*x + c of scalar type T; kCheck loop bodies between deadline checks.
template <class T, int CHECK>
struct ScalarFma {
  static constexpr int kChains = 8, kSteps = 16, kOps = kChains * kSteps, kCheck = CHECK, kOut = kChains;
  static constexpr double kFlops = 2;  // per thread and instruction
  struct State {
    T x[kChains];
    T c;
  };
  __device__ static State init(uint32_t t) {
    State s;
    s.c = T(chaos_c(t));
    for (int k = 0; k < kChains; ++k) s.x[k] = T(chaos_x0(t, k));
    return s;
  }
  __device__ __forceinline__ static void body(State& s) {
#pragma unroll
    for (int i = 0; i < kSteps; ++i)
#pragma unroll
      for (int k = 0; k < kChains; ++k) {
        if constexpr (sizeof(T) == 4) asm("fma.rn.f32 %0, %0, %0, %1;" : "+f"(s.x[k]) : "f"(s.c));
        else asm("fma.rn.f64 %0, %0, %0, %1;" : "+d"(s.x[k]) : "d"(s.c));
      }
  }
  __device__ static void finish(State& s, double* out) {
    for (int k = 0; k < kChains; ++k) out[k] = s.x[k];
  }
  static std::string verify(const std::vector<double>& out, uint32_t threads) {
    return ChaosCheck::of(out, threads, kOut);
  }
};
struct Ffma : ScalarFma<float, 16> {};
struct Dfma : ScalarFma<double, 4> {};

struct Hfma2 {
  static constexpr int kChains = 8, kSteps = 16, kOps = kChains * kSteps, kCheck = 16, kOut = 2 * kChains;
  static constexpr double kFlops = 4;
  struct State {
    uint32_t x[kChains];  // f16x2
    uint32_t c;
  };
  __device__ static uint32_t pack(double lo, double hi) {
    const __half2 h = __halves2half2(__double2half(lo), __double2half(hi));
    return *reinterpret_cast<const uint32_t*>(&h);
  }
  __device__ static State init(uint32_t t) {
    State s;
    s.c = pack(chaos_c(t), chaos_c(t));
    for (int k = 0; k < kChains; ++k) s.x[k] = pack(chaos_x0(t, 2 * k), chaos_x0(t, 2 * k + 1));
    return s;
  }
  __device__ __forceinline__ static void body(State& s) {
#pragma unroll
    for (int i = 0; i < kSteps; ++i)
#pragma unroll
      for (int k = 0; k < kChains; ++k) asm("fma.rn.f16x2 %0, %0, %0, %1;" : "+r"(s.x[k]) : "r"(s.c));
  }
  __device__ static void finish(State& s, double* out) {
    for (int k = 0; k < kChains; ++k) {
      const __half2 h = *reinterpret_cast<const __half2*>(&s.x[k]);
      out[2 * k] = __low2float(h), out[2 * k + 1] = __high2float(h);
    }
  }
  static std::string verify(const std::vector<double>& out, uint32_t threads) {
    return ChaosCheck::of(out, threads, kOut);
  }
};

// mma.sync m16n8k16 BF16 -> FP32: kChains accumulators per warp, each alternately += A*B and += A*(-B), so it
// returns to its start C0 after every pair; one last += A*B after the loop leaves C0 + A*B, which the host
// recomputes from the fragment layout of the PTX ISA.
struct MmaBf16 {
  static constexpr int kChains = 4, kPairs = 4, kOps = 2 * kChains * kPairs, kCheck = 8, kOut = 4 * kChains;
  static constexpr double kFlops = 2.0 * 16 * 8 * 16 / 32;  // per thread of the warp
  struct State {
    float d[kChains][4];
    uint32_t a[4], b[2], bn[2];
  };
  __device__ static State init(uint32_t t) {
    State s;
    for (int r = 0; r < 4; ++r) s.a[r] = bf16_bits(t, 2 * r) | uint32_t(bf16_bits(t, 2 * r + 1)) << 16;
    for (int r = 0; r < 2; ++r) {
      s.b[r] = bf16_bits(t, 8 + 2 * r) | uint32_t(bf16_bits(t, 9 + 2 * r)) << 16;
      s.bn[r] = s.b[r] ^ 0x80008000u;
    }
    for (int k = 0; k < kChains; ++k)
      for (int j = 0; j < 4; ++j) s.d[k][j] = acc0(t, 4 * k + j);
    return s;
  }
  __device__ __forceinline__ static void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  __device__ __forceinline__ static void body(State& s) {
#pragma unroll
    for (int p = 0; p < kPairs; ++p) {
#pragma unroll
      for (int k = 0; k < kChains; ++k) mma(s.d[k], s.a, s.b);
#pragma unroll
      for (int k = 0; k < kChains; ++k) mma(s.d[k], s.a, s.bn);
    }
  }
  __device__ static void finish(State& s, double* out) {
    for (int k = 0; k < kChains; ++k) {
      mma(s.d[k], s.a, s.b);
      for (int j = 0; j < 4; ++j) out[4 * k + j] = s.d[k][j];
    }
  }
  static double bf16(uint16_t bits) {
    const uint32_t w = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &w, 4);
    return f;
  }
  static std::string verify(const std::vector<double>& out, uint32_t threads) {
    for (uint32_t warp = 0; warp < threads / 32; ++warp) {
      double A[16][16], B[16][8];
      for (int lane = 0; lane < 32; ++lane) {
        const uint32_t t = warp * 32 + lane;
        const int g = lane / 4, q = lane % 4;
        for (int i = 0; i < 8; ++i) A[g + 8 * ((i / 2) & 1)][2 * q + (i & 1) + 8 * (i / 4)] = bf16(bf16_bits(t, i));
        for (int i = 0; i < 4; ++i) B[2 * q + (i & 1) + 8 * (i / 2)][g] = bf16(bf16_bits(t, 8 + i));
      }
      for (int lane = 0; lane < 32; ++lane) {
        const uint32_t t = warp * 32 + lane;
        const int g = lane / 4, q = lane % 4;
        for (int k = 0; k < kChains; ++k)
          for (int j = 0; j < 4; ++j) {
            const int row = g + 8 * (j / 2), col = 2 * q + (j & 1);
            double want = acc0(t, 4 * k + j);
            for (int i = 0; i < 16; ++i) want += A[row][i] * B[i][col];
            const double got = out[size_t(t) * kOut + 4 * k + j];
            if (!(std::fabs(got - want) <= 1e-3 * (1 + std::fabs(want))))
              return "mma accumulator of thread " + std::to_string(t) + " is " + std::to_string(got) +
                     ", C0 + A*B is " + std::to_string(want);
          }
      }
    }
    return "";
  }
};

// ---- the persistent kernel ----

struct CtaStamp {
  long long c0, c1;
  unsigned long long ns0, ns1;
  unsigned smid;
};

struct PowerArgs {
  unsigned long long duration_ns;
  volatile unsigned* started;  // mapped host memory: CTA i sets started[i] once it runs
  unsigned long long* bodies;  // loop bodies summed over warps
  CtaStamp* stamps;
  double* out;
};

template <class Op>
__global__ void __launch_bounds__(kThreads, 1) power_kernel(PowerArgs a) {
  extern __shared__ char reserve[];  // dynamic shared memory only keeps a second CTA off this SM
  __shared__ unsigned long long deadline;
  __shared__ long long c0;
  __shared__ unsigned long long ns0;
  if (threadIdx.x == 0) {
    ns0 = smd::clock_ns(), c0 = smd::clock_cycles();
    deadline = ns0 + a.duration_ns;
    a.started[blockIdx.x] = 1;
    __threadfence_system();
  }
  __syncthreads();
  const uint32_t t = blockIdx.x * kThreads + threadIdx.x;
  typename Op::State s = Op::init(t);
  unsigned long long bodies = 0;
  const unsigned long long end = deadline;
  for (;;) {
#pragma unroll 1
    for (int k = 0; k < Op::kCheck; ++k) Op::body(s);
    bodies += Op::kCheck;
    if (__shfl_sync(0xffffffffu, smd::clock_ns(), 0) >= end) break;
  }
  Op::finish(s, a.out + size_t(t) * Op::kOut);
  if (threadIdx.x % 32 == 0) atomicAdd(a.bodies, bodies);
  __syncthreads();
  if (threadIdx.x == 0) a.stamps[blockIdx.x] = {c0, smd::clock_cycles(), ns0, smd::clock_ns(), smd::sm_id()};
}

// power_kernel's loop, run bin by bin: at the first deadline check past each `bin_ns` (and at the end) thread 0 of
// each CTA stamps %globaltimer and clock64 (bins[CTA * max_bins + i]): the clock each SM ran, bin by bin. The
// clock64 read sits between bins, outside the loop the bodies run in, so that loop is the timed one.
struct BinStamp {
  unsigned long long ns;
  long long cycles;
};

template <class Op>
__global__ void __launch_bounds__(kThreads, 1)
    soak_kernel(PowerArgs a, BinStamp* bins, int max_bins, unsigned long long bin_ns) {
  extern __shared__ char reserve[];
  __shared__ unsigned long long deadline;
  __shared__ long long c0;
  __shared__ unsigned long long ns0;
  if (threadIdx.x == 0) {
    ns0 = smd::clock_ns(), c0 = smd::clock_cycles();
    deadline = ns0 + a.duration_ns;
    a.started[blockIdx.x] = 1;
    __threadfence_system();
  }
  __syncthreads();
  const uint32_t t = blockIdx.x * kThreads + threadIdx.x;
  typename Op::State s = Op::init(t);
  unsigned long long bodies = 0, next = ns0 + bin_ns, now;
  const unsigned long long end = deadline;
  BinStamp* mine = bins + size_t(blockIdx.x) * max_bins;
  for (int bin = 0;; ++bin, next += bin_ns) {
    const unsigned long long until = next < end ? next : end;
    do {
#pragma unroll 1
      for (int k = 0; k < Op::kCheck; ++k) Op::body(s);
      bodies += Op::kCheck;
      now = __shfl_sync(0xffffffffu, smd::clock_ns(), 0);
    } while (now < until);
    if (threadIdx.x == 0 && bin < max_bins) mine[bin] = {now, smd::clock_cycles()};
    if (now >= end) break;
  }
  Op::finish(s, a.out + size_t(t) * Op::kOut);
  if (threadIdx.x % 32 == 0) atomicAdd(a.bodies, bodies);
  __syncthreads();
  if (threadIdx.x == 0) a.stamps[blockIdx.x] = {c0, smd::clock_cycles(), ns0, smd::clock_ns(), smd::sm_id()};
}

// ---- NVML, loaded at run time ----

class Nvml {
 public:
  // The NVML device of the current CUDA device, matched by UUID.
  Nvml() {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!lib_) smd::fail("cannot load libnvidia-ml.so.1 (the NVIDIA driver's NVML): power needs it");
    error_string_ = reinterpret_cast<const char* (*)(int)>(sym("nvmlErrorString"));
    check(call<>("nvmlInit_v2"), "nvmlInit_v2");
    int dev = 0;
    SMD_CHECK(cudaGetDevice(&dev));
    const std::string want = smd::nvml_uuid(dev);
    void* handle = nullptr;
    char uuid[96] = {};
    const int found = call<const char*, void**>("nvmlDeviceGetHandleByUUID", want.c_str(), &handle);
    if (found != 0)
      smd::fail(std::string("NVML has no GPU with the CUDA device's UUID ") + want + ": " + error_string_(found));
    check(call<void*, char*, unsigned>("nvmlDeviceGetUUID", handle, uuid, sizeof uuid), "nvmlDeviceGetUUID");
    if (std::string(uuid) != want)
      smd::fail(std::string("NVML gave GPU ") + uuid + " for the CUDA device's UUID " + want);
    device_ = handle;
    reasons_ = dlsym(lib_, "nvmlDeviceGetCurrentClocksEventReasons") ? "nvmlDeviceGetCurrentClocksEventReasons"
                                                                     : "nvmlDeviceGetCurrentClocksThrottleReasons";
  }
  unsigned long long energy_mj() {
    unsigned long long mj = 0;
    check(call<void*, unsigned long long*>("nvmlDeviceGetTotalEnergyConsumption", device_, &mj),
          "nvmlDeviceGetTotalEnergyConsumption");
    return mj;
  }
  double power_w() {
    unsigned mw = 0;
    check(call<void*, unsigned*>("nvmlDeviceGetPowerUsage", device_, &mw), "nvmlDeviceGetPowerUsage");
    return mw / 1e3;
  }
  double sm_clock_mhz() {
    unsigned mhz = 0;
    check(call<void*, int, unsigned*>("nvmlDeviceGetClockInfo", device_, 1 /* NVML_CLOCK_SM */, &mhz),
          "nvmlDeviceGetClockInfo");
    return mhz;
  }
  double temperature_c() {
    unsigned c = 0;
    check(call<void*, int, unsigned*>("nvmlDeviceGetTemperature", device_, 0 /* NVML_TEMPERATURE_GPU */, &c),
          "nvmlDeviceGetTemperature");
    return c;
  }
  unsigned long long reasons() {
    unsigned long long mask = 0;
    check(call<void*, unsigned long long*>(reasons_, device_, &mask), reasons_);
    return mask;
  }
  // A setting read with nvml<name>(device, type, &value) or nvml<name>(device, &value): its status and value.
  std::pair<int, unsigned> setting(const char* name, int type = -1) {
    unsigned v = 0;
    const int ret =
        type < 0 ? call<void*, unsigned*>(name, device_, &v) : call<void*, int, unsigned*>(name, device_, type, &v);
    return {ret, v};
  }
  std::pair<int, unsigned> max_power_limit_mw() {
    unsigned lo = 0, hi = 0;
    return {call<void*, unsigned*, unsigned*>("nvmlDeviceGetPowerManagementLimitConstraints", device_, &lo, &hi), hi};
  }
  const char* error(int ret) const { return error_string_(ret); }

 private:
  void* sym(const char* name) {
    void* f = dlsym(lib_, name);
    if (!f) smd::fail(std::string("libnvidia-ml.so.1 lacks ") + name + ": the driver is too old for power");
    return f;
  }
  template <class... A>
  int call(const char* name, A... args) {
    return reinterpret_cast<int (*)(A...)>(sym(name))(args...);
  }
  void check(int ret, const char* what) {
    if (ret != 0) smd::fail(std::string(what) + " failed: " + error_string_(ret));
  }
  void* lib_ = nullptr;
  void* device_ = nullptr;
  const char* (*error_string_)(int) = nullptr;
  const char* reasons_ = nullptr;
};

Nvml& nvml() {
  static Nvml n;
  return n;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

// The energy counter's first new value (and when it was seen), so that a window's ends sit on its updates.
std::pair<unsigned long long, double> energy_edge() {
  const unsigned long long first = nvml().energy_mj();
  const double start = now_s();
  for (;;) {
    const unsigned long long e = nvml().energy_mj();
    const double t = now_s();
    if (e != first || t - start > kEdgeS) return {e, t};
    sleep_s(0.0005);
  }
}

// What NVML saw over one window.
struct Window {
  double energy_j = 0, seconds = 0;
  std::vector<double> power, clock, temperature;
  unsigned long long reasons = 0;  // OR of every clock event reason mask read in the window
};

Window measure_window() {
  Window w;
  const auto [e0, t0] = energy_edge();
  do {
    w.power.push_back(nvml().power_w());
    w.clock.push_back(nvml().sm_clock_mhz());
    w.temperature.push_back(nvml().temperature_c());
    w.reasons |= nvml().reasons();
    sleep_s(kPollS);
  } while (now_s() - t0 < kWindowS);
  const auto [e1, t1] = energy_edge();
  w.energy_j = (e1 - e0) / 1e3, w.seconds = t1 - t0;
  return w;
}

// The records every point has: energy-based average power and its NVML readings.
void emit_window(const std::string& id, const std::map<std::string, long>& point, const Window& w, double mhz,
                 int smid, long long iterations) {
  auto rec = [&](const char* metric, const char* unit, std::vector<double> samples) {
    smd::Record r{id, point, metric, unit, std::move(samples)};
    r.iterations = iterations, r.clock_mhz = mhz, r.smid = smid;
    smd::emit(r);
  };
  rec("power", "W", {w.energy_j / w.seconds});
  rec("energy", "J", {w.energy_j});
  rec("power_nvml", "W", w.power);
  rec("sm_clock_nvml", "MHz", w.clock);
  rec("temperature", "C", w.temperature);
  rec("throttle_reasons", "bitmask", {double(w.reasons)});
}

// ---- one point ----

struct Launch {
  int sms = 0;
  size_t smem = 0;
  volatile unsigned* started = nullptr;  // host view
  unsigned* started_dev = nullptr;
  unsigned long long* bodies = nullptr;
  CtaStamp* stamps = nullptr;
  double* out = nullptr;
};

template <class Op>
void launch(const Launch& l, double seconds) {
  std::fill(l.started, l.started + l.sms, 0u);
  SMD_CHECK(cudaMemset(l.bodies, 0, sizeof(unsigned long long)));
  PowerArgs a{(unsigned long long)(seconds * 1e9), l.started_dev, l.bodies, l.stamps, l.out};
  power_kernel<Op><<<l.sms, kThreads, l.smem>>>(a);
  SMD_CHECK(cudaGetLastError());
}

// Wait until every CTA runs; a CTA left waiting means fewer free SMs than asked.
void wait_started(const Launch& l) {
  const double start = now_s();
  for (;;) {
    int n = 0;
    for (int i = 0; i < l.sms; ++i) n += l.started[i] != 0;
    if (n == l.sms) return;
    if (now_s() - start > 1.0)
      smd::fail(std::to_string(n) + " of " + std::to_string(l.sms) +
                " CTAs started within 1 s: fewer SMs free than asked");
    sleep_s(0.0002);
  }
}

int device_sms() {
  int dev = 0, sms = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

// The buffers of `sms` persistent CTAs of `kernel`, each asking for over half an SM's shared memory so that no two
// share an SM (checked: one CTA per SM fits); NVML loaded before anything is timed.
template <class Op, class Kernel>
Launch prepare(long sms, Kernel kernel) {
  int dev = 0, per_sm = 0, optin = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  SMD_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  Launch l;
  l.sms = int(sms), l.smem = size_t(per_sm) / 2 + 1;
  if (l.smem > size_t(optin)) smd::fail("a CTA cannot ask for over half an SM's shared memory on this device");
  SMD_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(l.smem)));
  int per_sm_ctas = 0;
  SMD_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_ctas, kernel, kThreads, l.smem));
  if (per_sm_ctas != 1) smd::fail("the power kernel fits " + std::to_string(per_sm_ctas) + " CTAs per SM, not 1");
  unsigned* host_started = nullptr;
  SMD_CHECK(cudaHostAlloc(&host_started, sms * sizeof(unsigned), cudaHostAllocMapped));
  SMD_CHECK(cudaHostGetDevicePointer(&l.started_dev, host_started, 0));
  l.started = host_started;
  SMD_CHECK(cudaMalloc(&l.bodies, sizeof(unsigned long long)));
  SMD_CHECK(cudaMalloc(&l.stamps, sms * sizeof(CtaStamp)));
  SMD_CHECK(cudaMalloc(&l.out, size_t(sms) * kThreads * Op::kOut * sizeof(double)));
  nvml();
  return l;
}

// After the kernel: each CTA's stamps and the loop bodies summed over warps; the buffers freed, every thread's result
// checked on the host and every CTA found on an SM of its own (else a one-line error).
template <class Op>
std::vector<CtaStamp> collect(const std::string& id, const std::map<std::string, long>& point, const Launch& l,
                              unsigned long long& bodies) {
  const uint32_t threads = uint32_t(l.sms) * kThreads;
  std::vector<CtaStamp> stamps(l.sms);
  std::vector<double> out(size_t(threads) * Op::kOut);
  SMD_CHECK(cudaMemcpy(stamps.data(), l.stamps, l.sms * sizeof(CtaStamp), cudaMemcpyDeviceToHost));
  SMD_CHECK(cudaMemcpy(out.data(), l.out, out.size() * sizeof(double), cudaMemcpyDeviceToHost));
  SMD_CHECK(cudaMemcpy(&bodies, l.bodies, sizeof bodies, cudaMemcpyDeviceToHost));
  SMD_CHECK(cudaFreeHost(const_cast<unsigned*>(l.started)));
  SMD_CHECK(cudaFree(l.bodies));
  SMD_CHECK(cudaFree(l.stamps));
  SMD_CHECK(cudaFree(l.out));
  const std::string bad = Op::verify(out, threads);
  if (!bad.empty()) smd::fail(id + " " + smd::params_json(point) + ": " + bad);
  std::set<unsigned> smids;
  for (const auto& s : stamps) smids.insert(s.smid);
  if (long(smids.size()) != l.sms)
    smd::fail(std::to_string(l.sms) + " CTAs ran on " + std::to_string(smids.size()) + " distinct SMs: not one per SM");
  return stamps;
}

template <class Op>
void run_power(const std::string& id, const std::map<std::string, long>& point, int /*repeats*/) {
  const long sms = smd::param(point, "sms");
  if (sms < 1) smd::fail("sms must be >= 1 (the idle card is case power_idle)", 2);
  if (sms > device_sms())
    return smd::static_point(id, point, "the device has " + std::to_string(device_sms()) + " SMs");
  Launch l = prepare<Op>(sms, power_kernel<Op>);
  const uint32_t threads = uint32_t(sms) * kThreads;

  launch<Op>(l, 0.02);  // untimed: module load, placement
  SMD_CHECK(cudaDeviceSynchronize());
  Window w;
  for (int attempt = 1;; ++attempt) {  // the window must close while the kernel still runs: else once more
    launch<Op>(l, kSettleS + kWindowS + 2 * kEdgeS + kTailS);
    wait_started(l);
    sleep_s(kSettleS);
    w = measure_window();
    const bool running = cudaStreamQuery(0) == cudaErrorNotReady;
    (void)cudaGetLastError();  // 'not ready' is the expected answer, not an error to carry into the next launch
    SMD_CHECK(cudaDeviceSynchronize());
    if (running) break;
    if (attempt == 2) smd::fail("the kernel ended before the power window closed, twice (host delayed?)");
  }

  unsigned long long bodies = 0;
  const std::vector<CtaStamp> stamps = collect<Op>(id, point, l, bodies);
  std::vector<double> mhz;
  unsigned long long first = stamps[0].ns0, last = stamps[0].ns1;
  for (const auto& s : stamps) {
    mhz.push_back((s.c1 - s.c0) * 1e3 / double(s.ns1 - s.ns0));
    first = std::min(first, s.ns0), last = std::max(last, s.ns1);
  }
  const double flops = double(bodies) * 32 * Op::kOps * Op::kFlops;
  const long long per_warp = (long long)(bodies / (threads / 32));
  const double clock = smd::median(mhz);
  const int smid = sms == 1 ? int(stamps[0].smid) : -1;
  emit_window(id, point, w, clock, smid, per_warp);
  smd::Record r{id, point, "tflops", "TFLOPS", {flops / double(last - first) / 1e3}};
  r.iterations = per_warp, r.clock_mhz = clock, r.smid = smid;
  smd::emit(r);
}

void run_idle(const std::string& id, const std::map<std::string, long>& point, int /*repeats*/) {
  if (smd::param(point, "sms") != 0) smd::fail("power_idle runs no kernel: its only point is sms=0", 2);
  nvml();
  SMD_CHECK(cudaDeviceSynchronize());
  sleep_s(kIdleSettleS);
  const Window w = measure_window();
  emit_window(id, point, w, smd::median(w.clock), -1, 0);
}

// The card's clock and power-limit settings from NVML, read once (they are settings, not measurements), beside the
// CUDA device attribute of the SM clock; a setting this NVML cannot report is a stderr line naming it.
void run_limits(const std::string& id, const std::map<std::string, long>& point, int /*repeats*/) {
  Nvml& n = nvml();
  struct Read {
    const char *metric, *unit, *what;
    std::pair<int, unsigned> got;
    double scale;
  };
  const Read reads[] = {
      {"max_sm_clock", "MHz", "nvmlDeviceGetMaxClockInfo(SM)", n.setting("nvmlDeviceGetMaxClockInfo", 1), 1},
      {"default_sm_clock", "MHz", "nvmlDeviceGetDefaultApplicationsClock(SM)",
       n.setting("nvmlDeviceGetDefaultApplicationsClock", 1), 1},
      {"max_memory_clock", "MHz", "nvmlDeviceGetMaxClockInfo(MEM)", n.setting("nvmlDeviceGetMaxClockInfo", 2), 1},
      {"power_limit", "W", "nvmlDeviceGetEnforcedPowerLimit", n.setting("nvmlDeviceGetEnforcedPowerLimit"), 1e-3},
      {"default_power_limit", "W", "nvmlDeviceGetPowerManagementDefaultLimit",
       n.setting("nvmlDeviceGetPowerManagementDefaultLimit"), 1e-3},
      {"max_power_limit", "W", "nvmlDeviceGetPowerManagementLimitConstraints", n.max_power_limit_mw(), 1e-3}};
  for (const Read& r : reads) {
    if (r.got.first != 0) {
      std::fprintf(stderr, "%s %s: %s: %s\n", id.c_str(), smd::params_json(point).c_str(), r.what,
                   n.error(r.got.first));
      continue;
    }
    smd::Record rec{id, point, r.metric, r.unit, {r.got.second * r.scale}};
    rec.iterations = 1;
    smd::emit(rec);
  }
  int dev = 0, khz = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));
  smd::Record attribute{id, point, "sm_clock_attribute", "MHz", {khz / 1e3}};
  attribute.iterations = 1;
  smd::emit(attribute);
}

// ---- the soak: the BF16 mma.sync load on every SM for `seconds`, NVML and the SMs' own clock every 100 ms ----

using SoakOp = MmaBf16;
constexpr double kSoakBinS = 0.1;  // NVML sampling period and the kernel's clock bin

void launch_soak(const Launch& l, BinStamp* bins, int max_bins, double seconds) {
  std::fill(l.started, l.started + l.sms, 0u);
  SMD_CHECK(cudaMemset(l.bodies, 0, sizeof(unsigned long long)));
  SMD_CHECK(cudaMemset(bins, 0, size_t(l.sms) * max_bins * sizeof(BinStamp)));
  PowerArgs a{(unsigned long long)(seconds * 1e9), l.started_dev, l.bodies, l.stamps, l.out};
  soak_kernel<SoakOp><<<l.sms, kThreads, l.smem>>>(a, bins, max_bins, (unsigned long long)(kSoakBinS * 1e9));
  SMD_CHECK(cudaGetLastError());
}

// Per bin every CTA completed: when it ended (s since each CTA's start) and the SMs' clock over it (MHz: clock64 over
// %globaltimer between consecutive stamps of a CTA, the first from its start), each the median over CTAs.
std::pair<std::vector<double>, std::vector<double>> bin_clocks(const std::vector<CtaStamp>& stamps,
                                                               const std::vector<BinStamp>& bins, int max_bins) {
  std::vector<double> ends, clocks;
  for (int b = 0; b < max_bins; ++b) {
    std::vector<double> end, mhz;
    for (size_t c = 0; c < stamps.size(); ++c) {
      const BinStamp& now = bins[c * max_bins + b];
      if (!now.ns) break;
      const BinStamp before = b ? bins[c * max_bins + b - 1] : BinStamp{stamps[c].ns0, stamps[c].c0};
      end.push_back((now.ns - stamps[c].ns0) / 1e9);
      mhz.push_back((now.cycles - before.cycles) * 1e3 / double(now.ns - before.ns));
    }
    if (mhz.size() < stamps.size()) break;
    ends.push_back(smd::median(end)), clocks.push_back(smd::median(mhz));
  }
  return {ends, clocks};
}

// NVML every 100 ms while the kernel runs: seconds since every CTA started, energy since then, board power, SM
// clock, temperature and the clock event reasons of each reading; and the SMs' clock per bin. --repeats is ignored.
void run_soak(const std::string& id, const std::map<std::string, long>& point, int /*repeats*/) {
  const long seconds = smd::param(point, "seconds");
  if (seconds < 1 || seconds > 60) smd::fail("seconds must be in 1..60", 2);
  const int sms = device_sms();
  Launch l = prepare<SoakOp>(sms, soak_kernel<SoakOp>);
  const int max_bins = int(seconds / kSoakBinS) + 2;
  BinStamp* bins = nullptr;
  SMD_CHECK(cudaMalloc(&bins, size_t(sms) * max_bins * sizeof(BinStamp)));
  launch_soak(l, bins, max_bins, 0.02);  // untimed: module load, placement
  SMD_CHECK(cudaDeviceSynchronize());
  launch_soak(l, bins, max_bins, double(seconds));
  wait_started(l);
  const double t0 = now_s();
  const unsigned long long e0 = nvml().energy_mj();
  std::vector<double> time, energy, power, clock, temperature, reasons;
  for (int i = 1;; ++i) {
    const bool running = cudaStreamQuery(0) == cudaErrorNotReady;
    (void)cudaGetLastError();  // 'not ready' is the expected answer
    if (!running) break;
    time.push_back(now_s() - t0), energy.push_back((nvml().energy_mj() - e0) / 1e3);
    power.push_back(nvml().power_w()), clock.push_back(nvml().sm_clock_mhz());
    temperature.push_back(nvml().temperature_c()), reasons.push_back(double(nvml().reasons()));
    sleep_s(std::max(0.0, t0 + i * kSoakBinS - now_s()));
  }
  SMD_CHECK(cudaDeviceSynchronize());
  std::vector<BinStamp> stamped(size_t(sms) * max_bins);
  SMD_CHECK(cudaMemcpy(stamped.data(), bins, stamped.size() * sizeof(BinStamp), cudaMemcpyDeviceToHost));
  SMD_CHECK(cudaFree(bins));
  unsigned long long bodies = 0;
  const std::vector<CtaStamp> stamps = collect<SoakOp>(id, point, l, bodies);
  const auto [ends, ran] = bin_clocks(stamps, stamped, max_bins);
  if (time.size() < 5 || ran.size() < 5)
    smd::fail(id + " " + smd::params_json(point) + ": under 5 readings over the soak (host delayed?)");
  const double mhz = smd::median(ran);
  auto rec = [&](const char* metric, const char* unit, std::vector<double> samples) {
    smd::Record r{id, point, metric, unit, std::move(samples)};
    r.iterations = (long long)(bodies / (uint64_t(sms) * kThreads / 32)), r.clock_mhz = mhz;
    smd::emit(r);
  };
  rec("soak_clock", "MHz", ran);
  rec("bin_time", "s", ends);
  rec("soak_time", "s", time);
  rec("energy", "J", energy);
  rec("power_nvml", "W", power);
  rec("sm_clock_nvml", "MHz", clock);
  rec("temperature", "C", temperature);
  rec("throttle_reasons", "bitmask", reasons);
}

template <class Op>
std::vector<smd::KernelInfo> listing(const char* symbol) {
  return {{{}, "", Op::kOps, Op::kCheck, symbol}};
}

int main(int argc, char** argv) {
  return smd::family_main(argc, argv,
                          {{"power_idle", [] { return std::vector<smd::KernelInfo>{}; }, run_idle},
                           {"power_fp32_ffma", [] { return listing<Ffma>("power_kernel<Ffma>"); }, run_power<Ffma>},
                           {"power_fp16_hfma2", [] { return listing<Hfma2>("power_kernel<Hfma2>"); }, run_power<Hfma2>},
                           {"power_bf16_mma", [] { return listing<MmaBf16>("power_kernel<MmaBf16>"); },
                            run_power<MmaBf16>},
                           {"power_fp64_dfma", [] { return listing<Dfma>("power_kernel<Dfma>"); }, run_power<Dfma>},
                           {"clock_limits", [] { return std::vector<smd::KernelInfo>{}; }, run_limits},
                           {"power_soak", [] { return listing<SoakOp>("soak_kernel<MmaBf16>"); }, run_soak}});
}
