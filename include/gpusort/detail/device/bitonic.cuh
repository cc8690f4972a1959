// Device-wide in-place bitonic sort (Peters et al.; passes after Capannini et al.).
//
// Schedule (index_math::for_each_pass), one kernel launch per pass, each one read and one write
// of the keys:
//  * tile passes (bitonic_tile_kernel): a block sorts or merges a tile of 2^m consecutive
//    keys in shared memory: phases 1..m in the first pass, then the last m steps of every
//    later phase;
//  * register passes (bitonic_register_kernel): the long-distance steps of a phase, up to g
//    at a time; a thread loads the 2^g keys that differ in those bits straight from global
//    memory (neighbouring threads read neighbouring keys), runs the g steps in registers and
//    writes them back: no shared memory, no barrier.
// For n = 2^28 u32 keys (m = 14, g = 6): 1 + 14 tile passes and 24 register passes.
// Padded slots (>= n) are never read or written, and no device memory is allocated.
#pragma once

#include <algorithm>
#include <cuda_runtime.h>

#include "gpusort/detail/block/bitonic_tile.cuh"
#include "gpusort/detail/index_math/bitonic.hpp"

namespace gpusort::detail::device {

using index_math::index_t;

// Tunables, by the bytes one slot occupies (key plus value). SMALL: the schedule for arrays
// of up to small_sort_limit keys, whose few large tiles would leave most SMs idle during the
// tile sort: 16 KiB tiles of 256 threads instead.
template <class K, class V, bool SMALL>
struct bitonic_policy {
  static constexpr int slot_bytes = sizeof(K) + (block::has_values<K, V> ? sizeof(V) : 0);
  // 8-byte keys alone: 128 KiB tiles, 1024 threads of 16 keys, one block per SM (measured
  // faster for u64; u32 keys lose more to the missing overlap of a second block than they gain
  // from the longer tile). Otherwise 64 KiB tiles and 512 threads.
  static constexpr bool big_tile = !SMALL && !block::has_values<K, V> && slot_bytes == 8;
  static constexpr int tile_threads = SMALL ? 256 : big_tile ? 1024 : 512;
  static constexpr int tile_bytes_log2 = SMALL ? 14 : big_tile ? 17 : 16;
  static constexpr int tile_bits = tile_bytes_log2 - (slot_bytes <= 4 ? 2 : slot_bytes <= 8 ? 3 : slot_bytes <= 16 ? 4 : 5);
  static constexpr int digit_bits = slot_bytes <= 8 ? 5 : 4;  // tile steps per round trip
  static constexpr int register_threads = 256;
  static constexpr int register_bits = slot_bytes <= 4 ? 6 : slot_bytes <= 8 ? 5 : 3;
  static constexpr index_math::schedule_shape shape{tile_bits, register_bits};
};

// Measured on an H100: 16 KiB tiles win for u32 up to 2^20 keys (2^16: 67 -> 46 us, 2^20:
// 126 -> 112 us) but lose at 2^21 (161 -> 191 us); for u64 they win at 2^16 (92 -> 81 us)
// and lose at 2^20 (196 -> 288 us).
template <class K, class V>
constexpr index_t small_sort_limit =
    index_t{1} << (bitonic_policy<K, V, false>::slot_bytes <= 4 ? 20 : 17);

template <class Policy, class K, class V, class Compare>
__global__ void __launch_bounds__(Policy::tile_threads)
    bitonic_tile_kernel(K* keys, V* values, index_t n, index_math::pass ps, bool descending,
                        Compare comp) {
  using tile_t = block::tile_network<K, V, block::block_team<Policy::tile_threads>, Policy::tile_bits,
                                     Policy::digit_bits, Compare>;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  auto& smem = *reinterpret_cast<typename tile_t::storage*>(shared_bytes);
  const index_t first_slot = static_cast<index_t>(blockIdx.x) << Policy::tile_bits;
  tile_t tile{smem, first_slot, n, descending, comp};
  tile.load(keys, values);
  tile.run(ps);
  tile.store(keys, values);
}

template <int COUNT, class K, class V, class Compare>
__device__ __forceinline__ void register_group(K* keys, V* values, index_t n, index_t slot0,
                                               int lo, int phase, bool descending,
                                               Compare comp) {
  constexpr int members = 1 << COUNT;
  const bool asc = index_math::ascending(slot0, phase, n, descending);
  const int real = index_math::real_members(slot0, lo, COUNT, n);
  K k[members];
  V v[members];
  if (real == members) {
#pragma unroll
    for (int r = 0; r < members; ++r) {
      k[r] = keys[slot0 + (index_t(r) << lo)];
      if constexpr (block::has_values<K, V>) v[r] = values[slot0 + (index_t(r) << lo)];
    }
    index_math::group_steps<COUNT, false>(k, v, asc, real, comp);
#pragma unroll
    for (int r = 0; r < members; ++r) {
      keys[slot0 + (index_t(r) << lo)] = k[r];
      if constexpr (block::has_values<K, V>) values[slot0 + (index_t(r) << lo)] = v[r];
    }
  } else {
#pragma unroll
    for (int r = 0; r < members; ++r)
      if (r < real) {
        k[r] = keys[slot0 + (index_t(r) << lo)];
        if constexpr (block::has_values<K, V>) v[r] = values[slot0 + (index_t(r) << lo)];
      }
    index_math::group_steps<COUNT, true>(k, v, asc, real, comp);
#pragma unroll
    for (int r = 0; r < members; ++r)
      if (r < real) {
        keys[slot0 + (index_t(r) << lo)] = k[r];
        if constexpr (block::has_values<K, V>) values[slot0 + (index_t(r) << lo)] = v[r];
      }
  }
}

template <class Policy, int COUNT, class K, class V, class Compare>
__global__ void __launch_bounds__(Policy::register_threads)
    bitonic_register_kernel(K* keys, V* values, index_t n, index_math::window win, int phase,
                            bool descending, Compare comp) {
  const index_t t = static_cast<index_t>(blockIdx.x) * Policy::register_threads + threadIdx.x;
  const index_t slot0 = win.slot(t, 0);
  if (slot0 >= n) return;
  register_group<COUNT>(keys, values, n, slot0, win.group_lo, phase, descending, comp);
}

// Launches the whole schedule of `policy` on `stream`. Returns the first launch error.
template <class policy, class K, class V, class Compare>
cudaError_t run_bitonic_schedule(K* keys, V* values, index_t n, Compare comp, bool descending,
                                 cudaStream_t stream) {
  using storage = block::tile_storage<K, V, policy::tile_bits>;
  auto tile_kernel = bitonic_tile_kernel<policy, K, V, Compare>;
  constexpr int smem_bytes = sizeof(storage);
  if constexpr (smem_bytes > 48 * 1024) {
    const cudaError_t e =
        cudaFuncSetAttribute(tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
    if (e != cudaSuccess) return e;
  }
  cudaError_t status = cudaSuccess;
  index_math::for_each_pass(n, policy::shape, [&](const index_math::pass& ps) {
    if (status != cudaSuccess) return;
    if (ps.win.contiguous()) {
      const index_t tiles = ((n - 1) >> policy::tile_bits) + 1;
      tile_kernel<<<static_cast<unsigned>(tiles), policy::tile_threads, smem_bytes, stream>>>(
          keys, values, n, ps, descending, comp);
    } else {
      const index_t threads = ps.win.count(n);
      const auto blocks = static_cast<unsigned>((threads + policy::register_threads - 1) /
                                                policy::register_threads);
      const int phase = index_math::step_at(ps.first_step).phase;
      auto launch = [&](auto kernel) {
        kernel<<<blocks, policy::register_threads, 0, stream>>>(keys, values, n, ps.win, phase,
                                                                descending, comp);
      };
      switch (ps.win.group_bits) {
        case 1: launch(bitonic_register_kernel<policy, 1, K, V, Compare>); break;
        case 2: launch(bitonic_register_kernel<policy, 2, K, V, Compare>); break;
        case 3: launch(bitonic_register_kernel<policy, 3, K, V, Compare>); break;
        case 4:
          if constexpr (policy::register_bits >= 4)
            launch(bitonic_register_kernel<policy, 4, K, V, Compare>);
          break;
        case 5:
          if constexpr (policy::register_bits >= 5)
            launch(bitonic_register_kernel<policy, 5, K, V, Compare>);
          break;
        default:
          if constexpr (policy::register_bits >= 6)
            launch(bitonic_register_kernel<policy, 6, K, V, Compare>);
          break;
      }
    }
    status = cudaGetLastError();
  });
  return status;
}

template <class K, class V, class Compare>
cudaError_t bitonic_sort(K* keys, V* values, index_t n, Compare comp, bool descending,
                         cudaStream_t stream) {
  if (n < 2) return cudaSuccess;
  if (n <= small_sort_limit<K, V>)
    return run_bitonic_schedule<bitonic_policy<K, V, true>>(keys, values, n, comp, descending,
                                                            stream);
  return run_bitonic_schedule<bitonic_policy<K, V, false>>(keys, values, n, comp, descending,
                                                           stream);
}

}  // namespace gpusort::detail::device
