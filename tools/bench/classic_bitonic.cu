#include <bit>

#include "bench/classic_bitonic.hpp"
#include "gpusort/key_traits.hpp"

namespace gpusort::bench {
namespace {

constexpr unsigned threads_per_block = 256;

// Step (stage, distance) of the network: thread t owns the pair (i, i + distance), where i
// is t with a zero bit inserted at `distance`; the pair sorts ascending when bit `stage` of
// i is 0, descending otherwise.
template <class K>
__global__ void compare_exchange(K* keys, std::uint64_t pairs, std::uint64_t stage,
                                 std::uint64_t distance) {
  const std::uint64_t t = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  if (t >= pairs) return;
  const std::uint64_t i = ((t & ~(distance - 1)) << 1) | (t & (distance - 1));
  const std::uint64_t j = i + distance;
  const bool ascending = (i & stage) == 0;
  const K a = keys[i], b = keys[j];
  if (ascending ? less<K>{}(b, a) : less<K>{}(a, b)) {
    keys[i] = b;
    keys[j] = a;
  }
}

}  // namespace

template <class K>
cudaError_t classic_bitonic_sort(K* keys, std::uint64_t n, cudaStream_t stream) {
  if (!std::has_single_bit(n) && n > 1) return cudaErrorInvalidValue;
  const std::uint64_t pairs = n / 2;
  const auto blocks = static_cast<unsigned>((pairs + threads_per_block - 1) / threads_per_block);
  for (std::uint64_t stage = 2; stage <= n; stage *= 2) {
    for (std::uint64_t distance = stage / 2; distance > 0; distance /= 2) {
      compare_exchange<<<blocks, threads_per_block, 0, stream>>>(keys, pairs, stage, distance);
      if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    }
  }
  return cudaSuccess;
}

template cudaError_t classic_bitonic_sort<std::uint32_t>(std::uint32_t*, std::uint64_t,
                                                         cudaStream_t);
template cudaError_t classic_bitonic_sort<std::uint64_t>(std::uint64_t*, std::uint64_t,
                                                         cudaStream_t);
template cudaError_t classic_bitonic_sort<float>(float*, std::uint64_t, cudaStream_t);

}  // namespace gpusort::bench
