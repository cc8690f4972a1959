// Arrays as the module sees them: a pointer, an element type, a shape and where they live,
// read from a DLPack capsule (`__dlpack__()`) or a `__cuda_array_interface__` dict. Nothing
// is copied; the Python object that owns the memory stays referenced by the caller for the
// whole call, so the views below only borrow.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dlpack_abi.hpp"
#include <pybind11/pybind11.h>

namespace gpusort_python {

namespace py = pybind11;

// The library's key types: the 32- and 64-bit ones every entry point takes, then the narrow
// ones (bool, 8- and 16-bit integers, half and bfloat16) that the sorts and top-k take.
enum class element { i32, u32, i64, u64, f32, f64, b8, i8, u8, i16, u16, f16, bf16, other };

struct array_view {
  void* data = nullptr;
  element type = element::other;
  int item_bytes = 0;
  std::vector<std::int64_t> shape;
  bool contiguous = true;  // C order, with no gaps
  bool on_device = false;  // CUDA (or CUDA managed) memory
  int device = 0;          // CUDA device ordinal when on_device
  // The producer forbids writes: __cuda_array_interface__'s data[1] (JAX sets it) or
  // DLPack 1.0's read-only flag.
  bool read_only = false;
  // __cuda_array_interface__ v3: the stream the producer last wrote on, -1 if none given.
  std::int64_t producer_stream = -1;

  std::uint64_t size() const {
    std::uint64_t n = 1;
    for (auto d : shape) n *= static_cast<std::uint64_t>(d);
    return n;
  }
};

// Reads a DLPack capsule (still named "dltensor": the producer's destructor keeps ownership),
// a __cuda_array_interface__ dict, or the package's (pointer, typestr, count, device) tuple
// for a contiguous device array. `what` names the argument in error messages.
array_view view_of(const py::handle& obj, const char* what);

std::string element_name(element e);

}  // namespace gpusort_python
