#include "segmented_impl.cuh"

GPUSORT_EXTERN_SEGMENTS_FOR_KEY(std::uint32_t)  // sorts the keys with the sign bit flipped
GPUSORT_INSTANTIATE_SEGMENTS_FOR_KEY(std::int32_t)
