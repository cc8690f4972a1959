#include "segmented_impl.cuh"

GPUSORT_EXTERN_SEGMENTS_FOR_KEY(std::uint64_t)  // sorts the codes of double keys
GPUSORT_INSTANTIATE_SEGMENTS_FOR_KEY(double)
