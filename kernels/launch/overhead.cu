// Launch overhead seen from the host: the round trip of an empty kernel (cudaLaunchKernel then
// cudaStreamSynchronize, median of many), and the host cost of cudaLaunchKernel alone (1000 launches
// enqueued back to back, with the time until all of them have run). Host-timed: records are in us, cycles 0.
#include <chrono>

#include "../common/harness.cuh"

constexpr int kThreads = 32;      // one warp per CTA
constexpr int kRoundTrips = 200;  // launch + synchronize round trips per sample: the sample is their median
constexpr int kEnqueued = 1000;   // launches per enqueue sample

__global__ void empty_kernel() {}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CTAs of a point: `ctas`, or one per SM where ctas = 0.
int grid(const std::map<std::string, long>& point) {
  const long ctas = smd::param(point, "ctas");
  if (ctas < 0 || ctas > 65535) smd::fail("ctas must be 0 (one per SM) or 1..65535", 2);
  int dev = 0, sms = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return ctas ? int(ctas) : sms;
}

void launch(int ctas, cudaStream_t stream) {
  SMD_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(empty_kernel), dim3(ctas), dim3(kThreads), nullptr, 0,
                             stream));
}

smd::Record host_record(const std::string& id, const std::map<std::string, long>& point, const std::string& metric,
                        long long iterations) {
  smd::Record r{id, point, metric, "us"};
  r.iterations = iterations;
  return r;
}

void run_round_trip(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const int ctas = grid(point);
  cudaStream_t stream;
  SMD_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  smd::Record rec = host_record(id, point, "latency", kRoundTrips);
  std::vector<double> trips(kRoundTrips);
  for (int r = -1; r < repeats; ++r) {  // r = -1: untimed warm-up of the launch path
    for (double& t : trips) {
      const double t0 = now_us();
      launch(ctas, stream);
      SMD_CHECK(cudaStreamSynchronize(stream));
      t = now_us() - t0;
    }
    if (r >= 0) rec.samples.push_back(smd::median(trips));
  }
  SMD_CHECK(cudaStreamDestroy(stream));
  smd::emit(rec);
}

void run_enqueue(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const int ctas = grid(point);
  cudaStream_t stream;
  SMD_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  smd::Record enqueue = host_record(id, point, "enqueue", kEnqueued);
  smd::Record completed = host_record(id, point, "completed", kEnqueued);
  for (int r = -1; r < repeats; ++r) {
    SMD_CHECK(cudaStreamSynchronize(stream));
    const double t0 = now_us();
    for (int i = 0; i < kEnqueued; ++i) launch(ctas, stream);
    const double t1 = now_us();
    SMD_CHECK(cudaStreamSynchronize(stream));
    const double t2 = now_us();
    if (r < 0) continue;
    enqueue.samples.push_back((t1 - t0) / kEnqueued);
    completed.samples.push_back((t2 - t0) / kEnqueued);
  }
  SMD_CHECK(cudaStreamDestroy(stream));
  smd::emit(enqueue);
  smd::emit(completed);
}

std::vector<smd::KernelInfo> empty_list() { return {{{}, "host", 0, 1, "empty_kernel"}}; }

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv, {{"launch_round_trip", empty_list, run_round_trip}, {"launch_enqueue", empty_list, run_enqueue}});
}
