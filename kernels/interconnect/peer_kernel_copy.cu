// Kernel-driven peer copy: every SM of the dst GPU loads 16 B vectors from the src GPU's memory through the
// peer-mapped pointer (kLoads independent loads in flight per thread) and stores them to dst memory. src == dst
// is the same kernel on local memory: the reference. The word sum of what was read and the copy are checked.
#include "../common/blocksum.cuh"
#include "interconnect.cuh"

constexpr int kThreads = 256;
constexpr int kCtasPerSm = 4;
constexpr int kLoads = 4;

// Grid-stride pull of nvec vectors (a multiple of kLoads x grid x threads); one atomic per CTA adds the word
// sum of what it read to *sum.
__global__ void __launch_bounds__(kThreads) pull_copy(const uint4* src, uint4* dst, long nvec, unsigned* sum) {
  const long stride = long(gridDim.x) * blockDim.x;
  uint32_t acc = 0;
#pragma unroll 1
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < nvec; i += kLoads * stride) {
    uint4 v[kLoads];
#pragma unroll
    for (int k = 0; k < kLoads; ++k) v[k] = src[i + k * stride];
#pragma unroll
    for (int k = 0; k < kLoads; ++k) {
      acc += v[k].x + v[k].y + v[k].z + v[k].w;
      dst[i + k * stride] = v[k];
    }
  }
  smd::add_block_sum(acc, sum);
}

void run_kernel_copy(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  int src = 0, dst = 0;
  const long size_mb = smd::param(point, "size_mb");
  if (size_mb < 1 || size_mb > (16L << 10)) smd::fail("size_mb must be in 1..16384", 2);
  if (!ic::resolve(id, point, "src", "dst", src, dst)) return;
  int sms = 0;
  SMD_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dst));
  const int ctas = sms * kCtasPerSm;
  const long chunk = long(ctas) * kThreads * kLoads;
  const long nvec = (size_mb << 20) / 16 / chunk * chunk;
  if (nvec == 0) smd::fail("size_mb is smaller than one pass of the grid", 2);
  const long bytes = nvec * 16;
  ic::Buffer from(src, bytes), to(dst, bytes), sum(dst, sizeof(unsigned));
  ic::fill(src, from.ptr, bytes, 3);
  SMD_CHECK(cudaSetDevice(dst));
  const auto* in = static_cast<const uint4*>(from.ptr);
  auto* out = static_cast<uint4*>(to.ptr);
  auto* total = static_cast<unsigned*>(sum.ptr);
  const auto launch = [&] { pull_copy<<<ctas, kThreads>>>(in, out, nvec, total); };
  smd::Record rec{id, point, "bandwidth", "GB/s"};
  for (int r = -1; r < repeats; ++r) {  // r = -1: untimed first launch
    SMD_CHECK(cudaMemset(total, 0, sizeof(unsigned)));
    double ms;
    if (r < 0) {
      ms = smd::time_ms(launch);
    } else {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      ms = smd::time_ms(launch);
      rec.samples.push_back(bytes / ms / 1e6);
    }
    uint32_t got = 0;
    SMD_CHECK(cudaMemcpy(&got, total, sizeof(got), cudaMemcpyDeviceToHost));
    if (got != ic::pattern_sum(bytes / 4, 3)) smd::fail(id + " " + smd::params_json(point) + ": wrong read sum");
  }
  SMD_CHECK(cudaMemset(to.ptr, 0, bytes));  // clear, copy once more, check what it left
  launch();
  SMD_CHECK(cudaGetLastError());
  if (ic::checksum(dst, to.ptr, bytes) != ic::pattern_sum(bytes / 4, 3))
    smd::fail(id + " " + smd::params_json(point) + ": the copied data is wrong");
  rec.iterations = 1, rec.variant = "timed";
  rec.expect = {{"dram__bytes_write.sum", double(bytes)}};
  if (src == dst) rec.expect.push_back({"dram__bytes_read.sum", double(bytes)});
  smd::emit(rec);
}

int main(int argc, char** argv) {
  return smd::family_main(argc, argv, {{"kernel_copy_peer",
                                        [] { return std::vector{ic::kernel("pull_copy", kLoads, 1)}; },
                                        run_kernel_copy}});
}
