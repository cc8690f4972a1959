#include "sort_impl.cuh"

GPUSORT_INSTANTIATE_KEY(double)
