// Indices 0..n-1 written on the device: argsort's values, the stable tie-break's positions and
// the record pipeline's (sort.hpp, fill_indices).
#include <algorithm>

#include "gpusort/sort.hpp"

namespace gpusort::detail {
namespace {

template <class I>
__global__ void write_indices(I* indices, std::uint64_t n) {
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    indices[i] = static_cast<I>(i);
}

template <class I>
cudaError_t fill(I* indices, std::uint64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  constexpr unsigned threads = 256;
  const unsigned blocks =
      static_cast<unsigned>(std::min<std::uint64_t>((n + threads - 1) / threads, 65536));
  write_indices<<<blocks, threads, 0, stream>>>(indices, n);
  return cudaGetLastError();
}

}  // namespace

cudaError_t fill_indices(std::uint32_t* indices, std::uint64_t n, cudaStream_t stream) {
  return fill(indices, n, stream);
}
cudaError_t fill_indices(std::uint64_t* indices, std::uint64_t n, cudaStream_t stream) {
  return fill(indices, n, stream);
}

}  // namespace gpusort::detail
