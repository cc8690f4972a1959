// Block level: one thread block runs a pass's steps on the 2^m slots of one window, held in
// shared memory. Each step group is one round trip: every thread loads the 2^k slots of a
// member set into registers, runs the k steps there (network::group_steps) and stores them
// back; one barrier per group instead of one per step.
#pragma once

#include <type_traits>

#include "gpusort/detail/config.hpp"
#include "gpusort/detail/network/bitonic.hpp"
#include "gpusort/detail/network/group_steps.hpp"

namespace gpusort::detail::block {

using network::index_t;

// Shared-memory index of local slot l: one spare word every 32 slots, so that member sets
// with power-of-two strides spread over the banks.
GPUSORT_HD constexpr unsigned padded_index(unsigned l) { return l + (l >> 5); }
GPUSORT_HD constexpr unsigned padded_size(unsigned slots) { return slots + (slots >> 5); }

template <class K, class V>
constexpr bool has_values = !std::is_same_v<V, no_value>;

// Shared memory of a window of 2^TILE_BITS slots: keys, then values.
template <class K, class V, int TILE_BITS>
struct window_storage {
  static constexpr unsigned slots = 1u << TILE_BITS;
  K keys[padded_size(slots)];
  V values[has_values<K, V> ? padded_size(slots) : 1];
};

template <class K, class V, int THREADS, int TILE_BITS, int GROUP, class Compare>
struct window_network {
  using storage = window_storage<K, V, TILE_BITS>;
  storage& smem;
  network::window win;
  index_t w;  // the window's number
  index_t n;
  bool descending;
  Compare comp;

  // A window may be smaller than the storage (a sort of fewer than 2^TILE_BITS keys).
  __device__ unsigned slots() const { return 1u << win.local_bits(); }

  __device__ void load(const K* keys, const V* values) {
    for (unsigned l = threadIdx.x; l < slots(); l += THREADS) {
      const index_t s = win.slot(w, l);
      if (s < n) {
        smem.keys[padded_index(l)] = keys[s];
        if constexpr (has_values<K, V>) smem.values[padded_index(l)] = values[s];
      }
    }
  }

  __device__ void store(K* keys, V* values) const {
    for (unsigned l = threadIdx.x; l < slots(); l += THREADS) {
      const index_t s = win.slot(w, l);
      if (s < n) {
        keys[s] = smem.keys[padded_index(l)];
        if constexpr (has_values<K, V>) values[s] = smem.values[padded_index(l)];
      }
    }
  }

  template <int COUNT>
  __device__ void run_group(const network::step_group& g) {
    constexpr int members = 1 << COUNT;
    const int lowest = g.top_local_bit - COUNT + 1;
    const int low_global = lowest < win.low_bits ? lowest : win.group_lo + (lowest - win.low_bits);
    const unsigned sets = slots() >> COUNT;
    for (unsigned q = threadIdx.x; q < sets; q += THREADS) {
      const unsigned local0 = static_cast<unsigned>(network::group_member(q, lowest, COUNT, 0));
      const index_t slot0 = win.slot(w, local0);
      if (slot0 >= n) continue;  // the whole set is padding
      K k[members];
      V v[members];
#pragma unroll
      for (int r = 0; r < members; ++r) {
        const unsigned p = padded_index(local0 | (static_cast<unsigned>(r) << lowest));
        k[r] = smem.keys[p];
        if constexpr (has_values<K, V>) v[r] = smem.values[p];
      }
      network::group_steps<COUNT>(k, v, slot0, low_global, g.phase, n, descending, comp);
#pragma unroll
      for (int r = 0; r < members; ++r) {
        const unsigned p = padded_index(local0 | (static_cast<unsigned>(r) << lowest));
        smem.keys[p] = k[r];
        if constexpr (has_values<K, V>) smem.values[p] = v[r];
      }
    }
  }

  // Runs every step of pass ps on the window already loaded.
  __device__ void run(const network::pass& ps) {
    network::for_each_step_group(ps, GROUP, [&](const network::step_group& g) {
      __syncthreads();
      if constexpr (GROUP >= 4) {
        if (g.count == 4) return run_group<4>(g);
      }
      if constexpr (GROUP >= 3) {
        if (g.count == 3) return run_group<3>(g);
      }
      if (g.count == 2) return run_group<2>(g);
      run_group<1>(g);
    });
    __syncthreads();
  }
};

}  // namespace gpusort::detail::block
