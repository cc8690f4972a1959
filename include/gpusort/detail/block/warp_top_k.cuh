// The k <= 32 first keys of a row by one warp (top_k_rows for many rows and small k). The
// warp keeps the 32 best (code, column) pairs merged so far, one per lane in order. Each key of
// the row is compared with the k-th best only; the few that beat it (about k (1 + ln(row / k))
// of a random row) are gathered in a per-warp buffer in shared memory (ballot, prefix count),
// and each 32 gathered are sorted the other way across the lanes (a bitonic sort), lane i keeps
// the better of its two (a bitonic sequence that holds the best 32 of both lists) and a bitonic
// merge puts them in order. So most keys cost a load, a comparison and a vote, where a sort of
// the row would cost more than log2(row)^2 / 2 exchanges.
// Keys are compared as unsigned codes of the same order (key_traits::ordered: every NaN one
// code, so NaNs tie), complemented when descending, and ties go by column: the result is the
// prefix of the row's stable sort. The keys and values themselves are read once more, by
// column, as the k winners are written: nothing but the code and the column moves in between.
#pragma once

#include <cstdint>

#include "gpusort/detail/block/bitonic_tile.cuh"
#include "gpusort/detail/block/warp_bitonic_sort.cuh"
#include "gpusort/key_traits.hpp"

namespace gpusort::detail::block {

// A key of a row as the selection compares it: (code, column) in lexicographic order.
template <class K>
struct ranked_key {
  using code_type = typename key_traits<K>::ordered_type;
  static constexpr std::uint32_t no_column = 0xffffffffu;
  code_type code;
  std::uint32_t column;

  // After every key of the row, in either order.
  __device__ __forceinline__ static ranked_key padding() { return {~code_type{0}, no_column}; }
  __device__ __forceinline__ static ranked_key of(K key, std::uint32_t column, bool descending) {
    const code_type code = key_traits<K>::ordered(key);
    return {descending ? static_cast<code_type>(~code) : code, column};
  }
  __device__ __forceinline__ bool goes_before(const ranked_key& other) const {
    return code < other.code || (code == other.code && column < other.column);
  }
};

template <class K>
__device__ __forceinline__ ranked_key<K> shuffle_ranked(const ranked_key<K>& x, int mask) {
  return {shuffle_xor(x.code, mask), __shfl_xor_sync(0xffffffffu, x.column, mask)};
}

// Lanes l and l ^ mask swap what they hold if out of order: the one with `keeps_first` ends
// with the pair's first. Columns make the order strict, so both lanes agree.
template <class K>
__device__ __forceinline__ void exchange_across(ranked_key<K>& x, int mask, bool keeps_first) {
  const ranked_key<K> other = shuffle_ranked(x, mask);
  if (other.goes_before(x) == keeps_first) x = other;
}

// Bitonic sort of the warp's 32 ranked keys, one per lane: lane 0 first (ascending) or last.
template <class K>
__device__ __forceinline__ void warp_sort_ranked(ranked_key<K>& x, unsigned lane, bool ascending) {
#pragma unroll
  for (unsigned size = 2; size <= 32; size <<= 1) {
    const bool run_ascending = ((lane & size) == 0) == ascending;  // size 32: the whole warp
#pragma unroll
    for (unsigned mask = size >> 1; mask > 0; mask >>= 1)
      exchange_across(x, static_cast<int>(mask), ((lane & mask) == 0) == run_ascending);
  }
}

// A bitonic sequence across the warp put in order, lane 0 first.
template <class K>
__device__ __forceinline__ void warp_merge_ranked(ranked_key<K>& x, unsigned lane) {
#pragma unroll
  for (unsigned mask = 16; mask > 0; mask >>= 1)
    exchange_across(x, static_cast<int>(mask), (lane & mask) == 0);
}

// Rows of up to 2^32 - 1 keys; one warp per row, WARPS rows per block, grid-stride.
template <int WARPS, class K, class V>
__global__ void __launch_bounds__(WARPS * 32)
    warp_top_k_rows_kernel(const K* keys, const V* values, std::uint64_t rows,
                           std::uint64_t row_length, K* out_keys, V* out_values, unsigned k,
                           bool descending) {
  using ranked = ranked_key<K>;
  // Below 32 gathered before a chunk, at most 32 more from it.
  __shared__ ranked gathered_keys[WARPS][64];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x / 32;
  ranked* const candidates = gathered_keys[warp];
  const std::uint64_t stride = std::uint64_t{gridDim.x} * WARPS;
  for (std::uint64_t row = std::uint64_t{blockIdx.x} * WARPS + warp; row < rows; row += stride) {
    const std::uint64_t first = row * row_length;
    ranked best = ranked::padding();
    ranked kth = best;     // the k-th best merged so far: padding until k are
    unsigned gathered = 0;  // the same in every lane
    const auto merge_candidates = [&](unsigned count) {
      __syncwarp();
      ranked x = lane < count ? candidates[lane] : ranked::padding();
      warp_sort_ranked(x, lane, false);
      if (x.goes_before(best)) best = x;
      warp_merge_ranked(best, lane);
      kth = {shuffle_from(best.code, static_cast<int>(k - 1)),
             __shfl_sync(0xffffffffu, best.column, static_cast<int>(k - 1))};
      __syncwarp();
    };
    for (std::uint64_t start = 0; start < row_length; start += 32) {
      const std::uint64_t column = start + lane;
      const ranked x = column < row_length
                           ? ranked::of(keys[first + column], static_cast<std::uint32_t>(column),
                                        descending)
                           : ranked::padding();
      const bool candidate = x.goes_before(kth);
      const unsigned votes = __ballot_sync(0xffffffffu, candidate);
      if (candidate) candidates[gathered + __popc(votes & ((1u << lane) - 1u))] = x;
      gathered += __popc(votes);
      if (gathered < 32) continue;
      merge_candidates(32);
      const bool overflow = lane + 32 < gathered;  // moves to the front of the buffer
      const ranked moved = overflow ? candidates[lane + 32] : ranked::padding();
      __syncwarp();
      if (overflow) candidates[lane] = moved;
      gathered -= 32;
    }
    if (gathered) merge_candidates(gathered);
    if (lane < k) {  // k <= row_length: a real column
      out_keys[row * k + lane] = keys[first + best.column];
      if constexpr (has_values<K, V>) out_values[row * k + lane] = values[first + best.column];
    }
    __syncwarp();  // the next row reuses the buffer
  }
}

}  // namespace gpusort::detail::block
