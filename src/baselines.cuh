// The CUB and Thrust baselines behind the library's interface (see baselines.hpp), and
// automatic's radix sort, CUB's kernels under gpusort's tuning (radix_policy.cuh);
// src/baselines_<key>.cu instantiates them, one key type per file to spread compile time.
#pragma once

#include <limits>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/execution_policy.h>
#include <thrust/sort.h>

#include "gpusort/detail/device/baselines.hpp"
#include "gpusort/detail/device/merge_sort.cuh"
#include "gpusort/detail/device/radix_policy.cuh"
#include "gpusort/detail/index_math/segments.hpp"
#include "gpusort/detail/core/types.hpp"
#include "gpusort/key_traits.hpp"

namespace gpusort::detail::device {
namespace {
constexpr std::size_t align_up(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

template <class K, class V>
constexpr bool keys_only = std::is_same_v<V, no_value> || std::is_same_v<V, cub::NullType>;

// CUB's double-buffered sorts: the second key and value buffers at the start of the
// workspace, CUB's own workspace after them. A workspace too small for the buffers is
// refused (`fits`) rather than handed to CUB with a wrapped-around size.
template <class K, class V>
struct double_buffers {
  std::size_t key_buffer, value_buffer;
  cub::DoubleBuffer<K> keys;
  cub::DoubleBuffer<V> values;
  void* cub_temp = nullptr;
  std::size_t cub_bytes = 0;
  bool fits = true;

  double_buffers(void* temp, std::size_t temp_bytes, K* k, V* v, std::uint64_t n)
      : key_buffer(align_up(sizeof(K) * n)),
        value_buffer(keys_only<K, V> ? 0 : align_up(sizeof(V) * n)),
        keys(k, temp ? reinterpret_cast<K*>(static_cast<char*>(temp)) : nullptr),
        values(v, temp ? reinterpret_cast<V*>(static_cast<char*>(temp) + key_buffer) : nullptr) {
    if (!temp) return;
    fits = temp_bytes >= key_buffer + value_buffer;
    cub_temp = static_cast<char*>(temp) + key_buffer + value_buffer;
    if (fits) cub_bytes = temp_bytes - key_buffer - value_buffer;
  }
  // What the query reports: both buffers and CUB's workspace.
  std::size_t bytes() const { return key_buffer + value_buffer + cub_bytes; }
  // An odd number of passes leaves the result in the second buffer: copy it back.
  cudaError_t copy_back(K* k, V* v, std::uint64_t n, cudaStream_t stream) {
    cudaError_t e = cudaSuccess;
    if (keys.Current() != k) {
      e = cudaMemcpyAsync(k, keys.Current(), sizeof(K) * n, cudaMemcpyDeviceToDevice, stream);
      if (e == cudaSuccess && !keys_only<K, V>)
        e = cudaMemcpyAsync(v, values.Current(), sizeof(V) * n, cudaMemcpyDeviceToDevice, stream);
    }
    return e;
  }
};
}  // namespace

template <class K, class V>
cudaError_t cub_radix_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                           std::uint64_t n, bool descending, cudaStream_t stream) {
  double_buffers<K, V> b(temp, temp_bytes, keys, values, n);
  if (!b.fits) return cudaErrorInvalidValue;
  cudaError_t e;
  if constexpr (keys_only<K, V>) {
    e = descending ? cub::DeviceRadixSort::SortKeysDescending(b.cub_temp, b.cub_bytes, b.keys, n,
                                                             0, int(sizeof(K) * 8), stream)
                   : cub::DeviceRadixSort::SortKeys(b.cub_temp, b.cub_bytes, b.keys, n, 0,
                                                    int(sizeof(K) * 8), stream);
  } else {
    e = descending ? cub::DeviceRadixSort::SortPairsDescending(b.cub_temp, b.cub_bytes, b.keys,
                                                              b.values, n, 0,
                                                              int(sizeof(K) * 8), stream)
                   : cub::DeviceRadixSort::SortPairs(b.cub_temp, b.cub_bytes, b.keys, b.values,
                                                     n, 0, int(sizeof(K) * 8), stream);
  }
  if (!temp) {
    temp_bytes = b.bytes();
    return e;
  }
  return e != cudaSuccess ? e : b.copy_back(keys, values, n, stream);
}

// CUB's dispatch under gpusort's policy chain (radix_policy.cuh), with a 32-bit count.
template <cub::SortOrder Order, class K, class V>
cudaError_t dispatch_tuned_radix(double_buffers<K, V>& b, std::uint32_t n, cudaStream_t stream) {
  using hub = radix::policy_hub<K, V, std::uint32_t>;
  return cub::DispatchRadixSort<Order, K, V, std::uint32_t, cub::detail::identity_decomposer_t, hub>::Dispatch(
      b.cub_temp, b.cub_bytes, b.keys, b.values, n, 0, int(sizeof(K) * 8), true, stream);
}

template <class K, class V>
cudaError_t radix_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values, std::uint64_t n,
                       bool descending, cudaStream_t stream) {
  if (n > std::numeric_limits<std::uint32_t>::max())
    return cub_radix_sort(temp, temp_bytes, keys, values, n, descending, stream);
  using CV = std::conditional_t<keys_only<K, V>, cub::NullType, V>;
  double_buffers<K, CV> b(temp, temp_bytes, keys, reinterpret_cast<CV*>(values), n);
  if (!b.fits) return cudaErrorInvalidValue;
  const auto count = static_cast<std::uint32_t>(n);
  cudaError_t e = descending ? dispatch_tuned_radix<cub::SortOrder::Descending>(b, count, stream)
                             : dispatch_tuned_radix<cub::SortOrder::Ascending>(b, count, stream);
  if (!temp) {
    temp_bytes = b.bytes();
    return e;
  }
  return e != cudaSuccess ? e : b.copy_back(keys, reinterpret_cast<CV*>(values), n, stream);
}

template <class K, class V>
cudaError_t cub_merge_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                           std::uint64_t n, bool descending, cudaStream_t stream) {
  return merge_sort(temp, temp_bytes, keys, values, n, less<K>{}, descending, stream);
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

// A segment's first (or one past its last) key, whatever the list holds: batches, 4- or
// 8-byte offsets. As one iterator type for all three, CUB's segmented sorts are built once
// per key and value type instead of three times (they were the heaviest part of the build),
// for a branch on each offset they read.
// A segment that is not valid (segment_list::valid: it ends past n or before it begins, an
// int64 offset >= 2^63 included) reads as the empty segment [0, 0), so that CUB skips it as
// the library's own sorts do, instead of reading and writing out of bounds.
struct segment_bound {
  index_math::segment_list segs;
  bool end;
  std::uint64_t n;
  __host__ __device__ std::int64_t operator()(std::int64_t i) const {
    const auto at = static_cast<std::uint64_t>(i);
    if (!segs.valid(at, n)) return 0;
    return static_cast<std::int64_t>(end ? segs.last(at) : segs.first(at));
  }
};

// CUB's segmented sorts write to a second buffer. Keys outside every segment are not
// written there, so for offsets (which may leave gaps) the buffer starts as a copy of the
// keys; batches cover all keys and skip that copy. An odd number of passes leaves the result
// in the second buffer, which is then copied back.
template <class K, class V, class Sort>
cudaError_t cub_segmented(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                          std::uint64_t n, const index_math::segment_list& segs,
                          cudaStream_t stream, Sort&& sort) {
  double_buffers<K, V> b(temp, temp_bytes, keys, values, n);
  if (!b.fits) return cudaErrorInvalidValue;
  cudaError_t e = cudaSuccess;
  if (temp && !segs.batched()) {
    e = cudaMemcpyAsync(b.keys.Alternate(), keys, sizeof(K) * n, cudaMemcpyDeviceToDevice,
                        stream);
    if (e == cudaSuccess && !keys_only<K, V>)
      e = cudaMemcpyAsync(b.values.Alternate(), values, sizeof(V) * n,
                          cudaMemcpyDeviceToDevice, stream);
    if (e != cudaSuccess) return e;
  }
  const thrust::counting_iterator<std::int64_t> index(0);
  e = sort(b.cub_temp, b.cub_bytes, b.keys, b.values,
           thrust::make_transform_iterator(index, segment_bound{segs, false, n}),
           thrust::make_transform_iterator(index, segment_bound{segs, true, n}));
  if (!temp) {
    temp_bytes = b.bytes();
    return e;
  }
  return e != cudaSuccess ? e : b.copy_back(keys, values, n, stream);
}

template <class K, class V>
cudaError_t cub_segmented_radix_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                                     std::uint64_t n, const index_math::segment_list& segs,
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
                               std::uint64_t n, const index_math::segment_list& segs,
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

// The segmented ones alone: the narrow keys' codes (src/segmented_narrow.cu) need no others.
#define GPUSORT_SEGMENTED_BASELINES(K, V)                                                     \
  template cudaError_t cub_segmented_radix_sort<K, V>(                                        \
      void*, std::size_t&, K*, V*, std::uint64_t, const index_math::segment_list&, bool,         \
      cudaStream_t);                                                                          \
  template cudaError_t cub_segmented_sort<K, V>(void*, std::size_t&, K*, V*, std::uint64_t,   \
                                                const index_math::segment_list&, bool,           \
                                                cudaStream_t);
#define GPUSORT_BASELINES(K, V)                                                               \
  template cudaError_t cub_radix_sort<K, V>(void*, std::size_t&, K*, V*, std::uint64_t, bool, \
                                            cudaStream_t);                                    \
  template cudaError_t radix_sort<K, V>(void*, std::size_t&, K*, V*, std::uint64_t, bool,     \
                                        cudaStream_t);                                        \
  template cudaError_t cub_merge_sort<K, V>(void*, std::size_t&, K*, V*, std::uint64_t, bool, \
                                            cudaStream_t);                                    \
  template cudaError_t thrust_sort<K, V>(void*, std::size_t&, K*, V*, std::uint64_t, bool,    \
                                         cudaStream_t);                                       \
  GPUSORT_SEGMENTED_BASELINES(K, V)
#define GPUSORT_BASELINES_FOR_KEY(K) \
  GPUSORT_BASELINES(K, no_value)     \
  GPUSORT_BASELINES(K, payload<4>)   \
  GPUSORT_BASELINES(K, payload<8>)
#define GPUSORT_SEGMENTED_BASELINES_FOR_KEY(K) \
  GPUSORT_SEGMENTED_BASELINES(K, no_value)     \
  GPUSORT_SEGMENTED_BASELINES(K, payload<4>)   \
  GPUSORT_SEGMENTED_BASELINES(K, payload<8>)

}  // namespace gpusort::detail::device
