// Approximate sort's kernels (approx.cuh holds the schedule and the launches): the extremes,
// the samples and their search tree, the interval counts and offsets, the scatters, top_k's
// candidate gathers, and the quality measure.
#pragma once

#include <cstdint>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "gpusort/detail/block/bitonic_tile.cuh"
#include "gpusort/detail/device/approx_policy.cuh"
#include "gpusort/detail/device/gather.cuh"  // load_value, store_value
#include "gpusort/detail/index_math/approx.hpp"
#include "gpusort/detail/index_math/sample_sort.hpp"

namespace gpusort::detail::device {

// ---- kernels ------------------------------------------------------------------------------

template <class U>
__device__ void atomic_min_max(U* extremes, U lo, U hi) {
  if constexpr (sizeof(U) == 4) {
    atomicMin(reinterpret_cast<unsigned*>(extremes), lo);
    atomicMax(reinterpret_cast<unsigned*>(extremes) + 1, hi);
  } else {
    atomicMin(reinterpret_cast<unsigned long long*>(extremes), lo);
    atomicMax(reinterpret_cast<unsigned long long*>(extremes) + 1, hi);
  }
}

// extremes = [min, max] of the finite keys' ordered bits (preset to [~0, 0]).
template <int THREADS, class K>
__global__ void __launch_bounds__(THREADS)
    extremes_kernel(const K* keys, index_t n, ordered_t<K>* extremes) {
  using U = ordered_t<K>;
  using reduce = cub::BlockReduce<U, THREADS>;
  __shared__ typename reduce::TempStorage temp[2];
  U lo = ~U{0}, hi = 0;
  for (index_t i = blockIdx.x * index_t{THREADS} + threadIdx.x; i < n;
       i += index_t{gridDim.x} * THREADS) {
    const K k = keys[i];
    if (!index_math::finite_key(k)) continue;
    const U u = key_traits<K>::ordered(k);
    lo = u < lo ? u : lo;
    hi = u > hi ? u : hi;
  }
  lo = reduce(temp[0]).Reduce(lo, [](U a, U b) { return a < b ? a : b; });
  hi = reduce(temp[1]).Reduce(hi, [](U a, U b) { return a > b ? a : b; });
  if (threadIdx.x == 0) atomic_min_max(extremes, lo, hi);
}

template <class K>
__global__ void gather_samples_kernel(const K* keys, index_t n, index_math::sample<K>* samples,
                                      index_t count) {
  const index_t j = blockIdx.x * index_t{blockDim.x} + threadIdx.x;
  if (j >= count) return;
  const index_t pos = index_math::sample_position(j, count, n);
  samples[j] = {pos, keys[pos], 0};
}

template <class K>
__global__ void build_tree_kernel(const index_math::sample<K>* samples, index_math::splitter_plan plan,
                                  int levels, K* tree_keys, index_t* tree_pos) {
  const std::uint64_t node = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  if (node == 0 || node >= (std::uint64_t{1} << levels)) return;
  const std::uint64_t r = index_math::in_order_rank(node, levels);
  if (r < plan.intervals) {
    const index_math::sample<K> s = samples[plan.sample_of(r)];
    tree_keys[node] = s.key;
    tree_pos[node] = s.pos;
  } else {  // after every key
    tree_keys[node] = index_math::from_ordered<K>(~ordered_t<K>{0});
    tree_pos[node] = ~index_t{0};
  }
}

// Shared counters: per-block histograms added to 32-bit global counters at the end; else
// one 64-bit global atomic per key.
template <int THREADS, bool SHARED, class K, class Mapper>
__global__ void __launch_bounds__(THREADS)
    count_kernel(const K* keys, index_t n, Mapper mapper, void* counts) {
  extern __shared__ __align__(16) std::uint32_t local[];
  const std::uint32_t intervals = mapper.intervals;
  const auto map = mapper.bind(local + (SHARED ? counter_words(intervals) : 0));
  if constexpr (SHARED) {
    for (std::uint32_t j = threadIdx.x; j < intervals; j += THREADS) local[j] = 0;
    __syncthreads();
  }
  for (index_t i = blockIdx.x * index_t{THREADS} + threadIdx.x; i < n;
       i += index_t{gridDim.x} * THREADS) {
    const std::uint32_t j = map(keys[i], i);
    if constexpr (SHARED)
      atomicAdd(local + j, 1u);
    else
      atomicAdd(static_cast<unsigned long long*>(counts) + j, 1ull);
  }
  if constexpr (SHARED) {
    __syncthreads();
    for (std::uint32_t j = threadIdx.x; j < intervals; j += THREADS)
      if (local[j]) atomicAdd(static_cast<unsigned*>(counts) + j, local[j]);
  }
}

template <class C>
__global__ void __launch_bounds__(offsets_threads)
    offsets_kernel(C* counts, std::uint32_t intervals, std::uint64_t* offsets) {
  using scan = cub::BlockScan<std::uint64_t, offsets_threads>;
  __shared__ typename scan::TempStorage temp;
  std::uint64_t carry = 0;
  for (std::uint64_t base = 0; base <= intervals; base += offsets_threads) {
    const std::uint64_t j = base + threadIdx.x;
    const std::uint64_t c = j < intervals ? counts[j] : 0;
    std::uint64_t before = 0, total = 0;
    scan(temp).ExclusiveSum(c, before, total);
    if (j <= intervals) offsets[j] = carry + before;
    if (j < intervals) counts[j] = static_cast<C>(carry + before);
    carry += total;
    __syncthreads();
  }
}

// Shared counters: a tile's keys are ranked within their intervals in shared memory, then
// each non-empty interval reserves its run of the output with one atomic on its cursor.
template <class Policy, class K, class V, class Mapper>
__global__ void __launch_bounds__(Policy::threads)
    scatter_shared_kernel(const K* keys, const V* values, K* out_keys, V* out_values, index_t n,
                          Mapper mapper, std::uint32_t* cursors) {
  constexpr int T = Policy::threads, I = Policy::items;
  extern __shared__ __align__(16) std::uint32_t local[];  // per interval: count, then run start
  const std::uint32_t intervals = mapper.intervals;
  const auto map = mapper.bind(local + counter_words(intervals));
  for (index_t base = blockIdx.x * Policy::tile; base < n; base += index_t{gridDim.x} * Policy::tile) {
    for (std::uint32_t j = threadIdx.x; j < intervals; j += T) local[j] = 0;
    __syncthreads();
    K k[I];
    V v[I];
    std::uint32_t slot[I];  // interval << 16 | rank within the tile's run
#pragma unroll
    for (int i = 0; i < I; ++i) {
      const index_t p = base + threadIdx.x + static_cast<index_t>(i) * T;
      if (p < n) {
        k[i] = keys[p];
        v[i] = load_value(values, p);
        const std::uint32_t j = map(k[i], p);
        slot[i] = j << 16 | atomicAdd(local + j, 1u);
      }
    }
    __syncthreads();
    for (std::uint32_t j = threadIdx.x; j < intervals; j += T)
      if (const std::uint32_t c = local[j]) local[j] = atomicAdd(cursors + j, c);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < I; ++i) {
      const index_t p = base + threadIdx.x + static_cast<index_t>(i) * T;
      if (p < n) {
        const index_t to = local[slot[i] >> 16] + (slot[i] & 0xffffu);
        out_keys[to] = k[i];
        store_value(out_values, to, v[i]);
      }
    }
    __syncthreads();
  }
}

// Global counters: one 64-bit atomic per key.
template <int THREADS, class K, class V, class Mapper>
__global__ void __launch_bounds__(THREADS)
    scatter_global_kernel(const K* keys, const V* values, K* out_keys, V* out_values, index_t n,
                          Mapper mapper, unsigned long long* cursors) {
  extern __shared__ __align__(16) std::uint32_t tree[];
  const auto map = mapper.bind(tree);
  for (index_t i = blockIdx.x * index_t{THREADS} + threadIdx.x; i < n;
       i += index_t{gridDim.x} * THREADS) {
    const K k = keys[i];
    const index_t to = atomicAdd(cursors + map(k, i), 1ull);
    out_keys[to] = k;
    store_value(out_values, to, load_value(values, i));
  }
}

// ---- top_k ------------------------------------------------------------------------------

// top_k's samples: each sample's ascending select code, at index j of the sample whose
// position index_math::sample_position gives (positions rise with j, so the (code, index)
// order is the (key, position) order of sample_less).
template <class K>
__global__ void gather_sample_codes_kernel(const K* keys, index_t n, index_t count,
                                           ordered_t<K>* codes) {
  const index_t j = blockIdx.x * index_t{blockDim.x} + threadIdx.x;
  if (j >= count) return;
  codes[j] = index_math::select_code(keys[index_math::sample_position(j, count, n)], false);
}

// The sample that select_ranked_index chose (device: *chosen, its index among `count`).
template <class K>
struct ranked_sample {
  const K* keys;
  index_t n, count;
  const std::uint32_t* chosen;

  __device__ index_math::sample<K> get() const {
    const index_t pos = index_math::sample_position(*chosen, count, n);
    return {pos, keys[pos], 0};
  }
};

// VEC keys loaded as one aligned vector (16 bytes, or one key when VEC is 1).
template <class K, int VEC>
struct alignas(sizeof(K) * VEC) key_vector {
  K key[VEC];
};

// A thread's share of one tile of the candidates' gather: KEYS keys as KEYS / VEC coalesced
// rows of VEC-key vectors, which of them are candidates, and their appending. Every lane of
// the warp calls classify and append (they vote). The keys live in registers only until the
// fast compare: the rare keys the codes decide, and the candidates appended, are read again
// (from L1), so that 16 8-byte keys a thread do not spill.
template <int THREADS, int KEYS, int VEC, class K>
struct candidate_tile {
  static_assert(KEYS % VEC == 0);
  static constexpr int rows = KEYS / VEC;
  index_t tile;  // the tile's first key
  bool whole;    // every key of the tile lies before n
  key_vector<K, VEC> key[rows];
  unsigned taken = 0;  // bit r * VEC + e: key e of row r is a candidate
  static_assert(KEYS <= 32);

  __device__ __forceinline__ bool takes(int r, int e) const { return taken >> (r * VEC + e) & 1u; }

  __device__ __forceinline__ index_t at(int r, int e) const {
    return tile + (static_cast<index_t>(r) * THREADS + threadIdx.x) * VEC + e;
  }
  __device__ __forceinline__ bool inside(int r, int e, index_t n) const {
    return whole || at(r, e) < n;
  }

  // Every row's load issued before any key is used: loads in flight. The last, partial tile
  // loads key by key.
  __device__ __forceinline__ void load(const K* keys, index_t n) {
    if (whole) {
#pragma unroll
      for (int r = 0; r < rows; ++r)
        key[r] = *reinterpret_cast<const key_vector<K, VEC>*>(keys + at(r, 0));
      return;
    }
#pragma unroll
    for (int r = 0; r < rows; ++r)
#pragma unroll
      for (int e = 0; e < VEC; ++e) key[r].key[e] = inside(r, e, n) ? keys[at(r, e)] : K{};
  }

  // taken: the keys before the bound; whether the warp has any. The key's own `<` decides
  // nearly all; where a warp holds a key it leaves open (equal to the bound's, or a NaN), the
  // codes and positions decide those.
  __device__ __forceinline__ bool classify(const K* keys, const candidate_bound<K>& bound,
                                           index_t n) {
    unsigned open = 0;  // bits as taken's: left to the codes
#pragma unroll
    for (int r = 0; r < rows; ++r)
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        const bool in = inside(r, e, n);
        const bool before = in && bound.surely_before(key[r].key[e]);
        taken |= unsigned{before} << (r * VEC + e);
        open |= unsigned{in && !before && !bound.surely_after(key[r].key[e])} << (r * VEC + e);
      }
    if (__any_sync(0xffffffffu, open != 0)) {
#pragma unroll
      for (int r = 0; r < rows; ++r)
#pragma unroll
        for (int e = 0; e < VEC; ++e)
          if (open >> (r * VEC + e) & 1u)
            taken |= unsigned{bound.holds(index_math::select_code(keys[at(r, e)], bound.descending),
                                          at(r, e))} << (r * VEC + e);
    }
    return __any_sync(0xffffffffu, taken != 0);
  }

  // The warp's candidates appended at slots it reserves with one atomic on *cursor; those past
  // `capacity` only counted.
  template <class V, class Values>
  __device__ __forceinline__ void append(const K* keys, Values values, unsigned long long* cursor,
                                         index_t capacity, K* out_keys, V* out_values) const {
    const unsigned lane = threadIdx.x % 32, lanes_before = (1u << lane) - 1;
    unsigned masks[rows][VEC];
    unsigned count = 0;
#pragma unroll
    for (int r = 0; r < rows; ++r)
#pragma unroll
      for (int e = 0; e < VEC; ++e)
        count += __popc(masks[r][e] = __ballot_sync(0xffffffffu, takes(r, e)));
    unsigned long long slot = 0;
    if (lane == 0) slot = atomicAdd(cursor, static_cast<unsigned long long>(count));
    slot = __shfl_sync(0xffffffffu, slot, 0);
#pragma unroll
    for (int r = 0; r < rows; ++r)
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        const unsigned long long to = slot + __popc(masks[r][e] & lanes_before);
        if (takes(r, e) && to < capacity) {
          out_keys[to] = keys[at(r, e)];
          store_value(out_values, to, load_value(values, at(r, e)));
        }
        slot += __popc(masks[r][e]);
      }
  }
};

// Appends every candidate key (and value) to out, as far as `capacity` holds them, and counts
// them all in *gathered, a tile of KEYS keys a thread at a time (candidate_tile): 16-byte
// vectors (VEC > 1) where the keys are so aligned, so that one load moves 16 bytes and the
// index math is paid once a vector. Where candidates are dense, longer tiles mean fewer
// atomics on the one counter (at k near n / 16, one per 128 keys took most of the pass). The
// pass is bound by loads in flight, so registers are capped for a full SM with short tiles,
// half of one with 16 keys (H100, 2^28 keys: with values, 4 keys at 3 blocks an SM took
// 0.72 ms against 0.59 at 4; 16 with 8-byte positions at 1 block 2.23 against 1.21 at 2).
template <int THREADS, int KEYS, int VEC, class K, class V, class Values>
__global__ void __launch_bounds__(THREADS, 2048 / THREADS / (KEYS >= 16 ? 2 : 1))
    gather_candidates_kernel(const K* keys, Values values, index_t n, ranked_sample<K> splitter,
                             bool descending, index_t capacity, std::uint64_t* gathered,
                             K* out_keys, V* out_values) {
  constexpr index_t tile_keys = index_t{THREADS} * KEYS;
  const index_math::sample<K> s = splitter.get();
  const auto bound = candidate_bound<K>::at(s.key, s.pos, descending);
  for (index_t tile = blockIdx.x * tile_keys; tile < n; tile += index_t{gridDim.x} * tile_keys) {
    candidate_tile<THREADS, KEYS, VEC, K> mine{tile, n - tile >= tile_keys};
    mine.load(keys, n);
    if (mine.classify(keys, bound, n))
      mine.append(keys, values, reinterpret_cast<unsigned long long*>(gathered), capacity,
                  out_keys, out_values);
  }
}

// The candidates as what the radix sort orders: select codes, and each candidate's place in
// the buffer; places from `*count` to `capacity` get the last code (the stable sort keeps
// them behind every candidate, even one of that code).
template <class K, class I>
__global__ void encode_candidates_kernel(const K* candidates, const std::uint64_t* count,
                                         index_t capacity, bool descending,
                                         ordered_t<K>* codes, I* places) {
  const index_t used = *count;
  for (index_t i = blockIdx.x * index_t{blockDim.x} + threadIdx.x; i < capacity;
       i += index_t{gridDim.x} * blockDim.x) {
    codes[i] = i < used ? index_math::select_code(candidates[i], descending) : ~ordered_t<K>{0};
    places[i] = static_cast<I>(i);
  }
}

// out[i] = candidates[places[i]] for i < k, keys and values: the bits as they were given.
template <class K, class V, class I>
__global__ void emit_candidates_kernel(const K* keys, const V* values, const I* places,
                                       index_t k, K* out_keys, V* out_values) {
  for (index_t i = blockIdx.x * index_t{blockDim.x} + threadIdx.x; i < k;
       i += index_t{gridDim.x} * blockDim.x) {
    const index_t from = places[i];
    out_keys[i] = keys[from];
    store_value(out_values, i, load_value(values, from));
  }
}

// ---- quality ------------------------------------------------------------------------------

// quality = {largest interval, keys out of place, sum of distances, largest distance}, each
// key's distance measured against `sorted`, the same intervals each sorted exactly.
template <int THREADS, class K>
__global__ void __launch_bounds__(THREADS)
    distance_kernel(const K* keys, const K* sorted, index_t n, const std::uint64_t* offsets,
                    std::uint32_t intervals, bool descending, unsigned long long* quality) {
  using reduce = cub::BlockReduce<unsigned long long, THREADS>;
  __shared__ typename reduce::TempStorage temp[3];
  const index_math::directed<less<K>> before{{}, descending};
  unsigned long long misplaced = 0, sum = 0, largest = 0, widest = 0;
  for (index_t p = blockIdx.x * index_t{THREADS} + threadIdx.x; p < n;
       p += index_t{gridDim.x} * THREADS) {
    std::uint32_t lo = 0, hi = intervals;  // offsets[lo] <= p < offsets[hi]
    while (hi - lo > 1) {
      const std::uint32_t mid = lo + (hi - lo) / 2;
      if (offsets[mid] <= p) lo = mid;
      else hi = mid;
    }
    const index_t first = offsets[lo], end = offsets[lo + 1];
    if (p == first) widest = std::max<unsigned long long>(widest, end - first);
    const K k = keys[p];
    index_t a = first, b = end;  // lower bound of k in sorted[first, end)
    while (a < b) {
      const index_t m = a + (b - a) / 2;
      if (before(sorted[m], k)) a = m + 1;
      else b = m;
    }
    index_t c = a, d = end;  // upper bound
    while (c < d) {
      const index_t m = c + (d - c) / 2;
      if (before(k, sorted[m])) d = m;
      else c = m + 1;
    }
    const std::uint64_t dist = index_math::distance_to(p, a, c);
    misplaced += dist > 0;
    sum += dist;
    largest = std::max<unsigned long long>(largest, dist);
  }
  auto max_op = [](unsigned long long x, unsigned long long y) { return x > y ? x : y; };
  widest = reduce(temp[0]).Reduce(widest, max_op);
  misplaced = reduce(temp[1]).Sum(misplaced);
  sum = reduce(temp[2]).Sum(sum);
  __syncthreads();
  largest = reduce(temp[0]).Reduce(largest, max_op);
  if (threadIdx.x == 0) {
    atomicMax(quality, widest);
    atomicAdd(quality + 1, misplaced);
    atomicAdd(quality + 2, sum);
    atomicMax(quality + 3, largest);
  }
}

}  // namespace gpusort::detail::device
