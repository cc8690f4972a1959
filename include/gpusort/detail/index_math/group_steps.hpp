// The compare-exchange work of one step group (see bitonic.hpp), shared by a GPU thread
// (keys in registers) and the CPU backend (keys in a small local array).
#pragma once

#include <type_traits>
#include <utility>

#include "gpusort/detail/core/config.hpp"
#include "gpusort/detail/index_math/bitonic.hpp"
#include "gpusort/detail/core/types.hpp"

namespace gpusort::detail::index_math {

// Orders (a, b): ASC puts the smaller first, else the larger. One comparison and selects
// only (a min and a max for built-in keys): a warp never branches on the data. Equal keys
// never swap, in either direction: a padding key (segments.hpp) equal to a real one stays
// in its slot, with the real key's value beside the real key.
template <bool ASC, class K, class V, class Compare>
GPUSORT_HD GPUSORT_FORCEINLINE void compare_exchange(K& a, K& b, V& va, V& vb, Compare comp) {
  const bool swap = ASC ? comp(b, a) : comp(a, b);
  const K new_a = swap ? b : a;
  const K new_b = swap ? a : b;
  a = new_a;
  b = new_b;
  if constexpr (!std::is_same_v<V, no_value>) {
    const V new_va = swap ? vb : va;
    const V new_vb = swap ? va : vb;
    va = new_va;
    vb = new_vb;
  }
}

// How many of a member set's slots slot0 | (r << low_bit), r = 0..2^count-1, are real keys
// (< n). They are always a prefix in r, since the slots grow with r.
GPUSORT_HD constexpr int real_members(index_t slot0, int low_bit, int count, index_t n) {
  if (slot0 >= n) return 0;
  const index_t span = n - slot0;  // slots slot0 .. n-1 are real
  const index_t members = ((span - 1) >> low_bit) + 1;
  return members >= (index_t{1} << count) ? (1 << count) : static_cast<int>(members);
}

// Runs COUNT consecutive steps, all of one direction, on 2^COUNT keys whose slots differ in
// COUNT consecutive address bits (member r in keys[r], the step bits from high to low).
// With PARTIAL, only the first `real` members are keys; the rest are padding that is never
// compared (a comparator whose upper member is padding does nothing).
template <int COUNT, bool PARTIAL, bool ASC, class K, class V, class Compare>
GPUSORT_HD GPUSORT_FORCEINLINE void group_steps_in(K (&keys)[1 << COUNT],
                                                   V (&values)[1 << COUNT], int real,
                                                   Compare comp) {
#pragma unroll
  for (int b = COUNT - 1; b >= 0; --b) {
#pragma unroll
    for (int r = 0; r < (1 << COUNT); ++r) {
      if (r & (1 << b)) continue;
      const int u = r | (1 << b);
      if (PARTIAL && u >= real) continue;
      compare_exchange<ASC>(keys[r], keys[u], values[r], values[u], comp);
    }
  }
}

// The same with the direction known at run time: one branch per group, not per comparator.
template <int COUNT, bool PARTIAL, class K, class V, class Compare>
GPUSORT_HD GPUSORT_FORCEINLINE void group_steps(K (&keys)[1 << COUNT], V (&values)[1 << COUNT],
                                                bool asc, int real, Compare comp) {
  if (asc)
    group_steps_in<COUNT, PARTIAL, true>(keys, values, real, comp);
  else
    group_steps_in<COUNT, PARTIAL, false>(keys, values, real, comp);
}

// One phase of sort_first_phases: the comparator at member r orders ascending iff bit PHASE
// of r differs from FLIP (a constant for every comparator of the unrolled loops).
template <int COUNT, int PHASE, bool FLIP, class K, class V, class Compare>
GPUSORT_HD GPUSORT_FORCEINLINE void first_phase_steps(K (&keys)[1 << COUNT],
                                                      V (&values)[1 << COUNT], Compare comp) {
#pragma unroll
  for (int b = PHASE - 1; b >= 0; --b) {
#pragma unroll
    for (int r = 0; r < (1 << COUNT); ++r) {
      if (r & (1 << b)) continue;
      const int u = r | (1 << b);
      if (((r >> PHASE) & 1) != FLIP)
        compare_exchange<true>(keys[r], keys[u], values[r], values[u], comp);
      else
        compare_exchange<false>(keys[r], keys[u], values[r], values[u], comp);
    }
  }
}

// Phases 1..COUNT of the network on the 2^COUNT consecutive slots slot0 .. slot0 + 2^COUNT - 1
// (slot0 a multiple of 2^COUNT, none of them padding), held in registers: the first phases
// of a sort in one pass over the keys instead of one per phase. Directions as
// index_math::ascending gives them for n slots: ascending(slot0 | r, p, n) is bit p of r
// against one bit known at run time (uniform over a team for p < COUNT, since bit p of
// slot0 is 0 there), so each phase branches once and every comparator has a constant
// direction.
template <int COUNT, class K, class V, class Compare>
GPUSORT_HD GPUSORT_FORCEINLINE void sort_first_phases(K (&keys)[1 << COUNT],
                                                      V (&values)[1 << COUNT], index_t slot0,
                                                      index_t n, bool descending, Compare comp) {
  [&]<int... P>(std::integer_sequence<int, P...>) {
    const auto phase = [&](auto p) {
      constexpr int PHASE = decltype(p)::value;
      // ascending = (bit p of slot0|r == bit p of n-1) != descending = bit p of r != flip.
      const bool flip = (((slot0 ^ (n - 1)) >> PHASE) & 1u) == descending;
      if (flip)
        first_phase_steps<COUNT, PHASE, true>(keys, values, comp);
      else
        first_phase_steps<COUNT, PHASE, false>(keys, values, comp);
    };
    (phase(std::integral_constant<int, P + 1>{}), ...);
  }(std::make_integer_sequence<int, COUNT>{});
}

}  // namespace gpusort::detail::index_math
