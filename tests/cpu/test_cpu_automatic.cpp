// algorithm::automatic on the CPU: its decision table (detail/core/automatic.hpp), and the float
// fix-up's index math after CUB's radix sort (index_math/radix_floats.hpp), checked by sorting
// in CUB's order of float bits, applying the rotation, and comparing with std::stable_sort in
// gpusort's total order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "gpusort/detail/core/automatic.hpp"
#include "gpusort/detail/index_math/radix_floats.hpp"
#include "gpusort/key_traits.hpp"
#include "gpusort/sort.hpp"
#include "float_keys.hpp"

namespace {

namespace net = gpusort::detail::index_math;
using gpusort::algorithm;

// The table: nothing to sort or no CUB build -> bitonic; CUB's merge sort up to the measured
// crossing, its radix sort beyond, for each key width, float or not, with values or not.
TEST(Automatic, FollowsTheMeasuredTable) {
  using gpusort::detail::automatic_choice;
  for (const std::size_t key_bytes : {4, 8})
    for (const bool floating : {false, true})
      for (const bool values : {false, true}) {
        SCOPED_TRACE(::testing::Message() << key_bytes << (floating ? " float" : " int")
                                          << (values ? " pairs" : " keys"));
        const int limit = gpusort::detail::merge_limit_bits(key_bytes, floating, values);
        EXPECT_GE(limit, 14);
        EXPECT_LE(limit, 20);
        const auto choice = [&](std::uint64_t n, bool built) {
          return automatic_choice({.n = n, .key_bytes = key_bytes, .floating = floating,
                                   .values = values, .cub_built = built});
        };
        for (const std::uint64_t n : {0ull, 1ull}) EXPECT_EQ(choice(n, true), algorithm::bitonic);
        EXPECT_EQ(choice(2, true), algorithm::cub_merge);
        EXPECT_EQ(choice(std::uint64_t{1} << limit, true), algorithm::cub_merge);
        EXPECT_EQ(choice((std::uint64_t{1} << limit) + 1, true), algorithm::cub_radix);
        EXPECT_EQ(choice(std::uint64_t{1} << 34, true), algorithm::cub_radix);
        EXPECT_EQ(choice(std::uint64_t{1} << 24, false), algorithm::bitonic);
      }
  // The crossings measured on the H100: u32 2^18, u64 2^20, f32 2^16, u32 pairs 2^16.
  EXPECT_EQ(gpusort::detail::merge_limit_bits(4, false, false), 18);
  EXPECT_EQ(gpusort::detail::merge_limit_bits(8, false, false), 20);
  EXPECT_EQ(gpusort::detail::merge_limit_bits(4, true, false), 16);
  EXPECT_EQ(gpusort::detail::merge_limit_bits(4, false, true), 16);
}

TEST(Automatic, WorkspaceFitsWithAnEighthToSpare) {
  EXPECT_TRUE(gpusort::detail::workspace_fits(800, 900));
  EXPECT_FALSE(gpusort::detail::workspace_fits(800, 899));
  EXPECT_TRUE(gpusort::detail::workspace_fits(0, 0));
}

// At the sort (a workspace given), automatic's pick runs when the bytes given hold its
// workspace, whatever the device's free memory; at the query it asks the device.
TEST(Automatic, TheWorkspaceGivenDecidesAtTheSort) {
  unsigned char given[1];
  EXPECT_TRUE(gpusort::detail::workspace_available(given, 1000, 1000));
  EXPECT_TRUE(gpusort::detail::workspace_available(given, 1001, 1000));
  EXPECT_FALSE(gpusort::detail::workspace_available(given, 999, 1000));
  EXPECT_TRUE(gpusort::detail::workspace_available(given, 1, 1));
  // The query: 2^62 bytes fit no device's free memory, and none without a device.
  EXPECT_FALSE(gpusort::detail::workspace_available(nullptr, 0, std::size_t{1} << 62));
}

// automatic_algorithm names the sort that runs: without a GPU the CPU backend's in-place
// bitonic sort; on one (where 2^20 floats and their workspace fit) CUB's radix sort. No skip:
// gpu-check counts a skipped test as a failure.
TEST(Automatic, NamesTheSortThatRuns) {
  const bool gpu = gpusort::detail::gpu_available();
  EXPECT_EQ(gpusort::automatic_algorithm<float>(1 << 20),
            gpu ? algorithm::cub_radix : algorithm::bitonic);
  EXPECT_EQ((gpusort::automatic_algorithm<std::uint64_t, std::uint32_t>(1 << 10)),
            gpu ? algorithm::cub_merge : algorithm::bitonic);
}

// The device's k-ary search, run here with every probe in turn: it finds the end of every
// prefix of every length, in about log_probes(n) + 1 rounds.
TEST(RadixFloats, KarySearchFindsEveryPrefixEnd) {
  for (const unsigned probes : {2u, 3u, 256u}) {
    for (std::uint64_t n : {0, 1, 2, 5, 255, 256, 257, 1000, 65537}) {
      for (std::uint64_t end = 0; end <= n; end += (n < 300 ? 1 : 97)) {
        net::search_range r{0, n};
        int rounds = 0;
        while (r.low < r.high) {
          const std::uint64_t step = net::kary_step(r, probes);
          unsigned inside = 0;
          for (unsigned t = 0; t < probes; ++t)
            inside += r.low + t * step < r.high && r.low + t * step < end;
          r = net::kary_narrow(r, step, inside);
          ASSERT_LE(r.low, end);
          ASSERT_GE(r.high, end);
          ASSERT_LT(++rounds, 70);
        }
        EXPECT_EQ(r.low, end) << "n " << n << " probes " << probes;
        if (probes == 256) EXPECT_LE(rounds, 4) << "n " << n;
      }
    }
  }
}

template <class K>
using bits = gpusort::testing::float_bits<K>;

// CUB's radix order of float bits: sign-flipped integers (negative NaNs first), -0.0 read as
// +0.0.
template <class K>
bits<K> cub_order(K k) {
  return gpusort::detail::float_bits_to_ordered(gpusort::testing::bits_of(k == 0 ? K{0} : k));
}

GPUSORT_TYPED_SUITE(RadixFloats, ::testing::Test, gpusort::testing::float_types);

TYPED_TEST(RadixFloats, NegativeNanBitsAreExactlyTheNegativeNans) {
  using K = TypeParam;
  for (const K k : gpusort::testing::special_float_input<K>(20000, 1)) {
    const bool expected = std::isnan(k) && std::signbit(k);
    EXPECT_EQ(net::is_negative_nan_bits(gpusort::testing::bits_of(k)), expected);
  }
}

// Sorted stably in CUB's order, zeros partitioned and NaNs rotated by the fix-up, the keys (with their input positions
// as values) equal std::stable_sort in gpusort's order, except that NaNs (which compare
// equal) may come in another order among themselves: their multiset of bits is the same.
TYPED_TEST(RadixFloats, FixUpGivesTheTotalOrder) {
  using K = TypeParam;
  for (const std::size_t n : {0, 1, 2, 3, 17, 1000, 4099}) {
    for (const bool descending : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "n " << n << (descending ? " descending" : ""));
      const std::vector<K> keys = gpusort::testing::special_float_input<K>(n, n + 7);
      std::vector<std::size_t> order(n);
      for (std::size_t i = 0; i < n; ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return descending ? cub_order(keys[b]) < cub_order(keys[a])
                          : cub_order(keys[a]) < cub_order(keys[b]);
      });
      const auto bits_at = [&](std::size_t i) { return gpusort::testing::bits_of(keys[order[i]]); };
      // The run of zeros, by scans where the device searches, partitioned by sign.
      std::size_t first = 0, last = 0;
      while (first < n && net::before_zero_run(bits_at(first), descending)) ++first;
      last = first;
      while (last < n && net::not_after_zero_run(bits_at(last), descending)) ++last;
      std::uint64_t leading_total = 0;
      for (std::size_t i = first; i < last; ++i)
        leading_total += net::leads_zero_run(bits_at(i), descending);
      std::vector<std::size_t> run(last - first, n);
      for (std::uint64_t i = first, leading_before = 0; i < last; ++i) {
        const bool leads = net::leads_zero_run(bits_at(i), descending);
        run[net::zero_run_target(i - first, leads, leading_before, leading_total)] = order[i];
        leading_before += leads;
      }
      ASSERT_EQ(std::count(run.begin(), run.end(), n), 0) << "not a permutation";
      std::ranges::copy(run, order.begin() + first);

      std::size_t first_other = 0;  // the binary search's answer, found by a scan here
      while (first_other < n && net::is_negative_nan_bits(bits_at(first_other)) != descending)
        ++first_other;
      const std::uint64_t m = net::negative_nan_count(first_other, n, descending);
      std::vector<std::size_t> fixed(n, n);
      for (std::size_t i = 0; i < n; ++i) fixed[net::negative_nan_target(i, n, m, descending)] = order[i];
      ASSERT_EQ(std::count(fixed.begin(), fixed.end(), n), 0) << "not a permutation";

      const std::vector<std::size_t> expected = gpusort::testing::stable_order(
          keys, descending, gpusort::testing::nans_largest(descending));
      std::vector<bits<K>> nan_bits, expected_nan_bits;
      for (std::size_t i = 0; i < n; ++i) {
        const K got = keys[fixed[i]], want = keys[expected[i]];
        ASSERT_EQ(std::isnan(got), std::isnan(want)) << "at " << i;
        if (std::isnan(got)) {
          nan_bits.push_back(gpusort::testing::bits_of(got));
          expected_nan_bits.push_back(gpusort::testing::bits_of(want));
        } else {
          ASSERT_EQ(fixed[i], expected[i]) << "at " << i;  // stable: the same record
        }
      }
      std::ranges::sort(nan_bits);
      std::ranges::sort(expected_nan_bits);
      EXPECT_EQ(nan_bits, expected_nan_bits);
    }
  }
}

}  // namespace
