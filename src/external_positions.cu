#include "gpusort/detail/external/positions.hpp"

#include <algorithm>

namespace gpusort::detail::external {
namespace {

__global__ void write_positions(std::uint32_t* positions, std::uint64_t n) {
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    positions[i] = static_cast<std::uint32_t>(i);
}

}  // namespace

cudaError_t fill_positions(std::uint32_t* positions, std::uint64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  constexpr unsigned threads = 256;
  const unsigned blocks =
      static_cast<unsigned>(std::min<std::uint64_t>((n + threads - 1) / threads, 65536));
  write_positions<<<blocks, threads, 0, stream>>>(positions, n);
  return cudaGetLastError();
}

}  // namespace gpusort::detail::external
