// The CUB segmented sorts that the segmented sort of 16-bit codes calls (segmented_u16.cu).
#include "baselines.cuh"

namespace gpusort::detail::device {
GPUSORT_SEGMENTED_BASELINES_FOR_KEY(std::uint16_t)
}
