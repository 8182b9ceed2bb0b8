// Host-side costs beyond a warm launch, each timed with the host's steady_clock: the first (cold) launch of a
// kernel never launched in the process against later (warm) launches of the same kernel, cudaMalloc and cudaFree
// against size, unified memory (cudaMallocManaged) touched by a kernel while its pages are on the host, after
// cudaMemPrefetchAsync, and once resident, and what cudaStreamQuery, cudaEventQuery, cudaEventRecord and
// cudaStreamSynchronize cost on idle and busy streams. Records are in us (or us per MiB), cycles 0.
// The host may be running other work (the pipeline builds and parses beside the GPU jobs): every call or launch is
// timed alone and a sample is the median of many, so a preemption or an interrupt costs one timing, not the sample.
#include <array>
#include <chrono>
#include <cstring>
#include <utility>

#include <cuda.h>

#include "../common/harness.cuh"

constexpr int kThreads = 32;          // one warp per CTA for the launched kernels
constexpr int kColdWarmup = 8;        // first launches before the timed ones, untimed (the driver's first loads)
constexpr int kColdPerSample = 16;    // first launches per cold sample (its median)
constexpr int kColdSamples = 8;       // cold samples, whatever --repeats says (each instantiation is cold once)
constexpr int kColdKernels = kColdWarmup + kColdSamples * kColdPerSample;  // distinct instantiations
constexpr int kWarmLaunches = 25;     // launches of an already launched kernel per warm median
constexpr int kAllocPairs = 32;       // cudaMalloc + cudaFree pairs per sample (their medians)
constexpr int kFaultedTouches = 5;    // managed: faulting touches per sample (their median)
constexpr int kPrefetchedTouches = 3; // managed: prefetch + touch per sample (their median)
constexpr int kResidentTouches = 16;  // managed: touches of resident pages per sample (their median)
constexpr int kCallBlocks = 10;       // queries: blocks per sample, each of kCallsPerBlock calls of every kind
constexpr int kCallsPerBlock = 100;   // back-to-back calls of one kind, each timed alone
constexpr int kCalls = kCallBlocks * kCallsPerBlock;  // timed calls of each kind per sample (their median)
constexpr long kPageWords = 1024;     // ints per 4 KiB page: the touch kernel's stride
constexpr unsigned long long kHoldTimeoutNs = 2000000000ull;  // a hold never released gives up after 2 s

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
double now_us() { return now_ns() * 1e-3; }

// What one timing costs by itself: the median difference of two back-to-back clock reads (ns).
double clock_cost_ns() {
  std::vector<double> d(1000);
  for (double& x : d) {
    const long long t0 = now_ns();
    x = double(now_ns() - t0);
  }
  return smd::median(d);
}

smd::Record host_record(const std::string& id, const std::map<std::string, long>& point, const std::string& metric,
                        const std::string& unit, long long iterations) {
  smd::Record r{id, point, metric, unit};
  r.iterations = iterations;
  return r;
}

// ---- cold launch: each instantiation is a distinct function, loaded (lazily) at its first launch ----

template <int N>
__global__ void cold_kernel(int* out) {
  if (threadIdx.x == 0) out[N] = N + 1;
}

using ColdKernel = void (*)(int*);
template <int... N>
constexpr std::array<ColdKernel, sizeof...(N)> cold_table(std::integer_sequence<int, N...>) {
  return {cold_kernel<N>...};
}
const std::array<ColdKernel, kColdKernels> kCold = cold_table(std::make_integer_sequence<int, kColdKernels>{});

// Host time of one launch of `kernel` on `stream` until it has run (cudaLaunchKernel + cudaStreamSynchronize).
double round_trip_us(ColdKernel kernel, int ctas, int* out, cudaStream_t stream) {
  void* args[] = {&out};
  const double t0 = now_us();
  SMD_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(ctas), dim3(kThreads), args, 0, stream));
  SMD_CHECK(cudaStreamSynchronize(stream));
  return now_us() - t0;
}

// 1 where the driver loads kernels lazily (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2), 0 where eagerly.
double lazy_loading() {
  CUresult (*get)(CUmoduleLoadingMode*) = nullptr;
  cudaDriverEntryPointQueryResult found;
  SMD_CHECK(cudaGetDriverEntryPointByVersion("cuModuleGetLoadingMode", reinterpret_cast<void**>(&get), 12000,
                                             cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || !get) smd::fail("driver entry point cuModuleGetLoadingMode not found");
  CUmoduleLoadingMode mode;
  if (get(&mode) != CUDA_SUCCESS) smd::fail("cuModuleGetLoadingMode failed");
  return mode == CU_MODULE_LAZY_LOADING ? 1 : 0;
}

// The first kColdWarmup instantiations are launched first, untimed (the driver's first function loads of the
// process). Cold samples: the median of kColdPerSample first launches of distinct instantiations; warm samples: per
// instantiation the median of kWarmLaunches launches after its first, their median over the same ones. The
// instantiations last once per process, so --repeats does not apply (always kColdSamples samples).
void run_cold(const std::string& id, const std::map<std::string, long>& point, int /*repeats*/) {
  static bool launched = false;
  if (launched)
    return smd::static_point(id, point, "every cold_kernel instantiation was launched already in this process");
  const long ctas = smd::param(point, "ctas");
  if (ctas < 1 || ctas > 65535) smd::fail("ctas must be in 1..65535", 2);
  launched = true;
  int* out = nullptr;
  cudaStream_t stream;
  SMD_CHECK(cudaMalloc(&out, kColdKernels * sizeof(int)));
  SMD_CHECK(cudaMemset(out, 0, kColdKernels * sizeof(int)));
  SMD_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  SMD_CHECK(cudaStreamSynchronize(stream));
  for (int k = 0; k < kColdWarmup; ++k) round_trip_us(kCold[k], int(ctas), out, stream);
  smd::Record cold = host_record(id, point, "cold_launch", "us", kColdPerSample);
  smd::Record warm = host_record(id, point, "warm_launch", "us", kWarmLaunches);
  for (int s = 0; s < kColdSamples; ++s) {
    std::vector<double> firsts, warms;
    for (int j = 0; j < kColdPerSample; ++j) {
      const ColdKernel kernel = kCold[kColdWarmup + s * kColdPerSample + j];
      firsts.push_back(round_trip_us(kernel, int(ctas), out, stream));
      std::vector<double> again(kWarmLaunches);
      for (double& t : again) t = round_trip_us(kernel, int(ctas), out, stream);
      warms.push_back(smd::median(again));
    }
    cold.samples.push_back(smd::median(firsts));
    warm.samples.push_back(smd::median(warms));
  }
  std::vector<int> got(kColdKernels);
  SMD_CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(int), cudaMemcpyDeviceToHost));
  for (int k = 0; k < kColdKernels; ++k)
    if (got[k] != k + 1)
      smd::fail("cold_kernel<" + std::to_string(k) + "> did not run: its word is " + std::to_string(got[k]));
  SMD_CHECK(cudaStreamDestroy(stream));
  SMD_CHECK(cudaFree(out));
  smd::emit(cold);
  smd::emit(warm);
  smd::Record mode = host_record(id, point, "lazy_loading", "bool", 1);
  mode.samples = {lazy_loading()};
  smd::emit(mode);
}

// ---- cudaMalloc / cudaFree against size ----

// Per pair: cudaMalloc's time, the cudaFree's that follows it, and their sum (the driver may do part of one's work
// in the other: the sum is the pair's cost whichever call pays it). A sample is each one's median over the pairs.
void run_alloc(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long kb = smd::param(point, "size_kb");
  if (kb < 1 || kb > (16l << 20)) smd::fail("size_kb must be in 1..16777216 (16 GiB)", 2);
  const size_t bytes = size_t(kb) << 10;
  size_t free_bytes = 0, total = 0;
  SMD_CHECK(cudaMemGetInfo(&free_bytes, &total));
  if (bytes > free_bytes / 2)
    return smd::static_point(id, point, "the device has " + std::to_string(free_bytes >> 20) + " MiB free");
  smd::Record malloc_rec = host_record(id, point, "malloc", "us", kAllocPairs);
  smd::Record free_rec = host_record(id, point, "free", "us", kAllocPairs);
  smd::Record pair_rec = host_record(id, point, "pair", "us", kAllocPairs);
  for (int r = -1; r < repeats; ++r) {  // r = -1: untimed, the allocator's first use of this size
    std::vector<double> m(kAllocPairs), f(kAllocPairs), both(kAllocPairs);
    for (int i = 0; i < kAllocPairs; ++i) {
      void* p = nullptr;
      const double t0 = now_us();
      SMD_CHECK(cudaMalloc(&p, bytes));
      const double t1 = now_us();
      SMD_CHECK(cudaFree(p));
      const double t2 = now_us();
      m[i] = t1 - t0, f[i] = t2 - t1, both[i] = t2 - t0;
    }
    if (r < 0) continue;
    malloc_rec.samples.push_back(smd::median(m));
    free_rec.samples.push_back(smd::median(f));
    pair_rec.samples.push_back(smd::median(both));
  }
  smd::emit(malloc_rec);
  smd::emit(free_rec);
  smd::emit(pair_rec);
}

// ---- unified memory: first touch from the GPU of pages the host wrote ----

// One thread per 4 KiB page adds 1 to the page's first word.
__global__ void touch_kernel(int* p, long pages) {
  const long page = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (page < pages) p[page * kPageWords] += 1;
}

// The host writes every page (they migrate back to it): word 0 of page i is i, the rest 0.
void host_write(int* p, long pages) {
  std::memset(p, 0, size_t(pages) * kPageWords * sizeof(int));
  for (long i = 0; i < pages; ++i) p[i * kPageWords] = int(i);
}

void host_check(const int* p, long pages, int plus, const char* after) {
  for (long i = 0; i < pages; ++i)
    if (p[i * kPageWords] != int(i) + plus)
      smd::fail(std::string("page ") + std::to_string(i) + " holds " + std::to_string(p[i * kPageWords]) + " after " +
                after + ", not " + std::to_string(i + plus));
}

// Per sample, each touch's host time from its first call to cudaStreamSynchronize's return, per MiB of the buffer:
// kFaultedTouches times the pages are prefetched to the host and written there, then touched by the kernel (faulted);
// kPrefetchedTouches times the same with cudaMemPrefetchAsync to the GPU before the kernel (prefetched); then
// kResidentTouches kernels on the pages the last prefetch left on the GPU (resident). A sample is each one's median;
// the pages are prefetched back to the host before the host checks them, so no check waits on CPU page faults.
void run_managed(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long kb = smd::param(point, "size_kb");
  if (kb < 4 || kb % 4 || kb > (4l << 20)) smd::fail("size_kb must be a multiple of 4 in 4..4194304 (4 GiB)", 2);
  int dev = 0, concurrent = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, dev));
  if (!concurrent)
    return smd::static_point(id, point, "no concurrent managed access on this device: no GPU page faults");
  const long pages = kb / 4;
  const size_t bytes = size_t(kb) << 10;
  const double mib = kb / 1024.0;
  const int blocks = int((pages + 255) / 256);
  int* p = nullptr;
  cudaStream_t stream;
  SMD_CHECK(cudaMallocManaged(&p, bytes));
  SMD_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaMemLocation gpu{}, host{};
  gpu.type = cudaMemLocationTypeDevice, gpu.id = dev;
  host.type = cudaMemLocationTypeHost;
  auto to_host = [&] {  // the pages back on the host by the copy engines (untimed): no CPU page faults after it
    SMD_CHECK(cudaMemPrefetchAsync(p, bytes, host, 0, stream));
    SMD_CHECK(cudaStreamSynchronize(stream));
  };
  auto check = [&](int plus, const char* after) {
    to_host();
    host_check(p, pages, plus, after);
  };
  auto timed = [&](bool prefetch) {
    const double t0 = now_us();
    if (prefetch) SMD_CHECK(cudaMemPrefetchAsync(p, bytes, gpu, 0, stream));
    touch_kernel<<<blocks, 256, 0, stream>>>(p, pages);
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaStreamSynchronize(stream));
    return (now_us() - t0) / mib;
  };
  smd::Record faulted = host_record(id, point, "faulted", "us/MiB", kFaultedTouches);
  smd::Record prefetched = host_record(id, point, "prefetched", "us/MiB", kPrefetchedTouches);
  smd::Record resident = host_record(id, point, "resident", "us/MiB", kResidentTouches);
  for (int r = -1; r < repeats; ++r) {  // r = -1: untimed (the range's first mapping on either side)
    std::vector<double> f(kFaultedTouches), pf(kPrefetchedTouches), rs(kResidentTouches);
    for (double& t : f) {
      to_host();
      host_write(p, pages);
      t = timed(false);
      check(1, "the faulting touch");
    }
    for (size_t i = 0; i < pf.size(); ++i) {
      to_host();
      host_write(p, pages);
      pf[i] = timed(true);
      if (i + 1 < pf.size()) check(1, "the prefetched touch");
    }
    for (double& t : rs) t = timed(false);
    check(1 + kResidentTouches, "the prefetched and resident touches");
    if (r < 0) continue;
    faulted.samples.push_back(smd::median(f));
    prefetched.samples.push_back(smd::median(pf));
    resident.samples.push_back(smd::median(rs));
  }
  SMD_CHECK(cudaStreamDestroy(stream));
  SMD_CHECK(cudaFree(p));
  smd::emit(faulted);
  smd::emit(prefetched);
  smd::emit(resident);
}

// ---- stream and event queries ----

// Keeps a stream busy until the host releases it (a word of mapped host memory), or gives up after 2 s.
__global__ void hold_kernel(const volatile unsigned* release, unsigned* timed_out) {
  const unsigned long long t0 = smd::clock_ns();
  while (!*release)
    if (smd::clock_ns() - t0 > kHoldTimeoutNs) {
      *timed_out = 1;
      return;
    }
}

// Times kCallsPerBlock back-to-back calls of `call` one by one, appending each one's host time (ns) to `into`;
// every call must return `want`.
template <class F>
void time_calls(const char* what, cudaError_t want, std::vector<double>& into, F&& call) {
  int wrong = 0;
  for (int i = 0; i < kCallsPerBlock; ++i) {
    const long long t0 = now_ns();
    const cudaError_t got = call();
    into.push_back(double(now_ns() - t0));
    wrong += got != want;
  }
  (void)cudaGetLastError();  // cudaErrorNotReady is the answer asked for, not an error to carry on
  if (wrong)
    smd::fail(std::string(what) + ": " + std::to_string(wrong) + " of " + std::to_string(kCallsPerBlock) +
              " calls did not return " + cudaGetErrorName(want));
}

// Per sample, while a kernel holds the busy stream: kCallBlocks rounds of kCallsPerBlock calls of each kind in
// turn (so every kind sees the same stretch of the host's time), each call timed alone; a sample is each kind's
// median call less the cost of the clock reads around it. Records go to a stream of their own, so the idle stream
// stays idle.
void run_queries(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  cudaStream_t idle, busy, marks;
  cudaEvent_t done, pending, recorded;
  for (cudaStream_t* st : {&idle, &busy, &marks}) SMD_CHECK(cudaStreamCreateWithFlags(st, cudaStreamNonBlocking));
  for (cudaEvent_t* e : {&done, &pending, &recorded}) SMD_CHECK(cudaEventCreate(e));
  unsigned *release = nullptr, *release_dev = nullptr, *timed_out = nullptr;
  SMD_CHECK(cudaHostAlloc(&release, sizeof(unsigned), cudaHostAllocMapped));
  SMD_CHECK(cudaHostGetDevicePointer(&release_dev, release, 0));
  SMD_CHECK(cudaMalloc(&timed_out, sizeof(unsigned)));
  SMD_CHECK(cudaMemset(timed_out, 0, sizeof(unsigned)));
  const char* names[] = {"stream_query_idle", "event_query_done", "stream_sync_idle",
                         "event_record",      "stream_query_busy", "event_query_pending"};
  std::vector<smd::Record> recs;
  for (const char* n : names) recs.push_back(host_record(id, point, n, "us", kCalls));
  SMD_CHECK(cudaEventRecord(done, idle));
  SMD_CHECK(cudaStreamSynchronize(idle));
  for (int r = -1; r < repeats; ++r) {  // r = -1: untimed
    *reinterpret_cast<volatile unsigned*>(release) = 0;
    hold_kernel<<<1, kThreads, 0, busy>>>(release_dev, timed_out);
    SMD_CHECK(cudaGetLastError());
    SMD_CHECK(cudaEventRecord(pending, busy));
    std::array<std::vector<double>, 6> ns;
    for (int b = 0; b < kCallBlocks; ++b) {
      time_calls("cudaStreamQuery(idle)", cudaSuccess, ns[0], [&] { return cudaStreamQuery(idle); });
      time_calls("cudaEventQuery(done)", cudaSuccess, ns[1], [&] { return cudaEventQuery(done); });
      time_calls("cudaStreamSynchronize(idle)", cudaSuccess, ns[2], [&] { return cudaStreamSynchronize(idle); });
      time_calls("cudaEventRecord", cudaSuccess, ns[3], [&] { return cudaEventRecord(recorded, marks); });
      time_calls("cudaStreamQuery(busy)", cudaErrorNotReady, ns[4], [&] { return cudaStreamQuery(busy); });
      time_calls("cudaEventQuery(pending)", cudaErrorNotReady, ns[5], [&] { return cudaEventQuery(pending); });
    }
    const double clock = clock_cost_ns();
    *reinterpret_cast<volatile unsigned*>(release) = 1;
    SMD_CHECK(cudaStreamSynchronize(busy));
    SMD_CHECK(cudaStreamSynchronize(marks));
    unsigned gave_up = 0;
    SMD_CHECK(cudaMemcpy(&gave_up, timed_out, sizeof gave_up, cudaMemcpyDeviceToHost));
    if (gave_up) smd::fail("hold_kernel was never released (2 s): the busy-stream queries took that long");
    if (r < 0) continue;
    for (size_t m = 0; m < recs.size(); ++m) recs[m].samples.push_back((smd::median(ns[m]) - clock) * 1e-3);
  }
  for (cudaEvent_t e : {done, pending, recorded}) SMD_CHECK(cudaEventDestroy(e));
  for (cudaStream_t st : {idle, busy, marks}) SMD_CHECK(cudaStreamDestroy(st));
  SMD_CHECK(cudaFreeHost(release));
  SMD_CHECK(cudaFree(timed_out));
  for (const auto& rec : recs) smd::emit(rec);
}

// ---- listings ----

std::vector<smd::KernelInfo> cold_list() {
  std::vector<smd::KernelInfo> out;
  for (int k = 0; k < kColdKernels; ++k) {
    const std::string n = std::to_string(k);
    out.push_back({{}, "k" + n, 0, 1, "cold_kernel<" + n + ">"});
  }
  return out;
}
std::vector<smd::KernelInfo> no_kernels() { return {}; }
std::vector<smd::KernelInfo> touch_list() { return {{{}, "", 0, 1, "touch_kernel"}}; }
std::vector<smd::KernelInfo> hold_list() { return {{{}, "", 0, 1, "hold_kernel"}}; }

int main(int argc, char** argv) {
  return smd::family_main(argc, argv,
                          {{"launch_cold", cold_list, run_cold},
                           {"malloc_free", no_kernels, run_alloc},
                           {"managed_fault", touch_list, run_managed},
                           {"stream_event_query", hold_list, run_queries}});
}
