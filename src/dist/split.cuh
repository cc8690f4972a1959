// The split by bucket of options::partition_first (dist_impl.cuh): a shard's keys (and
// values) in the order of their buckets, stably, in one read to count and one read and write
// to move, by tiles (index_math/dist.hpp, split_tile):
//   counts   each tile's keys of each bucket (the buckets by every splitter against every
//            key up to 4 buckets, else by binary search over the splitters, in shared memory);
//   scan     one exclusive sum of the counts, bucket by bucket: where each tile's keys of each
//            bucket start;
//   scatter  each tile ranks its keys by bucket, stably in the tile's order, places them in
//            shared memory by rank, and writes each bucket's run out contiguously (then the
//            values the same way), each bucket where the caller puts it (split_scatter's
//            places) or all of them one after another.
// Few buckets (digits of 2 or 4 bits: at most 16) count in a register a thread and rank with
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

// Keys' order codes as the searches compare them: 32 bits wide where the keys are.
template <class K>
using code_type = std::conditional_t<sizeof(K) <= 4, std::uint32_t, std::uint64_t>;

// The splitters as the block's tile meets them (math::seen_from_tile), in shared memory.
template <class C>
struct shared_splitters {
  math::tile_splitter<C> s[math::max_partition_ranks - 1];
  __device__ void load(const splitter* from, int count, std::uint32_t rank, std::uint64_t first) {
    for (int i = threadIdx.x; i < count; i += block)
      s[i] = math::seen_from_tile<C>(from[i], rank, first);
    __syncthreads();
  }
};

// The tile's keys before n: those at offsets below this.
__device__ __forceinline__ std::uint32_t keys_in_tile(std::uint64_t n, std::uint64_t first) {
  constexpr std::uint64_t tile = math::split_tile;
  return static_cast<std::uint32_t>(n - first < tile ? n - first : tile);
}

// Few buckets: a thread's counts in 4-bit fields of one word, bucket b's in bits
// [4 b, 4 b + 4), each up to `items`: 32 bits for up to 4 buckets, 64 for 16.
template <int RankBits>
inline constexpr bool few_buckets = RankBits <= 4;
static_assert(items < 16 && math::split_rank_bits(16) == 4 && math::split_rank_bits(17) == 8,
              "a field holds a thread's count; few buckets are at most 16");

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

// A thread's `items` consecutive elements in 16-byte words, where they make whole words and
// the tile is whole and aligned: held blocked, one element at a time would take a warp's
// load through 32 sectors for 32 elements, `items` times over.
template <class T>
inline constexpr bool loads_in_words = sizeof(T) * items % 16 == 0;
template <class T>
__device__ __forceinline__ bool whole_aligned_tile(const T* tile, std::uint64_t first,
                                                   std::uint64_t n) {
  return first + math::split_tile <= n && reinterpret_cast<std::uintptr_t>(tile) % 16 == 0;
}
template <class T>
__device__ __forceinline__ void load_words(const T* from, T (&to)[items]) {
  uint4 words[sizeof(T) * items / 16];
#pragma unroll
  for (std::size_t w = 0; w < sizeof words / 16; ++w)
    words[w] = reinterpret_cast<const uint4*>(from)[w];
  memcpy(to, words, sizeof words);
}

// The tile's elements (those before n) into registers; a whole tile without a check a load.
template <arrangement A, class T>
__device__ __forceinline__ void load_tile(const T* from, std::uint64_t n, std::uint64_t first,
                                          T (&to)[items]) {
  if constexpr (A == arrangement::blocked && loads_in_words<T>) {
    if (whole_aligned_tile(from + first, first, n)) {
      load_words(from + first + threadIdx.x * items, to);
      return;
    }
  }
  if (first + math::split_tile <= n) {
#pragma unroll
    for (int j = 0; j < items; ++j) to[j] = from[first + place<A>(j)];
    return;
  }
#pragma unroll
  for (int j = 0; j < items; ++j) {
    const std::uint64_t i = first + place<A>(j);
    if (i < n) to[j] = from[i];
  }
}

// Each of the tile's keys' bucket (past n: the number `buckets`, after every bucket). Up to 4
// buckets (2-bit digits): every splitter against every key, each read from shared memory once
// (no search's branches); more: a binary search a key. On an H200 (2^29 u32 keys) compares
// took 6.8 ms for 8 buckets and 12.1 for 16 (39922db), a search 5.3 for 8 (14141b4).
template <int RankBits, arrangement A, class K, class C>
__device__ __forceinline__ void buckets_of(const K (&key)[items], std::uint32_t in_tile,
                                           math::order_code<K> code,
                                           const math::tile_splitter<C>* splitters, int buckets,
                                           std::uint32_t (&bucket)[items]) {
  C codes[items];
#pragma unroll
  for (int j = 0; j < items; ++j) codes[j] = static_cast<C>(code(key[j]));
  if constexpr (RankBits == 2) {
#pragma unroll
    for (int j = 0; j < items; ++j) bucket[j] = 0;
#pragma unroll
    for (int k = 0; k < (1 << RankBits) - 1; ++k) {  // buckets <= 2^RankBits
      if (k >= buckets - 1) break;
      const math::tile_splitter<C> s = splitters[k];
#pragma unroll
      for (int j = 0; j < items; ++j) bucket[j] += !math::below(codes[j], place<A>(j), s);
    }
  } else {
#pragma unroll
    for (int j = 0; j < items; ++j)
      bucket[j] = math::bucket_in_tile(splitters, buckets - 1, codes[j], place<A>(j));
  }
  if (in_tile < math::split_tile) {  // the last tile
#pragma unroll
    for (int j = 0; j < items; ++j)
      if (place<A>(j) >= in_tile) bucket[j] = static_cast<std::uint32_t>(buckets);
  }
}

template <int RankBits, class K>
__global__ void __launch_bounds__(block)
    counts_kernel(const K* keys, std::uint64_t n, std::uint32_t rank, math::order_code<K> code,
                  const splitter* splitters, int buckets, std::uint64_t tiles,
                  std::uint64_t* counts) {
  __shared__ shared_splitters<code_type<K>> split;
  __shared__ std::uint32_t histogram[block];
  histogram[threadIdx.x] = 0;
  const std::uint64_t first = blockIdx.x * math::split_tile;
  split.load(splitters, buckets - 1, rank, first);
  K key[items];
  constexpr arrangement A = arrangement::warp_striped;  // counts need no order
  load_tile<A>(keys, n, first, key);  // every load in flight before the first search
  std::uint32_t bucket[items];
  buckets_of<RankBits, A>(key, keys_in_tile(n, first), code, split.s, buckets, bucket);
  if constexpr (few_buckets<RankBits>) {
    using word = std::conditional_t<RankBits <= 2, std::uint32_t, std::uint64_t>;
    word fields = 0;
#pragma unroll
    for (int j = 0; j < items; ++j)  // none for places past n (bucket `buckets`, up to 16)
      fields += word{bucket[j] < static_cast<std::uint32_t>(buckets)} << (4 * (bucket[j] & 15));
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

// Each bucket's first position in the split (the counts' exclusive scan at tile 0), then n.
static __global__ void bounds_kernel(const std::uint64_t* offsets, int buckets,
                                     std::uint64_t tiles, std::uint64_t n,
                                     std::uint64_t* bounds) {
  const int t = static_cast<int>(threadIdx.x);
  if (t <= buckets) bounds[t] = t < buckets ? offsets[math::split_slot(t, 0, tiles)] : n;
}

// Writes the tile's elements, placed by rank in `staged`, to their buckets' runs: the
// element of rank r in bucket b goes to run[b][r - starts[b]] (run[b]: where the tile's keys
// of bucket b go). A thread's r rises by the block's size, so its bucket only moves up: one
// search for the first, then a step past each start r reaches (starts[buckets], the tile's
// count, stops it).
template <class T>
__device__ void write_runs(const T* staged, const std::uint32_t* starts, int buckets,
                           T* const* run) {
  const std::uint32_t in_tile = starts[buckets];  // past them, the last tile's padding
  std::uint32_t r = threadIdx.x;
  if (r >= in_tile) return;
  std::uint32_t b = math::bucket_holding(starts, buckets, r);
  for (; r < in_tile; r += block) {
    b = math::bucket_holding_from(starts, b, r);
    run[b][r - starts[b]] = staged[r];
  }
}

// The tile's elements (those before n) into shared memory at their ranks.
template <arrangement A, class T>
__device__ __forceinline__ void stage(const T (&from)[items], const int (&ranks)[items],
                                      std::uint32_t in_tile, T* staged) {
  if (in_tile == math::split_tile) {
#pragma unroll
    for (int j = 0; j < items; ++j) staged[ranks[j]] = from[j];
    return;
  }
#pragma unroll
  for (int j = 0; j < items; ++j)
    if (place<A>(j) < in_tile) staged[ranks[j]] = from[j];
}

// Where the tile's keys of bucket b go: the bucket's place (places[b], or out + its first
// position where places is null), past the bucket's keys of the tiles before.
template <class T>
__device__ __forceinline__ T* run_of(int b, std::uint64_t tile, std::uint64_t tiles,
                                     const std::uint64_t* offsets, T* const* places, T* out) {
  const std::uint64_t bucket_first = offsets[math::split_slot(b, 0, tiles)];
  T* place = places ? places[b] : out + bucket_first;
  return place + (offsets[math::split_slot(b, tile, tiles)] - bucket_first);
}

template <class K, class V, int RankBits>
__global__ void __launch_bounds__(block)
    scatter_kernel(const K* keys, const V* values, std::uint64_t n, std::uint32_t rank,
                   math::order_code<K> code, const splitter* splitters, int buckets,
                   std::uint64_t tiles, const std::uint64_t* offsets, K* const* key_places,
                   V* const* value_places, K* out_keys, V* out_values) {
  constexpr bool pairs = !std::is_same_v<V, gpusort::detail::no_value>;
  using ranking = std::conditional_t<few_buckets<RankBits>,
                                     cub::BlockRadixRank<block, RankBits, false>,
                                     cub::BlockRadixRankMatch<block, RankBits, false>>;
  using staged_value = std::conditional_t<pairs, V, K>;
  __shared__ shared_splitters<code_type<K>> split;
  __shared__ std::uint32_t starts[(1 << RankBits) + 1];  // each bucket's first rank, then n
  __shared__ K* key_run[math::max_partition_ranks];  // write_runs'
  __shared__ staged_value* value_run[pairs ? math::max_partition_ranks : 1];
  __shared__ union {
    typename ranking::TempStorage rank;
    K keys[math::split_tile];
    staged_value values[math::split_tile];
  } shared;
  const std::uint64_t first = blockIdx.x * math::split_tile;
  split.load(splitters, buckets - 1, rank, first);
  K key[items];
  constexpr arrangement A = ranked_as<RankBits>;
  load_tile<A>(keys, n, first, key);
  const std::uint32_t in_tile = keys_in_tile(n, first);
  std::uint32_t digit[items];
  buckets_of<RankBits, A>(key, in_tile, code, split.s, buckets, digit);
#pragma unroll
  for (int j = 0; j < items; ++j)  // places past n: the last digit where 2^RankBits buckets
    digit[j] = digit[j] < (1u << RankBits) ? digit[j] : (1u << RankBits) - 1;  // fill them
  int ranks[items], prefix[1];
  ranking(shared.rank).RankKeys(digit, ranks, bucket_digit{}, prefix);
  if (const int t = static_cast<int>(threadIdx.x); t < buckets)  // thread t: digit t's
    starts[t] = static_cast<std::uint32_t>(prefix[0]);
  else if (t == buckets)
    starts[t] = in_tile;
  if (const int b = static_cast<int>(threadIdx.x); b < buckets) {
    key_run[b] = run_of(b, blockIdx.x, tiles, offsets, key_places, out_keys);
    if constexpr (pairs)
      value_run[b] = run_of(b, blockIdx.x, tiles, offsets, value_places, out_values);
  }
  __syncthreads();  // the ranking's storage is free from here
  stage<A>(key, ranks, in_tile, shared.keys);
  __syncthreads();
  write_runs(shared.keys, starts, buckets, key_run);
  if constexpr (pairs) {
    __syncthreads();
    V value[items];
    load_tile<A>(values, n, first, value);
    stage<A>(value, ranks, in_tile, shared.values);
    __syncthreads();
    write_runs(shared.values, starts, buckets, value_run);
  }
}

// Runs f.template operator()<RankBits>() with the digit width the buckets need.
template <class F>
cudaError_t with_rank_bits(int buckets, const F& f) {
  switch (math::split_rank_bits(buckets)) {
    case 2: return f.template operator()<2>();
    case 4: return f.template operator()<4>();
    default: return f.template operator()<8>();
  }
}

// The workspace's layout: each tile's count of each bucket (scanned in place), then the scan's.
struct workspace_layout {
  std::uint64_t tiles, slots;
  std::size_t scan_at;
  workspace_layout(std::uint64_t n, int buckets)
      : tiles(std::max<std::uint64_t>(math::split_tiles(n), 1)),
        slots(tiles * static_cast<std::uint64_t>(buckets)),
        scan_at(gpusort::detail::align_workspace(sizeof(std::uint64_t) * slots)) {}
};

}  // namespace split

// The split by bucket in two halves, for a caller that must learn the buckets' sizes before
// any key moves (exchange first: index_math::dist::landing_plan). split_count counts each
// tile's keys of each of `buckets` (2 to max_partition_ranks) buckets by the buckets - 1
// splitters (device memory) and writes bounds[0 .. buckets] (device): each bucket's first
// position in the split, then n. CUB's convention: temp == nullptr writes the bytes needed,
// the same for both halves, whose counts stay in temp from one to the other.
template <class K>
cudaError_t split_count(void* temp, std::size_t& temp_bytes, const K* keys, std::uint64_t n,
                        int buckets, std::uint32_t rank,
                        gpusort::detail::index_math::dist::order_code<K> code,
                        const gpusort::detail::index_math::dist::splitter* splitters,
                        std::uint64_t* bounds, cudaStream_t stream) {
  const split::workspace_layout at(n, buckets);
  auto* counts = temp ? static_cast<std::uint64_t*>(temp) : nullptr;
  std::size_t scan_bytes = 0;
  cudaError_t e = cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, counts, at.slots, stream);
  if (!temp || e != cudaSuccess) {
    temp_bytes = at.scan_at + scan_bytes;
    return e;
  }
  if (temp_bytes < at.scan_at + scan_bytes) return cudaErrorInvalidValue;
  e = split::with_rank_bits(buckets, [&]<int RankBits>() {
    split::counts_kernel<RankBits><<<static_cast<unsigned>(at.tiles), split::block, 0, stream>>>(
        keys, n, rank, code, splitters, buckets, at.tiles, counts);
    return cudaGetLastError();
  });
  if (e == cudaSuccess)
    e = cub::DeviceScan::ExclusiveSum(static_cast<char*>(temp) + at.scan_at, scan_bytes, counts,
                                      at.slots, stream);
  if (e != cudaSuccess) return e;
  constexpr int threads = split::math::max_partition_ranks + 1;  // a bound a bucket, then n
  split::bounds_kernel<<<1, threads, 0, stream>>>(counts, buckets, at.tiles, n, bounds);
  return cudaGetLastError();
}

// The second half: moves the keys (and values) of each bucket, stably, to its place:
// key_places[b] / value_places[b] (device arrays of `buckets` pointers) where given, else
// contiguous from out_keys / out_values in bucket order. The arguments are split_count's, on
// the same stream after it.
template <class K, class V>
cudaError_t split_scatter(void* temp, std::size_t temp_bytes, const K* keys, const V* values,
                          std::uint64_t n, int buckets, std::uint32_t rank,
                          gpusort::detail::index_math::dist::order_code<K> code,
                          const gpusort::detail::index_math::dist::splitter* splitters,
                          K* const* key_places, V* const* value_places, K* out_keys,
                          V* out_values, cudaStream_t stream) {
  const split::workspace_layout at(n, buckets);
  if (!temp || temp_bytes < at.scan_at) return cudaErrorInvalidValue;
  return split::with_rank_bits(buckets, [&]<int RankBits>() {
    split::scatter_kernel<K, V, RankBits>
        <<<static_cast<unsigned>(at.tiles), split::block, 0, stream>>>(
            keys, values, n, rank, code, splitters, buckets, at.tiles,
            static_cast<const std::uint64_t*>(temp), key_places, value_places, out_keys,
            out_values);
    return cudaGetLastError();
  });
}

// Both halves: the shard's keys (and values) split into their buckets, stably, contiguous
// in out_keys / out_values, and bounds[0 .. buckets] as split_count writes them.
template <class K, class V>
cudaError_t split_by_bucket(void* temp, std::size_t& temp_bytes, const K* keys, const V* values,
                            std::uint64_t n, int buckets, std::uint32_t rank,
                            gpusort::detail::index_math::dist::order_code<K> code,
                            const gpusort::detail::index_math::dist::splitter* splitters,
                            K* out_keys, V* out_values, std::uint64_t* bounds,
                            cudaStream_t stream) {
  cudaError_t e = split_count(temp, temp_bytes, keys, n, buckets, rank, code, splitters, bounds,
                              stream);
  if (!temp || e != cudaSuccess) return e;
  return split_scatter<K, V>(temp, temp_bytes, keys, values, n, buckets, rank, code, splitters,
                             nullptr, nullptr, out_keys, out_values, stream);
}

}  // namespace gpusort::dist::detail
