// Index math of an LSD radix sort over keys' ordered bits (key_traits<K>::ordered: unsigned
// integers whose order is the keys' total order): how many digit passes a key width takes,
// and each key's digit in a pass, least significant first. Descending order sorts the
// complemented bits, which keeps equal keys in input order (the sort stays stable).
#pragma once

#include <cstdint>

#include "gpusort/detail/core/config.hpp"

namespace gpusort::detail::index_math {

// Passes of digit_bits each over a U (the last one may hold fewer bits).
template <class U>
GPUSORT_HD constexpr int radix_passes(int digit_bits) {
  return (static_cast<int>(sizeof(U)) * 8 + digit_bits - 1) / digit_bits;
}

// The digit of `ordered` in pass `pass` (0: the least significant digit_bits bits).
template <class U>
GPUSORT_HD constexpr unsigned radix_digit(U ordered, int pass, int digit_bits, bool descending) {
  const U bits = descending ? static_cast<U>(~ordered) : ordered;
  const std::uint64_t wide = static_cast<std::uint64_t>(bits) >> (pass * digit_bits);
  return static_cast<unsigned>(wide & ((std::uint64_t{1} << digit_bits) - 1));
}

}  // namespace gpusort::detail::index_math
