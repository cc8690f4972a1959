// The n >= 2^31 checks without a host copy: a shuffled 0 .. n-1 (plus an offset) made on the
// device, and the count of keys that are not at their sorted place (keys[i] != offset + i)
// afterwards.
#pragma once

#include <cstdint>

#include <thrust/count.h>
#include <thrust/execution_policy.h>
#include <thrust/iterator/counting_iterator.h>

#include "common/shuffle.hpp"

namespace gpusort::testing {

// keys[i] = offset + a shuffle of 0 .. n-1 (offset: bits every key shares).
template <class K>
__global__ void fill_shuffled(K* keys, std::uint64_t n, K offset = 0) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    keys[i] = static_cast<K>(offset + static_cast<K>(gpusort::tools::shuffle_index(i, n)));
}

template <class K>
struct misplaced_key {
  const K* keys;
  K offset;
  __device__ bool operator()(std::uint64_t i) const {
    return keys[i] != static_cast<K>(offset + static_cast<K>(i));
  }
};

template <class K>
std::uint64_t count_misplaced(const K* keys, std::uint64_t n, K offset = 0) {
  return thrust::count_if(thrust::device, thrust::counting_iterator<std::uint64_t>(0),
                          thrust::counting_iterator<std::uint64_t>(n),
                          misplaced_key<K>{keys, offset});
}

}  // namespace gpusort::testing
