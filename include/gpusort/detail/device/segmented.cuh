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
#pragma once

#include <algorithm>
#include <utility>

#include <cuda_runtime.h>

#include <cub/block/block_scan.cuh>

#include "gpusort/detail/block/bitonic_tile.cuh"
#include "gpusort/detail/block/warp_bitonic_sort.cuh"
#include "gpusort/detail/device/bitonic.cuh"
#include "gpusort/detail/device/launch.cuh"
#include "gpusort/detail/index_math/segments.hpp"

namespace gpusort::detail::device {

using index_math::segment_classes;
using index_math::segment_list;

template <class K, class V>
constexpr segment_classes classes_for{bitonic_policy<K, V, false>::slot_bytes};

// The class lists in the workspace (index_math::segment_workspace): counts[list], the
// segment indices of each tile class and of the long segments, the long segments' work
// offsets (long_units). counts[0] holds the largest class among the long segments instead
// (0 if none), so that the long schedule's passes above it have nothing to do.
struct class_lists {
  std::uint32_t* counts = nullptr;  // null for a batched sort: one class, all segments
  std::uint32_t* ids = nullptr;
  std::uint64_t* long_prefix = nullptr;
  unsigned long long* shuffle_cursor = nullptr;  // shuffle_segments_kernel's next window
  unsigned long long* long_ticket = nullptr;     // long_queue_kernel's next unit
  unsigned long long* long_done = nullptr;       // and its units finished
  index_math::segment_workspace layout{};
  std::uint64_t batch_count = 0;

  static class_lists in(void* temp, const index_math::segment_workspace& layout) {
    auto* bytes = static_cast<char*>(temp);
    const auto counter = [&](std::uint64_t offset) {
      return reinterpret_cast<unsigned long long*>(bytes + offset);
    };
    return {reinterpret_cast<std::uint32_t*>(bytes),
            reinterpret_cast<std::uint32_t*>(bytes + layout.header_bytes),
            reinterpret_cast<std::uint64_t*>(bytes + layout.long_prefix_offset()),
            counter(layout.cursor_offset),
            counter(layout.long_ticket_offset),
            counter(layout.long_done_offset),
            layout};
  }

  // Entries of `list`: a count past the list's room (overlapping segments, which the API
  // rejects) leaves the extra segments unsorted rather than writing past the list.
  __device__ std::uint64_t size(int list) const {
    if (!counts) return batch_count;
    const std::uint64_t c = counts[list], room = layout.capacity(list);
    return c < room ? c : room;
  }
  __device__ int longest_long_class() const { return static_cast<int>(counts[0]); }
  __device__ std::uint64_t start(int list) const { return layout.list_start(list); }
  // The segment index of entry e of `list`.
  __device__ std::uint64_t segment(int list, std::uint64_t e, std::uint64_t start) const {
    return counts ? ids[start + e] : e;
  }
};

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

constexpr int classify_threads = 256;

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

// ---- padding ---------------------------------------------------------------------------

// Whether partial segments are filled with index_math::padding_key and sorted by the whole
// network (integer keys in the default order; float keys are codes here), and whether a real
// key equal to it sends a shuffle worker back to virtual padding. The shuffle classes run
// the network of 2^C slots, whose directions move the fillers around: with values, a real
// key equal to one could end in a padding slot and its value would be lost. The tiles keep
// the directions of the segment's length, under which a filler never moves (the comparator
// between a real slot and a padding slot always puts the padding last), so ties are harmless
// there. Measured on an H100 (2^24 u32 keys): batches of 100 keys 0.194 -> 0.115 ms,
// 1,000 keys 0.357 -> 0.163, 3,000 0.472 -> 0.287, power-law sizes 0.386 -> 0.279.
struct padding_policy {
  bool fill;
  bool check_ties;
};
template <class K, class V, class Compare>
constexpr padding_policy fills_padding{
    std::is_integral_v<K> && std::is_same_v<Compare, gpusort::less<K>>,
    std::is_integral_v<K> && std::is_same_v<Compare, gpusort::less<K>> &&
        block::has_values<K, V>};
using index_math::padding_key;

// ---- shuffle classes ------------------------------------------------------------------

constexpr int shuffle_threads = 256;

// Class C: 2^C slots per segment, `items` keys per lane (index_math/segments.hpp), so a
// segment takes 2^C / items lanes and a warp sorts 32 / that many segments at once.
// Steps inside a lane's registers cost no shuffle: more keys per lane is cheaper.
template <class K, class V, int C>
struct shuffle_shape {
  static constexpr int items_log2 = classes_for<K, V>.items_log2(C);
  static constexpr int items = 1 << items_log2;
  static constexpr int lanes_log2 = C - items_log2;
  static constexpr unsigned per_warp = 32u >> lanes_log2;
};

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

// Segments a lane reads at once in shuffle_segments_kernel: a warp's window of 32 * this
// many, among which the segments of each class fill whole rounds more often.
constexpr int shuffle_window = 4;
// Bits per read of a lane's packed classes in shuffle_segments_kernel (classes 0..7).
constexpr int packed_class_bits = 4;
static_assert(shuffle_window * packed_class_bits <= 32);

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

// A team (a warp, or a block) per segment of class TILE_BITS, TEAMS teams per block.
template <class K, class V, int TILE_BITS, bool WARP>
struct tile_class_policy {
  static constexpr int slot_bytes = bitonic_policy<K, V, false>::slot_bytes;
  static constexpr int max_digit = slot_bytes <= 8 ? 5 : 4;
  // Every team member needs a member set in each digit round: 2^digit * size <= 2^TILE_BITS.
  static constexpr int digit = WARP ? (TILE_BITS - 5 < max_digit ? TILE_BITS - 5 : max_digit)
                                    : max_digit;
  static constexpr int team_threads = WARP ? 32 : 1 << (TILE_BITS - digit);
  using team = std::conditional_t<WARP, block::warp_team, block::block_team<team_threads>>;
  using storage = block::tile_storage<K, V, TILE_BITS>;
  static constexpr int teams = WARP ? (48 * 1024 / sizeof(storage) >= 4   ? 4
                                       : 48 * 1024 / sizeof(storage) >= 2 ? 2
                                                                           : 1)
                                    : 1;
  static constexpr int threads = team_threads * teams;
  static constexpr int smem_bytes = sizeof(storage) * teams;
};

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

// Segmented sorts: only the device knows whether any segment is long, and how long. One
// launch takes the units of the whole schedule, up to the longest class that
// classification found, from a queue (index_math::long_queue); with no long segment every
// block returns at once. (A launch per pass for segments up to n keys was 28 launches for 2^24 keys, mostly
// empty, 3-5 us each on an H100. A cooperative launch with grid barriers had to run first
// and alone, 3.7 us even with nothing to do: beside the tile workers its grid waited for room
// and stalled them.) Register passes take at most 2^4 slots per thread here, so that they
// share the tile pass's block and registers.
template <class Policy>
struct long_queue_policy : Policy {
  static constexpr int register_bits = Policy::register_bits < 4 ? Policy::register_bits : 4;
  static constexpr index_math::schedule_shape shape{Policy::tile_bits, register_bits};
};

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

// ---- launching -------------------------------------------------------------------------

// A persistent grid (as many blocks as fit on the device at once), no larger than `needed`.
template <class Kernel>
cudaError_t grid_for(Kernel kernel, int threads, int smem_bytes, std::uint64_t needed,
                     unsigned& blocks) {
  const cudaError_t e = resident_blocks(kernel, threads, smem_bytes, blocks);
  if (needed < blocks) blocks = static_cast<unsigned>(needed > 0 ? needed : 1);
  return e;
}

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
