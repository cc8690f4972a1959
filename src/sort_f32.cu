#include "sort_impl.cuh"

GPUSORT_EXTERN_KEY(std::uint64_t)  // sorts the stable tie-break's composites

GPUSORT_EXTERN_KEY(std::uint32_t)  // sorts the codes of float keys
GPUSORT_INSTANTIATE_KEY(float)
