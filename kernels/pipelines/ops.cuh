// Operand types of the instruction-table families (kernels/pipelines/*.cu): each Op of a family derives
// from one of these for its value type and seed, and defines only `apply`, one instruction of a chain.
#pragma once
#include "../common/chain.cuh"

// ILP distinct chain starts (start + i * step), then the operands a and b.
template <class T>
void fill_seed(T* in, T start, T step, T a, T b) {
  for (int i = 0; i < smd::kMaxIlp; ++i) in[i] = T(start + T(i) * step);
  in[smd::kMaxIlp] = a, in[smd::kMaxIlp + 1] = b;
}

struct F32Op {  // x ~ 1, a ~ 1, b small: fma/add/mul chains stay finite
  using T = float;
  static void seed(T* in) { fill_seed(in, 1.0f, 0.125f, 0.999f, 0.001f); }
};

struct F64Op {
  using T = double;
  static void seed(T* in) { fill_seed(in, 1.0, 0.125, 0.999, 0.001); }
};

struct U32Op {  // arbitrary bit patterns
  using T = unsigned;
  static void seed(T* in) { fill_seed(in, 1u, 17u, 0x9E3779B9u, 0x7F4A7C15u); }
};

struct U64Op {
  using T = unsigned long long;
  static void seed(T* in) { fill_seed<T>(in, 1, 0x100000001ull, 0x9E3779B97F4A7C15ull, 0x632BE59BD9B4E019ull); }
};

struct H2Op {  // two packed halves: x ~ (1, 1), a ~ (0.999, 0.999), b ~ (0.001, 0.001)
  using T = unsigned;
  static void seed(T* in) { fill_seed(in, 0x3C003C00u, 1u, 0x3BFE3BFEu, 0x14001400u); }
};

struct Bf2Op {  // two packed bfloat16: x ~ (1, 1), a ~ (0.996, 0.996), b ~ (0.001, 0.001)
  using T = unsigned;
  static void seed(T* in) { fill_seed(in, 0x3F803F80u, 1u, 0x3F7F3F7Fu, 0x3A833A83u); }
};

struct PositiveF32Op {  // x, a, b in (0.5, 0.6): for ops whose chains need a positive argument
  using T = float;
  static void seed(T* in) {
    for (int i = 0; i < smd::kMaxIlp + 2; ++i) in[i] = 0.5f + 0.01f * i;
  }
};
