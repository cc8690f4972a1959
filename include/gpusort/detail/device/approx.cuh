// Device approximate sort by interval projection (Xiao et al.), its exact refinement and
// top_k; the interval index math is index_math/approx.hpp.
//
// Schedule of approx_scatter (n keys, K intervals):
//  1. the mapping: linear: extremes_kernel, a min/max reduction (one read of the keys);
//     sampled: gather_samples_kernel takes 8 K samples, the device bitonic sort orders them by
//     (key, position), build_tree_kernel lays the splitters out as a search tree;
//  2. count_kernel: per-block histograms in shared memory, added to K global counters (one
//     read of the keys);
//  3. offsets_kernel: one block scans the counters into the caller's offsets and the cursors;
//  4. scatter_shared_kernel: every tile of 8192 keys (4096 for wide slots) ranks its keys within their intervals in shared
//     memory, reserves one run per non-empty interval with one global atomic, and writes each
//     key (and value) to its run (one read and one write).
// So 16 bytes per 4-byte key (12 in sampled mode), against the paper's atomic per key and
// four passes. Above 2^14 intervals, or from 2^32 keys, the counters do not fit in shared
// memory (or in 32 bits) and every key takes global atomics instead (the paper's way).
// Keys inside an interval come out in no particular order, which may differ between runs.
// Policies: approx_policy.cuh; kernels: approx_kernels.cuh; here, the workspace and the launches.
#pragma once

#include <algorithm>
#include <cstdint>

#include "gpusort/detail/block/warp_top_k.cuh"
#include "gpusort/detail/device/approx_kernels.cuh"
#include "gpusort/detail/device/bitonic.cuh"
#include "gpusort/detail/device/launch.cuh"
#include "gpusort/detail/device/radix_select.cuh"
#include "gpusort/detail/device/row_select.cuh"
#include "gpusort/detail/index_math/approx.hpp"
#include "gpusort/detail/index_math/sample_sort.hpp"
#include "gpusort/detail/index_math/segments.hpp"

namespace gpusort::detail::device {

// ---- workspace ----------------------------------------------------------------------------

struct bump {
  char* base;
  std::size_t total = 0;
  template <class T>
  T* take(std::size_t count) {
    T* p = base ? reinterpret_cast<T*>(base + total) : nullptr;
    total += (sizeof(T) * count + 255) / 256 * 256;
    return p;
  }
};

template <class K>
struct approx_workspace {
  using U = ordered_t<K>;
  U* extremes = nullptr;
  void* counts = nullptr;  // 32-bit (shared counters) or 64-bit
  index_math::sample<K>* samples = nullptr;
  K* tree_keys = nullptr;
  index_t* tree_pos = nullptr;
  index_t sample_count = 0;
  int levels = 0;
  std::size_t total = 0;

  approx_workspace(void* temp, index_t n, const approx_config& cfg) {
    bump b{static_cast<char*>(temp)};
    extremes = b.take<U>(2);
    counts = b.take<std::uint64_t>(cfg.intervals);
    if (cfg.sampled) {
      sample_count = index_math::sample_count(n, cfg.intervals);
      levels = index_math::tree_levels(cfg.intervals);
      samples = b.take<index_math::sample<K>>(sample_count);
      tree_keys = b.take<K>(index_t{1} << levels);
      tree_pos = b.take<index_t>(index_t{1} << levels);
    }
    total = b.total;
  }
};

inline unsigned blocks_for(index_t items, int threads) {
  return static_cast<unsigned>((items + threads - 1) / threads);
}

// Sampled mode: gathers the samples into ws.samples and sorts them by (key, position).
template <class K>
cudaError_t sort_samples(const K* keys, index_t n, const approx_workspace<K>& ws,
                         cudaStream_t stream) {
  gather_samples_kernel<<<blocks_for(ws.sample_count, 256), 256, 0, stream>>>(
      keys, n, ws.samples, ws.sample_count);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess)
    e = bitonic_sort(ws.samples, static_cast<no_value*>(nullptr), ws.sample_count,
                     index_math::sample_less<less<K>>{}, false, stream);
  return e;
}

// Prepares the mapper of cfg and calls use(mapper).
template <class K, class Use>
cudaError_t with_mapper(const K* keys, index_t n, const approx_config& cfg,
                        const approx_workspace<K>& ws, cudaStream_t stream, Use use) {
  using U = ordered_t<K>;
  cudaError_t e = cudaSuccess;
  if (!cfg.sampled) {
    constexpr int threads = 256;
    e = cudaMemsetAsync(ws.extremes, 0xff, sizeof(U), stream);
    if (e == cudaSuccess) e = cudaMemsetAsync(ws.extremes + 1, 0, sizeof(U), stream);
    if (e != cudaSuccess) return e;
    unsigned blocks = 0;
    e = resident_blocks(extremes_kernel<threads, K>, threads, 0, blocks);
    if (e != cudaSuccess) return e;
    blocks = std::min(blocks, std::max(1u, blocks_for(n, threads)));
    extremes_kernel<threads, K><<<blocks, threads, 0, stream>>>(keys, n, ws.extremes);
    e = cudaGetLastError();
    if (e != cudaSuccess) return e;
    return use(linear_mapper<K>{ws.extremes, cfg.intervals, cfg.descending});
  }
  e = sort_samples(keys, n, ws, stream);
  if (e != cudaSuccess) return e;
  build_tree_kernel<<<blocks_for(index_t{1} << ws.levels, 256), 256, 0, stream>>>(
      ws.samples, index_math::splitter_plan{ws.sample_count, cfg.intervals}, ws.levels,
      ws.tree_keys, ws.tree_pos);
  e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  return use(sampled_mapper<K>{ws.tree_keys, ws.tree_pos, ws.levels, cfg.intervals,
                               cfg.descending});
}

// Counts the keys of every interval and writes offsets[0 .. intervals]; leaves the cursors
// (interval starts) in ws.counts. Then calls then(mapper, shared) with the mapper.
template <class K, class Then>
cudaError_t count_intervals(const K* keys, index_t n, std::uint64_t* offsets,
                            const approx_config& cfg, const approx_workspace<K>& ws,
                            cudaStream_t stream, Then then) {
  const bool shared = shared_counters(n, cfg.intervals);
  cudaError_t e = cudaMemsetAsync(ws.counts, 0, std::size_t{8} * cfg.intervals, stream);
  if (e != cudaSuccess) return e;
  return with_mapper(keys, n, cfg, ws, stream, [&](auto mapper) -> cudaError_t {
    constexpr int threads = 512;
    const int smem =
        static_cast<int>((shared ? 4 * counter_words(cfg.intervals) : 0) + mapper.shared_bytes());
    cudaError_t err = cudaSuccess;
    auto launch = [&](auto kernel, auto* counts) {
      unsigned blocks = 0;
      err = resident_blocks(kernel, threads, smem, blocks);
      if (err != cudaSuccess) return;
      blocks = std::min(blocks, std::max(1u, blocks_for(n, threads * 16)));
      kernel<<<blocks, threads, smem, stream>>>(keys, n, mapper, counts);
      err = cudaGetLastError();
      if (err != cudaSuccess) return;
      offsets_kernel<<<1, offsets_threads, 0, stream>>>(counts, cfg.intervals, offsets);
      err = cudaGetLastError();
    };
    if (shared)
      launch(count_kernel<threads, true, K, decltype(mapper)>,
             static_cast<std::uint32_t*>(ws.counts));
    else
      launch(count_kernel<threads, false, K, decltype(mapper)>,
             static_cast<unsigned long long*>(ws.counts));
    if (err != cudaSuccess) return err;
    return then(mapper, shared);
  });
}

// The approximate sort, out of place: keys (and values) to out_keys (and out_values) in
// interval order; offsets[0 .. intervals] (device) bound the intervals.
template <class K, class V>
cudaError_t approx_scatter(void* temp, std::size_t& temp_bytes, const K* keys, K* out_keys,
                           const V* values, V* out_values, index_t n, std::uint64_t* offsets,
                           const approx_config& cfg, cudaStream_t stream) {
  using policy = approx_policy<K, V>;
  const approx_workspace<K> sizes(nullptr, n, cfg);
  if (!temp) {
    temp_bytes = sizes.total;
    return cudaSuccess;
  }
  if (temp_bytes < sizes.total) return cudaErrorInvalidValue;
  if (n == 0)
    return cudaMemsetAsync(offsets, 0, sizeof(std::uint64_t) * (cfg.intervals + std::size_t{1}),
                           stream);
  const approx_workspace<K> ws(temp, n, cfg);
  return count_intervals(keys, n, offsets, cfg, ws, stream,
                         [&](auto mapper, bool shared) -> cudaError_t {
    using M = decltype(mapper);
    unsigned blocks = 0;
    cudaError_t e = cudaSuccess;
    if (shared) {
      auto kernel = scatter_shared_kernel<policy, K, V, M>;
      const int smem = static_cast<int>(4 * counter_words(cfg.intervals) + mapper.shared_bytes());
      e = resident_blocks(kernel, policy::threads, smem, blocks);
      if (e != cudaSuccess) return e;
      blocks = std::min(blocks, blocks_for(n, static_cast<int>(policy::tile)));
      kernel<<<blocks, policy::threads, smem, stream>>>(keys, values, out_keys, out_values, n,
                                                         mapper,
                                                         static_cast<std::uint32_t*>(ws.counts));
    } else {
      constexpr int threads = 512;
      auto kernel = scatter_global_kernel<threads, K, V, M>;
      const int smem = static_cast<int>(mapper.shared_bytes());
      e = resident_blocks(kernel, threads, smem, blocks);
      if (e != cudaSuccess) return e;
      blocks = std::min(blocks, blocks_for(n, threads));
      kernel<<<blocks, threads, smem, stream>>>(keys, values, out_keys, out_values, n, mapper,
                                             static_cast<unsigned long long*>(ws.counts));
    }
    return cudaGetLastError();
  });
}

// ---- exact sorts through the intervals ----------------------------------------------------
// SortSegments: the segmented sort, called as sort_segments(temp, temp_bytes, keys, values,
// n, segment_list, descending, stream).

template <class K, class V>
std::size_t segments_bytes(index_t n, index_t segments) {
  return index_math::segment_workspace{n, segments,
                                    {bitonic_policy<K, V, false>::slot_bytes}}.bytes();
}

// approx_refine: the bucket sort. Keys (and values) are copied to the buffer, scattered back
// into their intervals, and every interval is sorted by the segmented sort.
// Workspace: n keys (and values), the offsets, the approximate sort's and the segmented sort's.
template <class K, class V, class SortSegments>
cudaError_t approx_refine(void* temp, std::size_t& temp_bytes, K* keys, V* values, index_t n,
                          const approx_config& cfg, SortSegments sort_segments,
                          cudaStream_t stream) {
  std::size_t scatter_bytes = 0, segment_bytes = segments_bytes<K, V>(n, cfg.intervals);
  cudaError_t e = approx_scatter<K, V>(nullptr, scatter_bytes, nullptr, nullptr, nullptr,
                                       nullptr, n, nullptr, cfg, stream);
  if (e != cudaSuccess) return e;
  bump b{static_cast<char*>(temp)};
  K* buffer_keys = b.take<K>(n);
  V* buffer_values = block::has_values<K, V> ? b.take<V>(n) : nullptr;
  std::uint64_t* offsets = b.take<std::uint64_t>(cfg.intervals + std::size_t{1});
  void* scratch = b.take<char>(std::max(scatter_bytes, segment_bytes));
  if (!temp) {
    temp_bytes = b.total;
    return cudaSuccess;
  }
  if (temp_bytes < b.total) return cudaErrorInvalidValue;
  if (n < 2) return cudaSuccess;
  e = cudaMemcpyAsync(buffer_keys, keys, sizeof(K) * n, cudaMemcpyDeviceToDevice, stream);
  if (e == cudaSuccess && block::has_values<K, V>)
    e = cudaMemcpyAsync(buffer_values, values, sizeof(V) * n, cudaMemcpyDeviceToDevice, stream);
  if (e == cudaSuccess)
    e = approx_scatter<K, V>(scratch, scatter_bytes, buffer_keys, keys, buffer_values, values, n,
                             offsets, cfg, stream);
  if (e != cudaSuccess) return e;
  const index_math::segment_list intervals{offsets, offsets + 1, cfg.intervals, 0, 8};
  return sort_segments(scratch, segment_bytes, keys, values, n, intervals, cfg.descending, stream);
}

// ---- top_k ------------------------------------------------------------------------------

// top_k: a sampled splitter past the k-th key (splitter_rank), found by a radix select among
// the samples' codes (select_ranked_index); one pass gathers
// every key before the upper one into a buffer of index_math::candidate_capacity keys (k plus
// part of an interval, with high probability). If the sample misjudged (fewer than k
// candidates, or more than the capacity), the radix select puts exactly the k first keys in
// the buffer instead; otherwise its kernels return at once. The candidates' select codes and
// places (32-bit) are sorted by a radix sort of `capacity` items (SortCodes: called as
// sort_codes(temp, temp_bytes, codes, places, count, stream), in place), and the first k
// candidates copied out through their places. A capacity of 2^32 or more (k about as large)
// sorts the candidates themselves with the segmented sort instead (SortSegments, as in
// approx_refine). No host sync; the launches depend on n, k and the keys' 16-byte alignment
// only. Values: const V* (the
// values of the keys), or positions<V> (their positions, generated).
// With cfg.in_order false (select_k), a second radix select, over the candidates (a few more
// than k), puts the k first of them in out in no order instead: no sort.
// Workspace: the samples' codes, the candidates (keys, values, codes and places),
// the sorts'.
template <class K, class V, class SortCodes, class SortSegments, class Values = const V*>
cudaError_t top_k(void* temp, std::size_t& temp_bytes, const K* keys, Values values,
                  index_t n, K* out_keys, V* out_values, index_t k, const approx_config& cfg,
                  SortCodes sort_codes, SortSegments sort_segments, cudaStream_t stream) {
  using U = ordered_t<K>;
  using I = std::uint32_t;
  if (k > n) return cudaErrorInvalidValue;
  const index_t sample_count = index_math::focus_sample_count(n);
  const index_t capacity = index_math::candidate_capacity(k, n, sample_count);
  const bool sort_places = capacity <= 0xffffffffu;
  std::size_t sort_bytes = 0;
  cudaError_t e = sort_places ? sort_codes(nullptr, sort_bytes, static_cast<U*>(nullptr),
                                           static_cast<I*>(nullptr), capacity, stream)
                              : cudaSuccess;
  if (!sort_places) sort_bytes = segments_bytes<K, V>(capacity, 1);
  if (e != cudaSuccess) return e;
  bump b{static_cast<char*>(temp)};
  U* sample_codes = b.take<U>(sample_count);
  K* buffer_keys = b.take<K>(capacity);
  V* buffer_values = block::has_values<K, V> ? b.take<V>(capacity) : nullptr;
  U* codes = sort_places ? b.take<U>(capacity) : nullptr;
  I* places = sort_places ? b.take<I>(capacity) : nullptr;
  // bounds[0] = 0 and bounds[2] delimit the candidates; bounds[1] counts the sampled gather.
  // Zeroed together with the radix selects' states, by one memset; chosen_sample: the
  // splitter's index among the samples.
  struct counters {
    std::uint64_t bounds[3];
    radix_select_state select, select_candidates;
    std::uint32_t chosen_sample;
  };
  auto* zeroed = b.take<counters>(1);
  std::uint64_t* bounds = zeroed ? zeroed->bounds : nullptr;
  radix_select_state* select_state = zeroed ? &zeroed->select : nullptr;
  void* scratch = b.take<char>(sort_bytes);
  if (!temp) {
    temp_bytes = b.total;
    return cudaSuccess;
  }
  if (temp_bytes < b.total) return cudaErrorInvalidValue;
  if (k == 0) return cudaSuccess;
  e = cudaMemsetAsync(zeroed, 0, sizeof(counters), stream);
  if (e != cudaSuccess) return e;
  // The splitter: the sample of its rank in (key, position) order, found by a radix select of
  // the samples' codes, not a sort of them.
  gather_sample_codes_kernel<<<blocks_for(sample_count, 256), 256, 0, stream>>>(
      keys, n, sample_count, sample_codes);
  e = cudaGetLastError();
  if (e == cudaSuccess)
    e = select_ranked_index(sample_codes, sample_count,
                            index_math::splitter_rank(k, n, sample_count, cfg.descending),
                            &zeroed->chosen_sample, stream);
  if (e != cudaSuccess) return e;
  const ranked_sample<K> splitter{keys, n, sample_count, &zeroed->chosen_sample};
  // Where more than one key in 256 is expected to be a candidate (the samples up to the
  // upper splitter over all samples), tiles of 16 keys a thread: a quarter of the atomics
  // (H100, 2^28 keys, k = 10^6: 1.36 ms against 1.76); sparser, 4 (k = 1000: 0.77 ms against
  // 1.15). In 16-byte vectors where the keys are so aligned.
  const bool dense =
      (index_math::focused_upper_rank(k, n, sample_count) + 1) * 256 > sample_count;
  const bool vectors = reinterpret_cast<std::uintptr_t>(keys) % 16 == 0;
  constexpr int threads = 512, vec = 16 / sizeof(K);
  auto gather = dense ? (vectors ? gather_candidates_kernel<threads, 16, vec, K, V, Values>
                                 : gather_candidates_kernel<threads, 16, 1, K, V, Values>)
                      : (vectors ? gather_candidates_kernel<threads, 4, vec, K, V, Values>
                                 : gather_candidates_kernel<threads, 4, 1, K, V, Values>);
  const int keys_per_thread = dense ? 16 : 4;
  unsigned blocks = 0;
  e = resident_blocks(gather, threads, 0, blocks);
  if (e != cudaSuccess) return e;
  gather<<<std::min(blocks, blocks_for(n, threads * keys_per_thread)), threads, 0, stream>>>(
      keys, values, n, splitter, cfg.descending, capacity, bounds + 1, buffer_keys,
      buffer_values);
  e = cudaGetLastError();
  if (e == cudaSuccess)
    e = radix_select_fallback<K, V>(keys, values, n, k, cfg.descending, bounds + 1, capacity,
                              select_state, buffer_keys, buffer_values, bounds + 2, stream);
  if (e != cudaSuccess) return e;
  if (!cfg.in_order)  // the k first of the bounds[2] candidates (at least k), as they come
    return radix_select<K, V>(buffer_keys, static_cast<const V*>(buffer_values),
                              select_input{capacity, bounds + 2, nullptr, 0}, k, cfg.descending,
                              &zeroed->select_candidates, out_keys, out_values, nullptr, stream);
  if (!sort_places) {
    const index_math::segment_list candidates{bounds, bounds + 2, 1, 0, 8};
    e = sort_segments(scratch, sort_bytes, buffer_keys, buffer_values, capacity, candidates,
                      cfg.descending, stream);
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(out_keys, buffer_keys, sizeof(K) * k, cudaMemcpyDeviceToDevice, stream);
    if (e == cudaSuccess && block::has_values<K, V>)
      e = cudaMemcpyAsync(out_values, buffer_values, sizeof(V) * k, cudaMemcpyDeviceToDevice,
                          stream);
    return e;
  }
  encode_candidates_kernel<K, I><<<std::min(blocks, blocks_for(capacity, 256)), 256, 0, stream>>>(
      buffer_keys, bounds + 2, capacity, cfg.descending, codes, places);
  e = cudaGetLastError();
  if (e == cudaSuccess) e = sort_codes(scratch, sort_bytes, codes, places, capacity, stream);
  if (e != cudaSuccess) return e;
  emit_candidates_kernel<K, V, I><<<std::min(blocks, blocks_for(k, 256)), 256, 0, stream>>>(
      buffer_keys, buffer_values, places, k, out_keys, out_values);
  return cudaGetLastError();
}

// out[r * k, (r + 1) * k) = in[r * row_length, r * row_length + k) for every row: one copy
// when the prefixes are contiguous, a 2-D copy when the row pitch is one the copy engine takes
// (below 2^31 bytes), else a copy per row (then rows are few: n >= 2^28 per two rows).
template <class T>
cudaError_t copy_row_prefixes(T* out, const T* in, index_t rows, index_t row_length, index_t k,
                              cudaStream_t stream) {
  if (rows == 1 || k == row_length)
    return cudaMemcpyAsync(out, in, sizeof(T) * rows * k, cudaMemcpyDeviceToDevice, stream);
  if (sizeof(T) * row_length < (index_t{1} << 31))
    return cudaMemcpy2DAsync(out, sizeof(T) * k, in, sizeof(T) * row_length, sizeof(T) * k, rows,
                             cudaMemcpyDeviceToDevice, stream);
  cudaError_t e = cudaSuccess;
  for (index_t r = 0; r < rows && e == cudaSuccess; ++r)
    e = cudaMemcpyAsync(out + r * k, in + r * row_length, sizeof(T) * k, cudaMemcpyDeviceToDevice,
                        stream);
  return e;
}

// top_k of every row of a rows x row_length matrix. Where warp_top_k_fits: one warp per row
// (no workspace). Where index_math::row_select_fits (k up to 2048 of rows of 2048 keys or more):
// a radix select per row (device/row_select.cuh). Otherwise the rows are copied to a buffer,
// sorted there by the batched sort, and the first k keys (and values) of each row copied out
// with one 2-D copy; with k the whole row, copied to the output and sorted there. Workspace:
// n keys (and values) unless k is the whole row, and the batched sort's.
template <class K, class V, class SortSegments>
cudaError_t top_k_rows(void* temp, std::size_t& temp_bytes, const K* keys, const V* values,
                       index_t rows, index_t row_length, K* out_keys, V* out_values, index_t k,
                       bool descending, SortSegments sort_segments, cudaStream_t stream) {
  if (k > row_length) return cudaErrorInvalidValue;
  if (warp_top_k_fits(rows, row_length, k)) {
    if (!temp) {
      temp_bytes = 0;
      return cudaSuccess;
    }
    if (k == 0 || rows == 0) return cudaSuccess;
    constexpr int warps = 8;
    auto kernel = block::warp_top_k_rows_kernel<warps, K, V>;
    unsigned blocks = 0;
    cudaError_t e = resident_blocks(kernel, warps * 32, 0, blocks);
    if (e != cudaSuccess) return e;
    blocks = std::min(blocks, blocks_for(rows, warps));
    kernel<<<blocks, warps * 32, 0, stream>>>(keys, values, rows, row_length, out_keys,
                                               out_values, static_cast<unsigned>(k), descending);
    return cudaGetLastError();
  }
  if (index_math::row_select_fits(row_length, k))
    return top_k_rows_by_select(temp, temp_bytes, keys, values, rows, row_length, out_keys,
                                out_values, k, descending, true, stream);
  const index_t n = rows * row_length;
  const bool whole_rows = k == row_length;  // sorted in the output itself, nothing to copy out
  std::size_t segment_bytes = segments_bytes<K, V>(n, rows);
  bump b{static_cast<char*>(temp)};
  K* buffer_keys = whole_rows ? out_keys : b.take<K>(n);
  V* buffer_values = !block::has_values<K, V> ? nullptr : whole_rows ? out_values : b.take<V>(n);
  void* scratch = b.take<char>(segment_bytes);
  if (!temp) {
    temp_bytes = b.total;
    return cudaSuccess;
  }
  if (temp_bytes < b.total) return cudaErrorInvalidValue;
  if (k == 0 || rows == 0) return cudaSuccess;
  const index_math::segment_list batch{nullptr, nullptr, rows, row_length, 8};
  cudaError_t e = cudaMemcpyAsync(buffer_keys, keys, sizeof(K) * n, cudaMemcpyDeviceToDevice, stream);
  if (e == cudaSuccess && block::has_values<K, V>)
    e = cudaMemcpyAsync(buffer_values, values, sizeof(V) * n, cudaMemcpyDeviceToDevice, stream);
  if (e == cudaSuccess)
    e = sort_segments(scratch, segment_bytes, buffer_keys, buffer_values, n, batch, descending, stream);
  if (whole_rows) return e;
  if (e == cudaSuccess) e = copy_row_prefixes(out_keys, buffer_keys, rows, row_length, k, stream);
  if (e == cudaSuccess && block::has_values<K, V>)
    e = copy_row_prefixes(out_values, buffer_values, rows, row_length, k, stream);
  return e;
}

// ---- quality ------------------------------------------------------------------------------

// The quality of an approximate sort: quality[0..3] = {largest interval, keys out of place,
// sum of their distances, largest distance} (device words). Workspace: n keys and the
// segmented sort's.
template <class K, class SortSegments>
cudaError_t approx_quality(void* temp, std::size_t& temp_bytes, const K* keys, index_t n,
                           const std::uint64_t* offsets, std::uint32_t intervals,
                           bool descending, unsigned long long* quality,
                           SortSegments sort_segments, cudaStream_t stream) {
  std::size_t segment_bytes = segments_bytes<K, no_value>(n, intervals);
  const index_math::segment_list segs{offsets, offsets + 1, intervals, 0, 8};
  bump b{static_cast<char*>(temp)};
  K* sorted = b.take<K>(n);
  void* scratch = b.take<char>(segment_bytes);
  if (!temp) {
    temp_bytes = b.total;
    return cudaSuccess;
  }
  if (temp_bytes < b.total) return cudaErrorInvalidValue;
  cudaError_t e = cudaMemsetAsync(quality, 0, 4 * sizeof(unsigned long long), stream);
  if (e != cudaSuccess || n == 0) return e;
  e = cudaMemcpyAsync(sorted, keys, sizeof(K) * n, cudaMemcpyDeviceToDevice, stream);
  if (e == cudaSuccess)
    e = sort_segments(scratch, segment_bytes, sorted, static_cast<no_value*>(nullptr), n, segs,
                      descending, stream);
  if (e != cudaSuccess) return e;
  constexpr int threads = 256;
  auto kernel = distance_kernel<threads, K>;
  unsigned blocks = 0;
  e = resident_blocks(kernel, threads, 0, blocks);
  if (e != cudaSuccess) return e;
  blocks = std::min(blocks, blocks_for(n, threads));
  kernel<<<blocks, threads, 0, stream>>>(keys, sorted, n, offsets, intervals, descending, quality);
  return cudaGetLastError();
}

}  // namespace gpusort::detail::device
