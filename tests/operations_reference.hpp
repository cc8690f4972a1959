// References for unique and searchsorted (include/gpusort/operations.hpp), shared by the CPU
// and GPU tests: built from a map of the keys' order codes and from counting, not from the
// sorted runs and binary searches the library uses.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "gpusort/key_traits.hpp"
#include "gpusort/operations.hpp"

namespace gpusort::testing {

// The library's order as one integer a key (every NaN the same, the largest).
template <class K>
typename key_traits<K>::ordered_type order_code(K key) {
  return key_traits<K>::ordered(key);
}

template <class K>
struct unique_reference {
  std::vector<typename key_traits<K>::ordered_type> codes;  // of the distinct keys, ascending
  std::vector<std::uint64_t> counts;
};

template <class K>
unique_reference<K> reference_unique(const std::vector<K>& keys) {
  std::map<typename key_traits<K>::ordered_type, std::uint64_t> tally;
  for (const K& k : keys) ++tally[order_code(k)];
  unique_reference<K> r;
  for (const auto& [code, count] : tally) {
    r.codes.push_back(code);
    r.counts.push_back(count);
  }
  return r;
}

template <class K>
std::vector<typename key_traits<K>::ordered_type> codes_of(const std::vector<K>& keys) {
  std::vector<typename key_traits<K>::ordered_type> codes;
  for (const K& k : keys) codes.push_back(order_code(k));
  return codes;
}

// The place of q among sorted keys by counting: left, those before it; right, those not after.
template <class K>
std::int64_t reference_place(const std::vector<K>& sorted, K q, side where) {
  const less<K> before;
  std::int64_t count = 0;
  for (const K& k : sorted) count += where == side::left ? before(k, q) : !before(q, k);
  return count;
}

}  // namespace gpusort::testing
