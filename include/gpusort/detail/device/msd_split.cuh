// automatic's radix sort of 8-byte integer keys (alone, or with values where the caller did
// not ask for stability) where the caller lets the call wait (options::wait_for_key_bits;
// docs/notes-radix-sort.md, direction 3), most significant digits first:
//   window   the bits where the keys differ: the OR of every key's ordered bits XOR the
//            first key's (one reduction), read back by the host (the call's one wait), and
//            the top msd_split_bits(n) of them (index_math/radix.hpp);
//   split    CUB's radix sort of the window's bits alone (ceil(bits / 8) digit passes), which
//            leaves the keys in 2^bits buckets, in order;
//   starts   each bucket's first position, written by the position of its first key;
//   buckets  the segmented sort of the buckets, on every bit (not stable: values of equal
//            keys may change places).
// Where the window holds every differing bit (keys that share their high bits: small
// integers, timestamps), the split sorts them alone; keys all equal are sorted already.
#pragma once

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "gpusort/detail/core/entry.hpp"  // align_workspace
#include "gpusort/detail/core/types.hpp"
#include "gpusort/detail/index_math/radix.hpp"
#include "gpusort/detail/index_math/segments.hpp"
#include "gpusort/key_traits.hpp"

namespace gpusort::detail::device {
namespace msd_split {

namespace im = index_math;

// A key's ordered bits that are not the first key's.
template <class K>
struct differs_from_first {
  const K* keys;
  __device__ std::uint64_t operator()(K k) const {
    return key_traits<K>::ordered(k) ^ key_traits<K>::ordered(keys[0]);
  }
};

struct bitwise_or {
  __device__ std::uint64_t operator()(std::uint64_t a, std::uint64_t b) const { return a | b; }
};

// A key's bucket, counted along the output: descending, from the window's top value down.
template <class K>
__device__ std::uint64_t bucket_along(K k, im::msd_window w, bool descending) {
  const std::uint64_t b = im::msd_bucket(key_traits<K>::ordered(k), w);
  return descending ? ((std::uint64_t{1} << w.bits) - 1) - b : b;
}

// starts[b] = the first position of bucket b in the split keys, starts[buckets] = n: the
// thread of a bucket's first key writes it and the empty buckets before it (the last key's
// thread also those after it), so each start is written once. Position i's share, its key
// read already.
template <class K>
__device__ void write_bucket_starts(const K* split, K key, std::uint64_t i, std::uint64_t n,
                                    im::msd_window w, bool descending, std::uint32_t* starts) {
  const std::uint64_t bucket = bucket_along(key, w, descending);
  const std::uint64_t previous = i ? bucket_along(split[i - 1], w, descending) : 0;
  const im::bucket_range here = im::buckets_starting_at(i, previous, bucket);
  for (std::uint64_t b = here.first; b < here.last; ++b) starts[b] = static_cast<std::uint32_t>(i);
  if (i + 1 < n) return;
  const im::bucket_range tail = im::buckets_after_last(bucket, std::uint64_t{1} << w.bits);
  for (std::uint64_t b = tail.first; b < tail.last; ++b) starts[b] = static_cast<std::uint32_t>(n);
}

// The buckets' starts; with `back`, each thread also copies its key (and value) there: CUB's
// odd number of digit passes leaves the split in the second buffer, and this read of it is
// the copy's.
template <class K, class V>
__global__ void bucket_starts_kernel(const K* split, const V* split_values, std::uint64_t n,
                                     im::msd_window w, bool descending, std::uint32_t* starts,
                                     K* back, V* back_values) {
  const std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  const K key = split[i];
  if (back) {
    back[i] = key;
    if constexpr (!std::is_same_v<V, no_value>) back_values[i] = split_values[i];
  }
  write_bucket_starts(split, key, i, n, w, descending, starts);
}

// The workspace: [the split's second key buffer | its second value buffer (pairs) | bucket
// starts | the window's word | the reduction's, CUB's and the segmented sort's own bytes,
// which run one after another].
struct layout {
  std::size_t values_at, starts_at, word_at, rest_at, total;
  layout(std::uint64_t n, std::size_t key_bytes, std::size_t value_bytes, int bits,
         std::size_t rest_bytes)
      : values_at(align_workspace(key_bytes * n)),
        starts_at(values_at + align_workspace(value_bytes * n)),
        word_at(starts_at +
                align_workspace(sizeof(std::uint32_t) * ((std::uint64_t{1} << bits) + 1))),
        rest_at(word_at + align_workspace(sizeof(std::uint64_t))),
        total(rest_at + rest_bytes) {}
};

}  // namespace msd_split

// Sorts keys (n of them, 2 <= n < 2^32), and values with them (V = no_value: keys alone), in
// CUB's convention: temp == nullptr writes the bytes needed. `bits` is the split's window
// (msd_split_bits(n)). sort_buckets(temp, temp_bytes, keys, values, n, segment_list,
// descending, stream) is the segmented sort (the library's, src/segmented_<key>.cu).
template <class K, class V, class SortBuckets>
cudaError_t msd_split_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                           std::uint64_t n, int bits, bool descending, SortBuckets sort_buckets,
                           cudaStream_t stream) {
  static_assert(std::is_integral_v<K> && sizeof(K) == 8, "8-byte integer keys");
  namespace ms = msd_split;
  constexpr bool pairs = !std::is_same_v<V, no_value>;
  constexpr std::size_t value_bytes = pairs ? sizeof(V) : 0;
  const auto count = static_cast<std::uint32_t>(n);
  std::uint64_t* word = nullptr;
  std::uint32_t* starts = nullptr;
  K* second_keys = nullptr;
  V* second_values = nullptr;
  void* rest = nullptr;
  if (temp) {
    const ms::layout at(n, sizeof(K), value_bytes, bits, 0);
    char* base = static_cast<char*>(temp);
    second_keys = reinterpret_cast<K*>(base);
    if constexpr (pairs) second_values = reinterpret_cast<V*>(base + at.values_at);
    starts = reinterpret_cast<std::uint32_t*>(base + at.starts_at);
    word = reinterpret_cast<std::uint64_t*>(base + at.word_at);
    rest = base + at.rest_at;
  }
  const ms::differs_from_first<K> differs{keys};
  cub::DoubleBuffer<K> split_keys(keys, second_keys);
  cub::DoubleBuffer<V> split_values(values, second_values);
  // CUB's split on bits [low, high), in the order asked; CUB reads a signed key's bits with
  // the sign flipped, as its ordered bits are.
  const auto split = [&](void* t, std::size_t& b, int low, int high) {
    if constexpr (pairs)
      return descending ? cub::DeviceRadixSort::SortPairsDescending(t, b, split_keys, split_values,
                                                                    count, low, high, stream)
                        : cub::DeviceRadixSort::SortPairs(t, b, split_keys, split_values, count,
                                                          low, high, stream);
    else
      return descending ? cub::DeviceRadixSort::SortKeysDescending(t, b, split_keys, count, low,
                                                                   high, stream)
                        : cub::DeviceRadixSort::SortKeys(t, b, split_keys, count, low, high,
                                                         stream);
  };
  // Any non-null address marks the buckets as segmented; the query reads no offsets.
  index_math::segment_list segs{starts, starts ? starts + 1 : nullptr,
                                std::uint64_t{1} << bits, 0, 4};
  if (!temp) segs.begin = segs.end = keys ? static_cast<const void*>(keys) : &segs;
  std::size_t reduce_bytes = 0, split_bytes = 0, bucket_bytes = 0;
  cudaError_t e = cub::DeviceReduce::TransformReduce(nullptr, reduce_bytes, keys, word, n,
                                                     ms::bitwise_or{}, differs, std::uint64_t{0},
                                                     stream);
  if (e == cudaSuccess) e = split(nullptr, split_bytes, 0, bits);
  if (e == cudaSuccess)
    e = sort_buckets(nullptr, bucket_bytes, keys, values, n, segs, descending, stream);
  if (e != cudaSuccess) return e;
  const std::size_t rest_bytes = std::max({reduce_bytes, split_bytes, bucket_bytes});
  const ms::layout at(n, sizeof(K), value_bytes, bits, rest_bytes);
  if (!temp) {
    temp_bytes = at.total;
    return cudaSuccess;
  }
  if (temp_bytes < at.total) return cudaErrorInvalidValue;

  std::size_t bytes = rest_bytes;
  e = cub::DeviceReduce::TransformReduce(rest, bytes, keys, word, n, ms::bitwise_or{}, differs,
                                         std::uint64_t{0}, stream);
  std::uint64_t differing = 0;
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(&differing, word, sizeof differing, cudaMemcpyDeviceToHost, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) return e;
  const index_math::msd_window w = index_math::msd_window_for(differing, bits);
  if (w.bits == 0) return cudaSuccess;  // every key the same: sorted already
  bytes = rest_bytes;
  e = split(rest, bytes, w.low_bit, w.low_bit + w.bits);
  if (e != cudaSuccess) return e;
  const bool moved = split_keys.Current() != keys;
  if (w.low_bit > 0) {  // bits below the window remain: the buckets, back in the caller's arrays
    ms::bucket_starts_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(
        split_keys.Current(), split_values.Current(), n, w, descending, starts,
        moved ? keys : nullptr, moved ? values : nullptr);
    e = cudaGetLastError();
    segs.count = std::uint64_t{1} << w.bits;
    bytes = rest_bytes;
    if (e == cudaSuccess)
      e = sort_buckets(rest, bytes, keys, values, n, segs, descending, stream);
    return e;
  }
  if (moved)  // the split sorted them alone
    e = cudaMemcpyAsync(keys, split_keys.Current(), sizeof(K) * n, cudaMemcpyDeviceToDevice,
                        stream);
  if constexpr (pairs)
    if (e == cudaSuccess && moved)
      e = cudaMemcpyAsync(values, split_values.Current(), sizeof(V) * n,
                          cudaMemcpyDeviceToDevice, stream);
  return e;
}

}  // namespace gpusort::detail::device
