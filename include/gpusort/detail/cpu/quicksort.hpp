// The GPU quicksort's rounds on the host: the CPU backend of algorithm::quicksort and the
// check of its round bound. Each round partitions every large sequence three ways from the
// buffer holding it into the other, with the pivots, part fates and buffers of the device
// version (index_math/quicksort.hpp); small parts are finished by the bitonic sort.
#pragma once

#include <type_traits>
#include <vector>

#include "gpusort/detail/cpu/bitonic.hpp"
#include "gpusort/detail/index_math/quicksort.hpp"
#include "gpusort/detail/core/types.hpp"
#include "gpusort/key_traits.hpp"

namespace gpusort::detail::cpu {

// Sorts keys[0, n) (values alongside unless V is no_value), ascending or descending; not
// stable. Returns the rounds it took (never more than index_math::quicksort::max_rounds).
template <class K, class V>
int quicksort(K* keys, V* values, index_t n, bool descending) {
  namespace qs = index_math::quicksort;
  using U = typename key_traits<K>::ordered_type;
  constexpr bool has_values = !std::is_same_v<V, no_value>;
  const U flip = descending ? static_cast<U>(~U{0}) : U{0};
  const auto ordered = [&](const K& k) { return static_cast<U>(key_traits<K>::ordered(k) ^ flip); };
  // A part lying in the spare buffer moves to its place in the keys; then the block sort.
  std::vector<K> spare_keys;
  std::vector<std::conditional_t<has_values, V, char>> spare_values;
  const auto finish = [&](index_t begin, index_t size, bool in_spare) {
    if (in_spare) {
      std::copy_n(spare_keys.begin() + begin, size, keys + begin);
      if constexpr (has_values) std::copy_n(spare_values.begin() + begin, size, values + begin);
    }
    bitonic_sort(keys + begin, has_values ? values + begin : values, size, less<K>{}, descending);
  };
  if (n < 2) return 0;
  if (n <= qs::finish_size) {
    finish(0, n, false);
    return 0;
  }
  spare_keys.resize(n);
  if constexpr (has_values) spare_values.resize(n);

  struct sequence {
    index_t begin, size;
    U pivot;
    bool in_spare;
  };
  std::vector<sequence> round{
      {0, n, qs::median_of_three(ordered(keys[0]), ordered(keys[n / 2]), ordered(keys[n - 1])),
       false}};
  int rounds = 0;
  while (!round.empty()) {
    ++rounds;
    std::vector<sequence> next;
    for (const sequence& s : round) {
      K* src_keys = s.in_spare ? spare_keys.data() : keys;
      K* dst_keys = s.in_spare ? keys : spare_keys.data();
      [[maybe_unused]] V* src_values = nullptr;
      [[maybe_unused]] V* dst_values = nullptr;
      if constexpr (has_values) {
        src_values = s.in_spare ? spare_values.data() : values;
        dst_values = s.in_spare ? values : spare_values.data();
      }
      index_t count[3] = {0, 0, 0};
      U lo[3] = {static_cast<U>(~U{0}), s.pivot, static_cast<U>(~U{0})};
      U hi[3] = {0, s.pivot, 0};
      for (index_t i = s.begin; i < s.begin + s.size; ++i) {
        const U key = ordered(src_keys[i]);
        const int c = qs::class_of(key, s.pivot);
        ++count[c];
        lo[c] = key < lo[c] ? key : lo[c];
        hi[c] = key > hi[c] ? key : hi[c];
      }
      // Equal keys already in the keys buffer stay where they are.
      const bool moved = count[0] + count[2] > 0 || s.in_spare;
      if (moved) {
        index_t at[3] = {s.begin, s.begin + count[0], s.begin + count[0] + count[1]};
        for (index_t i = s.begin; i < s.begin + s.size; ++i) {
          const index_t to = at[qs::class_of(ordered(src_keys[i]), s.pivot)]++;
          dst_keys[to] = src_keys[i];
          if constexpr (has_values) dst_values[to] = src_values[i];
        }
      }
      index_t begin = s.begin;
      for (int c = 0; c < 3; ++c) {
        const bool uniform = lo[c] == hi[c], in_spare = moved && !s.in_spare;
        switch (qs::part_fate(count[c], uniform, in_spare)) {
          case qs::fate::done: break;
          case qs::fate::finish: finish(begin, count[c], in_spare); break;
          case qs::fate::partition:
            next.push_back({begin, count[c], uniform ? lo[c] : qs::midpoint(lo[c], hi[c]),
                            in_spare});
            break;
        }
        begin += count[c];
      }
    }
    round = std::move(next);
  }
  return rounds;
}

}  // namespace gpusort::detail::cpu
