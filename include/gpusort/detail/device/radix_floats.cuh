// The float fix-up after CUB's radix sort (network/radix_floats.hpp): two launches that find
// the negative NaNs by binary search and, only when there are some, rotate keys and values
// through the radix sort's second buffer and back. With none (the common case) both kernels
// return at once: the fix-up costs two empty launches.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda_runtime.h>

#include "gpusort/detail/network/radix_floats.hpp"
#include "gpusort/detail/types.hpp"
#include "gpusort/key_traits.hpp"

namespace gpusort::detail::device {

namespace radix_floats {

inline constexpr int threads = 256;
inline constexpr unsigned max_blocks = 1024;  // a grid-stride loop: enough to fill an H100

// The count of negative NaNs in sorted keys[0, n): a binary search for the first key that is
// not one (ascending) or that is one (descending).
template <class K>
__device__ std::uint64_t count_negative_nans(const K* keys, std::uint64_t n, bool descending) {
  using U = typename key_traits<K>::ordered_type;
  std::uint64_t low = 0, high = n;
  while (low < high) {
    const std::uint64_t mid = low + (high - low) / 2;
    const bool nan = network::is_negative_nan_bits(bit_cast<U>(keys[mid]));
    if (nan != descending) low = mid + 1; else high = mid;
  }
  return network::negative_nan_count(low, n, descending);
}

template <class K, class V>
__global__ void rotate_out_kernel(const K* keys, const V* values, K* keys_out, V* values_out,
                                  std::uint64_t n, bool descending, std::uint64_t* moved) {
  __shared__ std::uint64_t m;
  if (threadIdx.x == 0) m = count_negative_nans(keys, n, descending);
  __syncthreads();
  if (blockIdx.x == 0 && threadIdx.x == 0) *moved = m;
  if (m == 0) return;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    const std::uint64_t to = network::negative_nan_target(i, n, m, descending);
    keys_out[to] = keys[i];
    if constexpr (!std::is_same_v<V, no_value>) values_out[to] = values[i];
  }
}

template <class K, class V>
__global__ void copy_back_kernel(const K* keys_in, const V* values_in, K* keys, V* values,
                                 std::uint64_t n, const std::uint64_t* moved) {
  if (*moved == 0) return;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    keys[i] = keys_in[i];
    if constexpr (!std::is_same_v<V, no_value>) values[i] = values_in[i];
  }
}

inline std::size_t align_up(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace radix_floats

// Moves the negative NaNs of radix-sorted float keys (and their values) to where gpusort's
// total order puts them. `temp` is the radix sort's workspace, free again once it ran; it
// holds n keys, n values and the count (8 bytes), or cudaErrorInvalidValue.
template <class K, class V>
cudaError_t move_negative_nans(K* keys, V* values, std::uint64_t n, bool descending, void* temp,
                               std::size_t temp_bytes, cudaStream_t stream) {
  static_assert(std::is_floating_point_v<K>);
  if (n < 2) return cudaSuccess;
  constexpr std::size_t value_size = std::is_same_v<V, no_value> ? 0 : sizeof(V);
  const std::size_t key_buffer = radix_floats::align_up(sizeof(K) * n);
  const std::size_t value_buffer = radix_floats::align_up(value_size * n);
  if (temp_bytes < key_buffer + value_buffer + sizeof(std::uint64_t)) return cudaErrorInvalidValue;
  char* base = static_cast<char*>(temp);
  K* keys_out = reinterpret_cast<K*>(base);
  V* values_out = reinterpret_cast<V*>(base + key_buffer);
  auto* moved = reinterpret_cast<std::uint64_t*>(base + key_buffer + value_buffer);
  const auto blocks = static_cast<unsigned>(
      std::min<std::uint64_t>(radix_floats::max_blocks,
                              (n + radix_floats::threads - 1) / radix_floats::threads));
  radix_floats::rotate_out_kernel<<<blocks, radix_floats::threads, 0, stream>>>(
      keys, values, keys_out, values_out, n, descending, moved);
  radix_floats::copy_back_kernel<<<blocks, radix_floats::threads, 0, stream>>>(
      keys_out, values_out, keys, values, n, moved);
  return cudaGetLastError();
}

}  // namespace gpusort::detail::device
