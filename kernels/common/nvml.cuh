// What the families that open NVML at run time (dlopen of the driver's libnvidia-ml.so.1) share.
#pragma once
#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "harness.cuh"

namespace smd {

// CUDA device `dev`'s UUID as NVML spells it, GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx: NVML ignores
// CUDA_VISIBLE_DEVICES, so a CUDA device is matched to its NVML handle by UUID.
inline std::string nvml_uuid(int dev) {
  cudaDeviceProp prop{};
  SMD_CHECK(cudaGetDeviceProperties(&prop, dev));
  const auto* u = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);
  char uuid[64];
  std::snprintf(uuid, sizeof uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  return uuid;
}

}  // namespace smd
