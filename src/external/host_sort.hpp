// The host sorts (`gpusort sort --algo std_sort|cpu_parallel`) run on the same file I/O as
// the GPU's sorts: the baseline that an out-of-core GPU sort is measured against. Pairs are
// sorted stably by key, as the GPU path's output is.
#pragma once

#include <algorithm>
#include <cstdint>
#include <parallel/algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "gpusort/key_traits.hpp"
#include "records.hpp"

namespace gpusort::detail::external {

inline bool is_host_sort(std::string_view name) {
  return name == "std_sort" || name == "cpu_parallel";
}

template <class K>
void sort_on_host(records<K>& r, bool descending, bool parallel) {
  const less<K> before;
  const auto by_key = [&](const K& a, const K& b) { return descending ? before(b, a) : before(a, b); };
  if (!r.pairs) {
    if (parallel)
      __gnu_parallel::sort(r.keys.begin(), r.keys.end(), by_key);
    else
      std::sort(r.keys.begin(), r.keys.end(), by_key);
    return;
  }
  std::vector<std::pair<K, std::uint32_t>> zipped(r.keys.size());
  for (std::size_t i = 0; i < zipped.size(); ++i) zipped[i] = {r.keys[i], r.values[i]};
  const auto pair_by_key = [&](const auto& a, const auto& b) { return by_key(a.first, b.first); };
  if (parallel)
    __gnu_parallel::stable_sort(zipped.begin(), zipped.end(), pair_by_key);
  else
    std::stable_sort(zipped.begin(), zipped.end(), pair_by_key);
  for (std::size_t i = 0; i < zipped.size(); ++i) std::tie(r.keys[i], r.values[i]) = zipped[i];
}

}  // namespace gpusort::detail::external
