// Batched and segmented sort: every segment sorted by its own bitonic network.
//
// Schedule (size classes of index_math/segments.hpp):
//  * shuffle classes (up to 128 keys): a warp loads segments into registers (ITEMS keys per
//    lane), sorts with shuffles, stores: one read and one write of the keys. A batch, or the
//    list of 65-128-key segments, goes to shuffle_list_kernel. A segmented sort's segments
//    of up to 64 keys are sorted where shuffle_segments_kernel finds them in the offsets
//    (the most numerous cost no list); every larger one is appended to its class's list
//    (index_math::segment_workspace) by that kernel as it goes, or by classify_kernel first
//    (run_all says which), and the largest long class is recorded. Batched sorts know their
//    single class on the host and need no lists;
//  * tile classes: tile_kernel, one launch per class; a warp (up to 1024 slots) or a block
//    loads a segment into shared memory, runs the whole network there, stores;
//  * long segments: the device sort's passes (device/bitonic.cuh), each pass applied to
//    every long segment at once by the whole grid; for a segmented sort as one launch that
//    takes the passes' units from a queue (index_math::long_queue) up to the longest segment
//    found.
// Kernels are persistent: a fixed grid walks its class's segments, so a launch never
// depends on counts that only the device knows. Within a tile launch all segments are of
// one class (sizes within 2x), so no worker waits for a much larger one; a segmented sort
// runs its listed classes side by side on streams of their own (run_all).
// Policies: segmented_policy.cuh; kernels: segmented_kernels.cuh; here, the launches.
#pragma once

#include <algorithm>
#include <utility>

#include <cuda_runtime.h>

#include "gpusort/detail/device/launch.cuh"
#include "gpusort/detail/device/segmented_kernels.cuh"
#include "gpusort/detail/index_math/segments.hpp"

namespace gpusort::detail::device {

// ---- launching -------------------------------------------------------------------------

template <class K, class V, class Compare>
struct segment_launcher {
  K* keys;
  V* values;
  segment_list segs;
  class_lists lists;
  bool descending;
  Compare comp;
  key_codec<K> codec;
  bool positions;  // values made by the loads: each key's position in its segment
  cudaStream_t stream;
  // Segments in a list; for segmented sorts only the device knows, so grids are persistent.
  std::uint64_t host_count(std::uint64_t unknown) const {
    return lists.counts ? unknown : lists.batch_count;
  }

  // The segments of shuffle class C in a list (a batch, or a listed class).
  template <int C>
  cudaError_t shuffle_list() {
    auto kernel = shuffle_list_kernel<C, K, V, Compare>;
    constexpr std::uint64_t per_block = (shuffle_threads / 32) * shuffle_shape<K, V, C>::per_warp;
    unsigned blocks = 0;
    cudaError_t e = grid_for(kernel, shuffle_threads, 0,
                             (host_count(~std::uint64_t{0} >> 8) + per_block - 1) / per_block,
                             blocks);
    if (e != cudaSuccess) return e;
    kernel<<<blocks, shuffle_threads, 0, stream>>>(keys, values, segs, lists, descending, comp,
                                                   codec, positions);
    return cudaGetLastError();
  }

  // The lists of every class from listed_min_bits up, in a pass of their own.
  cudaError_t classify(std::uint64_t n) {
    const auto blocks = static_cast<unsigned>((segs.count + classify_threads - 1) / classify_threads);
    classify_kernel<K, V><<<blocks, classify_threads, 0, stream>>>(segs, n, lists);
    return cudaGetLastError();
  }

  // Every segment of a shuffle class below the listed ones, straight from the offsets; the
  // others listed too if `list_others`.
  cudaError_t shuffle_segments(std::uint64_t n, bool list_others) {
    auto kernel = shuffle_segments_kernel<K, V, Compare>;
    constexpr std::uint64_t warps_per_block = shuffle_threads / 32;
    unsigned blocks = 0;
    cudaError_t e = grid_for(kernel, shuffle_threads, 0,
                             (segs.count + 32 * warps_per_block - 1) / (32 * warps_per_block),
                             blocks);
    if (e != cudaSuccess) return e;
    // Windows as wide as keep every warp busy: ceil(segments / (32 * warps)), 1 to 4 reads.
    // Balancing the busiest warp's reads instead (4,096 windows of 4 reads for 3,168 warps
    // are 8 reads for some, 5,462 of 3 are 6) won 13% on 32-key segments but lost 11% on
    // power-law sizes (H100, 2^24 u32 keys), whose windows then held fewer segments of
    // each class and so more part-empty rounds.
    const std::uint64_t lanes = 32 * warps_per_block * blocks;
    const int reads = static_cast<int>(std::min<std::uint64_t>(
        shuffle_window, std::max<std::uint64_t>(1, (segs.count + lanes - 1) / lanes)));
    kernel<<<blocks, shuffle_threads, 0, stream>>>(keys, values, segs, n, lists, reads,
                                                   descending, comp, codec, positions, list_others);
    return cudaGetLastError();
  }

  template <int TILE_BITS, bool WARP>
  cudaError_t tile() {
    using policy = tile_class_policy<K, V, TILE_BITS, WARP>;
    auto kernel = tile_kernel<policy, TILE_BITS, K, V, Compare>;
    const std::uint64_t needed =
        (host_count(~std::uint64_t{0} >> 8) + policy::teams - 1) / policy::teams;
    unsigned blocks = 0;
    cudaError_t e = grid_for(kernel, policy::threads, policy::smem_bytes, needed, blocks);
    if (e != cudaSuccess) return e;
    kernel<<<blocks, policy::threads, policy::smem_bytes, stream>>>(
        keys, values, segs, lists, descending, comp, codec, positions);
    return cudaGetLastError();
  }

  // A batch of long segments of `longest` keys: the device sort's schedule, a launch per
  // pass, over all of them at once.
  cudaError_t long_batch(std::uint64_t longest) {
    using policy = bitonic_policy<K, V, false>;
    constexpr int smem_bytes = sizeof(block::tile_storage<K, V, policy::tile_bits>);
    const long_units units{lists, 0, long_span<policy::tile_bits>(segs.batch_size)};
    auto tile_kernel = long_tile_kernel<policy, K, V, Compare>;
    unsigned tile_blocks = 0;
    cudaError_t status = resident_blocks(tile_kernel, policy::tile_threads, smem_bytes, tile_blocks);
    if (status != cudaSuccess) return status;
    // Float keys: codes for the whole schedule, mapped back even if a pass failed to launch;
    // positions written before the first pass.
    const auto map_long = [&](bool to_code) {
      if (!codec.maps() && !(positions && to_code)) return cudaSuccess;
      long_map_kernel<policy::tile_bits, K, V><<<tile_blocks, policy::tile_threads, 0, stream>>>(
          keys, values, segs, units, codec, to_code, positions);
      return cudaGetLastError();
    };
    status = map_long(true);
    if (status != cudaSuccess) return status;
    index_math::for_each_pass(longest, policy::shape, [&](const index_math::pass& ps) {
      if (status != cudaSuccess) return;
      if (ps.win.contiguous()) {
        tile_kernel<<<tile_blocks, policy::tile_threads, smem_bytes, stream>>>(
            keys, values, segs, units, ps, descending, comp);
      } else {
        const int phase = index_math::step_at(ps.first_step).phase;
        with_group_bits<policy::register_bits>(ps.win.group_bits, [&](auto bits) {
          auto kernel = long_register_kernel<policy, decltype(bits)::value, K, V, Compare>;
          unsigned blocks = 0;
          status = resident_blocks(kernel, policy::register_threads, 0, blocks);
          if (status != cudaSuccess) return;
          kernel<<<blocks, policy::register_threads, 0, stream>>>(keys, values, segs, units,
                                                                  ps.win, phase, descending,
                                                                  comp);
        });
      }
      if (status == cudaSuccess) status = cudaGetLastError();
    });
    const cudaError_t back = map_long(false);
    return status != cudaSuccess ? status : back;
  }

  // The long list of a segmented sort: one launch taking units from a queue
  // (long_queue_kernel).
  cudaError_t long_segments() {
    using policy = long_queue_policy<bitonic_policy<K, V, false>>;
    constexpr int smem_bytes = sizeof(block::tile_storage<K, V, policy::tile_bits>);
    auto kernel = long_queue_kernel<policy, K, V, Compare>;
    unsigned blocks = 0;
    const cudaError_t e = resident_blocks(kernel, policy::tile_threads, smem_bytes, blocks);
    if (e != cudaSuccess) return e;
    kernel<<<blocks, policy::tile_threads, smem_bytes, stream>>>(
        keys, values, segs, lists, lists.layout.long_list(), descending, comp, codec, positions);
    return cudaGetLastError();
  }

  // The worker of tile class C (a warp up to warp_tile_max_bits, then a block).
  cudaError_t tile_class(int c) {
    constexpr segment_classes classes = classes_for<K, V>;
    static_assert(classes.shuffle_max_bits() + 1 == 8 && classes.warp_tile_max_bits() == 10);
    switch (c) {
      case 8: return tile<8, true>();
      case 9: return tile<9, true>();
      case 10: return tile<10, true>();
      case 11:
        if constexpr (classes.tile_max_bits() >= 11) return tile<11, false>();
        break;
      case 12:
        if constexpr (classes.tile_max_bits() >= 12) return tile<12, false>();
        break;
      case 13:
        if constexpr (classes.tile_max_bits() >= 13) return tile<13, false>();
        break;
      default:
        break;
    }
    return cudaErrorInvalidValue;
  }

  // A batched sort: its single class C (long segments up to `longest` keys).
  cudaError_t run_class(int c, std::uint64_t longest) {
    constexpr segment_classes classes = classes_for<K, V>;
    if (classes.is_long(c)) return long_batch(longest);
    if (c > classes.shuffle_max_bits()) return tile_class(c);
    cudaError_t e = cudaErrorInvalidValue;
    [&]<int... I>(std::integer_sequence<int, I...>) {
      ((c == I + 1 ? (e = shuffle_list<I + 1>(), 0) : 0), ...);
    }(std::make_integer_sequence<int, classes.shuffle_max_bits()>{});
    return e;
  }

  // A segmented sort. Every listed class and the long queue (only if n > 2^tile_max_bits
  // allows a long segment) run side by side on streams of their own (fork_join), none
  // queued behind another's launch (3-4 us even when empty): a large class with few
  // segments takes as long as its largest one, tens of microseconds for one team, and one
  // after the other those tails added up (power-law sizes: 0.522 ms one after the other,
  // 0.386 side by side). They need the lists: when segments average more than the window
  // worker's classes hold, classify_kernel makes them first, and the window worker runs
  // beside the listed classes; else the window worker lists the others as it goes, and they
  // start after it (segment_classes::window_worker_lists). Measured on an H100 with the
  // block-tile classes still sharing one stream, 2^24 u32 keys through offsets: listing in
  // the window worker 200 / 175 Gkeys/s at 32 / 64 keys against 184 / 167, a separate pass
  // 2-6% faster from 128 to 2,048 keys and on power-law sizes (a mean of 41 keys) 82 against
  // 74; with a stream per class those power-law sizes, listed by the window worker, ran at 82.
  cudaError_t run_all(std::uint64_t n) {
    constexpr segment_classes classes = classes_for<K, V>;
    const bool classify_first = !classes.window_worker_lists(n, segs.count);
    cudaError_t e = classify_first ? classify(n) : shuffle_segments(n, true);
    if (e != cudaSuccess) return e;
    // A side stream per tile class (8 .. tile_max_bits), the listed shuffle class, the long
    // queue.
    constexpr int tile_classes = classes.tile_max_bits() - classes.shuffle_max_bits();
    constexpr int listed_shuffle_side = tile_classes, long_side = tile_classes + 1;
    static_assert(classes.listed_min_bits() == classes.shuffle_max_bits());
    static_assert(long_side < fork_join::max_sides);
    fork_join streams(stream, long_side + 1);
    e = streams.status();
    if (e != cudaSuccess) return e;
    if (classify_first) e = shuffle_segments(n, false);
    const auto on_side = [&](int side) {
      segment_launcher launcher = *this;
      launcher.stream = streams.side(side);
      return launcher;
    };
    if (e == cudaSuccess && n > (index_t{1} << classes.tile_max_bits()))
      e = on_side(long_side).long_segments();
    if (e == cudaSuccess)
      e = on_side(listed_shuffle_side).template shuffle_list<classes.shuffle_max_bits()>();
    for (int i = 0; i < tile_classes && e == cudaSuccess; ++i)
      e = on_side(i).tile_class(classes.shuffle_max_bits() + 1 + i);
    return streams.join(e);
  }
};

// Sorts every segment of `segs` in keys[0, n), in the core layer's manner: temp == nullptr
// only writes the workspace bytes (index_math::segment_workspace for a segmented sort, nothing
// for a batched one).
template <class K, class V, class Compare>
cudaError_t segmented_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                           std::uint64_t n, const segment_list& segs, Compare comp,
                           bool descending, cudaStream_t stream, key_codec<K> codec = {},
                           bool positions = false) {
  constexpr segment_classes classes = classes_for<K, V>;
  const index_math::segment_workspace layout{n, segs.count, classes};
  const std::size_t needed = segs.batched() ? 0 : layout.bytes();
  if (!temp) {
    temp_bytes = needed;
    return cudaSuccess;
  }
  if (temp_bytes < needed) return cudaErrorInvalidValue;
  // One key is sorted already, but with positions it is owed its index.
  if (segs.count == 0 || (n < 2 && !positions)) return cudaSuccess;
  segment_launcher<K, V, Compare> launcher{keys,  values, segs,      {},
                                           descending, comp, codec, positions, stream};
  if (segs.batched()) {
    const int c = classes.of(segs.batch_size);
    if (c == 0)  // rows of one key: sorted, but with positions each is owed its index, 0
      return positions && segs.batch_size == 1
                 ? cudaMemsetAsync(values, 0, sizeof(V) * segs.count, stream)
                 : cudaSuccess;
    launcher.lists.batch_count = segs.count;
    return launcher.run_class(c, segs.batch_size);
  }
  launcher.lists = class_lists::in(temp, layout);
  const cudaError_t e = cudaMemsetAsync(temp, 0, layout.header_bytes, stream);
  return e != cudaSuccess ? e : launcher.run_all(n);
}

}  // namespace gpusort::detail::device
