// Device helpers for kernels that pick some of their items and append them to an output:
// values that may be absent (no_value), and output slots reserved a warp at a time.
#pragma once

#include <cstdint>
#include <type_traits>

#include "gpusort/detail/core/types.hpp"

namespace gpusort::detail::device {

template <class V>
__device__ __forceinline__ V load_value(const V* values, std::uint64_t i) {
  if constexpr (std::is_same_v<V, no_value>) return {};
  else return values[i];
}
template <class V>
__device__ __forceinline__ void store_value(V* values, std::uint64_t i, const V& v) {
  if constexpr (!std::is_same_v<V, no_value>) values[i] = v;
}

// Values that are the keys' positions (torch.topk's indices): generated, not read. V is the
// payload of a 4- or 8-byte integer (little-endian words).
template <class V>
struct positions {};
template <class V>
__device__ __forceinline__ V load_value(positions<V>, std::uint64_t i) {
  static_assert(sizeof(V) == 4 || sizeof(V) == 8);
  V v{};
  v.words[0] = static_cast<std::uint32_t>(i);
  if constexpr (sizeof(V) == 8) v.words[1] = static_cast<std::uint32_t>(i >> 32);
  return v;
}

// The slot of this lane's item among those its warp takes, reserved with one atomic per warp
// on *cursor (global or shared memory). Every lane of the warp must call it.
template <class Count>
__device__ __forceinline__ Count warp_reserve(bool take, Count* cursor) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned mask = __ballot_sync(0xffffffffu, take);
  Count at = 0;
  if (lane == 0 && mask) at = atomicAdd(cursor, static_cast<Count>(__popc(mask)));
  return __shfl_sync(0xffffffffu, at, 0) + static_cast<Count>(__popc(mask & ((1u << lane) - 1)));
}

}  // namespace gpusort::detail::device
