// Block level: a team of threads (a thread block, or one warp) runs the short-distance
// steps (bits below TILE_BITS) of a phase on a tile of 2^TILE_BITS consecutive slots held in
// shared memory.
//
// The tile's address bits are cut into digits of DIGIT bits. The steps of a phase run from
// its top bit down, one digit at a time: each thread loads the 2^k slots that differ in the
// k step bits of the digit into registers, runs the k steps there (index_math::group_steps) and
// stores them back, so there is one barrier per digit rather than per step. Because a
// digit's lowest bit is a compile-time constant, the member offsets in shared memory are
// constants folded into the load and store instructions.
#pragma once

#include <type_traits>

#include "gpusort/detail/core/config.hpp"
#include "gpusort/detail/core/float_order.hpp"
#include "gpusort/detail/index_math/bitonic.hpp"
#include "gpusort/detail/index_math/group_steps.hpp"
#include "gpusort/detail/core/types.hpp"

namespace gpusort::detail::block {

using index_math::index_t;

// The threads that share a tile: a whole block (barriers are __syncthreads) or a single
// warp with its own tile (barriers are __syncwarp; the block's other warps work on theirs).
template <int THREADS>
struct block_team {
  static constexpr int size = THREADS;
  __device__ static unsigned rank() { return threadIdx.x; }
  __device__ static void sync() { __syncthreads(); }
};

struct warp_team {
  static constexpr int size = 32;
  __device__ static unsigned rank() { return threadIdx.x & 31u; }
  __device__ static void sync() { __syncwarp(); }
};

template <class K, class V>
constexpr bool has_values = !std::is_same_v<V, no_value>;

// The value of slot i: values[i], or with `positions` the index i itself (an argsort's
// indices, made as the keys are loaded; 4- and 8-byte values only).
template <class V>
__device__ __forceinline__ V value_or_position(const V* values, std::uint64_t i, bool positions) {
  if constexpr (index_payload<V>)
    if (positions) return payload_of_index<V>(i);
  return values[i];
}

// Shared memory of a tile of 2^TILE_BITS slots: keys, then values, each slot l at index(l).
template <class K, class V, int TILE_BITS>
struct tile_storage {
  static constexpr unsigned slots = 1u << TILE_BITS;
  static constexpr unsigned pad = index_math::tile_pad(sizeof(K), has_values<K, V>);
  GPUSORT_HD static constexpr unsigned index(unsigned l) { return index_math::tile_index<pad>(l); }
  K keys[index(slots)];
  V values[has_values<K, V> ? index(slots) : 1];
};

template <class K, class V, class Team, int TILE_BITS, int DIGIT, class Compare>
struct tile_network {
  static constexpr int THREADS = Team::size;
  using storage = tile_storage<K, V, TILE_BITS>;
  static constexpr unsigned slots = storage::slots;
  static constexpr int top_digit = (TILE_BITS - 1) / DIGIT;

  storage& smem;
  index_t first_slot;
  index_t n;
  bool descending;
  Compare comp;

  // Does the tile hold padding (slots >= n)? Only then are comparators checked.
  __device__ bool partial() const { return first_slot + slots > n; }

  // A whole tile is read with all its loads in flight at once (ITEMS per thread); only the
  // last, partial tile loops. `codec` maps keys as they are read and written (float codes);
  // with `positions` each value is its slot's place in the array (value_or_position).
  static constexpr unsigned items = slots / THREADS;

  __device__ void load(const K* keys, const V* values, key_codec<K> codec = {},
                       bool positions = false) {
    if (!partial()) {
      // The map apart from the loads, as in the segmented shuffle classes (device/segmented.cuh).
      K k[items];
#pragma unroll
      for (unsigned i = 0; i < items; ++i) k[i] = keys[first_slot + i * THREADS + Team::rank()];
      if (codec.maps()) {
#pragma unroll
        for (unsigned i = 0; i < items; ++i) k[i] = codec.in(k[i]);
      }
#pragma unroll
      for (unsigned i = 0; i < items; ++i) smem.keys[storage::index(i * THREADS + Team::rank())] = k[i];
      if constexpr (has_values<K, V>) {
        V v[items];
#pragma unroll
        for (unsigned i = 0; i < items; ++i)
          v[i] = value_or_position(values, first_slot + i * THREADS + Team::rank(), positions);
#pragma unroll
        for (unsigned i = 0; i < items; ++i)
          smem.values[storage::index(i * THREADS + Team::rank())] = v[i];
      }
      return;
    }
    const unsigned count = static_cast<unsigned>(n - first_slot);
    for (unsigned l = Team::rank(); l < count; l += THREADS) {
      smem.keys[storage::index(l)] = codec.in(keys[first_slot + l]);
      if constexpr (has_values<K, V>)
        smem.values[storage::index(l)] = value_or_position(values, first_slot + l, positions);
    }
  }

  // Loads a tile whose slots from n on are padding, `filler` in each (a key that sorts after
  // every real one: index_math::padding_key), all loads in flight at once. Padding values are
  // never read: run_whole leaves every filler in its slot.
  __device__ void load_filled(const K* keys, const V* values, K filler, key_codec<K> codec = {},
                              bool positions = false) {
    const unsigned count = partial() ? static_cast<unsigned>(n - first_slot) : slots;
    K k[items];
#pragma unroll
    for (unsigned i = 0; i < items; ++i) {
      const unsigned l = i * THREADS + Team::rank();
      k[i] = l < count ? keys[first_slot + l] : filler;
    }
    if (codec.maps()) {
#pragma unroll
      for (unsigned i = 0; i < items; ++i)
        if (i * THREADS + Team::rank() < count) k[i] = codec.in(k[i]);
    }
#pragma unroll
    for (unsigned i = 0; i < items; ++i) smem.keys[storage::index(i * THREADS + Team::rank())] = k[i];
    if constexpr (has_values<K, V>) {
      for (unsigned l = Team::rank(); l < count; l += THREADS)
        smem.values[storage::index(l)] = value_or_position(values, first_slot + l, positions);
    }
  }

  __device__ void store(K* keys, V* values, key_codec<K> codec = {}) const {
    const unsigned count = partial() ? static_cast<unsigned>(n - first_slot) : slots;
#pragma unroll 8
    for (unsigned l = Team::rank(); l < count; l += THREADS) {
      keys[first_slot + l] = codec.out(smem.keys[storage::index(l)]);
      if constexpr (has_values<K, V>) values[first_slot + l] = smem.values[storage::index(l)];
    }
  }

  // Steps on bits LOWEST + COUNT - 1 .. LOWEST of `phase`, one member set per thread.
  template <int LOWEST, int COUNT, bool PARTIAL>
  __device__ void run_group(int phase) {
    constexpr int members = 1 << COUNT;
    constexpr unsigned sets = slots >> COUNT;
    // The direction depends on bit `phase` of the slot: a tile bit while the phase is
    // shorter than the tile, else a bit of the tile's first slot.
    const bool local_direction = phase < TILE_BITS;
    const unsigned boundary_bit = static_cast<unsigned>(((n - 1) >> phase) & 1u);
    const bool tile_asc = index_math::ascending(first_slot, phase, n, descending);
    for (unsigned q = Team::rank(); q < sets; q += THREADS) {
      const unsigned local0 =
          ((q >> LOWEST) << (LOWEST + COUNT)) | (q & ((1u << LOWEST) - 1));
      const bool asc = local_direction
                           ? ((((local0 >> phase) & 1u) == boundary_bit) != descending)
                           : tile_asc;
      int real = members;
      if constexpr (PARTIAL) {
        real = index_math::real_members(first_slot + local0, LOWEST, COUNT, n);
        if (real == 0) continue;
      }
      const unsigned base = storage::index(local0);
      K k[members];
      V v[members];
#pragma unroll
      for (int r = 0; r < members; ++r) {
        k[r] = smem.keys[base + storage::index(static_cast<unsigned>(r) << LOWEST)];
        if constexpr (has_values<K, V>)
          v[r] = smem.values[base + storage::index(static_cast<unsigned>(r) << LOWEST)];
      }
      index_math::group_steps<COUNT, PARTIAL>(k, v, asc, real, comp);
#pragma unroll
      for (int r = 0; r < members; ++r) {
        smem.keys[base + storage::index(static_cast<unsigned>(r) << LOWEST)] = k[r];
        if constexpr (has_values<K, V>)
          smem.values[base + storage::index(static_cast<unsigned>(r) << LOWEST)] = v[r];
      }
    }
  }

  template <int LOWEST, int WIDTH, bool PARTIAL>
  __device__ void run_digit(int phase, int count) {
    Team::sync();
    if constexpr (WIDTH >= 5) {
      if (count == 5) return run_group<LOWEST, 5, PARTIAL>(phase);
    }
    if constexpr (WIDTH >= 4) {
      if (count == 4) return run_group<LOWEST, 4, PARTIAL>(phase);
    }
    if constexpr (WIDTH >= 3) {
      if (count == 3) return run_group<LOWEST, 3, PARTIAL>(phase);
    }
    if constexpr (WIDTH >= 2) {
      if (count == 2) return run_group<LOWEST, 2, PARTIAL>(phase);
    }
    run_group<LOWEST, 1, PARTIAL>(phase);
  }

  // Steps top_bit .. 0 of `phase`, digit D and the digits below it.
  template <int D, bool PARTIAL>
  __device__ void merge_from_digit(int phase, int top_bit) {
    constexpr int lowest = D * DIGIT;
    constexpr int width = DIGIT < TILE_BITS - lowest ? DIGIT : TILE_BITS - lowest;
    if (top_bit >= lowest) {
      const int top = top_bit < lowest + width - 1 ? top_bit : lowest + width - 1;
      run_digit<lowest, width, PARTIAL>(phase, top - lowest + 1);
    }
    if constexpr (D > 0) merge_from_digit<D - 1, PARTIAL>(phase, top_bit);
  }

  // Phases 1..DIGIT, whose steps stay inside one member set of the lowest digit, in a single
  // round (index_math::sort_first_phases) instead of one round per phase. No padding. Measured
  // on an H100 (batches of 2^24 u32 keys): segments of 256 keys 0.177 -> 0.148 ms, 1,024
  // 0.162 -> 0.139, 4,096 0.217 -> 0.186 (with a select per comparator instead of a branch
  // per phase, 1,024 and 4,096 were slower than one round per phase: 0.188, 0.235).
  __device__ void run_first_phases() {
    constexpr int members = 1 << DIGIT;
    constexpr unsigned sets = slots >> DIGIT;
    for (unsigned q = Team::rank(); q < sets; q += THREADS) {
      const unsigned base = storage::index(q << DIGIT);
      K k[members];
      V v[members];
#pragma unroll
      for (int r = 0; r < members; ++r) {
        k[r] = smem.keys[base + storage::index(static_cast<unsigned>(r))];
        if constexpr (has_values<K, V>) v[r] = smem.values[base + storage::index(static_cast<unsigned>(r))];
      }
      index_math::sort_first_phases<DIGIT>(k, v, first_slot + (q << DIGIT), n, descending, comp);
#pragma unroll
      for (int r = 0; r < members; ++r) {
        smem.keys[base + storage::index(static_cast<unsigned>(r))] = k[r];
        if constexpr (has_values<K, V>) smem.values[base + storage::index(static_cast<unsigned>(r))] = v[r];
      }
    }
  }

  // Runs the steps [ps.first_step, ps.end_step) (whole phases, or the tail of one) on the
  // loaded tile.
  template <bool PARTIAL>
  __device__ void run_steps(const index_math::pass& ps) {
    const index_math::step first = index_math::step_at(ps.first_step);
    const index_math::step last = index_math::step_at(ps.end_step - 1);
    int first_phase = first.phase;
    if constexpr (!PARTIAL && DIGIT <= TILE_BITS) {
      if (ps.first_step == 0 && ps.end_step >= index_math::steps_through_phase(DIGIT)) {
        Team::sync();
        run_first_phases();
        first_phase = DIGIT + 1;
      }
    }
    for (int phase = first_phase; phase <= last.phase; ++phase) {
      const int top = phase == first.phase ? first.bit : phase - 1;
      merge_from_digit<top_digit, PARTIAL>(phase, top);
    }
    Team::sync();
  }

  __device__ void run(const index_math::pass& ps) {
    if (partial())
      run_steps<true>(ps);
    else
      run_steps<false>(ps);
  }

  // After load_filled: every comparator runs, fillers included, with no padding check. The
  // directions still follow n, so a comparator between a real slot and a padding slot
  // always puts the padding last: each filler stays in its slot (index_math::ascending), and
  // the real keys and values end as run() would leave them.
  __device__ void run_whole(const index_math::pass& ps) { run_steps<false>(ps); }
};

}  // namespace gpusort::detail::block
