#include "segmented_impl.cuh"

GPUSORT_INSTANTIATE_SEGMENTS_FOR_KEY(std::int32_t)
