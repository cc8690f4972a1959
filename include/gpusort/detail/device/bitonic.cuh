// Device-wide in-place bitonic sort (Peters et al.; windows after Capannini et al.).
//
// Schedule (network::for_each_pass), one kernel launch per pass, each a read and a write of
// the keys: first every tile of 2^m keys is sorted in shared memory (phases 1..m); then each
// later phase p takes ceil((p - m) / (m - c)) passes for its long-distance steps (windows
// that keep the c lowest address bits, so every load is a coalesced run) and one tile pass
// for its last m steps. Padded slots (>= n) are never read or written, and no device memory
// is allocated.
#pragma once

#include <algorithm>
#include <cuda_runtime.h>

#include "gpusort/detail/block/bitonic_window.cuh"
#include "gpusort/detail/network/bitonic.hpp"

namespace gpusort::detail::device {

using network::index_t;

// Tunables, by the bytes one slot occupies (key plus value).
template <class K, class V>
struct bitonic_policy {
  static constexpr int slot_bytes = sizeof(K) + (block::has_values<K, V> ? sizeof(V) : 0);
  static constexpr int threads = 512;
  static constexpr int group = 3;  // steps per register round trip
  static constexpr int min_low_bits = 5;
  // the largest tile that fits in 64 KiB of shared memory
  static constexpr int tile_bits = slot_bytes <= 4 ? 14 : slot_bytes <= 8 ? 13 : slot_bytes <= 16 ? 12 : 11;
  static constexpr network::schedule_shape shape{tile_bits, min_low_bits};
};

template <class Policy, class K, class V, class Compare>
__global__ void __launch_bounds__(Policy::threads)
    bitonic_pass_kernel(K* keys, V* values, index_t n, network::pass ps, bool descending,
                        Compare comp) {
  using network_t = block::window_network<K, V, Policy::threads, Policy::tile_bits,
                                          Policy::group, Compare>;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  auto& smem = *reinterpret_cast<typename network_t::storage*>(shared_bytes);
  const index_t windows = ps.win.count(n);
  for (index_t w = blockIdx.x; w < windows; w += gridDim.x) {
    if (ps.win.slot(w, 0) >= n) continue;
    network_t net{smem, ps.win, w, n, descending, comp};
    net.load(keys, values);
    net.run(ps);
    net.store(keys, values);
    __syncthreads();
  }
}

// Launches the whole schedule on `stream`. Returns the first launch error.
template <class K, class V, class Compare>
cudaError_t bitonic_sort(K* keys, V* values, index_t n, Compare comp, bool descending,
                         cudaStream_t stream) {
  if (n < 2) return cudaSuccess;
  using policy = bitonic_policy<K, V>;
  using storage = block::window_storage<K, V, policy::tile_bits>;
  auto kernel = bitonic_pass_kernel<policy, K, V, Compare>;
  constexpr int smem_bytes = sizeof(storage);
  if constexpr (smem_bytes > 48 * 1024) {
    const cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
    if (e != cudaSuccess) return e;
  }
  cudaError_t status = cudaSuccess;
  network::for_each_pass(n, policy::shape, [&](const network::pass& ps) {
    if (status != cudaSuccess) return;
    const index_t windows = ps.win.count(n);
    const unsigned grid = static_cast<unsigned>(std::min<index_t>(windows, index_t{1} << 30));
    kernel<<<grid, policy::threads, smem_bytes, stream>>>(keys, values, n, ps, descending, comp);
    status = cudaGetLastError();
  });
  return status;
}

}  // namespace gpusort::detail::device
