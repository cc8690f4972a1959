// CUB's device merge sort by a comparator, in the core layer's manner (temp == nullptr only
// writes the workspace's bytes): the cub_merge baseline, and automatic's pick for user
// comparators where it is the faster sort (sort.cuh, sample_sort_policy::automatic_merge_max).
#pragma once

#include <cstdint>
#include <type_traits>

#include <cub/device/device_merge_sort.cuh>

#include "gpusort/detail/core/types.hpp"
#include "gpusort/key_traits.hpp"

namespace gpusort::detail::device {

template <class K, class V, class Compare>
cudaError_t merge_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values, std::uint64_t n,
                       Compare comp, bool descending, cudaStream_t stream) {
  const auto run = [&](auto order) {
    if constexpr (std::is_same_v<V, no_value>)
      return cub::DeviceMergeSort::SortKeys(temp, temp_bytes, keys, n, order, stream);
    else
      return cub::DeviceMergeSort::SortPairs(temp, temp_bytes, keys, values, n, order, stream);
  };
  return descending ? run(reversed<Compare>{comp}) : run(comp);
}

}  // namespace gpusort::detail::device
