// The host sorts (`gpusort sort --algo std_sort|cpu_parallel`): the baselines that the GPU
// sorts are measured against, run on the same file I/O as the library's sorts. The library's
// in-memory paths take one in place of gpusort::sort (src/external/external_sort.hpp, the
// host-sort shape). Pairs and byte-key records are sorted stably by key, as the GPU paths'
// output is.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <parallel/algorithm>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpusort/key_traits.hpp"
#include "records.hpp"  // records<K>, record_layout, byte_key_order

namespace gpusort::tools {

// std_sort on one core, cpu_parallel (GCC's parallel mode) on all.
struct host_sort {
  std::string name;

  bool parallel() const { return name == "cpu_parallel"; }

  template <class K>
  void sort(gpusort::detail::external::records<K>& r, bool descending) const {
    const less<K> before;
    const auto by_key = [&](const K& a, const K& b) { return descending ? before(b, a) : before(a, b); };
    if (!r.pairs) {
      if (parallel())
        __gnu_parallel::sort(r.keys.begin(), r.keys.end(), by_key);
      else
        std::sort(r.keys.begin(), r.keys.end(), by_key);
      return;
    }
    std::vector<std::pair<K, std::uint32_t>> zipped(r.keys.size());
    for (std::size_t i = 0; i < zipped.size(); ++i) zipped[i] = {r.keys[i], r.values[i]};
    const auto pair_by_key = [&](const auto& a, const auto& b) { return by_key(a.first, b.first); };
    if (parallel())
      __gnu_parallel::stable_sort(zipped.begin(), zipped.end(), pair_by_key);
    else
      std::stable_sort(zipped.begin(), zipped.end(), pair_by_key);
    for (std::size_t i = 0; i < zipped.size(); ++i) std::tie(r.keys[i], r.values[i]) = zipped[i];
  }

  // The order of byte-key records: a stable sort of their indices by the whole key.
  template <class Index>
  std::vector<Index> order(std::span<const unsigned char> data,
                           const gpusort::detail::external::record_layout& layout) const {
    const std::size_t bytes = layout.record_bytes;
    std::vector<Index> index(data.size() / bytes);
    std::iota(index.begin(), index.end(), Index{0});
    const gpusort::detail::external::byte_key_order before{layout.key_offset, layout.key_bytes,
                                                           layout.descending};
    const auto by_key = [&](Index a, Index b) {
      return before(data.data() + static_cast<std::size_t>(a) * bytes,
                    data.data() + static_cast<std::size_t>(b) * bytes);
    };
    if (parallel())
      __gnu_parallel::stable_sort(index.begin(), index.end(), by_key);
    else
      std::stable_sort(index.begin(), index.end(), by_key);
    return index;
  }
};

}  // namespace gpusort::tools
