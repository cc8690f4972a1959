// Small types shared by every layer.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpusort/detail/core/config.hpp"

namespace gpusort::detail {

// Stand-in for the value array of a keys-only sort: every operation on it is a no-op.
struct no_value {};

// Values travel as opaque words of their size (4, 8 or 16 bytes), aligned to it.
template <std::size_t Bytes>
struct alignas(Bytes) payload {
  std::uint32_t words[Bytes / 4];
};

// Payloads that can hold an index: std::uint32_t or std::uint64_t indices travel as these.
template <class V>
constexpr bool index_payload = sizeof(V) == 4 || sizeof(V) == 8;

// The payload of index i as a std::uint32_t or std::uint64_t index stores it (low word
// first): the values of an argsort, made where the keys are loaded instead of read.
template <class P>
GPUSORT_HD constexpr P payload_of_index(std::uint64_t i) {
  static_assert(index_payload<P>);
  if constexpr (sizeof(P) == 4)
    return P{{static_cast<std::uint32_t>(i)}};
  else
    return P{{static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i >> 32)}};
}

}  // namespace gpusort::detail
