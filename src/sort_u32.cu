#include "sort_impl.cuh"

GPUSORT_INSTANTIATE_KEY(std::uint32_t)
