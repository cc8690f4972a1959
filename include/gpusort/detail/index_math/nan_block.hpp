// Index math of the NaN move: every sort of float keys can leave its NaNs as the largest keys
// (the library's own order: a suffix ascending, a prefix descending); when options::nans asks
// for the other end, the block of m NaNs is rotated there, in place, by two reversals: each
// of the two parts (NaNs, numbers), then the whole array. A rotation keeps the order inside
// both parts, so a stable sort stays stable. The first reversal leaves every position as NaN
// or number as it was, so it can count the NaNs while it runs.
#pragma once

#include <cstdint>

#include "gpusort/detail/core/config.hpp"

namespace gpusort::detail::index_math {

// The NaN count of a sorted array of n keys from the end of a prefix search: the NaNs are a
// prefix (`nans_in_front`) ending at `prefix_end`, or a suffix starting at it.
GPUSORT_HD constexpr std::uint64_t nan_block_count(std::uint64_t prefix_end, std::uint64_t n,
                                                   bool nans_in_front) {
  return nans_in_front ? prefix_end : n - prefix_end;
}

// Nothing to move: no NaN, or nothing but NaNs.
GPUSORT_HD constexpr bool nan_block_stays(std::uint64_t m, std::uint64_t n) {
  return m == 0 || m == n;
}

// Where the parts split: the NaNs are a prefix of m (`nans_in_front`) or a suffix of m.
GPUSORT_HD constexpr std::uint64_t nan_block_split(std::uint64_t m, std::uint64_t n,
                                                   bool nans_in_front) {
  return nans_in_front ? m : n - m;
}

// The first reversal: [0, split) and [split, n) each reversed; i's partner in its part (the
// lower of the two acts).
GPUSORT_HD constexpr std::uint64_t part_mirror(std::uint64_t i, std::uint64_t split,
                                               std::uint64_t n) {
  return i < split ? split - 1 - i : split + n - 1 - i;
}

// The second: index i trades places with its mirror in [0, n).
GPUSORT_HD constexpr std::uint64_t whole_mirror(std::uint64_t i, std::uint64_t n) {
  return n - 1 - i;
}

}  // namespace gpusort::detail::index_math
