// Cluster barrier cost (barrier.cluster.arrive + barrier.cluster.wait, cycles per barrier as the slope over
// n and 2n barriers) versus cluster size, and where the CTAs of a cluster land (%smid, %nsmid, %clusterid,
// %cluster_ctarank): SMs linked by sharing a cluster form groups that bound the GPC (and, for pairs, the TPC).
#include <numeric>
#include <set>

#include "cluster.cuh"

constexpr int kSteps = 256;  // timed barriers: n, then 2n
constexpr int kUnroll = 32;
constexpr int kThreads = 128;

template <int RELAXED>
__device__ __forceinline__ void barriers(int steps) {
#pragma unroll 1
  for (int i = 0; i < steps; i += kUnroll)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if constexpr (RELAXED) cl::arrive_relaxed();
      else cl::arrive();
      cl::wait();
    }
}

// One cluster: every thread of every CTA arrives and waits; thread 0 of rank 0 times n then 2n barriers
// and writes the cluster's CTA count as the kernel saw it (the check that the launch formed the cluster).
template <int RELAXED>
__global__ void barrier_kernel(int steps, cl::Slope* out, unsigned* ctas) {
  cl::sync();
  cl::Slope s;
  s.ns0 = smd::clock_ns();
  s.c0 = smd::clock_cycles();
  barriers<RELAXED>(steps);
  s.c1 = smd::clock_cycles();
  barriers<RELAXED>(2 * steps);
  s.c2 = smd::clock_cycles();
  s.ns2 = smd::clock_ns();
  s.smid = smd::sm_id();
  if (threadIdx.x == 0 && cl::cta_rank() == 0) *out = s, *ctas = cl::cluster_ctas();
}

void run_barrier(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const int cluster = cl::cluster_param(point);
  auto* kernel = id == "cluster_barrier_relaxed" ? barrier_kernel<1> : barrier_kernel<0>;
  if (const std::string why = cl::refusal(kernel, cluster, kThreads, 0); !why.empty())
    return smd::static_point(id, point, why);
  cl::Slope* dout;
  unsigned* dctas;
  SMD_CHECK(cudaMalloc(&dout, sizeof(cl::Slope)));
  SMD_CHECK(cudaMalloc(&dctas, sizeof(unsigned)));
  smd::Record rec{id, point, "latency", "cycle"};
  std::vector<double> cycles, clock;
  for (int r = -1; r < repeats; ++r) {  // r = -1: untimed first launch
    cudaError_t err;
    if (r < 0) {
      err = cl::launch(kernel, cluster, cluster, kThreads, 0, kSteps, dout, dctas);
    } else {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      err = cl::launch(kernel, cluster, cluster, kThreads, 0, kSteps, dout, dctas);
    }
    if (err != cudaSuccess) {
      cudaGetLastError();
      return smd::static_point(id, point, std::string("cluster launch refused: ") + cudaGetErrorString(err));
    }
    SMD_CHECK(cudaDeviceSynchronize());
    cl::Slope s;
    unsigned ctas = 0;
    SMD_CHECK(cudaMemcpy(&s, dout, sizeof(s), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(&ctas, dctas, sizeof(ctas), cudaMemcpyDeviceToHost));
    if (int(ctas) != cluster)
      smd::fail("the kernel saw clusters of " + std::to_string(ctas) + " CTAs, not " + std::to_string(cluster));
    if (r < 0) continue;
    rec.samples.push_back(cl::per_step(s, kSteps));
    cycles.push_back(double(s.c2 - s.c0)), clock.push_back(cl::mhz(s));
    rec.smid = int(s.smid);
  }
  SMD_CHECK(cudaFree(dout));
  SMD_CHECK(cudaFree(dctas));
  rec.cycles = smd::median(cycles), rec.clock_mhz = smd::median(clock), rec.iterations = kSteps;
  rec.variant = "timed";
  smd::emit(rec);
}

// Each CTA (one per SM: its dynamic shared memory fills an SM) writes where it runs, then holds its SM for
// `hold` cycles so the whole grid is resident at once.
__global__ void placement_kernel(uint4* where, long long hold) {
  const long long t0 = smd::clock_cycles();
  if (threadIdx.x == 0) where[blockIdx.x] = {smd::sm_id(), cl::cluster_id(), cl::cta_rank(), cl::nsmid()};
  while (smd::clock_cycles() - t0 < hold) {
  }
}

// Union-find over SM ids: SMs that ever shared a cluster end in one group, labelled by its smallest SM id.
struct Groups {
  std::vector<int> up;
  explicit Groups(int n) : up(n) { std::iota(up.begin(), up.end(), 0); }
  int find(int a) { return up[a] == a ? a : up[a] = find(up[a]); }
  void join(int a, int b) {
    a = find(a), b = find(b);
    if (a != b) up[std::max(a, b)] = std::min(a, b);
  }
};

void run_placement(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const int cluster = cl::cluster_param(point);
  int dev = 0, sms = 0;
  size_t smem = 0;
  {
    int optin = 0, per_sm = 0;
    SMD_CHECK(cudaGetDevice(&dev));
    SMD_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    SMD_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    SMD_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
    smem = size_t(std::min(optin, per_sm / 2 + 1024));  // more than half an SM: one CTA per SM
  }
  int active = 0;
  if (cudaError_t err = cl::max_active_clusters(placement_kernel, cluster, 32, smem, active); err != cudaSuccess) {
    cudaGetLastError();
    return smd::static_point(id, point, std::string("clusters refused: ") + cudaGetErrorString(err));
  }
  if (active == 0) return smd::static_point(id, point, "no cluster of this size fits (max active clusters 0)");
  const int ctas = active * cluster;
  uint4* dwhere;
  SMD_CHECK(cudaMalloc(&dwhere, ctas * sizeof(uint4)));
  std::vector<uint4> where(ctas);
  std::vector<double> distinct, span, used, groups_per_launch;
  unsigned nsmid = 0;
  Groups all(1);
  std::set<unsigned> used_all;
  for (int r = 0; r < repeats; ++r) {
    cudaError_t err;
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      err = cl::launch(placement_kernel, ctas, cluster, 32, smem, dwhere, 20000LL);
    }
    if (err != cudaSuccess) {
      cudaGetLastError();
      return smd::static_point(id, point, std::string("cluster launch refused: ") + cudaGetErrorString(err));
    }
    SMD_CHECK(cudaDeviceSynchronize());
    SMD_CHECK(cudaMemcpy(where.data(), dwhere, ctas * sizeof(uint4), cudaMemcpyDeviceToHost));
    nsmid = where[0].w;
    if (r == 0) all = Groups(int(nsmid));
    Groups one{int(nsmid)};
    std::set<unsigned> launch_sms;
    double most_span = 0, fewest = cluster;
    for (int c = 0; c < active; ++c) {
      std::set<unsigned> in;
      for (int k = 0; k < cluster; ++k) {
        const uint4 w = where[c * cluster + k];
        if (w.y != unsigned(c) || w.z != unsigned(k) || w.x >= nsmid)
          smd::fail("CTA " + std::to_string(c * cluster + k) + " reports cluster " + std::to_string(w.y) + " rank " +
                    std::to_string(w.z) + " smid " + std::to_string(w.x) + ": not the launched 1-D cluster shape");
        in.insert(w.x);
        launch_sms.insert(w.x);
        used_all.insert(w.x);
        one.join(int(w.x), int(where[c * cluster].x));
        all.join(int(w.x), int(where[c * cluster].x));
      }
      most_span = std::max(most_span, double(*in.rbegin() - *in.begin()));
      fewest = std::min(fewest, double(in.size()));
    }
    std::set<int> roots;
    for (unsigned sm : launch_sms) roots.insert(one.find(int(sm)));
    distinct.push_back(fewest), span.push_back(most_span), used.push_back(double(launch_sms.size()));
    groups_per_launch.push_back(double(roots.size()));
  }
  SMD_CHECK(cudaFree(dwhere));
  auto emit = [&](const char* metric, const char* unit, std::vector<double> samples) {
    smd::Record rec{id, point, metric, unit, std::move(samples)};
    rec.iterations = 1, rec.variant = "timed";
    smd::emit(rec);
  };
  emit("max_active_clusters", "cluster", {double(active)});
  emit("nsmid", "sm", {double(nsmid)});
  emit("active_sms", "sm", used);
  emit("distinct_sms_per_cluster", "sm", distinct);  // the fewest SMs one cluster of the launch used
  emit("smid_span", "sm", span);                     // the widest max - min SM id of one cluster
  emit("sm_groups", "group", groups_per_launch);     // SM groups linked by one launch's clusters
  // Sample i: the group (smallest SM id) SM i joined over all launches, -1 for an SM no cluster used.
  std::vector<double> group_of(nsmid, -1.0);
  for (unsigned sm : used_all) group_of[sm] = all.find(int(sm));
  emit("group_of_sm", "sm", group_of);
}

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv,
      {{"cluster_barrier", [] { return std::vector{cl::kernel("barrier_kernel<0>", kUnroll, kSteps)}; }, run_barrier},
       {"cluster_barrier_relaxed", [] { return std::vector{cl::kernel("barrier_kernel<1>", kUnroll, kSteps)}; },
        run_barrier},
       {"cluster_placement", [] { return std::vector{cl::kernel("placement_kernel", 0, 1)}; }, run_placement}});
}
