// The compare-exchange work of one step group (see bitonic.hpp), shared by a GPU thread
// (keys in registers) and the CPU backend (keys in a small local array).
#pragma once

#include "gpusort/detail/config.hpp"
#include "gpusort/detail/network/bitonic.hpp"
#include "gpusort/detail/types.hpp"

namespace gpusort::detail::network {

template <class T>
GPUSORT_HD GPUSORT_FORCEINLINE void swap_values(T& a, T& b) {
  T t = a;
  a = b;
  b = t;
}
GPUSORT_HD GPUSORT_FORCEINLINE void swap_values(no_value&, no_value&) {}

// Runs COUNT consecutive steps of phase `phase` on the 2^COUNT keys whose global slots are
// slot0 | (r << low_bit), r = 0..2^COUNT-1 (member r in keys[r]). The steps use the bits
// low_bit+COUNT-1 down to low_bit. Members at slots >= n are padding: never compared.
template <int COUNT, class K, class V, class Compare>
GPUSORT_HD GPUSORT_FORCEINLINE void group_steps(K (&keys)[1 << COUNT], V (&values)[1 << COUNT],
                                                index_t slot0, int low_bit, int phase, index_t n,
                                                bool descending, Compare comp) {
  const bool asc = ascending(slot0, phase, n, descending);  // bit `phase` is not in the group
  const bool all_real = (slot0 | ((index_t{(1u << COUNT) - 1}) << low_bit)) < n;
#pragma unroll
  for (int b = COUNT - 1; b >= 0; --b) {
#pragma unroll
    for (int r = 0; r < (1 << COUNT); ++r) {
      if (r & (1 << b)) continue;
      const int u = r | (1 << b);
      if (!all_real && (slot0 | (static_cast<index_t>(u) << low_bit)) >= n) continue;
      const bool out_of_order = asc ? comp(keys[u], keys[r]) : comp(keys[r], keys[u]);
      if (out_of_order) {
        swap_values(keys[r], keys[u]);
        swap_values(values[r], values[u]);
      }
    }
  }
}

}  // namespace gpusort::detail::network
