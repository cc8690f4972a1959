// Device sample sort's kernels (sample_sort.cuh holds the algorithm's description and the
// dispatch): the tile sort and sampling, the counts and scatters of regular and randomized
// sampling, the samples' sorts, and the final buckets' sorts and merges.
#pragma once

#include <algorithm>
#include <bit>

#include <cub/block/block_load.cuh>
#include <cub/block/block_merge_sort.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>

#include "gpusort/detail/block/bitonic_tile.cuh"
#include "gpusort/detail/device/bitonic.cuh"
#include "gpusort/detail/device/launch.cuh"
#include "gpusort/detail/device/sample_sort_policy.cuh"
#include "gpusort/detail/index_math/merge_runs.hpp"
#include "gpusort/detail/index_math/sample_sort.hpp"
#include "gpusort/detail/index_math/segments.hpp"

namespace gpusort::detail::device {

// The block-wide pieces of the tile sort: load (transposed through shared memory, so that
// global reads coalesce), CUB's stable block merge sort, store.
template <class Policy, class K, class V>
struct tile_merge_sort {
  static constexpr bool pairs = block::has_values<K, V>;
  using value_t = std::conditional_t<pairs, std::remove_const_t<V>, char>;
  static constexpr int T = Policy::merge_threads, I = Policy::items;
  using load_keys = cub::BlockLoad<K, T, I, cub::BLOCK_LOAD_TRANSPOSE>;
  using load_values = cub::BlockLoad<value_t, T, I, cub::BLOCK_LOAD_TRANSPOSE>;
  using store_keys = cub::BlockStore<K, T, I, cub::BLOCK_STORE_TRANSPOSE>;
  using store_values = cub::BlockStore<value_t, T, I, cub::BLOCK_STORE_TRANSPOSE>;
  using sorter = std::conditional_t<pairs, cub::BlockMergeSort<K, T, I, value_t>,
                                    cub::BlockMergeSort<K, T, I>>;
  union storage {
    typename load_keys::TempStorage load_k;
    typename load_values::TempStorage load_v;
    typename sorter::TempStorage sort;
    typename store_keys::TempStorage store_k;
    typename store_values::TempStorage store_v;
  };

  // Sorts keys[0, length) (values alongside) into out_keys: one read and one write.
  template <class Compare>
  __device__ static void sort(storage& st, const K* keys, const V* values, K* out_keys,
                              V* out_values, int length, Compare comp) {
    K k[I];
    value_t v[I];
    const bool full = length == T * I;
    if (full) load_keys(st.load_k).Load(keys, k);
    else load_keys(st.load_k).Load(keys, k, length);
    if constexpr (pairs) {
      __syncthreads();
      if (full) load_values(st.load_v).Load(values, v);
      else load_values(st.load_v).Load(values, v, length);
    }
    __syncthreads();
    // A short tile's missing items never enter a merge (CUB bounds them by `length`).
    if constexpr (pairs) {
      if (full) sorter(st.sort).Sort(k, v, comp);
      else sorter(st.sort).Sort(k, v, comp, length, k[0]);
    } else {
      if (full) sorter(st.sort).Sort(k, comp);
      else sorter(st.sort).Sort(k, comp, length, k[0]);
    }
    __syncthreads();
    store_keys(st.store_k).Store(out_keys, k, length);
    if constexpr (pairs) {
      __syncthreads();
      store_values(st.store_v).Store(out_values, v, length);
    }
  }
};

template <class V>
__device__ __forceinline__ V* at(V* values, index_t i) {
  if constexpr (std::is_same_v<std::remove_const_t<V>, no_value>) return values;
  return values + i;
}

// The samples of tile t of problem p, [start, start + length) of keys: one per stride,
// regularly (the last key of each stride of the sorted tile) or at random positions.
template <int THREADS, bool RANDOM, class K>
__device__ void take_tile_samples(const K* keys, index_t start, index_t length, index_t t,
                                  const sample_level& lv, sample<K>* problem_samples, index_t p,
                                  index_t seed) {
  const auto stride = static_cast<unsigned>(lv.stride());
  const auto count = static_cast<unsigned>(length / stride);
  for (unsigned i = threadIdx.x; i < count; i += THREADS) {
    const unsigned l = RANDOM ? index_math::random_sample(start, i, static_cast<unsigned>(length), seed)
                              : index_math::regular_sample(i, stride);
    problem_samples[t * lv.tile_samples() + i] = {start + l, keys[start + l],
                                                  static_cast<std::uint32_t>(2 * p)};
  }
}

// Regular sampling: sorts every tile into out_keys and takes its samples. Randomized
// sampling (`random`): takes the samples of every tile as it is and moves nothing.
template <class Policy, class K, class V, class Compare>
__global__ void __launch_bounds__(Policy::threads)
    sample_tile_kernel(const K* keys, const V* values, K* out_keys, V* out_values,
                       problem_list probs, sample_level lv, sample<K>* samples, bool random,
                       index_t seed, Compare comp) {
  using tile_t = block::tile_network<K, V, block::block_team<Policy::threads>, Policy::tile_bits,
                                     Policy::bitonic::digit_bits, Compare>;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  const index_t T = lv.tiles(), M = lv.tile();
  const index_t p = blockIdx.x / T, column = blockIdx.x % T;
  const index_t begin = probs.begin(p), size = probs.end(p) - begin;
  sample<K>* problem_samples = samples + lv.first_sample(begin);
  if (column == 0) {  // an unused slot after the problem's samples sorts after them
    const auto tag = static_cast<std::uint32_t>(2 * p + 1);
    for (index_t k = lv.first_sample(begin) + lv.samples(size) + threadIdx.x;
         k < lv.first_sample(begin + size); k += Policy::threads)
      samples[k].tag = tag;
  }
  for (index_t t = column; t * M < size; t += T) {
    const index_t start = begin + t * M;
    const index_t length = size - t * M < M ? size - t * M : M;
    if (random) {  // classified, not sorted (classify_count_kernel): samples of the tile as it is
      take_tile_samples<Policy::threads, true>(keys, start, length, t, lv, problem_samples, p, seed);
      continue;
    }
    if constexpr (Policy::merge_tiles) {
      using tile_sort = tile_merge_sort<Policy, K, V>;
      tile_sort::sort(*reinterpret_cast<typename tile_sort::storage*>(shared_bytes), keys + start,
                      at(values, start), out_keys + start, at(out_values, start),
                      static_cast<int>(length), comp);
    } else {
      const index_math::window whole{Policy::tile_bits, Policy::tile_bits, 0};
      const index_math::pass sort_tile{whole, 0, index_math::steps_through_phase(Policy::tile_bits)};
      tile_t tile{*reinterpret_cast<typename tile_t::storage*>(shared_bytes), 0, length, false, comp};
      tile.load(keys + start, at(values, start));
      tile.run(sort_tile);
      tile.store(out_keys + start, at(out_values, start));
    }
    __syncthreads();  // the sorted tile (global) is now visible to the whole block
    take_tile_samples<Policy::threads, false>(out_keys, start, length, t, lv, problem_samples, p,
                                              seed);
  }
}

// bounds[j - 1] = keys of the sorted tile [start, start + length) below splitter j, for
// j = 1..s (splitter s is infinite: bounds[s - 1] = length).
template <int THREADS, class K, class Compare>
__device__ void splitter_bounds(const K* keys, index_t start, unsigned length,
                                const sample<K>* problem_samples, index_t sample_count,
                                const sample_level& lv, unsigned* bounds, Compare comp) {
  const unsigned s = static_cast<unsigned>(lv.buckets());
  for (unsigned j = threadIdx.x + 1; j <= s; j += THREADS) {
    unsigned below = length;
    const index_t rank = lv.splitter_rank(j, sample_count);
    if (j < s && rank < sample_count) {
      const sample<K> g = problem_samples[rank];
      const K* tile = keys + start;
      if (g.pos >= start && g.pos < start + length) {
        below = static_cast<unsigned>(g.pos - start);
      } else {
        // equal keys of this tile lie after the splitter (it is before the tile): lower
        // bound of g.key; or before it: upper bound
        const bool upper = g.pos >= start + length;
        unsigned lo = 0, hi = length;
        while (lo < hi) {
          const unsigned mid = (lo + hi) / 2;
          const bool left = upper ? !comp(g.key, tile[mid]) : comp(tile[mid], g.key);
          if (left) lo = mid + 1; else hi = mid;
        }
        below = lo;
      }
    }
    bounds[j - 1] = below;
  }
}

// The tiles of one block: problem p, tiles column, column + T, ... (more than one only for a
// problem larger than the level's cap, which random sampling can make).
struct block_tiles {
  index_t p, column, begin, size;
  __device__ block_tiles(const problem_list& probs, const sample_level& lv)
      : p(blockIdx.x / lv.tiles()), column(blockIdx.x % lv.tiles()), begin(probs.begin(p)),
        size(probs.end(p) - begin) {}
  __device__ unsigned length(index_t t, index_t M) const {
    return static_cast<unsigned>(size - t * M < M ? size - t * M : M);
  }
};

// Counts each tile's keys per bucket (summed over a block's tiles), bucket-major, and keeps
// the first tile's splitter positions for the scatter (s per tile).
template <int THREADS, int MAX_BUCKETS, class K, class Compare>
__global__ void __launch_bounds__(THREADS)
    sample_count_kernel(const K* keys, problem_list probs, sample_level lv,
                        const sample<K>* samples, index_t* counts, unsigned* tile_bounds,
                        Compare comp) {
  __shared__ unsigned bounds[MAX_BUCKETS + 1];
  __shared__ index_t total[MAX_BUCKETS];
  const block_tiles bt(probs, lv);
  const index_t T = lv.tiles(), M = lv.tile(), s = lv.buckets();
  if (threadIdx.x == 0) bounds[0] = 0;
  for (index_t j = threadIdx.x; j < s; j += THREADS) total[j] = 0;
  for (index_t t = bt.column; t * M < bt.size; t += T) {
    __syncthreads();
    splitter_bounds<THREADS>(keys, bt.begin + t * M, bt.length(t, M),
                             samples + lv.first_sample(bt.begin), lv.samples(bt.size), lv,
                             bounds + 1, comp);
    __syncthreads();
    for (index_t j = threadIdx.x; j < s; j += THREADS) {
      total[j] += bounds[j + 1] - bounds[j];
      if (t == bt.column) tile_bounds[blockIdx.x * s + j] = bounds[j + 1];
    }
  }
  __syncthreads();
  for (index_t j = threadIdx.x; j < s; j += THREADS)
    counts[lv.count_index(bt.p, j, bt.column)] = total[j];
}

// Moves every tile's runs to their buckets (offsets: the scanned counts). With `mirror` a
// key bound for position i goes to n - 1 - i: the buckets come out in descending order.
template <int THREADS, int MAX_BUCKETS, class K, class V, class Compare>
__global__ void __launch_bounds__(THREADS)
    sample_scatter_kernel(const K* keys, const V* values, K* out_keys, V* out_values,
                          problem_list probs, sample_level lv, const sample<K>* samples,
                          const index_t* offsets, const unsigned* tile_bounds, bool mirror,
                          Compare comp) {
  __shared__ unsigned bounds[MAX_BUCKETS + 1];
  __shared__ index_t dest[MAX_BUCKETS];
  const block_tiles bt(probs, lv);
  const index_t T = lv.tiles(), M = lv.tile();
  const unsigned s = static_cast<unsigned>(lv.buckets());
  const index_t last = probs.n - 1;
  if (threadIdx.x == 0) bounds[0] = 0;
  for (unsigned j = threadIdx.x; j < s; j += THREADS)
    dest[j] = offsets[lv.count_index(bt.p, j, bt.column)];
  for (index_t t = bt.column; t * M < bt.size; t += T) {
    const index_t start = bt.begin + t * M;
    const unsigned length = bt.length(t, M);
    __syncthreads();
    if (t == bt.column) {
      for (unsigned j = threadIdx.x; j < s; j += THREADS) bounds[j + 1] = tile_bounds[blockIdx.x * s + j];
    } else {
      splitter_bounds<THREADS>(keys, start, length, samples + lv.first_sample(bt.begin),
                               lv.samples(bt.size), lv, bounds + 1, comp);
    }
    __syncthreads();
    for (unsigned l = threadIdx.x; l < length; l += THREADS) {
      unsigned j = 0;  // the bucket with bounds[j] <= l < bounds[j + 1]
      for (unsigned step = s / 2; step > 0; step /= 2)
        if (bounds[j + step] <= l) j += step;
      index_t to = dest[j] + (l - bounds[j]);
      if (mirror) to = last - to;
      out_keys[to] = keys[start + l];
      if constexpr (block::has_values<K, V>) out_values[to] = values[start + l];
    }
    __syncthreads();
    for (unsigned j = threadIdx.x; j < s; j += THREADS) dest[j] += bounds[j + 1] - bounds[j];
  }
}

// ---- randomized sampling: keys classified by the splitters (Leischner et al.) ----------
// A level under randomized sampling sorts no tile: classify_count_kernel counts every tile's
// keys per bucket (index_math::classify, by key and position) and keeps each key's bucket, and
// classify_scatter_kernel moves them to those buckets in the other array (keys and the
// buffer take turns), in the tile's order within a bucket (deterministic).

// Threads of the classifying kernels (any tile size: a thread takes a key per round).
inline constexpr int classifying_threads = 256;

// Problem p's splitters for index_math::classify: copied to shared memory in the tree's order
// (node v at entry v: a warp's reads of one depth are neighbours, not one bank's) for keys of
// up to 32 bytes (the count kernel's static 48 KiB holds 1,024 of them with their positions),
// else read from the sorted samples where they lie. A splitter's position is
// read only when its key ties the key's.
template <int MAX_BUCKETS, class K>
struct splitter_table {
  static constexpr bool in_shared = sizeof(K) <= 32;
  struct storage {
    K keys[in_shared ? MAX_BUCKETS : 1];
    index_t positions[in_shared ? MAX_BUCKETS : 1];
  };
  storage& st;
  const sample<K>* samples;  // the problem's, sorted
  index_t count;             // S
  sample_level lv;
  unsigned finite;  // splitters 1..finite lie among the samples; the rest above every key

  // Fills the shared table: every thread of the block calls it; sync before bucket_of.
  __device__ splitter_table(storage& shared, const sample<K>* problem_samples,
                            index_t sample_count, const sample_level& level)
      : st(shared), samples(problem_samples), count(sample_count), lv(level),
        finite(static_cast<unsigned>(level.finite_splitters(sample_count))) {
    if constexpr (in_shared) {
      const auto bits = static_cast<unsigned>(lv.bucket_bits);
      for (unsigned v = threadIdx.x + 1; finite > 0 && v < (1u << bits); v += blockDim.x) {
        const sample<K>& g =
            samples[index_math::tree_sample_rank(lv, v, index_math::tree_depth(v), count, finite)];
        st.keys[v] = g.key;
        st.positions[v] = g.pos;
      }
    }
  }
  // One key's bucket from the splitters where they lie (keys above 32 bytes).
  template <class Compare>
  __device__ __forceinline__ unsigned bucket_of(const K& key, index_t pos, Compare comp) const {
    const auto bits = static_cast<unsigned>(lv.bucket_bits);
    return index_math::classify(bits, finite, [&](unsigned v, unsigned d) {
      const sample<K>& g = samples[index_math::tree_sample_rank(lv, v, d, count, finite)];
      return index_math::splitter_above(key, pos, g.key, g.pos, comp);
    });
  }
  // The buckets of N keys, live[i] saying which exist (~0u for the rest), key i at position
  // pos(i): the N descents interleaved (their loads in flight together), by the keys alone.
  // Where a lane of the warp met a splitter of its own key on the way, the warp descends again
  // by key and position, every step reading the splitter's position too (rare unless keys
  // repeat: with no tie on its path a key takes the same turns in both orders).
  template <int N, class Compare, class Position>
  __device__ __forceinline__ void buckets_of(const K (&key)[N], const bool (&live)[N],
                                             Position pos, unsigned (&bucket)[N],
                                             Compare comp) const {
    if constexpr (in_shared) {
      unsigned node[N];
      bool tie = false;
      descend<false>(key, pos, node, tie, comp);
      if (__any_sync(0xffffffffu, tie)) descend<true>(key, pos, node, tie, comp);
      const auto bits = static_cast<unsigned>(lv.bucket_bits);
      for (int i = 0; i < N; ++i)
        bucket[i] = !live[i] ? ~0u : finite == 0 ? 0u : min(node[i] - (1u << bits), finite);
    } else {
      for (int i = 0; i < N; ++i) bucket[i] = live[i] ? bucket_of(key[i], pos(i), comp) : ~0u;
    }
  }
  // N interleaved descents of the shared tree: BY_POSITION, in the (key, position) order;
  // else by key, `tie` set where a key met a splitter of its own key.
  template <bool BY_POSITION, int N, class Compare, class Position>
  __device__ __forceinline__ void descend(const K (&key)[N], Position pos, unsigned (&node)[N],
                                          bool& tie, Compare comp) const {
    const auto bits = static_cast<unsigned>(lv.bucket_bits);
    for (int i = 0; i < N; ++i) node[i] = 1;
#pragma unroll
    for (unsigned d = 0; d < 10; ++d) {
      if (d >= bits || finite == 0) break;
      for (int i = 0; i < N; ++i) {
        if constexpr (BY_POSITION) {
          const K g = st.keys[node[i]];
          bool above = comp(key[i], g);
          above |= !above & !comp(g, key[i]) & (pos(i) < st.positions[node[i]]);
          node[i] = 2 * node[i] + (above ? 0u : 1u);
        } else {
          node[i] = index_math::descend_by_key(node[i], key[i], st.keys[node[i]], tie, comp);
        }
      }
    }
  }
};

// The lanes of the warp whose label (below 2^bits; ~0u: no label, in no lane's set) equals
// this lane's, found a ballot a bit (as CUB's radix ranking does for its digits) rather than
// by __match_any_sync.
static __device__ __forceinline__ unsigned lanes_with_label(unsigned label, unsigned bits) {
  unsigned peers = __ballot_sync(0xffffffffu, label != ~0u);
#pragma unroll
  for (unsigned b = 0; b < 10; ++b) {
    if (b >= bits) break;
    const bool one = (label >> b) & 1u;
    const unsigned ones = __ballot_sync(0xffffffffu, one);
    peers &= one ? ones : ~ones;
  }
  return peers;
}

// Adds a warp's keys to their buckets' counts (shared), one atomic per run of lanes with one
// bucket: sorted runs and equal keys (split by position, so neighbours share a bucket) would
// otherwise make up to 32 lanes wait on one address. Lanes without a key pass ~0u.
static __device__ __forceinline__ void count_warp_buckets(unsigned* total, unsigned bucket) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned before = __shfl_up_sync(0xffffffffu, bucket, 1);
  const unsigned heads = __ballot_sync(0xffffffffu, lane == 0 || before != bucket);
  if (bucket == ~0u || !((heads >> lane) & 1u)) return;
  const unsigned later = heads & ~((2u << lane) - 1u);  // 2u << 31 wraps to 0: no later head
  const unsigned next = later ? static_cast<unsigned>(__ffs(later)) - 1 : 32u;
  atomicAdd(&total[bucket], next - lane);
}

// Counts each tile's keys per bucket (summed over a block's tiles), bucket-major, and keeps
// each key's bucket (2 bytes a key) so the scatter does not classify again. A thread loads
// ITEMS keys a round before it classifies them (loads in flight together).
template <int THREADS, int MAX_BUCKETS, class K, class Compare>
__global__ void __launch_bounds__(THREADS)
    classify_count_kernel(const K* keys, problem_list probs, sample_level lv,
                          const sample<K>* samples, index_t* counts, std::uint16_t* buckets,
                          Compare comp) {
  constexpr unsigned ITEMS = sizeof(K) <= 8 ? 4 : 2, round = THREADS * ITEMS;
  using table_t = splitter_table<MAX_BUCKETS, K>;
  __shared__ typename table_t::storage table_storage;
  __shared__ unsigned total[MAX_BUCKETS];
  const block_tiles bt(probs, lv);
  const index_t T = lv.tiles(), M = lv.tile();
  const unsigned s = static_cast<unsigned>(lv.buckets());
  for (unsigned j = threadIdx.x; j < s; j += THREADS) total[j] = 0;
  const table_t table(table_storage, samples + lv.first_sample(bt.begin), lv.sorted_samples(bt.size),
                      lv);
  __syncthreads();
  for (index_t t = bt.column; t * M < bt.size; t += T) {
    const index_t start = bt.begin + t * M;
    const unsigned length = bt.length(t, M);
    for (unsigned first = 0; first < length; first += round) {
      K key[ITEMS];
      for (unsigned i = 0; i < ITEMS; ++i) {
        const unsigned l = first + i * THREADS + threadIdx.x;
        if (l < length) key[i] = keys[start + l];
      }
      bool live[ITEMS];
      unsigned bucket[ITEMS];
      for (unsigned i = 0; i < ITEMS; ++i) live[i] = first + i * THREADS + threadIdx.x < length;
      const auto position = [&](unsigned i) { return start + first + i * THREADS + threadIdx.x; };
      table.buckets_of(key, live, position, bucket, comp);
      for (unsigned i = 0; i < ITEMS; ++i) {
        count_warp_buckets(total, bucket[i]);
        if (live[i]) buckets[position(i)] = static_cast<std::uint16_t>(bucket[i]);
      }
    }
  }
  __syncthreads();
  for (unsigned j = threadIdx.x; j < s; j += THREADS)
    counts[lv.count_index(bt.p, j, bt.column)] = total[j];
}

// classify_scatter_kernel's shared memory (dynamic: above the static 48 KiB for some keys):
// a chunk of THREADS * ITEMS keys ordered by bucket, each slot's bucket and (pairs) its place
// in the chunk, per-warp bucket counts, and the block's destinations.
template <int THREADS, int ITEMS, int MAX_BUCKETS, class K, class V>
struct classify_scatter_storage {
  static constexpr int chunk = THREADS * ITEMS, warps = THREADS / 32;
  K keys[chunk];
  std::uint16_t bucket[chunk];
  std::uint16_t from[block::has_values<K, V> ? chunk : 1];
  // Warp w's keys of bucket j in the chunk, then the chunk slot of its first one.
  alignas(16) std::uint16_t ahead[warps][MAX_BUCKETS];
  unsigned start[MAX_BUCKETS + 1];  // the chunk's first slot of bucket j
  index_t dest[MAX_BUCKETS];        // where the tile's next key of bucket j goes
};

// Keys a thread of the scatter moves at once: 8 of up to 8 bytes (a chunk of 2,048 with 256
// threads), 4 of up to 16, else 2.
template <class K>
inline constexpr int classify_items = sizeof(K) <= 8 ? 8 : sizeof(K) <= 16 ? 4 : 2;

// The scatter's steps for one chunk of a tile (classify_scatter_kernel below), each by the
// whole block between barriers.

// Loads the chunk's keys and their buckets, ITEMS a thread (warp w the w-th part of the chunk,
// 32 consecutive keys an item), and ranks each key among its warp's keys of its bucket so far
// (st.ahead[w][bucket] counts them: zeroed before).
template <int ITEMS, class Storage, class K>
__device__ __forceinline__ void load_and_rank(const K* chunk_keys, const std::uint16_t* chunk_buckets,
                                              unsigned count, unsigned bucket_bits, Storage& st,
                                              K (&key)[ITEMS], unsigned (&bucket)[ITEMS],
                                              unsigned (&rank)[ITEMS]) {
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  bool live[ITEMS];
  for (int i = 0; i < ITEMS; ++i) {  // the loads first, in flight together
    const unsigned c = warp * 32 * ITEMS + i * 32 + lane;  // the key's place in the chunk
    live[i] = c < count;
    bucket[i] = ~0u;
    if (live[i]) {
      key[i] = chunk_keys[c];
      bucket[i] = chunk_buckets[c];
    }
  }
  for (int i = 0; i < ITEMS; ++i) {
    const unsigned same = lanes_with_label(bucket[i], bucket_bits);
    const unsigned before = __popc(same & ((1u << lane) - 1));
    const unsigned so_far = live[i] ? st.ahead[warp][bucket[i]] : 0u;
    rank[i] = so_far + before;
    __syncwarp();
    if (live[i] && before == 0)
      st.ahead[warp][bucket[i]] = static_cast<std::uint16_t>(so_far + __popc(same));
    __syncwarp();
  }
}

// The chunk's buckets in order: st.start[j], the chunk's first slot of bucket j (st.start[s] =
// count), and st.ahead[w][j] turned from warp w's count into its first slot in bucket j
// (bucket-major). Thread u takes buckets 4u..4u+3 (a row's 4 counts one 8-byte load; entries
// from s on are zero), sums them over the warps, and the block scans the threads' sums.
template <int THREADS, int MAX_BUCKETS, class Storage>
__device__ __forceinline__ void bucket_starts(
    Storage& st, typename cub::BlockScan<unsigned, THREADS>::TempStorage& scan_storage,
    unsigned s, unsigned count) {
  static_assert(MAX_BUCKETS == 4 * THREADS, "a thread scans 4 buckets");
  const bool scans = 4 * threadIdx.x < s;
  unsigned sum[4] = {0, 0, 0, 0};  // bucket 4u + k's keys over the warps
  for (unsigned w = 0; scans && w < Storage::warps; ++w) {
    const ushort4 c = reinterpret_cast<const ushort4*>(st.ahead[w])[threadIdx.x];
    sum[0] += c.x;
    sum[1] += c.y;
    sum[2] += c.z;
    sum[3] += c.w;
  }
  unsigned base = 0;
  cub::BlockScan<unsigned, THREADS>(scan_storage).ExclusiveSum(sum[0] + sum[1] + sum[2] + sum[3], base);
  unsigned at[4];
  for (unsigned k = 0; k < 4; ++k) {
    at[k] = base;
    base += sum[k];
    if (4 * threadIdx.x + k < s) st.start[4 * threadIdx.x + k] = at[k];
  }
  for (unsigned w = 0; scans && w < Storage::warps; ++w) {
    ushort4& row = reinterpret_cast<ushort4*>(st.ahead[w])[threadIdx.x];
    const ushort4 c = row;
    row = make_ushort4(static_cast<std::uint16_t>(at[0]), static_cast<std::uint16_t>(at[1]),
                       static_cast<std::uint16_t>(at[2]), static_cast<std::uint16_t>(at[3]));
    at[0] += c.x;
    at[1] += c.y;
    at[2] += c.z;
    at[3] += c.w;
  }
  if (threadIdx.x == 0) st.start[s] = count;
}

// Each loaded key to its slot in the chunk ordered by bucket, with its bucket and (pairs) its
// place in the chunk.
template <int ITEMS, bool PAIRS, class Storage, class K>
__device__ __forceinline__ void place_in_chunk(Storage& st, unsigned count, const K (&key)[ITEMS],
                                               const unsigned (&bucket)[ITEMS],
                                               const unsigned (&rank)[ITEMS]) {
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int i = 0; i < ITEMS; ++i) {
    const unsigned c = warp * 32 * ITEMS + i * 32 + lane;
    if (c >= count) continue;
    const unsigned slot = st.ahead[warp][bucket[i]] + rank[i];
    st.keys[slot] = key[i];
    st.bucket[slot] = static_cast<std::uint16_t>(bucket[i]);
    if constexpr (PAIRS) st.from[slot] = static_cast<std::uint16_t>(c);
  }
}

// Moves every tile's keys to their buckets (offsets: the scanned counts; buckets: each key's,
// as classify_count_kernel found it), in the tile's order within a bucket, a chunk at a time:
// the warps' counts per bucket give every key its slot in the chunk ordered by bucket (shared
// memory), and the chunk is written out from there, each bucket's keys of the chunk one
// contiguous run (coalesced stores). With `mirror` a key bound for position i goes to
// n - 1 - i.
template <int THREADS, int MAX_BUCKETS, class K, class V>
__global__ void __launch_bounds__(THREADS)
    classify_scatter_kernel(const K* keys, const V* values, K* out_keys, V* out_values,
                            problem_list probs, sample_level lv, const std::uint16_t* buckets,
                            const index_t* offsets, bool mirror) {
  constexpr int ITEMS = classify_items<K>;
  constexpr bool pairs = block::has_values<K, V>;
  using storage_t = classify_scatter_storage<THREADS, ITEMS, MAX_BUCKETS, K, V>;
  constexpr unsigned chunk = storage_t::chunk, warps = storage_t::warps;
  __shared__ typename cub::BlockScan<unsigned, THREADS>::TempStorage scan_storage;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  storage_t& st = *reinterpret_cast<storage_t*>(shared_bytes);
  const block_tiles bt(probs, lv);
  const index_t T = lv.tiles(), M = lv.tile(), last = probs.n - 1;
  const unsigned s = static_cast<unsigned>(lv.buckets());
  for (unsigned j = threadIdx.x; j < s; j += THREADS)
    st.dest[j] = offsets[lv.count_index(bt.p, j, bt.column)];
  for (index_t t = bt.column; t * M < bt.size; t += T) {
    const index_t tile_start = bt.begin + t * M;
    const unsigned length = bt.length(t, M);
    for (unsigned first = 0; first < length; first += chunk) {
      const unsigned count = min(chunk, length - first);
      // Zeroed 8 counts (16 bytes) a store: the rows' first s entries rounded up to 8.
      const unsigned row_vectors = (s + 7) / 8;
      for (unsigned i = threadIdx.x; i < warps * row_vectors; i += THREADS)
        reinterpret_cast<uint4*>(st.ahead[i / row_vectors])[i % row_vectors] = uint4{0, 0, 0, 0};
      __syncthreads();  // the zeroed counts, the last chunk written
      K key[ITEMS];
      unsigned bucket[ITEMS], rank[ITEMS];
      load_and_rank<ITEMS>(keys + tile_start + first, buckets + tile_start + first, count,
                           static_cast<unsigned>(lv.bucket_bits), st, key, bucket, rank);
      __syncthreads();
      bucket_starts<THREADS, MAX_BUCKETS>(st, scan_storage, s, count);
      __syncthreads();
      place_in_chunk<ITEMS, pairs>(st, count, key, bucket, rank);
      __syncthreads();
      for (unsigned slot = threadIdx.x; slot < count; slot += THREADS) {
        const unsigned b = st.bucket[slot];
        index_t to = st.dest[b] + (slot - st.start[b]);
        if (mirror) to = last - to;
        out_keys[to] = st.keys[slot];
        if constexpr (pairs) out_values[to] = values[tile_start + first + st.from[slot]];
      }
      __syncthreads();
      for (unsigned j = threadIdx.x; j < s; j += THREADS) st.dest[j] += st.start[j + 1] - st.start[j];
    }
  }
}

// The dynamic shared memory of classify_scatter_kernel.
template <int THREADS, int MAX_BUCKETS, class K, class V>
inline constexpr std::size_t classify_scatter_smem =
    sizeof(classify_scatter_storage<THREADS, classify_items<K>, MAX_BUCKETS, K, V>);

// Randomized sampling sorts each problem's samples in one block (CUB's block merge sort in
// dynamic shared memory) instead of all levels' samples by CUB's device merge sort, whose
// launches and passes cost more than the classification at 2^24 and grow with the samples
// (a level of 2^28 u32 keys has 8 M of them): `items` samples a thread, up to 512 threads
// (128 KiB of samples: 8,192 of 4-byte keys) where a problem has many, up to 128 where the
// plan's problems have no more. A problem with more samples than a block holds sorts an even
// subset (index_math::kept_sample).
template <class K>
struct problem_sample_sort {
  static constexpr int items = std::clamp(static_cast<int>(256 / sizeof(sample<K>)), 1, 16);
  static constexpr int large_threads = [] {
    int t = 512;
    while (t > 32 && static_cast<std::size_t>(t) * items * sizeof(sample<K>) > 128 * 1024) t /= 2;
    return t;
  }();
  static constexpr int small_threads = large_threads < 128 ? large_threads : 128;
  template <int THREADS>
  static constexpr index_t cap = index_t{THREADS} * items;
  template <int THREADS>
  static constexpr std::size_t smem =
      sizeof(typename cub::BlockMergeSort<sample<K>, THREADS, items>::TempStorage);
};

// Sorts problem p's kept samples (lv.sorted_samples: all of them, or an even subset) into its
// first sample slots, ordered by key and position (`less`); one block a problem.
template <int THREADS, class K, class Compare>
__global__ void __launch_bounds__(THREADS)
    sort_problem_samples_kernel(sample<K>* samples, problem_list probs, sample_level lv,
                                index_math::sample_less<Compare> less) {
  constexpr int ITEMS = problem_sample_sort<K>::items;
  using sort_t = cub::BlockMergeSort<sample<K>, THREADS, ITEMS>;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  auto& storage = *reinterpret_cast<typename sort_t::TempStorage*>(shared_bytes);
  const index_t begin = probs.begin(blockIdx.x), size = probs.end(blockIdx.x) - begin;
  const index_t S = lv.samples(size), kept = lv.sorted_samples(size);
  if (kept < 2) return;  // nothing to order (the whole block returns)
  sample<K>* first = samples + lv.first_sample(begin);
  sample<K> item[ITEMS];
  for (int i = 0; i < ITEMS; ++i) {  // blocked: thread u holds u * ITEMS ..
    const index_t j = static_cast<index_t>(threadIdx.x) * ITEMS + i;
    item[i] = first[index_math::kept_sample(j < kept ? j : 0, S, kept)];
  }
  // Every read is done before the sort's first barrier, so the writes below overwrite nothing
  // a thread has yet to read.
  sort_t(storage).Sort(item, less, static_cast<int>(kept), item[0]);
  for (int i = 0; i < ITEMS; ++i) {
    const index_t j = static_cast<index_t>(threadIdx.x) * ITEMS + i;
    if (j < kept) first[j] = item[i];
  }
}

// The final buckets as segment bounds for the segmented sort; with `largest`, also the size
// of the largest (a test hook: the bound is checked on the device).
// `mirror`: the buckets lie mirrored, bucket q at [n - end(q), n - begin(q)).
static __global__ void bucket_segments_kernel(problem_list buckets, bool mirror, index_t* begin,
                                              index_t* end, unsigned long long* largest) {
  const index_t q = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (q >= buckets.count) return;
  const index_math::key_range r = index_math::final_bucket_range(buckets, q, mirror);
  if (begin) {
    begin[q] = r.begin;
    end[q] = r.end;
  }
  if (largest) atomicMax(largest, static_cast<unsigned long long>(r.end - r.begin));
}

// A tile of twice the items a thread: the final buckets that overflowed their tile. Its
// shared memory (twice the tile's) is dynamic; where that would pass 200 KiB (records of over
// 3 KiB), buckets above a tile go to the segmented sort (cap: the tile).
template <class Policy>
struct twice_tile_policy : Policy {
  static constexpr int items = 2 * Policy::items;
};
template <class Policy, class K, class V>
inline constexpr int twice_tile_smem =
    static_cast<int>(sizeof(typename tile_merge_sort<twice_tile_policy<Policy>, K, V>::storage));
template <class Policy, class K, class V>
inline constexpr index_t twice_tile_cap =
    twice_tile_smem<Policy, K, V> <= 200 * 1024 ? 2 * Policy::final_cap : Policy::final_cap;

// Merge-sorted tiles only: each block sorts one final bucket of at most a tile in place
// (mirrored like bucket_segments_kernel); one of up to twice a tile (randomized sampling, or a
// plan that ran out of levels) it lists for sample_twice_tile_kernel, a larger one it leaves
// to the segmented sort: its segment is the bucket, every other segment is empty.
template <class Policy, class K, class V, class Compare>
__global__ void __launch_bounds__(Policy::threads)
    sample_bucket_kernel(K* keys, V* values, problem_list buckets, bool mirror, index_t* begin,
                         index_t* end, index_t* twice_list, unsigned* twice_listed, Compare comp) {
  using tile_sort = tile_merge_sort<Policy, K, V>;
  __shared__ typename tile_sort::storage smem;
  const index_t q = blockIdx.x;
  const index_math::key_range r = index_math::final_bucket_range(buckets, q, mirror);
  const index_t size = r.end - r.begin;
  const index_math::bucket_sorter by =
      index_math::records_bucket_sorter(size, Policy::final_cap, twice_tile_cap<Policy, K, V>);
  if (threadIdx.x == 0) {
    begin[q] = r.begin;
    end[q] = by == index_math::bucket_sorter::segmented ? r.end : r.begin;
    if (by == index_math::bucket_sorter::twice_tile) twice_list[atomicAdd(twice_listed, 1u)] = q;
  }
  if (by == index_math::bucket_sorter::tile && size > 1)
    tile_sort::sort(smem, keys + r.begin, at(values, r.begin), keys + r.begin,
                    at(values, r.begin), static_cast<int>(size), comp);
}

// The final buckets sample_bucket_kernel listed (more than a tile, at most two): a persistent
// grid walks the list, each block sorting a bucket in place as one merge-sorted tile of twice
// the items a thread, in dynamic shared memory (twice the tile's).
template <class Policy, class K, class V, class Compare>
__global__ void __launch_bounds__(Policy::threads)
    sample_twice_tile_kernel(K* keys, V* values, problem_list buckets, bool mirror,
                             const index_t* twice_list, const unsigned* twice_listed,
                             Compare comp) {
  using tile_sort = tile_merge_sort<twice_tile_policy<Policy>, K, V>;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  auto& smem = *reinterpret_cast<typename tile_sort::storage*>(shared_bytes);
  const unsigned listed = *twice_listed;
  for (unsigned i = blockIdx.x; i < listed; i += gridDim.x) {
    const index_math::key_range r = index_math::final_bucket_range(buckets, twice_list[i], mirror);
    tile_sort::sort(smem, keys + r.begin, at(values, r.begin), keys + r.begin,
                    at(values, r.begin), static_cast<int>(r.end - r.begin), comp);
    __syncthreads();  // the next bucket's load reuses the shared memory
  }
}

// Most tile slots (runs) a final bucket is merged from: log2 of it merge rounds in shared
// memory. Above it the final buckets are sorted as before. Measured on H200s
// (docs/sample_sort.md): records gain 1.2-1.5x end to end at 2-16 runs; keys of up to 8 bytes
// gained at 4 runs (u32 2^16, which now takes the bitonic network whole), break even at 8
// (2^24) and lose at 32 (u32 2^26: 5.60 ms merged, 4.29 sorted), where the bitonic tile
// network beats five rounds of merge-path searches.
inline constexpr index_t most_merged_runs = 64;
inline constexpr index_t most_merged_key_runs = 8;

// The shared memory of merge_bucket_runs_kernel: its run bounds (static), and two buffers of
// `cap` keys (and values), the dynamic part.
inline constexpr std::size_t merge_bucket_static_smem = sizeof(index_t) * (most_merged_runs + 1);
template <class K, class V>
constexpr std::size_t merge_bucket_smem_bytes(index_t cap) {
  const std::size_t keys = (2 * sizeof(K) * cap + 15) / 16 * 16;
  return keys + (block::has_values<K, V> ? 2 * sizeof(V) * cap : 0);
}

// Each block merges one final bucket (at most `cap` keys) from its runs, the last level's share
// of every tile slot of its problem (sorted runs under regular sampling: docs/sample_sort.md):
// loaded into shared memory, merged in rounds of pairwise merges (index_math/merge_runs.hpp),
// each thread a range of the outputs, between two buffers, and stored back. buckets: the last
// level's scanned counts (bucket q's run t starts at offsets[q * stride + t], stride = its
// tile slots). `mirror`: the buckets lie mirrored (a descending sort), each run reversed and
// the runs in reverse order; comp is then the reversed order.
template <int THREADS, class K, class V, class Compare>
__global__ void __launch_bounds__(THREADS)
    merge_bucket_runs_kernel(K* keys, V* values, problem_list buckets, index_t cap, bool mirror,
                             Compare comp) {
  extern __shared__ __align__(16) unsigned char merge_smem[];
  __shared__ index_t runs[merge_bucket_static_smem / sizeof(index_t)];
  constexpr bool pairs = block::has_values<K, V>;
  using value_t = std::conditional_t<pairs, std::remove_const_t<V>, char>;
  const index_t q = blockIdx.x, slots = buckets.stride;
  const index_t b = buckets.begin(q), e = buckets.end(q);
  const index_t first = mirror ? buckets.n - e : b, length = e - b;
  if (length < 2) return;
  K* key_buffer[2] = {reinterpret_cast<K*>(merge_smem), reinterpret_cast<K*>(merge_smem) + cap};
  value_t* value_buffer[2] = {nullptr, nullptr};
  if constexpr (pairs) {
    value_buffer[0] = reinterpret_cast<value_t*>(merge_smem + (2 * sizeof(K) * cap + 15) / 16 * 16);
    value_buffer[1] = value_buffer[0] + cap;
  }
  for (index_t r = threadIdx.x; r <= slots; r += THREADS)
    runs[r] = index_math::final_bucket_run_bound(buckets, q, r, mirror);
  for (index_t i = threadIdx.x; i < length; i += THREADS) {
    key_buffer[0][i] = keys[first + i];
    if constexpr (pairs) value_buffer[0][i] = values[first + i];
  }
  __syncthreads();
  const index_t per_thread = (length + THREADS - 1) / THREADS;
  const index_t mine = threadIdx.x * per_thread;
  const index_t mine_end = mine + per_thread < length ? mine + per_thread : length;
  int from = 0;
  for (index_t count = slots; count > 1; count = (count + 1) / 2) {
    const K* from_keys = key_buffer[from];
    K* to_keys = key_buffer[1 - from];
    const value_t* from_values = value_buffer[from];
    value_t* to_values = value_buffer[1 - from];
    if (mine < length)
      index_math::merge_round_part(
          runs, count, mine, mine_end, [&](index_t i) -> const K& { return from_keys[i]; },
          [&](index_t at, index_t to) {
            to_keys[to] = from_keys[at];
            if constexpr (pairs) to_values[to] = from_values[at];
          },
          comp);
    __syncthreads();  // every output of the round written, every bound read
    if (threadIdx.x == 0) index_math::next_merge_round(runs, count);
    __syncthreads();
    from = 1 - from;
  }
  for (index_t i = threadIdx.x; i < length; i += THREADS) {
    keys[first + i] = key_buffer[from][i];
    if constexpr (pairs) values[first + i] = value_buffer[from][i];
  }
}

}  // namespace gpusort::detail::device
