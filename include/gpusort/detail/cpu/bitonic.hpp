// The in-place bitonic sort on host threads. It runs the very schedule of the GPU sort
// (index_math/bitonic.hpp): the same passes, windows and step groups, a window per task.
#pragma once

#include <algorithm>
#include <thread>
#include <vector>

#include "gpusort/detail/index_math/bitonic.hpp"
#include "gpusort/detail/index_math/group_steps.hpp"
#include "gpusort/detail/cpu/parallel_for.hpp"

namespace gpusort::detail::cpu {

using index_math::index_t;

// Executes one step group on window w with up to 2^MAX_GROUP keys per member set.
template <int COUNT, class K, class V, class Compare>
void run_group(K* keys, V* values, index_t n, const index_math::pass& ps, index_t w,
               const index_math::step_group& grp, bool descending, Compare comp) {
  constexpr int members = 1 << COUNT;
  const index_math::window& win = ps.win;
  const int lowest = grp.top_local_bit - COUNT + 1;
  const int low_global = lowest < win.low_bits ? lowest : win.group_lo + (lowest - win.low_bits);
  const index_t sets = index_t{1} << (win.local_bits() - COUNT);
  for (index_t q = 0; q < sets; ++q) {
    const index_t slot0 = win.slot(w, index_math::group_member(q, lowest, COUNT, 0));
    const int real = index_math::real_members(slot0, low_global, COUNT, n);
    if (real == 0) continue;
    K k[members];
    V v[members];
    for (int r = 0; r < real; ++r) {
      const index_t s = slot0 | (static_cast<index_t>(r) << low_global);
      k[r] = keys[s];
      if constexpr (!std::is_same_v<V, no_value>) v[r] = values[s];
    }
    const bool asc = index_math::ascending(slot0, grp.phase, n, descending);
    if (real == members)
      index_math::group_steps<COUNT, false>(k, v, asc, real, comp);
    else
      index_math::group_steps<COUNT, true>(k, v, asc, real, comp);
    for (int r = 0; r < real; ++r) {
      const index_t s = slot0 | (static_cast<index_t>(r) << low_global);
      keys[s] = k[r];
      if constexpr (!std::is_same_v<V, no_value>) values[s] = v[r];
    }
  }
}

struct cpu_schedule {
  index_math::schedule_shape shape{12, 5};
  int group = 3;         // steps per register group, 1..4
  unsigned threads = 0;  // 0: all cores
};

// Sorts keys[0, n) (and values alongside unless V is no_value) by comp, ascending, or
// descending when `descending`. Not stable. Uses no memory beyond a few keys per thread.
template <class K, class V, class Compare>
void bitonic_sort(K* keys, V* values, index_t n, Compare comp, bool descending,
                  cpu_schedule sched = {}) {
  if (n < 2) return;
  const unsigned threads = n < (index_t{1} << 16) ? 1u : sched.threads;
  index_math::for_each_pass(n, sched.shape, [&](const index_math::pass& ps) {
    parallel_for(ps.win.count(n), threads, [&](index_t w) {
      if (ps.win.slot(w, 0) >= n) return;
      index_math::for_each_step_group(ps, sched.group, [&](const index_math::step_group& g) {
        switch (g.count) {
          case 1: run_group<1>(keys, values, n, ps, w, g, descending, comp); break;
          case 2: run_group<2>(keys, values, n, ps, w, g, descending, comp); break;
          case 3: run_group<3>(keys, values, n, ps, w, g, descending, comp); break;
          default: run_group<4>(keys, values, n, ps, w, g, descending, comp); break;
        }
      });
    });
  });
}

}  // namespace gpusort::detail::cpu
