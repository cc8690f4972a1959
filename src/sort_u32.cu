#include "sort_impl.cuh"

GPUSORT_EXTERN_KEY(std::uint64_t)  // sorts the stable tie-break's composites

GPUSORT_INSTANTIATE_KEY(std::uint32_t)

