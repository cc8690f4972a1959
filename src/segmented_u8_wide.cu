// The unsigned segmented sort of 8-bit codes with 8- and 16-byte values (segmented_u8.cu
// has the rest).
#include "segmented_impl.cuh"

GPUSORT_INSTANTIATE_SEGMENTS(std::uint8_t, gpusort::detail::payload<8>)
GPUSORT_INSTANTIATE_SEGMENTS(std::uint8_t, gpusort::detail::payload<16>)
