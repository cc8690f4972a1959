// Merging sorted runs in windows: the merged output is cut into consecutive windows of at most
// W records, and each window gathers, from every run, the slice of records that land in it.
// Sorting a window's gathered records (on the GPU, whose device budget W fits) then yields that
// stretch of the output, so one pass of gather + sort + write merges any number of runs.
//
// The cut of the runs at an output rank is found by searching the key space: the least key v
// with at least `rank` records <= v, and the records equal to v shared out run by run (earlier
// runs first, which is what a stable merge does). Keys are unsigned 64-bit rank keys for typed
// keys (key_traits' order, reversed for a descending sort), or byte strings of one width
// compared as memcmp does (byte keys of records), and runs must be sorted non-decreasingly by
// them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
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

// A key as bytes whose memcmp order (std::string's) is the output order: rank keys
// big-endian; byte keys as they are (complemented for a descending sort).
inline std::string rank_bytes(std::uint64_t rank) {
  std::string bytes(8, '\0');
  for (int i = 7; i >= 0; --i, rank >>= 8) bytes[i] = static_cast<char>(rank & 0xFF);
  return bytes;
}
inline const std::string& rank_bytes(const std::string& bytes) { return bytes; }

// First index of run `run` (length `length`) whose key is >= v (or > v with `after`).
template <class KeyAt>
std::uint64_t first_at_or_after(std::uint64_t run, std::uint64_t length, const std::string& v,
                                bool after, KeyAt& key_at) {
  std::uint64_t low = 0, high = length;
  while (low < high) {
    const std::uint64_t mid = low + (high - low) / 2;
    const std::string key = rank_bytes(key_at(run, mid));
    if (key < v || (after && key == v))
      low = mid + 1;
    else
      high = mid;
  }
  return low;
}

// How many records of each run lie among the first `rank` records of the stable merge of the
// runs (rank <= the sum of the lengths). key_at(run, index) is a record's key: a u64 rank key,
// or rank bytes of one width (rank_bytes); the runs are sorted by it. The key v at the cut, the
// least with at least `rank` records <= v, is built a bit at a time from the top: a bit stays
// 0 when the largest key with the bits so far and that bit 0 already has `rank` records at or
// below it. One count over the runs per bit (binary searches), 64 for a rank key.
template <class KeyAt>
std::vector<std::uint64_t> cut_runs_at(std::span<const std::uint64_t> lengths, std::uint64_t rank,
                                       KeyAt&& key_at) {
  std::vector<std::uint64_t> cut(lengths.size(), 0);
  if (rank == 0) return cut;
  const auto at_most = [&](const std::string& v) {  // records with key <= v
    std::uint64_t count = 0;
    for (std::size_t r = 0; r < lengths.size(); ++r)
      count += first_at_or_after(r, lengths[r], v, true, key_at);
    return count;
  };
  std::size_t width = 0;
  for (std::size_t r = 0; r < lengths.size() && width == 0; ++r)
    if (lengths[r] > 0) width = rank_bytes(key_at(r, std::uint64_t{0})).size();
  std::string v(width, '\0');
  for (std::size_t bit = 0; bit < width * 8; ++bit) {
    const std::size_t byte = bit / 8;
    const unsigned mask = 0x80u >> (bit % 8);
    std::string largest = v;  // this bit 0, every later bit 1
    largest[byte] = static_cast<char>(static_cast<unsigned char>(largest[byte]) | (mask - 1));
    for (std::size_t b = byte + 1; b < width; ++b) largest[b] = '\xFF';
    if (at_most(largest) < rank)
      v[byte] = static_cast<char>(static_cast<unsigned char>(v[byte]) | mask);
  }
  std::vector<std::uint64_t> upto(lengths.size());
  std::uint64_t below = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    cut[r] = first_at_or_after(r, lengths[r], v, false, key_at);
    upto[r] = first_at_or_after(r, lengths[r], v, true, key_at);
    below += cut[r];
  }
  std::uint64_t ties = rank - below;  // records equal to v that still belong in
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

// The non-empty slices between two cuts of the runs, in run order.
inline std::vector<run_slice> slices_between(std::span<const std::uint64_t> from,
                                             std::span<const std::uint64_t> to) {
  std::vector<run_slice> slices;
  for (std::uint64_t r = 0; r < from.size(); ++r)
    if (to[r] > from[r]) slices.push_back({r, from[r], to[r]});
  return slices;
}

// The slices of window `window` (records [window * width, min(total, (window + 1) * width))
// of the output), given the cuts at its start (updated to the cuts at its end), in run order.
template <class KeyAt>
std::vector<run_slice> window_slices(std::span<const std::uint64_t> lengths, std::uint64_t total,
                                     std::uint64_t width, std::uint64_t window,
                                     std::vector<std::uint64_t>& cuts, KeyAt&& key_at) {
  const std::uint64_t end_rank = std::min(total, (window + 1) * width);
  std::vector<std::uint64_t> end = cut_runs_at(lengths, end_rank, key_at);
  std::vector<run_slice> slices = slices_between(cuts, end);
  cuts = std::move(end);
  return slices;
}

}  // namespace gpusort::detail::external
