// The core layer's dispatch for batched and segmented sorts. src/segmented_<key>.cu
// instantiates it for one key type and every value size.
#pragma once

#include "gpusort/detail/cpu/segmented.hpp"
#include "gpusort/detail/device/baselines.hpp"
#include "gpusort/detail/device/segmented.cuh"
#include "gpusort/segmented.hpp"

namespace gpusort::detail {

// `float_codes`: K is the unsigned integer of a float's width and keys holds float bits
// (key_codec): the float sorts run the unsigned one with the map fused into its loads and stores.
template <class K, class V>
cudaError_t sort_segments(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                          std::uint64_t n, const segment_list& segs, const options& opt,
                          bool float_codes) {
  const cudaError_t e = validate_segment_arrays(keys, values, n, segs);
  if (e != cudaSuccess) return e;
  const bool descending = opt.direction == order::descending;
  switch (opt.algo) {
    case algorithm::automatic:
    case algorithm::bitonic:
      if constexpr (std::is_floating_point_v<K>) {
        // Float keys as codes (detail/float_order.hpp), by the unsigned sort of
        // src/segmented_u32.cu / _u64.cu, mapping each key as it is loaded and stored: keys
        // outside the segments are never touched.
        using U = typename float_order<K>::U;
        return sort_segments<U, V>(temp, temp_bytes, reinterpret_cast<U*>(keys), values, n,
                                   segs, opt, true);
      } else {
        return device::segmented_sort(temp, temp_bytes, keys, values, n, segs, less<K>{},
                                      descending, opt.stream, key_codec<K>{float_codes});
      }
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
  if constexpr (std::is_floating_point_v<K>) {
    // As on the device, so that both backends give the same order.
    using U = typename float_order<K>::U;
    float_keys_to_codes(keys, n);
    try {
      cpu_sort_segments<U, V>(reinterpret_cast<U*>(keys), values, n, segs, opt);
    } catch (...) {
      codes_to_float_keys(keys, n);
      throw;
    }
    codes_to_float_keys(keys, n);
  } else {
    cpu::segmented_sort(keys, values, n, segs, less<K>{}, opt.direction == order::descending);
  }
}

}  // namespace gpusort::detail

#define GPUSORT_INSTANTIATE_SEGMENTS(K, P)                                                   \
  template cudaError_t gpusort::detail::sort_segments<K, P>(                                 \
      void*, std::size_t&, K*, P*, std::uint64_t, const segment_list&, const options&, bool); \
  template void gpusort::detail::cpu_sort_segments<K, P>(K*, P*, std::uint64_t,              \
                                                         const segment_list&, const options&);

// The unsigned segmented sorts that a float TU calls but must not build again (they are
// built in src/segmented_u32.cu and src/segmented_u64.cu).
#define GPUSORT_EXTERN_SEGMENTS(K, P)                                                         \
  extern template cudaError_t gpusort::detail::sort_segments<K, P>(                           \
      void*, std::size_t&, K*, P*, std::uint64_t, const segment_list&, const options&, bool); \
  extern template void gpusort::detail::cpu_sort_segments<K, P>(                              \
      K*, P*, std::uint64_t, const segment_list&, const options&);
#define GPUSORT_EXTERN_SEGMENTS_FOR_KEY(K)                      \
  GPUSORT_EXTERN_SEGMENTS(K, gpusort::detail::no_value)         \
  GPUSORT_EXTERN_SEGMENTS(K, gpusort::detail::payload<4>)       \
  GPUSORT_EXTERN_SEGMENTS(K, gpusort::detail::payload<8>)       \
  GPUSORT_EXTERN_SEGMENTS(K, gpusort::detail::payload<16>)

#define GPUSORT_INSTANTIATE_SEGMENTS_FOR_KEY(K)                       \
  GPUSORT_INSTANTIATE_SEGMENTS(K, gpusort::detail::no_value)          \
  GPUSORT_INSTANTIATE_SEGMENTS(K, gpusort::detail::payload<4>)        \
  GPUSORT_INSTANTIATE_SEGMENTS(K, gpusort::detail::payload<8>)        \
  GPUSORT_INSTANTIATE_SEGMENTS(K, gpusort::detail::payload<16>)
