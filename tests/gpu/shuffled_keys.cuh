// The check of the n >= 2^31 tests: a shuffled 0 .. n-1 built on the device, and how many
// keys are not at their own index once sorted (counted on the device: no host copy of n keys).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "common/shuffle.hpp"

namespace gpusort::testing {

static __global__ void fill_shuffled(std::uint32_t* keys, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    keys[i] = static_cast<std::uint32_t>(tools::shuffle_index(i, n));
}

static __global__ void count_misplaced_kernel(const std::uint32_t* keys, std::uint64_t n,
                                              unsigned long long* misplaced) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    if (keys[i] != static_cast<std::uint32_t>(i)) atomicAdd(misplaced, 1ull);
}

// Keys not equal to their index; ~0 if the count itself failed.
inline std::uint64_t count_misplaced(const std::uint32_t* keys, std::uint64_t n) {
  unsigned long long* d = nullptr;
  unsigned long long count = ~0ull;
  if (cudaMalloc(&d, sizeof(count)) != cudaSuccess) return count;
  if (cudaMemset(d, 0, sizeof(count)) == cudaSuccess) {
    count_misplaced_kernel<<<4096, 256>>>(keys, n, d);
    if (cudaMemcpy(&count, d, sizeof(count), cudaMemcpyDeviceToHost) != cudaSuccess) count = ~0ull;
  }
  cudaFree(d);
  return count;
}

}  // namespace gpusort::testing
