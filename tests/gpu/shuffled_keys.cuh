// The n >= 2^31 checks without a host copy: a shuffled 0 .. n-1 made on the device, and the
// count of keys that are not at their sorted place (keys[i] != i) afterwards.
#pragma once

#include <cstdint>

#include <thrust/count.h>
#include <thrust/execution_policy.h>
#include <thrust/iterator/counting_iterator.h>

#include "common/shuffle.hpp"

namespace gpusort::testing {

__global__ void fill_shuffled(std::uint32_t* keys, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    keys[i] = static_cast<std::uint32_t>(gpusort::tools::shuffle_index(i, n));
}

struct misplaced_key {
  const std::uint32_t* keys;
  __device__ bool operator()(std::uint64_t i) const { return keys[i] != std::uint32_t(i); }
};

inline std::uint64_t count_misplaced(const std::uint32_t* keys, std::uint64_t n) {
  return thrust::count_if(thrust::device, thrust::counting_iterator<std::uint64_t>(0),
                          thrust::counting_iterator<std::uint64_t>(n), misplaced_key{keys});
}

}  // namespace gpusort::testing
