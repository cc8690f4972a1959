#include "dist_impl.cuh"

GPUSORT_DIST_INSTANTIATE_KEY(std::int32_t)
