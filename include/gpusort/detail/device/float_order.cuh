// The device pass of detail/core/float_order.hpp: float keys to codes and back, in place. The
// comparison sorts of float keys run between the two passes on the codes, as the unsigned
// sorts they already are (no float instantiation of any sort); the segmented sort maps as it
// loads and stores instead (key_codec).
#pragma once

#include <cstdint>
#include <cuda_runtime.h>

#include "gpusort/detail/core/float_order.hpp"

namespace gpusort::detail::device {

// The keys of [lo, hi) mapped, 16 bytes at a time where the start is 16-byte aligned (the
// tail one key at a time): the pass runs at copy speed.
template <class F, bool ToCode>
__device__ __forceinline__ void map_range(F* keys, std::uint64_t n, bool nans_lowest) {
  using order = float_order<F>;
  using U = typename order::U;
  const auto map = [nans_lowest](U b) {
    return ToCode ? order::to_code(b, nans_lowest) : order::from_code(b, nans_lowest);
  };
  U* bits = reinterpret_cast<U*>(keys);
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  const std::uint64_t first = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  constexpr int per_vector = 16 / sizeof(U);
  const bool vectors = (reinterpret_cast<std::uintptr_t>(keys) & 15u) == 0;
  const std::uint64_t whole = vectors ? n / per_vector : 0;
  for (std::uint64_t v = first; v < whole; v += stride) {
    uint4 w = reinterpret_cast<const uint4*>(bits)[v];
    U* lanes = reinterpret_cast<U*>(&w);
#pragma unroll
    for (int j = 0; j < per_vector; ++j) lanes[j] = map(lanes[j]);
    reinterpret_cast<uint4*>(bits)[v] = w;
  }
  for (std::uint64_t i = whole * per_vector + first; i < n; i += stride) bits[i] = map(bits[i]);
}

template <class F, bool ToCode>
__global__ void float_order_kernel(F* keys, std::uint64_t n, bool nans_lowest) {
  map_range<F, ToCode>(keys, n, nans_lowest);
}

// Maps keys[0, n) to codes (to_code, NaNs highest or lowest) or back, on the stream.
template <class F>
cudaError_t map_float_keys(F* keys, std::uint64_t n, bool to_code, bool nans_lowest,
                           cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  constexpr unsigned threads = 256;
  // One 16-byte vector a thread, at most 8192 blocks (a few waves on any GPU); the
  // grid-stride loop covers the rest.
  const std::uint64_t vectors = (n * sizeof(F) + 15) / 16;
  const std::uint64_t want = (vectors + threads - 1) / threads;
  const auto blocks = static_cast<unsigned>(want < 8192 ? want : 8192);
  if (to_code)
    float_order_kernel<F, true><<<blocks, threads, 0, stream>>>(keys, n, nans_lowest);
  else
    float_order_kernel<F, false><<<blocks, threads, 0, stream>>>(keys, n, nans_lowest);
  return cudaGetLastError();
}

}  // namespace gpusort::detail::device
