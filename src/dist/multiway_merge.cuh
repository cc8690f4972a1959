// The one-pass merge of up to 8 sorted runs (gpusort::dist's merge of what a rank received):
// pivots' splits, every tile's split found in the window between the pivots around its start,
// then one block a tile merging its segments in shared memory. The index math and its CPU
// simulation: detail/index_math/multiway_merge.hpp, test_cpu_multiway_merge.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "dist_common.hpp"
#include "gpusort/detail/block/tile_merge.hpp"
#include "gpusort/detail/index_math/dist.hpp"
#include "gpusort/detail/index_math/multiway_merge.hpp"

namespace gpusort::dist::detail {

namespace math = gpusort::detail::index_math::dist;
namespace mm = gpusort::detail::index_math::multiway;

using gpusort::detail::block::run_set;

// Elements of a run between two pivots (a window's most per run).
inline constexpr std::uint64_t merge_pivot_gap = 1024;
inline constexpr int merge_threads = 256;
// Outputs a thread merges each round: 16 for 4-byte keys alone (tiles of 4,096 keys in 33 KiB
// of shared memory: half the tile splits of 8), else 8 (tiles of 2,048: 8-byte keys, or keys
// with their tile indices, in at most 34 KiB; a block's static shared memory stops at 48).
template <class K, class V>
inline constexpr int merge_items =
    sizeof(K) <= 4 && std::is_same_v<V, gpusort::detail::no_value> ? 16 : 8;
template <class K, class V>
inline constexpr int merge_tile = merge_threads * merge_items<K, V>;

// Pivot e (run by run: run q's pivots at positions 0, gap, 2 gap, ...): its merged position
// and its split (splits[e * count + r]).
template <class K, class V>
__global__ void pivot_splits_kernel(const __grid_constant__ run_set<K, V> runs,
                                    math::order_code<K> code, std::uint64_t pivots,
                                    std::uint64_t* positions, std::uint64_t* splits) {
  const std::uint64_t e = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  if (e >= pivots) return;
  int q = 0;
  std::uint64_t first = 0;
  while (first + mm::pivot_count(runs.length[q], merge_pivot_gap) <= e)
    first += mm::pivot_count(runs.length[q++], merge_pivot_gap);
  const std::uint64_t i = (e - first) * merge_pivot_gap;
  const auto code_of = [&](int r, std::uint64_t k) { return code(runs.keys[r][k]); };
  const std::uint64_t from[mm::max_runs] = {};
  std::uint64_t split[mm::max_runs];
  positions[e] = mm::split_at_element(code_of, runs.count, from, runs.length, q, i,
                                      code_of(q, i), split);
#pragma unroll
  for (int r = 0; r < mm::max_runs; ++r)  // unrolled: split stays in registers
    if (r < runs.count) splits[e * runs.count + r] = split[r];
}

// Tile t's split (t tiles, then the runs' lengths after the last), from the window between
// the pivots around its start: one thread a (tile, run).
template <class K, class V>
__global__ void tile_splits_kernel(const __grid_constant__ run_set<K, V> runs,
                                   math::order_code<K> code, const std::uint64_t* positions,
                                   const std::uint64_t* splits, std::uint64_t tiles,
                                   std::uint64_t* tile_splits) {
  const std::uint64_t g = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  const std::uint64_t t = g / runs.count;
  const int q = static_cast<int>(g % runs.count);
  if (t > tiles) return;
  std::uint64_t& out = tile_splits[t * runs.count + q];
  if (t == tiles) {
    out = runs.length[q];
    return;
  }
  const std::uint64_t d = t * merge_tile<K, V>;
  // Each run's pivots: their count and the first one's id (unrolled: in registers; a run past
  // the count has length 0, so no pivots).
  std::uint64_t first[mm::max_runs] = {}, count[mm::max_runs] = {}, id = 0;
#pragma unroll
  for (int r = 0; r < mm::max_runs; ++r) {
    first[r] = id;
    id += count[r] = mm::pivot_count(runs.length[r], merge_pivot_gap);
  }
  // The pivot at merged position 0 (the first element) is at or before every d.
  std::uint64_t before = 0, after = 0;
  const auto position = [&](std::uint64_t pivot) { return positions[pivot]; };
  mm::pivots_around(position, runs.count, first, count, d, &before, &after);
  const std::uint64_t* lo = splits + before * runs.count;
  const std::uint64_t* hi = after == mm::no_pivot ? runs.length : splits + after * runs.count;
  const auto code_of = [&](int r, std::uint64_t i) { return code(runs.keys[r][i]); };
  out = mm::split_of_run(code_of, runs.count, lo, hi, d, q);
}

// One block a tile (block/tile_merge.hpp), its phases between barriers.
template <class K, class V>
__global__ void __launch_bounds__(merge_threads)
    merge_tiles_kernel(const __grid_constant__ run_set<K, V> runs, math::order_code<K> code,
                       const std::uint64_t* tile_splits, K* out_keys, V* out_values) {
  using merge = gpusort::detail::block::tile_merge<K, V, math::order_code<K>, merge_tile<K, V>>;
  __shared__ typename merge::buffers shared;
  const std::uint64_t* begin = tile_splits + blockIdx.x * std::uint64_t(runs.count);
  merge tile(runs, code, begin, begin + runs.count, shared);
  tile.plan(threadIdx.x);
  __syncthreads();
  tile.load(threadIdx.x, merge_threads);
  __syncthreads();
  const int rounds = tile.rounds();
  for (int k = 0; k < rounds; ++k) {
    tile.round(threadIdx.x, k, merge_items<K, V>);
    __syncthreads();
  }
  const std::uint64_t d = blockIdx.x * std::uint64_t{merge_tile<K, V>};
  tile.write(threadIdx.x, merge_threads, out_keys + d, merge::pairs ? out_values + d : out_values);
}

inline unsigned merge_blocks_for(std::uint64_t threads_needed) {
  return static_cast<unsigned>((threads_needed + merge_threads - 1) / merge_threads);
}

// The runs (2 to mm::max_runs of them, none empty, in order; their lengths add up to total)
// merged into out_keys (and out_values) on `stream`, stable by run.
template <class K, class V>
void merge_runs_in_one_pass(const run_set<K, V>& runs, std::uint64_t total, K* out_keys,
                            V* out_values, math::order_code<K> code, cudaStream_t stream,
                            const std::string& call) {
  std::uint64_t pivots = 0;
  for (int q = 0; q < runs.count; ++q) pivots += mm::pivot_count(runs.length[q], merge_pivot_gap);
  const std::uint64_t tiles = (total + merge_tile<K, V> - 1) / merge_tile<K, V>;
  const auto r = static_cast<std::uint64_t>(runs.count);
  const std::string what = call + ": the merge's workspace";
  device_memory positions(sizeof(std::uint64_t) * pivots, stream, what);
  device_memory splits(sizeof(std::uint64_t) * pivots * r, stream, what);
  device_memory tile_splits(sizeof(std::uint64_t) * (tiles + 1) * r, stream, what);
  auto* position = static_cast<std::uint64_t*>(positions.get());
  auto* split = static_cast<std::uint64_t*>(splits.get());
  auto* tile_split = static_cast<std::uint64_t*>(tile_splits.get());
  pivot_splits_kernel<K, V><<<merge_blocks_for(pivots), merge_threads, 0, stream>>>(
      runs, code, pivots, position, split);
  check_cuda(cudaGetLastError(), call + ": the merge's pivots");
  tile_splits_kernel<K, V><<<merge_blocks_for((tiles + 1) * r), merge_threads, 0, stream>>>(
      runs, code, position, split, tiles, tile_split);
  check_cuda(cudaGetLastError(), call + ": the merge's tiles");
  merge_tiles_kernel<K, V><<<static_cast<unsigned>(tiles), merge_threads, 0, stream>>>(
      runs, code, tile_split, out_keys, out_values);
  check_cuda(cudaGetLastError(), call + ": merge");
}

}  // namespace gpusort::dist::detail
