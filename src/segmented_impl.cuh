// The core layer's dispatch for batched and segmented sorts. src/segmented_<key>.cu
// instantiates it for one key type and every value size.
#pragma once

#include "gpusort/detail/cpu/segmented.hpp"
#include "gpusort/detail/device/baselines.hpp"
#include "gpusort/detail/device/segmented.cuh"
#include "gpusort/segmented.hpp"

namespace gpusort::detail {

template <class K, class V>
cudaError_t sort_segments(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                          std::uint64_t n, const segment_list& segs, const options& opt) {
  const cudaError_t e = validate_segment_arrays(keys, values, n, segs);
  if (e != cudaSuccess) return e;
  const bool descending = opt.direction == order::descending;
  switch (opt.algo) {
    case algorithm::automatic:
    case algorithm::bitonic:
      return device::segmented_sort(temp, temp_bytes, keys, values, n, segs, less<K>{},
                                    descending, opt.stream);
    case algorithm::cub_radix:
    case algorithm::cub_merge:
      if constexpr (device::baseline_built<K, V>) {
        if (opt.algo == algorithm::cub_radix)
          return device::cub_segmented_radix_sort(temp, temp_bytes, keys, values, n, segs,
                                                  descending, opt.stream);
        return device::cub_segmented_sort(temp, temp_bytes, keys, values, n, segs, descending,
                                          opt.stream);
      }
      return cudaErrorNotSupported;
    case algorithm::thrust:
      return cudaErrorNotSupported;
  }
  return cudaErrorInvalidValue;
}

template <class K, class V>
void cpu_sort_segments(K* keys, V* values, std::uint64_t n, const segment_list& segs,
                       const options& opt) {
  cpu::segmented_sort(keys, values, n, segs, less<K>{}, opt.direction == order::descending);
}

}  // namespace gpusort::detail

#define GPUSORT_INSTANTIATE_SEGMENTS(K, P)                                                   \
  template cudaError_t gpusort::detail::sort_segments<K, P>(                                 \
      void*, std::size_t&, K*, P*, std::uint64_t, const segment_list&, const options&);      \
  template void gpusort::detail::cpu_sort_segments<K, P>(K*, P*, std::uint64_t,              \
                                                         const segment_list&, const options&);

#define GPUSORT_INSTANTIATE_SEGMENTS_FOR_KEY(K)                       \
  GPUSORT_INSTANTIATE_SEGMENTS(K, gpusort::detail::no_value)          \
  GPUSORT_INSTANTIATE_SEGMENTS(K, gpusort::detail::payload<4>)        \
  GPUSORT_INSTANTIATE_SEGMENTS(K, gpusort::detail::payload<8>)        \
  GPUSORT_INSTANTIATE_SEGMENTS(K, gpusort::detail::payload<16>)
