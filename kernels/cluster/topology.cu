// The chip's topology from where CTAs land. sm_topology: clusters of every size the device accepts (1 up to
// cudaOccupancyMaxPotentialClusterSize with non-portable sizes allowed), one CTA per SM, each CTA writing %smid,
// %cluster_ctarank and %nsmid: a cluster never leaves its GPC, so SMs linked by sharing any cluster lie in one GPC
// (groups: an upper bound on the GPC count), and SMs that always pair in 2-CTA clusters are the inferred TPCs.
// cta_order: a plain grid of exactly `per_sm` CTAs per SM, each writing %smid and %globaltimer at its start: the
// SM each blockIdx lands on, the stride between consecutive CTAs' SMs and how long the dispatch of the grid takes.
// Every CTA holds its SM for kHoldNs so the whole grid is resident at once (checked from the timestamps).
#include <algorithm>
#include <numeric>

#include "cluster.cuh"

constexpr unsigned long long kHoldNs = 200000;  // each CTA holds its SM 200 us: far longer than a grid's dispatch

// Where one CTA ran: SM id, cluster rank, %nsmid, and its first and last %globaltimer reading.
struct Landing {
  unsigned smid, rank, nsmid, pad;
  unsigned long long start, end;
};

__device__ __forceinline__ Landing land(unsigned rank) {
  Landing w;
  w.start = smd::clock_ns();
  w.smid = smd::sm_id(), w.rank = rank, w.nsmid = cl::nsmid(), w.pad = 0;
  return w;
}

// Thread 0 of each CTA records its landing, then holds the SM until kHoldNs after its start.
__device__ __forceinline__ void hold_and_write(Landing w, Landing* where) {
  if (threadIdx.x != 0) return;
  while (smd::clock_ns() - w.start < kHoldNs) {
  }
  w.end = smd::clock_ns();
  where[blockIdx.x] = w;
}

__global__ void topology_kernel(Landing* where) { hold_and_write(land(cl::cta_rank()), where); }
__global__ void order_kernel(Landing* where) { hold_and_write(land(0), where); }

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

// Every CTA of a launch started before the first one ended: the grid was resident at once.
bool resident_at_once(const std::vector<Landing>& w) {
  unsigned long long last_start = 0, first_end = ~0ull;
  for (const Landing& x : w) last_start = std::max(last_start, x.start), first_end = std::min(first_end, x.end);
  return last_start < first_end;
}

std::vector<Landing> fetch(Landing* d, int n) {
  std::vector<Landing> out(n);
  SMD_CHECK(cudaDeviceSynchronize());
  SMD_CHECK(cudaMemcpy(out.data(), d, n * sizeof(Landing), cudaMemcpyDeviceToHost));
  return out;
}

int device_attribute(cudaDeviceAttr attr) {
  int dev = 0, v = 0;
  SMD_CHECK(cudaGetDevice(&dev));
  SMD_CHECK(cudaDeviceGetAttribute(&v, attr, dev));
  return v;
}

void emit(const std::string& id, const std::map<std::string, long>& point, const char* metric, const char* unit,
          std::vector<double> samples) {
  smd::Record rec{id, point, metric, unit, std::move(samples)};
  rec.iterations = 1, rec.variant = "timed";
  smd::emit(rec);
}

// The largest cluster the device accepts for topology_kernel with non-portable sizes allowed (0: none).
int largest_cluster(size_t smem) {
  SMD_CHECK(cudaFuncSetAttribute(topology_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  SMD_CHECK(cudaFuncSetAttribute(topology_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(720720), cfg.blockDim = dim3(32), cfg.dynamicSmemBytes = smem;  // lcm(1..16): any size divides
  int size = 0;
  if (cudaOccupancyMaxPotentialClusterSize(&size, topology_kernel, &cfg) != cudaSuccess) cudaGetLastError(), size = 0;
  return size;
}

// One launch of `active` clusters of `n` CTAs, one CTA per SM; joins each cluster's SMs in `groups`, and for n = 2
// notes each SM's partner (-2 once it has had two different partners); marks the SMs it used in `seen`. Returns 1 if
// the grid was resident at once, 0 if not, -1 if the runtime refused the launch.
int place(int n, int active, size_t smem, Landing* d, Groups& groups, std::vector<int>& partner,
          std::vector<char>& seen) {
  const int ctas = n * active;
  if (cl::launch(topology_kernel, ctas, n, 32, smem, d) != cudaSuccess) return cudaGetLastError(), -1;
  const std::vector<Landing> w = fetch(d, ctas);
  for (int c = 0; c < active; ++c) {
    for (int k = 0; k < n; ++k) {
      const Landing& x = w[c * n + k];
      if (x.rank != unsigned(k) || x.smid >= unsigned(groups.up.size()))
        smd::fail("CTA " + std::to_string(c * n + k) + " reports rank " + std::to_string(x.rank) + " smid " +
                  std::to_string(x.smid) + ": not the launched 1-D cluster shape");
      groups.join(int(x.smid), int(w[c * n].smid));
      seen[x.smid] = 1;
    }
    if (n != 2) continue;
    for (int k = 0; k < 2; ++k) {
      int& p = partner[w[c * 2 + k].smid];
      const int other = int(w[c * 2 + 1 - k].smid);
      p = (p == -1 || p == other) ? other : -2;
    }
  }
  return resident_at_once(w) ? 1 : 0;
}

void run_topology(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const int sms = device_attribute(cudaDevAttrMultiProcessorCount);
  const size_t smem = cl::one_per_sm(0);
  const int largest = largest_cluster(smem);
  if (largest < 2) return smd::static_point(id, point, "the device accepts no cluster of 2 or more CTAs");
  Landing* d;
  SMD_CHECK(cudaMalloc(&d, size_t(sms) * sizeof(Landing)));
  order_kernel<<<1, 32>>>(d);  // %nsmid: the SM id range, which may exceed the SM count
  const unsigned nsmid = fetch(d, 1)[0].nsmid;
  Groups groups{int(nsmid)};
  std::vector<int> partner(nsmid, -1);
  std::vector<char> seen(nsmid, 0);
  std::vector<double> active_by_size, at_once;
  for (int n = 1; n <= largest; ++n) {
    int active = 0;
    if (cl::max_active_clusters(topology_kernel, n, 32, smem, active) != cudaSuccess) cudaGetLastError(), active = -1;
    active_by_size.push_back(active);  // -1: the size was refused
    for (int r = 0; n >= 2 && active > 0 && r < repeats; ++r) {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      const int placed = place(n, active, smem, d, groups, partner, seen);
      if (placed < 0) {
        active_by_size.back() = -1;
        break;
      }
      at_once.push_back(placed);
    }
  }
  SMD_CHECK(cudaFree(d));
  if (at_once.empty()) return smd::static_point(id, point, "the runtime refused every cluster launch of 2 or more CTAs");
  std::vector<double> group_of(nsmid, -1.0), partner_of(partner.begin(), partner.end());
  for (int sm = 0; sm < int(nsmid); ++sm)
    if (seen[sm]) group_of[sm] = groups.find(sm);
  emit(id, point, "max_cluster_size", "cta", {double(largest)});
  emit(id, point, "sm_count_attribute", "sm", {double(sms)});
  emit(id, point, "nsmid", "sm", {double(nsmid)});
  emit(id, point, "active_clusters_by_size", "cluster", active_by_size);  // sample i: i + 1 CTAs (-1 refused)
  emit(id, point, "resident_at_once", "fraction", at_once);                // per launch: 1 if all CTAs overlapped
  emit(id, point, "group_of_sm", "sm", group_of);      // sample i: SM i's group (its smallest SM id), -1 unused
  emit(id, point, "partner_of_sm", "sm", partner_of);  // sample i: SM i's only 2-CTA partner, -2 several, -1 none
}

// The most common step (smid[i + 1] - smid[i]) mod nsmid between consecutive blockIdx.
double common_stride(const std::vector<Landing>& w, unsigned nsmid) {
  std::map<unsigned, int> steps;
  for (size_t i = 0; i + 1 < w.size(); ++i) ++steps[(w[i + 1].smid + nsmid - w[i].smid) % nsmid];
  return double(std::max_element(steps.begin(), steps.end(), [](auto& a, auto& b) { return a.second < b.second; })
                    ->first);
}

void run_order(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long per_sm = smd::param(point, "per_sm");
  if (per_sm < 1 || per_sm > 4) smd::fail("per_sm must be 1 to 4", 2);
  const int sms = device_attribute(cudaDevAttrMultiProcessorCount);
  const int optin = device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin);
  const int per_sm_smem = device_attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor);
  const int smem = std::min(optin, per_sm_smem / int(per_sm + 1) + 1024);  // per_sm fit, per_sm + 1 do not
  SMD_CHECK(cudaFuncSetAttribute(order_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int fit = 0;
  SMD_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, order_kernel, 32, smem));
  if (fit != per_sm)
    return smd::static_point(id, point, std::to_string(smem) + " B of shared memory per CTA fits " +
                                            std::to_string(fit) + " CTAs per SM, not " + std::to_string(per_sm));
  const int ctas = int(per_sm) * sms;
  Landing* d;
  SMD_CHECK(cudaMalloc(&d, ctas * sizeof(Landing)));
  std::vector<Landing> first;
  std::vector<double> distinct, most, span, stride, same, in_order;
  for (int r = -1; r < repeats; ++r) {  // r = -1: untimed first launch
    if (r < 0) {
      order_kernel<<<ctas, 32, smem>>>(d);
    } else {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      order_kernel<<<ctas, 32, smem>>>(d);
    }
    SMD_CHECK(cudaGetLastError());
    const std::vector<Landing> w = fetch(d, ctas);
    if (r < 0) continue;
    if (!resident_at_once(w)) smd::fail("the grid of " + std::to_string(ctas) + " CTAs was not resident at once");
    std::map<unsigned, int> on;
    unsigned long long t0 = ~0ull, t1 = 0;
    int kept = 0, rising = 0;
    for (int i = 0; i < ctas; ++i) {
      ++on[w[i].smid], t0 = std::min(t0, w[i].start), t1 = std::max(t1, w[i].start);
      if (!first.empty()) kept += w[i].smid == first[i].smid;
      if (i + 1 < ctas) rising += w[i + 1].start >= w[i].start;
    }
    if (first.empty()) first = w, kept = ctas;
    distinct.push_back(double(on.size()));
    most.push_back(double(std::max_element(on.begin(), on.end(), [](auto& a, auto& b) { return a.second < b.second; })
                              ->second));
    span.push_back(double(t1 - t0));
    stride.push_back(common_stride(w, w[0].nsmid));
    same.push_back(double(kept) / ctas);
    in_order.push_back(double(rising) / (ctas - 1));
  }
  SMD_CHECK(cudaFree(d));
  std::vector<double> sm_of, start_of;
  unsigned long long t0 = ~0ull;
  for (const Landing& x : first) t0 = std::min(t0, x.start);
  for (const Landing& x : first) sm_of.push_back(x.smid), start_of.push_back(double(x.start - t0));
  emit(id, point, "sm_count_attribute", "sm", {double(sms)});
  emit(id, point, "distinct_sms", "sm", distinct);        // per launch: SMs the grid used
  emit(id, point, "ctas_per_sm", "cta", most);            // per launch: the most CTAs one SM held
  emit(id, point, "dispatch_span", "ns", span);           // per launch: last CTA start minus first
  emit(id, point, "sm_stride", "sm", stride);             // per launch: the most common smid step of blockIdx + 1
  emit(id, point, "same_sm_as_first", "fraction", same);  // per launch: CTAs on the SM the first launch gave them
  emit(id, point, "start_in_order", "fraction", in_order);  // per launch: blockIdx i + 1 started no earlier than i
  emit(id, point, "sm_of_cta", "sm", sm_of);              // sample i: blockIdx i's SM (first timed launch)
  emit(id, point, "start_of_cta", "ns", start_of);        // sample i: blockIdx i's start after the grid's first
}

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv,
      {{"sm_topology", [] { return std::vector{cl::kernel("topology_kernel", 0, 1)}; }, run_topology},
       {"cta_order", [] { return std::vector{cl::kernel("order_kernel", 0, 1)}; }, run_order}});
}
