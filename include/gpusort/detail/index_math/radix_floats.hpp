// Index math of the float fix-up after CUB's radix sort (algorithm::automatic on float keys).
//
// CUB's radix sort orders float bits as sign-flipped integers, except that it reads -0.0 as
// +0.0: -NaN < -inf < ... < -0.0 == +0.0 < ... < +inf < +NaN, ties in input order.
// gpusort's total order (key_traits.hpp) differs in two places, each repaired by a pass that
// finds its place by binary search and moves nothing when there is nothing to repair:
// - zeros: -0.0 comes before +0.0 (after it in descending order). CUB leaves the zeros in one
//   run in input order; a stable partition of that run by sign puts them in place.
// - negative NaNs go with every other NaN, last in ascending order and first in descending.
//   In CUB's ascending output they are a prefix, in its descending output a suffix; a
//   rotation of the whole array by their count m puts them in place and keeps every other
//   key's (and value's) relative order.
#pragma once

#include <cstdint>

#include "gpusort/detail/core/config.hpp"

namespace gpusort::detail::index_math {

// Whether float bits (U: the unsigned integer of the float's width) are a NaN with the sign
// bit set: exponent all ones, mantissa not zero.
template <class U>
GPUSORT_HD constexpr bool is_negative_nan_bits(U bits) {
  constexpr int width = sizeof(U) * 8;
  constexpr U sign = U{1} << (width - 1);
  constexpr U infinity = width == 32 ? U(0x7f800000u) : U(0x7ff0000000000000ull);
  return (bits & sign) != 0 && (bits & ~sign) > infinity;
}

// Whether float bits are -0.0 or +0.0.
template <class U>
GPUSORT_HD constexpr bool is_zero_bits(U bits) {
  constexpr U sign = U{1} << (sizeof(U) * 8 - 1);
  return (bits & ~sign) == 0;
}

template <class U>
GPUSORT_HD constexpr bool has_sign_bit(U bits) {
  return (bits >> (sizeof(U) * 8 - 1)) != 0;
}

// In CUB's radix-sorted output, whether a key comes before the run of zeros (ascending: the
// negative keys, -NaN included; descending: the positive ones) ...
template <class U>
GPUSORT_HD constexpr bool before_zero_run(U bits, bool descending) {
  return !is_zero_bits(bits) && has_sign_bit(bits) != descending;
}

// ... and whether it comes no later than the end of that run.
template <class U>
GPUSORT_HD constexpr bool not_after_zero_run(U bits, bool descending) {
  return is_zero_bits(bits) || has_sign_bit(bits) != descending;
}

// Whether a zero goes in the first part of its run: -0.0 ascending, +0.0 descending.
template <class U>
GPUSORT_HD constexpr bool leads_zero_run(U bits, bool descending) {
  return has_sign_bit(bits) != descending;
}

// Where the zero at position r of its run goes (0-based in the run), given how many leading
// zeros come before it in the run and how many the run holds: a stable partition.
GPUSORT_HD constexpr std::uint64_t zero_run_target(std::uint64_t r, bool leads,
                                                   std::uint64_t leading_before,
                                                   std::uint64_t leading_total) {
  return leads ? leading_before : leading_total + (r - leading_before);
}

// In a radix-sorted array of n keys, the number m of negative NaNs, from `first_other`: the
// index of the first key that is not a negative NaN (ascending: they lead) or that is one
// (descending: they trail).
GPUSORT_HD constexpr std::uint64_t negative_nan_count(std::uint64_t first_other, std::uint64_t n,
                                                      bool descending) {
  return descending ? n - first_other : first_other;
}

// Where key i goes so that the m negative NaNs move from the front to the end (ascending) or
// from the end to the front (descending): a rotation that keeps every other order.
GPUSORT_HD constexpr std::uint64_t negative_nan_target(std::uint64_t i, std::uint64_t n,
                                                       std::uint64_t m, bool descending) {
  return descending ? (i + m) % n : (i + n - m) % n;
}

// A k-ary search for the end of the prefix where a predicate holds: each round, `probes`
// threads test low, low + step, low + 2 step, ... below high; `inside` of them hold (they
// are the first ones), and the end lies in the range this returns. A range of r keys takes
// about log_probes(r) + 1 rounds; it is empty-ended (low == high) once found.
struct search_range {
  std::uint64_t low, high;
};

GPUSORT_HD constexpr std::uint64_t kary_step(search_range r, unsigned probes) {
  return (r.high - r.low + probes - 1) / probes;
}

GPUSORT_HD constexpr search_range kary_narrow(search_range r, std::uint64_t step,
                                              unsigned inside) {
  if (inside == 0) return {r.low, r.low};
  const std::uint64_t last_inside = r.low + (inside - 1) * step;
  const std::uint64_t first_outside = r.low + inside * step;
  return {last_inside + 1, first_outside < r.high ? first_outside : r.high};
}

}  // namespace gpusort::detail::index_math
