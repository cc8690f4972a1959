// Segments of a batched or segmented sort, and the size class that decides who sorts one.
//
// A segment of m keys is sorted by a bitonic network of 2^c slots, c = ceil(log2 m). The
// slots past its end hold padding_key (integer keys in the default order) or are virtual
// padding, never compared. Its class is c, and the class picks the worker:
//  * shuffle classes, c <= shuffle_max_bits: a group of 2^c / items lanes of a warp holds
//    the keys in registers, `items` per lane; steps between lanes are shuffles (for a
//    segmented sort, classes from listed_min_bits on are listed first, the others found by
//    the worker itself);
//  * tile classes, c <= tile_max_bits: a warp (small tiles) or a thread block holds the
//    segment in shared memory and runs the steps a digit at a time (block/bitonic_tile.cuh);
//  * the long class, c > tile_max_bits: the device sort's passes over global memory, shared
//    by all long segments at once;
//  * segments of 0 or 1 key: nothing to do.
// The limits depend on the bytes a slot takes (key plus value), so that registers and shared
// memory hold a segment at any key and value size.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "gpusort/detail/core/config.hpp"
#include "gpusort/detail/index_math/bitonic.hpp"

namespace gpusort::detail::index_math {

// Where the segments lie. Batched: segment i is [i * batch_size, (i + 1) * batch_size), and
// begin/end are null. Segmented: begin[i], end[i] in device (or, on the CPU, host) memory,
// as 4- or 8-byte unsigned integers (signed offsets read the same when non-negative; a
// negative one reads as huge and is rejected by validation).
struct segment_list {
  const void* begin = nullptr;
  const void* end = nullptr;
  std::uint64_t count = 0;
  std::uint64_t batch_size = 0;
  int offset_bytes = 8;

  GPUSORT_HD constexpr bool batched() const { return begin == nullptr; }

  GPUSORT_HD constexpr std::uint64_t read(const void* offsets, std::uint64_t i) const {
    return offset_bytes == 4 ? static_cast<const std::uint32_t*>(offsets)[i]
                             : static_cast<const std::uint64_t*>(offsets)[i];
  }
  GPUSORT_HD constexpr std::uint64_t first(std::uint64_t i) const {
    return batched() ? i * batch_size : read(begin, i);
  }
  GPUSORT_HD constexpr std::uint64_t last(std::uint64_t i) const {  // one past the end
    return batched() ? (i + 1) * batch_size : read(end, i);
  }
  // A segment is usable when begin <= end <= n (every key it names exists).
  GPUSORT_HD constexpr bool valid(std::uint64_t i, std::uint64_t n) const {
    const std::uint64_t b = first(i), e = last(i);
    return b <= e && e <= n;
  }
};

// The size classes for one slot size (bytes of a key plus its value).
struct segment_classes {
  int slot_bytes;

  // Keys per lane in a shuffle class: up to 8 (4 for slots over 8 bytes, to bound
  // registers); a segment of 2^c keys takes 2^(c - items_log2(c)) lanes.
  GPUSORT_HD constexpr int max_items_log2() const { return slot_bytes <= 8 ? 3 : 2; }
  // Up to 128 slots: at 256, a warp's tile in shared memory beat the full-warp shuffle class
  // (H100, u32 keys 0.256 -> 0.180 ms at 2^24 keys, u32 pairs 0.460 -> 0.291, u64 0.486 ->
  // 0.357): fifteen shuffle steps of every key cost more than a few shared-memory rounds.
  GPUSORT_HD constexpr int shuffle_max_bits() const { return 7; }
  // A segmented sort lists the segments of this class and up (classification); the
  // shuffle worker finds those below itself, in windows of consecutive segments. Listed,
  // the largest shuffle class spreads evenly over the warps: in windows, a warp's 64
  // segments of 65-128 keys took it 32 rounds and left a third of the warps idle (H100, 2^24
  // u32 keys in 128-key segments: 2.8x the batched time).
  GPUSORT_HD constexpr int listed_min_bits() const { return shuffle_max_bits(); }
  GPUSORT_HD constexpr int items_log2(int c) const { return c < max_items_log2() ? c : max_items_log2(); }
  // Whether the window worker, which reads every segment's offsets anyway, makes the lists
  // as it goes (the listed classes then start after it) rather than a classification pass
  // before it: when n keys in `segments` segments average no more than the window worker's
  // classes hold (device/segmented.cuh, run_all, measured there).
  GPUSORT_HD constexpr bool window_worker_lists(std::uint64_t n, std::uint64_t segments) const {
    return n <= segments * (std::uint64_t{1} << (listed_min_bits() - 1));
  }
  // A warp in shared memory up to 1024 slots, then thread blocks up to 32 KiB of slots.
  GPUSORT_HD constexpr int warp_tile_max_bits() const { return 10; }
  GPUSORT_HD constexpr int tile_max_bits() const {
    return slot_bytes <= 4 ? 13 : slot_bytes <= 8 ? 12 : slot_bytes <= 16 ? 11 : 10;
  }
  // Class of a segment of m keys: 0 for m <= 1 (nothing to do), else ceil(log2 m).
  GPUSORT_HD constexpr int of(std::uint64_t m) const { return ceil_log2(m); }
  GPUSORT_HD constexpr bool is_long(int c) const { return c > tile_max_bits(); }
  // Classes with their own list of segments: 1 .. tile_max_bits, then one list for all long
  // segments at index tile_max_bits + 1.
  GPUSORT_HD constexpr int list_of(int c) const { return is_long(c) ? tile_max_bits() + 1 : c; }
  static constexpr int max_lists = 16;  // > the largest tile_max_bits + 1
};

// Set bits of x.
GPUSORT_HD constexpr unsigned set_bits(std::uint32_t x) {
#ifdef __CUDA_ARCH__
  return static_cast<unsigned>(__popc(x));
#else
  return static_cast<unsigned>(std::popcount(x));
#endif
}

// Position of the k-th (from 0) set bit of mask, or 32 if it has no more than k: which
// lane holds the k-th segment of a class among a warp's 32 (a binary search on the counts of
// set bits, about 20 instructions; PTX's fns is a longer emulated sequence).
GPUSORT_HD constexpr unsigned nth_set_bit(std::uint32_t mask, unsigned k) {
  if (set_bits(mask) <= k) return 32;
  unsigned position = 0;
  for (unsigned width = 16; width > 0; width /= 2) {
    const std::uint32_t low_half = mask & ((1u << width) - 1u);
    const unsigned low = set_bits(low_half);
    if (k >= low) {
      k -= low;
      mask >>= width;
      position += width;
    } else {
      mask = low_half;
    }
  }
  return position;
}

// Position (read * 32 + lane) of the k-th (from 0) set bit of a window's masks taken in
// order, masks[r] holding read r's lanes; 32 * W if they have no more than k set bits.
template <int W>
GPUSORT_HD constexpr unsigned nth_set_bit_of_window(const std::uint32_t (&masks)[W], unsigned k) {
  for (int r = 0; r < W; ++r) {
    const unsigned here = set_bits(masks[r]);
    if (k < here) return 32u * r + nth_set_bit(masks[r], k);
    k -= here;
  }
  return 32u * W;
}

// The key that fills a partial segment's slots past its end, for integer keys in the default
// order (float keys are codes there): the largest ascending, the smallest descending, so
// that it sorts after every real key. With it the whole network runs without a padding
// check on any comparator, and the real keys end where virtual padding leaves them (an
// equal real key may trade places with it, which only matters when values travel along).
template <class K>
GPUSORT_HD constexpr K padding_key(bool descending) {
  static_assert(std::is_integral_v<K>);
  return descending ? std::numeric_limits<K>::lowest() : std::numeric_limits<K>::max();
}

// Workspace of a segmented (not batched) sort of n keys, filled by the classification
// (device/segmented.cuh: classify_kernel, or the window worker as it goes):
//  * a header: a counter per list (list 0 holds the largest long class instead), the
//    shuffle worker's next window, and the long queue's next ticket and units done;
//  * a list of segment indices (4 bytes each) per class from listed_min_bits to
//    tile_max_bits and one for the long segments. The smaller classes have none: their
//    worker reads the offsets itself. A list has room for as many segments of its class as
//    n keys hold, since segments do not overlap and a segment of class c has more than
//    2^(c-1) keys: n >> (c - 1) at most, and no more than there are segments. All lists
//    together take at most n / 8 bytes;
//  * the long segments' work offsets, 8 bytes per entry of the long list and one more.
struct segment_workspace {
  std::uint64_t n = 0;
  std::uint64_t segments = 0;
  segment_classes classes{4};

  static constexpr std::uint64_t header_bytes = 128;
  static constexpr std::uint64_t cursor_offset = segment_classes::max_lists * 4;
  static constexpr std::uint64_t long_ticket_offset = cursor_offset + 8;
  static constexpr std::uint64_t long_done_offset = long_ticket_offset + 8;
  static_assert(long_done_offset + 8 <= header_bytes);

  GPUSORT_HD constexpr int first_list() const { return classes.listed_min_bits(); }
  GPUSORT_HD constexpr int long_list() const { return classes.tile_max_bits() + 1; }
  // Entries list `list` has room for (first_list() <= list <= long_list(); a long segment
  // has more than 2^tile_max_bits keys, so the long list's bound has the same form).
  GPUSORT_HD constexpr std::uint64_t capacity(int list) const {
    const std::uint64_t fit = n >> (list - 1);
    return fit < segments ? fit : segments;
  }
  // Entries of the lists before `list`: where its own begin.
  GPUSORT_HD constexpr std::uint64_t list_start(int list) const {
    std::uint64_t s = 0;
    for (int l = first_list(); l < list; ++l) s += capacity(l);
    return s;
  }
  GPUSORT_HD constexpr std::uint64_t list_entries() const { return list_start(long_list() + 1); }
  GPUSORT_HD constexpr std::uint64_t long_prefix_offset() const {
    return header_bytes + (4 * list_entries() + 7) / 8 * 8;
  }
  GPUSORT_HD constexpr std::uint64_t bytes() const {
    return long_prefix_offset() + 8 * (capacity(long_list()) + 1);
  }
};

// The long segments' schedule of a segmented sort as a queue of work units, since only the
// device knows the longest segment: a block takes the next ticket and runs its unit once
// every unit of the stages before has finished. Tickets are taken in order, so each unit of
// an earlier stage belongs to a block that is running already: any grid finishes, resident
// or not, beside other kernels or alone (a grid barrier needs a cooperative launch, which
// waits until the whole grid fits on the device). Ticket 0 writes the spans' prefix (the
// line); the queue's own tickets follow it, numbered from 0 here:
//  * the keys mapped to codes, or positions written, when `map_in`: a unit per tile;
//  * every pass of the device sort's schedule for 2^longest slots on a line of `line`
//    slots: a tile pass takes a unit per tile of 2^shape.tile_bits slots, a register pass a
//    unit per `threads` register groups;
//  * the codes mapped back when `map_out`: a unit per tile.
// A stage's units finish only after every earlier stage's, so "the stages before stage s are
// done" is "units done >= s.first_ticket": one counter serves every stage.
struct long_queue {
  int longest = 0;
  std::uint64_t line = 0;
  schedule_shape shape{};
  int threads = 1;
  bool map_in = false;
  bool map_out = false;

  enum class stage_kind { map_in, tiles, registers, map_out };
  struct stage {
    stage_kind kind = stage_kind::map_in;
    pass ps{};
    std::uint64_t first_ticket = 0;
    std::uint64_t units = 0;
  };

  GPUSORT_HD constexpr std::uint64_t tiles() const { return line >> shape.tile_bits; }
  GPUSORT_HD constexpr std::uint64_t units_of(const pass& ps) const {
    if (ps.win.contiguous()) return tiles();
    const std::uint64_t groups = line >> ps.win.group_bits;
    return (groups + threads - 1) / static_cast<std::uint64_t>(threads);
  }
  // Calls f(stage) for every stage in order; returns the tickets of all of them.
  template <class F>
  GPUSORT_HD constexpr std::uint64_t for_each_stage(F&& f) const {
    std::uint64_t next = 0;
    const auto visit = [&](stage_kind kind, const pass& ps, std::uint64_t units) {
      f(stage{kind, ps, next, units});
      next += units;
    };
    if (map_in) visit(stage_kind::map_in, pass{}, tiles());
    for_each_pass(index_t{1} << longest, shape, [&](const pass& ps) {
      visit(ps.win.contiguous() ? stage_kind::tiles : stage_kind::registers, ps, units_of(ps));
    });
    if (map_out) visit(stage_kind::map_out, pass{}, tiles());
    return next;
  }
  // The stage that ticket t belongs to; false past the last ticket.
  GPUSORT_HD constexpr bool find(std::uint64_t t, stage& out) const {
    bool found = false;
    for_each_stage([&](const stage& s) {
      if (!found && t >= s.first_ticket && t < s.first_ticket + s.units) {
        out = s;
        found = true;
      }
    });
    return found;
  }
};

}  // namespace gpusort::detail::index_math
