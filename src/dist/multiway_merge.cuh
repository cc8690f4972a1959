// The one-pass merge of up to 8 sorted runs (gpusort::dist's merge of what a rank received):
// pivots' splits, the pivots sorted by merged position (CUB's radix sort), every tile's split
// found in its window, then one block a tile merging its segments in shared memory. The index
// math and its CPU simulation: detail/index_math/multiway_merge.hpp, test_cpu_multiway_merge.
#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <cub/device/device_radix_sort.cuh>

#include "dist_common.hpp"
#include "gpusort/detail/index_math/dist.hpp"
#include "gpusort/detail/index_math/multiway_merge.hpp"

namespace gpusort::dist::detail {

namespace math = gpusort::detail::index_math::dist;
namespace mm = gpusort::detail::index_math::multiway;

// The runs, by value in each kernel's parameters.
template <class K, class V>
struct run_set {
  const K* keys[mm::max_runs] = {};
  const V* values[mm::max_runs] = {};
  std::uint64_t length[mm::max_runs] = {};
  int count = 0;
};

// Elements of a run between two pivots (a window's most per run).
inline constexpr std::uint64_t merge_pivot_gap = 1024;
inline constexpr int merge_threads = 256, merge_items = 8;
inline constexpr int merge_tile = merge_threads * merge_items;
static_assert(merge_tile <= 65536, "a tile's element indices are 16-bit");

// Pivot e (run by run: run q's pivots at positions 0, gap, 2 gap, ...): its merged position,
// its id and its split (splits[e * count + r]).
template <class K, class V>
__global__ void pivot_splits_kernel(run_set<K, V> runs, math::order_code<K> code,
                                    std::uint64_t pivots, std::uint64_t* positions,
                                    std::uint32_t* ids, std::uint64_t* splits) {
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
  ids[e] = static_cast<std::uint32_t>(e);
  for (int r = 0; r < runs.count; ++r) splits[e * runs.count + r] = split[r];
}

// Tile t's split (t tiles, then the runs' lengths after the last), from the window of the last
// pivot at or before its start: one thread a (tile, run).
template <class K, class V>
__global__ void tile_splits_kernel(run_set<K, V> runs, math::order_code<K> code,
                                   std::uint64_t pivots, const std::uint64_t* sorted_positions,
                                   const std::uint32_t* sorted_ids, const std::uint64_t* splits,
                                   std::uint64_t tiles, std::uint64_t* tile_splits) {
  const std::uint64_t g = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  const std::uint64_t t = g / runs.count;
  const int q = static_cast<int>(g % runs.count);
  if (t > tiles) return;
  std::uint64_t& out = tile_splits[t * runs.count + q];
  if (t == tiles) {
    out = runs.length[q];
    return;
  }
  const std::uint64_t d = t * merge_tile;
  // The pivot at merged position 0 (the first element) is at or before every d.
  const auto position = [&](std::uint64_t k) { return sorted_positions[k]; };
  const std::uint64_t k = mm::count_below(position, 0, pivots, d, true) - 1;
  const std::uint64_t* lo = splits + std::uint64_t{sorted_ids[k]} * runs.count;
  const std::uint64_t* hi =
      k + 1 < pivots ? splits + std::uint64_t{sorted_ids[k + 1]} * runs.count : runs.length;
  const auto code_of = [&](int r, std::uint64_t i) { return code(runs.keys[r][i]); };
  out = mm::split_of_run(code_of, runs.count, lo, hi, d, q);
}

// One block a tile: its segments (one a run, in run order) loaded into shared memory with the
// tile index each key came from, merged pairwise in rounds (every thread on its chunk of the
// round's outputs, whichever pair it falls in), and written out; values follow by the index.
template <class K, class V>
__global__ void __launch_bounds__(merge_threads)
    merge_tiles_kernel(run_set<K, V> runs, math::order_code<K> code,
                       const std::uint64_t* tile_splits, K* out_keys, V* out_values) {
  constexpr bool pairs = !std::is_same_v<V, gpusort::detail::no_value>;
  __shared__ K keys[2][merge_tile];
  __shared__ std::uint16_t from[2][merge_tile];
  const std::uint64_t* begin = tile_splits + blockIdx.x * std::uint64_t(runs.count);
  const std::uint64_t* end = begin + runs.count;
  const std::uint64_t d = blockIdx.x * std::uint64_t{merge_tile};
  // Segment s of the current round: [start[s], start[s] + length[s]) of the buffer.
  std::uint32_t start[mm::max_runs], length[mm::max_runs];
  std::uint32_t size = 0;
  for (int q = 0; q < runs.count; ++q) {
    start[q] = size;
    length[q] = static_cast<std::uint32_t>(end[q] - begin[q]);
    for (std::uint32_t x = threadIdx.x; x < length[q]; x += merge_threads) {
      keys[0][size + x] = runs.keys[q][begin[q] + x];
      from[0][size + x] = static_cast<std::uint16_t>(size + x);
    }
    size += length[q];
  }
  __syncthreads();
  int cur = 0, segments = runs.count;
  while (segments > 1) {
    const std::uint32_t x0 = threadIdx.x * merge_items;
    const std::uint32_t x1 = x0 + merge_items < size ? x0 + merge_items : size;
    for (int s = 0; s < segments; s += 2) {
      const std::uint32_t a = start[s], na = length[s];
      const std::uint32_t nb = s + 1 < segments ? length[s + 1] : 0;
      const std::uint32_t lo = x0 > a ? x0 : a, hi = x1 < a + na + nb ? x1 : a + na + nb;
      if (lo >= hi) continue;  // this thread's outputs are elsewhere
      const K* in = keys[cur];
      const auto a_code = [&](std::uint64_t i) { return code(in[a + i]); };
      const auto b_code = [&](std::uint64_t j) { return code(in[a + na + j]); };
      mm::merge_chunk(a_code, na, b_code, nb, lo - a, hi - lo,
                      [&](std::uint64_t k, bool from_a, std::uint64_t index) {
                        const std::uint32_t source = a + (from_a ? 0 : na) + index;
                        keys[1 - cur][lo + k] = in[source];
                        from[1 - cur][lo + k] = from[cur][source];
                      });
    }
    __syncthreads();
    for (int s = 0; s < segments; s += 2) {  // the pairs become the next round's segments
      start[s / 2] = start[s];
      length[s / 2] = length[s] + (s + 1 < segments ? length[s + 1] : 0);
    }
    segments = (segments + 1) / 2;
    cur = 1 - cur;
  }
  for (std::uint32_t x = threadIdx.x; x < size; x += merge_threads) {
    out_keys[d + x] = keys[cur][x];
    if constexpr (pairs) {
      const std::uint32_t source = from[cur][x];
      int q = 0;
      std::uint32_t first = 0;
      while (source >= first + static_cast<std::uint32_t>(end[q] - begin[q]))
        first += static_cast<std::uint32_t>(end[q] - begin[q]), ++q;
      out_values[d + x] = runs.values[q][begin[q] + (source - first)];
    }
  }
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
  if (pivots >= (std::uint64_t{1} << 32)) throw_internal(call + ": too many pivots to merge");
  const std::uint64_t tiles = (total + merge_tile - 1) / merge_tile;
  const auto r = static_cast<std::uint64_t>(runs.count);
  const int bits = std::bit_width(total);
  std::size_t sort_bytes = 0;
  std::uint64_t* no_positions = nullptr;
  std::uint32_t* no_ids = nullptr;
  check_cuda(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, no_positions, no_positions,
                                             no_ids, no_ids, pivots, 0, bits, stream),
             call + ": the merge's pivot sort");
  const std::string what = call + ": the merge's workspace";
  device_memory positions(sizeof(std::uint64_t) * 2 * pivots, stream, what);
  device_memory ids(sizeof(std::uint32_t) * 2 * pivots, stream, what);
  device_memory splits(sizeof(std::uint64_t) * pivots * r, stream, what);
  device_memory tile_splits(sizeof(std::uint64_t) * (tiles + 1) * r, stream, what);
  device_memory sort_temp(sort_bytes ? sort_bytes : 1, stream, what);
  auto* position = static_cast<std::uint64_t*>(positions.get());
  auto* id = static_cast<std::uint32_t*>(ids.get());
  auto* split = static_cast<std::uint64_t*>(splits.get());
  auto* tile_split = static_cast<std::uint64_t*>(tile_splits.get());
  pivot_splits_kernel<K, V><<<merge_blocks_for(pivots), merge_threads, 0, stream>>>(
      runs, code, pivots, position, id, split);
  check_cuda(cudaGetLastError(), call + ": the merge's pivots");
  check_cuda(cub::DeviceRadixSort::SortPairs(sort_temp.get(), sort_bytes, position,
                                             position + pivots, id, id + pivots, pivots, 0, bits,
                                             stream),
             call + ": the merge's pivot sort");
  tile_splits_kernel<K, V><<<merge_blocks_for((tiles + 1) * r), merge_threads, 0, stream>>>(
      runs, code, pivots, position + pivots, id + pivots, split, tiles, tile_split);
  check_cuda(cudaGetLastError(), call + ": the merge's tiles");
  merge_tiles_kernel<K, V><<<static_cast<unsigned>(tiles), merge_threads, 0, stream>>>(
      runs, code, tile_split, out_keys, out_values);
  check_cuda(cudaGetLastError(), call + ": merge");
}

}  // namespace gpusort::dist::detail
