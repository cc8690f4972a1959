// The textbook bitonic sort, as a baseline for the benchmarks: one kernel launch per
// compare-exchange step (log2(n) * (log2(n) + 1) / 2 launches, each a full pass over global
// memory), power-of-two n only, keys only, ascending. It is what the in-place bitonic sort
// of the library improves on.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

namespace gpusort::bench {

// Key types bench/classic_bitonic.cu is built for.
template <class K>
constexpr bool classic_bitonic_built = std::is_same_v<K, std::uint32_t> ||
                                       std::is_same_v<K, std::uint64_t> || std::is_same_v<K, float>;

// Sorts keys[0, n) on the device in gpusort's order (floats: NaNs last), ordered on
// `stream`. cudaErrorInvalidValue if n is not a power of two (0 and 1 are fine).
template <class K>
cudaError_t classic_bitonic_sort(K* keys, std::uint64_t n, cudaStream_t stream);

}  // namespace gpusort::bench
