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

#include "gpusort/detail/config.hpp"
#include "gpusort/detail/network/bitonic.hpp"

namespace gpusort::detail::network {

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
  // A segmented sort lists the segments of this class and up (classify_kernel); the
  // shuffle worker finds those below itself, in windows of consecutive segments. Listed,
  // the largest shuffle class spreads evenly over the warps: in windows, a warp's 64
  // segments of 65-128 keys took it 32 rounds and left a third of the warps idle (H100, 2^24
  // u32 keys in 128-key segments: 2.8x the batched time).
  GPUSORT_HD constexpr int listed_min_bits() const { return shuffle_max_bits(); }
  GPUSORT_HD constexpr int items_log2(int c) const { return c < max_items_log2() ? c : max_items_log2(); }
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

// Workspace of a segmented (not batched) sort of n keys, laid out by classify_kernel:
//  * a header: a counter per list (list 0 holds the largest long class instead) and the
//    shuffle worker's next window;
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

}  // namespace gpusort::detail::network
