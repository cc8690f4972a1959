// The unsigned segmented sort of 16-bit codes for the narrow keys (src/segmented_narrow.cu):
// keys alone and with 4-byte values. 8- and 16-byte values are in segmented_u16_wide.cu and
// the CUB segmented sorts it calls in baselines_segmented_u16.cu: three units that compile
// side by side (one took about 290 s for one architecture).
#include "segmented_impl.cuh"

GPUSORT_INSTANTIATE_SEGMENTS(std::uint16_t, gpusort::detail::no_value)
GPUSORT_INSTANTIATE_SEGMENTS(std::uint16_t, gpusort::detail::payload<4>)
