// The sequential adaptive bitonic sort (cpu/adaptive_bitonic.hpp): order and stability
// against std::stable_sort, values, the exact comparison count, threads, and bounds.
#include <gtest/gtest.h>

#include <bit>

#include "gpusort/detail/cpu/adaptive_bitonic.hpp"
#include "reference.hpp"

using namespace gpusort::testing;
namespace tools = gpusort::tools;
namespace cpu = gpusort::detail::cpu;
using gpusort::detail::payload;

namespace {

// The input positions in stable order: where every value must end up.
template <class K>
std::vector<std::uint64_t> stable_positions(const std::vector<K>& keys, bool descending) {
  std::vector<std::uint64_t> order(keys.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::uint64_t a, std::uint64_t b) {
    return descending ? gpusort::less<K>{}(keys[b], keys[a]) : gpusort::less<K>{}(keys[a], keys[b]);
  });
  return order;
}

// sum over j = 1..L of (N / 2^j) merges of 2^j items, each 2^(j+1) - j - 2 comparisons.
std::uint64_t expected_comparisons(std::uint64_t N) {
  std::uint64_t total = 0;
  for (int j = 1; (std::uint64_t{1} << j) <= N; ++j)
    total += (N >> j) * ((std::uint64_t{2} << j) - j - 2);
  return total;
}

template <class K, std::size_t B>
void check_pairs(std::size_t n, tools::distribution d, bool descending) {
  const std::uint64_t seed = n * 7 + B + descending;
  SCOPED_TRACE(::testing::Message() << "value bytes=" << B << " n=" << n << " dist="
                                    << tools::to_string(d) << " desc=" << descending);
  const std::vector<K> input = tools::generate<K>(d, n, seed);
  std::vector<K> keys = input;
  std::vector<payload<B>> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = payload_of_input<B>(i);
  cpu::adaptive_bitonic_sort(keys.data(), values.data(), n, gpusort::less<K>{}, descending);
  ASSERT_TRUE(same_bits(keys, reference_sort(input, descending, nans_largest(descending))));
  ASSERT_TRUE(values_follow_keys(input, keys, values, payload_of_input<B>));
  const std::vector<std::uint64_t> order = stable_positions(input, descending);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(values[i].words[0], order[i]) << "at " << i;
}

}  // namespace

GPUSORT_TYPED_SUITE(CpuAdaptiveBitonic, ::testing::Test, key_types);

TYPED_TEST(CpuAdaptiveBitonic, KeysMatchStableSortOnEveryDistribution) {
  using K = TypeParam;
  for_each_hostile_input<K>(1 << 16, 31, [](std::vector<K>& keys, bool descending) {
    const std::vector<K> expect = reference_sort(keys, descending, nans_largest(descending));
    cpu::adaptive_bitonic_sort(keys.data(), keys_only, keys.size(), gpusort::less<K>{},
                               descending);
    ASSERT_TRUE(same_bits(keys, expect));
  });
}

// Many ties (few_unique, all_equal) and distinct keys (uniform); 70001 runs multithreaded.
TYPED_TEST(CpuAdaptiveBitonic, PairsAreStableWithEveryValueWidth) {
  using K = TypeParam;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{1000},
                        std::size_t{4097}, std::size_t{70001}}) {
    for (tools::distribution d : {tools::distribution::few_unique, tools::distribution::all_equal,
                                  tools::distribution::uniform}) {
      for (bool descending : {false, true}) {
        check_pairs<K, 4>(n, d, descending);
        check_pairs<K, 8>(n, d, descending);
        check_pairs<K, 16>(n, d, descending);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// The count depends on N only: the merge of 2^j items makes 2^(j+1) - j - 2 comparisons
// whatever the data. In closed form 2 N L - 4 N + L + 4 for N = 2^L, against the bitonic
// network's N L (L + 1) / 4: equal for N = 2, 4, fewer from N = 8; below N L^2 / 4 (the
// usual rounding of the network's count) only from N = 64.
TEST(CpuAdaptiveBitonicCount, MatchesTheFormulaForThePaddedSize) {
  for (std::uint64_t n : {2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000, 1024,
                          4097, 65536, 70001}) {
    const std::uint64_t N = std::bit_ceil(n), L = std::countr_zero(N);
    for (tools::distribution d : {tools::distribution::uniform, tools::distribution::all_equal,
                                  tools::distribution::reverse}) {
      for (bool descending : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << tools::to_string(d)
                                          << " desc=" << descending);
        std::vector<std::int32_t> keys = tools::generate<std::int32_t>(d, n, n);
        std::uint64_t count = 0;
        cpu::adaptive_bitonic_sort(keys.data(), keys_only, n, gpusort::less<std::int32_t>{},
                                   descending, &count);
        ASSERT_EQ(count, expected_comparisons(N));
        ASSERT_EQ(count, 2 * N * L - 4 * N + L + 4);
        ASSERT_LE(count, 2 * N * L);
        ASSERT_LE(count, N * L * (L + 1) / 4);
        ASSERT_EQ(count < N * L * (L + 1) / 4, L >= 3);
        ASSERT_EQ(count < N * L * L / 4, L >= 6);
      }
    }
  }
}

TEST(CpuAdaptiveBitonicCount, AddsToTheCounterAndCountsNothingBelowTwo) {
  std::vector<float> keys = {3, 1, 2};
  std::uint64_t count = 1000;
  cpu::adaptive_bitonic_sort(keys.data(), keys_only, 0, gpusort::less<float>{}, false, &count);
  cpu::adaptive_bitonic_sort(keys.data(), keys_only, 1, gpusort::less<float>{}, false, &count);
  EXPECT_EQ(count, 1000u);
  EXPECT_EQ(keys, (std::vector<float>{3, 1, 2}));
  cpu::adaptive_bitonic_sort(keys.data(), keys_only, 3, gpusort::less<float>{}, false, &count);
  EXPECT_EQ(count, 1000u + expected_comparisons(4));
  EXPECT_EQ(keys, (std::vector<float>{1, 2, 3}));
}

TEST(CpuAdaptiveBitonicThreads, OneAndFourThreadsGiveTheSameResult) {
  for (std::size_t n : {std::size_t{1} << 16, std::size_t{70001}, std::size_t{1} << 17}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    const std::vector<double> input = tools::generate<double>(tools::distribution::few_unique, n, n);
    std::vector<double> keys[2] = {input, input};
    std::vector<payload<8>> values[2];
    std::uint64_t count[2] = {0, 0};
    for (int r = 0; r < 2; ++r) {  // descending, then ascending from there
      for (std::size_t i = 0; i < n; ++i) values[r].push_back(payload_of_input<8>(i));
      for (bool descending : {true, false})
        cpu::adaptive_bitonic_sort(keys[r].data(), values[r].data(), n, gpusort::less<double>{},
                                   descending, &count[r], r == 0 ? 1u : 4u);
    }
    ASSERT_TRUE(same_bits(keys[0], keys[1]));
    ASSERT_EQ(0, std::memcmp(values[0].data(), values[1].data(), n * sizeof(payload<8>)));
    ASSERT_EQ(count[0], count[1]);
    ASSERT_TRUE(same_bits(keys[0], reference_sort(input)));
  }
}

TEST(CpuAdaptiveBitonicBounds, NothingBeyondNIsTouched) {
  constexpr std::size_t guards = 17;
  constexpr std::uint64_t poison = 0xDEADBEEFCAFEF00Dull;
  const payload<16> guard = payload_of_input<16>(poison);
  for (std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{17},
                        std::size_t{1000}, std::size_t{70001}}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    std::vector<std::uint64_t> keys = tools::generate<std::uint64_t>(tools::distribution::uniform, n, n);
    const std::vector<std::uint64_t> input = keys;
    std::vector<payload<16>> values(n);
    for (std::size_t i = 0; i < n; ++i) values[i] = payload_of_input<16>(i);
    keys.resize(n + guards, poison);
    values.resize(n + guards, guard);
    cpu::adaptive_bitonic_sort(keys.data(), values.data(), n, gpusort::less<std::uint64_t>{}, true);
    for (std::size_t i = n; i < n + guards; ++i) {
      ASSERT_EQ(keys[i], poison) << i;
      ASSERT_EQ(0, std::memcmp(&values[i], &guard, sizeof(guard))) << i;
    }
    keys.resize(n);
    values.resize(n);
    ASSERT_TRUE(same_bits(keys, reference_sort(input, true, nans_largest(true))));
    ASSERT_TRUE(values_follow_keys(input, keys, values, payload_of_input<16>));
  }
}

// Any key type with a strict weak order works (padding never compares keys), and ties under
// the comparator keep their input order.
TEST(CpuAdaptiveBitonicApi, UserComparatorOnAStructIsStable) {
  struct point {
    std::int32_t x, y;
  };
  std::vector<point> pts;
  std::mt19937 rng(3);
  for (int i = 0; i < 3001; ++i) pts.push_back({int(rng() % 50), i});
  auto by_x = [](const point& a, const point& b) { return a.x < b.x; };
  for (bool descending : {false, true}) {
    std::vector<point> got = pts, expect = pts;
    std::stable_sort(expect.begin(), expect.end(), [&](const point& a, const point& b) {
      return descending ? by_x(b, a) : by_x(a, b);
    });
    cpu::adaptive_bitonic_sort(got.data(), keys_only, got.size(), by_x, descending);
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].x, expect[i].x) << i;
      ASSERT_EQ(got[i].y, expect[i].y) << i;
    }
  }
}
