// The map of float bits to ordered codes (detail/core/float_order.hpp): every class of bits, the
// round trip, agreement with gpusort::less; and the CPU backend of every algorithm on float
// keys full of special values.
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "float_keys.hpp"
#include "gpusort/detail/core/float_order.hpp"
#include "gpusort/segmented.hpp"
#include "gpusort/sort.hpp"

using namespace gpusort::testing;
using gpusort::detail::float_order;
using gpusort::detail::nan_tying_less;

GPUSORT_TYPED_SUITE(KeyOrder, ::testing::Test, float_types);

TYPED_TEST(KeyOrder, LandmarksHaveTheirCodes) {
  using F = TypeParam;
  using order = float_order<F>;
  using U = typename order::U;
  const auto code = [](F f) { return order::to_code(bits_of(f)); };
  constexpr F inf = std::numeric_limits<F>::infinity();
  EXPECT_EQ(code(-inf), U{0});
  EXPECT_EQ(code(inf), order::infinity_code);
  EXPECT_EQ(order::first_nan, order::infinity_code + 1);
  EXPECT_EQ(code(F(0)), code(F(-0.0)) + 1);  // -0.0 just below +0.0
  EXPECT_EQ(code(std::numeric_limits<F>::denorm_min()), code(F(0)) + 1);
  EXPECT_EQ(code(-std::numeric_limits<F>::denorm_min()) + 1, code(F(-0.0)));
  EXPECT_EQ(code(std::numeric_limits<F>::lowest()), U{1});
  EXPECT_EQ(code(std::numeric_limits<F>::max()) + 1, code(inf));
  // Largest denormal, then smallest normal.
  EXPECT_EQ(order::to_code(order::negative_nans) + 1, code(std::numeric_limits<F>::min()));
  // NaNs fill the top: 2 (2^m - 1) codes, the highest code included.
  EXPECT_EQ(static_cast<U>(~U{0} - order::first_nan + 1), 2 * order::negative_nans);
  EXPECT_GE(code(std::numeric_limits<F>::quiet_NaN()), order::first_nan);
  EXPECT_GE(code(-std::numeric_limits<F>::quiet_NaN()), order::first_nan);
  EXPECT_GE(code(std::numeric_limits<F>::signaling_NaN()), order::first_nan);
  EXPECT_GE(order::to_code(~U{0}), order::first_nan);                 // all ones, negative
  EXPECT_GE(order::to_code(~U{0} >> 1), order::first_nan);            // all ones, positive
}

// Each special class against every other: the codes order them as gpusort::less does, NaNs
// tie under nan_tying_less, and the plain code order never contradicts less (it only splits
// NaN ties), which is what the sorts that are not stable rely on.
TYPED_TEST(KeyOrder, SpecialClassesKeepTheTotalOrder) {
  using F = TypeParam;
  using order = float_order<F>;
  const auto bits = special_float_bits<F>();
  for (auto a : bits) {
    EXPECT_EQ(is_nan_bits<F>(a), order::to_code(a) >= order::first_nan) << std::hex << a;
    for (auto b : bits) {
      const bool lt = gpusort::less<F>{}(float_of_bits<F>(a), float_of_bits<F>(b));
      const auto ca = order::to_code(a), cb = order::to_code(b);
      EXPECT_EQ(nan_tying_less<F>{}(ca, cb), lt) << std::hex << a << " " << b;
      if (lt) EXPECT_LT(ca, cb) << std::hex << a << " " << b;
      if (a != b) EXPECT_NE(ca, cb);
    }
  }
}

TYPED_TEST(KeyOrder, RandomPairsAgreeWithLess) {
  using F = TypeParam;
  using order = float_order<F>;
  const std::uint64_t seed = 19;
  SCOPED_TRACE(seed);
  const std::vector<F> keys = special_float_input<F>(1 << 14, seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 2'000'000; ++i) {
    const F a = keys[rng() % keys.size()], b = keys[rng() % keys.size()];
    const auto ca = order::to_code(bits_of(a)), cb = order::to_code(bits_of(b));
    const bool lt = gpusort::less<F>{}(a, b);
    ASSERT_EQ(nan_tying_less<F>{}(ca, cb), lt) << std::hex << bits_of(a) << " " << bits_of(b);
    if (lt) ASSERT_LT(ca, cb);
  }
}

// The map is a bijection: bits -> code -> bits and code -> bits -> code, on random patterns
// and on every pattern near each boundary of the classes (both signs).
TYPED_TEST(KeyOrder, RoundTripIsExact) {
  using F = TypeParam;
  using order = float_order<F>;
  using U = typename order::U;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 4'000'000; ++i) {
    const U b = static_cast<U>(rng());
    ASSERT_EQ(order::from_code(order::to_code(b)), b) << std::hex << b;
    ASSERT_EQ(order::to_code(order::from_code(b)), b) << std::hex << b;
  }
  const U centres[] = {0, order::negative_nans, order::infinity_bits, order::infinity_code,
                       order::first_nan, order::sign, static_cast<U>(~U{0} >> 1)};
  for (U c : centres)
    for (U d = 0; d < 4096; ++d)
      for (U b : {static_cast<U>(c + d), static_cast<U>(c - d), static_cast<U>((c + d) ^ order::sign)}) {
        ASSERT_EQ(order::from_code(order::to_code(b)), b) << std::hex << b;
        ASSERT_EQ(order::to_code(order::from_code(b)), b) << std::hex << b;
      }
  // Consecutive patterns near the boundaries map to consecutive codes (within a sign, and
  // increasing in magnitude for positive keys).
  for (U d = 0; d + 1 < 4096; ++d) {
    EXPECT_EQ(order::to_code(d + 1), order::to_code(d) + 1);
    EXPECT_EQ(order::to_code(order::infinity_bits - d), order::to_code(order::infinity_bits - d - 1) + 1);
  }
}

TYPED_TEST(KeyOrder, HostPassesRestoreTheKeys) {
  using F = TypeParam;
  std::vector<F> keys = special_float_input<F>(100'003, 3);
  const std::vector<F> before = keys;
  gpusort::detail::float_keys_to_codes(keys.data(), keys.size());
  gpusort::detail::codes_to_float_keys(keys.data(), keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_EQ(bits_of(keys[i]), bits_of(before[i]));
}

// The codec the segmented sort loads and stores through: on the unsigned type of the key's
// width, the float map or the sign flip when asked for; every other key as it is.
TYPED_TEST(KeyOrder, KeyCodecMapsOnlyWhenAsked) {
  using F = TypeParam;
  using order = float_order<F>;
  using U = typename order::U;
  using S = std::make_signed_t<U>;
  using gpusort::detail::key_bits;
  using codec = gpusort::detail::key_codec<U>;
  const codec plain = codec::of(key_bits::unsigned_keys), floats = codec::of(key_bits::float_keys),
              low_nans = codec::of(key_bits::float_keys, true),
              signed_keys = codec::of(key_bits::signed_keys);
  EXPECT_FALSE(plain.maps());
  EXPECT_TRUE(floats.maps() && signed_keys.maps());
  for (F x : special_float_input<F>(10'000, 5)) {
    const U b = bits_of(x);
    EXPECT_EQ(plain.in(b), b);
    EXPECT_EQ(plain.out(b), b);
    EXPECT_EQ(floats.in(b), order::to_code(b));
    EXPECT_EQ(floats.out(floats.in(b)), b);
    EXPECT_EQ(low_nans.in(b), order::to_code(b, true));
    EXPECT_EQ(low_nans.out(low_nans.in(b)), b);
    EXPECT_EQ(signed_keys.out(signed_keys.in(b)), b);
  }
  // Signed keys: the codes' unsigned order is the keys' signed order.
  const S lowest = std::numeric_limits<S>::lowest(), highest = std::numeric_limits<S>::max();
  const S ascending[] = {lowest, lowest + 1, S{-5}, S{-1}, S{0}, S{1}, S{7}, highest - 1, highest};
  for (std::size_t i = 1; i < std::size(ascending); ++i)
    EXPECT_LT(signed_keys.in(static_cast<U>(ascending[i - 1])),
              signed_keys.in(static_cast<U>(ascending[i])))
        << ascending[i - 1] << " before " << ascending[i];
  EXPECT_EQ(signed_keys.in(static_cast<U>(lowest)), U{0});
  EXPECT_EQ(signed_keys.in(static_cast<U>(highest)), std::numeric_limits<U>::max())
      << "the padding key of the unsigned sort is the largest signed key";
  const gpusort::detail::key_codec<S> not_unsigned =
      gpusort::detail::key_codec<S>::of(key_bits::signed_keys);
  EXPECT_EQ(not_unsigned.in(S{-5}), S{-5}) << "only unsigned keys hold other keys' bits";
}

// ---- the CPU backend ----------------------------------------------------------------------

GPUSORT_TYPED_SUITE(CpuFloatKeys, ::testing::Test, float_types);

TYPED_TEST(CpuFloatKeys, EveryAlgorithmKeysAndPairs) {
  using F = TypeParam;
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{97},
                              std::size_t{4096}, std::size_t{70001}}) {
    const std::vector<F> input = special_float_input<F>(n, 1000 + n);
    for_each_method_both_orders(sort_methods(true), n, [&](const sort_method& m, bool desc) {
      std::vector<F> keys = input;
      gpusort::detail::cpu_sort_keys(keys.data(), n, m.opt);
      EXPECT_TRUE(sorted_like_reference(input, keys, desc, m.stable));
      keys = input;
      std::vector<std::uint64_t> values(n);
      std::iota(values.begin(), values.end(), std::uint64_t{0});
      gpusort::detail::cpu_sort_pairs(keys.data(),
                                      reinterpret_cast<gpusort::detail::payload<8>*>(values.data()),
                                      n, m.opt);
      EXPECT_TRUE(sorted_like_reference(input, keys, desc, m.stable, &values));
    });
  }
}

// The segmented CPU sort of floats: each segment like the reference, keys between segments
// untouched, bit for bit.
TYPED_TEST(CpuFloatKeys, Segments) {
  using F = TypeParam;
  const std::vector<F> input = special_float_input<F>(5000, 5);
  const std::vector<std::uint64_t> offsets = {0, 1, 3, 40, 40, 1000, 1100, 4000};  // 4000+: outside
  for (const auto dir : {gpusort::order::ascending, gpusort::order::descending}) {
    std::vector<F> keys = input;
    const gpusort::detail::segment_list segs{offsets.data(), offsets.data() + 1,
                                             offsets.size() - 1, 0, 8};
    gpusort::detail::cpu_sort_segments<F, gpusort::detail::no_value>(
        keys.data(), nullptr, keys.size(), segs, {.direction = dir});
    for (std::size_t s = 0; s + 1 < offsets.size(); ++s) {
      const std::vector<F> in(input.begin() + offsets[s], input.begin() + offsets[s + 1]);
      const std::vector<F> out(keys.begin() + offsets[s], keys.begin() + offsets[s + 1]);
      EXPECT_TRUE(sorted_like_reference(in, out, dir == gpusort::order::descending, false))
          << "segment " << s;
    }
    for (std::size_t i = offsets.back(); i < input.size(); ++i)
      ASSERT_EQ(bits_of(keys[i]), bits_of(input[i])) << i;
  }
}

// The codes path restores the keys when the sort throws (bad options).
TYPED_TEST(CpuFloatKeys, KeysRestoredOnError) {
  using F = TypeParam;
  const std::vector<F> input = special_float_input<F>(1000, 9);
  std::vector<F> keys = input;
  EXPECT_THROW(gpusort::detail::cpu_sort_keys(
                   keys.data(), keys.size(),
                   {.algo = gpusort::algorithm::sample_sort, .buckets = 3}),
               gpusort::error);
  for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_EQ(bits_of(keys[i]), bits_of(input[i]));
}
