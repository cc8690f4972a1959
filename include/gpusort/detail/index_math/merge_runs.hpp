// Merging sorted runs in rounds of pairwise merges, split among workers by merge path: the
// sample sort's final buckets, which are sorted runs already (one per tile slot of the last
// level, docs/sample_sort.md), merged rather than sorted again. Host and device share it:
// the CPU backend merges a bucket with one worker, a block would give each thread a range of
// the outputs.
//
// A round merges runs 2i and 2i + 1 into the place they held (a last run without a partner
// is moved as it is); the next round's runs are every other boundary. Ties take the earlier
// run's item first, so a round is stable.
#pragma once

#include <cstdint>

#include "gpusort/detail/core/config.hpp"
#include "gpusort/detail/core/types.hpp"

namespace gpusort::detail::index_math {

// How many of a[0, a_len) are among the first `diagonal` items of the stable merge of a and
// b[0, b_len) (0 <= diagonal <= a_len + b_len): the merge-path split. key_a(i), key_b(j) give
// the items' keys; less is the order.
template <class KeyA, class KeyB, class Less>
GPUSORT_HD index_t merge_path(KeyA key_a, index_t a_len, KeyB key_b, index_t b_len,
                              index_t diagonal, Less less) {
  index_t low = diagonal > b_len ? diagonal - b_len : 0;
  index_t high = diagonal < a_len ? diagonal : a_len;
  while (low < high) {
    const index_t middle = low + (high - low) / 2;
    // a[middle] goes before b[diagonal - 1 - middle] unless b's is strictly less (a first on
    // ties): then at least middle + 1 of a's are taken.
    if (less(key_b(diagonal - 1 - middle), key_a(middle)))
      high = middle;
    else
      low = middle + 1;
  }
  return low;
}

// Writes outputs [first, last) of one round over the runs [runs[r], runs[r + 1]),
// r < run_count (runs[0] is the first position, runs[run_count] the end): move(from, to) for
// each output position `to`, from the source position it takes. key(i) is the key at source
// position i. Workers that split [runs[0], runs[run_count]) between them write every output
// once.
template <class Key, class Move, class Less>
GPUSORT_HD void merge_round_part(const index_t* runs, index_t run_count, index_t first,
                                 index_t last, Key key, Move move, Less less) {
  index_t out = first;
  while (out < last) {
    // The pair holding `out`: the largest even r with runs[r] <= out.
    index_t low = 0, high = (run_count + 1) / 2;  // pairs
    while (high - low > 1) {
      const index_t middle = low + (high - low) / 2;
      if (runs[2 * middle] <= out)
        low = middle;
      else
        high = middle;
    }
    const index_t r = 2 * low;
    const index_t a_begin = runs[r], a_end = runs[r + 1];
    const index_t b_end = r + 2 <= run_count ? runs[r + 2] : a_end;
    const index_t end = last < b_end ? last : b_end;
    const index_t diagonal = out - a_begin;
    const index_t from_a = merge_path([&](index_t i) { return key(a_begin + i); },
                                      a_end - a_begin,
                                      [&](index_t j) { return key(a_end + j); }, b_end - a_end,
                                      diagonal, less);
    index_t a = a_begin + from_a, b = a_end + (diagonal - from_a);
    for (; out < end; ++out) {
      const bool take_b = a == a_end || (b < b_end && less(key(b), key(a)));
      move(take_b ? b++ : a++, out);
    }
  }
}

// The next round's boundaries, in place: runs[0], runs[2], ..., and runs[run_count]; returns
// the next round's run count.
GPUSORT_HD inline index_t next_merge_round(index_t* runs, index_t run_count) {
  index_t next = 0;
  for (index_t r = 0; r < run_count; r += 2) runs[++next] = runs[r + 2 <= run_count ? r + 2 : run_count];
  return next;
}

}  // namespace gpusort::detail::index_math
