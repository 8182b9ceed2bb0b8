// Family cutlass_sm120: the block-scaled NVFP4 GEMM of sm_120a (CUTLASS example 79a): Sm120,
// OpClassBlockScaledTensorOp, nv_float4_t<float_e2m1_t> A (row-major) and B (column-major) with one ue4m3 scale
// factor per 16 K-elements, fp32 accumulate, bf16 D (row-major), 128x128x128 tile, 1x1x1 cluster, the
// builder's default (cooperative) schedule. Every scale factor is 2.0, so D = 4 A B whatever the scale-factor
// layout, and a plain device GEMM over the decoded e2m1 values gives the exact reference (sums of multiples of
// 1/4 below 2^22 are exact in fp32).
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/detail/sm100_blockscaled_layout.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"
#include "gemm.cuh"

namespace sm120 {
using namespace cute;
using ElementAB = cutlass::nv_float4_t<cutlass::float_e2m1_t>;
using ElementD = cutlass::bfloat16_t;
using TileShape = Shape<_128, _128, _128>;
using ClusterShape = Shape<_1, _1, _1>;
constexpr int kAlignAB = 32;  // 16 bytes of e2m1
constexpr int kAlignD = 8;
using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm120, cutlass::arch::OpClassBlockScaledTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, cutlass::layout::RowMajor, kAlignD, ElementD,
    cutlass::layout::RowMajor, kAlignD, cutlass::epilogue::collective::EpilogueScheduleAuto>::CollectiveOp;
using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm120, cutlass::arch::OpClassBlockScaledTensorOp, ElementAB, cutlass::layout::RowMajor, kAlignAB,
    ElementAB, cutlass::layout::ColumnMajor, kAlignAB, float, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
    cutlass::gemm::collective::KernelScheduleAuto>::CollectiveOp;
using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue, void>;
using Config = typename Kernel::CollectiveMainloop::Sm1xxBlkScaledConfig;
}  // namespace sm120

// CUTLASS's own kernel body (what cutlass::device_kernel<Kernel> runs) under a plain name; empty on other archs.
__global__ void __launch_bounds__(sm120::Kernel::MaxThreadsPerBlock, sm120::Kernel::MinBlocksPerMultiprocessor)
    cutlass_gemm_nvfp4(const __grid_constant__ sm120::Kernel::Params params) {
#if defined(__CUDA_ARCH_FEAT_SM120_ALL) || defined(__CUDA_ARCH_FEAT_SM121_ALL)
  extern __shared__ char smem[];
  sm120::Kernel{}(params, smem);
#endif
}

namespace {

using bf16 = __nv_bfloat16;
constexpr long kTile = 128;
constexpr int kWarmups = 3;
constexpr float kScale = 2.0f;  // every scale factor of A and of B

// Random e2m1 codes, two per byte (element 2i in the low nibble).
__global__ void fill_e2m1(uint8_t* out, long bytes, uint64_t seed) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < bytes; i += long(gridDim.x) * blockDim.x)
    out[i] = uint8_t(gemm::mix(seed * 0x9e3779b97f4a7c15ULL + i));
}

__device__ inline float e2m1(uint8_t packed, long index) {
  const unsigned code = index & 1 ? packed >> 4 : packed & 15;
  const float magnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  return code & 8 ? -magnitude[code & 7] : magnitude[code & 7];
}

// D[i][j] = scale^2 * sum_l A[i][l] B[l][j]; A row-major M x K, B column-major K x N, both packed e2m1.
__global__ void reference_gemm(const uint8_t* a, const uint8_t* b, bf16* d, long m, long n, long k) {
  const long i = blockIdx.y * long(blockDim.y) + threadIdx.y, j = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (i >= m || j >= n) return;
  float acc = 0;
  for (long l = 0; l < k; ++l) acc += e2m1(a[(i * k + l) / 2], l) * e2m1(b[(j * k + l) / 2], l);
  d[i * n + j] = __float2bfloat16(acc * kScale * kScale);
}

struct Problem {
  gemm::Shape s;
  uint8_t *a = nullptr, *b = nullptr, *sfa = nullptr, *sfb = nullptr;
  bf16 *d = nullptr, *ref = nullptr;
  void* workspace = nullptr;
  sm120::Kernel::Params params{};
  dim3 grid, block;

  explicit Problem(gemm::Shape shape) : s(shape) {
    using K = sm120::Kernel;
    const int m = int(s.m), n = int(s.n), k = int(s.k);
    auto layout_sfa = sm120::Config::tile_atom_to_shape_SFA(cute::make_shape(m, n, k, 1));
    auto layout_sfb = sm120::Config::tile_atom_to_shape_SFB(cute::make_shape(m, n, k, 1));
    const long sfa_bytes = cute::size(cute::filter_zeros(layout_sfa));
    const long sfb_bytes = cute::size(cute::filter_zeros(layout_sfb));
    SMD_CHECK(cudaMalloc(&a, s.m * s.k / 2));
    SMD_CHECK(cudaMalloc(&b, s.n * s.k / 2));
    SMD_CHECK(cudaMalloc(&sfa, sfa_bytes));
    SMD_CHECK(cudaMalloc(&sfb, sfb_bytes));
    SMD_CHECK(cudaMalloc(&d, s.m * s.n * sizeof(bf16)));
    SMD_CHECK(cudaMalloc(&ref, s.m * s.n * sizeof(bf16)));
    fill_e2m1<<<1024, 256>>>(a, s.m * s.k / 2, 1);
    fill_e2m1<<<1024, 256>>>(b, s.n * s.k / 2, 2);
    SMD_CHECK(cudaGetLastError());
    const cutlass::float_ue4m3_t scale(kScale);
    SMD_CHECK(cudaMemset(sfa, scale.storage, sfa_bytes));
    SMD_CHECK(cudaMemset(sfb, scale.storage, sfb_bytes));
    using DataAB = typename sm120::ElementAB::DataType;
    using SF = typename sm120::ElementAB::ScaleFactorType;
    int dev = 0;
    SMD_CHECK(cudaGetDevice(&dev));
    K::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                      {m, n, k, 1},
                      {reinterpret_cast<DataAB*>(a), cutlass::make_cute_packed_stride(K::StrideA{}, {m, k, 1}),
                       reinterpret_cast<DataAB*>(b), cutlass::make_cute_packed_stride(K::StrideB{}, {n, k, 1}),
                       reinterpret_cast<SF*>(sfa), layout_sfa, reinterpret_cast<SF*>(sfb), layout_sfb},
                      {{1.0f, 0.0f},
                       nullptr,
                       cutlass::make_cute_packed_stride(K::StrideC{}, {m, n, 1}),
                       reinterpret_cast<sm120::ElementD*>(d),
                       cutlass::make_cute_packed_stride(K::StrideD{}, {m, n, 1})},
                      {dev, cutlass::KernelHardwareInfo::query_device_multiprocessor_count(dev)}};
    if (!K::can_implement(args)) smd::fail("CUTLASS cannot run this shape");
    SMD_CHECK(cudaMalloc(&workspace, std::max<size_t>(K::get_workspace_size(args), 1)));
    if (K::initialize_workspace(args, workspace) != cutlass::Status::kSuccess) smd::fail("CUTLASS workspace");
    params = K::to_underlying_arguments(args, workspace);
    grid = K::get_grid_shape(params), block = K::get_block_shape();
    SMD_CHECK(cudaFuncSetAttribute(cutlass_gemm_nvfp4, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   K::SharedStorageSize));
  }
  ~Problem() {
    for (void* p : {(void*)a, (void*)b, (void*)sfa, (void*)sfb, (void*)d, (void*)ref, workspace}) cudaFree(p);
  }

  void cutlass() const {
    cutlass_gemm_nvfp4<<<grid, block, sm120::Kernel::SharedStorageSize>>>(params);
    SMD_CHECK(cudaGetLastError());
  }
  void reference() const {
    reference_gemm<<<dim3(unsigned(s.n / 16), unsigned(s.m / 16)), dim3(16, 16)>>>(a, b, ref, s.m, s.n, s.k);
    SMD_CHECK(cudaGetLastError());
  }
};

std::vector<smd::KernelInfo> list_nvfp4() { return {{{}, "cutlass", 0, 0, "cutlass_gemm_nvfp4"}}; }

// One shape: warm-up launches, the output against the exact reference, then `repeats` timed launches.
void run_nvfp4(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const gemm::Shape s = gemm::shape(point, kTile);
  Problem p(s);
  for (int i = 0; i < kWarmups; ++i) p.cutlass();
  p.reference();
  SMD_CHECK(cudaDeviceSynchronize());
  const double err = gemm::max_rel_err(p.d, p.ref, s.m * s.n);
  if (err > 0.02) smd::fail(id + ": CUTLASS output differs from the reference: max rel err " + std::to_string(err));
  std::vector<double> ms, mhz, tflops;
  for (int r = 0; r < repeats; ++r) {
    {
      smd::NvtxRange range(smd::range_name(id, point, "cutlass"));
      ms.push_back(smd::time_ms([&] { p.cutlass(); }));
    }
    mhz.push_back(gemm::clock_now().mhz);
    tflops.push_back(gemm::tflops(s.m, s.n, s.k, ms.back()));
  }
  smd::Record rec{id, point, "tflops", "TFLOPS", tflops, 0, 1, smd::median(mhz), -1, "cutlass", {}};
  rec.cycles = smd::median(ms) * 1e3 * rec.clock_mhz;
  smd::emit(rec);
  rec.metric = "max_rel_err", rec.unit = "fraction", rec.samples = {err};
  smd::emit(rec);
}

}  // namespace

int main(int argc, char** argv) { return smd::family_main(argc, argv, {{"gemm_nvfp4", list_nvfp4, run_nvfp4}}); }
