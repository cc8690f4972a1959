// The merge of the sorted runs a rank of gpusort::dist::sort receives (docs/distributed.md,
// step 5): rounds over groups of options::merge_fan_in runs, two by CUB's merge, 3 to 8 in one
// pass (multiway_merge.cuh). Apart from dist_impl.cuh so that gpusort-dist-bench --merge
// times it alone.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <cub/device/device_merge.cuh>

#include "dist_common.hpp"
#include "gpusort/detail/index_math/dist.hpp"
#include "multiway_merge.cuh"

namespace gpusort::dist::detail {

namespace math = gpusort::detail::index_math::dist;
using gpusort::detail::no_value;

// The merge's comparator: the order of the codes (equal codes tie, so the merge is stable).
template <class K>
struct by_order_code {
  math::order_code<K> code;
  __host__ __device__ __forceinline__ bool operator()(const K& a, const K& b) const {
    return code(a) < code(b);
  }
};

// A sorted run in device memory, where the merge reads it.
template <class K, class V>
struct run_view {
  const K* keys;
  const V* values;
  std::uint64_t length;
};

// Merges the runs (in rank order, none empty: the received ones in buffer 0, the own one in
// the shard) into one sorted run at the start of buffer 0 or 1, whichever it returns, stable by
// run. Rounds merge groups of up to fan_in (2 to mm::max_runs) adjacent runs each: two by
// CUB's merge, more in one pass (multiway_merge.cuh), one copied. The first round packs them
// into buffer 1, later rounds ping-pong: with fan_in 8, up to 8 runs take one round, 64 take
// two. A single run already at the start of buffer 0 stays there.
template <class K, class V>
int merge_runs(device_memory* keys_buf, device_memory* values_buf,
               std::vector<run_view<K, V>> runs, std::uint64_t total, math::order_code<K> code,
               int fan_in, cudaStream_t stream, const std::string& call) {
  constexpr bool pairs = !std::is_same_v<V, no_value>;
  auto key_ptr = [&](int b) { return static_cast<K*>(keys_buf[b].get()); };
  auto value_ptr = [&](int b) { return static_cast<V*>(values_buf[b].get()); };
  if (runs.empty() || (runs.size() == 1 && runs[0].keys == key_ptr(0) &&
                       (!pairs || runs[0].values == value_ptr(0))))
    return 0;
  const by_order_code<K> comp{code};
  auto merge_two = [&](void* temp, std::size_t& bytes, const run_view<K, V>& a,
                       const run_view<K, V>& b, K* out_keys, V* out_values) {
    if constexpr (pairs) {
      return cub::DeviceMerge::MergePairs(temp, bytes, a.keys, a.values, a.length, b.keys,
                                          b.values, b.length, out_keys, out_values, comp, stream);
    } else {
      return cub::DeviceMerge::MergeKeys(temp, bytes, a.keys, a.length, b.keys, b.length,
                                         out_keys, comp, stream);
    }
  };
  // One workspace for CUB's merges, as large as the largest asks.
  std::size_t temp_bytes = 0;
  check_cuda(merge_two(nullptr, temp_bytes, {nullptr, nullptr, total / 2},
                       {nullptr, nullptr, total - total / 2}, nullptr, nullptr),
             call + ": merge");
  device_memory temp(std::max<std::size_t>(temp_bytes, 1), stream, call + ": merge workspace");
  const auto group = static_cast<std::size_t>(fan_in);
  int to = 1;
  do {  // one round: each group of adjacent runs merged into buffer `to`, packed
    std::vector<run_view<K, V>> next;
    std::uint64_t out = 0;
    for (std::size_t i = 0; i < runs.size(); i += group) {
      const std::size_t count = std::min(group, runs.size() - i);
      K* out_keys = key_ptr(to) + out;
      V* out_values = pairs ? value_ptr(to) + out : nullptr;
      std::uint64_t length = 0;
      for (std::size_t j = i; j < i + count; ++j) length += runs[j].length;
      if (count == 1) {
        copy_async(out_keys, runs[i].keys, length, stream);
        if constexpr (pairs) copy_async(out_values, runs[i].values, length, stream);
      } else if (count == 2) {
        std::size_t bytes = temp_bytes;
        check_cuda(merge_two(temp.get(), bytes, runs[i], runs[i + 1], out_keys, out_values),
                   call + ": merge");
      } else {
        run_set<K, V> set;
        for (std::size_t j = i; j < i + count; ++j) {
          set.keys[set.count] = runs[j].keys;
          set.values[set.count] = runs[j].values;
          set.length[set.count++] = runs[j].length;
        }
        merge_runs_in_one_pass<K, V>(set, length, out_keys, out_values, code, stream, call);
      }
      next.push_back({out_keys, out_values, length});
      out += length;
    }
    runs = std::move(next);
    to = 1 - to;
  } while (runs.size() > 1);
  return 1 - to;
}

}  // namespace gpusort::dist::detail
