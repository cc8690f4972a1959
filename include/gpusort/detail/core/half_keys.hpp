// 16-bit float keys as their bits (CUDA's __half and __nv_bfloat16 have the same layout), for
// the paths that take them today: top-k of rows (Python's float16 and bfloat16 tensors). Their
// key_traits give the total order of f32 keys: -0.0 before +0.0, every NaN one code, largest.
#pragma once

#include <cstdint>
#include <string_view>

#include "gpusort/detail/core/float_order.hpp"
#include "gpusort/key_traits.hpp"

namespace gpusort {
namespace detail {
template <class Order>
struct float16_bits {
  std::uint16_t bits;
};
using half_bits = float16_bits<half_order>;          // IEEE binary16
using bfloat16_bits = float16_bits<bfloat16_order>;  // bfloat16
}  // namespace detail

template <class Order>
struct key_traits<detail::float16_bits<Order>> {
  using ordered_type = std::uint16_t;
  static constexpr std::string_view name =
      Order::mantissa_bits == 10 ? std::string_view{"f16"} : std::string_view{"bf16"};
  GPUSORT_HD static GPUSORT_FORCEINLINE std::uint16_t ordered(detail::float16_bits<Order> k) {
    const bool nan = (k.bits & 0x7fffu) > Order::infinity_bits;
    return nan ? std::uint16_t{0xffff} : detail::float_bits_to_ordered(k.bits);
  }
};

}  // namespace gpusort
