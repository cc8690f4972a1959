// A permutation of [0, n) computed independently per index on host or device, so that huge
// inputs can be made and checked on the GPU without a host copy: a bijection of [0, 2^k)
// (odd multiplications and an xorshift, all invertible mod 2^k) with cycle walking.
#pragma once

#include <cstdint>

#include "gpusort/detail/core/config.hpp"

namespace gpusort::tools {

GPUSORT_HD inline std::uint64_t shuffle_index(std::uint64_t i, std::uint64_t n) {
  int bits = 1;
  while ((std::uint64_t{1} << bits) < n) ++bits;
  const std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
  std::uint64_t x = i;
  do {
    x = (x * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) & mask;
    x ^= x >> (bits / 2 + 1);
    x = (x * 0xD6E8FEB86659FD93ull) & mask;
  } while (x >= n);
  return x;
}

}  // namespace gpusort::tools
