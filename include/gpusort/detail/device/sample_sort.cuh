// Device sample sort: Dehne & Zaboli's deterministic GPU Bucket Sort (Algorithm 1), and with
// random samples Leischner et al.'s randomized sample sort; the levels are planned by
// index_math::plan_sample_sort.
//
// Schedule of one level (its problems are contiguous ranges of keys):
//  1. sample_tile_kernel: a block sorts each tile of M keys on chip (keys of up to 8 bytes:
//     the bitonic tile network; records: CUB's block merge sort), writes it to the buffer and
//     takes s samples (one per stride, or at random): one read and one write of the keys;
//  2. the samples of all problems are sorted at once by (problem, key, position) with CUB's
//     merge sort (about n / 64 samples for 4-byte keys);
//  3. sample_count_kernel: every tile locates the s - 1 splitters of its problem by binary
//     search (equal keys split by position), writes its bucket sizes, bucket-major (the
//     paper's column order), and keeps the s positions for step 5;
//  4. an exclusive scan of those counts (CUB) gives every tile's place in every bucket;
//  5. sample_scatter_kernel: each tile's runs move to their buckets, from the buffer back to
//     the keys: one read and one write.
// Randomized sampling (Leischner et al.) sorts no tile: step 1 takes random samples of each
// tile as it is, step 3 classifies every key by a descent of the splitters and keeps its
// bucket (classify_count_kernel), and step 5 (classify_scatter_kernel) moves the keys by those
// buckets from keys to the buffer or back (levels take turns; after an odd number a copy
// brings them home).
// The buckets of a level are the problems of the next. The last level's buckets, at most
// final_cap keys by the sampling bound, are each that level's sorted runs (one per tile
// slot): one block merges them (merge_bucket_runs_kernel). Under randomized sampling they are
// sorted one block each instead: by the segmented sort, or for records by
// sample_bucket_kernel, which lists a bucket that came out larger than a tile (up to twice it)
// for sample_twice_tile_kernel and leaves a larger one to the segmented sort.
// Levels always sort ascending; a descending sort mirrors the last scatter (position i goes to
// n - 1 - i) and sorts the final buckets descending.
// Workspace: one buffer of n keys (and values), n / stride samples and their merge sort's
// buffer, and the count matrix with its splitter positions (12 bytes per entry, n s / M
// entries at most); randomized sampling keeps each key's bucket instead (2 bytes a key).
// Three headers, in CUB's manner: sample_sort_policy.cuh (sizes and levels),
// sample_sort_kernels.cuh (the kernels), and this one (the workspace and the dispatch).
#pragma once

#include <algorithm>
#include <bit>

#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "gpusort/detail/device/bitonic.cuh"
#include "gpusort/detail/device/launch.cuh"
#include "gpusort/detail/device/sample_sort_kernels.cuh"
#include "gpusort/detail/device/sample_sort_policy.cuh"
#include "gpusort/detail/index_math/sample_sort.hpp"

namespace gpusort::detail::device {

// Where the workspace's parts lie; sizes follow the plan.
template <class K, class V>
struct sample_workspace {
  K* keys = nullptr;
  V* values = nullptr;
  sample<K>* samples = nullptr;
  index_t* counts[2] = {};
  unsigned* tile_bounds = nullptr;  // regular sampling
  std::uint16_t* buckets = nullptr;  // randomized sampling: each key's bucket at a level
  index_t* segment_begin = nullptr;
  index_t* segment_end = nullptr;
  index_t* twice_list = nullptr;  // records: final buckets of up to twice a tile, and how many
  unsigned* twice_listed = nullptr;
  void* scratch = nullptr;  // CUB's scan, then the segmented sort
  std::size_t scratch_bytes = 0;
  std::size_t total = 0;

  sample_workspace(void* base, const index_math::sample_plan& plan, index_t n, bool random,
                   std::size_t scan_bytes, std::size_t segment_bytes) {
    index_t max_samples = 0, max_counts = 0;
    for (int l = 0; l < plan.count; ++l) {
      const sample_level& lv = plan.levels[l];
      max_samples = std::max(max_samples, lv.sample_slots(n));
      max_counts = std::max(max_counts, lv.counts());
    }
    scratch_bytes = std::max(scan_bytes, segment_bytes);
    auto* p = static_cast<char*>(base);
    auto take = [&](auto*& ptr, std::size_t bytes) {
      ptr = reinterpret_cast<std::remove_reference_t<decltype(ptr)>>(p ? p + total : nullptr);
      total += (bytes + 255) / 256 * 256;
    };
    take(keys, sizeof(K) * n);
    if constexpr (block::has_values<K, V>) take(values, sizeof(V) * n);
    take(samples, sizeof(sample<K>) * max_samples);
    take(counts[0], sizeof(index_t) * max_counts);
    take(counts[1], sizeof(index_t) * max_counts);
    take(tile_bounds, random ? 0 : sizeof(unsigned) * max_counts);
    take(buckets, random ? sizeof(std::uint16_t) * n : 0);
    take(segment_begin, sizeof(index_t) * plan.final_problems);
    take(segment_end, sizeof(index_t) * plan.final_problems);
    if constexpr (sample_sort_policy<K, V>::merge_tiles) {
      take(twice_list, sizeof(index_t) * plan.final_problems);
      take(twice_listed, sizeof(unsigned));
    }
    take(scratch, scratch_bytes);
  }
};

struct sample_sort_knobs {
  int bucket_bits = 0;  // 0: the policy's default
  bool random = false;
  index_t seed = 0x5EED;
  unsigned long long* largest_bucket = nullptr;  // test hook: device array, one per level
};

// Randomized sampling's samples for a plan: how many each tile gives
// (index_math::thin_random_samples), and each level's sorted_cap (index_math::block_sorted_cap): its
// problems' samples sorted one block a problem, or all of them by CUB's device merge sort (0).
template <class K, class V>
index_math::sample_plan with_random_samples(index_math::sample_plan plan) {
  using samples_t = problem_sample_sort<K>;
  plan = index_math::thin_random_samples(plan, sample_sort_policy<K, V>::random_min_stride_bits);
  for (int l = 0; l < plan.count; ++l)
    plan.levels[l].sorted_cap = index_math::block_sorted_cap(
        plan.levels[l], samples_t::template cap<samples_t::small_threads>,
        samples_t::template cap<samples_t::large_threads>);
  return plan;
}

// Randomized sampling's default levels, planned by the buckets' mean: at most 2^10 buckets a
// level (the classifying kernels' tables), and at most a sixteenth of what the large block
// of sort_problem_samples_kernel sorts (16 samples a bucket at least); records' final buckets
// at half their tile on average, keys' at a quarter of the segmented sort's largest class.
template <class K, class V>
index_math::sample_plan random_plan_for(index_t n) {
  using policy = sample_sort_policy<K, V>;
  using samples_t = problem_sample_sort<K>;
  constexpr int bits = std::min<int>(
      policy::max_bucket_bits,
      std::bit_width(static_cast<unsigned>(samples_t::template cap<samples_t::large_threads> / 16)) - 1);
  return index_math::plan_random_sample_sort(n, policy::tile_bits, policy::final_cap, bits,
                                          policy::merge_tiles ? 2 : 4);
}

// Records' final buckets: one block each where they fit a tile; with `overflow` (buckets may
// exceed their tile) those of up to twice a tile next, by sample_twice_tile_kernel.
template <class Policy, class K, class V, class Compare>
cudaError_t sort_record_buckets(K* keys, V* values, const problem_list& buckets, bool mirror,
                                const sample_workspace<K, V>& ws, bool overflow, Compare comp,
                                cudaStream_t stream) {
  cudaError_t e = cudaMemsetAsync(ws.twice_listed, 0, sizeof(unsigned), stream);
  if (e != cudaSuccess) return e;
  sample_bucket_kernel<Policy><<<static_cast<unsigned>(buckets.count), Policy::threads, 0,
                                 stream>>>(keys, values, buckets, mirror, ws.segment_begin,
                                           ws.segment_end, ws.twice_list, ws.twice_listed, comp);
  e = cudaGetLastError();
  if (e != cudaSuccess || !overflow || twice_tile_cap<Policy, K, V> == Policy::final_cap) return e;
  auto twice = sample_twice_tile_kernel<Policy, K, V, Compare>;
  constexpr int smem_bytes = twice_tile_smem<Policy, K, V>;
  unsigned blocks = 0;
  e = resident_blocks(twice, Policy::threads, smem_bytes, blocks);
  if (e != cudaSuccess) return e;
  twice<<<blocks, Policy::threads, smem_bytes, stream>>>(keys, values, buckets, mirror,
                                                         ws.twice_list, ws.twice_listed, comp);
  return cudaGetLastError();
}

// SortBuckets: the segmented sort that sorts the final buckets, called as
// sort_buckets(temp, temp_bytes, keys, values, n, segment_list, descending, stream).
template <class K, class V, class Compare, class SortBuckets>
cudaError_t sample_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values, index_t n,
                        Compare comp, bool descending, const sample_sort_knobs& knobs,
                        SortBuckets sort_buckets, cudaStream_t stream) {
  using policy = sample_sort_policy<K, V>;
  if (knobs.bucket_bits > policy::max_bucket_bits) return cudaErrorInvalidValue;
  index_math::sample_plan plan = knobs.random && knobs.bucket_bits == 0 ? random_plan_for<K, V>(n)
                                                                    : plan_for<K, V>(n, knobs.bucket_bits);
  if (knobs.random) plan = with_random_samples<K, V>(plan);
  if (plan.count == 0 || (knobs.bucket_bits == 0 && n <= policy::whole_bitonic_max)) {
    // one bucket, or few keys: no workspace
    if (!temp) {
      temp_bytes = 0;
      return cudaSuccess;
    }
    return bitonic_sort(keys, values, n, comp, descending, stream);
  }
  // Scratch sizes: the scan of the largest count matrix, the device merge sort of the most
  // samples (levels not sorting theirs by blocks), and the final segmented sort (they run one
  // after another).
  index_t max_counts = 0, max_samples = 0;
  for (int l = 0; l < plan.count; ++l) {
    max_counts = std::max(max_counts, plan.levels[l].counts());
    if (plan.levels[l].sorted_cap == 0)
      max_samples = std::max(max_samples, plan.levels[l].sample_slots(n));
  }
  std::size_t scan_bytes = 0, samples_bytes = 0, segment_bytes = 0;
  const index_math::sample_less<Compare> by_sample{comp};
  cudaError_t e = cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, static_cast<index_t*>(nullptr),
                                                static_cast<index_t*>(nullptr), max_counts, stream);
  if (e == cudaSuccess && max_samples > 0)
    e = cub::DeviceMergeSort::SortKeys(nullptr, samples_bytes, static_cast<sample<K>*>(nullptr),
                                       max_samples, by_sample, stream);
  scan_bytes = std::max(scan_bytes, samples_bytes);
  const index_math::segment_list final_segments{nullptr, nullptr, plan.final_problems, 0, 8};
  index_math::segment_list query = final_segments;
  // Any non-null address marks a segmented (not batched) shape; the query reads no offsets.
  // The keys' address passes the query's checks as device memory; a caller sizing the
  // workspace before its arrays exist passes none, and the segmented query then checks none.
  query.begin = query.end = keys ? static_cast<const void*>(keys)
                                 : static_cast<const void*>(&final_segments);
  // Under regular sampling each final bucket is sorted runs, one per tile slot of the last
  // level, and at most final_cap keys: merged from them (merge_bucket_runs_kernel), with no
  // segmented sort, where the runs are few enough (most_merged_runs). Randomized sampling (a
  // slot may hold several tiles, a bucket overflow), more runs, or a plan that ran out of
  // levels sorts them instead: records' by one block each (sample_bucket_kernel) where they
  // fit a tile, the rest by the segmented sort.
  constexpr std::size_t merge_smem = merge_bucket_smem_bytes<K, V>(policy::final_cap);
  const bool merge_runs = !knobs.random && plan.final_cap <= policy::final_cap &&
                          plan.levels[plan.count - 1].tiles() <=
                              (policy::merge_tiles ? most_merged_runs : most_merged_key_runs) &&
                          merge_smem + merge_bucket_static_smem <= 200 * 1024;
  const bool buckets_fit = merge_runs || (policy::merge_tiles && !knobs.random &&
                                          plan.final_cap <= policy::final_cap);
  if (e == cudaSuccess && !buckets_fit)
    e = sort_buckets(nullptr, segment_bytes, keys, values, n, query, descending, stream);
  if (e != cudaSuccess) return e;
  sample_workspace<K, V> ws(nullptr, plan, n, knobs.random, scan_bytes, segment_bytes);
  if (!temp) {
    temp_bytes = ws.total;
    return cudaSuccess;
  }
  if (temp_bytes < ws.total) return cudaErrorInvalidValue;
  ws = sample_workspace<K, V>(temp, plan, n, knobs.random, scan_bytes, segment_bytes);

  constexpr int B = 1 << policy::max_bucket_bits;
  auto tile_kernel = sample_tile_kernel<policy, K, V, Compare>;
  constexpr int smem_bytes = policy::merge_tiles
                                 ? sizeof(typename tile_merge_sort<policy, K, V>::storage)
                                 : sizeof(block::tile_storage<K, V, policy::tile_bits>);
  if constexpr (smem_bytes > 48 * 1024) {
    e = cudaFuncSetAttribute(tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
    if (e != cudaSuccess) return e;
  }
  constexpr int scatter_smem = static_cast<int>(classify_scatter_smem<classifying_threads, B, K, V>);
  using samples_t = problem_sample_sort<K>;
  if (knobs.random) {  // opted in always: with the block scan's static part it may pass 48 KiB
    e = cudaFuncSetAttribute(classify_scatter_kernel<classifying_threads, B, K, V>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, scatter_smem);
    if (e == cudaSuccess)
      e = cudaFuncSetAttribute(sort_problem_samples_kernel<samples_t::large_threads, K, Compare>,
                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(samples_t::template smem<samples_t::large_threads>));
    if (e != cudaSuccess) return e;
  }
  // Every level sorts ascending; for a descending sort the last level's scatter mirrors the
  // buckets and the final sort runs descending, so the comparator needs no direction test.
  problem_list probs{nullptr, 1, 1, n};
  for (int l = 0; l < plan.count && e == cudaSuccess; ++l) {
    const sample_level& lv = plan.levels[l];
    const auto blocks = static_cast<unsigned>(lv.problems * lv.tiles());
    const bool mirror = descending && l + 1 == plan.count;
    index_t* counts = ws.counts[l % 2];
    // Randomized sampling: the tile kernel only samples (no shared memory), the keys are
    // classified instead of located in sorted tiles, and each level moves them from one of
    // keys and the buffer to the other (from_keys: this level reads keys).
    const bool from_keys = !knobs.random || l % 2 == 0;
    K* level_keys = from_keys ? keys : ws.keys;
    V* level_values = from_keys ? values : ws.values;
    tile_kernel<<<blocks, policy::threads, knobs.random ? 0 : smem_bytes, stream>>>(
        level_keys, level_values, ws.keys, ws.values, probs, lv, ws.samples, knobs.random,
        knobs.seed + static_cast<index_t>(l), comp);
    e = cudaGetLastError();
    std::size_t bytes = ws.scratch_bytes;
    if (e == cudaSuccess && lv.sorted_cap == 0)
      e = cub::DeviceMergeSort::SortKeys(ws.scratch, bytes, ws.samples, lv.sample_slots(n),
                                         by_sample, stream);
    else if (e == cudaSuccess) {
      // One block a problem: the small block where the level's problems fit it.
      const auto sort_samples = [&]<int THREADS>() {
        sort_problem_samples_kernel<THREADS, K>
            <<<static_cast<unsigned>(lv.problems), THREADS, samples_t::template smem<THREADS>,
               stream>>>(ws.samples, probs, lv, by_sample);
      };
      if (lv.sorted_cap == samples_t::template cap<samples_t::small_threads>)
        sort_samples.template operator()<samples_t::small_threads>();
      else
        sort_samples.template operator()<samples_t::large_threads>();
      e = cudaGetLastError();
    }
    if (e != cudaSuccess) break;
    if (knobs.random)
      classify_count_kernel<classifying_threads, B><<<blocks, classifying_threads, 0, stream>>>(
          level_keys, probs, lv, ws.samples, counts, ws.buckets, comp);
    else
      sample_count_kernel<policy::threads, B><<<blocks, policy::threads, 0, stream>>>(
          ws.keys, probs, lv, ws.samples, counts, ws.tile_bounds, comp);
    e = cudaGetLastError();
    bytes = ws.scratch_bytes;
    if (e == cudaSuccess)
      e = cub::DeviceScan::ExclusiveSum(ws.scratch, bytes, counts, counts, lv.counts(), stream);
    if (e != cudaSuccess) break;
    if (knobs.random)
      classify_scatter_kernel<classifying_threads, B><<<blocks, classifying_threads,
                                                        scatter_smem, stream>>>(
          level_keys, level_values, from_keys ? ws.keys : keys, from_keys ? ws.values : values,
          probs, lv, ws.buckets, counts, mirror);
    else
      sample_scatter_kernel<policy::threads, B><<<blocks, policy::threads, 0, stream>>>(
          ws.keys, ws.values, keys, values, probs, lv, ws.samples, counts, ws.tile_bounds, mirror,
          comp);
    e = cudaGetLastError();
    probs = problem_list{counts, lv.tiles(), lv.problems * lv.buckets(), n};
    if (e == cudaSuccess && knobs.largest_bucket) {
      bucket_segments_kernel<<<static_cast<unsigned>((probs.count + 255) / 256), 256, 0, stream>>>(
          probs, false, nullptr, nullptr, knobs.largest_bucket + l);
      e = cudaGetLastError();
    }
  }
  if (e != cudaSuccess) return e;
  if (knobs.random && plan.count % 2 == 1) {  // the last level wrote the buffer
    e = cudaMemcpyAsync(keys, ws.keys, sizeof(K) * n, cudaMemcpyDeviceToDevice, stream);
    if constexpr (block::has_values<K, V>)
      if (e == cudaSuccess)
        e = cudaMemcpyAsync(values, ws.values, sizeof(V) * n, cudaMemcpyDeviceToDevice, stream);
    if (e != cudaSuccess) return e;
  }
  if (merge_runs) {
    const auto blocks = static_cast<unsigned>(probs.count);
    auto launch = [&](auto order) {
      auto kernel = merge_bucket_runs_kernel<policy::threads, K, V, decltype(order)>;
      cudaError_t status = cudaSuccess;
      // The opt-in counts the static part too: 48 KiB of buffers (u32 keys with 8-byte
      // values, tiles of 2,048) plus the run bounds are past the default limit.
      if constexpr (merge_smem + merge_bucket_static_smem > 48 * 1024)
        status = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(merge_smem));
      if (status != cudaSuccess) return status;
      kernel<<<blocks, policy::threads, merge_smem, stream>>>(keys, values, probs,
                                                              policy::final_cap, descending, order);
      return cudaGetLastError();
    };
    return descending ? launch(index_math::reversed<Compare>{comp}) : launch(comp);
  }
  if constexpr (policy::merge_tiles) {
    e = descending ? sort_record_buckets<policy>(keys, values, probs, true, ws, !buckets_fit,
                                                 index_math::reversed<Compare>{comp}, stream)
                   : sort_record_buckets<policy>(keys, values, probs, false, ws, !buckets_fit,
                                                 comp, stream);
    if (e != cudaSuccess || buckets_fit) return e;
  } else {
    bucket_segments_kernel<<<static_cast<unsigned>((probs.count + 255) / 256), 256, 0, stream>>>(
        probs, descending, ws.segment_begin, ws.segment_end, nullptr);
    e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  index_math::segment_list segs = final_segments;
  segs.begin = ws.segment_begin;
  segs.end = ws.segment_end;
  std::size_t bytes = ws.scratch_bytes;
  return sort_buckets(ws.scratch, bytes, keys, values, n, segs, descending, stream);
}

}  // namespace gpusort::detail::device
