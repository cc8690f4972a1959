// The device pass of detail/core/float_order.hpp: float keys to codes and back, in place. The
// comparison sorts of float keys run between the two passes on the codes, as the unsigned
// sorts they already are (no float instantiation of any sort); the segmented sort maps as it
// loads and stores instead (key_codec).
#pragma once

#include <cstdint>
#include <cuda_runtime.h>

#include "gpusort/detail/core/float_order.hpp"

namespace gpusort::detail::device {

// The keys' bits [0, n) mapped by Order (float_bits_order for f32, f64 and the 16-bit floats;
// narrow_order for every narrow key), 16 bytes at a time from the first 16-byte boundary (the head before it and the tail
// one key at a time): the pass runs at copy speed.
template <class Order, bool ToCode>
__device__ __forceinline__ void map_range(typename Order::U* bits, std::uint64_t n, bool nans_lowest) {
  using U = typename Order::U;
  const auto map = [nans_lowest](U b) {
    return ToCode ? Order::to_code(b, nans_lowest) : Order::from_code(b, nans_lowest);
  };
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  const std::uint64_t first = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  constexpr int per_vector = 16 / sizeof(U);
  const auto address = reinterpret_cast<std::uintptr_t>(bits);
  const std::uint64_t to_boundary = ((16 - (address & 15u)) & 15u) / sizeof(U);
  const std::uint64_t head = address % sizeof(U) == 0 && to_boundary < n ? to_boundary : n;
  const std::uint64_t whole = (n - head) / per_vector;
  uint4* vectors = reinterpret_cast<uint4*>(bits + head);
  for (std::uint64_t v = first; v < whole; v += stride) {
    uint4 w = vectors[v];
    U* lanes = reinterpret_cast<U*>(&w);
#pragma unroll
    for (int j = 0; j < per_vector; ++j) lanes[j] = map(lanes[j]);
    vectors[v] = w;
  }
  for (std::uint64_t i = first; i < head; i += stride) bits[i] = map(bits[i]);
  for (std::uint64_t i = head + whole * per_vector + first; i < n; i += stride) bits[i] = map(bits[i]);
}

template <class Order, bool ToCode>
__global__ void map_codes_kernel(typename Order::U* bits, std::uint64_t n, bool nans_lowest) {
  map_range<Order, ToCode>(bits, n, nans_lowest);
}

// Maps the bits [0, n) of Order's keys to codes (to_code, NaNs highest or lowest) or back, in
// place, on the stream.
template <class Order>
cudaError_t map_codes(typename Order::U* bits, std::uint64_t n, bool to_code,
                           bool nans_lowest, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  constexpr unsigned threads = 256;
  // One 16-byte vector a thread, at most 8192 blocks (a few waves on any GPU); the
  // grid-stride loop covers the rest.
  const std::uint64_t vectors = (n * sizeof(typename Order::U) + 15) / 16;
  const std::uint64_t want = (vectors + threads - 1) / threads;
  const auto blocks = static_cast<unsigned>(want < 8192 ? want : 8192);
  if (to_code)
    map_codes_kernel<Order, true><<<blocks, threads, 0, stream>>>(bits, n, nans_lowest);
  else
    map_codes_kernel<Order, false><<<blocks, threads, 0, stream>>>(bits, n, nans_lowest);
  return cudaGetLastError();
}

// Maps f32 / f64 keys[0, n) to codes or back, in place.
template <class F>
cudaError_t map_float_keys(F* keys, std::uint64_t n, bool to_code, bool nans_lowest,
                           cudaStream_t stream) {
  using order = float_order<F>;
  return map_codes<order>(reinterpret_cast<typename order::U*>(keys), n, to_code, nans_lowest,
                          stream);
}

}  // namespace gpusort::detail::device
