// order_by_bucket (partition.hpp).
#include "partition.hpp"

#include <cub/device/device_radix_sort.cuh>

#include "gpusort/detail/core/entry.hpp"  // align_workspace
#include "gpusort/detail/index_math/dist.hpp"

namespace gpusort::dist::detail {
namespace {

template <class Index>
__global__ void positions_kernel(Index* out, std::uint64_t n) {
  const std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  if (i < n) out[i] = static_cast<Index>(i);
}

// bounds[j] = the first position of a bucket number j or above in the sorted numbers.
__global__ void bucket_starts_kernel(const std::uint16_t* sorted_ids, std::uint64_t n,
                                     int buckets, std::uint64_t* bounds) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j > buckets) return;
  std::uint64_t lo = 0, hi = n;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (sorted_ids[mid] < j) lo = mid + 1; else hi = mid;
  }
  bounds[j] = lo;
}

}  // namespace

cudaError_t bucket_starts(const std::uint16_t* sorted_ids, std::uint64_t n, int buckets,
                          std::uint64_t* bounds, cudaStream_t stream) {
  bucket_starts_kernel<<<(buckets + 256) / 256, 256, 0, stream>>>(sorted_ids, n, buckets, bounds);
  return cudaGetLastError();
}

template <class Index>
cudaError_t order_by_bucket(void* temp, std::size_t& temp_bytes, std::uint16_t* ids,
                            std::uint64_t n, int buckets, const Index** order,
                            std::uint64_t* bounds, cudaStream_t stream) {
  using gpusort::detail::align_workspace;
  // The workspace: [the numbers' second buffer | positions | their second buffer | CUB's].
  const std::size_t order_at = align_workspace(sizeof(std::uint16_t) * n);
  const std::size_t second_order_at = order_at + align_workspace(sizeof(Index) * n);
  const std::size_t cub_at = second_order_at + align_workspace(sizeof(Index) * n);
  char* base = static_cast<char*>(temp);
  cub::DoubleBuffer<std::uint16_t> numbers(ids, temp ? reinterpret_cast<std::uint16_t*>(base)
                                                      : nullptr);
  cub::DoubleBuffer<Index> positions(temp ? reinterpret_cast<Index*>(base + order_at) : nullptr,
                                     temp ? reinterpret_cast<Index*>(base + second_order_at)
                                          : nullptr);
  const int bits = gpusort::detail::index_math::dist::bucket_bits(buckets);
  std::size_t cub_bytes = 0;
  cudaError_t e = cub::DeviceRadixSort::SortPairs(nullptr, cub_bytes, numbers, positions, n, 0,
                                                  bits, stream);
  if (e != cudaSuccess) return e;
  if (!temp) {
    temp_bytes = cub_at + cub_bytes;
    return cudaSuccess;
  }
  if (temp_bytes < cub_at + cub_bytes) return cudaErrorInvalidValue;
  if (n > 0) {
    const auto blocks = static_cast<unsigned>((n + 255) / 256);
    positions_kernel<<<blocks, 256, 0, stream>>>(positions.Current(), n);
    e = cub::DeviceRadixSort::SortPairs(base + cub_at, cub_bytes, numbers, positions, n, 0, bits,
                                        stream);
    if (e != cudaSuccess) return e;
  }
  *order = positions.Current();
  return bucket_starts(numbers.Current(), n, buckets, bounds, stream);
}

template cudaError_t order_by_bucket<std::uint32_t>(void*, std::size_t&, std::uint16_t*,
                                                    std::uint64_t, int, const std::uint32_t**,
                                                    std::uint64_t*, cudaStream_t);
template cudaError_t order_by_bucket<std::uint64_t>(void*, std::size_t&, std::uint16_t*,
                                                    std::uint64_t, int, const std::uint64_t**,
                                                    std::uint64_t*, cudaStream_t);

}  // namespace gpusort::dist::detail
