// The float fix-up after CUB's radix sort (index_math/radix_floats.hpp), through the radix
// sort's workspace, free again once it ran. Three launches: every block finds the run of
// zeros and the negative NaNs by k-ary search and counts the leading zeros of its share of the
// run; then each key that must move (the run of zeros when it mixes both signs, every key when
// there are negative NaNs) is written to its place in the second buffer, and copied back.
// With nothing to repair (the common case) the last two return at once.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include "gpusort/detail/index_math/radix_floats.hpp"
#include "gpusort/detail/core/types.hpp"
#include "gpusort/key_traits.hpp"

namespace gpusort::detail::device {

namespace radix_floats {

inline constexpr int threads = 256;
inline constexpr unsigned max_blocks = 512;  // grid-stride loops: enough to fill an H100

// The first index in sorted keys[0, n) where `inside(bits)` no longer holds (it holds on a
// prefix), found by the whole block in about log_256(n) + 1 rounds of loads.
template <class K, class Inside>
__device__ std::uint64_t prefix_end(const K* keys, std::uint64_t n, Inside inside) {
  using U = typename key_traits<K>::ordered_type;
  index_math::search_range r{0, n};
  while (r.low < r.high) {
    const std::uint64_t step = index_math::kary_step(r, threads);
    const std::uint64_t at = r.low + threadIdx.x * step;
    const bool holds = at < r.high && inside(bit_cast<U>(keys[at]));
    r = index_math::kary_narrow(r, step, static_cast<unsigned>(__syncthreads_count(holds)));
  }
  return r.low;
}

// What the fix-up found: the run of zeros [zeros_first, zeros_last), its leading zeros
// (-0.0 ascending, +0.0 descending), the negative NaNs' count, and the range that moved.
struct fixup_plan {
  std::uint64_t zeros_first, zeros_last, leading_zeros, negative_nans, moved_first, moved_last;
};

// The zeros that must move: a run of both signs.
__device__ inline bool zeros_mixed(const fixup_plan& p) {
  return p.leading_zeros != 0 && p.leading_zeros != p.zeros_last - p.zeros_first;
}

// Each block's share of the run of zeros: `chunk` keys from zeros_first + block * chunk.
__device__ inline std::uint64_t zero_run_chunk(std::uint64_t run_length) {
  return (run_length + gridDim.x - 1) / gridDim.x;
}

// Finds the run of zeros and the negative NaNs (every block; block 0 writes them) and counts
// the leading zeros of each block's share of the run.
template <class K>
__global__ void __launch_bounds__(threads)
    find_kernel(const K* keys, std::uint64_t n, bool descending, fixup_plan* plan,
                std::uint64_t* leading) {
  using U = typename key_traits<K>::ordered_type;
  const std::uint64_t first =
      prefix_end(keys, n, [&](U b) { return index_math::before_zero_run(b, descending); });
  const std::uint64_t last =
      prefix_end(keys, n, [&](U b) { return index_math::not_after_zero_run(b, descending); });
  const std::uint64_t chunk = zero_run_chunk(last - first);
  const std::uint64_t begin = std::min(last, first + blockIdx.x * chunk);
  const std::uint64_t end = std::min(last, begin + chunk);
  unsigned mine = 0;
  for (std::uint64_t i = begin + threadIdx.x; i < end; i += threads)
    mine += index_math::leads_zero_run(bit_cast<U>(keys[i]), descending);
  using reduce = cub::BlockReduce<std::uint64_t, threads>;
  __shared__ typename reduce::TempStorage storage;
  const std::uint64_t total = reduce(storage).Sum(std::uint64_t{mine});
  if (threadIdx.x == 0) leading[blockIdx.x] = total;
  if (blockIdx.x != 0) return;
  const std::uint64_t first_other = prefix_end(
      keys, n, [&](U b) { return index_math::is_negative_nan_bits(b) != descending; });
  if (threadIdx.x == 0)
    *plan = {first, last, 0, index_math::negative_nan_count(first_other, n, descending), 0, 0};
}

// Writes every key that moves (with its value) to its place in the second buffer: the zeros
// partitioned by sign, then everything rotated by the negative NaNs' count.
template <class K, class V>
__global__ void __launch_bounds__(threads)
    move_out_kernel(const K* keys, const V* values, K* keys_out, V* values_out, std::uint64_t n,
                    bool descending, fixup_plan* plan, const std::uint64_t* leading) {
  using U = typename key_traits<K>::ordered_type;
  // Block 0 rewrites the plan below, but only fields every block recomputes: a read before or
  // after that write gives the same run and NaN count.
  fixup_plan p = *plan;
  // Leading zeros before this block's share of the run, and in the whole run.
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
  p.leading_zeros = shared_all;
  before = shared_before;
  const bool zeros = zeros_mixed(p);
  const std::uint64_t m = p.negative_nans;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    p.moved_first = m ? 0 : p.zeros_first;
    p.moved_last = m ? n : (zeros ? p.zeros_last : p.zeros_first);
    *plan = p;
  }
  if (!zeros && m == 0) return;
  const auto move = [&](std::uint64_t from, std::uint64_t to) {
    to = index_math::negative_nan_target(to, n, m, descending);  // the identity when m == 0
    keys_out[to] = keys[from];
    if constexpr (!std::is_same_v<V, no_value>) values_out[to] = values[from];
  };
  if (zeros) {
    const std::uint64_t length = p.zeros_last - p.zeros_first;
    const std::uint64_t chunk = zero_run_chunk(length);
    const std::uint64_t begin = std::min(length, blockIdx.x * chunk);
    const std::uint64_t end = std::min(length, begin + chunk);
    using scan = cub::BlockScan<unsigned, threads>;
    __shared__ typename scan::TempStorage scan_storage;
    for (std::uint64_t tile = begin; tile < end; tile += threads) {
      const std::uint64_t r = tile + threadIdx.x;
      const bool inside = r < end;
      const bool leads =
          inside && index_math::leads_zero_run(bit_cast<U>(keys[p.zeros_first + r]), descending);
      unsigned rank = 0, tile_leading = 0;
      scan(scan_storage).ExclusiveSum(unsigned{leads}, rank, tile_leading);
      if (inside)
        move(p.zeros_first + r,
             p.zeros_first + index_math::zero_run_target(r, leads, before + rank, p.leading_zeros));
      before += tile_leading;
      __syncthreads();
    }
  }
  if (m == 0) return;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{threads} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * threads)
    if (!zeros || i < p.zeros_first || i >= p.zeros_last) move(i, i);
}

template <class K, class V>
__global__ void __launch_bounds__(threads)
    copy_back_kernel(const K* keys_in, const V* values_in, K* keys, V* values,
                     const fixup_plan* plan) {
  const std::uint64_t first = plan->moved_first, last = plan->moved_last;
  for (std::uint64_t i = first + blockIdx.x * std::uint64_t{threads} + threadIdx.x; i < last;
       i += std::uint64_t{gridDim.x} * threads) {
    keys[i] = keys_in[i];
    if constexpr (!std::is_same_v<V, no_value>) values[i] = values_in[i];
  }
}

inline std::size_t align_up(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

inline unsigned blocks_for(std::uint64_t n) {
  return static_cast<unsigned>(std::min<std::uint64_t>(max_blocks, (n + threads - 1) / threads));
}

// The fix-up's workspace: a second buffer of n keys and n values, then its plan and counts.
template <class K, class V>
struct layout {
  static constexpr std::size_t value_size = std::is_same_v<V, no_value> ? 0 : sizeof(V);
  std::size_t key_buffer, value_buffer, bytes;
  explicit layout(std::uint64_t n)
      : key_buffer(align_up(sizeof(K) * n)),
        value_buffer(align_up(value_size * n)),
        bytes(key_buffer + value_buffer + sizeof(fixup_plan) +
              sizeof(std::uint64_t) * max_blocks) {}
};

}  // namespace radix_floats

// The workspace fix_radix_float_order needs (the plan asks for the larger of this and the
// radix sort's own).
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
  auto* plan = reinterpret_cast<radix_floats::fixup_plan*>(base + at.key_buffer + at.value_buffer);
  auto* leading = reinterpret_cast<std::uint64_t*>(plan + 1);
  const unsigned blocks = radix_floats::blocks_for(n);
  using namespace radix_floats;
  find_kernel<<<blocks, threads, 0, stream>>>(keys, n, descending, plan, leading);
  move_out_kernel<<<blocks, threads, 0, stream>>>(keys, values, keys_out, values_out, n,
                                                  descending, plan, leading);
  copy_back_kernel<<<blocks, threads, 0, stream>>>(keys_out, values_out, keys, values, plan);
  return cudaGetLastError();
}

}  // namespace gpusort::detail::device
