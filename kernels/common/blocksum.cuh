// The data check of a streaming kernel: one atomic per CTA adds the word sum of what the CTA read to a global
// counter, whose closed form the host knows.
#pragma once
#include <cstdint>

namespace smd {

// Every thread of the CTA passes its own sum `acc`; thread 0 adds the CTA's total to *out.
__device__ __forceinline__ void add_block_sum(uint32_t acc, unsigned* out) {
  __shared__ unsigned block_sum;
  if (threadIdx.x == 0) block_sum = 0;
  __syncthreads();
  atomicAdd(&block_sum, acc);
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(out, block_sum);
}

}  // namespace smd
