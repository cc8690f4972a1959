// Device sample sort's policy (sample_sort.cuh holds the algorithm's description): the tile,
// the buckets a level and the final buckets' bound for each key and value type, and the levels
// they give for n keys (plan_for).
#pragma once

#include "gpusort/detail/block/bitonic_tile.cuh"
#include "gpusort/detail/index_math/sample_sort.hpp"
#include "gpusort/detail/index_math/segments.hpp"

namespace gpusort::detail::device {

using index_math::problem_list;
using index_math::sample;
using index_math::sample_level;

template <class K, class V>
struct sample_sort_policy {
  using bitonic = bitonic_policy<K, V, false>;
  static constexpr int slot_bytes = bitonic::slot_bytes;
  static constexpr int widest = block::has_values<K, V> && sizeof(V) > sizeof(K) ? sizeof(V) : sizeof(K);
  // Records (slots above 8 bytes) sort their tiles and final buckets with CUB's block merge
  // sort (stable, any comparator; measured 2.1x faster end to end for 16-byte records at
  // 2^24): items per thread in registers, 512 threads while a tile of the widest part fits
  // 32 KiB of shared memory. Keys of up to 8 bytes keep the bitonic tile network, whose
  // tiles are twice as long (fewer samples, fewer levels: measured faster at 2^24..2^28).
  static constexpr bool merge_tiles = slot_bytes > 8;
  static constexpr int items = slot_bytes <= 16 ? 4 : slot_bytes <= 32 ? 2 : 1;
  static constexpr int merge_threads = [] {
    int t = 512;
    while (t > 32 && t * items * widest > 32 * 1024) t /= 2;
    return t;
  }();
  static constexpr int threads = merge_tiles ? merge_threads : bitonic::tile_threads;
  static constexpr int tile_bits =
      merge_tiles ? std::bit_width(static_cast<unsigned>(merge_threads * items)) - 1 : bitonic::tile_bits;
  static constexpr int max_bucket_bits = 10;  // shared-memory tables of the count/scatter kernels
  // Records' tiles are short, so s near M would make almost every key a sample (and the
  // samples, with their merge sort's buffer, several times the records' bytes): by default a
  // sample per 16 records at least.
  static constexpr int sample_stride_bits = merge_tiles ? 4 : 0;
  // Randomized sampling takes several samples a bucket from each tile where a problem has few
  // tiles (index_math::thin_random_samples), for records down to that stride: a record bucket
  // above twice its mean overflows its tile. Keys' final buckets average a quarter of the
  // segmented sort's largest class, so keys keep a sample a bucket and tile.
  static constexpr int random_min_stride_bits = merge_tiles ? sample_stride_bits : 64;
  static constexpr int default_bucket_bits = std::min(8, tile_bits - sample_stride_bits);
  // A level may take up to this many bucket bits when that makes it the last one.
  static constexpr int finish_bucket_bits = std::min(10, tile_bits - sample_stride_bits);
  // Up to this many keys (the default plan) the whole sort is the in-place bitonic network, as
  // for one bucket: below it a level's six launches cost more than its work. One H200,
  // 3664cce (docs/results/h200-sample-sort-crossover.csv), bitonic against the levels: u32
  // 2^21 0.162 ms against 0.247, 2^22 0.278 against 0.373, 2^24 1.33 against 1.33; u64 2^22
  // 0.908 against 0.984, 2^24 4.07 against 3.86; u32/u32 pairs 2^21 0.352 against 0.421.
  // Records keep their levels (rec32 2^20: 2.31 ms bitonic, 0.99 sample sort).
  static constexpr index_t whole_bitonic_max = merge_tiles ? 0 : index_t{1} << 22;
  // automatic with a user comparator (sort.cuh) runs CUB's merge sort up to this many keys
  // (slots of up to 8 bytes, a key and its value: always),
  // where its workspace is available: one NVIDIA H200, 9ce309f (docs/sample_sort.md, rows in
  // docs/results/h200-sample-sort-9ce309f.csv), this sort against CUB's merge sort: records
  // 0.3-0.8x from 2^12 to 2^20, at 2^22 1.08x (16 bytes), 0.82x (32), 0.91x (u64 pairs), and
  // 1.17-1.52x at 2^24-2^26; keys of up to 8 bytes at most 0.9x below 2^24 (u64 2^16 and
  // 2^20 0.48x, the bitonic network), 0.89-1.03x from 2^24 to 2^28 (u32, u64, u32 pairs).
  static constexpr index_t automatic_merge_max =
      merge_tiles ? index_t{1} << 22 : ~index_t{0};
  // Final buckets sorted by one block: a merge-sorted tile, or the segmented sort's classes.
  static constexpr index_t final_cap =
      merge_tiles ? index_t{1} << tile_bits
                  : index_t{1} << index_math::segment_classes{slot_bytes}.tile_max_bits();
};

// The levels for n keys; bucket_bits 0: the measured default, else s = 2^bucket_bits.
template <class K, class V>
index_math::sample_plan plan_for(index_t n, int bucket_bits) {
  using policy = sample_sort_policy<K, V>;
  if (bucket_bits > 0)
    return index_math::plan_sample_sort(n, policy::tile_bits, policy::final_cap, bucket_bits);
  return index_math::plan_sample_sort(n, policy::tile_bits, policy::final_cap,
                                   policy::default_bucket_bits, policy::finish_bucket_bits);
}

}  // namespace gpusort::detail::device
