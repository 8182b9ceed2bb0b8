// Dependent latency of one async copy: one thread chases a random cycle of slots through the copy itself
// (each copy brings a slot whose first word is the next slot's index into shared memory, the thread waits for
// it and reads the index). Ops: cp.async.ca 4/8/16 B and cp.async.cg 16 B (+ commit, wait_group 0), the 1D bulk
// copy and the 2D tensor copy (mbarrier expect_tx + try_wait.parity). Latency is the slope between n and 2n steps.
#include "async.cuh"

constexpr int kSteps = 256;   // timed steps of the short phase (a multiple of kUnroll)
constexpr int kUnroll = 8;    // steps per loop body
constexpr int kMaxBytes = 16384;

struct ChaseArgs {
  const uint8_t* base;
  long slot;        // bytes between slots
  int bytes;        // bytes per copy
  int steps, warm;  // timed short phase, untimed steps before it
  long warm_bytes;  // bytes the CTA reads first (L2-resident footprints), 0 for none
  uint32_t* cursor;  // the chase's index, carried from launch to launch
  long long* clocks;  // c0, c1, c2, smid, ns between c0 and c2
};

// cp.async of N bytes with cache operator .ca (CG = false) or .cg; the thread waits for its own group.
template <int N, bool CG>
struct CpAsync {
  __device__ __forceinline__ static uint32_t step(uint8_t* dst, const ChaseArgs& a, const CUtensorMap*, uint64_t*,
                                                  uint32_t, uint32_t idx) {
    const uint8_t* src = a.base + idx * a.slot;
    if constexpr (CG)
      asm volatile("cp.async.cg.shared.global [%0], [%1], %2;" ::"r"(as::smem(dst)), "l"(src), "n"(N) : "memory");
    else
      asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(as::smem(dst)), "l"(src), "n"(N) : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    return as::ld_shared_u32(dst);
  }
};
struct CaWord : CpAsync<4, false> {};
struct CaDouble : CpAsync<8, false> {};
struct CaQuad : CpAsync<16, false> {};
struct CgQuad : CpAsync<16, true> {};

struct Bulk {
  __device__ __forceinline__ static uint32_t step(uint8_t* dst, const ChaseArgs& a, const CUtensorMap*, uint64_t* bar,
                                                  uint32_t parity, uint32_t idx) {
    as::arrive_expect_tx(bar, a.bytes);
    as::bulk_g2s(dst, a.base + idx * a.slot, a.bytes, bar);
    as::wait(bar, parity);
    return as::ld_shared_u32(dst);
  }
};

struct Tensor {
  __device__ __forceinline__ static uint32_t step(uint8_t* dst, const ChaseArgs& a, const CUtensorMap* map,
                                                  uint64_t* bar, uint32_t parity, uint32_t idx) {
    as::arrive_expect_tx(bar, a.bytes);
    as::tensor_g2s(dst, map, 0, int(idx * (a.slot / as::kRowBytes)), bar);
    as::wait(bar, parity);
    return as::ld_shared_u32(dst);
  }
};

template <class Op>
__device__ __forceinline__ uint32_t chase(uint8_t* dst, const ChaseArgs& a, const CUtensorMap* map, uint64_t* bar,
                                          uint32_t& phase, uint32_t idx, int steps) {
#pragma unroll 1
  for (int s = 0; s < steps; s += kUnroll)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) idx = Op::step(dst, a, map, bar, phase++ & 1, idx);
  return idx;
}

// The CTA reads the warm bytes (L2, TLB), then thread 0 chases warm, n and 2n steps, timing the last two.
template <class Op>
__global__ void __launch_bounds__(1024) chase_kernel(const __grid_constant__ CUtensorMap map, ChaseArgs a) {
  __shared__ __align__(128) uint8_t dst[kMaxBytes];
  __shared__ uint64_t bar;
  uint32_t acc = 0;
  for (long i = threadIdx.x * 16L; i < a.warm_bytes; i += 16L * blockDim.x)
    acc ^= *reinterpret_cast<const volatile uint32_t*>(a.base + i);
  if (threadIdx.x == 0) as::bar_init(&bar, 1);
  __syncthreads();
  if (threadIdx.x != 0) return;
  uint32_t phase = 0, idx = *a.cursor;
  idx = chase<Op>(dst, a, &map, &bar, phase, idx, a.warm);
  const unsigned long long ns0 = smd::clock_ns();
  const long long c0 = smd::clock_cycles();
  idx = chase<Op>(dst, a, &map, &bar, phase, idx, a.steps);
  const long long c1 = smd::clock_cycles();
  idx = chase<Op>(dst, a, &map, &bar, phase, idx, 2 * a.steps);
  const long long c2 = smd::clock_cycles();
  const unsigned long long ns2 = smd::clock_ns();
  a.clocks[0] = c0, a.clocks[1] = c1, a.clocks[2] = c2, a.clocks[3] = smd::sm_id(), a.clocks[4] = ns2 - ns0;
  *a.cursor = idx ^ (acc == 0x9e3779b9u);  // the warm reads stay live; the xor is 0 for any real buffer
}

// Sweep: footprint_kb and bytes per copy. Slots are max(bytes, 128 B) apart (1 KB rows for the tensor map); a
// footprint of at most half the L2 is read by the CTA first and chased warm (L2, or L1 for cp.async.ca); a larger
// one is chased from DRAM, the cursor carried over so no launch revisits the slots of the last.
template <class Op, int FIXED_BYTES, bool TENSOR>
void run_chase(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long kb = smd::param(point, "footprint_kb"), bytes = smd::param(point, "bytes");
  if (FIXED_BYTES && bytes != FIXED_BYTES)
    smd::fail(id + " copies " + std::to_string(FIXED_BYTES) + " B per op, got bytes=" + std::to_string(bytes), 2);
  if (!FIXED_BYTES && (bytes < (TENSOR ? as::kRowBytes : 16) || bytes > kMaxBytes || bytes % (TENSOR ? as::kRowBytes : 16)))
    smd::fail("bytes must be a multiple of " + std::to_string(TENSOR ? as::kRowBytes : 16) + " up to 16384", 2);
  const long slot = std::max<long>(bytes, TENSOR ? as::kRowBytes : 128);
  if (kb < 1 || kb * 1024 / slot < 2) smd::fail("footprint_kb must hold at least two slots of " + std::to_string(slot) + " B", 2);
  as::Chain chain(kb * 1024, slot);
  const bool warm = chain.bytes <= as::l2_bytes() / 2;
  const CUtensorMap map = TENSOR ? as::tensor_map(chain.base, chain.bytes, int(bytes / as::kRowBytes)) : CUtensorMap{};
  uint32_t* cursor;
  long long* clocks;
  SMD_CHECK(cudaMalloc(&cursor, sizeof(uint32_t)));
  SMD_CHECK(cudaMalloc(&clocks, 5 * sizeof(long long)));
  SMD_CHECK(cudaMemset(cursor, 0, sizeof(uint32_t)));
  const ChaseArgs a{chain.base, slot, int(bytes), kSteps, kSteps, warm ? chain.bytes : 0, cursor, clocks};
  smd::Record rec{id, point, "latency", "cycle"};
  std::vector<double> cycles, mhz;
  for (int r = -1; r < repeats; ++r) {
    {
      smd::NvtxRange range(smd::range_name(id, point, "timed"), r >= 0);
      chase_kernel<Op><<<1, 1024>>>(map, a);
      SMD_CHECK(cudaGetLastError());
      SMD_CHECK(cudaDeviceSynchronize());
    }
    long long c[5];
    uint32_t idx = 0;
    SMD_CHECK(cudaMemcpy(c, clocks, sizeof(c), cudaMemcpyDeviceToHost));
    SMD_CHECK(cudaMemcpy(&idx, cursor, sizeof(idx), cudaMemcpyDeviceToHost));
    if (idx >= chain.slots) smd::fail(id + ": the chase left its footprint: the chain is broken");
    if (r < 0) continue;
    rec.samples.push_back(double((c[2] - c[1]) - (c[1] - c[0])) / kSteps);
    cycles.push_back(double(c[2] - c[0]));
    mhz.push_back(c[4] > 0 ? (c[2] - c[0]) * 1e3 / c[4] : 0.0);
    rec.smid = int(c[3]);
  }
  SMD_CHECK(cudaFree(cursor));
  SMD_CHECK(cudaFree(clocks));
  rec.cycles = smd::median(cycles), rec.iterations = kSteps;
  rec.clock_mhz = smd::median(mhz);
  smd::emit(rec);
}

int main(int argc, char** argv) {
  return smd::family_main(
      argc, argv,
      {{"cp_async_ca_latency",
        [] {
          return std::vector<smd::KernelInfo>{{{{"bytes", 4}}, "timed", kUnroll, kSteps, "chase_kernel<CaWord>"},
                                              {{{"bytes", 8}}, "timed", kUnroll, kSteps, "chase_kernel<CaDouble>"},
                                              {{{"bytes", 16}}, "timed", kUnroll, kSteps, "chase_kernel<CaQuad>"}};
        },
        [](const std::string& id, const std::map<std::string, long>& p, int n) {
          const long b = smd::param(p, "bytes");
          if (b == 4) return run_chase<CaWord, 4, false>(id, p, n);
          if (b == 8) return run_chase<CaDouble, 8, false>(id, p, n);
          run_chase<CaQuad, 16, false>(id, p, n);
        }},
       {"cp_async_cg_latency", [] { return std::vector{as::kernel("chase_kernel<CgQuad>", kUnroll, kSteps)}; },
        run_chase<CgQuad, 16, false>},
       {"bulk_latency", [] { return std::vector{as::kernel("chase_kernel<Bulk>", kUnroll, kSteps)}; },
        run_chase<Bulk, 0, false>},
       {"tensor_latency", [] { return std::vector{as::kernel("chase_kernel<Tensor>", kUnroll, kSteps)}; },
        run_chase<Tensor, 0, true>}});
}
