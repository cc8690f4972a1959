// Warp-wide bitonic sort of 32 * ITEMS keys held in registers, blocked arrangement (lane l
// holds positions l*ITEMS .. l*ITEMS+ITEMS-1), with their values. Steps within a lane's
// registers are plain compare-exchanges; steps across lanes exchange through shuffles, no
// shared memory. Positions at or above `valid` are virtual padding: never compared, so
// their registers keep what they held. The sort for the many small arrays of a batch.
#pragma once

#include <cstring>

#include "gpusort/detail/network/bitonic.hpp"
#include "gpusort/detail/network/group_steps.hpp"

namespace gpusort::detail::block {

// A shuffle of any trivially copyable value, 4 bytes at a time.
template <class T>
__device__ __forceinline__ T shuffle_xor(const T& value, int lane_mask) {
  if constexpr (std::is_same_v<T, no_value>) {
    return value;
  } else {
    constexpr int words = (sizeof(T) + 3) / 4;
    unsigned w[words] = {};
    memcpy(w, &value, sizeof(T));
#pragma unroll
    for (int i = 0; i < words; ++i) w[i] = __shfl_xor_sync(0xffffffffu, w[i], lane_mask);
    T out;
    memcpy(&out, w, sizeof(T));
    return out;
  }
}

template <class K, class V, int ITEMS, class Compare>
struct warp_bitonic_sort {
  static constexpr int item_bits = network::ceil_log2(ITEMS);
  static constexpr int bits = item_bits + 5;
  static_assert((1 << item_bits) == ITEMS, "ITEMS must be a power of two");

  // All 32 lanes must call it. Sorts positions [0, valid) ascending by comp (or descending).
  __device__ void sort(K (&keys)[ITEMS], V (&values)[ITEMS], unsigned valid, bool descending,
                       Compare comp) const {
    const int phases = network::ceil_log2(valid < (1u << bits) ? valid : (1u << bits));
    run(keys, values, threadIdx.x & 31u, phases, valid, descending, comp);
  }

  // Groups of 2^group_bits positions (2^group_bits / ITEMS consecutive lanes; item_bits <=
  // group_bits <= bits) each sort their own positions [0, valid) at once: many small arrays
  // per warp. group_bits must be the same in all lanes; `valid` may differ between groups.
  __device__ void sort_groups(K (&keys)[ITEMS], V (&values)[ITEMS], unsigned valid,
                              bool descending, Compare comp, int group_bits) const {
    const unsigned lanes = 1u << (group_bits - item_bits);
    run(keys, values, threadIdx.x & (lanes - 1u), group_bits, valid, descending, comp);
  }

 private:
  // `lane`: the lane's index within its group; `phases` is uniform over the warp, so every
  // lane takes part in every shuffle.
  __device__ void run(K (&keys)[ITEMS], V (&values)[ITEMS], unsigned lane, int phases,
                      unsigned valid, bool descending, Compare comp) const {
    for (int phase = 1; phase <= phases; ++phase) {
      for (int bit = phase - 1; bit >= item_bits; --bit)
        lane_step(keys, values, lane, phase, bit, valid, descending, comp);
      const int top = phase - 1 < item_bits - 1 ? phase - 1 : item_bits - 1;
      for (int bit = top; bit >= 0; --bit)
        register_step(keys, values, lane, phase, bit, valid, descending, comp);
    }
  }

  __device__ void register_step(K (&keys)[ITEMS], V (&values)[ITEMS], unsigned lane, int phase,
                                int bit, unsigned valid, bool descending, Compare comp) const {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int j = i | (1 << bit);
      if ((i >> bit) & 1) continue;
      if (j >= ITEMS) continue;
      const unsigned lo = lane * ITEMS + i;
      if (lo + (1u << bit) >= valid) continue;
      const bool asc = network::ascending(lo, phase, valid, descending);
      if (asc)
        network::compare_exchange<true>(keys[i], keys[j], values[i], values[j], comp);
      else
        network::compare_exchange<false>(keys[i], keys[j], values[i], values[j], comp);
    }
  }

  // Partner lane = lane ^ 2^(bit - item_bits); the lower lane keeps the first key of each
  // pair, the upper lane the second.
  __device__ void lane_step(K (&keys)[ITEMS], V (&values)[ITEMS], unsigned lane, int phase,
                            int bit, unsigned valid, bool descending, Compare comp) const {
    const int lane_mask = 1 << (bit - item_bits);
    const bool upper = lane & lane_mask;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const K other = shuffle_xor(keys[i], lane_mask);
      const V other_value = shuffle_xor(values[i], lane_mask);
      const unsigned lo = (lane & ~unsigned(lane_mask)) * ITEMS + i;
      if (lo + (1u << bit) >= valid) continue;  // the upper position is padding
      const bool asc = network::ascending(lo, phase, valid, descending);
      // The pair in network order: (first, second) = (lower lane's key, upper lane's key).
      const K& first = upper ? other : keys[i];
      const K& second = upper ? keys[i] : other;
      const bool out_of_order = asc ? comp(second, first) : comp(first, second);
      if (out_of_order) {
        keys[i] = other;
        values[i] = other_value;
      }
    }
  }
};

}  // namespace gpusort::detail::block
