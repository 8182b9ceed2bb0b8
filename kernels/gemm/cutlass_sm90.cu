// Family cutlass_sm90: the bf16 GEMM ceiling of an sm_90a GPU. CUTLASS's warp-specialized TMA + wgmma kernel
// (CollectiveBuilder, KernelTmaWarpSpecializedCooperative, 128x256x64 tile, 2x1x1 cluster, bf16 in, fp32
// accumulate, bf16 out) and cuBLAS (cublasGemmEx, bf16 in, CUBLAS_COMPUTE_32F, bf16 out) on the same operands,
// launches alternating, each timed with events and alone in its NVTX range; CUTLASS's output is checked against
// cuBLAS's. A row-major, B column-major (both K-major: the "TN" GEMM), D column-major, alpha 1, beta 0, no C.
// cuBLAS is loaded at run time (dlopen: the loader path, SMD_CUBLAS, the CUDA toolkit, pip wheels), so the family
// builds where only nvcc is installed.
#include <dlfcn.h>
#include <glob.h>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"
#include "gemm.cuh"

namespace sm90 {
using namespace cute;
using Element = cutlass::bfloat16_t;
using TileShape = Shape<_128, _256, _64>;
using ClusterShape = Shape<_2, _1, _1>;
constexpr int kAlign = 8;  // 16-byte accesses of bf16
using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, cutlass::layout::ColumnMajor, kAlign,
    Element, cutlass::layout::ColumnMajor, kAlign, cutlass::epilogue::TmaWarpSpecializedCooperative>::CollectiveOp;
using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, cutlass::layout::RowMajor, kAlign, Element,
    cutlass::layout::ColumnMajor, kAlign, float, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
    cutlass::gemm::KernelTmaWarpSpecializedCooperative>::CollectiveOp;
using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue>;
// wgmma instructions per warp per tile and 64-deep K step: each of the 2 consumer warpgroups issues K/16 = 4
// m64n256k16 wgmma per step, and ncu counts an instruction once per warp (4 per warpgroup).
constexpr double kWgmmaPerMnk = 2.0 * 4 * 4 / (128.0 * 256 * 64);
}  // namespace sm90

// CUTLASS's own kernel body (what cutlass::device_kernel<Kernel> runs) under a plain name the SASS stage can find;
// on any arch but sm_90a it is empty, so the sm_120a pass never instantiates the wgmma mainloop.
__global__ void __launch_bounds__(sm90::Kernel::MaxThreadsPerBlock, sm90::Kernel::MinBlocksPerMultiprocessor)
    cutlass_gemm_bf16(const __grid_constant__ sm90::Kernel::Params params) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ char smem[];
  sm90::Kernel{}(params, smem);
#endif
}

namespace {

using bf16 = __nv_bfloat16;
constexpr long kTile = 256;  // shapes must be multiples of the CTA tile (128 x 256) and of K step (64)
constexpr int kWarmups = 3;

// The cuBLAS entry points this family calls, resolved from the shared library at run time (ABI of cublas_api.h).
struct Cublas {
  enum : int { kOpN = 0, kOpT = 1, kBf16 = 14, kCompute32F = 68, kGemmDefault = -1 };
  void* handle = nullptr;
  int (*set_workspace)(void*, void*, size_t) = nullptr;
  int (*gemm_ex)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                 const void*, void*, int, int, int, int) = nullptr;

  Cublas() {
    const char* env = std::getenv("SMD_CUBLAS");
    const char* names[] = {env, "libcublas.so.13", "libcublas.so.12", "libcublas.so",
                           "/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.12"};
    void* lib = nullptr;
    for (const char* name : names)
      if (name && (lib = dlopen(name, RTLD_NOW | RTLD_GLOBAL))) break;
    if (!lib)
      for (const std::string& path : pip_copies())
        if ((lib = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL))) break;
    if (!lib)
      smd::fail("cuBLAS not found (libcublas.so.13/.12): put its folder on LD_LIBRARY_PATH or set SMD_CUBLAS to it");
    auto sym = [&](const char* name) {
      void* f = dlsym(lib, name);
      if (!f) smd::fail(std::string("cuBLAS lacks ") + name);
      return f;
    };
    auto create = reinterpret_cast<int (*)(void**)>(sym("cublasCreate_v2"));
    set_workspace = reinterpret_cast<decltype(set_workspace)>(sym("cublasSetWorkspace_v2"));
    gemm_ex = reinterpret_cast<decltype(gemm_ex)>(sym("cublasGemmEx"));
    check(create(&handle), "cublasCreate");
  }
  // libcublas of the pip wheels (nvidia-cublas, nvidia-cublas-cu12) under the usual Python prefixes, newest first.
  static std::vector<std::string> pip_copies() {
    std::vector<std::string> out;
    for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX", "HOME"}) {
      const char* root = std::getenv(var);
      if (!root) continue;
      const std::string prefix = std::string(root) + (std::string(var) == "HOME" ? "/.local" : "");
      glob_into(prefix + "/lib/python3*/site-packages/nvidia/*/lib/libcublas.so.1[0-9]", out);
    }
    for (const char* prefix : {"/usr/local", "/usr", "/opt/conda"})
      glob_into(std::string(prefix) + "/lib/python3*/*-packages/nvidia/*/lib/libcublas.so.1[0-9]", out);
    std::sort(out.rbegin(), out.rend());
    return out;
  }
  static void glob_into(const std::string& pattern, std::vector<std::string>& out) {
    glob_t found{};
    if (glob(pattern.c_str(), 0, nullptr, &found) == 0)
      out.insert(out.end(), found.gl_pathv, found.gl_pathv + found.gl_pathc);
    globfree(&found);
  }
  static void check(int status, const char* what) {
    if (status != 0) smd::fail(std::string(what) + " failed: cublasStatus_t " + std::to_string(status));
  }
};

// What make_kernel_hardware_info<Kernel> finds, asked of our kernel: that helper's occupancy query names
// cutlass::device_kernel<Kernel>, which would compile the whole GEMM a second time, for every arch.
cutlass::KernelHardwareInfo hardware(int dev) {
  using HW = cutlass::KernelHardwareInfo;
  const dim3 cluster(cute::size<0>(sm90::ClusterShape{}), 1, 1);
  return {dev, HW::query_device_multiprocessor_count(dev),
          HW::query_device_max_active_clusters(cluster, sm90::Kernel::MaxThreadsPerBlock, (void*)cutlass_gemm_bf16)};
}

// Operands and outputs of one shape: A (M x K, row-major), B (K x N, column-major), D of each library.
struct Problem {
  gemm::Shape s;
  bf16 *a = nullptr, *b = nullptr, *d_cutlass = nullptr, *d_cublas = nullptr;
  void* workspace = nullptr;
  sm90::Kernel::Params params{};
  dim3 grid, block;

  explicit Problem(gemm::Shape shape) : s(shape) {
    const long mk = s.m * s.k, kn = s.k * s.n, mn = s.m * s.n;
    SMD_CHECK(cudaMalloc(&a, mk * sizeof(bf16)));
    SMD_CHECK(cudaMalloc(&b, kn * sizeof(bf16)));
    SMD_CHECK(cudaMalloc(&d_cutlass, mn * sizeof(bf16)));
    SMD_CHECK(cudaMalloc(&d_cublas, mn * sizeof(bf16)));
    gemm::fill_bf16<<<1024, 256>>>(a, mk, 1);
    gemm::fill_bf16<<<1024, 256>>>(b, kn, 2);
    SMD_CHECK(cudaGetLastError());
    int dev = 0;
    SMD_CHECK(cudaGetDevice(&dev));
    using K = sm90::Kernel;
    const int m = int(s.m), n = int(s.n), k = int(s.k);
    using T = cutlass::bfloat16_t;
    K::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                      {m, n, k, 1},
                      {reinterpret_cast<T*>(a), cutlass::make_cute_packed_stride(K::StrideA{}, {m, k, 1}),
                       reinterpret_cast<T*>(b), cutlass::make_cute_packed_stride(K::StrideB{}, {n, k, 1})},
                      {{1.0f, 0.0f},
                       nullptr,
                       cutlass::make_cute_packed_stride(K::StrideC{}, {m, n, 1}),
                       reinterpret_cast<T*>(d_cutlass),
                       cutlass::make_cute_packed_stride(K::StrideD{}, {m, n, 1})},
                      hardware(dev)};
    if (!K::can_implement(args)) smd::fail("CUTLASS cannot run this shape");
    SMD_CHECK(cudaMalloc(&workspace, std::max<size_t>(K::get_workspace_size(args), 1)));
    if (K::initialize_workspace(args, workspace) != cutlass::Status::kSuccess) smd::fail("CUTLASS workspace");
    params = K::to_underlying_arguments(args, workspace);
    grid = K::get_grid_shape(params), block = K::get_block_shape();
    SMD_CHECK(cudaFuncSetAttribute(cutlass_gemm_bf16, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   K::SharedStorageSize));
  }
  ~Problem() {
    for (void* p : {(void*)a, (void*)b, (void*)d_cutlass, (void*)d_cublas, workspace}) cudaFree(p);
  }

  void cutlass() const {
    cudaLaunchAttribute cluster{};
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim = {unsigned(cute::size<0>(sm90::ClusterShape{})), 1, 1};
    cudaLaunchConfig_t cfg{grid, block, size_t(sm90::Kernel::SharedStorageSize), 0, &cluster, 1};
    SMD_CHECK(cudaLaunchKernelEx(&cfg, cutlass_gemm_bf16, params));
  }
  void cublas(const Cublas& lib) const {
    const float one = 1, zero = 0;
    Cublas::check(lib.gemm_ex(lib.handle, Cublas::kOpT, Cublas::kOpN, int(s.m), int(s.n), int(s.k), &one, a,
                              Cublas::kBf16, int(s.k), b, Cublas::kBf16, int(s.k), &zero, d_cublas, Cublas::kBf16,
                              int(s.m), Cublas::kCompute32F, Cublas::kGemmDefault),
                  "cublasGemmEx");
  }
};

const Cublas& cublas_library() {
  static Cublas lib;
  static void* workspace = nullptr;
  if (!workspace) {  // the 32 MiB workspace cuBLAS recommends on Hopper
    SMD_CHECK(cudaMalloc(&workspace, 32 << 20));
    Cublas::check(lib.set_workspace(lib.handle, workspace, 32 << 20), "cublasSetWorkspace");
  }
  return lib;
}

std::vector<smd::KernelInfo> list_bf16() { return {{{}, "cutlass", 0, 0, "cutlass_gemm_bf16"}}; }

// One shape: warm-up launches of both, CUTLASS's output against cuBLAS's, then `repeats` alternating timed pairs.
void run_bf16(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const gemm::Shape s = gemm::shape(point, kTile);
  const Cublas& lib = cublas_library();
  Problem p(s);
  for (int i = 0; i < kWarmups; ++i) p.cutlass(), p.cublas(lib);
  SMD_CHECK(cudaDeviceSynchronize());
  const double err = gemm::max_rel_err(p.d_cutlass, p.d_cublas, s.m * s.n);
  if (err > 0.02) smd::fail(id + ": CUTLASS and cuBLAS outputs differ: max rel err " + std::to_string(err));
  std::vector<double> t_cutlass, t_cublas, mhz_cutlass, mhz_cublas;
  for (int r = 0; r < repeats; ++r) {
    {
      smd::NvtxRange range(smd::range_name(id, point, "cutlass"));
      t_cutlass.push_back(smd::time_ms([&] { p.cutlass(); }));
    }
    mhz_cutlass.push_back(gemm::clock_now().mhz);
    {
      smd::NvtxRange range(smd::range_name(id, point, "cublas"));
      t_cublas.push_back(smd::time_ms([&] { p.cublas(lib); }));
    }
    mhz_cublas.push_back(gemm::clock_now().mhz);
  }
  // 989.4 TFLOPS: NVIDIA H200 SXM datasheet, dense BF16 Tensor Core (the 1979 TFLOPS it prints is with sparsity).
  constexpr double kPeakTflops = 989.4;
  // Each record: its samples, the median launch time in SM cycles at the median clock read after it.
  auto emit = [&](const char* metric, const char* unit, const std::vector<double>& samples,
                  const std::vector<double>& ms, const std::vector<double>& mhz, const std::string& variant) {
    smd::Record rec{id, point, metric, unit, samples, 0, 1, smd::median(mhz), -1, variant, {}};
    rec.cycles = smd::median(ms) * 1e3 * rec.clock_mhz;
    if (std::string(metric) == "tflops_cutlass")
      rec.expect = {{"sm__inst_executed_pipe_tensor_op_gmma.sum", double(s.m) * s.n * s.k * sm90::kWgmmaPerMnk}};
    smd::emit(rec);
  };
  std::vector<double> tf_cutlass, tf_cublas, pct_cutlass, pct_cublas, ratio;
  for (int r = 0; r < repeats; ++r) {
    tf_cutlass.push_back(gemm::tflops(s.m, s.n, s.k, t_cutlass[r]));
    tf_cublas.push_back(gemm::tflops(s.m, s.n, s.k, t_cublas[r]));
    pct_cutlass.push_back(100 * tf_cutlass.back() / kPeakTflops);
    pct_cublas.push_back(100 * tf_cublas.back() / kPeakTflops);
    ratio.push_back(t_cublas[r] / t_cutlass[r]);  // per pair of neighbouring launches
  }
  emit("tflops_cutlass", "TFLOPS", tf_cutlass, t_cutlass, mhz_cutlass, "cutlass");
  emit("pct_of_peak_cutlass", "%", pct_cutlass, t_cutlass, mhz_cutlass, "cutlass");
  emit("tflops_cublas", "TFLOPS", tf_cublas, t_cublas, mhz_cublas, "cublas");
  emit("pct_of_peak_cublas", "%", pct_cublas, t_cublas, mhz_cublas, "cublas");
  emit("ratio_to_cublas", "x", ratio, t_cutlass, mhz_cutlass, "cutlass");
  emit("max_rel_err", "fraction", {err}, t_cutlass, mhz_cutlass, "cutlass");
}

}  // namespace

int main(int argc, char** argv) { return smd::family_main(argc, argv, {{"gemm_bf16", list_bf16, run_bf16}}); }
