// Index math of the one-pass merge of R sorted runs (gpusort::dist's merge of the runs a rank
// receives), shared by the device code and the CPU tests.
//
// The runs are in order (run 0 first) and each is sorted by an order code. The merged order is
// (code, run, position): a strict total order, so the merge is stable with the runs' order as
// the input order. The split of the merge at output position d is the vector s(d): s_q(d)
// elements of run q lie among the first d outputs. The element (q, i) with code c lies at
// merged position
//   rank(q, i) = i + sum over runs r < q of #{codes <= c in r}
//                  + sum over runs r > q of #{codes < c in r}.
//
// Three steps find the splits of every output tile (d = t T) without a search over whole runs
// per tile:
//  1. Pivots: every m-th element of every run, (q, t m). Each pivot's rank and split come from
//     R - 1 binary searches over whole runs (pivot_split).
//  2. Between two pivots consecutive in the merged order every run contributes at most m
//     elements (a run's next pivot would lie between them otherwise): a window. A tile
//     boundary d lies in the window of the last pivot at or before it, found with the next
//     one by a binary search in each run's pivots, whose positions rise along the run
//     (pivots_around): no sort of the pivots.
//  3. The boundary's split is found by binary searches inside that window alone
//     (split_of_run), log m steps each.
// Then each tile is merged on its own (in shared memory: merge_path_split for two sorted
// sequences, pairwise in a tree).
#pragma once

#include <cstdint>

#include "gpusort/detail/core/config.hpp"

namespace gpusort::detail::index_math::multiway {

// Runs one pass merges (more take the pairwise merge's rounds).
inline constexpr int max_runs = 8;

// #{i in [lo, hi) : code(i) < c}, or <= c with inclusive: a binary search of a sorted range.
template <class CodeAt>
GPUSORT_HD constexpr std::uint64_t count_below(const CodeAt& code, std::uint64_t lo,
                                               std::uint64_t hi, std::uint64_t c,
                                               bool inclusive) {
  const std::uint64_t first = lo;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    const std::uint64_t v = code(mid);
    if (v < c || (inclusive && v == c))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo - first;
}

// Pivots of a run of n elements taken every m-th: positions 0, m, 2m, ... below n.
GPUSORT_HD constexpr std::uint64_t pivot_count(std::uint64_t n, std::uint64_t m) {
  return (n + m - 1) / m;
}

// Binary searches of max_runs ranges [low[r], high[r]) (empty ones take no step) advancing
// together, one step of each a round, so that the device has their loads in flight at once.
// before(r, k) must hold for a prefix of range r; low[r] ends at the first k where it does not.
// Index: the positions' type (32-bit inside a window, which halves the registers they take).
template <class Index, class Before>
GPUSORT_HD constexpr void search_together(Index* low, Index* high, const Before& before) {
  for (bool searching = true; searching;) {
    searching = false;
    GPUSORT_UNROLL
    for (int r = 0; r < max_runs; ++r) {
      if (low[r] >= high[r]) continue;
      const Index mid = low[r] + (high[r] - low[r]) / 2;
      if (before(r, mid))
        low[r] = mid + 1;
      else
        high[r] = mid;
      searching = searching || low[r] < high[r];
    }
  }
}

// The split at element (q, i) with code c: out[r] = elements of run r before it in the merged
// order (out[q] = i); returns their sum, the element's merged position. code(r, k) is the code
// of run r's element k; lo[r] .. hi[r] the range of run r searched: elements of run r below
// lo[r] are known to come before it and those from hi[r] on after it. The R - 1 binary
// searches advance together (search_together): a chain of about log2(hi - lo) dependent
// loads, not R - 1 such chains.
template <class Index, class CodeOf>
GPUSORT_HD constexpr Index split_at_element(const CodeOf& code, int runs, const Index* lo,
                                            const Index* hi, int q, Index i, std::uint64_t c,
                                            Index* out) {
  // Run r's answer lies in [first[r], last[r]]; run q's is i, and runs past `runs` have none.
  // The loops run over max_runs, unrolled on the device, so that first and last live in
  // registers.
  Index first[max_runs] = {}, last[max_runs] = {};
  GPUSORT_UNROLL
  for (int r = 0; r < max_runs; ++r) {
    if (r >= runs) continue;
    first[r] = r == q ? i : lo[r];
    last[r] = r == q ? i : hi[r];
  }
  search_together(first, last, [&](int r, Index k) {
    const std::uint64_t v = code(r, k);
    return v < c || (r < q && v == c);  // earlier runs come first on equal codes
  });
  Index rank = 0;
  GPUSORT_UNROLL
  for (int r = 0; r < max_runs; ++r)
    if (r < runs) rank += out[r] = first[r];
  return rank;
}

// "No such pivot", for pivots_around.
inline constexpr std::uint64_t no_pivot = ~std::uint64_t{0};

// Of the pivots, numbered run by run (run r's count[r] pivots are first[r] ..
// first[r] + count[r] - 1, their merged positions position(id) rising along the run), the one
// at the largest position <= d (*before; no_pivot if none) and the one at the smallest
// position > d (*after; no_pivot if none). A binary search in each run's pivots, the searches
// advancing together (search_together).
template <class PositionOf>
GPUSORT_HD constexpr void pivots_around(const PositionOf& position, int runs,
                                        const std::uint64_t* first, const std::uint64_t* count,
                                        std::uint64_t d, std::uint64_t* before,
                                        std::uint64_t* after) {
  std::uint64_t low[max_runs] = {}, high[max_runs] = {};  // run r: low[r] pivots at <= d, at end
  GPUSORT_UNROLL
  for (int r = 0; r < max_runs; ++r)
    if (r < runs) high[r] = count[r];
  search_together(low, high,
                  [&](int r, std::uint64_t k) { return position(first[r] + k) <= d; });
  *before = *after = no_pivot;
  std::uint64_t latest = 0, earliest = 0;
  GPUSORT_UNROLL
  for (int r = 0; r < max_runs; ++r) {
    if (r >= runs) continue;
    if (low[r] > 0) {
      const std::uint64_t at = position(first[r] + low[r] - 1);
      if (*before == no_pivot || at > latest) *before = first[r] + low[r] - 1, latest = at;
    }
    if (low[r] < count[r]) {
      const std::uint64_t at = position(first[r] + low[r]);
      if (*after == no_pivot || at < earliest) *after = first[r] + low[r], earliest = at;
    }
  }
}

// Run q's part of the split at output position d, given a pivot split lo (at a merged position
// <= d) and the next pivot's split hi (at a position > d, or the runs' lengths): the elements of
// run q among the first d outputs. A binary search over run q's window for the first element
// at a merged position >= d. (The device gives each run its own thread.)
// - The searches run on offsets into the window, 32-bit: a window holds at most a pivot gap of
//   elements a run, and d lies less than their sum past the lo pivot.
// - Each probe's split bounds the next probes' searches in the other runs, since an element's
//   split rises along its run: a probe below d raises their lower ends, one at or above d
//   lowers their upper ends.
template <class CodeOf>
GPUSORT_HD constexpr std::uint64_t split_of_run(const CodeOf& code, int runs,
                                                const std::uint64_t* lo, const std::uint64_t* hi,
                                                std::uint64_t d, int q) {
  // The window's start in each run and their sum; run q's read by unrolled selects, so that
  // no array is indexed by q (which would put it on the stack).
  std::uint64_t base[max_runs] = {}, pivot = 0, base_q = 0;
  std::uint32_t low[max_runs] = {}, high[max_runs] = {}, last = 0;
  GPUSORT_UNROLL
  for (int r = 0; r < max_runs; ++r) {
    if (r >= runs) continue;
    base[r] = lo[r];
    high[r] = static_cast<std::uint32_t>(hi[r] - lo[r]);
    pivot += lo[r];
    if (r == q) base_q = base[r], last = high[r];
  }
  const auto window_code = [&](int r, std::uint32_t k) { return code(r, base[r] + k); };
  const auto target = static_cast<std::uint32_t>(d - pivot);  // d's place in the window
  std::uint32_t first = 0;
  while (first < last) {
    const std::uint32_t mid = first + (last - first) / 2;
    std::uint32_t split[max_runs] = {};
    const bool below = split_at_element(window_code, runs, low, high, q, mid,
                                        code(q, base_q + mid), split) < target;
    if (below)
      first = mid + 1;
    else
      last = mid;
    GPUSORT_UNROLL
    for (int r = 0; r < max_runs; ++r)
      if (r < runs && r != q) (below ? low[r] : high[r]) = split[r];
  }
  return base_q + first;
}

// Merge path: of the first d outputs of the stable merge of sorted a (na elements, first on
// ties) and b (nb), how many come from a. a(i), b(j): the elements' codes. Index: the indices'
// type (a tile's 32-bit indices take fewer instructions than 64-bit ones).
template <class Index, class ACode, class BCode>
GPUSORT_HD constexpr Index merge_path_split(const ACode& a, Index na, const BCode& b, Index nb,
                                            Index d) {
  Index lo = d > nb ? d - nb : 0, hi = d < na ? d : na;
  while (lo < hi) {
    const Index mid = lo + (hi - lo) / 2;
    if (!(b(d - 1 - mid) < a(mid)))  // a[mid] comes before b[d - 1 - mid]: within the first d
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

}  // namespace gpusort::detail::index_math::multiway
