// Positions 0..n-1 written on the device: the values that the record pipeline sorts with each
// record's key, so that they need not cross the bus (record_pipeline.hpp).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace gpusort::detail::external {

// positions[i] = i for i < n, enqueued on `stream`.
cudaError_t fill_positions(std::uint32_t* positions, std::uint64_t n, cudaStream_t stream);

}  // namespace gpusort::detail::external
