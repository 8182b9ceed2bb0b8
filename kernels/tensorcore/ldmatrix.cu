// ldmatrix x1/x2/x4 latency (address-dependent chain) and throughput, stmatrix->ldmatrix round trips, and
// ldmatrix feeding mma.sync with and without software pipelining (load of step i+1 overlapping mma i).
#include "ops.cuh"

// Shared rows for the lanes' addresses (16 B per lane) and a mask that is 0 at run time but unknown to the
// compiler: address = base + (last loaded word & mask) makes each load depend on the previous one.
struct Rows {
  uint32_t base, mask;
};

__device__ inline Rows rows(float seed) {
  __shared__ alignas(128) uint32_t buf[32 * 4];
  for (int i = threadIdx.x; i < 32 * 4; i += blockDim.x) buf[i] = i;
  __syncthreads();
  return {uint32_t(__cvta_generic_to_shared(buf)) + threadIdx.x % 32 * 16, uint32_t(seed)};
}

template <int X>
__device__ inline void ldsm(tc::Frag<uint32_t, 4>& r, uint32_t addr) {
  if constexpr (X == 1)
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r.v[0]) : "r"(addr));
  else if constexpr (X == 2)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(r.v[0]), "=r"(r.v[1]) : "r"(addr));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r.v[0]), "=r"(r.v[1]), "=r"(r.v[2]), "=r"(r.v[3])
                 : "r"(addr));
}

// Common shape of the shared-memory operations: 32-thread units, no FLOP, results always valid.
struct SharedOp {
  using Ctx = Rows;
  static constexpr int kThreads = 32, kMaxThreads = 512, kBody = 32, kPerStep = 1;
  static constexpr double flop = 0;
  static int insts(int) { return 1; }
  __device__ static Ctx setup(float seed) { return rows(seed); }
};

// ldmatrix .xX: the next address depends on the loaded fragment.
template <int X>
struct Ldsm : SharedOp {
  using Acc = tc::Frag<uint32_t, 4>;
  static constexpr tc::Counter counter = tc::Counter::ldsm;
  __device__ static void init(Acc& c, float, int chain) { c.v[0] = c.v[1] = c.v[2] = c.v[3] = chain; }
  static bool valid(const Acc&) { return true; }
  __device__ static void step(Acc& c, const Ctx& x) { ldsm<X>(c, x.base + (c.v[0] & x.mask)); }
};
TC_NAMED(LdsmX1, Ldsm<1>);
TC_NAMED(LdsmX2, Ldsm<2>);
TC_NAMED(LdsmX4, Ldsm<4>);

// stmatrix .x4 of the fragment, then ldmatrix .x4 of the same rows: the store->load round trip.
struct StsmX4 : Ldsm<4> {
  static constexpr const char* name = "StsmX4";
  static constexpr tc::Counter counter = tc::Counter::stsm;
  __device__ static void step(Acc& c, const Ctx& x) {
    const uint32_t addr = x.base + (c.v[0] & x.mask);
#if SMD_HAS(stmatrix)  // sm_90 (the case requires it)
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};"
                 ::"r"(addr), "r"(c.v[0]), "r"(c.v[1]), "r"(c.v[2]), "r"(c.v[3]));
#endif
    ldsm<4>(c, addr);
  }
};

// A fragment of A loaded by ldmatrix .x4 and the f16 mma.sync that uses it.
struct LoadMmaState {
  F16F32::Acc c;
  tc::Frag<uint32_t, 4> a;
};

struct LoadMma : SharedOp {
  using Acc = LoadMmaState;
  static constexpr double flop = F16F32::flop;
  static constexpr tc::Counter counter = tc::Counter::hmma;
  __device__ static void init(Acc& s, float seed, int chain) {
    F16F32::init(s.c, seed, chain);
    s.a = {{kF16, kF16, kF16, kF16}};
  }
  static bool valid(const Acc& s) { return F16F32::valid(s.c); }
  // mma.sync on fragment `a` with B = A's first two registers.
  __device__ static void mma(Acc& s) { F16F32::step(s.c, {{s.a.v[0], s.a.v[1], s.a.v[2], s.a.v[3]}, {kF16, kF16}}); }
};

// Unpipelined: load at an address from the accumulator, then the mma on what was just loaded.
struct LdsmThenMma : LoadMma {
  static constexpr const char* name = "LdsmThenMma";
  __device__ static void step(Acc& s, const Ctx& x) {
    ldsm<4>(s.a, x.base + (s.c.v[0] & x.mask));
    mma(s);
  }
};

// Software-pipelined: the mma uses the fragment loaded one step earlier while the next load is in flight.
struct LdsmMmaPipelined : LoadMma {
  static constexpr const char* name = "LdsmMmaPipelined";
  __device__ static void step(Acc& s, const Ctx& x) {
    const tc::Frag<uint32_t, 4> ready = s.a;
    ldsm<4>(s.a, x.base + (ready.v[0] & x.mask));
    F16F32::step(s.c, {{ready.v[0], ready.v[1], ready.v[2], ready.v[3]}, {kF16, kF16}});
  }
};

int main(int argc, char** argv) {
  return smd::family_main(argc, argv,
                          {tc::warp_case<LdsmX1>("ldmatrix_x1"), tc::warp_case<LdsmX2>("ldmatrix_x2"),
                           tc::warp_case<LdsmX4>("ldmatrix_x4"), tc::warp_case<StsmX4>("stmatrix_ldmatrix_x4"),
                           tc::warp_case<LdsmThenMma>("ldmatrix_mma"),
                           tc::warp_case<LdsmMmaPipelined>("ldmatrix_mma_pipelined")});
}
