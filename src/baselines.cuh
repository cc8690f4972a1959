// The CUB and Thrust baselines behind the library's interface (see baselines.hpp);
// src/baselines_<key>.cu instantiates them, one key type per file to spread compile time.
#pragma once

#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/execution_policy.h>
#include <thrust/sort.h>

#include "gpusort/detail/device/baselines.hpp"
#include "gpusort/detail/network/segments.hpp"
#include "gpusort/detail/types.hpp"
#include "gpusort/key_traits.hpp"

namespace gpusort::detail::device {
namespace {
constexpr std::size_t align_up(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

template <class K, class V>
constexpr bool keys_only = std::is_same_v<V, no_value>;
}  // namespace

template <class K, class V>
cudaError_t cub_radix_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                           std::uint64_t n, bool descending, cudaStream_t stream) {
  // The second buffer comes first in the workspace, then CUB's own.
  const std::size_t key_buffer = align_up(sizeof(K) * n);
  const std::size_t value_buffer = keys_only<K, V> ? 0 : align_up(sizeof(V) * n);
  char* base = static_cast<char*>(temp);
  cub::DoubleBuffer<K> key_buffers(keys, temp ? reinterpret_cast<K*>(base) : nullptr);
  cub::DoubleBuffer<V> value_buffers(values,
                                     temp ? reinterpret_cast<V*>(base + key_buffer) : nullptr);
  std::size_t cub_bytes = 0;
  void* cub_temp = temp ? base + key_buffer + value_buffer : nullptr;
  if (temp) cub_bytes = temp_bytes - key_buffer - value_buffer;
  cudaError_t e;
  if constexpr (keys_only<K, V>) {
    e = descending ? cub::DeviceRadixSort::SortKeysDescending(cub_temp, cub_bytes, key_buffers, n,
                                                             0, int(sizeof(K) * 8), stream)
                   : cub::DeviceRadixSort::SortKeys(cub_temp, cub_bytes, key_buffers, n, 0,
                                                    int(sizeof(K) * 8), stream);
  } else {
    e = descending ? cub::DeviceRadixSort::SortPairsDescending(cub_temp, cub_bytes, key_buffers,
                                                              value_buffers, n, 0,
                                                              int(sizeof(K) * 8), stream)
                   : cub::DeviceRadixSort::SortPairs(cub_temp, cub_bytes, key_buffers,
                                                     value_buffers, n, 0, int(sizeof(K) * 8),
                                                     stream);
  }
  if (!temp) {
    temp_bytes = key_buffer + value_buffer + cub_bytes;
    return e;
  }
  if (e != cudaSuccess) return e;
  // An odd number of digit passes leaves the result in the second buffer.
  if (key_buffers.Current() != keys) {
    e = cudaMemcpyAsync(keys, key_buffers.Current(), sizeof(K) * n, cudaMemcpyDeviceToDevice,
                        stream);
    if (e == cudaSuccess && !keys_only<K, V>)
      e = cudaMemcpyAsync(values, value_buffers.Current(), sizeof(V) * n,
                          cudaMemcpyDeviceToDevice, stream);
  }
  return e;
}

template <class K, class V>
cudaError_t cub_merge_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                           std::uint64_t n, bool descending, cudaStream_t stream) {
  auto run = [&](auto comp) {
    if constexpr (keys_only<K, V>) {
      return cub::DeviceMergeSort::SortKeys(temp, temp_bytes, keys, n, comp, stream);
    } else {
      return cub::DeviceMergeSort::SortPairs(temp, temp_bytes, keys, values, n, comp, stream);
    }
  };
  return descending ? run(reversed<less<K>>{}) : run(less<K>{});
}

template <class K, class V>
cudaError_t thrust_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                        std::uint64_t n, bool descending, cudaStream_t stream) {
  if (!temp) {
    temp_bytes = 0;
    return cudaSuccess;
  }
  auto run = [&](auto comp) {
    auto policy = thrust::cuda::par_nosync.on(stream);
    if constexpr (keys_only<K, V>) {
      thrust::sort(policy, keys, keys + n, comp);
    } else {
      thrust::sort_by_key(policy, keys, keys + n, values, comp);
    }
  };
  try {
    descending ? run(reversed<less<K>>{}) : run(less<K>{});
  } catch (const thrust::system_error& err) {
    return static_cast<cudaError_t>(err.code().value());
  } catch (const std::bad_alloc&) {
    return cudaErrorMemoryAllocation;
  }
  return cudaGetLastError();
}

// Batched segments as offset iterators: i -> i * size.
struct batch_offset {
  std::uint64_t size;
  __host__ __device__ std::int64_t operator()(std::int64_t i) const {
    return static_cast<std::int64_t>(i * size);
  }
};

// Calls f(begin_iterator, end_iterator) with the segments' offsets in their real type.
template <class F>
cudaError_t with_offsets(const network::segment_list& segs, F&& f) {
  if (segs.batched()) {
    auto first = thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0),
                                                 batch_offset{segs.batch_size});
    return f(first, first + 1);
  }
  if (segs.offset_bytes == 4)
    return f(static_cast<const std::uint32_t*>(segs.begin),
             static_cast<const std::uint32_t*>(segs.end));
  return f(static_cast<const std::uint64_t*>(segs.begin),
           static_cast<const std::uint64_t*>(segs.end));
}

// CUB's segmented sorts write to a second buffer. Keys outside every segment are not
// written there, so for offsets (which may leave gaps) the buffer starts as a copy of the
// keys; batches cover all keys and skip that copy. An odd number of passes leaves the result
// in the second buffer, which is then copied back.
template <class K, class V, class Sort>
cudaError_t cub_segmented(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                          std::uint64_t n, const network::segment_list& segs,
                          cudaStream_t stream, Sort&& sort) {
  const std::size_t key_buffer = align_up(sizeof(K) * n);
  const std::size_t value_buffer = keys_only<K, V> ? 0 : align_up(sizeof(V) * n);
  char* base = static_cast<char*>(temp);
  cub::DoubleBuffer<K> key_buffers(keys, temp ? reinterpret_cast<K*>(base) : nullptr);
  cub::DoubleBuffer<V> value_buffers(values,
                                     temp ? reinterpret_cast<V*>(base + key_buffer) : nullptr);
  std::size_t cub_bytes = 0;
  void* cub_temp = temp ? base + key_buffer + value_buffer : nullptr;
  if (temp) cub_bytes = temp_bytes - key_buffer - value_buffer;
  cudaError_t e = cudaSuccess;
  if (temp && !segs.batched()) {
    e = cudaMemcpyAsync(key_buffers.Alternate(), keys, sizeof(K) * n, cudaMemcpyDeviceToDevice,
                        stream);
    if (e == cudaSuccess && !keys_only<K, V>)
      e = cudaMemcpyAsync(value_buffers.Alternate(), values, sizeof(V) * n,
                          cudaMemcpyDeviceToDevice, stream);
    if (e != cudaSuccess) return e;
  }
  e = with_offsets(segs, [&](auto begin, auto end) {
    return sort(cub_temp, cub_bytes, key_buffers, value_buffers, begin, end);
  });
  if (!temp) {
    temp_bytes = key_buffer + value_buffer + cub_bytes;
    return e;
  }
  if (e != cudaSuccess) return e;
  if (key_buffers.Current() != keys) {
    e = cudaMemcpyAsync(keys, key_buffers.Current(), sizeof(K) * n, cudaMemcpyDeviceToDevice,
                        stream);
    if (e == cudaSuccess && !keys_only<K, V>)
      e = cudaMemcpyAsync(values, value_buffers.Current(), sizeof(V) * n,
                          cudaMemcpyDeviceToDevice, stream);
  }
  return e;
}

template <class K, class V>
cudaError_t cub_segmented_radix_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                                     std::uint64_t n, const network::segment_list& segs,
                                     bool descending, cudaStream_t stream) {
  if (n > static_cast<std::uint64_t>(INT32_MAX) || segs.count > INT32_MAX)
    return cudaErrorNotSupported;  // CUB's segmented radix sort counts in int
  const int items = static_cast<int>(n), count = static_cast<int>(segs.count);
  constexpr int bits = sizeof(K) * 8;
  return cub_segmented(temp, temp_bytes, keys, values, n, segs, stream,
                       [&](void* t, std::size_t& b, auto& kb, auto& vb, auto begin, auto end) {
    using R = cub::DeviceSegmentedRadixSort;
    if constexpr (keys_only<K, V>) {
      return descending ? R::SortKeysDescending(t, b, kb, items, count, begin, end, 0, bits, stream)
                        : R::SortKeys(t, b, kb, items, count, begin, end, 0, bits, stream);
    } else {
      return descending
                 ? R::SortPairsDescending(t, b, kb, vb, items, count, begin, end, 0, bits, stream)
                 : R::SortPairs(t, b, kb, vb, items, count, begin, end, 0, bits, stream);
    }
  });
}

template <class K, class V>
cudaError_t cub_segmented_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                               std::uint64_t n, const network::segment_list& segs,
                               bool descending, cudaStream_t stream) {
  const auto items = static_cast<std::int64_t>(n);
  const auto count = static_cast<std::int64_t>(segs.count);
  return cub_segmented(temp, temp_bytes, keys, values, n, segs, stream,
                       [&](void* t, std::size_t& b, auto& kb, auto& vb, auto begin, auto end) {
    using S = cub::DeviceSegmentedSort;
    if constexpr (keys_only<K, V>) {
      return descending ? S::SortKeysDescending(t, b, kb, items, count, begin, end, stream)
                        : S::SortKeys(t, b, kb, items, count, begin, end, stream);
    } else {
      return descending ? S::SortPairsDescending(t, b, kb, vb, items, count, begin, end, stream)
                        : S::SortPairs(t, b, kb, vb, items, count, begin, end, stream);
    }
  });
}

#define GPUSORT_BASELINES(K, V)                                                               \
  template cudaError_t cub_radix_sort<K, V>(void*, std::size_t&, K*, V*, std::uint64_t, bool, \
                                            cudaStream_t);                                    \
  template cudaError_t cub_merge_sort<K, V>(void*, std::size_t&, K*, V*, std::uint64_t, bool, \
                                            cudaStream_t);                                    \
  template cudaError_t thrust_sort<K, V>(void*, std::size_t&, K*, V*, std::uint64_t, bool,    \
                                         cudaStream_t);                                       \
  template cudaError_t cub_segmented_radix_sort<K, V>(                                        \
      void*, std::size_t&, K*, V*, std::uint64_t, const network::segment_list&, bool,         \
      cudaStream_t);                                                                          \
  template cudaError_t cub_segmented_sort<K, V>(void*, std::size_t&, K*, V*, std::uint64_t,   \
                                                const network::segment_list&, bool,           \
                                                cudaStream_t);
#define GPUSORT_BASELINES_FOR_KEY(K) \
  GPUSORT_BASELINES(K, no_value)     \
  GPUSORT_BASELINES(K, payload<4>)

}  // namespace gpusort::detail::device
