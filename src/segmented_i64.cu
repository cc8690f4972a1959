#include "segmented_impl.cuh"

GPUSORT_EXTERN_SEGMENTS_FOR_KEY(std::uint64_t)  // sorts the keys with the sign bit flipped
GPUSORT_INSTANTIATE_SEGMENTS_FOR_KEY(std::int64_t)
