// The XLA FFI handlers of python/src/jax_ffi.cpp (built where JAX's FFI headers are found:
// GPUSORT_JAX_FFI): each target's name and the address jax.ffi.register_ffi_target takes in a
// capsule.
#pragma once

#include <utility>
#include <vector>

namespace gpusort::python {
std::vector<std::pair<const char*, void*>> jax_handlers();
}  // namespace gpusort::python
