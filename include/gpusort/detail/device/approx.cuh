// Device approximate sort by interval projection (Xiao et al.), its exact refinement and
// top_k; the interval index math is network/approx.hpp.
//
// Schedule of approx_scatter (n keys, K intervals):
//  1. the mapping: linear: extremes_kernel, a min/max reduction (one read of the keys);
//     sampled: gather_samples_kernel takes 8 K samples, the device bitonic sort orders them by
//     (key, position), build_tree_kernel lays the splitters out as a search tree;
//  2. count_chunks_kernel: every block takes one contiguous chunk of the keys (two blocks per
//     multiprocessor), counts its keys per interval in shared memory and writes the counts to
//     a K x blocks matrix, interval-major (one read of the keys);
//  3. a CUB exclusive scan of the matrix gives every block its place in every interval, and
//     offsets_from_matrix_kernel the caller's offsets;
//  4. scatter_chunks_kernel: every block loads its column of the matrix into shared memory and
//     moves each key (and value) of its chunk to the next free slot of its interval, found
//     with a shared atomic (one read and one write).
// So 16 bytes per 4-byte key (12 in sampled mode), against the paper's atomic per key and
// four passes. Above 2^14 intervals, or from 2^32 keys, the counters do not fit in shared
// memory (or in 32 bits) and every key takes global atomics instead (the paper's way).
// Keys inside an interval come out in no particular order, which may differ between runs.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include "gpusort/detail/block/bitonic_tile.cuh"
#include "gpusort/detail/device/bitonic.cuh"
#include "gpusort/detail/device/launch.cuh"
#include "gpusort/detail/network/approx.hpp"
#include "gpusort/detail/network/sample_sort.hpp"
#include "gpusort/detail/network/segments.hpp"

namespace gpusort::detail::device {

using network::ordered_t;

struct approx_config {
  std::uint32_t intervals = network::default_intervals;
  bool sampled = false;
  bool descending = false;
};

template <class K, class V>
struct approx_policy {
  static constexpr int threads = 512;
  static constexpr int items = sizeof(K) + (block::has_values<K, V> ? sizeof(V) : 0) <= 8 ? 16 : 8;
  static constexpr index_t tile = index_t{threads} * items;
  static constexpr int reduce_threads = 256;
};

// Counters in shared memory (32-bit, so positions below 2^32) or global 64-bit atomics.
constexpr bool shared_counters(index_t n, std::uint32_t intervals) {
  return intervals <= network::shared_intervals_max && n < (index_t{1} << 32);
}

// ---- interval mappers -------------------------------------------------------------------

template <class K>
struct linear_mapper {
  const ordered_t<K>* extremes;  // [min, max] of the finite keys' ordered bits
  std::uint32_t intervals;
  bool descending;

  struct bound {
    network::linear_projection<K> proj;
    bool descending;
    __device__ std::uint32_t operator()(K key, index_t) const {
      return network::directed_interval(proj(key), proj.intervals, descending);
    }
  };
  std::size_t shared_bytes() const { return 0; }
  __device__ bound bind(void*) const {
    return {network::linear_projection<K>::make(extremes[0], extremes[1], intervals), descending};
  }
};

template <class K>
struct sampled_mapper {
  const K* tree_keys;  // node 1 .. 2^levels - 1
  const index_t* tree_pos;
  int levels;
  std::uint32_t intervals;
  bool descending;

  // The tree goes to shared memory where it fits: the lower levels are read at random, and
  // shared memory serves 32 scattered words at once where the L1 cache does not.
  static constexpr std::size_t shared_tree_max = 64 * 1024;
  std::size_t shared_bytes() const {
    const std::size_t bytes = sizeof(K) << levels;
    return bytes <= shared_tree_max ? bytes : 0;
  }
  // Every thread of the block must call it (it copies the tree and waits).
  __device__ sampled_mapper bind(void* smem) const {
    if ((sizeof(K) << levels) > shared_tree_max) return *this;
    K* tree = static_cast<K*>(smem);
    for (std::uint32_t i = threadIdx.x; i < (1u << levels); i += blockDim.x) tree[i] = tree_keys[i];
    __syncthreads();
    sampled_mapper bound = *this;
    bound.tree_keys = tree;
    return bound;
  }
  __device__ std::uint32_t operator()(K key, index_t pos) const {
    const less<K> lt;
    const std::uint32_t i = network::descend(levels, [&](std::uint32_t node) {
      const K s = tree_keys[node];
      if (lt(s, key)) return true;
      if (lt(key, s)) return false;
      return __ldg(tree_pos + node) < pos;
    });
    return network::directed_interval(i, intervals, descending);
  }
};

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
    if (!network::finite_key(k)) continue;
    const U u = key_traits<K>::ordered(k);
    lo = u < lo ? u : lo;
    hi = u > hi ? u : hi;
  }
  lo = reduce(temp[0]).Reduce(lo, [](U a, U b) { return a < b ? a : b; });
  hi = reduce(temp[1]).Reduce(hi, [](U a, U b) { return a > b ? a : b; });
  if (threadIdx.x == 0) atomic_min_max(extremes, lo, hi);
}

template <class K>
__global__ void gather_samples_kernel(const K* keys, index_t n, network::sample<K>* samples,
                                      index_t count) {
  const index_t j = blockIdx.x * index_t{blockDim.x} + threadIdx.x;
  if (j >= count) return;
  const index_t pos = network::sample_position(j, count, n);
  samples[j] = {pos, keys[pos], 0};
}

template <class K>
__global__ void build_tree_kernel(const network::sample<K>* samples, index_t count,
                                  std::uint32_t intervals, int levels, K* tree_keys,
                                  index_t* tree_pos) {
  const std::uint64_t node = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  if (node == 0 || node >= (std::uint64_t{1} << levels)) return;
  const std::uint64_t r = network::in_order_rank(node, levels);
  if (r < intervals) {
    const network::sample<K> s = samples[network::splitter_sample(r, count, intervals)];
    tree_keys[node] = s.key;
    tree_pos[node] = s.pos;
  } else {  // after every key
    tree_keys[node] = network::from_ordered<K>(~ordered_t<K>{0});
    tree_pos[node] = ~index_t{0};
  }
}

// Shared words of the per-interval counters, rounded so that what follows is 16-byte aligned.
GPUSORT_HD constexpr std::uint32_t counter_words(std::uint32_t intervals) {
  return (intervals + 3) / 4 * 4;
}

// The shared-counter path splits the keys into one contiguous chunk per block (the same for
// the count and the scatter kernel): block b takes [chunk * b, chunk * (b + 1)).
struct chunking {
  index_t n, chunk;
  std::uint32_t blocks;
  GPUSORT_HD index_t begin(std::uint32_t b) const { return std::min(n, chunk * b); }
  GPUSORT_HD index_t end(std::uint32_t b) const { return std::min(n, chunk * (b + 1)); }
};

// Per-block histograms in shared memory, written interval-major to the count matrix
// (matrix[j * blocks + b]), whose exclusive scan gives every block its place in every
// interval.
template <int THREADS, class K, class Mapper>
__global__ void __launch_bounds__(THREADS)
    count_chunks_kernel(const K* keys, chunking parts, Mapper mapper, std::uint32_t* matrix) {
  extern __shared__ __align__(16) std::uint32_t local[];
  const std::uint32_t intervals = mapper.intervals;
  const auto map = mapper.bind(local + counter_words(intervals));
  for (std::uint32_t j = threadIdx.x; j < intervals; j += THREADS) local[j] = 0;
  __syncthreads();
  const index_t end = parts.end(blockIdx.x);
  for (index_t i = parts.begin(blockIdx.x) + threadIdx.x; i < end; i += THREADS)
    atomicAdd(local + map(keys[i], i), 1u);
  __syncthreads();
  for (std::uint32_t j = threadIdx.x; j < intervals; j += THREADS)
    matrix[std::uint64_t{j} * parts.blocks + blockIdx.x] = local[j];
}

// offsets[j] = the scanned matrix's first entry of interval j; offsets[intervals] = n.
__global__ static void offsets_from_matrix_kernel(const std::uint32_t* matrix,
                                                  std::uint32_t blocks, std::uint32_t intervals,
                                                  index_t n, std::uint64_t* offsets) {
  const std::uint64_t j = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  if (j < intervals) offsets[j] = matrix[j * blocks];
  if (j == intervals) offsets[j] = n;
}

// Global counters: one 64-bit atomic per key.
template <int THREADS, class K, class Mapper>
__global__ void __launch_bounds__(THREADS)
    count_global_kernel(const K* keys, index_t n, Mapper mapper, unsigned long long* counts) {
  extern __shared__ __align__(16) std::uint32_t tree[];
  const auto map = mapper.bind(tree);
  for (index_t i = blockIdx.x * index_t{THREADS} + threadIdx.x; i < n;
       i += index_t{gridDim.x} * THREADS)
    atomicAdd(counts + map(keys[i], i), 1ull);
}

// offsets[j] = counts[0] + ... + counts[j - 1] for j <= intervals, and the cursors (the
// counters, overwritten) start there. One block.
constexpr int offsets_threads = 1024;

__global__ static void __launch_bounds__(offsets_threads)
    offsets_kernel(unsigned long long* counts, std::uint32_t intervals, std::uint64_t* offsets) {
  using scan = cub::BlockScan<std::uint64_t, offsets_threads>;
  __shared__ typename scan::TempStorage temp;
  std::uint64_t carry = 0;
  for (std::uint64_t base = 0; base <= intervals; base += offsets_threads) {
    const std::uint64_t j = base + threadIdx.x;
    const std::uint64_t c = j < intervals ? counts[j] : 0;
    std::uint64_t before = 0, total = 0;
    scan(temp).ExclusiveSum(c, before, total);
    if (j <= intervals) offsets[j] = carry + before;
    if (j < intervals) counts[j] = carry + before;
    carry += total;
    __syncthreads();
  }
}

template <class V>
__device__ __forceinline__ V load_value(const V* values, index_t i) {
  if constexpr (std::is_same_v<V, no_value>) return {};
  else return values[i];
}
template <class V>
__device__ __forceinline__ void store_value(V* values, index_t i, const V& v) {
  if constexpr (!std::is_same_v<V, no_value>) values[i] = v;
}

// Shared counters: block b loads its place in every interval (its column of the scanned
// matrix) and moves each key of its chunk to the next free slot of its interval with a shared
// atomic. Loads are coalesced; the writes of one block fill a run per interval.
template <class Policy, class K, class V, class Mapper>
__global__ void __launch_bounds__(Policy::threads)
    scatter_chunks_kernel(const K* keys, const V* values, K* out_keys, V* out_values,
                          chunking parts, Mapper mapper, const std::uint32_t* matrix) {
  constexpr int T = Policy::threads, I = Policy::items;
  extern __shared__ __align__(16) std::uint32_t local[];  // per interval: the next free slot
  const std::uint32_t intervals = mapper.intervals;
  const auto map = mapper.bind(local + counter_words(intervals));
  for (std::uint32_t j = threadIdx.x; j < intervals; j += T)
    local[j] = matrix[std::uint64_t{j} * parts.blocks + blockIdx.x];
  __syncthreads();
  const index_t end = parts.end(blockIdx.x);
  for (index_t base = parts.begin(blockIdx.x); base < end; base += Policy::tile) {
    K k[I];
    V v[I];
#pragma unroll
    for (int i = 0; i < I; ++i) {  // all loads first, for memory-level parallelism
      const index_t p = base + threadIdx.x + static_cast<index_t>(i) * T;
      if (p < end) {
        k[i] = keys[p];
        v[i] = load_value(values, p);
      }
    }
#pragma unroll
    for (int i = 0; i < I; ++i) {
      const index_t p = base + threadIdx.x + static_cast<index_t>(i) * T;
      if (p < end) {
        const index_t to = atomicAdd(local + map(k[i], p), 1u);
        out_keys[to] = k[i];
        store_value(out_values, to, v[i]);
      }
    }
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

// ---- workspace ----------------------------------------------------------------------------

struct bump {
  char* base;
  std::size_t total = 0;
  template <class T>
  T* take(std::size_t count) {
    T* p = base ? reinterpret_cast<T*>(base + total) : nullptr;
    total += (sizeof(T) * count + 255) / 256 * 256;
    return p;
  }
};

// The chunks of the shared-counter path: two per multiprocessor (each block's column of the
// count matrix is K words, so more blocks cost matrix traffic), at least a tile each.
template <class K, class V>
cudaError_t chunks_for(index_t n, chunking& parts) {
  int device = 0, sms = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e != cudaSuccess) return e;
  const index_t tile = approx_policy<K, V>::tile;
  const index_t most = std::max<index_t>(1, (n + tile - 1) / tile);
  parts.blocks = static_cast<std::uint32_t>(std::min<index_t>(2 * index_t(sms), most));
  parts.n = n;
  parts.chunk = (n + parts.blocks - 1) / parts.blocks;
  return cudaSuccess;
}

template <class K>
struct approx_workspace {
  using U = ordered_t<K>;
  U* extremes = nullptr;
  unsigned long long* counts = nullptr;  // global counters (K > 2^14 or n >= 2^32)
  std::uint32_t* matrix = nullptr;       // shared counters: K x blocks
  void* scan = nullptr;                  // CUB's scan of the matrix
  std::size_t scan_bytes = 0;
  network::sample<K>* samples = nullptr;
  K* tree_keys = nullptr;
  index_t* tree_pos = nullptr;
  index_t sample_count = 0;
  int levels = 0;
  std::size_t total = 0;

  approx_workspace(void* temp, index_t n, const approx_config& cfg, const chunking& parts,
                   std::size_t scan_bytes_)
      : scan_bytes(scan_bytes_) {
    bump b{static_cast<char*>(temp)};
    extremes = b.take<U>(2);
    if (shared_counters(n, cfg.intervals)) {
      matrix = b.take<std::uint32_t>(std::uint64_t{cfg.intervals} * parts.blocks);
      scan = b.take<char>(scan_bytes);
    } else {
      counts = b.take<unsigned long long>(cfg.intervals);
    }
    if (cfg.sampled) {
      sample_count = network::sample_count(n, cfg.intervals);
      levels = network::tree_levels(cfg.intervals);
      samples = b.take<network::sample<K>>(sample_count);
      tree_keys = b.take<K>(index_t{1} << levels);
      tree_pos = b.take<index_t>(index_t{1} << levels);
    }
    total = b.total;
  }
};

// The workspace layout for n keys: the chunking and CUB's scan bytes are found first.
template <class K, class V>
cudaError_t plan_workspace(void* temp, index_t n, const approx_config& cfg, chunking& parts,
                           approx_workspace<K>& ws) {
  cudaError_t e = chunks_for<K, V>(n, parts);
  std::size_t scan_bytes = 0;
  if (e == cudaSuccess && shared_counters(n, cfg.intervals))
    e = cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, static_cast<std::uint32_t*>(nullptr),
                                      static_cast<std::uint32_t*>(nullptr),
                                      std::uint64_t{cfg.intervals} * parts.blocks);
  if (e == cudaSuccess) ws = approx_workspace<K>(temp, n, cfg, parts, scan_bytes);
  return e;
}

// Dynamic shared memory of the chunk kernels: the counters, then the mapper's tree.
template <class Mapper>
int shared_bytes_with_counters(std::uint32_t intervals, const Mapper& mapper) {
  return static_cast<int>(4 * counter_words(intervals) + mapper.shared_bytes());
}

inline unsigned blocks_for(index_t items, int threads) {
  return static_cast<unsigned>((items + threads - 1) / threads);
}

// Prepares the mapper of cfg and calls use(mapper).
template <class K, class Use>
cudaError_t with_mapper(const K* keys, index_t n, const approx_config& cfg,
                        const approx_workspace<K>& ws, cudaStream_t stream, Use use) {
  using U = ordered_t<K>;
  cudaError_t e = cudaSuccess;
  if (!cfg.sampled) {
    constexpr int threads = 256;
    e = cudaMemsetAsync(ws.extremes, 0xff, sizeof(U), stream);
    if (e == cudaSuccess) e = cudaMemsetAsync(ws.extremes + 1, 0, sizeof(U), stream);
    if (e != cudaSuccess) return e;
    unsigned blocks = 0;
    e = resident_blocks(extremes_kernel<threads, K>, threads, 0, blocks);
    if (e != cudaSuccess) return e;
    blocks = std::min(blocks, std::max(1u, blocks_for(n, threads)));
    extremes_kernel<threads, K><<<blocks, threads, 0, stream>>>(keys, n, ws.extremes);
    e = cudaGetLastError();
    if (e != cudaSuccess) return e;
    return use(linear_mapper<K>{ws.extremes, cfg.intervals, cfg.descending});
  }
  gather_samples_kernel<<<blocks_for(ws.sample_count, 256), 256, 0, stream>>>(
      keys, n, ws.samples, ws.sample_count);
  e = cudaGetLastError();
  if (e == cudaSuccess)
    e = bitonic_sort(ws.samples, static_cast<no_value*>(nullptr), ws.sample_count,
                     network::sample_less<less<K>>{}, false, stream);
  if (e != cudaSuccess) return e;
  build_tree_kernel<<<blocks_for(index_t{1} << ws.levels, 256), 256, 0, stream>>>(
      ws.samples, ws.sample_count, cfg.intervals, ws.levels, ws.tree_keys, ws.tree_pos);
  e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  return use(sampled_mapper<K>{ws.tree_keys, ws.tree_pos, ws.levels, cfg.intervals,
                               cfg.descending});
}

// Counts the keys of every interval and writes offsets[0 .. intervals]; leaves either the
// scanned count matrix (shared counters) or the cursors (global counters) in the workspace.
// Then calls then(mapper) with the mapper.
template <class K, class Then>
cudaError_t count_intervals(const K* keys, index_t n, std::uint64_t* offsets,
                            const approx_config& cfg, const chunking& parts,
                            const approx_workspace<K>& ws, cudaStream_t stream, Then then) {
  return with_mapper(keys, n, cfg, ws, stream, [&](auto mapper) -> cudaError_t {
    using M = decltype(mapper);
    constexpr int threads = 512;
    cudaError_t e = cudaSuccess;
    if (ws.matrix) {
      auto kernel = count_chunks_kernel<threads, K, M>;
      const int smem = shared_bytes_with_counters(cfg.intervals, mapper);
      if (smem > 48 * 1024)
        e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
      if (e != cudaSuccess) return e;
      kernel<<<parts.blocks, threads, smem, stream>>>(keys, parts, mapper, ws.matrix);
      e = cudaGetLastError();
      std::size_t bytes = ws.scan_bytes;
      if (e == cudaSuccess)
        e = cub::DeviceScan::ExclusiveSum(ws.scan, bytes, ws.matrix, ws.matrix,
                                          std::uint64_t{cfg.intervals} * parts.blocks, stream);
      if (e != cudaSuccess) return e;
      offsets_from_matrix_kernel<<<blocks_for(cfg.intervals + index_t{1}, 256), 256, 0, stream>>>(
          ws.matrix, parts.blocks, cfg.intervals, n, offsets);
    } else {
      e = cudaMemsetAsync(ws.counts, 0, sizeof(unsigned long long) * cfg.intervals, stream);
      if (e != cudaSuccess) return e;
      auto kernel = count_global_kernel<threads, K, M>;
      const int smem = static_cast<int>(mapper.shared_bytes());
      unsigned blocks = 0;
      e = resident_blocks(kernel, threads, smem, blocks);
      if (e != cudaSuccess) return e;
      kernel<<<std::min(blocks, blocks_for(n, threads)), threads, smem, stream>>>(keys, n, mapper,
                                                                                 ws.counts);
      e = cudaGetLastError();
      if (e != cudaSuccess) return e;
      offsets_kernel<<<1, offsets_threads, 0, stream>>>(ws.counts, cfg.intervals, offsets);
    }
    e = cudaGetLastError();
    if (e != cudaSuccess) return e;
    return then(mapper);
  });
}

// The approximate sort, out of place: keys (and values) to out_keys (and out_values) in
// interval order; offsets[0 .. intervals] (device) bound the intervals.
template <class K, class V>
cudaError_t approx_scatter(void* temp, std::size_t& temp_bytes, const K* keys, K* out_keys,
                           const V* values, V* out_values, index_t n, std::uint64_t* offsets,
                           const approx_config& cfg, cudaStream_t stream) {
  using policy = approx_policy<K, V>;
  chunking parts{};
  approx_workspace<K> ws(nullptr, n, cfg, parts, 0);
  cudaError_t e = plan_workspace<K, V>(nullptr, n, cfg, parts, ws);
  if (e != cudaSuccess) return e;
  if (!temp) {
    temp_bytes = ws.total;
    return cudaSuccess;
  }
  if (temp_bytes < ws.total) return cudaErrorInvalidValue;
  if (n == 0)
    return cudaMemsetAsync(offsets, 0, sizeof(std::uint64_t) * (cfg.intervals + std::size_t{1}),
                           stream);
  e = plan_workspace<K, V>(temp, n, cfg, parts, ws);
  if (e != cudaSuccess) return e;
  return count_intervals(keys, n, offsets, cfg, parts, ws, stream,
                         [&](auto mapper) -> cudaError_t {
    using M = decltype(mapper);
    cudaError_t err = cudaSuccess;
    if (ws.matrix) {
      auto kernel = scatter_chunks_kernel<policy, K, V, M>;
      const int smem = shared_bytes_with_counters(cfg.intervals, mapper);
      if (smem > 48 * 1024)
        err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
      if (err != cudaSuccess) return err;
      kernel<<<parts.blocks, policy::threads, smem, stream>>>(keys, values, out_keys, out_values,
                                                              parts, mapper, ws.matrix);
    } else {
      constexpr int threads = 512;
      auto kernel = scatter_global_kernel<threads, K, V, M>;
      const int smem = static_cast<int>(mapper.shared_bytes());
      unsigned blocks = 0;
      err = resident_blocks(kernel, threads, smem, blocks);
      if (err != cudaSuccess) return err;
      kernel<<<std::min(blocks, blocks_for(n, threads)), threads, smem, stream>>>(
          keys, values, out_keys, out_values, n, mapper, ws.counts);
    }
    return cudaGetLastError();
  });
}

// ---- top_k ------------------------------------------------------------------------------

// The interval holding rank k - 1: the last j with offsets[j] < k; its end is how many
// candidates there are. One thread.
__global__ static void find_kth_interval_kernel(const std::uint64_t* offsets,
                                                std::uint32_t intervals, std::uint64_t k,
                                                std::uint64_t* chosen) {
  std::uint32_t lo = 0, hi = intervals;  // offsets[lo] < k <= offsets[hi]
  while (hi - lo > 1) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (offsets[mid] < k)
      lo = mid;
    else
      hi = mid;
  }
  chosen[0] = lo;  // the interval
  chosen[1] = 0;   // the candidates' fill counter
  chosen[2] = 0;   // where the segment of candidates begins
}

// Copies every key (and value) of the intervals up to chosen[0] to the candidate buffer.
template <int THREADS, class K, class V, class Mapper>
__global__ void __launch_bounds__(THREADS)
    gather_candidates_kernel(const K* keys, const V* values, index_t n, Mapper mapper,
                             std::uint64_t* chosen, K* out_keys, V* out_values) {
  extern __shared__ __align__(16) std::uint32_t tree[];
  const auto map = mapper.bind(tree);
  const std::uint64_t last = chosen[0];
  const unsigned lane = threadIdx.x % 32;
  for (index_t base = blockIdx.x * index_t{THREADS}; base < n; base += index_t{gridDim.x} * THREADS) {
    const index_t i = base + threadIdx.x;
    K k{};
    const bool take = i < n && map(k = keys[i], i) <= last;
    const unsigned mask = __ballot_sync(0xffffffffu, take);
    if (!mask) continue;
    unsigned long long first = 0;
    if (lane == 0)
      first = atomicAdd(reinterpret_cast<unsigned long long*>(chosen + 1),
                        static_cast<unsigned long long>(__popc(mask)));
    first = __shfl_sync(0xffffffffu, first, 0);
    if (take) {
      const index_t to = first + __popc(mask & ((1u << lane) - 1));
      out_keys[to] = k;
      store_value(out_values, to, load_value(values, i));
    }
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
  const network::directed<less<K>> before{{}, descending};
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
    const std::uint64_t dist = network::distance_to(p, a, c);
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

// ---- exact sorts through the intervals ----------------------------------------------------
// SortSegments: the segmented sort, called as sort_segments(temp, temp_bytes, keys, values,
// n, segment_list, descending, stream).

template <class K, class V>
std::size_t segments_bytes(index_t n, index_t segments) {
  return network::segmented_sort_bytes(n, segments, bitonic_policy<K, V, false>::slot_bytes);
}

// approx_refine: the bucket sort. Keys (and values) are copied to the buffer, scattered back
// into their intervals, and every interval is sorted by the segmented sort.
// Workspace: n keys (and values), the offsets, the approximate sort's and the segmented sort's.
template <class K, class V, class SortSegments>
cudaError_t approx_refine(void* temp, std::size_t& temp_bytes, K* keys, V* values, index_t n,
                          const approx_config& cfg, SortSegments sort_segments,
                          cudaStream_t stream) {
  std::size_t scatter_bytes = 0, segment_bytes = segments_bytes<K, V>(n, cfg.intervals);
  cudaError_t e = approx_scatter<K, V>(nullptr, scatter_bytes, nullptr, nullptr, nullptr,
                                       nullptr, n, nullptr, cfg, stream);
  if (e != cudaSuccess) return e;
  bump b{static_cast<char*>(temp)};
  K* buffer_keys = b.take<K>(n);
  V* buffer_values = block::has_values<K, V> ? b.take<V>(n) : nullptr;
  std::uint64_t* offsets = b.take<std::uint64_t>(cfg.intervals + std::size_t{1});
  void* scratch = b.take<char>(std::max(scatter_bytes, segment_bytes));
  if (!temp) {
    temp_bytes = b.total;
    return cudaSuccess;
  }
  if (temp_bytes < b.total) return cudaErrorInvalidValue;
  if (n < 2) return cudaSuccess;
  e = cudaMemcpyAsync(buffer_keys, keys, sizeof(K) * n, cudaMemcpyDeviceToDevice, stream);
  if (e == cudaSuccess && block::has_values<K, V>)
    e = cudaMemcpyAsync(buffer_values, values, sizeof(V) * n, cudaMemcpyDeviceToDevice, stream);
  if (e == cudaSuccess)
    e = approx_scatter<K, V>(scratch, scatter_bytes, buffer_keys, keys, buffer_values, values, n,
                             offsets, cfg, stream);
  if (e != cudaSuccess) return e;
  const network::segment_list intervals{offsets, offsets + 1, cfg.intervals, 0, 8};
  return sort_segments(scratch, segment_bytes, keys, values, n, intervals, cfg.descending, stream);
}

// top_k: counts the intervals, finds the one holding the k-th key, gathers every key up to it
// (k plus part of one interval) into a buffer, sorts that exactly and copies the first k out.
// Workspace: n keys (and values) for the candidates in the worst case, plus the counting's.
template <class K, class V, class SortSegments>
cudaError_t top_k(void* temp, std::size_t& temp_bytes, const K* keys, const V* values,
                  index_t n, K* out_keys, V* out_values, index_t k, const approx_config& cfg,
                  SortSegments sort_segments, cudaStream_t stream) {
  if (k > n) return cudaErrorInvalidValue;
  std::size_t segment_bytes = segments_bytes<K, V>(n, 1);
  chunking parts{};
  approx_workspace<K> ws(nullptr, n, cfg, parts, 0);
  cudaError_t e = plan_workspace<K, no_value>(nullptr, n, cfg, parts, ws);
  if (e != cudaSuccess) return e;
  bump b{static_cast<char*>(temp)};
  K* buffer_keys = b.take<K>(n);
  V* buffer_values = block::has_values<K, V> ? b.take<V>(n) : nullptr;
  std::uint64_t* offsets = b.take<std::uint64_t>(cfg.intervals + std::size_t{1});
  std::uint64_t* chosen = b.take<std::uint64_t>(3);
  void* scratch = b.take<char>(std::max(ws.total, segment_bytes));
  if (!temp) {
    temp_bytes = b.total;
    return cudaSuccess;
  }
  if (temp_bytes < b.total) return cudaErrorInvalidValue;
  if (k == 0) return cudaSuccess;
  e = plan_workspace<K, no_value>(scratch, n, cfg, parts, ws);
  if (e != cudaSuccess) return e;
  e = count_intervals(keys, n, offsets, cfg, parts, ws, stream, [&](auto mapper) -> cudaError_t {
    find_kth_interval_kernel<<<1, 1, 0, stream>>>(offsets, cfg.intervals, k, chosen);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
    constexpr int threads = 512;
    auto kernel = gather_candidates_kernel<threads, K, V, decltype(mapper)>;
    const int smem = static_cast<int>(mapper.shared_bytes());
    unsigned blocks = 0;
    err = resident_blocks(kernel, threads, smem, blocks);
    if (err != cudaSuccess) return err;
    blocks = std::min(blocks, blocks_for(n, threads));
    kernel<<<blocks, threads, smem, stream>>>(keys, values, n, mapper, chosen, buffer_keys,
                                           buffer_values);
    return cudaGetLastError();
  });
  if (e != cudaSuccess) return e;
  // One segment, [chosen[2], chosen[1]) = [0, candidates).
  const network::segment_list candidates{chosen + 2, chosen + 1, 1, 0, 8};
  e = sort_segments(scratch, segment_bytes, buffer_keys, buffer_values, n, candidates,
                    cfg.descending, stream);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(out_keys, buffer_keys, sizeof(K) * k, cudaMemcpyDeviceToDevice, stream);
  if (e == cudaSuccess && block::has_values<K, V>)
    e = cudaMemcpyAsync(out_values, buffer_values, sizeof(V) * k, cudaMemcpyDeviceToDevice,
                        stream);
  return e;
}

// The quality of an approximate sort: quality[0..3] = {largest interval, keys out of place,
// sum of their distances, largest distance} (device words). Workspace: n keys and the
// segmented sort's.
template <class K, class SortSegments>
cudaError_t approx_quality(void* temp, std::size_t& temp_bytes, const K* keys, index_t n,
                           const std::uint64_t* offsets, std::uint32_t intervals,
                           bool descending, unsigned long long* quality,
                           SortSegments sort_segments, cudaStream_t stream) {
  std::size_t segment_bytes = segments_bytes<K, no_value>(n, intervals);
  const network::segment_list segs{offsets, offsets + 1, intervals, 0, 8};
  bump b{static_cast<char*>(temp)};
  K* sorted = b.take<K>(n);
  void* scratch = b.take<char>(segment_bytes);
  if (!temp) {
    temp_bytes = b.total;
    return cudaSuccess;
  }
  if (temp_bytes < b.total) return cudaErrorInvalidValue;
  cudaError_t e = cudaMemsetAsync(quality, 0, 4 * sizeof(unsigned long long), stream);
  if (e != cudaSuccess || n == 0) return e;
  e = cudaMemcpyAsync(sorted, keys, sizeof(K) * n, cudaMemcpyDeviceToDevice, stream);
  if (e == cudaSuccess)
    e = sort_segments(scratch, segment_bytes, sorted, static_cast<no_value*>(nullptr), n, segs,
                      descending, stream);
  if (e != cudaSuccess) return e;
  constexpr int threads = 256;
  auto kernel = distance_kernel<threads, K>;
  unsigned blocks = 0;
  e = resident_blocks(kernel, threads, 0, blocks);
  if (e != cudaSuccess) return e;
  blocks = std::min(blocks, blocks_for(n, threads));
  kernel<<<blocks, threads, 0, stream>>>(keys, sorted, n, offsets, intervals, descending, quality);
  return cudaGetLastError();
}

}  // namespace gpusort::detail::device
