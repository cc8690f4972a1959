// Dispatch over the library's key types, shared by the package's modules (_gpusort and
// _gpusort_dist): each function calls f with a value of the C++ key type an element names.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <pybind11/pybind11.h>

#include "arrays.hpp"

namespace gpusort_python {

template <class F>
decltype(auto) with_key_type(element e, const char* what, F&& f) {
  switch (e) {
    case element::i32: return f(std::int32_t{});
    case element::u32: return f(std::uint32_t{});
    case element::i64: return f(std::int64_t{});
    case element::u64: return f(std::uint64_t{});
    case element::f32: return f(float{});
    case element::f64: return f(double{});
    default: break;
  }
  throw py::type_error(std::string(what) +
                       ": keys must be int32, uint32, int64, uint64, float32 or float64");
}

// The sorts' and top-k's key types: with_key_type's and the narrow keys (the library sorts
// those at their own width: include/gpusort/detail/core/narrow_keys.hpp). Bools (one byte, 0
// or 1, in NumPy and torch) go as uint8, the order the library gives bool: no std::vector<bool>.
template <class F>
decltype(auto) with_sort_key_type(element e, const char* what, F&& f) {
  switch (e) {
    case element::b8: return f(std::uint8_t{});
    case element::i8: return f(std::int8_t{});
    case element::u8: return f(std::uint8_t{});
    case element::i16: return f(std::int16_t{});
    case element::u16: return f(std::uint16_t{});
    case element::f16: return f(__half{});
    case element::bf16: return f(__nv_bfloat16{});
    case element::other:
      throw py::type_error(std::string(what) +
                           ": keys must be bool, int8, uint8, int16, uint16, int32, uint32, "
                           "int64, uint64, float16, bfloat16, float32 or float64");
    default: return with_key_type(e, what, std::forward<F>(f));
  }
}

}  // namespace gpusort_python
