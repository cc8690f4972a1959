// Merging sorted runs in windows: the merged output is cut into consecutive windows of at most
// W records, and each window gathers, from every run, the slice of records that land in it.
// Sorting a window's gathered records (on the GPU, whose device budget W fits) then yields that
// stretch of the output, so one pass of gather + sort + write merges any number of runs.
//
// The cut of the runs at an output rank is found by searching the key space: the smallest
// key v with at least `rank` records <= v, and the records equal to v shared out run by run
// (earlier runs first, which is what a stable merge does). Keys are compared as unsigned
// 64-bit rank keys (key_traits' order, reversed for a descending sort), so runs must be sorted
// non-decreasingly by rank key.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "gpusort/key_traits.hpp"

namespace gpusort::detail::external {

// A key's place in the output order as one unsigned number: equal numbers for keys the sort
// treats as equal (every NaN), larger numbers for keys that come later.
template <class K>
constexpr std::uint64_t rank_key(K key, bool descending) {
  const std::uint64_t ordered = key_traits<K>::ordered(key);
  return descending ? ~ordered : ordered;
}

// First index of run `run` (length `length`) whose rank key is >= v (or > v with `after`).
template <class KeyAt>
std::uint64_t first_at_or_after(std::uint64_t run, std::uint64_t length, std::uint64_t v,
                                bool after, KeyAt& key_at) {
  std::uint64_t low = 0, high = length;
  while (low < high) {
    const std::uint64_t mid = low + (high - low) / 2;
    const std::uint64_t key = key_at(run, mid);
    if (key < v || (after && key == v))
      low = mid + 1;
    else
      high = mid;
  }
  return low;
}

// How many records of each run lie among the first `rank` records of the stable merge of the
// runs (rank <= the sum of the lengths). key_at(run, index) is the rank key of a record.
template <class KeyAt>
std::vector<std::uint64_t> cut_runs_at(std::span<const std::uint64_t> lengths, std::uint64_t rank,
                                       KeyAt&& key_at) {
  std::vector<std::uint64_t> cut(lengths.size(), 0);
  if (rank == 0) return cut;
  const auto at_most = [&](std::uint64_t v) {  // records with rank key <= v
    std::uint64_t count = 0;
    for (std::size_t r = 0; r < lengths.size(); ++r)
      count += first_at_or_after(r, lengths[r], v, true, key_at);
    return count;
  };
  // The smallest v with at_most(v) >= rank.
  std::uint64_t low = 0, high = std::numeric_limits<std::uint64_t>::max();
  while (low < high) {
    const std::uint64_t mid = low + (high - low) / 2;
    if (at_most(mid) >= rank)
      high = mid;
    else
      low = mid + 1;
  }
  std::vector<std::uint64_t> upto(lengths.size());
  std::uint64_t below = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    cut[r] = first_at_or_after(r, lengths[r], low, false, key_at);
    upto[r] = first_at_or_after(r, lengths[r], low, true, key_at);
    below += cut[r];
  }
  std::uint64_t ties = rank - below;  // records equal to `low` that still belong in
  for (std::size_t r = 0; r < lengths.size() && ties > 0; ++r) {
    const std::uint64_t take = std::min(ties, upto[r] - cut[r]);
    cut[r] += take;
    ties -= take;
  }
  return cut;
}

// A slice [begin, end) of one run that a window gathers.
struct run_slice {
  std::uint64_t run, begin, end;
};

// The slices of window `window` (records [window * width, min(total, (window + 1) * width))
// of the output), given the cuts at its start (updated to the cuts at its end), in run order.
template <class KeyAt>
std::vector<run_slice> window_slices(std::span<const std::uint64_t> lengths, std::uint64_t total,
                                     std::uint64_t width, std::uint64_t window,
                                     std::vector<std::uint64_t>& cuts, KeyAt&& key_at) {
  const std::uint64_t end_rank = std::min(total, (window + 1) * width);
  const std::vector<std::uint64_t> end = cut_runs_at(lengths, end_rank, key_at);
  std::vector<run_slice> slices;
  for (std::uint64_t r = 0; r < lengths.size(); ++r)
    if (end[r] > cuts[r]) slices.push_back({r, cuts[r], end[r]});
  cuts = end;
  return slices;
}

}  // namespace gpusort::detail::external
