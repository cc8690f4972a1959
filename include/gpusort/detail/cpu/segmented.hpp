// The batched and segmented sort on host threads: every segment by the CPU bitonic sort
// (the same network), segments spread over the threads; a long segment uses all threads.
#pragma once

#include "gpusort/detail/cpu/bitonic.hpp"
#include "gpusort/detail/network/segments.hpp"

namespace gpusort::detail::cpu {

// Segments with end < begin or end > n are skipped, as on the device.
template <class K, class V, class Compare>
void segmented_sort(K* keys, V* values, index_t n, const network::segment_list& segs,
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

}  // namespace gpusort::detail::cpu
