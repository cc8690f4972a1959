#include "sort_impl.cuh"

GPUSORT_INSTANTIATE_KEY(std::int32_t)
