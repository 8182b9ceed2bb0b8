// Back-to-back gap between dependent kernels, stamped on the GPU with %globaltimer (ns): each CTA's thread 0
// stamps its start (atomicMin), the moment griddepcontrol.wait returned (atomicMin) and its end (atomicMax)
// into the kernel's slot; a gap is the mean over the chain. Kernel k+1 reads what kernel k wrote (one word
// per thread, +1 per kernel: checked).
// Four modes of the same chain and the same kernel: serial stream launches, a CUDA graph of the chain, PDL
// (cudaLaunchKernelEx with programmatic stream serialization; the kernel calls griddepcontrol.launch_dependents
// first and griddepcontrol.wait before its dependent read), and a graph captured from the PDL launches.
// A gate kernel holds the stream until the host has enqueued the whole chain, so the gaps are the GPU's own,
// not the host's enqueue rate.
#include "../common/harness.cuh"

constexpr int kThreads = 128;
constexpr unsigned long long kGateTimeoutNs = 2000000000ull;  // a gate never opened by the host gives up after 2 s

enum Mode { kSerial, kGraph, kPdl, kGraphPdl };

struct Slot {
  unsigned long long start, release, end;  // first CTA start, first return from griddepcontrol.wait, last CTA end
};

__global__ void __launch_bounds__(kThreads) chain_kernel(unsigned* data, Slot* slots, int k) {
  const unsigned long long t0 = smd::clock_ns();
#if SMD_HAS(pdl)  // sm_90: before it there is no programmatic dependent launch (gap_pdl requires it)
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  const unsigned long long t1 = smd::clock_ns();
  const unsigned i = blockIdx.x * kThreads + threadIdx.x;
  data[i] += 1;  // the dependent read of what kernel k-1 wrote
  __syncthreads();
  if (threadIdx.x == 0) {
    atomicMin(&slots[k].start, t0);
    atomicMin(&slots[k].release, t1);
    atomicMax(&slots[k].end, smd::clock_ns());
  }
}

// Spins until the host opens the gate (a word of mapped host memory), or gives up and says so in *timed_out.
__global__ void gate_kernel(const volatile unsigned* open, unsigned* timed_out) {
  const unsigned long long t0 = smd::clock_ns();
  while (!*open)
    if (smd::clock_ns() - t0 > kGateTimeoutNs) {
      *timed_out = 1;
      return;
    }
}

// The finest step of %globaltimer one thread sees: the smallest non-zero difference of consecutive reads, the
// span of all reads and how often the value changed (the host divides: mean time between updates).
constexpr int kTimerReads = 4096;
__global__ void timer_step_kernel(unsigned long long* out) {
  unsigned long long first = smd::clock_ns(), last = first, step = ~0ull, changes = 0;
#pragma unroll 1
  for (int i = 0; i < kTimerReads; ++i) {
    const unsigned long long t = smd::clock_ns();
    if (t != last) step = min(step, t - last), ++changes;
    last = t;
  }
  out[0] = step, out[1] = last - first, out[2] = changes;
}

int sm_count() {
  int dev = 0, sms = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

// Device state shared by every point: the gate word (mapped host memory) and the buffers of the longest chain.
struct Chain {
  volatile unsigned* open = nullptr;
  unsigned* open_dev = nullptr;
  unsigned* timed_out = nullptr;
  unsigned* data = nullptr;
  Slot* slots = nullptr;
  cudaStream_t stream;
  int capacity_ctas = 0, capacity_kernels = 0;
};

Chain& chain(int ctas, int kernels) {
  static Chain c;
  if (ctas <= c.capacity_ctas && kernels <= c.capacity_kernels) return c;
  if (!c.open) {
    SMD_CHECK(cudaHostAlloc(const_cast<unsigned**>(&c.open), sizeof(unsigned), cudaHostAllocMapped));
    SMD_CHECK(cudaHostGetDevicePointer(&c.open_dev, const_cast<unsigned*>(c.open), 0));
    SMD_CHECK(cudaMalloc(&c.timed_out, sizeof(unsigned)));
    SMD_CHECK(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
  }
  SMD_CHECK(cudaFree(c.data));
  SMD_CHECK(cudaFree(c.slots));
  c.capacity_ctas = std::max(ctas, c.capacity_ctas), c.capacity_kernels = std::max(kernels, c.capacity_kernels);
  SMD_CHECK(cudaMalloc(&c.data, size_t(c.capacity_ctas) * kThreads * sizeof(unsigned)));
  SMD_CHECK(cudaMalloc(&c.slots, c.capacity_kernels * sizeof(Slot)));
  return c;
}

// Kernel k of the chain on `stream`; PDL launches (k > 0: the first follows the gate) carry the attribute.
void launch(const Chain& c, int ctas, int k, bool pdl) {
  cudaLaunchConfig_t config = {};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  config.gridDim = dim3(ctas), config.blockDim = dim3(kThreads), config.stream = c.stream;
  config.attrs = attr, config.numAttrs = pdl && k > 0 ? 1 : 0;
  SMD_CHECK(cudaLaunchKernelEx(&config, chain_kernel, c.data, c.slots, k));
}

void run_gap(Mode mode, const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long kernels = smd::param(point, "kernels"), ctas_param = smd::param(point, "ctas");
  if (kernels < 2 || kernels > 1024) smd::fail("kernels must be in 2..1024", 2);
  if (ctas_param < 0 || ctas_param > 65535) smd::fail("ctas must be 0 (one per SM) or 1..65535", 2);
  const int ctas = ctas_param ? int(ctas_param) : sm_count(), n = int(kernels);
  Chain& c = chain(ctas, n);
  const bool pdl = mode == kPdl || mode == kGraphPdl;
  cudaGraphExec_t graph = nullptr;
  if (mode == kGraph || mode == kGraphPdl) {
    cudaGraph_t g;
    SMD_CHECK(cudaStreamBeginCapture(c.stream, cudaStreamCaptureModeThreadLocal));
    for (int k = 0; k < n; ++k) launch(c, ctas, k, pdl);
    SMD_CHECK(cudaStreamEndCapture(c.stream, &g));
    SMD_CHECK(cudaGraphInstantiate(&graph, g, 0));
    SMD_CHECK(cudaGraphDestroy(g));
    SMD_CHECK(cudaGraphUpload(graph, c.stream));
  }
  smd::Record dependent{id, point, "dependent_gap", "us"}, start{id, point, "start_gap", "us"},
      per_kernel{id, point, "per_kernel", "us"};
  std::vector<Slot> slots(n), empty(n, Slot{~0ull, ~0ull, 0});
  std::vector<unsigned> data(size_t(ctas) * kThreads);
  for (int r = -1; r < repeats; ++r) {  // r = -1: untimed first pass (module load, graph upload)
    SMD_CHECK(cudaMemcpy(c.slots, empty.data(), n * sizeof(Slot), cudaMemcpyHostToDevice));
    SMD_CHECK(cudaMemsetAsync(c.data, 0, data.size() * sizeof(unsigned), c.stream));
    SMD_CHECK(cudaMemsetAsync(c.timed_out, 0, sizeof(unsigned), c.stream));
    *c.open = 0;
    gate_kernel<<<1, 1, 0, c.stream>>>(c.open_dev, c.timed_out);
    SMD_CHECK(cudaGetLastError());
    if (graph) SMD_CHECK(cudaGraphLaunch(graph, c.stream));
    else
      for (int k = 0; k < n; ++k) launch(c, ctas, k, pdl);
    *c.open = 1;
    SMD_CHECK(cudaStreamSynchronize(c.stream));
    unsigned timed_out = 0;
    SMD_CHECK(cudaMemcpy(&timed_out, c.timed_out, sizeof(unsigned), cudaMemcpyDeviceToHost));
    if (timed_out) smd::fail("the gate kernel never saw the host open it (mapped host memory not visible?)");
    SMD_CHECK(cudaMemcpy(slots.data(), c.slots, n * sizeof(Slot), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(data.data(), c.data, data.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
    for (unsigned v : data)
      if (v != unsigned(n)) smd::fail("chain left " + std::to_string(v) + " in a word, want " + std::to_string(n));
    if (r < 0) continue;
    double dep = 0, st = 0;  // means over the chain: a median of timer values would snap to the timer's step
    for (int k = 0; k + 1 < n; ++k) {
      dep += (double(slots[k + 1].release) - double(slots[k].end)) * 1e-3 / (n - 1);
      st += (double(slots[k + 1].start) - double(slots[k].end)) * 1e-3 / (n - 1);
    }
    dependent.samples.push_back(dep);
    start.samples.push_back(st);
    per_kernel.samples.push_back((double(slots[n - 1].end) - double(slots[0].start)) * 1e-3 / n);
  }
  if (graph) SMD_CHECK(cudaGraphExecDestroy(graph));
  for (smd::Record* rec : {&dependent, &start, &per_kernel}) {
    rec->iterations = n;
    smd::emit(*rec);
  }
}

void run_timer_step(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  unsigned long long* out;
  SMD_CHECK(cudaMalloc(&out, 3 * sizeof(unsigned long long)));
  smd::Record step{id, point, "step", "ns"}, interval{id, point, "update_interval", "ns"};
  step.iterations = interval.iterations = kTimerReads;
  for (int r = 0; r < repeats; ++r) {
    timer_step_kernel<<<1, 1>>>(out);
    SMD_CHECK(cudaGetLastError());
    unsigned long long got[3];
    SMD_CHECK(cudaMemcpy(got, out, sizeof(got), cudaMemcpyDeviceToHost));
    if (got[2] == 0) smd::fail("%globaltimer did not change over " + std::to_string(kTimerReads) + " reads");
    step.samples.push_back(double(got[0]));
    interval.samples.push_back(double(got[1]) / double(got[2]));
  }
  SMD_CHECK(cudaFree(out));
  smd::emit(step);
  smd::emit(interval);
}

template <Mode M>
void run(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  run_gap(M, id, point, repeats);
}

std::vector<smd::KernelInfo> chain_list() { return {{{}, "host", 0, 1, "chain_kernel"}}; }

int main(int argc, char** argv) {
  return smd::family_main(argc, argv,
                          {{"gap_serial", chain_list, run<kSerial>},
                           {"gap_graph", chain_list, run<kGraph>},
                           {"gap_pdl", chain_list, run<kPdl>},
                           {"gap_graph_pdl", chain_list, run<kGraphPdl>},
                           {"globaltimer_step", [] { return std::vector<smd::KernelInfo>{{{}, "host", 0, kTimerReads,
                                                                                           "timer_step_kernel"}}; },
                            run_timer_step}});
}
