// SIMD/video instruction table: dp4a, dp2a, vabsdiff4, vadd4 (emulated), and the sm_90 DPX forms
// (viaddmax, vimax3), which other archs emulate.
#include "ops.cuh"

struct Dp4a : U32Op {
  __device__ static T apply(T x, T a, T b) {
    asm volatile("dp4a.u32.u32 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

struct Dp2a : U32Op {
  __device__ static T apply(T x, T a, T b) {
    asm volatile("dp2a.lo.u32.u32 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

struct Vabsdiff4 : U32Op {
  __device__ static T apply(T x, T a, T b) {
    asm volatile("vabsdiff4.u32.u32.u32.add %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

struct Vadd4 : U32Op {
  __device__ static T apply(T x, T a, T b) {
    asm volatile("vadd4.u32.u32.u32.sat %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b));
    return x;
  }
};

// max(x + a, b) in one DPX instruction on sm_90.
struct Viaddmax : U32Op {
  __device__ static T apply(T x, T a, T b) { return unsigned(__viaddmax_s32(int(x), int(a), int(b))); }
};

struct Vimax3 : U32Op {
  __device__ static T apply(T x, T a, T b) { return unsigned(__vimax3_s32(int(x), int(a), int(b))); }
};

int main(int argc, char** argv) {
  return smd::chain_main(argc, argv,
                         {SMD_CHAIN_CASE("dp4a", Dp4a), SMD_CHAIN_CASE("dp2a", Dp2a),
                          SMD_CHAIN_CASE("vabsdiff4", Vabsdiff4), SMD_CHAIN_CASE("vadd4", Vadd4), SMD_CHAIN_CASE("viaddmax", Viaddmax),
                          SMD_CHAIN_CASE("vimax3", Vimax3)});
}
