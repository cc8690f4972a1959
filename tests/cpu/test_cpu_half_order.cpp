// The 16-bit float formats (IEEE binary16, bfloat16) as ordered codes of their bits
// (detail/core/float_order.hpp's half_order and bfloat16_order): every one of the 65536 patterns
// of each, in both NaN placements, against the value the format's rules give it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gpusort/detail/core/float_order.hpp"

namespace {

// A 16-bit float's value from its bits (sign, exponent, mantissa), by the format's rules.
double value_of(std::uint16_t bits, int mantissa_bits) {
  const int exponent_bits = 15 - mantissa_bits, bias = (1 << (exponent_bits - 1)) - 1;
  const int e = (bits >> mantissa_bits) & ((1 << exponent_bits) - 1);
  const int m = bits & ((1 << mantissa_bits) - 1);
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  if (e == (1 << exponent_bits) - 1)
    return m == 0 ? sign * std::numeric_limits<double>::infinity()
                  : std::numeric_limits<double>::quiet_NaN();
  const double fraction = (e == 0 ? 0.0 : 1.0) + m / double(1 << mantissa_bits);
  return sign * std::ldexp(fraction, (e == 0 ? 1 : e) - bias);
}

// The map is a bijection; it orders the numbers by value with -0.0 just below +0.0, puts
// every NaN in one block above +inf (or, NaNs lowest, below -inf), and tie_nans makes them
// one code.
template <class Order>
void check_every_pattern() {
  for (const bool nans_lowest : {false, true}) {
    SCOPED_TRACE(::testing::Message() << "mantissa bits " << Order::mantissa_bits
                                      << " nans lowest " << nans_lowest);
    std::vector<int> pattern_of_code(65536, -1);
    for (int b = 0; b < 65536; ++b) {
      const auto bits = static_cast<std::uint16_t>(b);
      const std::uint16_t code = Order::to_code(bits, nans_lowest);
      ASSERT_EQ(Order::from_code(code, nans_lowest), bits) << std::hex << b;
      ASSERT_EQ(pattern_of_code[code], -1) << "two patterns share code " << code;
      pattern_of_code[code] = b;
    }
    int nans = 0;
    double last = 0;
    bool last_negative_zero = false, seen_number = false;
    for (int code = 0; code < 65536; ++code) {
      const auto bits = static_cast<std::uint16_t>(pattern_of_code[code]);
      const double v = value_of(bits, Order::mantissa_bits);
      const std::uint16_t tied = Order::tie_nans(static_cast<std::uint16_t>(code), nans_lowest);
      if (std::isnan(v)) {
        ++nans;
        ASSERT_EQ(nans_lowest, !seen_number) << "a NaN among the numbers at code " << code;
        ASSERT_EQ(tied, nans_lowest ? 0 : Order::first_nan) << code;
        continue;
      }
      ASSERT_EQ(tied, code);
      const bool negative_zero = v == 0 && (bits & 0x8000);
      if (seen_number)
        ASSERT_TRUE(v > last || (v == 0 && last == 0 && last_negative_zero && !negative_zero))
            << "code " << code << " (value " << v << ") after " << last;
      seen_number = true;
      last = v;
      last_negative_zero = negative_zero;
    }
    EXPECT_EQ(nans, 2 * Order::negative_nans);
    EXPECT_EQ(Order::to_code(Order::infinity_bits), Order::infinity_code);
  }
}

TEST(HalfOrder, BinarySixteenEveryPattern) {
  EXPECT_EQ(gpusort::detail::half_order::infinity_bits, 0x7c00);
  check_every_pattern<gpusort::detail::half_order>();
}

TEST(HalfOrder, BFloat16EveryPattern) {
  EXPECT_EQ(gpusort::detail::bfloat16_order::infinity_bits, 0x7f80);
  check_every_pattern<gpusort::detail::bfloat16_order>();
}

// f32 and f64 keep their codes: the same map, now written once for every width.
TEST(HalfOrder, ThirtyTwoAndSixtyFourBitCodesAreUnchanged) {
  using f32 = gpusort::detail::float_order<float>;
  using f64 = gpusort::detail::float_order<double>;
  EXPECT_EQ(f32::infinity_bits, 0x7f800000u);
  EXPECT_EQ(f64::infinity_bits, 0x7ff0000000000000ull);
  EXPECT_EQ(f32::to_code(0xff800000u), 0u);  // -inf
  EXPECT_EQ(f32::to_code(0x80000000u) + 1, f32::to_code(0x00000000u));  // -0.0, +0.0
  EXPECT_EQ(f64::to_code(0xfff0000000000000ull), 0u);
}

}  // namespace
