// top_k of rows of 16-bit float keys (f16, bf16) with their columns: the per-row select only
// (Python's float16 and bfloat16 tensors; other shapes go through f32 there).
#include "approx_impl.cuh"
#include "gpusort/detail/core/half_keys.hpp"

GPUSORT_INSTANTIATE_TOP_K_ROWS_POSITIONS(gpusort::detail::half_bits)
GPUSORT_INSTANTIATE_TOP_K_ROWS_POSITIONS(gpusort::detail::bfloat16_bits)
