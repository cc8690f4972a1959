#include "baselines.cuh"

namespace gpusort::detail::device {
GPUSORT_BASELINES_FOR_KEY(std::uint64_t)
}
