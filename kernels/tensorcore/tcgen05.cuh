// tcgen05 (sm_100a): the descriptors tcgen05.mma reads, as constexpr host+device encoders
// (tests/test_tcgen05.py checks them against values derived by hand from the PTX ISA tables).
#pragma once
#include <cstdint>

namespace tcg {

// Instruction descriptor of .kind::f16/tf32/f8f6f4/i8, PTX ISA 9.1 9.7.16.4.2 Table 42: dtype in bits 4-5, atype 7-9,
// btype 10-12, N >> 3 in 17-22, M >> 4 in 24-28; dense, no negate, A and B K-major (not transposed).
__host__ __device__ constexpr uint32_t idesc(uint32_t dtype, uint32_t atype, uint32_t btype, int m, int n) {
  return dtype << 4 | atype << 7 | btype << 10 | uint32_t(n >> 3) << 17 | uint32_t(m >> 4) << 24;
}

// Instruction descriptor of .kind::mxf8f6f4 (Table 43) and ::mxf4/mxf4nvf4 (Table 44): atype 7-9, btype 10-12,
// N >> 3 in 17-22, scale type in bit 23 (UE8M0 1, UE4M3 0), M >> 7 in 27-28; scale factor IDs (4-5, 29-30) 0.
__host__ __device__ constexpr uint32_t idesc_scaled(uint32_t atype, uint32_t btype, uint32_t ue8m0, int m, int n) {
  return atype << 7 | btype << 10 | uint32_t(n >> 3) << 17 | ue8m0 << 23 | uint32_t(m >> 7) << 27;
}

// Field values of Table 42 (dtype; atype and btype of ::f16, ::tf32, ::f8f6f4, ::i8) and Table 44 (E2M1 of ::mxf4nvf4).
enum : uint32_t { kF32 = 1, kS32 = 2, kF16 = 0, kTf32 = 2, kE4m3 = 0, kS8 = 1, kNvf4E2m1 = 1 };

// Shared memory descriptor, PTX ISA 9.1 9.7.16.4.1 Table 40: start, LBO and SBO, each (x & 0x3FFFF) >> 4, in bits
// 0-13, 16-29, 32-45; the fixed 0b001 in 46-48; base offset, LBO mode and swizzling (61-63: none) 0.
__host__ __device__ constexpr uint64_t smem_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return (addr & 0x3FFFF) >> 4 | uint64_t((lbo & 0x3FFFF) >> 4) << 16 | uint64_t((sbo & 0x3FFFF) >> 4) << 32 |
         uint64_t(1) << 46;
}

// Operand tiles: K-major rows of 32 B (K = 16 f16, 8 tf32, 32 8-bit, 64 4-bit) in 8x16 B core matrices, 128 B apart
// along K (LBO) and 256 B apart per 8 rows (SBO): 9.7.16.3.3's no-swizzle K-major ((8,m),(T,2)):((1T,SBO),(1,LBO)).
constexpr uint32_t kLbo = 128, kSbo = 256;
__host__ __device__ constexpr uint32_t tile_bytes(int rows) { return uint32_t(rows) / 8 * kSbo; }

// Tensor memory address of `lane` and `column` (9.7.16.1.1 "Tensor Memory Addressing": lane in bits 31-16).
__host__ __device__ constexpr uint32_t tmem_at(uint32_t base, uint32_t lane, uint32_t column) {
  return base + (lane << 16) + column;
}

}  // namespace tcg
