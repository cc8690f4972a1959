// The XLA FFI handlers of python/src/jax_ffi.cpp (built where JAX's FFI headers are found:
// GPUSORT_JAX_FFI), as the addresses jax.ffi.register_ffi_target takes in a capsule.
#pragma once

namespace gpusort::python {
void* jax_sort_handler();
}  // namespace gpusort::python
