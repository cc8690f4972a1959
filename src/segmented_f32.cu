#include "segmented_impl.cuh"

GPUSORT_EXTERN_SEGMENTS_FOR_KEY(std::uint32_t)  // sorts the codes of float keys
GPUSORT_INSTANTIATE_SEGMENTS_FOR_KEY(float)
