// Key types gpusort knows, and the total order it sorts them in.
//
// Integers sort by value. Floating-point keys sort in a total order, as numpy.sort does:
// -inf < ... < -0.0 < +0.0 < ... < +inf < NaN (every NaN, whatever its sign or payload,
// sorts last and NaNs compare equal to each other). NaN payloads and signs come out exactly
// as they went in: less<K> computes the order from the bits, and the comparison sorts run
// float keys as unsigned codes of an invertible map (detail/core/float_order.hpp).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "gpusort/detail/core/config.hpp"

namespace gpusort {

namespace detail {
template <class To, class From>
GPUSORT_HD GPUSORT_FORCEINLINE To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From));
#if defined(__CUDA_ARCH__)
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
#else
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
#endif
}

// Unsigned integer whose natural order is the total order of a float's bits.
template <class U>
GPUSORT_HD constexpr U float_bits_to_ordered(U bits) {
  constexpr U sign = U{1} << (sizeof(U) * 8 - 1);
  return (bits & sign) ? static_cast<U>(~bits) : static_cast<U>(bits | sign);
}
}  // namespace detail

// key_traits<K>::ordered(k) maps a key to an unsigned integer with the same order, for the
// built-in key types. supported_key<K> says whether K is one of them.
template <class K>
struct key_traits;

#define GPUSORT_INTEGER_KEY(K, U, NAME)                                              \
  template <>                                                                        \
  struct key_traits<K> {                                                             \
    using ordered_type = U;                                                          \
    static constexpr std::string_view name = NAME;                                   \
    GPUSORT_HD static GPUSORT_FORCEINLINE U ordered(K k) {                           \
      return static_cast<U>(k) ^ (std::is_signed_v<K> ? U{1} << (sizeof(U) * 8 - 1) : U{0}); \
    }                                                                                \
  };
GPUSORT_INTEGER_KEY(std::uint32_t, std::uint32_t, "u32")
GPUSORT_INTEGER_KEY(std::int32_t, std::uint32_t, "i32")
GPUSORT_INTEGER_KEY(std::uint64_t, std::uint64_t, "u64")
GPUSORT_INTEGER_KEY(std::int64_t, std::uint64_t, "i64")
#undef GPUSORT_INTEGER_KEY

#define GPUSORT_FLOAT_KEY(K, U, NAME, EXP_MASK, MANT_MASK)                        \
  template <>                                                                     \
  struct key_traits<K> {                                                          \
    using ordered_type = U;                                                       \
    static constexpr std::string_view name = NAME;                                \
    GPUSORT_HD static GPUSORT_FORCEINLINE U ordered(K k) {                        \
      const U bits = detail::bit_cast<U>(k);                                      \
      const bool nan = (bits & (EXP_MASK)) == (EXP_MASK) && (bits & (MANT_MASK)) != 0; \
      return nan ? ~U{0} : detail::float_bits_to_ordered(bits);                   \
    }                                                                             \
  };
GPUSORT_FLOAT_KEY(float, std::uint32_t, "f32", 0x7f800000u, 0x007fffffu)
GPUSORT_FLOAT_KEY(double, std::uint64_t, "f64", 0x7ff0000000000000ull, 0x000fffffffffffffull)
#undef GPUSORT_FLOAT_KEY

template <class K>
concept supported_key = requires { typename key_traits<K>::ordered_type; };

// The default comparator: a strict weak order, the total order above for built-in keys and
// operator< for any other type.
template <class K>
struct less {
  GPUSORT_HD GPUSORT_FORCEINLINE bool operator()(const K& a, const K& b) const {
    if constexpr (supported_key<K>) {
      if constexpr (std::is_integral_v<K>) {
        return a < b;
      } else {
        return key_traits<K>::ordered(a) < key_traits<K>::ordered(b);
      }
    } else {
      return a < b;
    }
  }
};

// Reverses a comparator: sorts descending.
template <class Compare>
struct reversed {
  Compare comp;
  template <class K>
  GPUSORT_HD GPUSORT_FORCEINLINE bool operator()(const K& a, const K& b) const {
    return comp(b, a);
  }
};

}  // namespace gpusort
