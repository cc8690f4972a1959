// The baselines (CUB radix sort, CUB merge sort, thrust::sort with a comparator) behind the
// library's interface, so that tests and benchmarks call them like our own algorithms.
// Instantiated in src/baselines.cu for u32, i32, f32, u64, i64, f64 keys alone and with
// 4-byte values; other combinations answer cudaErrorNotSupported.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "gpusort/detail/index_math/segments.hpp"
#include "gpusort/options.hpp"

namespace gpusort::detail::device {

// temp == nullptr: writes the workspace bytes (the second key/value buffer included).
template <class K, class V>
cudaError_t cub_radix_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                           std::uint64_t n, bool descending, cudaStream_t stream);
// automatic's radix sort: cub_radix_sort's contract, CUB's onesweep kernels under gpusort's
// sm_90 tuning (radix_policy.cuh) with a 32-bit count; from 2^32 keys, cub_radix_sort itself.
template <class K, class V>
cudaError_t radix_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values, std::uint64_t n,
                       bool descending, cudaStream_t stream);
template <class K, class V>
cudaError_t cub_merge_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                           std::uint64_t n, bool descending, cudaStream_t stream);
// thrust allocates its own workspace: temp_bytes is 0.
template <class K, class V>
cudaError_t thrust_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                        std::uint64_t n, bool descending, cudaStream_t stream);

// CUB's segmented sorts: cub::DeviceSegmentedRadixSort (n < 2^31) and
// cub::DeviceSegmentedSort. The workspace includes a second key (and value) buffer.
template <class K, class V>
cudaError_t cub_segmented_radix_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                                     std::uint64_t n, const index_math::segment_list& segs,
                                     bool descending, cudaStream_t stream);
template <class K, class V>
cudaError_t cub_segmented_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                               std::uint64_t n, const index_math::segment_list& segs,
                               bool descending, cudaStream_t stream);

// Whether the baselines were built for this key/value combination: keys alone, 4-byte values
// and 8-byte values (64-bit indices: torch's and NumPy's argsort).
template <class K, class V>
constexpr bool baseline_built = sizeof(V) <= traits_of(algorithm::cub_radix).max_value_bytes;

}  // namespace gpusort::detail::device
