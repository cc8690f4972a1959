// The float fix-up after CUB's radix sort (network/radix_floats.hpp), through the radix
// sort's workspace, free again once it ran: three launches that find the run of zeros by
// binary search and, only when it mixes -0.0 and +0.0, partition it by sign; then two that
// find the negative NaNs and, only when there are some, rotate keys and values. Without
// mixed zeros or negative NaNs (the common case) all five return at once.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include "gpusort/detail/network/radix_floats.hpp"
#include "gpusort/detail/types.hpp"
#include "gpusort/key_traits.hpp"

namespace gpusort::detail::device {

namespace radix_floats {

inline constexpr int threads = 256;
inline constexpr unsigned max_blocks = 1024;  // a grid-stride loop: enough to fill an H100

// The first index in sorted keys[0, n) where `inside(bits)` no longer holds (it holds on a
// prefix).
template <class K, class Inside>
__device__ std::uint64_t prefix_end(const K* keys, std::uint64_t n, Inside inside) {
  using U = typename key_traits<K>::ordered_type;
  std::uint64_t low = 0, high = n;
  while (low < high) {
    const std::uint64_t mid = low + (high - low) / 2;
    if (inside(bit_cast<U>(keys[mid]))) low = mid + 1; else high = mid;
  }
  return low;
}

// The count of negative NaNs in sorted keys[0, n): they lead (ascending) or trail.
template <class K>
__device__ std::uint64_t count_negative_nans(const K* keys, std::uint64_t n, bool descending) {
  using U = typename key_traits<K>::ordered_type;
  const std::uint64_t first_other = prefix_end(
      keys, n, [&](U b) { return network::is_negative_nan_bits(b) != descending; });
  return network::negative_nan_count(first_other, n, descending);
}

// The run of zeros [first, last) and whether it mixes both signs (so that it must move).
struct zero_run {
  std::uint64_t first, last, mixed;
};

// Each block's share of the run of zeros: `chunk` keys from first + block * chunk.
__device__ inline std::uint64_t zero_run_chunk(const zero_run& run) {
  return (run.last - run.first + gridDim.x - 1) / gridDim.x;
}

// Finds the run (every block, by binary search) and counts the leading zeros of each block's
// share of it.
template <class K>
__global__ void __launch_bounds__(threads)
    count_leading_zeros_kernel(const K* keys, std::uint64_t n, bool descending, zero_run* run,
                               std::uint64_t* leading) {
  using U = typename key_traits<K>::ordered_type;
  __shared__ zero_run found;
  if (threadIdx.x == 0) {
    found.first = prefix_end(keys, n, [&](U b) { return network::before_zero_run(b, descending); });
    found.last =
        prefix_end(keys, n, [&](U b) { return network::not_after_zero_run(b, descending); });
    found.mixed = 0;
  }
  __syncthreads();
  const zero_run r = found;
  const std::uint64_t chunk = zero_run_chunk(r);
  const std::uint64_t begin = std::min(r.last, r.first + blockIdx.x * chunk);
  const std::uint64_t end = std::min(r.last, begin + chunk);
  unsigned mine = 0;
  for (std::uint64_t i = begin + threadIdx.x; i < end; i += threads)
    mine += network::leads_zero_run(bit_cast<U>(keys[i]), descending);
  using reduce = cub::BlockReduce<std::uint64_t, threads>;
  __shared__ typename reduce::TempStorage storage;
  const std::uint64_t total = reduce(storage).Sum(std::uint64_t{mine});
  if (threadIdx.x == 0) {
    leading[blockIdx.x] = total;
    if (blockIdx.x == 0) *run = r;
  }
}

// Writes each zero of the run (with its value) to its place in the partitioned run, in the
// second buffer; run->mixed says whether anything is to copy back.
template <class K, class V>
__global__ void __launch_bounds__(threads)
    partition_zeros_kernel(const K* keys, const V* values, K* keys_out, V* values_out,
                           bool descending, zero_run* run, const std::uint64_t* leading) {
  using U = typename key_traits<K>::ordered_type;
  const zero_run r = *run;
  if (r.last - r.first < 2) return;
  // Leading zeros before this block's share, and in the whole run.
  std::uint64_t before = 0, all = 0;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += threads) {
    all += leading[b];
    if (b < blockIdx.x) before += leading[b];
  }
  using reduce = cub::BlockReduce<std::uint64_t, threads>;
  __shared__ typename reduce::TempStorage reduce_storage;
  __shared__ std::uint64_t shared_before, shared_all;
  before = reduce(reduce_storage).Sum(before);
  __syncthreads();
  all = reduce(reduce_storage).Sum(all);
  if (threadIdx.x == 0) {
    shared_before = before;
    shared_all = all;
  }
  __syncthreads();
  all = shared_all;
  before = shared_before;
  const std::uint64_t length = r.last - r.first;
  if (all == 0 || all == length) return;  // one sign only: already in order
  if (blockIdx.x == 0 && threadIdx.x == 0) run->mixed = 1;
  const std::uint64_t chunk = zero_run_chunk(r);
  const std::uint64_t begin = std::min(length, blockIdx.x * chunk);
  const std::uint64_t end = std::min(length, begin + chunk);
  using scan = cub::BlockScan<unsigned, threads>;
  __shared__ typename scan::TempStorage scan_storage;
  for (std::uint64_t tile = begin; tile < end; tile += threads) {
    const std::uint64_t i = tile + threadIdx.x;
    const bool inside = i < end;
    const bool leads = inside && network::leads_zero_run(bit_cast<U>(keys[r.first + i]), descending);
    unsigned rank = 0, tile_total = 0;
    scan(scan_storage).ExclusiveSum(unsigned{leads}, rank, tile_total);
    if (inside) {
      const std::uint64_t to = network::zero_run_target(i, leads, before + rank, all);
      keys_out[to] = keys[r.first + i];
      if constexpr (!std::is_same_v<V, no_value>) values_out[to] = values[r.first + i];
    }
    before += tile_total;
    __syncthreads();
  }
}

template <class K, class V>
__global__ void copy_zeros_back_kernel(const K* keys_in, const V* values_in, K* keys, V* values,
                                       const zero_run* run) {
  const zero_run r = *run;
  if (!r.mixed) return;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
       i < r.last - r.first; i += std::uint64_t{gridDim.x} * blockDim.x) {
    keys[r.first + i] = keys_in[i];
    if constexpr (!std::is_same_v<V, no_value>) values[r.first + i] = values_in[i];
  }
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

inline unsigned blocks_for(std::uint64_t n) {
  return static_cast<unsigned>(std::min<std::uint64_t>(max_blocks, (n + threads - 1) / threads));
}

// The fix-up's workspace: a second buffer of n keys and n values, then its counters.
template <class K, class V>
struct layout {
  static constexpr std::size_t value_size = std::is_same_v<V, no_value> ? 0 : sizeof(V);
  std::size_t key_buffer, value_buffer, bytes;
  explicit layout(std::uint64_t n)
      : key_buffer(align_up(sizeof(K) * n)),
        value_buffer(align_up(value_size * n)),
        bytes(key_buffer + value_buffer + sizeof(zero_run) + sizeof(std::uint64_t) * (1 + max_blocks)) {}
};

}  // namespace radix_floats

// The workspace fix_radix_float_order needs (the radix sort's own holds at least the two
// buffers; the plan asks for the larger of the two).
template <class K, class V>
std::size_t radix_float_fixup_bytes(std::uint64_t n) {
  return radix_floats::layout<K, V>(n).bytes;
}

// Puts the zeros and the negative NaNs of radix-sorted float keys (and their values) where
// gpusort's total order puts them, through `temp` (radix_float_fixup_bytes), or returns
// cudaErrorInvalidValue.
template <class K, class V>
cudaError_t fix_radix_float_order(K* keys, V* values, std::uint64_t n, bool descending,
                                  void* temp, std::size_t temp_bytes, cudaStream_t stream) {
  static_assert(std::is_floating_point_v<K>);
  if (n < 2) return cudaSuccess;
  const radix_floats::layout<K, V> at(n);
  if (temp_bytes < at.bytes) return cudaErrorInvalidValue;
  char* base = static_cast<char*>(temp);
  K* keys_out = reinterpret_cast<K*>(base);
  V* values_out = reinterpret_cast<V*>(base + at.key_buffer);
  auto* run = reinterpret_cast<radix_floats::zero_run*>(base + at.key_buffer + at.value_buffer);
  auto* moved = reinterpret_cast<std::uint64_t*>(run + 1);
  std::uint64_t* leading = moved + 1;
  const unsigned blocks = radix_floats::blocks_for(n);
  using namespace radix_floats;
  count_leading_zeros_kernel<<<blocks, threads, 0, stream>>>(keys, n, descending, run, leading);
  partition_zeros_kernel<<<blocks, threads, 0, stream>>>(keys, values, keys_out, values_out,
                                                         descending, run, leading);
  copy_zeros_back_kernel<<<blocks, threads, 0, stream>>>(keys_out, values_out, keys, values, run);
  rotate_out_kernel<<<blocks, threads, 0, stream>>>(keys, values, keys_out, values_out, n,
                                                    descending, moved);
  copy_back_kernel<<<blocks, threads, 0, stream>>>(keys_out, values_out, keys, values, n, moved);
  return cudaGetLastError();
}

}  // namespace gpusort::detail::device
