// automatic's radix sort of 8-byte integer keys (alone, or with values where the caller did
// not ask for stability) where the caller asks for it (options::msd_split;
// docs/notes-radix-sort.md, direction 3), most significant digits first, with no wait:
//   differ   the bits where the keys differ: the OR of every key's ordered bits XOR the
//            first key's (one reduction, into the workspace);
//   frame    where the keys share their top bits, each key in place as the key whose code
//            is its code with that common prefix shifted out (index_math::to_frame), so that
//            the split's window is always the codes' top msd_split_bits(n) bits, which CUB
//            is told before any key is read; keys whose top bit differs (wide keys) skip it;
//   split    CUB's radix sort of the window's bits alone (ceil(bits / 8) digit passes), which
//            leaves the keys in 2^bits buckets, in order;
//   starts   each bucket's first position: the position after each bucket's last key,
//            written by that key's thread, then the running maximum (one CUB scan);
//   finish   each key of a bucket of up to msd_rank_max keys ranked against its bucket and
//            written to its place in the caller's arrays, out of the frame (one read and one
//            write of the keys for most buckets); keys of larger buckets copied to the same
//            place, and their bucket listed where its keys are not all equal;
//   buckets  the segmented sort of the listed buckets (not stable: values of equal keys
//            may change places);
//   rescue   where the call may wait (not under graph capture), listed buckets too large for
//            the segmented sort's on-chip classes are first taken off the list; after one
//            wait for their count, their keys are gathered in bucket order, sorted by one
//            CUB radix sort (the whole key keeps the buckets' order) and scattered back, or,
//            where they do not fit half the second buffer, the whole array is radix-sorted.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "gpusort/detail/core/entry.hpp"  // align_workspace
#include "gpusort/detail/core/types.hpp"
#include "gpusort/detail/device/launch.cuh"  // grid_for
#include "gpusort/detail/device/radix_policy.cuh"
#include "gpusort/detail/index_math/approx.hpp"  // from_ordered
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

// The frame's words in the workspace: the differing bits (the reduction's), the common
// prefix (the frame kernel's; read only where the shift is not 0), and the keys of the large
// buckets the rescue takes (take_large_buckets_kernel's; read back where the call may wait).
struct frame_words {
  std::uint64_t differing, prefix;
  unsigned long long rescued;
};

// Each key as the key whose code is its framed code (CUB reads a signed key's bits with the
// sign flipped, as its code has it). Nothing to do, and no key read, where the shift is 0.
template <class K>
__global__ void frame_keys_kernel(K* keys, std::uint64_t n, frame_words* frame) {
  const int shift = im::msd_shift(frame->differing);
  if (shift == 0) return;
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += stride) {
    const std::uint64_t code = key_traits<K>::ordered(keys[i]);
    if (i == 0) frame->prefix = im::msd_prefix(code, shift);
    keys[i] = im::from_ordered<K>(im::to_frame(code, shift));
  }
}

// A framed key's bucket, counted along the output: descending, from the top bucket down.
template <class K>
__device__ std::uint64_t bucket_along(K framed, int bits, bool descending) {
  const std::uint64_t b = im::framed_bucket(key_traits<K>::ordered(framed), bits);
  return descending ? ((std::uint64_t{1} << bits) - 1) - b : b;
}

// starts[b + 1] = the position after bucket b's last key, written by the thread of that key
// (the table zeroed before; its running maximum then gives every bucket's start,
// index_math::ends_its_bucket).
template <class K>
__global__ void bucket_ends_kernel(const K* split, std::uint64_t n, int bits, bool descending,
                                   std::uint32_t* starts) {
  const std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  const std::uint64_t bucket = bucket_along(split[i], bits, descending);
  const std::uint64_t next = i + 1 < n ? bucket_along(split[i + 1], bits, descending) : 0;
  if (im::ends_its_bucket(i, n, bucket, next))
    starts[bucket + 1] = static_cast<std::uint32_t>(i + 1);
}

struct maximum {
  __device__ std::uint32_t operator()(std::uint32_t a, std::uint32_t b) const {
    return a < b ? b : a;
  }
};

// Each key (and value) of the split to its place in the caller's arrays, out of the frame:
// in a bucket of up to msd_rank_max keys, the bucket's first position plus its rank there;
// in a larger one, its own position, the bucket listed for the segmented sort (ends[b])
// where the key differs from the bucket's first.
template <class K, class V>
__global__ void finish_buckets_kernel(const K* split, const V* split_values, std::uint64_t n,
                                      int bits, bool descending, const frame_words* frame,
                                      const std::uint32_t* starts, std::uint32_t* ends,
                                      K* keys, V* values) {
  const std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  const int shift = im::msd_shift(frame->differing);
  const K key = split[i];
  const std::uint64_t code = key_traits<K>::ordered(key);
  const std::uint64_t b = bucket_along(key, bits, descending);
  const std::uint64_t first = starts[b], last = starts[b + 1];
  std::uint64_t to = i;
  if (last - first <= im::msd_rank_max)
    to = first + im::rank_in_bucket(code, i, first, last, descending, [&](std::uint64_t j) {
           return key_traits<K>::ordered(split[j]);
         });
  else if (code != key_traits<K>::ordered(split[first]))
    ends[b] = static_cast<std::uint32_t>(last);
  keys[to] = shift == 0 ? key
                        : im::from_ordered<K>(im::from_frame(code, shift, frame->prefix));
  if constexpr (!std::is_same_v<V, no_value>) values[to] = split_values[i];
}

// The rescue (index_math::msd_rescues): each listed bucket of long_min keys or more taken off
// the segmented sort's list (ends[b] = starts[b]), its size written for the gather's scan
// (0 for every other bucket, and for the entry past the last), and their keys summed.
// (static: one kernel of no template in a header that several files include)
static __global__ void take_large_buckets_kernel(const std::uint32_t* starts,
                                                 std::uint32_t* ends, std::uint64_t buckets,
                                                 std::uint64_t long_min, std::uint32_t* sizes,
                                                 frame_words* frame) {
  using sum = cub::BlockReduce<unsigned long long, 256>;
  __shared__ typename sum::TempStorage storage;
  const std::uint64_t b = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  std::uint32_t size = 0;
  if (b < buckets) {
    const std::uint32_t first = starts[b], last = starts[b + 1];
    if (im::msd_rescues(last - first, ends[b] != first, long_min)) {
      size = last - first;
      ends[b] = first;
    }
  }
  if (b <= buckets) sizes[b] = size;
  const unsigned long long total = sum(storage).Sum(size);
  if (threadIdx.x == 0 && total != 0) atomicAdd(&frame->rescued, total);
}

// A key of the caller's arrays (out of the frame) and its bucket along the output.
template <class K>
__device__ std::uint64_t bucket_of_key(K key, int bits, bool descending,
                                       const frame_words* frame) {
  const int shift = im::msd_shift(frame->differing);
  const std::uint64_t framed = im::to_frame(key_traits<K>::ordered(key), shift);
  const std::uint64_t b = im::framed_bucket(framed, bits);
  return descending ? ((std::uint64_t{1} << bits) - 1) - b : b;
}

// The rescued buckets' keys (and values) gathered in bucket order: a key of bucket b at
// position i goes to gathered_at[b] + (i - starts[b]); keys of other buckets stay.
template <class K, class V>
__global__ void gather_rescued_kernel(const K* keys, const V* values, std::uint64_t n, int bits,
                                      bool descending, const frame_words* frame,
                                      const std::uint32_t* starts,
                                      const std::uint32_t* gathered_at, K* out_keys,
                                      V* out_values) {
  const std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  const K key = keys[i];
  const std::uint64_t b = bucket_of_key(key, bits, descending, frame);
  const std::uint32_t at = gathered_at[b];
  if (gathered_at[b + 1] == at) return;  // not rescued
  const std::uint64_t to = at + (i - starts[b]);
  out_keys[to] = key;
  if constexpr (!std::is_same_v<V, no_value>) out_values[to] = values[i];
}

// The gathered keys, sorted, back to their buckets: the sort kept each bucket's keys together
// and in bucket order, so the key at j belongs at starts[b] + (j - gathered_at[b]).
template <class K, class V>
__global__ void scatter_rescued_kernel(const K* sorted, const V* sorted_values,
                                       std::uint64_t count, int bits, bool descending,
                                       const frame_words* frame, const std::uint32_t* starts,
                                       const std::uint32_t* gathered_at, K* keys, V* values) {
  const std::uint64_t j = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  if (j >= count) return;
  const K key = sorted[j];
  const std::uint64_t b = bucket_of_key(key, bits, descending, frame);
  const std::uint64_t to = starts[b] + (j - gathered_at[b]);
  keys[to] = key;
  if constexpr (!std::is_same_v<V, no_value>) values[to] = sorted_values[j];
}

// The workspace: [the split's second key buffer | its second value buffer (pairs) | bucket
// starts | bucket ends | the frame's words | the reduction's, CUB's and the segmented sort's
// own bytes, which run one after another].
struct layout {
  std::size_t values_at, starts_at, ends_at, frame_at, rest_at, total;
  layout(std::uint64_t n, std::size_t key_bytes, std::size_t value_bytes, int bits,
         std::size_t rest_bytes)
      : values_at(align_workspace(key_bytes * n)),
        starts_at(values_at + align_workspace(value_bytes * n)),
        ends_at(starts_at +
                align_workspace(sizeof(std::uint32_t) * ((std::uint64_t{1} << bits) + 1))),
        frame_at(ends_at + align_workspace(sizeof(std::uint32_t) * (std::uint64_t{1} << bits))),
        rest_at(frame_at + align_workspace(sizeof(frame_words))),
        total(rest_at + rest_bytes) {}
};

}  // namespace msd_split

// Sorts keys (n of them, 2 <= n < 2^32), and values with them (V = no_value: keys alone), in
// CUB's convention: temp == nullptr writes the bytes needed. `bits` is the split's window
// (msd_split_bits(n), 1 to 63). sort_buckets(temp, temp_bytes, keys, values, n,
// segment_list, descending, stream) is the segmented sort (the library's,
// src/segmented_<key>.cu). With may_wait, large buckets of different keys are rescued
// (index_math::msd_rescues): one wait, for their count. Without, it never waits for the
// device and can be captured into a graph; the segmented sort then takes every bucket.
template <class K, class V, class SortBuckets>
cudaError_t msd_split_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                           std::uint64_t n, int bits, bool descending, SortBuckets sort_buckets,
                           bool may_wait, cudaStream_t stream) {
  static_assert(std::is_integral_v<K> && sizeof(K) == 8, "8-byte integer keys");
  namespace ms = msd_split;
  constexpr bool pairs = !std::is_same_v<V, no_value>;
  constexpr std::size_t value_bytes = pairs ? sizeof(V) : 0;
  ms::frame_words* frame = nullptr;
  std::uint32_t *starts = nullptr, *ends = nullptr;
  K* second_keys = nullptr;
  V* second_values = nullptr;
  void* rest = nullptr;
  if (temp) {
    const ms::layout at(n, sizeof(K), value_bytes, bits, 0);
    char* base = static_cast<char*>(temp);
    second_keys = reinterpret_cast<K*>(base);
    if constexpr (pairs) second_values = reinterpret_cast<V*>(base + at.values_at);
    starts = reinterpret_cast<std::uint32_t*>(base + at.starts_at);
    ends = reinterpret_cast<std::uint32_t*>(base + at.ends_at);
    frame = reinterpret_cast<ms::frame_words*>(base + at.frame_at);
    rest = base + at.rest_at;
  }
  std::uint64_t* differing = frame ? &frame->differing : nullptr;
  const ms::differs_from_first<K> differs{keys};
  // CUB's radix sort of `c` keys (and values) between two buffers, on bits [begin, end), in
  // the order asked, under automatic's tuning of CUB's onesweep (radix_policy.cuh: u64 keys
  // alone take sm_90's 256 x 40): the split on the framed codes' top bits, and the rescue's.
  using CV = std::conditional_t<pairs, V, cub::NullType>;
  const auto radix_sort = [&](void* t, std::size_t& b, cub::DoubleBuffer<K>& k,
                              cub::DoubleBuffer<CV>& v, std::uint64_t c, int begin, int end) {
    const auto dispatch = [&]<cub::SortOrder Order>() {
      using hub = radix::policy_hub<K, CV, std::uint32_t>;
      return cub::DispatchRadixSort<Order, K, CV, std::uint32_t,
                                    cub::detail::identity_decomposer_t, hub>::
          Dispatch(t, b, k, v, static_cast<std::uint32_t>(c), begin, end, true, stream);
    };
    return descending ? dispatch.template operator()<cub::SortOrder::Descending>()
                      : dispatch.template operator()<cub::SortOrder::Ascending>();
  };
  cub::DoubleBuffer<K> split_keys(keys, second_keys);
  cub::DoubleBuffer<CV> split_values(reinterpret_cast<CV*>(values),
                                     reinterpret_cast<CV*>(second_values));
  const auto split = [&](void* t, std::size_t& b) {
    return radix_sort(t, b, split_keys, split_values, n, 64 - bits, 64);
  };
  // The buckets the finish lists; any non-null address marks them as segmented for the
  // query, which reads no offsets.
  const std::uint64_t buckets = std::uint64_t{1} << bits;
  index_math::segment_list segs{starts, ends, buckets, 0, 4};
  if (!temp) segs.begin = segs.end = keys ? static_cast<const void*>(keys) : &segs;
  const auto starts_scan = [&](void* t, std::size_t& b) {
    return cub::DeviceScan::InclusiveScan(t, b, starts, ms::maximum{},
                                          static_cast<std::uint32_t>(buckets + 1), stream);
  };
  // The rescue's radix sort of `c` keys (and values) from one buffer with another, on the
  // bits below the common prefix: the buffers holding the sorted keys and values come back.
  const auto rescue_sort = [&](void* t, std::size_t& b, K* at, K* other, V* values_at,
                               V* other_values, std::uint64_t c, int end_bit, K*& sorted,
                               V*& sorted_values) {
    cub::DoubleBuffer<K> k(at, other);
    cub::DoubleBuffer<CV> v(reinterpret_cast<CV*>(values_at), reinterpret_cast<CV*>(other_values));
    const cudaError_t r = radix_sort(t, b, k, v, c, 0, end_bit);
    sorted = k.Current();
    sorted_values = reinterpret_cast<V*>(v.Current());
    return r;
  };
  std::size_t reduce_bytes = 0, split_bytes = 0, scan_bytes = 0, bucket_bytes = 0;
  std::size_t rescue_bytes = 0, sizes_scan_bytes = 0;
  cudaError_t e = cub::DeviceReduce::TransformReduce(nullptr, reduce_bytes, keys, differing, n,
                                                     ms::bitwise_or{}, differs, std::uint64_t{0},
                                                     stream);
  if (e == cudaSuccess) e = split(nullptr, split_bytes);
  if (e == cudaSuccess) e = starts_scan(nullptr, scan_bytes);
  if (e == cudaSuccess)
    e = sort_buckets(nullptr, bucket_bytes, keys, values, n, segs, descending, stream);
  K* sorted = nullptr;
  V* sorted_values = nullptr;
  if (e == cudaSuccess && may_wait)
    e = rescue_sort(nullptr, rescue_bytes, keys, second_keys, values, second_values, n, 64,
                    sorted, sorted_values);
  if (e == cudaSuccess && may_wait)
    e = cub::DeviceScan::ExclusiveSum(nullptr, sizes_scan_bytes, starts,
                                      static_cast<std::uint32_t>(buckets + 1), stream);
  if (e != cudaSuccess) return e;
  const std::size_t rest_bytes = std::max(
      {reduce_bytes, split_bytes, scan_bytes, bucket_bytes, rescue_bytes, sizes_scan_bytes});
  const ms::layout at(n, sizeof(K), value_bytes, bits, rest_bytes);
  if (!temp) {
    temp_bytes = at.total;
    return cudaSuccess;
  }
  if (temp_bytes < at.total) return cudaErrorInvalidValue;

  unsigned frame_blocks = 0;
  e = grid_for(ms::frame_keys_kernel<K>, 256, 0, (n + 255) / 256, frame_blocks);
  std::size_t bytes = rest_bytes;
  if (e == cudaSuccess)
    e = cub::DeviceReduce::TransformReduce(rest, bytes, keys, differing, n, ms::bitwise_or{},
                                           differs, std::uint64_t{0}, stream);
  if (e != cudaSuccess) return e;
  ms::frame_keys_kernel<<<frame_blocks, 256, 0, stream>>>(keys, n, frame);
  e = cudaGetLastError();
  bytes = rest_bytes;
  if (e == cudaSuccess) e = split(rest, bytes);
  // The finish reads the split and writes the caller's arrays: an even number of digit
  // passes (16 bits or fewer) left the split in them, so it moves to the second buffers.
  if (e == cudaSuccess && split_keys.Current() == keys)
    e = cudaMemcpyAsync(second_keys, keys, sizeof(K) * n, cudaMemcpyDeviceToDevice, stream);
  if constexpr (pairs)
    if (e == cudaSuccess && split_values.Current() == reinterpret_cast<CV*>(values))
      e = cudaMemcpyAsync(second_values, values, sizeof(V) * n, cudaMemcpyDeviceToDevice,
                          stream);
  if (e != cudaSuccess) return e;
  const auto blocks = static_cast<unsigned>((n + 255) / 256);
  e = cudaMemsetAsync(starts, 0, sizeof(std::uint32_t) * (buckets + 1), stream);
  if (e != cudaSuccess) return e;
  ms::bucket_ends_kernel<<<blocks, 256, 0, stream>>>(second_keys, n, bits, descending, starts);
  e = cudaGetLastError();
  bytes = rest_bytes;
  if (e == cudaSuccess) e = starts_scan(rest, bytes);
  // No bucket listed for the segmented sort (ends = starts) until the finish lists one.
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(ends, starts, sizeof(std::uint32_t) * buckets, cudaMemcpyDeviceToDevice,
                        stream);
  if (e != cudaSuccess) return e;
  ms::finish_buckets_kernel<<<blocks, 256, 0, stream>>>(
      second_keys, second_values, n, bits, descending, frame, starts, ends, keys, values);
  e = cudaGetLastError();
  bytes = rest_bytes;
  // The rescue's first step: large buckets of different keys off the list, before the
  // segmented sort reads it; their sizes at the end of the second key buffer, free since the
  // finish read the split from it.
  const std::uint64_t sizes_at = index_math::msd_rescue_sizes_at(n, sizeof(K), buckets);
  auto* sizes = reinterpret_cast<std::uint32_t*>(reinterpret_cast<char*>(second_keys) + sizes_at);
  if (e == cudaSuccess && may_wait && sizes_at != 0) {
    const index_math::segment_classes classes{static_cast<int>(sizeof(K) + value_bytes)};
    const std::uint64_t long_min = (std::uint64_t{1} << classes.tile_max_bits()) + 1;
    e = cudaMemsetAsync(&frame->rescued, 0, sizeof(frame->rescued), stream);
    if (e == cudaSuccess) {
      const auto grid = static_cast<unsigned>((buckets + 1 + 255) / 256);
      ms::take_large_buckets_kernel<<<grid, 256, 0, stream>>>(starts, ends, buckets, long_min,
                                                              sizes, frame);
      e = cudaGetLastError();
    }
  }
  bytes = rest_bytes;
  if (e == cudaSuccess) e = sort_buckets(rest, bytes, keys, values, n, segs, descending, stream);
  if (e != cudaSuccess || !may_wait) return e;
  // The one wait: how many keys the large buckets hold (and the frame, for the sort's bits).
  ms::frame_words seen{};
  e = cudaMemcpyAsync(&seen, frame, sizeof(seen), cudaMemcpyDeviceToHost, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) return e;
  const std::uint64_t rescued = sizes_at != 0 ? seen.rescued : 0;
  const int end_bit = index_math::msd_rescue_end_bit(index_math::msd_shift(seen.differing));
  bytes = rest_bytes;
  if (rescued == 0) return cudaSuccess;
  if (!index_math::msd_rescue_gathers(rescued, n, sizeof(K), buckets)) {  // the whole array again
    e = rescue_sort(rest, bytes, keys, second_keys, values, second_values, n, end_bit, sorted,
                    sorted_values);
    if (e == cudaSuccess && sorted != keys)
      e = cudaMemcpyAsync(keys, sorted, sizeof(K) * n, cudaMemcpyDeviceToDevice, stream);
    if constexpr (pairs)
      if (e == cudaSuccess && sorted_values != values)
        e = cudaMemcpyAsync(values, sorted_values, sizeof(V) * n, cudaMemcpyDeviceToDevice,
                            stream);
    return e;
  }
  e = cub::DeviceScan::ExclusiveSum(rest, bytes, sizes, static_cast<std::uint32_t>(buckets + 1),
                                    stream);
  if (e != cudaSuccess) return e;
  ms::gather_rescued_kernel<<<blocks, 256, 0, stream>>>(keys, values, n, bits, descending, frame,
                                                        starts, sizes, second_keys,
                                                        second_values);
  e = cudaGetLastError();
  bytes = rest_bytes;
  if (e == cudaSuccess)
    e = rescue_sort(rest, bytes, second_keys, second_keys + rescued, second_values,
                    pairs ? second_values + rescued : nullptr, rescued, end_bit, sorted,
                    sorted_values);
  if (e != cudaSuccess) return e;
  ms::scatter_rescued_kernel<<<static_cast<unsigned>((rescued + 255) / 256), 256, 0, stream>>>(
      sorted, sorted_values, rescued, bits, descending, frame, starts, sizes, keys, values);
  return cudaGetLastError();
}

}  // namespace gpusort::detail::device
