// The compare-exchange work of one step group (see bitonic.hpp), shared by a GPU thread
// (keys in registers) and the CPU backend (keys in a small local array).
#pragma once

#include "gpusort/detail/config.hpp"
#include "gpusort/detail/network/bitonic.hpp"
#include "gpusort/detail/types.hpp"

namespace gpusort::detail::network {

// Orders (a, b): ASC puts the smaller first. One comparison and selects only (a min and a
// max for built-in keys): a warp never branches on the data.
template <bool ASC, class K, class V, class Compare>
GPUSORT_HD GPUSORT_FORCEINLINE void compare_exchange(K& a, K& b, V& va, V& vb, Compare comp) {
  const bool b_first = comp(b, a);
  const K first = b_first ? b : a;
  const K second = b_first ? a : b;
  a = ASC ? first : second;
  b = ASC ? second : first;
  if constexpr (!std::is_same_v<V, no_value>) {
    const V vfirst = b_first ? vb : va;
    const V vsecond = b_first ? va : vb;
    va = ASC ? vfirst : vsecond;
    vb = ASC ? vsecond : vfirst;
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

}  // namespace gpusort::detail::network
