// The core layer's dispatch for batched and segmented sorts. src/segmented_<key>.cu
// instantiates it for one key type and every value size.
#pragma once

#include "gpusort/detail/cpu/segmented.hpp"
#include "gpusort/detail/device/baselines.hpp"
#include "gpusort/detail/device/float_order.cuh"
#include "gpusort/detail/device/segmented.cuh"
#include "gpusort/segmented.hpp"

namespace gpusort::detail {

// `stored`: what keys holds when K is unsigned (key_bits): the float and signed sorts of the
// size classes run the unsigned one of their width with the map fused into its loads and
// stores (key_codec), NaNs placed by the codes (options::nans), so that its kernels are built
// once per width. options::stable takes CUB's segmented radix sort, the stable one.
// value_source::positions: the size-class sort makes them in its loads; CUB's sorts read
// them, so they are written first (device::write_positions).
template <class K, class V>
cudaError_t sort_segments(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                          std::uint64_t n, const segment_list& segs, const options& opt,
                          key_bits stored, value_source source) {
  const bool positions = source == value_source::positions;
  if (positions && !index_payload<V>) return cudaErrorInvalidValue;
  // A query without keys sizes the workspace for the shape alone (the sample sort's final
  // buckets, asked before the caller's arrays exist); every other call has its arrays checked.
  if (temp || keys) {
    const cudaError_t e = validate_segment_arrays(keys, values, n, segs);
    if (e != cudaSuccess) return e;
  }
  const bool descending = opt.direction == order::descending;
  const bool low = nans_lowest(opt.direction, opt.nans);
  options run = opt;
  if (opt.stable && opt.algo != algorithm::thrust) run.algo = algorithm::cub_radix;
  if constexpr (std::is_floating_point_v<K>) {
    using U = typename float_order<K>::U;
    U* codes = reinterpret_cast<U*>(keys);
    if (run.algo == algorithm::automatic || run.algo == algorithm::bitonic)
      // By the unsigned sort of src/segmented_u32.cu / _u64.cu, mapping each key as it is
      // loaded and stored: keys outside the segments are never touched.
      return sort_segments<U, V>(temp, temp_bytes, codes, values, n, segs, run,
                                 key_bits::float_keys, source);
    // CUB's sorts on codes (CUB alone would tie -0.0 with +0.0 and put negative NaNs first):
    // the whole array mapped, sorted as unsigned keys and mapped back.
    if (!temp)
      return sort_segments<U, V>(temp, temp_bytes, codes, values, n, segs, run,
                                 key_bits::unsigned_keys, source);
    cudaError_t r = device::map_float_keys(keys, n, true, low, opt.stream);
    if (r != cudaSuccess) return r;
    r = sort_segments<U, V>(temp, temp_bytes, codes, values, n, segs, run,
                            key_bits::unsigned_keys, source);
    const cudaError_t back = device::map_float_keys(keys, n, false, low, opt.stream);
    return r != cudaSuccess ? r : back;
  } else {
    const bool size_classes = run.algo == algorithm::automatic || run.algo == algorithm::bitonic;
    if constexpr (std::is_signed_v<K>) {
      // By the unsigned sort of the same width (src/segmented_u32.cu / _u64.cu), the sign
      // bit flipped as keys are loaded and stored.
      using U = std::make_unsigned_t<K>;
      if (size_classes)
        return sort_segments<U, V>(temp, temp_bytes, reinterpret_cast<U*>(keys), values, n, segs,
                                   run, key_bits::signed_keys, source);
    } else if (size_classes) {
      return device::segmented_sort(temp, temp_bytes, keys, values, n, segs, less<K>{},
                                    descending, opt.stream, key_codec<K>::of(stored, low),
                                    positions);
    }
    if constexpr (index_payload<V>)
      if (positions && temp && n > 0) {
        std::size_t bytes = 0;  // the sort's own checks come before any value is written
        const cudaError_t q =
            sort_segments<K, V>(nullptr, bytes, keys, values, n, segs, run, stored);
        if (q != cudaSuccess) return q;
        if (temp_bytes < bytes) return cudaErrorInvalidValue;
        const cudaError_t w = device::write_positions(values, segs, n, opt.stream);
        if (w != cudaSuccess) return w;
      }
    switch (run.algo) {
      case algorithm::cub_radix:
      case algorithm::cub_merge:
        if constexpr (device::baseline_built<K, V>) {
          if (run.algo == algorithm::cub_radix)
            return device::cub_segmented_radix_sort(temp, temp_bytes, keys, values, n, segs,
                                                    descending, opt.stream);
          return device::cub_segmented_sort(temp, temp_bytes, keys, values, n, segs, descending,
                                            opt.stream);
        }
        return cudaErrorNotSupported;
      case algorithm::thrust:
        return cudaErrorNotSupported;
      default:
        break;
    }
  }
  return cudaErrorInvalidValue;
}

template <class K, class V>
void cpu_sort_segments(K* keys, V* values, std::uint64_t n, const segment_list& segs,
                       const options& opt) {
  if constexpr (std::is_floating_point_v<K>) {
    // As on the device, so that both backends give the same order.
    using U = typename float_order<K>::U;
    const bool low = nans_lowest(opt.direction, opt.nans);
    float_keys_to_codes(keys, n, low);
    try {
      cpu_sort_segments<U, V>(reinterpret_cast<U*>(keys), values, n, segs, opt);
    } catch (...) {
      codes_to_float_keys(keys, n, low);
      throw;
    }
    codes_to_float_keys(keys, n, low);
  } else if (opt.stable || opt.algo == algorithm::cub_radix || opt.algo == algorithm::cub_merge) {
    cpu::stable_segmented_sort(keys, values, n, segs, opt.direction == order::descending);
  } else {
    cpu::segmented_sort(keys, values, n, segs, less<K>{}, opt.direction == order::descending);
  }
}

}  // namespace gpusort::detail

#define GPUSORT_INSTANTIATE_SEGMENTS(K, P)                                                  \
  template cudaError_t gpusort::detail::sort_segments<K, P>(                                \
      void*, std::size_t&, K*, P*, std::uint64_t, const segment_list&, const options&,      \
      key_bits, value_source);                                                              \
  template void gpusort::detail::cpu_sort_segments<K, P>(K*, P*, std::uint64_t,             \
                                                         const segment_list&, const options&);

// The unsigned segmented sorts that a float or signed TU calls but must not build again (they
// are built in src/segmented_u32.cu and src/segmented_u64.cu).
#define GPUSORT_EXTERN_SEGMENTS(K, P)                                                         \
  extern template cudaError_t gpusort::detail::sort_segments<K, P>(                           \
      void*, std::size_t&, K*, P*, std::uint64_t, const segment_list&, const options&,        \
      key_bits, value_source);                                                                \
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
