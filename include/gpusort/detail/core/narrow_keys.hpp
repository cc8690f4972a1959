// Keys narrower than 32 bits (bool, 8- and 16-bit integers, CUDA's __half and __nv_bfloat16),
// sorted through the 32-bit unsigned sorts: each key becomes the code of an invertible map to
// [0, 2^16) whose order is the key's (network order of integers; for the 16-bit floats the
// rotation of float_order.hpp, NaNs placed by options::nans), zero-extended to 32 bits. The
// sort runs on the codes (and the values beside them) and the codes map back to the keys'
// exact bits. So every algorithm and option of the u32 sort applies, at 4 bytes a key of
// workspace for the codes. One difference from f32 keys: NaNs of different bits are
// different codes, so they come out ordered by their bits inside the NaN block (a stable sort
// keeps equal bits in input order).
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "gpusort/detail/core/config.hpp"
#include "gpusort/detail/core/entry.hpp"
#include "gpusort/detail/core/float_order.hpp"
#include "gpusort/key_traits.hpp"
#include "gpusort/options.hpp"

namespace gpusort {

// The key types sorted as 32-bit codes ...
template <class K>
concept narrow_key =
    std::is_same_v<K, bool> || std::is_same_v<K, std::int8_t> || std::is_same_v<K, std::uint8_t> ||
    std::is_same_v<K, std::int16_t> || std::is_same_v<K, std::uint16_t> ||
    std::is_same_v<K, __half> || std::is_same_v<K, __nv_bfloat16>;
// ... and every key type gpusort::sort takes (sort.hpp).
template <class K>
concept sortable_key = supported_key<K> || narrow_key<K>;

// X(K) for every narrow key type: the explicit instantiations of src/sort_narrow.cu,
// src/segmented_narrow.cu and src/top_k_narrow.cu.
#define GPUSORT_FOR_EACH_NARROW_KEY(X) \
  X(bool) X(std::int8_t) X(std::uint8_t) X(std::int16_t) X(std::uint16_t) X(__half) X(__nv_bfloat16)

namespace detail {

// One table per fact: each narrow key's bits, its name and, for floats, its format.
template <class K>
struct narrow_format;
#define GPUSORT_NARROW_KEY(K, BITS, NAME, ORDER)  \
  template <>                                      \
  struct narrow_format<K> {                        \
    using bits_type = BITS;                        \
    using float_format = ORDER;                    \
    static constexpr std::string_view name = NAME; \
  };
GPUSORT_NARROW_KEY(bool, std::uint8_t, "bool", void)
GPUSORT_NARROW_KEY(std::int8_t, std::uint8_t, "i8", void)
GPUSORT_NARROW_KEY(std::uint8_t, std::uint8_t, "u8", void)
GPUSORT_NARROW_KEY(std::int16_t, std::uint16_t, "i16", void)
GPUSORT_NARROW_KEY(std::uint16_t, std::uint16_t, "u16", void)
GPUSORT_NARROW_KEY(__half, std::uint16_t, "f16", half_order)
GPUSORT_NARROW_KEY(__nv_bfloat16, std::uint16_t, "bf16", bfloat16_order)
#undef GPUSORT_NARROW_KEY

// The 16-bit floats (__half, __nv_bfloat16): the narrow keys with a float format.
template <class K>
inline constexpr bool float16_key = [] {
  if constexpr (narrow_key<K>)
    return !std::is_void_v<typename narrow_format<K>::float_format>;
  else
    return false;
}();

// The code of a key's bits: its rank in the key's order (NaNs lowest or highest for floats).
template <class K>
GPUSORT_HD constexpr std::uint32_t narrow_code(typename narrow_format<K>::bits_type bits,
                                               bool nans_lowest) {
  using B = typename narrow_format<K>::bits_type;
  using F = typename narrow_format<K>::float_format;
  if constexpr (!std::is_void_v<F>) {
    return F::to_code(bits, nans_lowest);
  } else if constexpr (std::is_signed_v<K>) {
    return static_cast<B>(bits ^ static_cast<B>(B{1} << (sizeof(B) * 8 - 1)));
  } else {
    return bits;
  }
}

// The bits whose code is `code` (narrow_code's inverse).
template <class K>
GPUSORT_HD constexpr typename narrow_format<K>::bits_type narrow_bits(std::uint32_t code,
                                                                      bool nans_lowest) {
  using B = typename narrow_format<K>::bits_type;
  using F = typename narrow_format<K>::float_format;
  if constexpr (!std::is_void_v<F>) {
    return F::from_code(static_cast<B>(code), nans_lowest);
  } else if constexpr (std::is_signed_v<K>) {
    return static_cast<B>(static_cast<B>(code) ^ static_cast<B>(B{1} << (sizeof(B) * 8 - 1)));
  } else {
    return static_cast<B>(code);
  }
}


// narrow_code / narrow_bits as a map of the keys' own bits (the shape of float_bits_order),
// for the in-place passes of device/float_order.cuh; `identity` where the bits are the codes.
template <class K>
struct narrow_order {
  using U = typename narrow_format<K>::bits_type;
  static constexpr bool identity =
      std::is_void_v<typename narrow_format<K>::float_format> && !std::is_signed_v<K>;
  GPUSORT_HD static constexpr U to_code(U bits, bool nans_lowest) {
    return static_cast<U>(narrow_code<K>(bits, nans_lowest));
  }
  GPUSORT_HD static constexpr U from_code(U code, bool nans_lowest) {
    return narrow_bits<K>(code, nans_lowest);
  }
};

// The narrow sorts (src/sort_narrow.cu): the core layer's contract, on the u32 sorts.
template <class K, class P>
cudaError_t sort_narrow(void* temp, std::size_t& temp_bytes, K* keys, P* values,
                        std::uint64_t n, const options& opt);
template <class K, class P>
void cpu_sort_narrow(K* keys, P* values, std::uint64_t n, const options& opt);
template <class K, class P>
algorithm narrow_automatic_algorithm(std::uint64_t n, const options& opt);

// The sort.hpp entry points' one way down, for every key type they take. Calls are qualified:
// argument-dependent lookup would also find the public entry points of the same names.
template <class K, class P>
cudaError_t sort_any_key(void* temp, std::size_t& temp_bytes, K* keys, P* values,
                         std::uint64_t n, const options& opt) {
  if constexpr (narrow_key<K>)
    return detail::sort_narrow<K, P>(temp, temp_bytes, keys, values, n, opt);
  else if constexpr (std::is_same_v<P, no_value>)
    return detail::sort_keys<K>(temp, temp_bytes, keys, n, opt);
  else
    return detail::sort_pairs<K, P>(temp, temp_bytes, keys, values, n, opt);
}
template <class K, class P>
void cpu_sort_any_key(K* keys, P* values, std::uint64_t n, const options& opt) {
  if constexpr (narrow_key<K>)
    detail::cpu_sort_narrow<K, P>(keys, values, n, opt);
  else if constexpr (std::is_same_v<P, no_value>)
    detail::cpu_sort_keys<K>(keys, n, opt);
  else
    detail::cpu_sort_pairs<K, P>(keys, values, n, opt);
}
template <class K, class P>
algorithm automatic_algorithm_any_key(std::uint64_t n, const options& opt) {
  if constexpr (narrow_key<K>)
    return detail::narrow_automatic_algorithm<K, P>(n, opt);
  else
    return detail::automatic_algorithm<K, P>(n, opt);
}
template <class K>
inline constexpr std::string_view key_name = [] {
  if constexpr (narrow_key<K>)
    return narrow_format<K>::name;
  else
    return key_traits<K>::name;
}();

}  // namespace detail
}  // namespace gpusort
