// The CPU backend of the bitonic sort and the key order, for every key type.
#include <gtest/gtest.h>

#include "gpusort/detail/cpu/bitonic.hpp"
#include "gpusort/sort.hpp"
#include "reference.hpp"

using namespace gpusort::testing;
namespace tools = gpusort::tools;

TEST(KeyTraits, FloatsFollowTheTotalOrder) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float in_order[] = {-inf, -1e30f, -1.0f, -1e-45f, -0.0f, 0.0f, 1e-45f, 1.0f, inf};
  gpusort::less<float> less;
  for (std::size_t i = 0; i + 1 < std::size(in_order); ++i) {
    EXPECT_TRUE(less(in_order[i], in_order[i + 1])) << i;
    EXPECT_FALSE(less(in_order[i + 1], in_order[i])) << i;
    EXPECT_TRUE(less(in_order[i], nan));
    EXPECT_TRUE(less(in_order[i], -nan));
  }
  EXPECT_FALSE(less(nan, -nan));
  EXPECT_FALSE(less(-nan, nan));
  EXPECT_TRUE(gpusort::less<double>{}(-0.0, 0.0));
  EXPECT_TRUE(gpusort::less<std::int32_t>{}(-5, 3));
  EXPECT_LT(gpusort::key_traits<std::int64_t>::ordered(-1), gpusort::key_traits<std::int64_t>::ordered(0));
}

GPUSORT_TYPED_SUITE(CpuBitonic, ::testing::Test, key_types);

TYPED_TEST(CpuBitonic, KeysMatchStableSortOnEveryDistribution) {
  using K = TypeParam;
  for_each_hostile_input<K>(1 << 17, 31, [](std::vector<K>& keys, bool descending) {
    const std::vector<K> expect = reference_sort(keys, descending);
    const gpusort::options opt{.algo = gpusort::algorithm::bitonic,
                               .direction = descending ? gpusort::order::descending
                                                       : gpusort::order::ascending};
    gpusort::detail::cpu_sort_keys(keys.data(), keys.size(), opt);
    ASSERT_TRUE(same_bits(keys, expect));
  });
}

TYPED_TEST(CpuBitonic, PairsKeepTheirValues) {
  using K = TypeParam;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{70001}}) {
    const std::uint64_t seed = 99 + n;
    SCOPED_TRACE(::testing::Message() << "n=" << n << " seed=" << seed);
    const std::vector<K> input = tools::generate<K>(tools::distribution::few_unique, n, seed);
    std::vector<K> keys = input;
    std::vector<std::uint32_t> index(n);
    std::iota(index.begin(), index.end(), 0u);
    gpusort::detail::cpu_sort_pairs(keys.data(),
                                    reinterpret_cast<gpusort::detail::payload<4>*>(index.data()),
                                    n, gpusort::options{.algo = gpusort::algorithm::bitonic});
    ASSERT_TRUE(same_bits(keys, reference_sort(input)));
    std::vector<bool> seen(n, false);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_LT(index[i], n);
      ASSERT_FALSE(seen[index[i]]) << "value " << index[i] << " twice";
      seen[index[i]] = true;
      ASSERT_EQ(gpusort::key_traits<K>::ordered(input[index[i]]),
                gpusort::key_traits<K>::ordered(keys[i]));
    }
  }
}

// 16-byte values through the public host overload (CPU backend when there is no GPU).
TEST(CpuBitonicApi, HostVectorOverloadSortsPairsWith16ByteValues) {
  struct record {
    std::uint32_t a, b, c, d;
  };
  const std::size_t n = 4099;
  std::vector<double> keys = tools::generate<double>(tools::distribution::gaussian, n, 5);
  std::vector<record> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = {std::uint32_t(i), 1, 2, std::uint32_t(~i)};
  const std::vector<double> input = keys;
  gpusort::sort(keys, values, {.algo = gpusort::algorithm::bitonic});
  ASSERT_TRUE(same_bits(keys, reference_sort(input)));
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(values[i].d, ~values[i].a);
    ASSERT_EQ(input[values[i].a], keys[i]);
  }
}

TEST(CpuBitonicApi, MismatchedValueCountThrowsAndKeepsData) {
  std::vector<std::uint32_t> keys = {3, 1, 2};
  std::vector<std::uint32_t> values = {1, 2};
  EXPECT_THROW(gpusort::sort(keys, values), gpusort::error);
  EXPECT_EQ(keys, (std::vector<std::uint32_t>{3, 1, 2}));
}

TEST(CpuBitonicApi, UserComparatorOnAStruct) {
  struct point {
    std::int32_t x, y;
  };
  std::vector<point> pts;
  std::mt19937 rng(3);
  for (int i = 0; i < 3001; ++i) pts.push_back({int(rng() % 50), int(rng() % 50)});
  auto by_x_then_y = [](const point& a, const point& b) {
    return a.x != b.x ? a.x < b.x : a.y < b.y;
  };
  std::vector<point> expect = pts;
  std::stable_sort(expect.begin(), expect.end(), by_x_then_y);
  gpusort::detail::cpu::bitonic_sort(pts.data(), static_cast<gpusort::detail::no_value*>(nullptr),
                                     pts.size(), by_x_then_y, false);
  for (std::size_t i = 0; i < pts.size(); ++i) {
    ASSERT_EQ(pts[i].x, expect[i].x);
    ASSERT_EQ(pts[i].y, expect[i].y);
  }
}
