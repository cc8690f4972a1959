// Batched and segmented sort's kernels (segmented.cuh holds the schedule and the launches):
// classification into the class lists, the shuffle workers, the tile workers, the long
// segments' passes and their queue, and the positions of an argsort.
#pragma once

#include <algorithm>
#include <cstdint>

#include <cuda_runtime.h>

#include <cub/block/block_scan.cuh>

#include "gpusort/detail/block/bitonic_tile.cuh"
#include "gpusort/detail/block/warp_bitonic_sort.cuh"
#include "gpusort/detail/device/bitonic.cuh"
#include "gpusort/detail/device/segmented_policy.cuh"
#include "gpusort/detail/index_math/segments.hpp"

namespace gpusort::detail::device {

// ---- classification (segmented only) ----------------------------------------------------

// Appends segment i of class c to its list if c is a listed class (list_of), called by a
// whole warp, one segment a lane (valid: false for a lane without one), and records the
// largest long class. One atomic per list and warp: lists repeat (a run of equal sizes is
// one list), and same-address atomics would serialize. Lists fill in no particular order.
template <class K, class V>
__device__ __forceinline__ void list_segment(const class_lists& lists, std::uint64_t i, int c,
                                             bool valid) {
  constexpr segment_classes classes = classes_for<K, V>;
  const int list = valid && c >= classes.listed_min_bits() ? classes.list_of(c) : 0;
  if (!__any_sync(0xffffffffu, list != 0)) return;
  if (list != 0 && classes.is_long(c)) atomicMax(&lists.counts[0], static_cast<std::uint32_t>(c));
  const unsigned peers = __match_any_sync(0xffffffffu, list);
  const int leader = __ffs(peers) - 1;
  const unsigned lane = threadIdx.x & 31u;
  std::uint32_t base = 0;
  if (static_cast<int>(lane) == leader && list != 0)
    base = atomicAdd(&lists.counts[list], static_cast<std::uint32_t>(__popc(peers)));
  base = __shfl_sync(0xffffffffu, base, leader);
  if (list == 0) return;
  const std::uint64_t e = std::uint64_t{base} + __popc(peers & ((1u << lane) - 1u));
  if (e < lists.layout.capacity(list)) lists.ids[lists.start(list) + e] = static_cast<std::uint32_t>(i);
}

// The lists alone, in a pass of their own over the offsets (a segment a thread).
template <class K, class V>
__global__ void __launch_bounds__(classify_threads)
    classify_kernel(segment_list segs, std::uint64_t n, class_lists lists) {
  constexpr segment_classes classes = classes_for<K, V>;
  const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * classify_threads + threadIdx.x;
  const bool valid = i < segs.count && segs.valid(i, n);
  const int c = valid ? classes.of(segs.last(i) - segs.first(i)) : 0;
  list_segment<K, V>(lists, i, c, valid);
}

// ---- shuffle classes ------------------------------------------------------------------

// One round of a warp: each group of lanes sorts the segment of m keys at `first` (m == 0:
// the group has none this round). With `positions` the values are made, not read: each key's
// position in its segment (block::value_or_position).
template <int C, class K, class V, class Compare>
__device__ __forceinline__ void shuffle_round(K* keys, V* values, std::uint64_t first,
                                              unsigned m, bool descending, Compare comp,
                                              key_codec<K> codec, bool positions) {
  using shape = shuffle_shape<K, V, C>;
  constexpr int items = shape::items;
  using sorter = block::warp_bitonic_sort<K, V, items, Compare>;
  const unsigned group_lane = threadIdx.x & ((1u << shape::lanes_log2) - 1u);
  K k[items];
  V v[items];
  // Every load first, then the codec's map under one uniform branch (likewise before the
  // stores). With the map inside the load loop, integer keys (no map) ran slower than float
  // keys through this same kernel (H100, 2^24 keys in batches of 32: u32 0.088 ms, f32
  // 0.063); apart: u32 0.056, f32 0.060, u64 0.209 -> 0.177, u32 pairs of 64 0.204 -> 0.185.
#pragma unroll
  for (int i = 0; i < items; ++i) {
    const unsigned pos = group_lane * items + i;
    if (pos < m) {
      k[i] = keys[first + pos];
      if constexpr (block::has_values<K, V>)
        v[i] = block::value_or_position(values + first, pos, positions);
    } else if constexpr (fills_padding<K, V, Compare>.fill) {
      k[i] = padding_key<K>(descending);
    }
  }
  if (codec.maps()) {
#pragma unroll
    for (int i = 0; i < items; ++i)
      if (group_lane * items + i < m) k[i] = codec.in(k[i]);
  }
  bool ties_padding = false;
  if constexpr (fills_padding<K, V, Compare>.check_ties) {
#pragma unroll
    for (int i = 0; i < items; ++i)
      ties_padding |= group_lane * items + i < m && k[i] == padding_key<K>(descending);
  }
  // Whole segments, or partial ones filled with padding keys, need no padding checks.
  const bool whole = fills_padding<K, V, Compare>.fill ? !ties_padding : m == (1u << C);
  if (__all_sync(0xffffffffu, whole))
    sorter{}.template sort_groups<C, true>(k, v, m, descending, comp);
  else
    sorter{}.template sort_groups<C, false>(k, v, m, descending, comp);
  if (codec.maps()) {
#pragma unroll
    for (int i = 0; i < items; ++i) k[i] = codec.out(k[i]);
  }
#pragma unroll
  for (int i = 0; i < items; ++i) {
    const unsigned pos = group_lane * items + i;
    if (pos < m) {
      keys[first + pos] = k[i];
      if constexpr (block::has_values<K, V>) values[first + pos] = v[i];
    }
  }
}

// The segments of class C in a list: a batch (every segment, in order) or a segmented
// sort's list of class C (listed_min_bits and up). Warp w takes entries w * per_warp, ... as
// its groups, then the grid's next ones.
template <int C, class K, class V, class Compare>
__global__ void __launch_bounds__(shuffle_threads)
    shuffle_list_kernel(K* keys, V* values, segment_list segs, class_lists lists,
                        bool descending, Compare comp, key_codec<K> codec, bool positions) {
  using shape = shuffle_shape<K, V, C>;
  const std::uint64_t warp = (static_cast<std::uint64_t>(blockIdx.x) * shuffle_threads + threadIdx.x) / 32;
  const std::uint64_t warps = static_cast<std::uint64_t>(gridDim.x) * shuffle_threads / 32;
  const unsigned group = (threadIdx.x & 31u) >> shape::lanes_log2;
  const std::uint64_t count = lists.size(C);
  const std::uint64_t start = lists.counts ? lists.start(C) : 0;
  for (std::uint64_t e0 = warp * shape::per_warp; e0 < count; e0 += warps * shape::per_warp) {
    const std::uint64_t e = e0 + group;
    std::uint64_t first = 0;
    unsigned m = 0;
    if (e < count) {
      const std::uint64_t s = lists.segment(C, e, start);
      first = segs.first(s);
      m = static_cast<unsigned>(segs.last(s) - first);
    }
    shuffle_round<C>(keys, values, first, m, descending, comp, codec, positions);
  }
}

// The segments of class C in a warp's window of `reads` * 32 segments from `base` (masks[r]:
// the lanes whose segment base + r * 32 + lane is of class C), per_warp of them a round:
// group g takes the g-th of those not yet taken and reads its offsets itself (the warp has
// just read them: cached). A window all of class C (a batch cut by offsets, a run of equal
// sizes) needs no search: its q-th segment is base + q.
template <int C, class K, class V, class Compare>
__device__ __forceinline__ void shuffle_class_of_window(K* keys, V* values, const segment_list& segs,
                                                        std::uint64_t base, int reads,
                                                        const std::uint32_t (&masks)[shuffle_window],
                                                        bool descending, Compare comp,
                                                        key_codec<K> codec, bool positions) {
  using shape = shuffle_shape<K, V, C>;
  unsigned total = 0;
#pragma unroll
  for (int r = 0; r < shuffle_window; ++r) total += __popc(masks[r]);
  const bool whole_window = total == 32u * static_cast<unsigned>(reads);
  const unsigned group = (threadIdx.x & 31u) >> shape::lanes_log2;
  for (unsigned taken = 0; taken < total; taken += shape::per_warp) {
    const unsigned q = taken + group;
    const unsigned at = whole_window ? q : index_math::nth_set_bit_of_window(masks, q);
    std::uint64_t first = 0;
    unsigned m = 0;
    if (at < 32u * shuffle_window) {
      first = segs.first(base + at);
      m = static_cast<unsigned>(segs.last(base + at) - first);
    }
    shuffle_round<C>(keys, values, first, m, descending, comp, codec, positions);
  }
}

// Every segment of a shuffle class below the listed ones, straight from the offsets (no
// list), and with `list_others` the lists of all larger ones too (run_all says when). A warp
// takes a window of 32 * reads consecutive segments (reads <= shuffle_window, fewer when
// there are too few segments to give every warp a full window), lists the others if asked,
// then sorts those of each class in turn. Invalid segments and those of 0 or 1 key need
// nothing (but a key alone is owed its index, 0, when positions are made).
// Warps take windows from a counter in the workspace rather than a fixed share: the tile
// workers run beside this kernel, and a fixed share left the SMs they crowded as the tail
// (H100, 2^24 u32 keys in 128-key segments: 0.38 ms against 0.17 alone).
// A lane keeps only the classes of its segments, packed in one register; the group that
// sorts a segment reads its offsets again (keeping them took 12 values a lane, and passing
// them to the group 12 shuffles a round).
// Four blocks per SM (64 registers) for 4-byte slots, keys alone: the kernel is latency
// bound (H100, 2^24 u32 keys through offsets: 32-key segments 0.094 -> 0.089 ms, 64: 0.106
// -> 0.098, power law +3%). Wider slots keep the compiler's choice: asking them for one
// more block lost up to 43% (u32 pairs of 128).
template <class K, class V>
constexpr int shuffle_segments_min_blocks = classes_for<K, V>.slot_bytes <= 4 ? 4 : 1;

template <class K, class V, class Compare>
__global__ void __launch_bounds__(shuffle_threads, (shuffle_segments_min_blocks<K, V>))
    shuffle_segments_kernel(K* keys, V* values, segment_list segs, std::uint64_t n,
                            class_lists lists, int reads, bool descending, Compare comp,
                            key_codec<K> codec, bool positions, bool list_others) {
  constexpr segment_classes classes = classes_for<K, V>;
  constexpr unsigned class_mask = (1u << packed_class_bits) - 1u;
  static_assert(classes.listed_min_bits() - 1 <= class_mask);
  const unsigned lane = threadIdx.x & 31u;
  for (;;) {
    unsigned long long window = 0;
    if (lane == 0) window = atomicAdd(lists.shuffle_cursor, 1ull);
    const std::uint64_t base = __shfl_sync(0xffffffffu, window, 0) * 32 * reads;
    if (base >= segs.count) return;
    std::uint32_t packed = 0;  // the class of segment base + r * 32 + lane at bits 4r (0: none)
#pragma unroll
    for (int r = 0; r < shuffle_window; ++r) {
      if (r >= reads) break;  // the same for the whole grid
      const std::uint64_t i = base + r * 32 + lane;
      int c = 0;
      const bool valid = i < segs.count && segs.valid(i, n);
      if (valid) {
        const std::uint64_t first = segs.first(i), m = segs.last(i) - first;
        c = classes.of(m);
        if (c < classes.listed_min_bits())
          packed |= static_cast<std::uint32_t>(c) << (packed_class_bits * r);
        if constexpr (index_payload<V>)  // a key alone: sorted, but its index is still owed
          if (positions && m == 1) values[first] = payload_of_index<V>(0);
      }
      if (list_others) list_segment<K, V>(lists, i, c, valid);
    }
    [&]<int... I>(std::integer_sequence<int, I...>) {
      (
          [&] {
            std::uint32_t masks[shuffle_window];
#pragma unroll
            for (int r = 0; r < shuffle_window; ++r)
              masks[r] = __ballot_sync(
                  0xffffffffu, (packed >> (packed_class_bits * r) & class_mask) == I + 1);
            shuffle_class_of_window<I + 1>(keys, values, segs, base, reads, masks, descending,
                                           comp, codec, positions);
          }(),
          ...);
    }(std::make_integer_sequence<int, classes.listed_min_bits() - 1>{});
  }
}

// ---- tile classes ----------------------------------------------------------------------

template <class Policy, int TILE_BITS, class K, class V, class Compare>
__global__ void __launch_bounds__(Policy::threads)
    tile_kernel(K* keys, V* values, segment_list segs, class_lists lists, bool descending,
                Compare comp, key_codec<K> codec, bool positions) {
  using tile_t = block::tile_network<K, V, typename Policy::team, TILE_BITS, Policy::digit,
                                     Compare>;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  const unsigned team = threadIdx.x / Policy::team_threads;
  auto& smem = reinterpret_cast<typename Policy::storage*>(shared_bytes)[team];
  const std::uint64_t teams = static_cast<std::uint64_t>(gridDim.x) * Policy::teams;
  const std::uint64_t count = lists.size(TILE_BITS);
  const std::uint64_t start = lists.counts ? lists.start(TILE_BITS) : 0;
  const index_math::window whole{TILE_BITS, TILE_BITS, 0};
  const index_math::pass sort_all{whole, 0, index_math::steps_through_phase(TILE_BITS)};
  for (std::uint64_t e = static_cast<std::uint64_t>(blockIdx.x) * Policy::teams + team;
       e < count; e += teams) {
    const std::uint64_t s = lists.segment(TILE_BITS, e, start);
    const std::uint64_t first = segs.first(s);
    tile_t tile{smem, 0, segs.last(s) - first, descending, comp};
    V* segment_values = nullptr;
    if constexpr (block::has_values<K, V>) segment_values = values + first;
    if constexpr (fills_padding<K, V, Compare>.fill) {
      tile.load_filled(keys + first, segment_values, padding_key<K>(descending), codec,
                       positions);
      tile.run_whole(sort_all);
    } else {
      tile.load(keys + first, segment_values, codec, positions);
      tile.run(sort_all);
    }
    tile.store(keys + first, segment_values, codec);
    Policy::team::sync();  // the next segment's load overwrites the tile
  }
}

// ---- long segments ---------------------------------------------------------------------

// The long segments' work laid end to end, so that a pass spreads over all of them at once:
// segment j takes span_j = max(2^ceil(log2 m_j), 2^tile_bits) slots of a virtual line; a
// tile or register group of a pass is found from its place on that line. Batched: every
// span is the same and no table is needed.
struct long_units {
  class_lists lists;
  int list;
  std::uint64_t batch_span;  // batched: the span of every segment

  __device__ std::uint64_t count() const { return lists.size(list); }
  // Passes of a later phase than this have nothing to do.
  __device__ int longest_class() const {
    return lists.counts ? lists.longest_long_class() : index_math::ceil_log2(batch_span);
  }
  __device__ std::uint64_t total_span() const {
    return lists.counts ? lists.long_prefix[count()] : count() * batch_span;
  }
  // Entry j holding line position x, and where its span starts.
  __device__ void locate(std::uint64_t x, std::uint64_t& j, std::uint64_t& span_start) const {
    if (!lists.counts) {
      j = x / batch_span;
      span_start = j * batch_span;
      return;
    }
    std::uint64_t lo = 0, hi = count();  // the last j with prefix[j] <= x
    while (hi - lo > 1) {
      const std::uint64_t mid = (lo + hi) / 2;
      if (lists.long_prefix[mid] <= x)
        lo = mid;
      else
        hi = mid;
    }
    j = lo;
    span_start = lists.long_prefix[lo];
  }
};

template <int TILE_BITS>
GPUSORT_HD constexpr std::uint64_t long_span(std::uint64_t m) {
  const int bits = index_math::ceil_log2(m);
  return std::uint64_t{1} << (bits > TILE_BITS ? bits : TILE_BITS);
}

// long_prefix[j] = span_0 + ... + span_{j-1}, by one block of THREADS (long segments are
// few: at most n / 2^tile_max_bits).
template <int TILE_BITS, int THREADS>
__device__ void long_prefix(const segment_list& segs, const class_lists& lists, int list) {
  using scan = cub::BlockScan<std::uint64_t, THREADS>;
  __shared__ typename scan::TempStorage temp;
  const std::uint64_t count = lists.size(list), start = lists.start(list);
  std::uint64_t carry = 0;
  for (std::uint64_t base = 0; base <= count; base += THREADS) {
    const std::uint64_t e = base + threadIdx.x;
    std::uint64_t span = 0;
    if (e < count) {
      const std::uint64_t s = lists.segment(list, e, start);
      span = long_span<TILE_BITS>(segs.last(s) - segs.first(s));
    }
    std::uint64_t before = 0, total = 0;
    scan(temp).ExclusiveSum(span, before, total);
    if (e <= count) lists.long_prefix[e] = carry + before;
    carry += total;
    __syncthreads();
  }
}

// The units of a long pass a block (or thread) takes: first, first + stride, ... A grid
// of blocks walks them all (first = the block, stride = the grid); the long queue hands out
// one at a time.
struct unit_walk {
  std::uint64_t first;
  std::uint64_t stride;
  static constexpr std::uint64_t only_one = std::uint64_t{1} << 63;  // past any pass's units

  __device__ static unit_walk blocks() { return {blockIdx.x, gridDim.x}; }
  __device__ static unit_walk threads() {
    return {std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x,
            std::uint64_t{gridDim.x} * blockDim.x};
  }
  __device__ static unit_walk block_unit(std::uint64_t unit) { return {unit, only_one}; }
  __device__ static unit_walk thread_of_unit(std::uint64_t unit) {
    return {unit * blockDim.x + threadIdx.x, only_one};
  }
};

// Maps the keys of every long segment to codes (to_code) or back, a tile of the line per
// unit: the long segments' schedule runs many passes, so their keys stay codes in between.
// With `positions` (to_code only) it writes each key's position in its segment as its
// value, which the passes then move with it.
template <int TILE_BITS, class K, class V>
__device__ void long_map(K* keys, V* values, const segment_list& segs, const long_units& units,
                         key_codec<K> codec, bool to_code, bool positions, unit_walk walk) {
  const std::uint64_t tiles = units.total_span() >> TILE_BITS;
  const std::uint64_t start = units.lists.counts ? units.lists.start(units.list) : 0;
  for (std::uint64_t f = walk.first; f < tiles; f += walk.stride) {
    std::uint64_t j = 0, span_start = 0;
    units.locate(f << TILE_BITS, j, span_start);
    const std::uint64_t s = units.lists.segment(units.list, j, start);
    const std::uint64_t first = segs.first(s), m = segs.last(s) - first;
    const std::uint64_t first_slot = (f << TILE_BITS) - span_start;
    const std::uint64_t end = first_slot + (std::uint64_t{1} << TILE_BITS) < m
                                  ? first_slot + (std::uint64_t{1} << TILE_BITS)
                                  : m;
    for (std::uint64_t i = first_slot + threadIdx.x; i < end; i += blockDim.x) {
      if (codec.maps())
        keys[first + i] = to_code ? codec.in(keys[first + i]) : codec.out(keys[first + i]);
      if constexpr (index_payload<V>)
        if (positions && to_code) values[first + i] = payload_of_index<V>(i);
    }
  }
}

// One tile pass of the device sort's schedule on every long segment that has its phase; a
// block takes tiles of the line in turn.
template <class Policy, class K, class V, class Compare>
__device__ void long_tile_pass(K* keys, V* values, const segment_list& segs,
                               const long_units& units, const index_math::pass& ps, bool descending,
                               Compare comp, unit_walk walk) {
  using tile_t = block::tile_network<K, V, block::block_team<Policy::tile_threads>,
                                     Policy::tile_bits, Policy::digit_bits, Compare>;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  auto& smem = *reinterpret_cast<typename tile_t::storage*>(shared_bytes);
  const int phase = index_math::step_at(ps.first_step).phase;
  if (phase > units.longest_class()) return;
  const std::uint64_t tiles = units.total_span() >> Policy::tile_bits;
  const std::uint64_t start = units.lists.counts ? units.lists.start(units.list) : 0;
  for (std::uint64_t f = walk.first; f < tiles; f += walk.stride) {
    std::uint64_t j = 0, span_start = 0;
    units.locate(f << Policy::tile_bits, j, span_start);
    const std::uint64_t s = units.lists.segment(units.list, j, start);
    const std::uint64_t first = segs.first(s), m = segs.last(s) - first;
    const std::uint64_t first_slot = (f << Policy::tile_bits) - span_start;
    if (phase > index_math::ceil_log2(m) || first_slot >= m) continue;  // sorted, or padding
    V* segment_values = nullptr;
    if constexpr (block::has_values<K, V>) segment_values = values + first;
    tile_t tile{smem, first_slot, m, descending, comp};
    tile.load(keys + first, segment_values);
    tile.run(ps);
    tile.store(keys + first, segment_values);
    __syncthreads();
  }
}

// One register pass (groups of 2^COUNT slots) on every long segment that has its phase; a
// thread takes groups of the line in turn.
template <int COUNT, class K, class V, class Compare>
__device__ void long_register_pass(K* keys, V* values, const segment_list& segs,
                                   const long_units& units, const index_math::window& win,
                                   int phase, bool descending, Compare comp, unit_walk walk) {
  if (phase > units.longest_class()) return;
  const std::uint64_t groups = units.total_span() >> win.group_bits;
  const std::uint64_t start = units.lists.counts ? units.lists.start(units.list) : 0;
  for (std::uint64_t f = walk.first; f < groups; f += walk.stride) {
    std::uint64_t j = 0, span_start = 0;
    units.locate(f << win.group_bits, j, span_start);
    const std::uint64_t s = units.lists.segment(units.list, j, start);
    const std::uint64_t first = segs.first(s), m = segs.last(s) - first;
    if (phase > index_math::ceil_log2(m)) continue;
    const index_t slot0 = win.slot(((f << win.group_bits) - span_start) >> win.group_bits, 0);
    if (slot0 >= m) continue;
    V* segment_values = nullptr;
    if constexpr (block::has_values<K, V>) segment_values = values + first;
    register_group<COUNT>(keys + first, segment_values, m, slot0, win.group_lo, phase,
                          descending, comp);
  }
}

// Calls f(std::integral_constant<int, g>) for a register pass of g = 1..MAX_BITS bits.
template <int MAX_BITS, class F>
__host__ __device__ void with_group_bits(int bits, F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) {
    ((bits == I + 1 ? (f(std::integral_constant<int, I + 1>{}), 0) : 0), ...);
  }(std::make_integer_sequence<int, MAX_BITS>{});
}

// Batched sorts, whose longest segment the host knows: a launch per pass.
template <int TILE_BITS, class K, class V>
__global__ void long_map_kernel(K* keys, V* values, segment_list segs, long_units units,
                                key_codec<K> codec, bool to_code, bool positions) {
  long_map<TILE_BITS>(keys, values, segs, units, codec, to_code, positions, unit_walk::blocks());
}

template <class Policy, class K, class V, class Compare>
__global__ void __launch_bounds__(Policy::tile_threads)
    long_tile_kernel(K* keys, V* values, segment_list segs, long_units units, index_math::pass ps,
                     bool descending, Compare comp) {
  long_tile_pass<Policy>(keys, values, segs, units, ps, descending, comp, unit_walk::blocks());
}

template <class Policy, int COUNT, class K, class V, class Compare>
__global__ void __launch_bounds__(Policy::register_threads)
    long_register_kernel(K* keys, V* values, segment_list segs, long_units units,
                         index_math::window win, int phase, bool descending, Compare comp) {
  long_register_pass<COUNT>(keys, values, segs, units, win, phase, descending, comp,
                           unit_walk::threads());
}

// Thread 0 waits until `done` reaches `target`, then the block sees what those units wrote
// (the fences of a cooperative grid barrier, with units for arrivals).
__device__ __forceinline__ void wait_for_units(const unsigned long long* done,
                                               unsigned long long target) {
  if (threadIdx.x == 0) {
    while (*static_cast<const volatile unsigned long long*>(done) < target) __nanosleep(128);
    __threadfence();
  }
  __syncthreads();
}

__device__ __forceinline__ void finish_unit(unsigned long long* done) {
  __syncthreads();  // every thread's writes of the unit, before thread 0 counts it
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(done, 1ull);
  }
}

template <class Policy, class K, class V, class Compare>
__global__ void __launch_bounds__(Policy::tile_threads)
    long_queue_kernel(K* keys, V* values, segment_list segs, class_lists lists, int list,
                      bool descending, Compare comp, key_codec<K> codec, bool positions) {
  using index_math::long_queue;
  const int longest = lists.longest_long_class();
  if (longest == 0) return;
  const long_units units{lists, list, 0};
  __shared__ unsigned long long ticket;
  for (;;) {
    if (threadIdx.x == 0) ticket = atomicAdd(lists.long_ticket, 1ull);
    __syncthreads();
    const unsigned long long t = ticket;
    if (t == 0) {  // the spans' prefix, which every later unit reads
      long_prefix<Policy::tile_bits, Policy::tile_threads>(segs, lists, list);
      finish_unit(lists.long_done);
      continue;
    }
    wait_for_units(lists.long_done, 1);
    const long_queue queue{longest,        units.total_span(), Policy::shape, Policy::tile_threads,
                           codec.maps() || positions, codec.maps()};
    long_queue::stage st;
    if (!queue.find(t - 1, st)) return;  // the same ticket for the whole block
    wait_for_units(lists.long_done, 1 + st.first_ticket);
    const std::uint64_t unit = t - 1 - st.first_ticket;
    switch (st.kind) {
      case long_queue::stage_kind::map_in:
      case long_queue::stage_kind::map_out: {
        const bool to_code = st.kind == long_queue::stage_kind::map_in;
        long_map<Policy::tile_bits>(keys, values, segs, units, codec, to_code,
                                    positions && to_code, unit_walk::block_unit(unit));
        break;
      }
      case long_queue::stage_kind::tiles:
        long_tile_pass<Policy>(keys, values, segs, units, st.ps, descending, comp,
                               unit_walk::block_unit(unit));
        break;
      case long_queue::stage_kind::registers: {
        const int phase = index_math::step_at(st.ps.first_step).phase;
        with_group_bits<Policy::register_bits>(st.ps.win.group_bits, [&](auto bits) {
          long_register_pass<decltype(bits)::value>(keys, values, segs, units, st.ps.win, phase,
                                                    descending, comp,
                                                    unit_walk::thread_of_unit(unit));
        });
        break;
      }
    }
    finish_unit(lists.long_done);  // its __syncthreads also frees `ticket` for the next
  }
}

// ---- positions for the sorts that read their values -------------------------------------

// values[i] = the position of key i in its segment, for every key of every valid segment: an
// argsort's indices, written before a sort that reads its values (CUB's). A warp a segment.
template <class V>
__global__ void write_positions_kernel(V* values, segment_list segs, std::uint64_t n) {
  const std::uint64_t warps = std::uint64_t{gridDim.x} * blockDim.x / 32;
  for (std::uint64_t s = (std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32;
       s < segs.count; s += warps) {
    if (!segs.valid(s, n)) continue;
    const std::uint64_t first = segs.first(s), m = segs.last(s) - first;
    for (std::uint64_t i = threadIdx.x & 31u; i < m; i += 32)
      values[first + i] = payload_of_index<V>(i);
  }
}

template <class V>
cudaError_t write_positions(V* values, const segment_list& segs, std::uint64_t n,
                            cudaStream_t stream) {
  if (segs.count == 0) return cudaSuccess;
  constexpr unsigned threads = 256, warps = threads / 32;
  const auto blocks = static_cast<unsigned>(
      std::min<std::uint64_t>((segs.count + warps - 1) / warps, std::uint64_t{1} << 16));
  write_positions_kernel<<<blocks, threads, 0, stream>>>(values, segs, n);
  return cudaGetLastError();
}

}  // namespace gpusort::detail::device
