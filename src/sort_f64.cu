#include "sort_impl.cuh"

GPUSORT_EXTERN_KEY(std::uint64_t)  // sorts the codes of double keys
GPUSORT_INSTANTIATE_KEY(double)
