// The split by bucket of options::partition_first (dist_impl.cuh): a shard's keys (and
// values) in the order of their buckets, stably, in one read to count and one read and write
// to move, by tiles (index_math/dist.hpp, split_tile):
//   counts   each tile's keys of each bucket (the buckets by binary search over the
//            splitters, in shared memory);
//   scan     one exclusive sum of the counts, bucket by bucket: where each tile's keys of each
//            bucket start;
//   scatter  each tile ranks its keys by bucket, stably in the tile's order, places them in
//            shared memory by rank, and writes each bucket's run out contiguously (then the
//            values the same way).
// Few buckets (digits of 2 or 4 bits: at most 15) count in a register a thread and rank with
// CUB's counters (BlockRadixRank), both cheaper than the warp's match, which the measured
// kernels spent their issue on; more buckets count by match and rank by CUB's
// BlockRadixRankMatch (whose counters for 8-bit digits would need 129 KiB of shared memory).
#pragma once

#include <cub/block/block_radix_rank.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "gpusort/detail/core/entry.hpp"  // align_workspace
#include "gpusort/detail/core/types.hpp"
#include "gpusort/detail/index_math/dist.hpp"

namespace gpusort::dist::detail {
namespace split {

namespace math = gpusort::detail::index_math::dist;
using math::splitter;
constexpr int block = math::split_block, items = math::split_items;

// The bucket numbers are the ranked digits themselves.
struct bucket_digit {
  __device__ std::uint32_t Digit(std::uint32_t bucket) const { return bucket; }
};

// The splitters, copied to shared memory by the whole block.
struct shared_splitters {
  splitter s[math::max_partition_ranks - 1];
  __device__ void load(const splitter* from, int count) {
    for (int i = threadIdx.x; i < count; i += block) s[i] = from[i];
    __syncthreads();
  }
};

// Few buckets: a thread's counts in 4-bit fields of one word, bucket b's in bits
// [4 b, 4 b + 4): 16 fields hold buckets 0 to 14 and the number 15 (past n).
template <int RankBits>
inline constexpr bool few_buckets = RankBits <= 4;
static_assert(items < 16 && math::split_rank_bits(15) == 4 && math::split_rank_bits(16) == 8,
              "a field holds a thread's count; few buckets are at most 15");

// Where a thread's items lie in the tile. Warp-striped: coalesced loads, and the match
// ranking's order; blocked (thread t holds t * items + j): the order CUB's counters rank in.
enum class arrangement { warp_striped, blocked };
template <int RankBits>
inline constexpr arrangement ranked_as =
    few_buckets<RankBits> ? arrangement::blocked : arrangement::warp_striped;

template <arrangement A>
__device__ __forceinline__ std::uint32_t place(int j) {
  if constexpr (A == arrangement::blocked)
    return threadIdx.x * items + j;
  else
    return (threadIdx.x / 32) * (32 * items) + j * 32 + threadIdx.x % 32;
}

// The tile's keys (those before n) into registers.
template <arrangement A, class K>
__device__ __forceinline__ void load_tile(const K* keys, std::uint64_t n, std::uint64_t first,
                                          K (&key)[items]) {
#pragma unroll
  for (int j = 0; j < items; ++j) {
    const std::uint64_t i = first + place<A>(j);
    if (i < n) key[j] = keys[i];
  }
}

// Each of the tile's keys' bucket (past n: the number `buckets`, after every bucket).
template <arrangement A, class K>
__device__ __forceinline__ void buckets_of(const K (&key)[items], std::uint64_t n,
                                           std::uint64_t first, std::uint32_t rank,
                                           math::order_code<K> code, const splitter* splitters,
                                           int buckets, std::uint32_t (&bucket)[items]) {
#pragma unroll
  for (int j = 0; j < items; ++j) {
    const std::uint64_t i = first + place<A>(j);
    bucket[j] = i < n ? math::bucket_of(splitters, buckets - 1, {code(key[j]), rank, i})
                      : static_cast<std::uint32_t>(buckets);
  }
}

template <int RankBits, class K>
__global__ void __launch_bounds__(block)
    counts_kernel(const K* keys, std::uint64_t n, std::uint32_t rank, math::order_code<K> code,
                  const splitter* splitters, int buckets, std::uint64_t tiles,
                  std::uint64_t* counts) {
  __shared__ shared_splitters split;
  __shared__ std::uint32_t histogram[block];
  histogram[threadIdx.x] = 0;
  split.load(splitters, buckets - 1);
  const std::uint64_t first = blockIdx.x * math::split_tile;
  K key[items];
  constexpr arrangement A = arrangement::warp_striped;  // counts need no order
  load_tile<A>(keys, n, first, key);  // every load in flight before the first search
  std::uint32_t bucket[items];
  buckets_of<A>(key, n, first, rank, code, split.s, buckets, bucket);
  if constexpr (few_buckets<RankBits>) {
    std::uint64_t fields = 0;
#pragma unroll
    for (int j = 0; j < items; ++j) fields += std::uint64_t{1} << (4 * bucket[j]);
    for (int b = 0; b < buckets; ++b) {  // one sum over the warp a bucket
      const unsigned warp_count =
          __reduce_add_sync(0xffffffffu, static_cast<unsigned>(fields >> (4 * b)) & 15u);
      if (threadIdx.x % 32 == 0 && warp_count > 0) atomicAdd(&histogram[b], warp_count);
    }
  } else {
#pragma unroll
    for (int j = 0; j < items; ++j) {
      const std::uint32_t b = bucket[j];
      // One add per bucket a warp holds: few buckets would otherwise serialize the adds.
      const unsigned peers = __match_any_sync(0xffffffffu, b);
      if (threadIdx.x % 32 == __ffs(peers) - 1 && b < static_cast<std::uint32_t>(buckets))
        atomicAdd(&histogram[b], static_cast<std::uint32_t>(__popc(peers)));
    }
  }
  __syncthreads();
  if (static_cast<int>(threadIdx.x) < buckets)
    counts[math::split_slot(threadIdx.x, blockIdx.x, tiles)] = histogram[threadIdx.x];
}

// Writes the tile's elements, placed by rank in `staged`, to their buckets' runs: the
// element of rank r in bucket b goes to base[b] + r (base: where the tile's run of bucket b
// starts in the split, less its first rank in the tile).
template <class T>
__device__ void write_runs(const T* staged, const std::uint32_t* starts, int buckets,
                           const std::uint64_t* base, T* out) {
  const std::uint32_t in_tile = starts[buckets];  // past them, the last tile's padding
  for (std::uint32_t r = threadIdx.x; r < in_tile; r += block)
    out[base[math::bucket_holding(starts, buckets, r)] + r] = staged[r];
}

template <class K, class V, int RankBits>
__global__ void __launch_bounds__(block)
    scatter_kernel(const K* keys, const V* values, std::uint64_t n, std::uint32_t rank,
                   math::order_code<K> code, const splitter* splitters, int buckets,
                   std::uint64_t tiles, const std::uint64_t* offsets, K* out_keys,
                   V* out_values, std::uint64_t* bounds) {
  constexpr bool pairs = !std::is_same_v<V, gpusort::detail::no_value>;
  using ranking = std::conditional_t<few_buckets<RankBits>,
                                     cub::BlockRadixRank<block, RankBits, false>,
                                     cub::BlockRadixRankMatch<block, RankBits, false>>;
  __shared__ shared_splitters split;
  __shared__ std::uint32_t starts[1 << RankBits];  // each bucket's first rank in the tile
  __shared__ std::uint64_t base[math::max_partition_ranks];  // write_runs'
  __shared__ union {
    typename ranking::TempStorage rank;
    K keys[math::split_tile];
    std::conditional_t<pairs, V, K> values[math::split_tile];
  } shared;
  split.load(splitters, buckets - 1);
  const std::uint64_t first = blockIdx.x * math::split_tile;
  K key[items];
  constexpr arrangement A = ranked_as<RankBits>;
  load_tile<A>(keys, n, first, key);
  std::uint32_t digit[items];
  buckets_of<A>(key, n, first, rank, code, split.s, buckets, digit);
  int ranks[items], prefix[1];
  ranking(shared.rank).RankKeys(digit, ranks, bucket_digit{}, prefix);
  if (threadIdx.x < (1u << RankBits))  // thread t: digit t's
    starts[threadIdx.x] = static_cast<std::uint32_t>(prefix[0]);
  if (static_cast<int>(threadIdx.x) < buckets)
    base[threadIdx.x] = offsets[math::split_slot(threadIdx.x, blockIdx.x, tiles)] - prefix[0];
  __syncthreads();  // the ranking's storage is free from here
#pragma unroll
  for (int j = 0; j < items; ++j)
    if (digit[j] < static_cast<std::uint32_t>(buckets)) shared.keys[ranks[j]] = key[j];
  __syncthreads();
  write_runs(shared.keys, starts, buckets, base, out_keys);
  if constexpr (pairs) {
    __syncthreads();
#pragma unroll
    for (int j = 0; j < items; ++j)
      if (digit[j] < static_cast<std::uint32_t>(buckets))
        shared.values[ranks[j]] = values[first + place<A>(j)];
    __syncthreads();
    write_runs(shared.values, starts, buckets, base, out_values);
  }
  if (blockIdx.x == 0 && static_cast<int>(threadIdx.x) <= buckets)
    bounds[threadIdx.x] =
        static_cast<int>(threadIdx.x) < buckets ? offsets[math::split_slot(threadIdx.x, 0, tiles)]
                                                : n;
}

}  // namespace split

// Splits the shard (n keys, and values) into `buckets` (2 to max_partition_ranks) buckets
// by the buckets - 1 splitters (device memory), stably, into out_keys / out_values, and
// writes bounds[0 .. buckets] (device), each bucket's first position, then n. CUB's
// convention: temp == nullptr writes the bytes needed (the counts and the scan's).
template <class K, class V>
cudaError_t split_by_bucket(void* temp, std::size_t& temp_bytes, const K* keys, const V* values,
                            std::uint64_t n, int buckets, std::uint32_t rank,
                            gpusort::detail::index_math::dist::order_code<K> code,
                            const gpusort::detail::index_math::dist::splitter* splitters,
                            K* out_keys, V* out_values, std::uint64_t* bounds,
                            cudaStream_t stream) {
  namespace math = gpusort::detail::index_math::dist;
  const std::uint64_t tiles = std::max<std::uint64_t>(math::split_tiles(n), 1);
  const std::uint64_t slots = tiles * static_cast<std::uint64_t>(buckets);
  const std::size_t scan_at = gpusort::detail::align_workspace(sizeof(std::uint64_t) * slots);
  auto* counts = temp ? static_cast<std::uint64_t*>(temp) : nullptr;
  std::size_t scan_bytes = 0;
  cudaError_t e = cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, counts, slots, stream);
  if (!temp || e != cudaSuccess) {
    temp_bytes = scan_at + scan_bytes;
    return e;
  }
  if (temp_bytes < scan_at + scan_bytes) return cudaErrorInvalidValue;
  const auto grid = static_cast<unsigned>(tiles);
  const auto run = [&]<int RankBits>() {
    split::counts_kernel<RankBits><<<grid, split::block, 0, stream>>>(
        keys, n, rank, code, splitters, buckets, tiles, counts);
    cudaError_t status = cudaGetLastError();
    if (status == cudaSuccess)
      status = cub::DeviceScan::ExclusiveSum(static_cast<char*>(temp) + scan_at, scan_bytes,
                                             counts, slots, stream);
    if (status != cudaSuccess) return status;
    split::scatter_kernel<K, V, RankBits><<<grid, split::block, 0, stream>>>(
        keys, values, n, rank, code, splitters, buckets, tiles, counts, out_keys, out_values,
        bounds);
    return cudaGetLastError();
  };
  switch (math::split_rank_bits(buckets)) {
    case 2: return run.template operator()<2>();
    case 4: return run.template operator()<4>();
    default: return run.template operator()<8>();
  }
}

}  // namespace gpusort::dist::detail
