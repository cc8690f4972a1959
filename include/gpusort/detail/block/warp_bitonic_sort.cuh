// Warp-wide bitonic sort of 32 * ITEMS keys held in registers, blocked arrangement (lane l
// holds positions l*ITEMS .. l*ITEMS+ITEMS-1), with their values. Steps within a lane's
// registers are plain compare-exchanges; steps across lanes exchange through shuffles, no
// shared memory. Positions at or above `valid` are virtual padding: never compared, so
// their registers keep what they held. The sort for the many small arrays of a batch.
#pragma once

#include <cstring>
#include <type_traits>
#include <utility>

#include "gpusort/detail/index_math/bitonic.hpp"
#include "gpusort/detail/index_math/group_steps.hpp"
#include "gpusort/key_traits.hpp"

namespace gpusort::detail::block {

// A shuffle of any trivially copyable value, 4 bytes at a time: `exchange` moves one word.
template <class T, class Exchange>
__device__ __forceinline__ T shuffle_words(const T& value, Exchange exchange) {
  if constexpr (std::is_same_v<T, no_value>) {
    return value;
  } else {
    constexpr int words = (sizeof(T) + 3) / 4;
    unsigned w[words] = {};
    memcpy(w, &value, sizeof(T));
#pragma unroll
    for (int i = 0; i < words; ++i) w[i] = exchange(w[i]);
    T out;
    memcpy(&out, w, sizeof(T));
    return out;
  }
}

// The value of lane ^ lane_mask.
template <class T>
__device__ __forceinline__ T shuffle_xor(const T& value, int lane_mask) {
  return shuffle_words(value, [&](unsigned w) { return __shfl_xor_sync(0xffffffffu, w, lane_mask); });
}

// The value of lane `source`.
template <class T>
__device__ __forceinline__ T shuffle_from(const T& value, int source) {
  return shuffle_words(value, [&](unsigned w) { return __shfl_sync(0xffffffffu, w, source); });
}

template <class K, class V, int ITEMS, class Compare>
struct warp_bitonic_sort {
  static constexpr int item_bits = index_math::ceil_log2(ITEMS);
  static constexpr int bits = item_bits + 5;
  static_assert((1 << item_bits) == ITEMS, "ITEMS must be a power of two");

  // All 32 lanes must call it. Sorts positions [0, valid) ascending by comp (or descending).
  __device__ void sort(K (&keys)[ITEMS], V (&values)[ITEMS], unsigned valid, bool descending,
                       Compare comp) const {
    const int phases = index_math::ceil_log2(valid < (1u << bits) ? valid : (1u << bits));
    run<bits>(keys, values, threadIdx.x & 31u, phases, valid, descending, comp);
  }

  // Groups of 2^GROUP_BITS positions (2^GROUP_BITS / ITEMS consecutive lanes) each sort their
  // own positions [0, valid) at once: many small arrays per warp. `valid` may differ between
  // groups. FULL: every group of the warp has valid == 2^GROUP_BITS, so no comparator needs
  // the padding check.
  template <int GROUP_BITS, bool FULL = false>
  __device__ void sort_groups(K (&keys)[ITEMS], V (&values)[ITEMS], unsigned valid,
                              bool descending, Compare comp) const {
    static_assert(item_bits <= GROUP_BITS && GROUP_BITS <= bits);
    constexpr unsigned lanes = 1u << (GROUP_BITS - item_bits);
    run<GROUP_BITS, FULL>(keys, values, threadIdx.x & (lanes - 1u), GROUP_BITS,
                          FULL ? 1u << GROUP_BITS : valid, descending, comp);
  }

 private:
  // `lane`: the lane's index within its group; `phases` (<= MAX_PHASES) is uniform over the
  // warp, so every lane takes part in every shuffle. The loops unroll completely: register
  // indices are constants, so the keys never leave registers.
  template <int MAX_PHASES, bool FULL = false>
  __device__ __forceinline__ void run(K (&keys)[ITEMS], V (&values)[ITEMS], unsigned lane,
                                      int phases, unsigned valid, bool descending,
                                      Compare comp) const {
    static_for<MAX_PHASES>([&](auto phase_minus_1) {
      constexpr int phase = decltype(phase_minus_1)::value + 1;
      if (phase > phases) return;
      // Bits phase-1 .. item_bits across lanes, then the rest inside each lane's registers.
      static_for<(phase > item_bits ? phase - item_bits : 0)>([&](auto i) {
        lane_step<phase, phase - 1 - decltype(i)::value, FULL>(keys, values, lane, valid,
                                                               descending, comp);
      });
      static_for<(phase < item_bits ? phase : item_bits)>([&](auto i) {
        constexpr int top = phase < item_bits ? phase - 1 : item_bits - 1;
        register_step<phase, top - decltype(i)::value, FULL>(keys, values, lane, valid,
                                                             descending, comp);
      });
    });
  }

  // f(std::integral_constant<int, i>) for i = 0 .. N-1: the step loops as straight-line code,
  // so every register index is a constant.
  template <int N, class F>
  __device__ __forceinline__ static void static_for(F&& f) {
    [&]<int... I>(std::integer_sequence<int, I...>) {
      (f(std::integral_constant<int, I>{}), ...);
    }(std::make_integer_sequence<int, N>{});
  }

  // index_math::ascending in 32 bits: positions here are below 2^bits.
  __device__ __forceinline__ static bool ascending(unsigned lo, int phase, unsigned valid,
                                                   bool descending) {
    return (((lo >> phase) & 1u) == (((valid - 1u) >> phase) & 1u)) != descending;
  }

  template <int phase, int bit, bool FULL>
  __device__ __forceinline__ void register_step(K (&keys)[ITEMS], V (&values)[ITEMS],
                                                unsigned lane, unsigned valid, bool descending,
                                                Compare comp) const {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int j = i | (1 << bit);
      if ((i >> bit) & 1) continue;
      if (j >= ITEMS) continue;
      const unsigned lo = lane * ITEMS + i;
      if (!FULL && lo + (1u << bit) >= valid) continue;
      const bool asc = ascending(lo, phase, valid, descending);
      if (asc)
        index_math::compare_exchange<true>(keys[i], keys[j], values[i], values[j], comp);
      else
        index_math::compare_exchange<false>(keys[i], keys[j], values[i], values[j], comp);
    }
  }

  // Integer keys alone under the default order: the key a lane keeps is the smaller or the
  // larger of the pair, one min/max instruction with the choice as its predicate, where a
  // comparison and selects cost three (the shuffle classes are bound by integer issue).
  static constexpr bool min_max_keys = std::is_integral_v<K> && std::is_same_v<V, no_value> &&
                                       std::is_same_v<Compare, gpusort::less<K>>;

  // Partner lane = lane ^ 2^(bit - item_bits). The pair sits at positions lo and
  // lo + 2^bit; the lane at the pair's larger end (the upper one of an ascending pair, the
  // lower one of a descending pair) keeps the larger key.
  template <int phase, int bit, bool FULL>
  __device__ __forceinline__ void lane_step(K (&keys)[ITEMS], V (&values)[ITEMS], unsigned lane,
                                            unsigned valid, bool descending,
                                            Compare comp) const {
    const int lane_mask = 1 << (bit - item_bits);
    const bool upper = lane & lane_mask;
    const unsigned lo0 = (lane & ~unsigned(lane_mask)) * ITEMS;
    // bit >= item_bits, so every item of the lane shares the pair's phase bit: one direction.
    const bool keep_larger = upper == ascending(lo0, phase, valid, descending);
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const K other = shuffle_xor(keys[i], lane_mask);
      const V other_value = shuffle_xor(values[i], lane_mask);
      if (!FULL && lo0 + i + (1u << bit) >= valid) continue;  // the upper position is padding
      if constexpr (min_max_keys) {
        const K larger = keys[i] < other ? other : keys[i];
        const K smaller = other < keys[i] ? other : keys[i];
        keys[i] = keep_larger ? larger : smaller;
      } else {
        // Both lanes of a pair evaluate the same comparison, so they swap together and equal
        // keys stay where they are.
        const bool take_other = keep_larger ? comp(keys[i], other) : comp(other, keys[i]);
        // Copies, not references: a reference to one of two registers would put them in memory.
        keys[i] = take_other ? other : keys[i];
        if constexpr (!std::is_same_v<V, no_value>)
          values[i] = take_other ? other_value : values[i];
      }
    }
  }
};

}  // namespace gpusort::detail::block
