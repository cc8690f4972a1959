// Address arithmetic of the pointer checks (src/convenience.cpp), tested on the CPU.
#pragma once

#include <cstdint>

namespace gpusort::detail {

// One past the last byte of `count` elements of `elem_bytes` from address `first`, or 0 where
// that would pass 2^64 (a count whose byte size wraps must not look like a small array).
constexpr std::uint64_t array_end(std::uint64_t first, std::uint64_t count,
                                  std::uint64_t elem_bytes) {
  if (elem_bytes == 0 || count > ~std::uint64_t{0} / elem_bytes) return 0;
  const std::uint64_t bytes = count * elem_bytes;
  return bytes > ~std::uint64_t{0} - first ? 0 : first + bytes;
}

}  // namespace gpusort::detail
