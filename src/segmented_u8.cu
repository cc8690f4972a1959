// The unsigned segmented sort of 8-bit codes and the CUB segmented sorts it calls, for the
// narrow keys (src/segmented_narrow.cu).
#include "baselines.cuh"
#include "segmented_impl.cuh"

namespace gpusort::detail::device {
GPUSORT_SEGMENTED_BASELINES_FOR_KEY(std::uint8_t)
}

GPUSORT_INSTANTIATE_SEGMENTS_FOR_KEY(std::uint8_t)
