// Shared by the batched/segmented tests: segment layouts (sizes, gaps, shuffled order) and
// the reference result (std::stable_sort per segment, gaps untouched).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "reference.hpp"

namespace gpusort::testing {

// Segments as begin/end offsets into n keys.
struct layout {
  std::vector<std::uint64_t> begin, end;
  std::uint64_t n = 0;
};

// Segments of the given sizes, back to back; with gap > 0 a gap of up to `gap` untouched keys
// before each; with shuffled, the segment list is in random order.
inline layout make_layout(const std::vector<std::uint64_t>& sizes, std::uint64_t gap = 0,
                          bool shuffled = false, std::uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  layout l;
  for (std::uint64_t m : sizes) {
    if (gap) l.n += rng() % (gap + 1);
    l.begin.push_back(l.n);
    l.n += m;
    l.end.push_back(l.n);
  }
  if (gap) l.n += rng() % (gap + 1);
  if (shuffled) {
    std::vector<std::size_t> order(sizes.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    layout s = l;
    for (std::size_t i = 0; i < order.size(); ++i) {
      s.begin[i] = l.begin[order[i]];
      s.end[i] = l.end[order[i]];
    }
    return s;
  }
  return l;
}

// Lognormal sizes (mu = 3, sigma = 1.2, as in CUB's segmented-sort benchmarks) adding up to
// about `total` keys.
inline std::vector<std::uint64_t> power_law_sizes(std::uint64_t total, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> size(3.0, 1.2);
  std::vector<std::uint64_t> sizes;
  std::uint64_t sum = 0;
  while (sum < total) {
    const auto m = static_cast<std::uint64_t>(std::llround(size(rng)));
    sizes.push_back(m);
    sum += m;
  }
  return sizes;
}

// The expected keys: each segment sorted (stable, gpusort's order), everything else as it was.
template <class K>
std::vector<K> reference_segmented(std::vector<K> keys, const layout& l, bool descending) {
  for (std::size_t i = 0; i < l.begin.size(); ++i) {
    std::vector<K> seg(keys.begin() + l.begin[i], keys.begin() + l.end[i]);
    seg = reference_sort(seg, descending);
    std::copy(seg.begin(), seg.end(), keys.begin() + l.begin[i]);
  }
  return keys;
}

// The offsets as type O.
template <class O>
std::vector<O> narrow(const std::vector<std::uint64_t>& v) {
  return std::vector<O>(v.begin(), v.end());
}

}  // namespace gpusort::testing
