// Index math of the float fix-up after CUB's radix sort (algorithm::automatic on float keys).
//
// CUB's radix sort orders float bits as sign-flipped integers: -NaN < -inf < ... < -0.0 <
// +0.0 < ... < +inf < +NaN. gpusort's total order (key_traits.hpp) differs only in where the
// negative NaNs go: with every other NaN, last in ascending order and first in descending.
// In CUB's ascending output they are a prefix, in its descending output a suffix; a rotation
// of the whole array by their count m puts them in place and keeps every other key's (and
// value's) relative order. With m = 0 (the common case) nothing moves.
#pragma once

#include <cstdint>

#include "gpusort/detail/config.hpp"

namespace gpusort::detail::network {

// Whether float bits (U: the unsigned integer of the float's width) are a NaN with the sign
// bit set: exponent all ones, mantissa not zero.
template <class U>
GPUSORT_HD constexpr bool is_negative_nan_bits(U bits) {
  constexpr int width = sizeof(U) * 8;
  constexpr U sign = U{1} << (width - 1);
  constexpr U infinity = width == 32 ? U(0x7f800000u) : U(0x7ff0000000000000ull);
  return (bits & sign) != 0 && (bits & ~sign) > infinity;
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

}  // namespace gpusort::detail::network
