// CPU backend of the approximate sort, top_k and the quality measure: the same intervals as
// the device (index_math/approx.hpp), so the offsets match the GPU's exactly; inside an interval
// keys keep their input order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "gpusort/detail/index_math/approx.hpp"
#include "gpusort/detail/index_math/sample_sort.hpp"
#include "gpusort/detail/core/types.hpp"
#include "gpusort/key_traits.hpp"

namespace gpusort::detail::cpu {

// The interval of every key, as the device computes it.
template <class K>
std::vector<std::uint32_t> interval_of_each(const K* keys, std::uint64_t n,
                                            std::uint32_t intervals, bool sampled,
                                            bool descending) {
  using U = index_math::ordered_t<K>;
  std::vector<std::uint32_t> index(n);
  if (n == 0) return index;
  if (!sampled) {
    U lo = ~U{0}, hi = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      if (!index_math::finite_key(keys[i])) continue;
      const U u = key_traits<K>::ordered(keys[i]);
      lo = std::min(lo, u);
      hi = std::max(hi, u);
    }
    const auto proj = index_math::linear_projection<K>::make(lo, hi, intervals);
    for (std::uint64_t i = 0; i < n; ++i)
      index[i] = index_math::directed_interval(proj(keys[i]), intervals, descending);
    return index;
  }
  const std::uint64_t count = index_math::sample_count(n, intervals);
  std::vector<index_math::sample<K>> samples(count);
  for (std::uint64_t j = 0; j < count; ++j) {
    const std::uint64_t pos = index_math::sample_position(j, count, n);
    samples[j] = {pos, keys[pos], 0};
  }
  const index_math::sample_less<less<K>> by_key_then_position{};
  std::sort(samples.begin(), samples.end(), by_key_then_position);
  std::vector<index_math::sample<K>> splitters;
  for (std::uint64_t r = 1; r < intervals; ++r)
    splitters.push_back(samples[index_math::splitter_sample(r, count, intervals)]);
  for (std::uint64_t i = 0; i < n; ++i) {
    const index_math::sample<K> me{i, keys[i], 0};
    const auto below = std::lower_bound(splitters.begin(), splitters.end(), me,
                                        by_key_then_position) - splitters.begin();
    index[i] = index_math::directed_interval(static_cast<std::uint32_t>(below), intervals,
                                          descending);
  }
  return index;
}

// Counts per interval into offsets[0 .. intervals]; returns each key's interval.
template <class K>
std::vector<std::uint32_t> count_intervals(const K* keys, std::uint64_t n,
                                           std::uint32_t intervals, bool sampled,
                                           bool descending, std::uint64_t* offsets) {
  std::vector<std::uint32_t> index = interval_of_each(keys, n, intervals, sampled, descending);
  std::fill(offsets, offsets + intervals + 1, 0);
  for (std::uint32_t j : index) ++offsets[j + 1];
  for (std::uint32_t j = 0; j < intervals; ++j) offsets[j + 1] += offsets[j];
  return index;
}

template <class K, class V>
void approx_sort(const K* keys, K* out_keys, const V* values, V* out_values, std::uint64_t n,
                 std::uint64_t* offsets, std::uint32_t intervals, bool sampled, bool descending) {
  const std::vector<std::uint32_t> index =
      count_intervals(keys, n, intervals, sampled, descending, offsets);
  std::vector<std::uint64_t> cursor(offsets, offsets + intervals);
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t to = cursor[index[i]]++;
    out_keys[to] = keys[i];
    if constexpr (!std::is_same_v<V, no_value>) out_values[to] = values[i];
  }
}

// The k first keys in the direction, sorted: the intervals up to the one holding the k-th key
// are gathered and sorted (stably), the rest never are.
template <class K, class V>
void top_k(const K* keys, const V* values, std::uint64_t n, K* out_keys, V* out_values,
           std::uint64_t k, std::uint32_t intervals, bool sampled, bool descending) {
  if (k == 0) return;
  std::vector<std::uint64_t> offsets(intervals + std::size_t{1});
  const std::vector<std::uint32_t> index =
      count_intervals(keys, n, intervals, sampled, descending, offsets.data());
  const std::uint32_t last = static_cast<std::uint32_t>(
      std::lower_bound(offsets.begin(), offsets.end(), k) - offsets.begin() - 1);
  std::vector<std::uint64_t> candidates;
  for (std::uint64_t i = 0; i < n; ++i)
    if (index[i] <= last) candidates.push_back(i);
  const index_math::directed<less<K>> before{{}, descending};
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](std::uint64_t a, std::uint64_t b) { return before(keys[a], keys[b]); });
  for (std::uint64_t i = 0; i < k; ++i) {
    out_keys[i] = keys[candidates[i]];
    if constexpr (!std::is_same_v<V, no_value>) out_values[i] = values[candidates[i]];
  }
}

// top_k of every row of a rows x row_length matrix: the k first keys of each row in the
// direction, in order (stable), to out_keys[r * k, (r + 1) * k), values alongside.
template <class K, class V>
void top_k_rows(const K* keys, const V* values, std::uint64_t rows, std::uint64_t row_length,
                K* out_keys, V* out_values, std::uint64_t k, bool descending) {
  if (k == 0) return;
  const index_math::directed<less<K>> before{{}, descending};
  std::vector<std::uint64_t> order(row_length);
  for (std::uint64_t r = 0; r < rows; ++r) {
    const K* row = keys + r * row_length;
    std::iota(order.begin(), order.end(), std::uint64_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint64_t a, std::uint64_t b) { return before(row[a], row[b]); });
    for (std::uint64_t i = 0; i < k; ++i) {
      out_keys[r * k + i] = row[order[i]];
      if constexpr (!std::is_same_v<V, no_value>) out_values[r * k + i] = values[r * row_length + order[i]];
    }
  }
}

// {largest interval, keys out of place, sum of distances, largest distance}, as the device's
// distance_kernel counts them.
template <class K>
void approx_quality(const K* keys, std::uint64_t n, const std::uint64_t* offsets,
                    std::uint32_t intervals, bool descending, unsigned long long (&words)[4]) {
  std::fill(words, words + 4, 0ull);
  const index_math::directed<less<K>> before{{}, descending};
  for (std::uint32_t j = 0; j < intervals; ++j) {
    const std::uint64_t first = offsets[j], end = offsets[j + 1];
    words[0] = std::max<unsigned long long>(words[0], end - first);
    std::vector<K> sorted(keys + first, keys + end);
    std::sort(sorted.begin(), sorted.end(), before);
    for (std::uint64_t p = first; p < end; ++p) {
      const auto range = std::equal_range(sorted.begin(), sorted.end(), keys[p], before);
      const std::uint64_t d = index_math::distance_to(p, first + (range.first - sorted.begin()),
                                                   first + (range.second - sorted.begin()));
      words[1] += d > 0;
      words[2] += d;
      words[3] = std::max<unsigned long long>(words[3], d);
    }
  }
}

}  // namespace gpusort::detail::cpu
