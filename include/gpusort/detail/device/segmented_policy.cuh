// Batched and segmented sort's policy (segmented.cuh holds the schedule): the size classes of
// each key and value type, the class lists in the workspace, the padding rule, and the shapes of
// the shuffle, tile and long-segment workers.
#pragma once

#include <cstdint>
#include <type_traits>

#include "gpusort/detail/block/bitonic_tile.cuh"
#include "gpusort/detail/device/bitonic.cuh"
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

constexpr int classify_threads = 256;

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

// Segments a lane reads at once in shuffle_segments_kernel: a warp's window of 32 * this
// many, among which the segments of each class fill whole rounds more often.
constexpr int shuffle_window = 4;
// Bits per read of a lane's packed classes in shuffle_segments_kernel (classes 0..7).
constexpr int packed_class_bits = 4;
static_assert(shuffle_window * packed_class_bits <= 32);

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

}  // namespace gpusort::detail::device
