// The batched and segmented sort on host threads: every segment by the CPU bitonic sort
// (the same network), segments spread over the threads; a long segment uses all threads.
#pragma once

#include <algorithm>
#include <numeric>
#include <vector>

#include "gpusort/detail/cpu/bitonic.hpp"
#include "gpusort/detail/index_math/segments.hpp"
#include "gpusort/key_traits.hpp"

namespace gpusort::detail::cpu {

// Segments with end < begin or end > n are skipped, as on the device.
template <class K, class V, class Compare>
void segmented_sort(K* keys, V* values, index_t n, const index_math::segment_list& segs,
                    Compare comp, bool descending) {
  constexpr index_t long_segment = index_t{1} << 16;  // where bitonic_sort goes parallel
  auto sort_one = [&](index_t i, cpu_schedule sched) {
    if (!segs.valid(i, n)) return;
    const index_t first = segs.first(i), m = segs.last(i) - first;
    V* segment_values = nullptr;
    if constexpr (!std::is_same_v<V, no_value>) segment_values = values + first;
    bitonic_sort(keys + first, segment_values, m, comp, descending, sched);
  };
  cpu_schedule one_thread;
  one_thread.threads = 1;
  parallel_for(segs.count, 0, [&](index_t i) {
    if (segs.valid(i, n) && segs.last(i) - segs.first(i) < long_segment) sort_one(i, one_thread);
  });
  for (index_t i = 0; i < segs.count; ++i)
    if (segs.valid(i, n) && segs.last(i) - segs.first(i) >= long_segment) sort_one(i, {});
}

// The same, stable (the CUB baselines and options::stable): every segment by std::stable_sort
// of its positions, then gathered.
template <class K, class V>
void stable_segmented_sort(K* keys, V* values, index_t n, const index_math::segment_list& segs,
                           bool descending) {
  parallel_for(segs.count, 0, [&](index_t i) {
    if (!segs.valid(i, n)) return;
    const index_t first = segs.first(i), m = segs.last(i) - first;
    K* k = keys + first;
    std::vector<index_t> order(m);
    std::iota(order.begin(), order.end(), index_t{0});
    std::stable_sort(order.begin(), order.end(), [&](index_t a, index_t b) {
      return descending ? less<K>{}(k[b], k[a]) : less<K>{}(k[a], k[b]);
    });
    std::vector<K> sorted(m);
    for (index_t j = 0; j < m; ++j) sorted[j] = k[order[j]];
    std::copy(sorted.begin(), sorted.end(), k);
    if constexpr (!std::is_same_v<V, no_value>) {
      V* v = values + first;
      std::vector<V> moved(m);
      for (index_t j = 0; j < m; ++j) moved[j] = v[order[j]];
      std::copy(moved.begin(), moved.end(), v);
    }
  });
}

}  // namespace gpusort::detail::cpu
