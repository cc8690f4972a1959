// Block-wide bitonic sort and merge of THREADS * ITEMS keys held in registers, in the
// blocked arrangement (thread t holds positions t*ITEMS .. t*ITEMS+ITEMS-1), with their
// values. The caller provides the shared memory (temp_storage), as CUB's block primitives
// do. Only positions below `valid` take part (virtual padding: the others are neither read
// nor written, so their registers keep whatever they held).
//
//   using sorter = block_bitonic_sort<K, no_value, 256, 8, gpusort::less<K>>;
//   __shared__ typename sorter::temp_storage temp;
//   sorter{temp}.sort(keys, values, valid, descending, comp);
#pragma once

#include "gpusort/detail/block/bitonic_tile.cuh"

namespace gpusort::detail::block {

template <class K, class V, int THREADS, int ITEMS, class Compare>
struct block_bitonic_sort {
  static constexpr int bits = index_math::ceil_log2(static_cast<index_t>(THREADS) * ITEMS);
  static_assert((1 << bits) == THREADS * ITEMS, "THREADS * ITEMS must be a power of two");
  static constexpr int digit = sizeof(K) + (has_values<K, V> ? sizeof(V) : 0) <= 8 ? 5 : 4;
  using engine = tile_network<K, V, block_team<THREADS>, bits, digit, Compare>;
  using temp_storage = typename engine::storage;

  temp_storage& temp;

  // Sorts positions [0, valid) ascending by comp (descending if asked).
  __device__ void sort(K (&keys)[ITEMS], V (&values)[ITEMS], unsigned valid, bool descending,
                       Compare comp) {
    run(keys, values, valid, descending, comp, false);
  }

  // Merges two sorted halves (positions [0, N/2) and [N/2, valid), both in the requested
  // order) into one sorted sequence: Batcher's merge with a first "mirror" step, so no half
  // needs reversing.
  __device__ void merge(K (&keys)[ITEMS], V (&values)[ITEMS], unsigned valid, bool descending,
                        Compare comp) {
    run(keys, values, valid, descending, comp, true);
  }

 private:
  __device__ void run(K (&keys)[ITEMS], V (&values)[ITEMS], unsigned valid, bool descending,
                      Compare comp, bool merge_only) {
    constexpr unsigned slots = 1u << bits;
    if (valid > slots) valid = slots;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const unsigned l = threadIdx.x * ITEMS + i;
      if (l < valid) {
        temp.keys[temp_storage::index(l)] = keys[i];
        if constexpr (has_values<K, V>) temp.values[temp_storage::index(l)] = values[i];
      }
    }
    const index_math::window tile{bits, bits, 0};
    engine net{temp, 0, valid, descending, comp};
    if (valid >= 2) {
      if (!merge_only) {
        net.run(index_math::pass{tile, 0, index_math::steps_through_phase(bits)});
      } else {
        __syncthreads();
        mirror_step(valid, descending, comp);
        if (bits >= 2)
          net.run(index_math::pass{tile, index_math::step_index(bits, bits - 2),
                                index_math::step_index(bits, 0) + 1});
      }
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const unsigned l = threadIdx.x * ITEMS + i;
      if (l < valid) {
        keys[i] = temp.keys[temp_storage::index(l)];
        if constexpr (has_values<K, V>) values[i] = temp.values[temp_storage::index(l)];
      }
    }
    __syncthreads();  // temp may be reused by the caller
  }

  // Position l of the first half against its mirror N-1-l: afterwards every key of the first
  // half precedes every key of the second, and both halves are bitonic.
  __device__ void mirror_step(unsigned valid, bool descending, Compare comp) {
    constexpr unsigned half = 1u << (bits - 1);
    for (unsigned l = threadIdx.x; l < half; l += THREADS) {
      const unsigned u = 2 * half - 1 - l;
      if (u >= valid) continue;  // padding sorts last: nothing to do
      K& a = temp.keys[temp_storage::index(l)];
      K& b = temp.keys[temp_storage::index(u)];
      const bool swap = descending ? comp(a, b) : comp(b, a);
      if (swap) {
        const K t = a;
        a = b;
        b = t;
        if constexpr (has_values<K, V>) {
          V& va = temp.values[temp_storage::index(l)];
          V& vb = temp.values[temp_storage::index(u)];
          const V tv = va;
          va = vb;
          vb = tv;
        }
      }
    }
  }
};

}  // namespace gpusort::detail::block
