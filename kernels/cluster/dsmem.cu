// Distributed shared memory: latency of a dependent pointer chase in a peer CTA's shared memory (mapa +
// ld.shared::cluster) against the same chase in local shared memory (ld.shared, and ld.shared::cluster on the
// CTA's own rank), and the read / write bandwidth of every CTA of a cluster streaming 16 B accesses into its
// neighbour's shared memory against streaming its own. Each CTA fills more than half an SM's shared memory,
// so the CTAs of a cluster sit on distinct SMs (checked).
#include <set>

#include "cluster.cuh"

enum Target { kLocal, kOwnRank, kPeer };  // ld.shared; ld.shared::cluster on the own rank; on a peer rank
enum Op { kRead, kWrite };

constexpr int kSlots = 1024;  // chase slots of 4 B; slot i points to slot (i + kHop) % kSlots: one cycle
constexpr int kHop = 97;
constexpr int kSteps = 1024;  // timed dependent loads: n, then 2n (whole cycles: the chase ends where it began)
constexpr int kUnroll = 32;
constexpr int kVec = 2048;  // 16 B vectors of a streamed tile (32 KiB)
constexpr int kStreamThreads = 512;
constexpr int kPer = kVec / kStreamThreads;  // independent 16 B accesses per thread per pass
constexpr int kPasses = 256;
constexpr int kRot = 128;  // each pass starts kRot vectors further on, so no pass repeats the last one's addresses

template <int TARGET>
__device__ __forceinline__ uint32_t chase(uint32_t a, int steps) {
#pragma unroll 1
  for (int i = 0; i < steps; i += kUnroll)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) a = TARGET == kLocal ? cl::ld_local(a) : cl::ld_cluster(a);
  return a;
}

// Thread 0 of rank 0 writes the chain into the target CTA's shared memory (its own, or rank n-1's through
// st.shared::cluster), then chases it: n then 2n steps. Every CTA writes its SM id; all stay resident until
// the chase is over (the final cluster barrier), so the peer's shared memory outlives the reads.
template <int TARGET>
__global__ void chase_kernel(cl::Slope* out, uint32_t* end, unsigned* smids) {
  extern __shared__ uint32_t slots[];
  const uint32_t rank = cl::cta_rank(), target = TARGET == kPeer ? cl::cluster_ctas() - 1 : rank;
  if (threadIdx.x == 0) smids[blockIdx.x] = smd::sm_id();
  cl::sync();
  if (threadIdx.x == 0 && rank == 0) {
    const uint32_t local = cl::smem_addr(slots);
    const uint32_t base = TARGET == kLocal ? local : cl::mapa(local, target);
    for (uint32_t i = 0; i < kSlots; ++i) {
      const uint32_t next = base + 4u * ((i + kHop) % kSlots);
      if constexpr (TARGET == kLocal) slots[i] = next;
      else cl::st_cluster(base + 4u * i, next);
    }
    cl::Slope s;
    uint32_t a = base;
    s.ns0 = smd::clock_ns();
    s.c0 = smd::clock_cycles();
    a = chase<TARGET>(a, kSteps);
    s.c1 = smd::clock_cycles();
    a = chase<TARGET>(a, 2 * kSteps);
    s.c2 = smd::clock_cycles();
    s.ns2 = smd::clock_ns();
    s.smid = smd::sm_id();
    *out = s;
    *end = a - base;  // 0: 3n steps are whole cycles
  }
  cl::sync();
}

// The CTAs of the launched cluster ran on `cluster` distinct SMs, or one line says they did not.
void check_distinct(const unsigned* dsmids, int cluster) {
  std::vector<unsigned> smids(cluster);
  SMD_CHECK(cudaMemcpy(smids.data(), dsmids, cluster * sizeof(unsigned), cudaMemcpyDeviceToHost));
  if (int(std::set<unsigned>(smids.begin(), smids.end()).size()) != cluster)
    smd::fail("the CTAs of a cluster of " + std::to_string(cluster) + " shared an SM: shared memory did not force one "
              "CTA per SM");
}

template <int TARGET>
void run_chase(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const int cluster = cl::cluster_param(point);
  if (TARGET == kPeer && cluster < 2) smd::fail("a peer chase needs cluster >= 2", 2);
  const size_t smem = cl::one_per_sm(kSlots * 4);
  if (const std::string why = cl::refusal(chase_kernel<TARGET>, cluster, 32, smem); !why.empty())
    return smd::static_point(id, point, why);
  cl::Slope* dout;
  uint32_t* dend;
  unsigned* dsmids;
  SMD_CHECK(cudaMalloc(&dout, sizeof(cl::Slope)));
  SMD_CHECK(cudaMalloc(&dend, sizeof(uint32_t)));
  SMD_CHECK(cudaMalloc(&dsmids, cluster * sizeof(unsigned)));
  smd::Record rec{id, point, "latency", "cycle"};
  std::vector<double> cycles, clock;
  for (int r = -1; r < repeats; ++r) {  // r = -1: untimed first launch
    cudaError_t err;
    if (r < 0) {
      err = cl::launch(chase_kernel<TARGET>, cluster, cluster, 32, smem, dout, dend, dsmids);
    } else {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      err = cl::launch(chase_kernel<TARGET>, cluster, cluster, 32, smem, dout, dend, dsmids);
    }
    if (err != cudaSuccess) {
      cudaGetLastError();
      return smd::static_point(id, point, std::string("cluster launch refused: ") + cudaGetErrorString(err));
    }
    SMD_CHECK(cudaDeviceSynchronize());
    cl::Slope s;
    uint32_t end = 1;
    SMD_CHECK(cudaMemcpy(&s, dout, sizeof(s), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(&end, dend, sizeof(end), cudaMemcpyDeviceToHost));
    if (end != 0) smd::fail("the chase did not end where it began: the chain was not walked");
    check_distinct(dsmids, cluster);
    if (r < 0) continue;
    rec.samples.push_back(cl::per_step(s, kSteps));
    cycles.push_back(double(s.c2 - s.c0)), clock.push_back(cl::mhz(s));
    rec.smid = int(s.smid);
  }
  SMD_CHECK(cudaFree(dout));
  SMD_CHECK(cudaFree(dend));
  SMD_CHECK(cudaFree(dsmids));
  rec.cycles = smd::median(cycles), rec.clock_mhz = smd::median(clock), rec.iterations = kSteps;
  rec.variant = "timed";
  smd::emit(rec);
}

template <int TARGET>
__device__ __forceinline__ uint4 ld16(uint32_t a) {
  uint4 v;
  if constexpr (TARGET == kLocal)
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(a)
                 : "memory");
  else
#if SMD_HAS(cluster)
    asm volatile("ld.shared::cluster.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(a)
                 : "memory");
#else
    __trap(), v = {};
#endif
  return v;
}

template <int TARGET>
__device__ __forceinline__ void st16(uint32_t a, uint4 v) {
  if constexpr (TARGET == kLocal)
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
  else
#if SMD_HAS(cluster)
    asm volatile("st.shared::cluster.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
#else
    __trap();
#endif
}

// Word w of a tile holds w (+ the pass that wrote it, for writes): sums and final contents have closed forms.
__device__ __forceinline__ uint4 pattern(uint32_t vec, uint32_t pass) {
  const uint32_t w = 4 * vec + pass;
  return {w, w + 1, w + 2, w + 3};
}

// Every CTA of the cluster streams kPasses passes over a 32 KiB tile: its own (TARGET kLocal) or the next
// rank's (kPeer), reading (sum checked) or writing (the tile each CTA holds afterwards checked). The timed
// region ends after a cluster barrier, so every write has landed.
template <int OP, int TARGET>
__global__ void __launch_bounds__(kStreamThreads) stream_kernel(smd::Stamp* stamps, unsigned* sum, unsigned* bad) {
  extern __shared__ uint4 tile[];
  for (int v = threadIdx.x; v < kVec; v += kStreamThreads) tile[v] = pattern(v, 0);
  const uint32_t rank = cl::cta_rank(), n = cl::cluster_ctas(), local = cl::smem_addr(tile);
  const uint32_t base = TARGET == kLocal ? local : cl::mapa(local, (rank + 1) % n);
  uint32_t acc = 0;
  cl::sync();
  const unsigned long long ns0 = smd::clock_ns();
  const long long c0 = smd::clock_cycles();
#pragma unroll 1
  for (int p = 0; p < kPasses; ++p) {
    // Warps of different passes write the same slot unordered (the H200 showed a straggling warp's older pass
    // landing last): one cluster barrier orders the last pass after all others, so its pattern is what stays.
    if constexpr (OP == kWrite)
      if (p == kPasses - 1) cl::sync();
    uint4 v[kPer];
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const uint32_t slot = (threadIdx.x + k * kStreamThreads + p * kRot) & (kVec - 1);
      if constexpr (OP == kRead) v[k] = ld16<TARGET>(base + 16u * slot);
      else st16<TARGET>(base + 16u * slot, pattern(slot, p));
    }
    if constexpr (OP == kRead)
#pragma unroll
      for (int k = 0; k < kPer; ++k) acc += v[k].x + v[k].y + v[k].z + v[k].w;
  }
  cl::sync();
  const long long c1 = smd::clock_cycles();
  const unsigned long long ns1 = smd::clock_ns();
  if (threadIdx.x == 0) stamps[blockIdx.x] = {c0, c1, ns0, ns1, smd::sm_id()};
  if constexpr (OP == kWrite) {
    for (int v = threadIdx.x; v < kVec; v += kStreamThreads) {
      const uint4 got = tile[v], want = pattern(v, kPasses - 1);
      if (got.x != want.x || got.y != want.y || got.z != want.z || got.w != want.w) atomicAdd(bad, 1u);
    }
  }
  atomicAdd(sum, acc);
}

// Word sum of one tile modulo 2^32 (pass 0 pattern): what every pass of a read returns.
uint32_t tile_sum() {
  uint32_t s = 0;
  for (uint32_t w = 0; w < 4u * kVec; ++w) s += w;
  return s;
}

template <int OP, int TARGET>
void run_stream(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const int cluster = cl::cluster_param(point);
  if (TARGET == kPeer && cluster < 2) smd::fail("streaming to a peer needs cluster >= 2", 2);
  auto* kernel = stream_kernel<OP, TARGET>;
  const size_t smem = cl::one_per_sm(kVec * 16);
  if (const std::string why = cl::refusal(kernel, cluster, kStreamThreads, smem); !why.empty())
    return smd::static_point(id, point, why);
  smd::Stamp* dstamps;
  unsigned *dsum, *dbad;
  SMD_CHECK(cudaMalloc(&dstamps, cluster * sizeof(smd::Stamp)));
  SMD_CHECK(cudaMalloc(&dsum, sizeof(unsigned)));
  SMD_CHECK(cudaMalloc(&dbad, sizeof(unsigned)));
  const double per_cta = double(kVec) * 16 * kPasses;
  smd::Record rec{id, point, "bandwidth_per_sm", "B/cycle/SM"};
  std::vector<double> clock, cycles;
  std::vector<smd::Stamp> stamps(cluster);
  for (int r = -1; r < repeats; ++r) {  // r = -1: untimed first launch
    SMD_CHECK(cudaMemset(dsum, 0, sizeof(unsigned)));
    SMD_CHECK(cudaMemset(dbad, 0, sizeof(unsigned)));
    cudaError_t err;
    if (r < 0) {
      err = cl::launch(kernel, cluster, cluster, kStreamThreads, smem, dstamps, dsum, dbad);
    } else {
      smd::NvtxRange range(smd::range_name(id, point, "timed"));
      err = cl::launch(kernel, cluster, cluster, kStreamThreads, smem, dstamps, dsum, dbad);
    }
    if (err != cudaSuccess) {
      cudaGetLastError();
      return smd::static_point(id, point, std::string("cluster launch refused: ") + cudaGetErrorString(err));
    }
    SMD_CHECK(cudaDeviceSynchronize());
    unsigned sum = 0, bad = 0;
    SMD_CHECK(cudaMemcpy(&sum, dsum, sizeof(sum), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(&bad, dbad, sizeof(bad), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(stamps.data(), dstamps, cluster * sizeof(smd::Stamp), cudaMemcpyDeviceToHost));
    if (OP == kRead && sum != uint32_t(tile_sum() * uint32_t(kPasses * cluster)))
      smd::fail("streamed reads returned the wrong sum: data or indexing is broken");
    if (bad) smd::fail(std::to_string(bad) + " tile vectors hold the wrong value after the streamed writes");
    std::set<unsigned> sms;
    for (const auto& s : stamps) sms.insert(s.smid);
    if (int(sms.size()) != cluster) smd::fail("the CTAs of a cluster shared an SM: one CTA per SM was not forced");
    if (r < 0) continue;
    std::vector<double> rates, clocks;
    for (const auto& s : stamps) {
      rates.push_back(per_cta / double(s.c1 - s.c0));
      clocks.push_back(s.ns1 > s.ns0 ? (s.c1 - s.c0) * 1e3 / double(s.ns1 - s.ns0) : 0.0);
    }
    rec.samples.push_back(smd::median(rates));
    clock.push_back(smd::median(clocks));
    cycles.push_back(smd::span(stamps).cycles);
    rec.smid = int(stamps[0].smid);
  }
  SMD_CHECK(cudaFree(dstamps));
  SMD_CHECK(cudaFree(dsum));
  SMD_CHECK(cudaFree(dbad));
  rec.cycles = smd::median(cycles), rec.clock_mhz = smd::median(clock), rec.iterations = kPasses;
  rec.variant = "timed";
  if (OP == kRead && TARGET == kLocal)
    rec.expect = {{"sm__sass_data_bytes_mem_shared_op_ld.sum", per_cta * cluster}};
  smd::emit(rec);
}

template <int TARGET>
std::vector<smd::KernelInfo> chase_list() {
  return {cl::kernel("chase_kernel<" + std::to_string(TARGET) + ">", kUnroll, kSteps)};
}

template <int OP, int TARGET>
std::vector<smd::KernelInfo> stream_list() {
  return {cl::kernel("stream_kernel<" + std::to_string(OP) + "," + std::to_string(TARGET) + ">", kPer, kPasses)};
}

int main(int argc, char** argv) {
  return smd::family_main(argc, argv,
                          {{"dsmem_latency", chase_list<kPeer>, run_chase<kPeer>},
                           {"dsmem_latency_own", chase_list<kOwnRank>, run_chase<kOwnRank>},
                           {"smem_latency_local", chase_list<kLocal>, run_chase<kLocal>},
                           {"dsmem_read", stream_list<kRead, kPeer>, run_stream<kRead, kPeer>},
                           {"dsmem_write", stream_list<kWrite, kPeer>, run_stream<kWrite, kPeer>},
                           {"smem_read_local", stream_list<kRead, kLocal>, run_stream<kRead, kLocal>},
                           {"smem_write_local", stream_list<kWrite, kLocal>, run_stream<kWrite, kLocal>}});
}
