#include "baselines.cuh"

namespace gpusort::detail::device {
GPUSORT_BASELINES_FOR_KEY(std::int32_t)
}
