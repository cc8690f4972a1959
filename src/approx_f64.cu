#include "approx_impl.cuh"

GPUSORT_INSTANTIATE_APPROX_FOR_KEY(double)
