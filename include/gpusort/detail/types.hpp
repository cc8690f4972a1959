// Small types shared by every layer.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpusort::detail {

// Stand-in for the value array of a keys-only sort: every operation on it is a no-op.
struct no_value {};

// Values travel as opaque words of their size (4, 8 or 16 bytes), aligned to it.
template <std::size_t Bytes>
struct alignas(Bytes) payload {
  std::uint32_t words[Bytes / 4];
};

}  // namespace gpusort::detail
