// Approximate sort's policy (approx.cuh holds the schedule): the call's configuration, the
// tile and counter shapes, the interval mappers (linear, and sampled splitters), and which
// top-k path takes which rows.
#pragma once

#include <cstdint>

#include "gpusort/detail/block/bitonic_tile.cuh"
#include "gpusort/detail/device/bitonic.cuh"
#include "gpusort/detail/index_math/approx.hpp"
#include "gpusort/detail/index_math/sample_sort.hpp"

namespace gpusort::detail::device {

using index_math::ordered_t;

struct approx_config {
  std::uint32_t intervals = index_math::default_intervals;
  bool sampled = false;
  bool descending = false;
  bool in_order = true;  // top_k: the k sorted; else (select_k) in no order, with no sort
};

template <class K, class V>
struct approx_policy {
  static constexpr int threads = 512;
  static constexpr int slot_bytes = sizeof(K) + (block::has_values<K, V> ? sizeof(V) : 0);
  // 16384-key tiles (32 items) measured 10% slower than 8192 at 2^26 u32 keys, K = 10^4.
  static constexpr int items = slot_bytes <= 8 ? 16 : 8;
  static constexpr index_t tile = index_t{threads} * items;
};

// Counters in shared memory (32-bit, so positions below 2^32) or global 64-bit atomics.
constexpr bool shared_counters(index_t n, std::uint32_t intervals) {
  return intervals <= index_math::shared_intervals_max && n < (index_t{1} << 32);
}

// Shared words of the per-interval counters, rounded so that what follows is 16-byte aligned.
GPUSORT_HD constexpr std::uint32_t counter_words(std::uint32_t intervals) {
  return (intervals + 3) / 4 * 4;
}

// offsets[j] = counts[0] + ... + counts[j - 1] for j <= intervals, and the cursors (the
// counters, overwritten) start there. One block.
constexpr int offsets_threads = 1024;

// ---- interval mappers -------------------------------------------------------------------

template <class K>
struct linear_mapper {
  const ordered_t<K>* extremes;  // [min, max] of the finite keys' ordered bits
  std::uint32_t intervals;
  bool descending;

  struct bound {
    index_math::linear_projection<K> proj;
    bool descending;
    __device__ std::uint32_t operator()(K key, index_t) const {
      return index_math::directed_interval(proj(key), proj.intervals, descending);
    }
  };
  std::size_t shared_bytes() const { return 0; }
  __device__ bound bind(void*) const {
    return {index_math::linear_projection<K>::make(extremes[0], extremes[1], intervals), descending};
  }
};

template <class K>
struct sampled_mapper {
  const K* tree_keys;  // node 1 .. 2^levels - 1
  const index_t* tree_pos;
  int levels;
  std::uint32_t intervals;
  bool descending;

  // The tree goes to shared memory where it fits: the lower levels are read at random, and
  // shared memory serves 32 scattered words at once where the L1 cache does not.
  static constexpr std::size_t shared_tree_max = 64 * 1024;
  std::size_t shared_bytes() const {
    const std::size_t bytes = sizeof(K) << levels;
    return bytes <= shared_tree_max ? bytes : 0;
  }
  // Every thread of the block must call it (it copies the tree and waits).
  __device__ sampled_mapper bind(void* smem) const {
    if ((sizeof(K) << levels) > shared_tree_max) return *this;
    K* tree = static_cast<K*>(smem);
    for (std::uint32_t i = threadIdx.x; i < (1u << levels); i += blockDim.x) tree[i] = tree_keys[i];
    __syncthreads();
    sampled_mapper bound = *this;
    bound.tree_keys = tree;
    return bound;
  }
  __device__ std::uint32_t operator()(K key, index_t pos) const {
    const less<K> lt;
    const std::uint32_t i = index_math::descend(levels, [&](std::uint32_t node) {
      const K s = tree_keys[node];
      if (lt(s, key)) return true;
      if (lt(key, s)) return false;
      return __ldg(tree_pos + node) < pos;
    });
    return index_math::directed_interval(i, intervals, descending);
  }
};

using index_math::candidate_bound;

// Rows that one warp reduces to their k first keys (block/warp_top_k.cuh) rather than the
// batched sort: k up to a warp, enough rows to fill the GPU with warps, and rows long enough
// that few of their keys become candidates. On the H100 (2^24 keys, k = 32) it won from rows
// of 256 for every key type, with or without values, and lost in rows of 32 to 128, where
// almost every key is a candidate (docs/approx.md).
constexpr index_t warp_top_k_most_k = 32, warp_top_k_least_rows = 2048,
                  warp_top_k_least_row_length = 256;
constexpr bool warp_top_k_fits(index_t rows, index_t row_length, index_t k) {
  return k <= warp_top_k_most_k && rows >= warp_top_k_least_rows &&
         row_length >= warp_top_k_least_row_length;
}

}  // namespace gpusort::detail::device
