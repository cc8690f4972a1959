// Shared by the tests: the key types under test, reference sorts and input sets.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "common/distributions.hpp"
#include "gpusort/key_traits.hpp"
#include "gpusort/detail/core/types.hpp"
#include "gpusort/options.hpp"

// The typed suite `suite` over `types`, its fixture `base` the same for every type (the tests
// take the type from TypeParam), so that a test file names only what its suite adds.
#define GPUSORT_TYPED_SUITE(suite, base, types) \
  template <class>                              \
  class suite : public base {};                 \
  TYPED_TEST_SUITE(suite, types)

namespace gpusort::testing {

using key_types = ::testing::Types<std::uint32_t, std::int32_t, float, std::uint64_t,
                                   std::int64_t, double>;
using float_types = ::testing::Types<float, double>;

// gpusort's order for a direction and a NaN placement: the total order of key_traits.hpp
// (or its reverse), with float NaNs after (or before) every number in both directions.
template <class K>
struct sort_order {
  bool descending = false;
  nan_order nans = nan_order::last;
  bool operator()(const K& a, const K& b) const {
    if constexpr (std::is_floating_point_v<K>) {
      const bool a_nan = a != a, b_nan = b != b;
      if (a_nan || b_nan) return a_nan != b_nan && (nans == nan_order::first ? a_nan : b_nan);
    }
    return descending ? gpusort::less<K>{}(b, a) : gpusort::less<K>{}(a, b);
  }
};

// The placement that makes NaNs the largest keys: the order of the parts that document it
// (the sorts' internals, top_k and select_k, the file sorts).
constexpr nan_order nans_largest(bool descending) {
  return descending ? nan_order::first : nan_order::last;
}

// std::stable_sort in gpusort's order.
template <class K>
std::vector<K> reference_sort(std::vector<K> keys, bool descending = false,
                              nan_order nans = nan_order::last) {
  std::stable_sort(keys.begin(), keys.end(), sort_order<K>{descending, nans});
  return keys;
}

// Bitwise equality, so that NaN payloads and -0.0 count.
template <class K>
::testing::AssertionResult same_bits(const std::vector<K>& got, const std::vector<K>& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  for (std::size_t i = 0; i < got.size(); ++i)
    if (gpusort::key_traits<K>::ordered(got[i]) != gpusort::key_traits<K>::ordered(want[i]))
      return ::testing::AssertionFailure()
             << "first difference at " << i << ": " << got[i] << " vs " << want[i];
  return ::testing::AssertionSuccess();
}

// Pairs tests: the value of input key i is value_of(i), whose first bytes hold i. Every value
// in the output (all n of a sort, the first k of a top k) must come out at most once, bytes
// intact, next to its own key.
template <class K, class V, class ValueOf>
::testing::AssertionResult values_follow_keys(const std::vector<K>& input,
                                              const std::vector<K>& keys,
                                              const std::vector<V>& values, ValueOf value_of) {
  const std::size_t n = input.size();
  if (keys.size() > n || values.size() != keys.size())
    return ::testing::AssertionFailure() << keys.size() << " keys, " << values.size()
                                         << " values out of " << n;
  std::vector<bool> seen(n, false);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::uint64_t origin = 0;
    std::memcpy(&origin, &values[i], std::min(sizeof(V), sizeof(origin)));
    if (origin >= n) return ::testing::AssertionFailure() << "value corrupted at " << i;
    if (seen[origin]) return ::testing::AssertionFailure() << "value " << origin << " twice";
    seen[origin] = true;
    const V expect = value_of(origin);
    if (std::memcmp(&expect, &values[i], sizeof(V)) != 0)
      return ::testing::AssertionFailure() << "value bytes at " << i;
    if (gpusort::key_traits<K>::ordered(input[origin]) != gpusort::key_traits<K>::ordered(keys[i]))
      return ::testing::AssertionFailure() << "value " << origin << " left its key";
  }
  return ::testing::AssertionSuccess();
}

// Inputs with -0.0, +0.0, infinities and NaNs of both signs scattered through (floats only).
template <class K>
void scatter_special_values(std::vector<K>& keys, std::uint64_t seed) {
  if constexpr (std::is_floating_point_v<K>) {
    const K specials[] = {K(-0.0), K(0.0), std::numeric_limits<K>::infinity(),
                          -std::numeric_limits<K>::infinity(),
                          std::numeric_limits<K>::quiet_NaN(),
                          -std::numeric_limits<K>::quiet_NaN(),
                          std::numeric_limits<K>::denorm_min(), std::numeric_limits<K>::lowest()};
    std::mt19937_64 rng(seed);
    for (std::size_t i = 0; i < keys.size() / 16 + 1 && !keys.empty(); ++i)
      keys[rng() % keys.size()] = specials[rng() % std::size(specials)];
  }
}

// The sizes the test plan asks for: 0, 1, 2, 3, 2^k-1, 2^k, 2^k+1, primes, large.
inline std::vector<std::size_t> awkward_sizes(std::size_t largest) {
  std::vector<std::size_t> sizes = {0, 1, 2, 3, 5, 7, 31, 97, 1009, 7919, 65521, 1000003};
  for (int k = 4; (std::size_t{1} << k) <= largest; k += 3) {
    sizes.push_back((std::size_t{1} << k) - 1);
    sizes.push_back(std::size_t{1} << k);
    sizes.push_back((std::size_t{1} << k) + 1);
  }
  std::erase_if(sizes, [&](std::size_t n) { return n > largest; });
  std::sort(sizes.begin(), sizes.end());
  return sizes;
}

// The values argument of a keys-only call to the CPU algorithms.
inline constexpr gpusort::detail::no_value* keys_only = nullptr;

// Value of input i as a B-byte payload: its first word holds i (what values_follow_keys
// reads), the rest a pattern, so that torn or mixed-up values show.
template <std::size_t B>
gpusort::detail::payload<B> payload_of_input(std::uint64_t i) {
  gpusort::detail::payload<B> v{};
  v.words[0] = static_cast<std::uint32_t>(i);
  if constexpr (B == 16) {
    v.words[2] = static_cast<std::uint32_t>(i * 2654435761u);
    v.words[3] = ~static_cast<std::uint32_t>(i);
  }
  return v;
}

// The hostile inputs every sort is checked on: each awkward size up to `largest`, each
// distribution, special values scattered in (floats), both orders. check(keys, descending)
// sees each once, named in any failure; the loop stops at the first fatal failure. seed_step
// varies the seeds between suites.
template <class K, class Check>
void for_each_hostile_input(std::size_t largest, std::uint64_t seed_step, const Check& check) {
  for (std::size_t n : awkward_sizes(largest))
    for (gpusort::tools::distribution d : gpusort::tools::all_distributions)
      for (bool descending : {false, true}) {
        const std::uint64_t seed = n * seed_step + static_cast<int>(d);
        SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << gpusort::tools::to_string(d)
                                          << " desc=" << descending << " seed=" << seed);
        std::vector<K> keys = gpusort::tools::generate<K>(d, n, seed);
        scatter_special_values(keys, seed);
        check(keys, descending);
        if (::testing::Test::HasFatalFailure()) return;
      }
}

// Inputs chosen against regular sampling, whose tiles of `tile` keys are sampled every
// `stride`: all keys `equal_key`, two values, runs of equal keys as long as a stride, and tiles
// whose sampled positions hold a small key and all others a large one.
inline std::vector<std::vector<std::uint32_t>> against_regular_sampling(std::size_t n,
                                                                        unsigned stride,
                                                                        unsigned tile,
                                                                        std::uint32_t equal_key) {
  std::vector<std::vector<std::uint32_t>> sets;
  sets.emplace_back(n, equal_key);
  std::vector<std::uint32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = i % 2;
  sets.push_back(v);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint32_t>(i / stride);
  sets.push_back(v);
  for (std::size_t i = 0; i < n; ++i) v[i] = (i % tile) % stride == stride - 1 ? 1 : 1000;
  sets.push_back(v);
  return sets;
}

// The exact sorts a test loops over, as it loops over key types, and whether each promises
// stability. On the CPU backend the baselines are std::stable_sort; on the device cub_radix
// is left out for float keys (CUB's order of zeros and NaNs, which automatic's fix-up
// repairs), and thrust promises no stability.
struct sort_method {
  gpusort::options opt;
  bool stable;
};

inline std::vector<sort_method> sort_methods(bool cpu_backend, bool float_keys = true) {
  using gpusort::algorithm;
  std::vector<sort_method> out;
  for (algorithm a : gpusort::all_algorithms) {
    if (!cpu_backend && float_keys && a == algorithm::cub_radix) continue;
    // The library's table says which are stable (the tests hold each to it); the CPU backend
    // runs std::stable_sort for thrust.
    const bool stable = gpusort::traits_of(a).stable || (cpu_backend && a == algorithm::thrust);
    out.push_back({{.algo = a}, stable});
  }
  out.push_back({{.algo = algorithm::sample_sort, .sampler = gpusort::sampling::random}, false});
  return out;
}

// Runs check(method, descending) on inputs of n keys for each of `methods` in both orders, each
// named in any failure; stops at the first fatal failure.
template <class Check>
void for_each_method_both_orders(const std::vector<sort_method>& methods, std::size_t n,
                                 const Check& check) {
  for (sort_method m : methods)
    for (const bool descending : {false, true}) {
      m.opt.direction = descending ? gpusort::order::descending : gpusort::order::ascending;
      SCOPED_TRACE(::testing::Message() << gpusort::method_name(m.opt) << " n=" << n
                                        << (descending ? " descending" : " ascending"));
      check(m, descending);
      if (::testing::Test::HasFatalFailure()) return;
    }
}

// Arguments around the first powers of two and their ceil(log2): the network's depth of n
// keys and the approximate sort's tree depth for n intervals.
struct log2_case {
  std::uint32_t n;
  int ceil_log2;
};
inline constexpr log2_case small_ceil_log2_cases[] = {{1, 0}, {2, 1}, {3, 2}, {4, 2}, {5, 3}};

// The shape of a row-major matrix for top_k_rows, and every key's column (the values its
// tests carry, so that a result can be traced back to its key).
struct matrix_shape {
  std::size_t rows, row_length;
};
inline std::vector<std::uint32_t> column_indices(const matrix_shape& m) {
  std::vector<std::uint32_t> column(m.rows * m.row_length);
  for (std::size_t i = 0; i < column.size(); ++i)
    column[i] = static_cast<std::uint32_t>(i % m.row_length);
  return column;
}
// The shapes both backends are tested on: single keys, odd lengths, many short rows.
inline constexpr matrix_shape top_k_row_shapes[] = {{0, 5}, {1, 1}, {3, 33}, {100, 32}, {7, 1024}};

}  // namespace gpusort::testing
