// The CUB segmented sorts that the segmented sort of 8-bit codes calls (segmented_u8.cu).
#include "baselines.cuh"

namespace gpusort::detail::device {
GPUSORT_SEGMENTED_BASELINES_FOR_KEY(std::uint8_t)
}
