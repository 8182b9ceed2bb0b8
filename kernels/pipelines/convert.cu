// Conversion instruction table: F2I, I2F, F2F, FRND, f16/bf16/FP8 pack and unpack (F2FP), cvt.pack (I2IP)
// and the sm_120a MX narrow formats. Each op converts and reinterprets the result's bits as the next
// input, so a chain is one conversion per step and no inverse pair exists for ptxas to fold.
#include "ops.cuh"

struct F2i : F32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("{.reg .s32 t; cvt.rni.s32.f32 t, %0; mov.b32 %0, t;}" : "+f"(x));
    return x;
  }
};

struct I2f : U32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("{.reg .f32 t; cvt.rn.f32.u32 t, %0; mov.b32 %0, t;}" : "+r"(x));
    return x;
  }
};

// f32 (the low word of x) -> f64.
struct F2f64 : F64Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("{.reg .b32 lo, hi; .reg .f32 f; mov.b64 {lo, hi}, %0; mov.b32 f, lo; cvt.f64.f32 %0, f;}" : "+d"(x));
    return x;
  }
};

// x = rint(-x): the negation keeps rint(rint(x)) from folding.
struct Frnd : F32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("{.reg .f32 t; neg.f32 t, %0; cvt.rni.f32.f32 %0, t;}" : "+f"(x));
    return x;
  }
};

// f16 (the low half of x) -> f32.
struct H2f : U32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("{.reg .b16 lo, hi; .reg .f32 f; mov.b32 {lo, hi}, %0; cvt.f32.f16 f, lo; mov.b32 %0, f;}"
                 : "+r"(x));
    return x;
  }
};

// Two f32 (x, a) -> f16x2.
struct F16x2Pack : F32Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("{.reg .b32 t; cvt.rn.f16x2.f32 t, %0, %1; mov.b32 %0, t;}" : "+f"(x) : "f"(a));
    return x;
  }
};

// Two f32 (x, a) -> e4m3x2 / e5m2x2 in the low 16 bits; the zero extension is one LOP3 the table subtracts.
// FP8 conversions came with sm_89: before it the body is empty (the cases require fp8).
struct E4m3Pack : F32Op {
  __device__ static T apply(T x, T a, T) {
#if SMD_HAS(fp8)
    asm volatile("{.reg .b16 h; .reg .b32 t; cvt.rn.satfinite.e4m3x2.f32 h, %0, %1; cvt.u32.u16 t, h; mov.b32 %0, t;}"
                 : "+f"(x) : "f"(a));  // fmt: skip
#endif
    return x;
  }
};

struct E5m2Pack : F32Op {
  __device__ static T apply(T x, T a, T) {
#if SMD_HAS(fp8)
    asm volatile("{.reg .b16 h; .reg .b32 t; cvt.rn.satfinite.e5m2x2.f32 h, %0, %1; cvt.u32.u16 t, h; mov.b32 %0, t;}"
                 : "+f"(x) : "f"(a));  // fmt: skip
#endif
    return x;
  }
};

// e4m3x2 (the low 16 bits of x) -> f16x2.
struct E4m3Unpack : U32Op {
  __device__ static T apply(T x, T, T) {
#if SMD_HAS(fp8)
    asm volatile("{.reg .b16 lo, hi; mov.b32 {lo, hi}, %0; cvt.rn.f16x2.e4m3x2 %0, lo;}" : "+r"(x));
#endif
    return x;
  }
};

// Two s32 (x, a) saturated into s16x2.
struct CvtPack : U32Op {
  __device__ static T apply(T x, T a, T) {
    asm volatile("cvt.pack.sat.s16.s32 %0, %0, %1;" : "+r"(x) : "r"(a));
    return x;
  }
};

// Blackwell's MX narrow conversions (cvt to/from e2m1x2, e2m3x2, e3m2x2, ue8m0x2); on other archs the body is
// empty (the case requires cvt_narrow).
struct E2m1Pack : F32Op {
  __device__ static T apply(T x, T a, T) {
#if SMD_HAS(cvt_narrow)
    asm volatile("{.reg .b8 q; .reg .b32 t; cvt.rn.satfinite.e2m1x2.f32 q, %0, %1; cvt.u32.u8 t, q; mov.b32 %0, t;}"
                 : "+f"(x) : "f"(a));  // fmt: skip
#endif
    return x;
  }
};

struct E2m1Unpack : U32Op {
  __device__ static T apply(T x, T, T) {
#if SMD_HAS(cvt_narrow)
    asm volatile("{.reg .b8 q; cvt.u8.u32 q, %0; cvt.rn.f16x2.e2m1x2 %0, q;}" : "+r"(x));
#endif
    return x;
  }
};

struct Ue8m0Pack : F32Op {
  __device__ static T apply(T x, T a, T) {
#if SMD_HAS(cvt_narrow)
    asm volatile("{.reg .b16 h; .reg .b32 t; cvt.rz.satfinite.ue8m0x2.f32 h, %0, %1; cvt.u32.u16 t, h; mov.b32 %0, t;}"
                 : "+f"(x) : "f"(a));  // fmt: skip
#endif
    return x;
  }
};

struct Ue8m0Unpack : U32Op {
  __device__ static T apply(T x, T, T) {
#if SMD_HAS(cvt_narrow)
    asm volatile("{.reg .b16 lo, hi; mov.b32 {lo, hi}, %0; cvt.rn.bf16x2.ue8m0x2 %0, lo;}" : "+r"(x));
#endif
    return x;
  }
};

int main(int argc, char** argv) {
  return smd::chain_main(
      argc, argv,
      {SMD_CHAIN_CASE("f2i", F2i), SMD_CHAIN_CASE("i2f", I2f), SMD_CHAIN_CASE("f2f_f64", F2f64),
       SMD_CHAIN_CASE("frnd", Frnd), SMD_CHAIN_CASE("h2f", H2f), SMD_CHAIN_CASE("f16x2_pack", F16x2Pack),
       SMD_CHAIN_CASE("e4m3_pack", E4m3Pack), SMD_CHAIN_CASE("e5m2_pack", E5m2Pack),
       SMD_CHAIN_CASE("e4m3_unpack", E4m3Unpack), SMD_CHAIN_CASE("cvt_pack", CvtPack),
       SMD_CHAIN_CASE("e2m1_pack", E2m1Pack), SMD_CHAIN_CASE("e2m1_unpack", E2m1Unpack),
       SMD_CHAIN_CASE("ue8m0_pack", Ue8m0Pack), SMD_CHAIN_CASE("ue8m0_unpack", Ue8m0Unpack)});
}
