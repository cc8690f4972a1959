// The NaN move on the device (index math in index_math/nan_block.hpp): two in-place launches.
// The first reverses both parts, each block finding the NaN block by k-ary search (the
// reversal keeps every position NaN or number, so the searches agree) and block 0 noting its
// size in 8 bytes of the caller's workspace; the second reverses the whole array. With no
// NaN (or only NaNs) both return at once.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda_runtime.h>

#include "gpusort/detail/device/radix_floats.cuh"
#include "gpusort/detail/index_math/nan_block.hpp"
#include "gpusort/detail/core/types.hpp"
#include "gpusort/key_traits.hpp"

namespace gpusort::detail::device {

namespace nan_block {

template <class K>
__device__ __forceinline__ bool is_nan_key(K k) {
  return k != k;
}

// The NaN count of sorted keys whose NaNs are a prefix or a suffix.
template <class K>
__device__ std::uint64_t count(const K* keys, std::uint64_t n, bool nans_in_front) {
  using U = typename key_traits<K>::ordered_type;
  const std::uint64_t end = radix_floats::prefix_end(keys, n, [&](U bits) {
    return is_nan_key(bit_cast<K>(bits)) == nans_in_front;
  });
  return index_math::nan_block_count(end, n, nans_in_front);
}

template <class K, class V>
__device__ __forceinline__ void swap_items(K* keys, V* values, std::uint64_t i, std::uint64_t j) {
  const K k = keys[i];
  keys[i] = keys[j];
  keys[j] = k;
  if constexpr (!std::is_same_v<V, no_value>) {
    const V v = values[i];
    values[i] = values[j];
    values[j] = v;
  }
}

// Reverses the NaNs and the numbers, each part on its own; notes the NaN count.
template <class K, class V>
__global__ void __launch_bounds__(radix_floats::threads)
    reverse_parts_kernel(K* keys, V* values, std::uint64_t n, bool nans_in_front,
                         std::uint64_t* nan_count) {
  const std::uint64_t m = count(keys, n, nans_in_front);
  if (blockIdx.x == 0 && threadIdx.x == 0) *nan_count = m;
  if (index_math::nan_block_stays(m, n)) return;
  const std::uint64_t split = index_math::nan_block_split(m, n, nans_in_front);
  for (std::uint64_t i = blockIdx.x * std::uint64_t{radix_floats::threads} + threadIdx.x;
       i < n; i += std::uint64_t{gridDim.x} * radix_floats::threads) {
    const std::uint64_t j = index_math::part_mirror(i, split, n);
    if (i < j) swap_items(keys, values, i, j);
  }
}

// Then reverses the whole array, when there was something to move.
template <class K, class V>
__global__ void __launch_bounds__(radix_floats::threads)
    reverse_whole_kernel(K* keys, V* values, std::uint64_t n, const std::uint64_t* nan_count) {
  if (index_math::nan_block_stays(*nan_count, n)) return;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{radix_floats::threads} + threadIdx.x;
       i < n / 2; i += std::uint64_t{gridDim.x} * radix_floats::threads)
    swap_items(keys, values, i, index_math::whole_mirror(i, n));
}

}  // namespace nan_block

// The workspace the move needs: the NaN count.
inline constexpr std::size_t nan_move_bytes = 256;

// Float keys sorted with their NaNs as the largest keys (a suffix ascending, a prefix
// descending): moves the NaNs to the other end, keeping every other order. `scratch`:
// nan_move_bytes of device memory. On the stream.
template <class K, class V>
cudaError_t move_nans_to_other_end(K* keys, V* values, std::uint64_t n, bool descending,
                                   void* scratch, cudaStream_t stream) {
  static_assert(std::is_floating_point_v<K>);
  if (n < 2) return cudaSuccess;
  auto* nan_count = static_cast<std::uint64_t*>(scratch);
  const unsigned blocks = radix_floats::blocks_for(n);
  nan_block::reverse_parts_kernel<<<blocks, radix_floats::threads, 0, stream>>>(
      keys, values, n, descending, nan_count);
  nan_block::reverse_whole_kernel<<<blocks, radix_floats::threads, 0, stream>>>(keys, values, n,
                                                                                 nan_count);
  return cudaGetLastError();
}

}  // namespace gpusort::detail::device
