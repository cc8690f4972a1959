// The compare-exchange work of one step group (see bitonic.hpp), shared by a GPU thread
// (keys in registers) and the CPU backend (keys in a small local array).
#pragma once

#include "gpusort/detail/config.hpp"
#include "gpusort/detail/network/bitonic.hpp"
#include "gpusort/detail/types.hpp"

namespace gpusort::detail::network {

// Orders (a, b): ascending puts the smaller first. One comparison and selects only: a warp
// never branches on the data (a ternary over two comparator calls compiles to branches).
template <class K, class V, class Compare>
GPUSORT_HD GPUSORT_FORCEINLINE void compare_exchange(K& a, K& b, V& va, V& vb, bool asc,
                                                     Compare comp) {
  const bool b_first = comp(b, a);
  const K first = b_first ? b : a;
  const K second = b_first ? a : b;
  a = asc ? first : second;
  b = asc ? second : first;
  if constexpr (!std::is_same_v<V, no_value>) {
    const V vfirst = b_first ? vb : va;
    const V vsecond = b_first ? va : vb;
    va = asc ? vfirst : vsecond;
    vb = asc ? vsecond : vfirst;
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
template <int COUNT, bool PARTIAL, class K, class V, class Compare>
GPUSORT_HD GPUSORT_FORCEINLINE void group_steps(K (&keys)[1 << COUNT], V (&values)[1 << COUNT],
                                                bool asc, int real, Compare comp) {
#pragma unroll
  for (int b = COUNT - 1; b >= 0; --b) {
#pragma unroll
    for (int r = 0; r < (1 << COUNT); ++r) {
      if (r & (1 << b)) continue;
      const int u = r | (1 << b);
      if (PARTIAL && u >= real) continue;
      compare_exchange(keys[r], keys[u], values[r], values[u], asc, comp);
    }
  }
}

}  // namespace gpusort::detail::network
