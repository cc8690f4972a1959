#include "sort_impl.cuh"

GPUSORT_INSTANTIATE_KEY(std::uint64_t)
