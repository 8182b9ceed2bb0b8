// Host link: pinned (cudaHostAlloc) host-to-device, device-to-host and bidirectional (two streams, both
// directions at once) bandwidth versus size, cudaMemcpyAsync timed with CUDA events; pageable host-to-device;
// and the PCIe link's speed and width as the kernel's sysfs reports them for this GPU, read while a copy runs
// (an idle link trains down). Each sample moves a batch of copies (distinct windows of one buffer); the
// destination is cleared before the last sample and checked word for word after it.
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <thread>

#include "../common/harness.cuh"

constexpr size_t kMaxBytes = 256ul << 20;  // the largest copy, and the most one sample moves
constexpr long kMaxCopies = 64;            // copies per sample at most (small sizes: 64 back to back)

enum Dir { kH2D, kD2H, kBidir, kPageable };

__host__ __device__ inline uint32_t pattern(size_t word, uint32_t seed) { return uint32_t(word) * 2654435761u + seed; }

__global__ void fill_kernel(uint32_t* p, size_t words, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words; i += size_t(gridDim.x) * blockDim.x)
    p[i] = pattern(i, seed);
}

// Counts the words of p[0, words) that differ from the pattern.
__global__ void check_kernel(const uint32_t* p, size_t words, uint32_t seed, unsigned long long* bad) {
  unsigned long long n = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words; i += size_t(gridDim.x) * blockDim.x)
    n += p[i] != pattern(i, seed);
  if (n) atomicAdd(bad, n);
}

// Pinned source and destination on the host, destination and source on the device (seed 1 flows host to
// device, seed 2 device to host), two streams and a mismatch counter: allocated once.
struct Link {
  uint32_t *host_src = nullptr, *host_dst = nullptr, *dev_dst = nullptr, *dev_src = nullptr;
  unsigned long long* bad = nullptr;
  cudaStream_t up, down;
};

Link& link() {
  static Link l;
  if (l.host_src) return l;
  SMD_CHECK(cudaHostAlloc(&l.host_src, kMaxBytes, cudaHostAllocDefault));
  SMD_CHECK(cudaHostAlloc(&l.host_dst, kMaxBytes, cudaHostAllocDefault));
  SMD_CHECK(cudaMalloc(&l.dev_dst, kMaxBytes));
  SMD_CHECK(cudaMalloc(&l.dev_src, kMaxBytes));
  SMD_CHECK(cudaMalloc(&l.bad, sizeof(unsigned long long)));
  SMD_CHECK(cudaStreamCreateWithFlags(&l.up, cudaStreamNonBlocking));
  SMD_CHECK(cudaStreamCreateWithFlags(&l.down, cudaStreamNonBlocking));
  for (size_t i = 0; i < kMaxBytes / 4; ++i) l.host_src[i] = pattern(i, 1);
  fill_kernel<<<1024, 256>>>(l.dev_src, kMaxBytes / 4, 2);
  SMD_CHECK(cudaGetLastError());
  SMD_CHECK(cudaDeviceSynchronize());
  return l;
}

void check_device(const uint32_t* p, size_t words, uint32_t seed) {
  Link& l = link();
  SMD_CHECK(cudaMemset(l.bad, 0, sizeof(unsigned long long)));
  check_kernel<<<1024, 256>>>(p, words, seed, l.bad);
  SMD_CHECK(cudaGetLastError());
  unsigned long long bad = 0;
  SMD_CHECK(cudaMemcpy(&bad, l.bad, sizeof(bad), cudaMemcpyDeviceToHost));
  if (bad) smd::fail("host-to-device copies left " + std::to_string(bad) + " wrong words on the device");
}

void check_host(const uint32_t* p, size_t words, uint32_t seed) {
  for (size_t i = 0; i < words; ++i)
    if (p[i] != pattern(i, seed)) smd::fail("device-to-host copies left a wrong word at " + std::to_string(i));
}

// `copies` copies of `bytes` each, window i at offset i * bytes, on `stream`.
void copies(void* dst, const void* src, size_t bytes, long n, cudaMemcpyKind kind, cudaStream_t stream) {
  for (long i = 0; i < n; ++i)
    SMD_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + i * bytes, static_cast<const char*>(src) + i * bytes, bytes,
                              kind, stream));
}

float elapsed_ms(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  SMD_CHECK(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

template <Dir D>
void run_copy(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long kb = smd::param(point, "size_kb");
  if (kb < 1 || size_t(kb) << 10 > kMaxBytes) smd::fail("size_kb must be in 1.." + std::to_string(kMaxBytes >> 10), 2);
  Link& l = link();
  const size_t bytes = size_t(kb) << 10;
  const long n = std::min<long>(kMaxCopies, kMaxBytes / bytes);
  const size_t window = bytes * n;
  std::vector<uint32_t> pageable(D == kPageable ? window / 4 : 0);
  for (size_t i = 0; i < pageable.size(); ++i) pageable[i] = pattern(i, 1);
  const uint32_t* up_src = D == kPageable ? pageable.data() : l.host_src;
  cudaEvent_t start, up_end, down_end;
  SMD_CHECK(cudaEventCreate(&start));
  SMD_CHECK(cudaEventCreate(&up_end));
  SMD_CHECK(cudaEventCreate(&down_end));
  const bool up = D != kD2H, down = D == kD2H || D == kBidir;
  smd::Record rec{id, point, "bandwidth", "GB/s"};
  rec.iterations = n;
  for (int r = -1; r < repeats; ++r) {  // r = -1: untimed first batch (page tables, copy-engine setup)
    if (r == repeats - 1) {
      if (up) SMD_CHECK(cudaMemset(l.dev_dst, 0, window));
      if (down) std::memset(l.host_dst, 0, window);
    }
    SMD_CHECK(cudaEventRecord(start, l.up));
    SMD_CHECK(cudaStreamWaitEvent(l.down, start, 0));
    if (up) copies(l.dev_dst, up_src, bytes, n, cudaMemcpyHostToDevice, l.up);
    if (down) copies(l.host_dst, l.dev_src, bytes, n, cudaMemcpyDeviceToHost, l.down);
    SMD_CHECK(cudaEventRecord(up_end, l.up));
    SMD_CHECK(cudaEventRecord(down_end, l.down));
    SMD_CHECK(cudaEventSynchronize(up_end));
    SMD_CHECK(cudaEventSynchronize(down_end));
    const double ms = std::max(up ? elapsed_ms(start, up_end) : 0.0f, down ? elapsed_ms(start, down_end) : 0.0f);
    if (r >= 0) rec.samples.push_back(double(window) * (up + down) / ms / 1e6);
  }
  if (up) check_device(l.dev_dst, window / 4, 1);
  if (down) check_host(l.host_dst, window / 4, 2);
  for (cudaEvent_t e : {start, up_end, down_end}) SMD_CHECK(cudaEventDestroy(e));
  smd::emit(rec);
}

// One attribute of this GPU's PCIe link from sysfs (e.g. current_link_speed "32.0 GT/s PCIe"), or -1.
double sysfs_link(const std::string& device, const std::string& attribute) {
  std::ifstream in("/sys/bus/pci/devices/" + device + "/" + attribute);
  std::string text;
  if (!std::getline(in, text)) return -1;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  return end == text.c_str() ? -1 : v;
}

void run_link(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  Link& l = link();
  int dev = 0;
  char bus[32] = {};
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetPCIBusId(bus, sizeof(bus), dev));
  std::string device(bus);
  for (char& ch : device) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  const char* names[] = {"current_link_speed", "current_link_width", "max_link_speed", "max_link_width"};
  const char* metrics[] = {"link_speed", "link_width", "max_link_speed", "max_link_width"};
  const char* units[] = {"GT/s", "lanes", "GT/s", "lanes"};
  std::vector<smd::Record> recs;
  for (int m = 0; m < 4; ++m) recs.push_back({id, point, metrics[m], units[m]});
  for (int r = 0; r < repeats; ++r) {
    for (int i = 0; i < 4; ++i) copies(l.dev_dst, l.host_src, kMaxBytes, 1, cudaMemcpyHostToDevice, l.up);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // read mid-transfer: an idle link trains down
    for (int m = 0; m < 4; ++m) {
      const double v = sysfs_link(device, names[m]);
      if (v <= 0) {
        SMD_CHECK(cudaStreamSynchronize(l.up));
        return smd::static_point(id, point, "/sys/bus/pci/devices/" + device + "/" + names[m] + " is not readable");
      }
      recs[m].samples.push_back(v);
    }
    SMD_CHECK(cudaStreamSynchronize(l.up));
  }
  for (auto& rec : recs) rec.iterations = 1, smd::emit(rec);
}

std::vector<smd::KernelInfo> no_kernels() { return {}; }

int main(int argc, char** argv) {
  return smd::family_main(argc, argv,
                          {{"h2d_pinned", no_kernels, run_copy<kH2D>},
                           {"d2h_pinned", no_kernels, run_copy<kD2H>},
                           {"bidir_pinned", no_kernels, run_copy<kBidir>},
                           {"h2d_pageable", no_kernels, run_copy<kPageable>},
                           {"pcie_link", no_kernels, run_link}});
}
