// The stable tie-break's device passes (index math in index_math/tie_break.hpp): composites of
// run start and position, and the values gathered by position afterwards.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <cuda_runtime.h>

#include "gpusort/detail/index_math/tie_break.hpp"
#include "gpusort/detail/core/types.hpp"

namespace gpusort::detail::device {

namespace tie_break {

inline constexpr unsigned threads = 256;

inline unsigned blocks_for(std::uint64_t n) {
  return static_cast<unsigned>(std::min<std::uint64_t>((n + threads - 1) / threads, 65536));
}

template <class K>
__global__ void composite_kernel(const K* sorted_keys, const std::uint32_t* positions,
                                 std::uint64_t* composites, std::uint64_t n, bool descending,
                                 bool nans_lowest) {
  const auto rank_at = [&](std::uint64_t i) {
    return index_math::order_rank(sorted_keys[i], descending, nans_lowest);
  };
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    composites[i] =
        index_math::tie_composite(index_math::run_start(rank_at, i + 1, rank_at(i)), positions[i]);
}

template <class V>
__global__ void gather_kernel(const std::uint64_t* composites, const V* values, V* out,
                              std::uint64_t n) {
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = values[index_math::composite_position(composites[i])];
}

}  // namespace tie_break

// composites[i] = (start of key i's run) << 32 | positions[i], for keys sorted in the order
// (descending, nans_lowest).
template <class K>
cudaError_t tie_composites(const K* sorted_keys, const std::uint32_t* positions,
                           std::uint64_t* composites, std::uint64_t n, bool descending,
                           bool nans_lowest, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  tie_break::composite_kernel<<<tie_break::blocks_for(n), tie_break::threads, 0, stream>>>(
      sorted_keys, positions, composites, n, descending, nans_lowest);
  return cudaGetLastError();
}

// out[i] = values[position in composites[i]].
template <class V>
cudaError_t gather_by_composite(const std::uint64_t* composites, const V* values, V* out,
                                std::uint64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  tie_break::gather_kernel<<<tie_break::blocks_for(n), tie_break::threads, 0, stream>>>(
      composites, values, out, n);
  return cudaGetLastError();
}

}  // namespace gpusort::detail::device
