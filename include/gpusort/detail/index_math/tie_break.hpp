// Index math of the stable tie-break (options::stable with an algorithm that is not stable):
// the algorithm sorts (key, position) pairs; then every position p_j gets the rank of its
// key's run (the first index holding an equal key, found by binary search in the sorted keys)
// as its high half, `(run << 32) | p_j`; these composites are all different, so any sort of
// them puts each run's positions in input order and moves the keys along.
#pragma once

#include <cstdint>
#include <type_traits>

#include "gpusort/detail/core/config.hpp"
#include "gpusort/detail/core/float_order.hpp"
#include "gpusort/key_traits.hpp"

namespace gpusort::detail::index_math {

// An unsigned rank that rises along an array sorted in the library's order with this
// direction and NaN placement, equal exactly for keys the order calls equal (every NaN one).
template <class K>
GPUSORT_HD inline typename key_traits<K>::ordered_type order_rank(K key, bool descending,
                                                                  bool nans_lowest) {
  using U = typename key_traits<K>::ordered_type;
  U rank;
  if constexpr (std::is_floating_point_v<K>) {
    using order = float_order<K>;
    rank = order::tie_nans(order::to_code(bit_cast<U>(key), nans_lowest), nans_lowest);
  } else {
    rank = key_traits<K>::ordered(key);
  }
  return descending ? static_cast<U>(~rank) : rank;
}

// The first index in [0, n) whose rank is not below `rank` (ranks[] ascending): the start of
// the run of keys equal to one of rank `rank`.
template <class RankAt, class Rank>
GPUSORT_HD constexpr std::uint64_t run_start(RankAt rank_at, std::uint64_t n, Rank rank) {
  std::uint64_t low = 0, high = n;
  while (low < high) {
    const std::uint64_t mid = low + (high - low) / 2;
    if (rank_at(mid) < rank)
      low = mid + 1;
    else
      high = mid;
  }
  return low;
}

// The composite of run start and input position (both below 2^32), and the position back.
GPUSORT_HD constexpr std::uint64_t tie_composite(std::uint64_t run, std::uint32_t position) {
  return (run << 32) | position;
}
GPUSORT_HD constexpr std::uint32_t composite_position(std::uint64_t composite) {
  return static_cast<std::uint32_t>(composite);
}

// The tie-break sorts 32-bit positions: arrays of 2^32 keys or more take a stable algorithm.
GPUSORT_HD constexpr bool tie_break_fits(std::uint64_t n) { return n <= (std::uint64_t{1} << 32); }

}  // namespace gpusort::detail::index_math
