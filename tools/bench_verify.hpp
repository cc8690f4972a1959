// What a benchmark result must be: the inputs of a point (one array or one segment layout),
// the checks of each kind of result, on the host, and the tally of their verdicts. The
// harness times; these verify.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <parallel/algorithm>
#include <string>
#include <vector>

#include "cli.hpp"  // segment_spec, less, key_traits, the file machinery's names
#include "common/distributions.hpp"
#include "records.hpp"  // records, checksum, order_report

namespace gpusort::tools {

// One input of the benchmark in one segment layout, and what it must sort to.
template <class K>
struct point {
  distribution dist;
  std::uint64_t n;
  records<K> input;
  std::optional<segment_spec> segments;  // none: a single array
  std::vector<std::uint64_t> offsets;    // segment i is [offsets[i], offsets[i + 1])
  checksum input_sum;                    // checksum_by_segment of the input
  std::optional<int> array;              // which input array, when there are several
  std::uint64_t segment_count() const { return offsets.size() - 1; }
  // Equal segments that fill n exactly go through the batched calls: no offsets to read.
  bool batched() const { return segments && !segments->powerlaw && n % segments->size == 0; }
  std::string label() const {
    return std::string(key_traits<K>::name) + (input.pairs ? "+u32 " : " ") +
           std::string(to_string(dist)) + " n=" + std::to_string(n) +
           (segments ? " segments=" + segments->name() : "") +
           (array ? " array=" + std::to_string(*array) : "");
  }
};

// scan_order within each segment: positions i whose key belongs before key i - 1 of the
// same segment.
template <class K>
order_report segment_order(const std::vector<K>& keys, const std::vector<std::uint64_t>& offsets) {
  order_report report;
  const less<K> before;
  for (std::size_t s = 0; s + 1 < offsets.size(); ++s)
    for (std::uint64_t i = offsets[s] + 1; i < offsets[s + 1]; ++i)
      if (before(keys[i], keys[i - 1]) && report.out_of_order++ == 0) report.first = i;
  return report;
}

// checksum_of with each record's hash tied to its segment: equal to the input's only if
// (with near certainty) every segment holds the records it had.
template <class K>
checksum checksum_by_segment(const records<K>& r, const std::vector<std::uint64_t>& offsets) {
  checksum c;
  for (std::size_t s = 0; s + 1 < offsets.size(); ++s)
    for (std::uint64_t i = offsets[s]; i < offsets[s + 1]; ++i) {
      c.add(mix64(record_hash(r, i) + s * 0x9E3779B97F4A7C15ull));
    }
  return c;
}

// Sorts every segment of p's layout in the array that starts at `data`: with std::sort, or
// on all cores: one array by GCC's parallel mode sort (a multiway merge sort), several
// segments spread over the cores, each sorted by one thread (dynamic schedule: powerlaw
// sizes vary).
template <class K, class It, class Compare>
void sort_each_segment(const point<K>& p, It data, Compare compare, bool parallel) {
  const auto start = [&](std::int64_t s) {
    return data + static_cast<std::ptrdiff_t>(p.offsets[static_cast<std::size_t>(s)]);
  };
  const auto count = static_cast<std::int64_t>(p.segment_count());
  if (parallel && count == 1) {
    __gnu_parallel::sort(start(0), start(1), compare);
    return;
  }
#pragma omp parallel for schedule(dynamic, 16) if (parallel)
  for (std::int64_t s = 0; s < count; ++s) std::sort(start(s), start(s + 1), compare);
}

// ---- what a result must be ----------------------------------------------------------------
// Each returns what is wrong with a result, or an empty string.

// A sort's: every segment in order, holding the records it had.
template <class K>
std::string sort_problem(const point<K>& p, const records<K>& result) {
  if (result.keys.size() != p.n) return "lost records";
  if (const order_report order = segment_order(result.keys, p.offsets); order.out_of_order > 0)
    return std::to_string(order.out_of_order) + " records out of order" +
           (p.segments ? " in their segment" : "") + ", the first at " +
           std::to_string(order.first);
  if (!(checksum_by_segment(result, p.offsets) == p.input_sum))
    return p.segments ? "segments hold other records than in the input (checksum)"
                      : "the records differ from the input (checksum)";
  return {};
}

// An approximate sort's (single array): offsets that split the n records into intervals, no
// key before a key of an earlier interval, and the input's records.
template <class K>
std::string interval_problem(const point<K>& p, const records<K>& result,
                             const std::vector<std::uint64_t>& offsets) {
  if (offsets.front() != 0 || offsets.back() != p.n || !std::ranges::is_sorted(offsets))
    return "the offsets do not split the records into intervals";
  const less<K> before;
  const K* earlier_max = nullptr;  // the largest key of the intervals so far
  for (std::size_t i = 0; i + 1 < offsets.size(); ++i) {
    if (offsets[i] == offsets[i + 1]) continue;
    const auto [min, max] =
        std::minmax_element(result.keys.begin() + static_cast<std::ptrdiff_t>(offsets[i]),
                            result.keys.begin() + static_cast<std::ptrdiff_t>(offsets[i + 1]),
                            before);
    if (earlier_max && before(*min, *earlier_max))
      return "interval " + std::to_string(i) + " holds a key that belongs before a key of " +
             "an earlier interval";
    earlier_max = &*max;
  }
  if (!(checksum_by_segment(result, p.offsets) == p.input_sum))
    return "the records differ from the input (checksum)";
  return {};
}

// top_k's and top_k_rows': each row's k first keys are those of the sorted row (bitwise), and
// for pairs, values that are distinct original indices of equal keys of that row. A single
// array is one row of p.n keys.
template <class K>
std::string top_k_problem(const point<K>& p, const records<K>& result, std::uint64_t row_length) {
  const std::uint64_t k = row_length == 0 ? 0 : result.keys.size() / (p.n / row_length);
  const auto same = [](K a, K b) { return key_traits<K>::ordered(a) == key_traits<K>::ordered(b); };
  for (std::uint64_t first = 0, out = 0; first < p.n; first += row_length, out += k) {
    const std::string row = p.n == row_length ? "" : " of row " + std::to_string(first / row_length);
    const auto input = p.input.keys.begin() + static_cast<std::ptrdiff_t>(first);
    std::vector<K> expected(input, input + static_cast<std::ptrdiff_t>(row_length));
    std::partial_sort(expected.begin(), expected.begin() + static_cast<std::ptrdiff_t>(k),
                      expected.end(), less<K>{});
    for (std::uint64_t i = 0; i < k; ++i)
      if (!same(result.keys[out + i], expected[i]))
        return "key " + std::to_string(i) + row + " is not the sorted input's";
    if (!result.pairs) continue;
    std::vector<std::uint32_t> indices(result.values.begin() + static_cast<std::ptrdiff_t>(out),
                                       result.values.begin() + static_cast<std::ptrdiff_t>(out + k));
    for (std::uint64_t i = 0; i < k; ++i)
      if (indices[i] < first || indices[i] >= first + row_length ||
          !same(p.input.keys[indices[i]], result.keys[out + i]))
        return "the value of key " + std::to_string(i) + row +
               " is not the index of an equal input key";
    std::ranges::sort(indices);
    if (std::ranges::adjacent_find(indices) != indices.end())
      return "an input record comes twice" + row;
  }
  return {};
}

// select_k's (single array): the k first keys in any order, as top_k_problem checks them once
// sorted (values along), and `kth` the largest of them (bitwise).
template <class K>
std::string select_k_problem(const point<K>& p, records<K> result, K kth) {
  const std::uint64_t k = result.keys.size();
  std::vector<std::uint64_t> order(k);
  for (std::uint64_t i = 0; i < k; ++i) order[i] = i;
  std::ranges::stable_sort(order, [&](std::uint64_t a, std::uint64_t b) {
    return less<K>{}(result.keys[a], result.keys[b]);
  });
  records<K> sorted = result;
  for (std::uint64_t i = 0; i < k; ++i) {
    sorted.keys[i] = result.keys[order[i]];
    if (result.pairs) sorted.values[i] = result.values[order[i]];
  }
  std::string problem = top_k_problem(p, sorted, p.n);
  if (problem.empty() && k > 0 &&
      key_traits<K>::ordered(kth) != key_traits<K>::ordered(sorted.keys[k - 1]))
    problem = "the k-th key is not the largest of the k";
  return problem;
}

// The verdicts of a whole benchmark run: right results counted, wrong ones reported loudly.
class verdict_tally {
 public:
  // Counts a result of `algorithm` on `where` with `problem` (empty: right); a wrong one is
  // printed on stderr. Returns whether it was right.
  bool record(const std::string& algorithm, const std::string& where,
              const std::string& problem) {
    if (problem.empty()) {
      ++verified_;
      return true;
    }
    std::fprintf(stderr, "gpusort bench: WRONG RESULT from %s on %s: %s\n", algorithm.c_str(),
                 where.c_str(), problem.c_str());
    ++wrong_;
    return false;
  }
  int verified() const { return verified_; }
  int wrong() const { return wrong_; }

 private:
  int verified_ = 0, wrong_ = 0;
};

}  // namespace gpusort::tools
