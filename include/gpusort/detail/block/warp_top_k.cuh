// The k <= 32 first keys of a row by one warp (top_k_rows for short rows and small k). The
// warp keeps the 32 best (key, column) pairs seen so far, one per lane in order. Each next 32
// keys of the row that hold one better than the 32nd best are sorted the other way across the
// lanes (a bitonic sort), lane i keeps the better of its two (a bitonic sequence that holds
// the best 32 of both lists) and a bitonic merge puts them in order: 21 exchanges per 32 keys
// where a full sort of the row would take more than log2(row)^2 / 2, and a chunk with nothing
// better than the 32nd best costs one vote. Columns break ties, so the result is the prefix
// of the row's stable sort.
#pragma once

#include <cstdint>

#include "gpusort/detail/block/bitonic_tile.cuh"
#include "gpusort/detail/block/warp_bitonic_sort.cuh"
#include "gpusort/key_traits.hpp"

namespace gpusort::detail::block {

inline constexpr std::uint32_t no_column = 0xffffffffu;  // padding: after every key

template <class K, class V>
struct ranked_key {
  K key;
  std::uint32_t column;
  V value;
};

// Whether a goes before b: by key (descending reverses), then by column; padding last.
template <class K, class V>
__device__ __forceinline__ bool goes_before(const ranked_key<K, V>& a, const ranked_key<K, V>& b,
                                            bool descending) {
  if (b.column == no_column) return a.column != no_column;
  if (a.column == no_column) return false;
  const gpusort::less<K> less;
  if (descending ? less(b.key, a.key) : less(a.key, b.key)) return true;
  if (descending ? less(a.key, b.key) : less(b.key, a.key)) return false;
  return a.column < b.column;
}

template <class K, class V>
__device__ __forceinline__ ranked_key<K, V> shuffle_ranked(const ranked_key<K, V>& x, int mask) {
  return {shuffle_xor(x.key, mask), __shfl_xor_sync(0xffffffffu, x.column, mask),
          shuffle_xor(x.value, mask)};
}

// Lanes l and l ^ mask swap what they hold if out of order: the one with `keeps_first` ends
// with the pair's first. Columns make the order strict, so both lanes agree.
template <class K, class V>
__device__ __forceinline__ void exchange_across(ranked_key<K, V>& x, int mask, bool keeps_first,
                                                bool descending) {
  const ranked_key<K, V> other = shuffle_ranked(x, mask);
  if (goes_before(other, x, descending) == keeps_first) x = other;
}

// Bitonic sort of the warp's 32 ranked keys, one per lane: lane 0 first (ascending) or last.
template <class K, class V>
__device__ __forceinline__ void warp_sort_ranked(ranked_key<K, V>& x, unsigned lane,
                                                 bool ascending, bool descending) {
#pragma unroll
  for (unsigned size = 2; size <= 32; size <<= 1) {
    const bool run_ascending = ((lane & size) == 0) == ascending;  // size 32: the whole warp
#pragma unroll
    for (unsigned mask = size >> 1; mask > 0; mask >>= 1)
      exchange_across(x, static_cast<int>(mask), ((lane & mask) == 0) == run_ascending, descending);
  }
}

// A bitonic sequence across the warp put in order, lane 0 first.
template <class K, class V>
__device__ __forceinline__ void warp_merge_ranked(ranked_key<K, V>& x, unsigned lane,
                                                  bool descending) {
#pragma unroll
  for (unsigned mask = 16; mask > 0; mask >>= 1)
    exchange_across(x, static_cast<int>(mask), (lane & mask) == 0, descending);
}

// Rows of up to 2^32 - 1 keys; one warp per row, WARPS rows per block, grid-stride.
template <int WARPS, class K, class V>
__global__ void __launch_bounds__(WARPS * 32)
    warp_top_k_rows_kernel(const K* keys, const V* values, std::uint64_t rows,
                           std::uint64_t row_length, K* out_keys, V* out_values, unsigned k,
                           bool descending) {
  const unsigned lane = threadIdx.x & 31u;
  const std::uint64_t stride = std::uint64_t{gridDim.x} * WARPS;
  for (std::uint64_t row = std::uint64_t{blockIdx.x} * WARPS + threadIdx.x / 32; row < rows;
       row += stride) {
    const std::uint64_t first = row * row_length;
    ranked_key<K, V> best{K{}, no_column, V{}};
    for (std::uint64_t start = 0; start < row_length; start += 32) {
      ranked_key<K, V> x{K{}, no_column, V{}};
      if (start + lane < row_length) {
        x.key = keys[first + start + lane];
        x.column = static_cast<std::uint32_t>(start + lane);
      }
      if (!__any_sync(0xffffffffu, goes_before(x, shuffle_from(best, 31), descending))) continue;
      if constexpr (has_values<K, V>)
        if (x.column != no_column) x.value = values[first + x.column];
      warp_sort_ranked(x, lane, false, descending);
      if (goes_before(x, best, descending)) best = x;
      warp_merge_ranked(best, lane, descending);
    }
    if (lane < k) {
      out_keys[row * k + lane] = best.key;
      if constexpr (has_values<K, V>) out_values[row * k + lane] = best.value;
    }
  }
}

}  // namespace gpusort::detail::block
