// algorithm::automatic: the one selector (docs/design.md, Layers). It picks the fastest
// exact sort that fits the memory the call may use, by the table measured on an H100
// (docs/performance.md, "automatic"):
//  - built-in keys alone or with 4- or 8-byte values, where CUB's sorts are built: CUB's merge sort
//    for small arrays (up to merge_limit_bits below: it wins on launch count), else CUB's radix
//    sort; float keys after the radix sort get the NaN fix-up (index_math/radix_floats.hpp), two
//    launches that move nothing when no negative NaN is there;
//  - otherwise, or when that workspace (a second buffer) does not fit, or when the caller
//    passes 0 workspace bytes: the in-place bitonic sort, which needs no memory at all;
//  - options::stable: always a stable sort (below), whatever memory it needs.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "gpusort/options.hpp"

namespace gpusort::detail {

struct automatic_request {
  std::uint64_t n = 0;
  std::size_t key_bytes = 4;
  bool floating = false;      // float or double keys
  bool values = false;        // pairs
  bool cub_built = false;     // CUB's sorts are built for the key and value types
  bool stable = false;        // options::stable
};

// The largest log2(n) at which CUB's merge sort beats its radix sort (H100, medians of 20,
// 2^10 .. 2^24): u32/i32 keys 2^18, u64/i64 2^20; float keys and 4-byte keys with values
// move the crossing down by 2^2 each (the merge sort's float comparator costs more, and
// values double a 4-byte key's traffic); 8-byte keys keep it with values.
constexpr int merge_limit_bits(std::size_t key_bytes, bool floating, bool values) {
  if (key_bytes == 8) return floating ? 18 : 20;
  return 18 - (floating ? 2 : 0) - (values ? 2 : 0);
}

// The sort automatic runs when its workspace fits (the caller then decides by the bytes it
// passes): cub_merge, cub_radix, or bitonic when CUB's sorts are not built or n < 2.
// Stable: CUB's merge sort for float keys (its comparator ties every NaN, where the radix
// sort's fix-up regroups NaNs by sign), adaptive_bitonic where CUB's sorts are not built.
constexpr algorithm automatic_choice(const automatic_request& r) {
  if (r.n < 2) return algorithm::bitonic;
  if (r.stable) {
    if (!r.cub_built) return algorithm::adaptive_bitonic;
    if (r.floating) return algorithm::cub_merge;
  }
  if (!r.cub_built) return algorithm::bitonic;
  if (r.n <= (std::uint64_t{1} << merge_limit_bits(r.key_bytes, r.floating, r.values)))
    return algorithm::cub_merge;
  return algorithm::cub_radix;
}

// Whether `free_bytes` of device memory hold a workspace of `bytes`, with an eighth to spare
// for the allocator and the CUDA context.
constexpr bool workspace_fits(std::size_t bytes, std::size_t free_bytes) {
  return bytes + bytes / 8 <= free_bytes;
}

// automatic's memory rule: its pick runs where the pick's workspace of `bytes` fits: at the
// query (temp == nullptr), in the device's free memory now (workspace_fits); at the sort, in
// the temp_bytes given. Else it sorts in place.
inline bool workspace_available(const void* temp, std::size_t temp_bytes, std::size_t bytes) {
  if (temp) return temp_bytes >= bytes;
  std::size_t free_bytes = 0, total_bytes = 0;
  const bool fits = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess &&
                    workspace_fits(bytes, free_bytes);
  cudaGetLastError();
  return fits;
}

}  // namespace gpusort::detail
