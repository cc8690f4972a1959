#include "dist_impl.cuh"

GPUSORT_DIST_INSTANTIATE_KEY(float)
