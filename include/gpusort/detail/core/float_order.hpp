// Float keys as unsigned integers: an invertible map from the bits of a float (f32, f64, and
// the 16-bit binary16 and bfloat16) to the unsigned integer of the same width whose natural
// order is the library's total order
//   -inf < ... < -0.0 < +0.0 < ... < +inf < every NaN (both signs).
// The comparison sorts run on these codes, so floats cost what unsigned keys cost; the
// inverse gives back every bit, NaN payloads and signs included.
//
// The map: the usual sign flip (negative: ~bits, positive: bits | sign) orders every non-NaN
// and puts the positive NaNs on top but the negative NaNs at the very bottom, in the
// 2^m - 1 lowest codes (m mantissa bits). Subtracting 2^m - 1 modulo 2^w rotates those to the
// top, above the positive NaNs; everything else keeps its order and moves down by the same
// amount, so -inf becomes 0. A rotation is a bijection, hence invertible.
//
// NaNs lowest (options::nans asks for it in one of the two orders, nans_lowest()): adding
// 2^m - 1 instead of subtracting it rotates every NaN code, positive and negative, to the
// bottom, below -inf; the numbers keep their order above them.
//
// NaNs compare equal in the library's order. Sorts that are not stable may leave them in any
// order, so a plain integer compare of the codes is enough for them (it orders NaNs by code,
// one of the allowed outcomes). Stable sorts must tie all NaN codes: nan_tying_less.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "gpusort/detail/core/config.hpp"

namespace gpusort::detail {

// The map for any binary floating-point format of unsigned width U with `MantissaBits`
// stored mantissa bits: f32 and f64 (float_order below), and the 16-bit formats whose keys
// are their bits (binary16: 10, bfloat16: 7). Integer promotion is undone at every step, so
// 16-bit codes wrap as 32- and 64-bit ones do.
template <class U_, int MantissaBits>
struct float_bits_order {
  static_assert(std::is_unsigned_v<U_> && MantissaBits > 0 && MantissaBits < int(sizeof(U_)) * 8 - 2);
  using U = U_;

  static constexpr int width = sizeof(U) * 8;
  static constexpr int mantissa_bits = MantissaBits;
  static constexpr U sign = static_cast<U>(U{1} << (width - 1));
  // Negative NaNs: sign set, exponent all ones, mantissa nonzero.
  static constexpr U negative_nans = static_cast<U>((U{1} << mantissa_bits) - 1);
  static constexpr U infinity_bits =  // +inf: 0x7f800000 for f32
      static_cast<U>(static_cast<U>(static_cast<U>(~U{0}) >> 1) & static_cast<U>(~negative_nans));

  GPUSORT_HD static constexpr U to_code(U bits, bool nans_lowest = false) {
    const U flipped = (bits & sign) ? static_cast<U>(~bits) : static_cast<U>(bits | sign);
    return nans_lowest ? static_cast<U>(flipped + negative_nans)
                       : static_cast<U>(flipped - negative_nans);
  }
  GPUSORT_HD static constexpr U from_code(U code, bool nans_lowest = false) {
    const U flipped = nans_lowest ? static_cast<U>(code - negative_nans)
                                  : static_cast<U>(code + negative_nans);
    return (flipped & sign) ? static_cast<U>(flipped & static_cast<U>(~sign))
                            : static_cast<U>(~flipped);
  }

  // Codes of +inf and of the lowest NaN: every code >= first_nan is a NaN (NaNs highest);
  // with NaNs lowest, every code below nan_codes is one.
  static constexpr U infinity_code = to_code(infinity_bits);
  static constexpr U first_nan = static_cast<U>(infinity_code + 1);
  static constexpr U nan_codes = static_cast<U>(2 * negative_nans);

  // All NaN codes made one, for comparisons that must see NaNs as equal.
  GPUSORT_HD static constexpr U tie_nans(U code, bool nans_lowest = false) {
    if (nans_lowest) return code < nan_codes ? U{0} : code;
    return code < first_nan ? code : first_nan;
  }
};

template <class F>
struct float_order
    : float_bits_order<std::conditional_t<sizeof(F) == 4, std::uint32_t, std::uint64_t>,
                       std::numeric_limits<F>::digits - 1> {  // 23, 52
  static_assert(std::is_same_v<F, float> || std::is_same_v<F, double>);
  using bits_type = std::conditional_t<sizeof(F) == 4, std::uint32_t, std::uint64_t>;
};

// The 16-bit formats, as their bits: IEEE binary16 (CUDA's __half) and bfloat16
// (__nv_bfloat16), in the same total order as f32.
using half_order = float_bits_order<std::uint16_t, 10>;
using bfloat16_order = float_bits_order<std::uint16_t, 7>;

// Strict weak order on codes with every NaN equal: for stable sorts of codes.
template <class F>
struct nan_tying_less {
  using U = typename float_order<F>::U;
  GPUSORT_HD GPUSORT_FORCEINLINE constexpr bool operator()(U a, U b) const {
    return float_order<F>::tie_nans(a) < float_order<F>::tie_nans(b);
  }
};

// What the keys of a sort of unsigned integers hold in memory: the keys themselves, or the
// bits of floats (16-bit keys: binary16 or bfloat16) or of signed integers of the same width,
// which the sort maps to codes as it loads them and back as it stores them (key_codec).
enum class key_bits : std::uint8_t { unsigned_keys, float_keys, signed_keys, bfloat16_keys };

// How a sort of unsigned keys reads and writes them: as they are, or as codes of the key
// type their bits hold (key_bits): float_order's map for floats (16-bit keys: half_order, or
// bfloat16_order for bfloat16_keys), the sign bit flipped for signed integers (two's
// complement in unsigned order). A one-pass sort (the segmented sort's short classes) then
// sorts those types with no pass of its own before or after, and one instantiation serves
// the key types of a width. 8-bit keys: signed or as they are; other key types: as they are.
template <class K>
struct key_codec {
  bool float_codes = false;
  bool nans_lowest = false;  // the codes' NaN placement (float_order::to_code)
  bool bfloat16 = false;     // 16-bit float codes: bfloat16_order's, else half_order's
  std::uint64_t flip = 0;    // signed keys: the sign bit, flipped on the way in and out
  static constexpr bool can_map =
      std::is_same_v<K, std::uint8_t> || std::is_same_v<K, std::uint16_t> ||
      std::is_same_v<K, std::uint32_t> || std::is_same_v<K, std::uint64_t>;
  static constexpr bool has_floats = can_map && sizeof(K) >= 2;
  using order = float_order<std::conditional_t<sizeof(K) == 8, double, float>>;
  static constexpr K sign = static_cast<K>(K{1} << (sizeof(K) * 8 - 1));

  static constexpr key_codec of(key_bits bits, bool nans_lowest = false) {
    if constexpr (can_map) {
      if (bits == key_bits::signed_keys) return {false, false, false, sign};
      if constexpr (has_floats) {
        if (bits == key_bits::float_keys) return {true, nans_lowest, false, 0};
        if (sizeof(K) == 2 && bits == key_bits::bfloat16_keys) return {true, nans_lowest, true, 0};
      }
    }
    return {};
  }
  // Whether stored keys and codes differ (a sort over several passes maps them once).
  GPUSORT_HD constexpr bool maps() const { return float_codes || flip != 0; }

  GPUSORT_HD GPUSORT_FORCEINLINE constexpr K in(K stored) const {
    if constexpr (sizeof(K) == 2 && can_map) {
      if (float_codes)
        return bfloat16 ? bfloat16_order::to_code(stored, nans_lowest)
                        : half_order::to_code(stored, nans_lowest);
    } else if constexpr (has_floats) {
      if (float_codes) return order::to_code(stored, nans_lowest);
    }
    if constexpr (can_map) return stored ^ static_cast<K>(flip);
    return stored;
  }
  GPUSORT_HD GPUSORT_FORCEINLINE constexpr K out(K code) const {
    if constexpr (sizeof(K) == 2 && can_map) {
      if (float_codes)
        return bfloat16 ? bfloat16_order::from_code(code, nans_lowest)
                        : half_order::from_code(code, nans_lowest);
    } else if constexpr (has_floats) {
      if (float_codes) return order::from_code(code, nans_lowest);
    }
    if constexpr (can_map) return code ^ static_cast<K>(flip);
    return code;
  }
};

// Maps keys[0, n) in place between float bits and codes (host side; the device has a kernel
// in device/float_order.cuh).
template <class F>
void float_keys_to_codes(F* keys, std::uint64_t n, bool nans_lowest = false) {
  using U = typename float_order<F>::U;
  U* bits = reinterpret_cast<U*>(keys);
  for (std::uint64_t i = 0; i < n; ++i) bits[i] = float_order<F>::to_code(bits[i], nans_lowest);
}
template <class F>
void codes_to_float_keys(F* keys, std::uint64_t n, bool nans_lowest = false) {
  using U = typename float_order<F>::U;
  U* bits = reinterpret_cast<U*>(keys);
  for (std::uint64_t i = 0; i < n; ++i) bits[i] = float_order<F>::from_code(bits[i], nans_lowest);
}

}  // namespace gpusort::detail
