// Sorting with your own comparator: include this header from a .cu file (nvcc), since the
// kernels are instantiated for your comparator. `comp(a, b)` must be callable on host and
// device (__host__ __device__) and be a strict weak order.
//
//   struct by_x { __host__ __device__ bool operator()(const point& a, const point& b) const
//                 { return a.x < b.x; } };
//   size_t bytes = 0;
//   gpusort::sort_keys(nullptr, bytes, d_points, n, by_x{});     // bytes: what automatic needs
//   cudaMalloc(&temp, bytes);
//   gpusort::sort_keys(temp, bytes, d_points, n, by_x{});
//
// The batched and segmented sorts take a comparator the same way:
//   gpusort::sort_segmented_keys(temp, bytes, d_points, n, d_offsets, d_offsets + 1, rows, by_x{});
//
// Keys may be any trivially copyable type. algorithm::bitonic and algorithm::sample_sort take
// a user comparator (algorithm_traits::takes_comparator), and automatic, which picks CUB's
// merge sort (a key and its value of up to 8 bytes together at any size, larger ones up to
// 2^22 keys), else the randomized sample sort, where that one's workspace fits (the query
// asks for it if the device's free memory holds it; the sort runs it if given that many
// bytes), else the in-place bitonic sort (a query answer of 1 byte); the batched and
// segmented sorts take bitonic (and automatic, which is it). Others answer
// cudaErrorNotSupported. None of them is stable, and options::stable is refused
// (cudaErrorNotSupported, nothing touched) rather than ignored: for input order among equal
// keys, make the comparator break their ties (by a field, or by a position stored with them).
// sample_sort asks for workspace (temp == nullptr writes the bytes) like the core layer.
#pragma once

#include "gpusort/detail/core/automatic.hpp"
#include "gpusort/detail/device/bitonic.cuh"
#include "gpusort/detail/device/merge_sort.cuh"
#include "gpusort/detail/device/sample_sort.cuh"
#include "gpusort/detail/device/segmented.cuh"
#include "gpusort/sort.hpp"

namespace gpusort {

namespace detail {
// A sort of keys[0, n) (values alongside) by comp, with the algorithm of opt; automatic:
// CUB's merge sort up to sample_sort_policy::automatic_merge_max keys, the randomized sample
// sort above, each where its workspace is available (workspace_available), else the in-place
// bitonic sort.
template <class K, class V, class Compare>
cudaError_t sort_with(void* temp, std::size_t& temp_bytes, K* keys, V* values, std::uint64_t n,
                      Compare comp, const options& opt) {
  if (opt.algo == algorithm::automatic) {
    if (n <= device::sample_sort_policy<K, V>::automatic_merge_max) {
      const bool descending = opt.direction == order::descending;
      std::size_t merge_bytes = 0;
      const cudaError_t e = device::merge_sort(nullptr, merge_bytes, keys, values, n, comp,
                                               descending, opt.stream);
      if (e != cudaSuccess) return e;
      if (workspace_available(temp, temp_bytes, merge_bytes))
        return never_zero(temp, temp_bytes,
                          device::merge_sort(temp, temp_bytes, keys, values, n, comp, descending,
                                             opt.stream));
      options in_place = opt;
      in_place.algo = algorithm::bitonic;
      return sort_with(temp, temp_bytes, keys, values, n, comp, in_place);
    }
    options pick = opt;
    pick.algo = algorithm::sample_sort;
    pick.sampler = sampling::random;
    pick.buckets = 0;
    std::size_t sample_bytes = 0;
    const cudaError_t e = sort_with(nullptr, sample_bytes, keys, values, n, comp, pick);
    if (e != cudaSuccess) return e;
    if (!workspace_available(temp, temp_bytes, sample_bytes)) pick.algo = algorithm::bitonic;
    return sort_with(temp, temp_bytes, keys, values, n, comp, pick);
  }
  const bool descending = opt.direction == order::descending;
  if (opt.algo == algorithm::sample_sort) {
    const int bits = index_math::bucket_bits_of(opt.buckets);
    if (bits < 0) return cudaErrorInvalidValue;
    auto sort_buckets = [comp](void* t, std::size_t& bytes, K* k, V* v, std::uint64_t count,
                               const segment_list& segs, bool desc, cudaStream_t stream) {
      return device::segmented_sort(t, bytes, k, v, count, segs, comp, desc, stream);
    };
    return never_zero(temp, temp_bytes,
                      device::sample_sort(temp, temp_bytes, keys, values, n, comp, descending,
                                          {bits, opt.sampler == sampling::random}, sort_buckets,
                                          opt.stream));
  }
  if (!temp) {
    temp_bytes = 1;  // never 0 (sort.hpp, never_zero); bitonic touches none of it
    return cudaSuccess;
  }
  return device::bitonic_sort(keys, values, n, comp, descending, opt.stream);
}
}  // namespace detail

template <class K, class Compare, std::integral N>
  requires std::is_trivially_copyable_v<K> && std::predicate<Compare, const K&, const K&>
cudaError_t sort_keys(void* temp, std::size_t& temp_bytes, K* keys, N n, Compare comp,
                      const options& opt = {}) {
  if (detail::negative(n)) return cudaErrorInvalidValue;
  if (!traits_of(opt.algo).takes_comparator || opt.stable) return cudaErrorNotSupported;
  const cudaError_t e = detail::validate_device_array(keys, static_cast<std::uint64_t>(n),
                                                      sizeof(K), alignof(K));
  if (e != cudaSuccess) return e;
  return detail::sort_with(temp, temp_bytes, keys, static_cast<detail::no_value*>(nullptr),
                           static_cast<std::uint64_t>(n), comp, opt);
}

template <class K, detail::supported_value V, class Compare, std::integral N>
  requires std::is_trivially_copyable_v<K> && std::predicate<Compare, const K&, const K&>
cudaError_t sort_pairs(void* temp, std::size_t& temp_bytes, K* keys, V* values, N n,
                       Compare comp, const options& opt = {}) {
  if (detail::negative(n)) return cudaErrorInvalidValue;
  if (!traits_of(opt.algo).takes_comparator || opt.stable) return cudaErrorNotSupported;
  const auto count = static_cast<std::uint64_t>(n);
  cudaError_t e = detail::validate_device_array(keys, count, sizeof(K), alignof(K));
  if (e == cudaSuccess) e = detail::validate_device_array(values, count, sizeof(V), sizeof(V));
  if (e != cudaSuccess) return e;
  return detail::sort_with(temp, temp_bytes, keys,
                           reinterpret_cast<detail::payload_of<V>*>(values), count, comp, opt);
}

namespace detail {
template <class K, class V, class Compare>
cudaError_t sort_segments_with(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                               std::uint64_t n, const segment_list& segs, Compare comp,
                               const options& opt) {
  if ((opt.algo != algorithm::automatic && opt.algo != algorithm::bitonic) || opt.stable)
    return cudaErrorNotSupported;
  const cudaError_t e = validate_segment_arrays(keys, values, n, segs);
  if (e != cudaSuccess) return e;
  return never_zero(temp, temp_bytes,
                    device::segmented_sort(temp, temp_bytes, keys, values, n, segs, comp,
                                           opt.direction == order::descending, opt.stream));
}
}  // namespace detail

template <class K, detail::offset_type O, class Compare>
  requires std::is_trivially_copyable_v<K> && std::predicate<Compare, const K&, const K&>
cudaError_t sort_segmented_keys(void* temp, std::size_t& temp_bytes, K* keys, std::uint64_t n,
                                const O* begin_offsets, const O* end_offsets,
                                std::uint64_t segment_count, Compare comp,
                                const options& opt = {}) {
  return detail::sort_segments_with(temp, temp_bytes, keys,
                                    static_cast<detail::no_value*>(nullptr), n,
                                    detail::make_segments(begin_offsets, end_offsets,
                                                          segment_count),
                                    comp, opt);
}

template <class K, detail::supported_value V, detail::offset_type O, class Compare>
  requires std::is_trivially_copyable_v<K> && std::predicate<Compare, const K&, const K&>
cudaError_t sort_segmented_pairs(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                                 std::uint64_t n, const O* begin_offsets, const O* end_offsets,
                                 std::uint64_t segment_count, Compare comp,
                                 const options& opt = {}) {
  return detail::sort_segments_with(temp, temp_bytes, keys,
                                    reinterpret_cast<detail::payload_of<V>*>(values), n,
                                    detail::make_segments(begin_offsets, end_offsets,
                                                          segment_count),
                                    comp, opt);
}

template <class K, class Compare>
  requires std::is_trivially_copyable_v<K> && std::predicate<Compare, const K&, const K&>
cudaError_t sort_batched_keys(void* temp, std::size_t& temp_bytes, K* keys,
                              std::uint64_t batch_count, std::uint64_t batch_size, Compare comp,
                              const options& opt = {}) {
  return detail::sort_segments_with(temp, temp_bytes, keys,
                                    static_cast<detail::no_value*>(nullptr),
                                    batch_count * batch_size,
                                    detail::make_batches(batch_count, batch_size), comp, opt);
}

template <class K, detail::supported_value V, class Compare>
  requires std::is_trivially_copyable_v<K> && std::predicate<Compare, const K&, const K&>
cudaError_t sort_batched_pairs(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                               std::uint64_t batch_count, std::uint64_t batch_size,
                               Compare comp, const options& opt = {}) {
  return detail::sort_segments_with(temp, temp_bytes, keys,
                                    reinterpret_cast<detail::payload_of<V>*>(values),
                                    batch_count * batch_size,
                                    detail::make_batches(batch_count, batch_size), comp, opt);
}

}  // namespace gpusort
