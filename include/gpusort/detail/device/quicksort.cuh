// GPU quicksort (Cederman & Tsigas), the baseline of the Capannini and Peters papers.
//
// Rounds (index_math/quicksort.hpp) of three kernels, all on persistent grids that read their
// work from device memory, so the host only queues max_rounds rounds and never waits:
//  1. count:   each block takes a chunk of a sequence, counts its keys below, equal to and
//              above the pivot and their smallest and largest, and reserves its places in
//              the sequence's three parts with atomic adds (the paper's atomic prefix sum);
//  2. scatter: it reads the chunk again and writes each key (and value) to its place in the
//              other buffer; equal keys already in the keys buffer are not moved. Its threads
//              first split the sequences: one per sequence decides the fate of its three
//              parts: finished on chip, partitioned in the next round (pivot: the midpoint of
//              the part's keys), or done;
//  3. finish:  a block per small part sorts it in shared memory (block bitonic sort) into
//              its place in the keys buffer.
// Equal keys end up in their own part and are never touched again, so an array of equal keys
// costs one reading pass: the algorithm's best case, as the paper says.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "gpusort/detail/block/block_bitonic_sort.cuh"
#include "gpusort/detail/device/launch.cuh"
#include "gpusort/detail/index_math/quicksort.hpp"
#include "gpusort/key_traits.hpp"

namespace gpusort::detail::device {

namespace qs = index_math::quicksort;

template <class U>
struct qs_sequence {
  qs::index_t begin, size, first_chunk;
  U pivot;
  unsigned in_spare;
};

// A sequence's partition, summed over its chunks: the keys of each class (below, equal to,
// above the pivot) and the smallest and largest of classes 0 and 2.
template <class U>
struct qs_stats {
  unsigned long long count[3];
  U lo[3], hi[3];
};

struct qs_part {
  qs::index_t begin, size;
  unsigned in_spare;
};

// The lists' fill levels: packed reservations (index_math/quicksort.hpp) of the sequences of
// the rounds of each parity, and the parts to finish after the current round.
struct qs_state {
  unsigned long long sequences[2];
  unsigned long long finishes;
};

// The keys buffer [0] and the spare [1].
template <class K, class V>
struct qs_buffers {
  K* keys[2];
  V* values[2];
};

template <class U>
__device__ void qs_atomic_min(U* at, U v) {
  if constexpr (sizeof(U) == 4)
    atomicMin(reinterpret_cast<unsigned*>(at), static_cast<unsigned>(v));
  else
    atomicMin(reinterpret_cast<unsigned long long*>(at), static_cast<unsigned long long>(v));
}
template <class U>
__device__ void qs_atomic_max(U* at, U v) {
  if constexpr (sizeof(U) == 4)
    atomicMax(reinterpret_cast<unsigned*>(at), static_cast<unsigned>(v));
  else
    atomicMax(reinterpret_cast<unsigned long long*>(at), static_cast<unsigned long long>(v));
}

template <class U>
__device__ void qs_reset_stats(qs_stats<U>& s) {
  for (int c = 0; c < 3; ++c) {
    s.count[c] = 0;
    s.lo[c] = static_cast<U>(~U{0});
    s.hi[c] = 0;
  }
}

template <class K>
__device__ auto qs_ordered(const K& k, typename key_traits<K>::ordered_type flip) {
  return static_cast<typename key_traits<K>::ordered_type>(key_traits<K>::ordered(k) ^ flip);
}

// The slot of the sequence that chunk c belongs to: the last one whose first chunk <= c.
template <class U>
__device__ qs::index_t qs_find_sequence(const qs_sequence<U>* seqs, qs::index_t count,
                                        qs::index_t c) {
  qs::index_t lo = 0, hi = count;
  while (hi - lo > 1) {
    const qs::index_t mid = (lo + hi) / 2;
    if (seqs[mid].first_chunk <= c) lo = mid; else hi = mid;
  }
  return lo;
}

// Keys [begin, end) of chunk c of sequence `s`.
template <class U>
struct qs_chunk {
  qs::index_t slot, begin, end;
  __device__ qs_chunk(const qs_sequence<U>* seqs, qs::index_t count, qs::index_t c)
      : slot(qs_find_sequence(seqs, count, c)) {
    const qs_sequence<U>& s = seqs[slot];
    begin = s.begin + (c - s.first_chunk) * qs::chunk_size;
    const qs::index_t last = s.begin + s.size;
    end = begin + qs::chunk_size < last ? begin + qs::chunk_size : last;
  }
};

template <class K, class V>
__global__ void qs_start_kernel(const K* keys, qs::index_t n,
                                qs_sequence<typename key_traits<K>::ordered_type>* seqs,
                                qs_stats<typename key_traits<K>::ordered_type>* stats,
                                qs_state* state, typename key_traits<K>::ordered_type flip) {
  seqs[0] = {0, n, 0,
             qs::median_of_three(qs_ordered(keys[0], flip), qs_ordered(keys[n / 2], flip),
                                 qs_ordered(keys[n - 1], flip)),
             0};
  qs_reset_stats(stats[0]);
  state->sequences[0] = qs::reservation(qs::chunks_of(n));
  state->sequences[1] = 0;
  state->finishes = 0;
}

template <class K, class V>
__global__ __launch_bounds__(qs::partition_threads) void qs_count_kernel(
    qs_buffers<K, V> buf, const qs_sequence<typename key_traits<K>::ordered_type>* seqs,
    qs_stats<typename key_traits<K>::ordered_type>* stats, unsigned long long* chunk_offsets,
    qs_state* state, int parity, typename key_traits<K>::ordered_type flip) {
  using U = typename key_traits<K>::ordered_type;
  using counts_reduce = cub::BlockReduce<unsigned long long, qs::partition_threads>;
  using bound_reduce = cub::BlockReduce<U, qs::partition_threads>;
  __shared__ union {
    typename counts_reduce::TempStorage counts;
    typename bound_reduce::TempStorage bounds;
  } temp;
  const unsigned long long listed = state->sequences[parity];
  // Nothing reads the other parity's list or the finish list before this round's split.
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    state->sequences[parity ^ 1] = 0;
    state->finishes = 0;
  }
  const qs::index_t count = qs::reserved_sequences(listed), chunks = qs::reserved_chunks(listed);
  for (qs::index_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const qs_chunk<U> chunk(seqs, count, c);
    const qs_sequence<U> s = seqs[chunk.slot];
    const K* src = buf.keys[s.in_spare];
    unsigned long long classes = 0;
    U lo[2] = {static_cast<U>(~U{0}), static_cast<U>(~U{0})}, hi[2] = {0, 0};
    for (qs::index_t i = chunk.begin + threadIdx.x; i < chunk.end; i += qs::partition_threads) {
      const U key = qs_ordered(src[i], flip);
      const int k = qs::class_of(key, s.pivot);
      classes += qs::class_unit(k);
      if (k != 1) {
        lo[k / 2] = key < lo[k / 2] ? key : lo[k / 2];
        hi[k / 2] = key > hi[k / 2] ? key : hi[k / 2];
      }
    }
    const unsigned long long total = counts_reduce(temp.counts).Sum(classes);
    U block_lo[2], block_hi[2];
    for (int side = 0; side < 2; ++side) {
      __syncthreads();
      block_lo[side] = bound_reduce(temp.bounds).Reduce(lo[side], [](U a, U b) { return a < b ? a : b; });
      __syncthreads();
      block_hi[side] = bound_reduce(temp.bounds).Reduce(hi[side], [](U a, U b) { return a < b ? b : a; });
    }
    if (threadIdx.x == 0) {
      qs_stats<U>& st = stats[chunk.slot];
      for (int k = 0; k < 3; ++k) {
        const unsigned long long keys_of_class = qs::class_count(total, k);
        chunk_offsets[3 * c + k] = keys_of_class ? atomicAdd(&st.count[k], keys_of_class) : 0;
        if (keys_of_class && k != 1) {
          qs_atomic_min(&st.lo[k], block_lo[k / 2]);
          qs_atomic_max(&st.hi[k], block_hi[k / 2]);
        }
      }
    }
    __syncthreads();
  }
}

// Where a round's split puts the next round's sequences and the parts to finish.
template <class U>
struct qs_next {
  qs_sequence<U>* seqs;
  qs_stats<U>* stats;
  qs_part* finishes;
};

// The fate of sequence i's three parts, once its sums are complete.
template <class U>
__device__ void qs_split(const qs_sequence<U>& s, const qs_stats<U>& st, qs_next<U> next,
                         qs_state* state, int parity) {
  const bool moved = st.count[0] + st.count[2] > 0 || s.in_spare;
  const bool in_spare = moved && !s.in_spare;
  qs::index_t begin = s.begin;
  for (int k = 0; k < 3; ++k) {
    const qs::index_t size = st.count[k];
    const U lo = k == 1 ? s.pivot : st.lo[k], hi = k == 1 ? s.pivot : st.hi[k];
    switch (qs::part_fate(size, lo == hi, in_spare)) {
      case qs::fate::done: break;
      case qs::fate::finish:
        next.finishes[atomicAdd(&state->finishes, 1ull)] = {begin, size, in_spare};
        break;
      case qs::fate::partition: {
        const unsigned long long at =
            atomicAdd(&state->sequences[parity ^ 1], qs::reservation(qs::chunks_of(size)));
        const qs::index_t slot = qs::reserved_sequences(at);
        next.seqs[slot] = {begin, size, qs::reserved_chunks(at),
                           lo == hi ? lo : qs::midpoint(lo, hi), in_spare};
        qs_reset_stats(next.stats[slot]);
        break;
      }
    }
    begin += size;
  }
}

// The scatter's staging area: a chunk of keys, then of values.
template <class K, class V>
constexpr int qs_stage_bytes =
    int(qs::chunk_size) * int(std::is_same_v<V, no_value> || sizeof(K) > sizeof(V) ? sizeof(K)
                                                                                 : sizeof(V));

template <class K, class V>
__global__ __launch_bounds__(qs::partition_threads, 4) void qs_scatter_kernel(
    qs_buffers<K, V> buf, const qs_sequence<typename key_traits<K>::ordered_type>* seqs,
    const qs_stats<typename key_traits<K>::ordered_type>* stats,
    const unsigned long long* chunk_offsets, qs_next<typename key_traits<K>::ordered_type> next,
    qs_state* state, int parity, typename key_traits<K>::ordered_type flip) {
  using U = typename key_traits<K>::ordered_type;
  constexpr bool has_values = !std::is_same_v<V, no_value>;
  constexpr int items = qs::partition_items;
  using scan = cub::BlockScan<unsigned long long, qs::partition_threads>;
  __shared__ typename scan::TempStorage temp;
  extern __shared__ __align__(16) unsigned char shared_bytes[];  // qs_stage_bytes<K, V>
  const unsigned long long listed = state->sequences[parity];
  const qs::index_t count = qs::reserved_sequences(listed), chunks = qs::reserved_chunks(listed);
  // The sums are complete once the count kernel is: the split needs no launch of its own.
  for (qs::index_t i = blockIdx.x * qs::index_t{blockDim.x} + threadIdx.x; i < count;
       i += qs::index_t{gridDim.x} * blockDim.x)
    qs_split(seqs[i], stats[i], next, state, parity);
  for (qs::index_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const qs_chunk<U> chunk(seqs, count, c);
    const qs_sequence<U> s = seqs[chunk.slot];
    const qs_stats<U>& st = stats[chunk.slot];
    if (!s.in_spare && st.count[0] + st.count[2] == 0) continue;  // equal keys, in place
    const K* src = buf.keys[s.in_spare];
    // Thread t takes keys t, t + threads, ... of the chunk (coalesced reads); one block-wide
    // prefix sum of the packed class counts gives every key its rank in its class.
    K keys[items];
    unsigned classes = 0;  // 2 bits per key: its class
    unsigned long long mine = 0;
#pragma unroll
    for (int j = 0; j < items; ++j) {
      const qs::index_t i = chunk.begin + threadIdx.x + j * qs::partition_threads;
      if (i < chunk.end) {
        keys[j] = src[i];
        const int k = qs::class_of(qs_ordered(keys[j], flip), s.pivot);
        classes |= unsigned(k) << (2 * j);
        mine += qs::class_unit(k);
      }
    }
    unsigned long long first_rank, in_chunk;
    scan(temp).ExclusiveSum(mine, first_rank, in_chunk);
    // The chunk is staged in shared memory as its three runs, which are then written out
    // contiguously: coalesced writes instead of one scattered store per key.
    const unsigned run_start[3] = {0, unsigned(qs::class_count(in_chunk, 0)),
                                   unsigned(qs::class_count(in_chunk, 0) +
                                            qs::class_count(in_chunk, 1))};
    const qs::index_t run_to[3] = {
        s.begin + chunk_offsets[3 * c],
        s.begin + st.count[0] + chunk_offsets[3 * c + 1],
        s.begin + st.count[0] + st.count[1] + chunk_offsets[3 * c + 2]};
    const unsigned length = unsigned(chunk.end - chunk.begin);
    const auto stage_and_write = [&](auto* stage, auto* dst, auto&& record_of) {
      unsigned long long rank = first_rank;
#pragma unroll
      for (int j = 0; j < items; ++j) {
        if (chunk.begin + threadIdx.x + j * qs::partition_threads >= chunk.end) break;
        const int k = (classes >> (2 * j)) & 3;
        stage[run_start[k] + qs::class_count(rank, k)] = record_of(j);
        rank += qs::class_unit(k);
      }
      __syncthreads();
      for (unsigned l = threadIdx.x; l < length; l += qs::partition_threads) {
        const int k = l < run_start[1] ? 0 : (l < run_start[2] ? 1 : 2);
        dst[run_to[k] + (l - run_start[k])] = stage[l];
      }
      __syncthreads();
    };
    stage_and_write(reinterpret_cast<K*>(shared_bytes), buf.keys[s.in_spare ^ 1],
                    [&](int j) { return keys[j]; });
    if constexpr (has_values) {
      const V* src_values = buf.values[s.in_spare];
      stage_and_write(reinterpret_cast<V*>(shared_bytes), buf.values[s.in_spare ^ 1], [&](int j) {
        return src_values[chunk.begin + threadIdx.x + j * qs::partition_threads];
      });
    }
  }
}

// Sorts each listed part (or the one part `only`, when parts is null) on chip into its
// place in the keys buffer.
template <class K, class V>
__global__ __launch_bounds__(qs::finish_threads) void qs_finish_kernel(
    qs_buffers<K, V> buf, const qs_part* parts, const qs_state* state, qs_part only,
    bool descending) {
  constexpr int items = qs::finish_items;
  using sorter = block::block_bitonic_sort<K, V, qs::finish_threads, items, less<K>>;
  // Dynamic: 2048 records of 24 bytes need more than the 48 KiB of static shared memory.
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  auto& temp = *reinterpret_cast<typename sorter::temp_storage*>(shared_bytes);
  const qs::index_t count = parts ? state->finishes : 1;
  for (qs::index_t f = blockIdx.x; f < count; f += gridDim.x) {
    const qs_part part = parts ? parts[f] : only;
    const K* src = buf.keys[part.in_spare] + part.begin;
    K* dst = buf.keys[0] + part.begin;
    K keys[items];
    V values[items];
    const unsigned valid = static_cast<unsigned>(part.size);
#pragma unroll
    for (int j = 0; j < items; ++j) {
      const unsigned l = threadIdx.x * items + j;
      if (l < valid) {
        keys[j] = src[l];
        if constexpr (!std::is_same_v<V, no_value>) values[j] = buf.values[part.in_spare][part.begin + l];
      }
    }
    sorter{temp}.sort(keys, values, valid, descending, less<K>{});
#pragma unroll
    for (int j = 0; j < items; ++j) {
      const unsigned l = threadIdx.x * items + j;
      if (l < valid) {
        dst[l] = keys[j];
        if constexpr (!std::is_same_v<V, no_value>) buf.values[0][part.begin + l] = values[j];
      }
    }
  }
}

inline std::size_t qs_align(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// The workspace: the spare buffers, both parities' sequence lists and sums, the chunks'
// offsets, the finish list and the fill levels.
template <class K, class V>
struct qs_workspace {
  using U = typename key_traits<K>::ordered_type;
  std::size_t parts[8];
  explicit qs_workspace(qs::index_t n) {
    const qs::index_t seqs = qs::max_sequences(n);
    parts[0] = qs_align(n * sizeof(K));
    parts[1] = std::is_same_v<V, no_value> ? 0 : qs_align(n * sizeof(V));
    parts[2] = parts[3] = qs_align(seqs * sizeof(qs_sequence<U>));
    parts[4] = qs_align(2 * seqs * sizeof(qs_stats<U>));
    parts[5] = qs_align(3 * qs::max_chunks(n) * sizeof(unsigned long long));
    parts[6] = qs_align(qs::max_finishes(n) * sizeof(qs_part));
    parts[7] = qs_align(sizeof(qs_state));
  }
  std::size_t total() const {
    std::size_t sum = 0;
    for (std::size_t p : parts) sum += p;
    return sum;
  }
  void* at(void* base, int part) const {
    std::size_t offset = 0;
    for (int p = 0; p < part; ++p) offset += parts[p];
    return static_cast<char*>(base) + offset;
  }
};

template <class K, class V>
cudaError_t quicksort(void* temp, std::size_t& temp_bytes, K* keys, V* values, qs::index_t n,
                      bool descending, cudaStream_t stream) {
  using U = typename key_traits<K>::ordered_type;
  if (n >= qs::max_keys) return cudaErrorInvalidValue;
  const bool small = n <= qs::finish_size;
  const qs_workspace<K, V> ws(n);
  if (!temp) {
    temp_bytes = small ? 0 : ws.total();
    return cudaSuccess;
  }
  if (n < 2) return cudaSuccess;
  qs_buffers<K, V> buf{{keys, static_cast<K*>(ws.at(temp, 0))},
                       {values, static_cast<V*>(ws.at(temp, 1))}};
  const int finish_grid_cap = 4096;
  constexpr int finish_smem = sizeof(
      typename block::block_bitonic_sort<K, V, qs::finish_threads, qs::finish_items,
                                         less<K>>::temp_storage);
  if (small) {
    unsigned one = 0;
    const cudaError_t e = resident_blocks(qs_finish_kernel<K, V>, qs::finish_threads,
                                          finish_smem, one);
    if (e != cudaSuccess) return e;
    qs_finish_kernel<K, V><<<1, qs::finish_threads, finish_smem, stream>>>(
        buf, nullptr, nullptr, {0, n, 0}, descending);
    return cudaGetLastError();
  }
  if (temp_bytes < ws.total()) return cudaErrorInvalidValue;
  qs_sequence<U>* seqs[2] = {static_cast<qs_sequence<U>*>(ws.at(temp, 2)),
                             static_cast<qs_sequence<U>*>(ws.at(temp, 3))};
  auto* stats0 = static_cast<qs_stats<U>*>(ws.at(temp, 4));
  qs_stats<U>* stats[2] = {stats0, stats0 + qs::max_sequences(n)};
  auto* chunk_offsets = static_cast<unsigned long long*>(ws.at(temp, 5));
  auto* finishes = static_cast<qs_part*>(ws.at(temp, 6));
  auto* state = static_cast<qs_state*>(ws.at(temp, 7));
  const U flip = descending ? static_cast<U>(~U{0}) : U{0};

  unsigned count_grid = 0, scatter_grid = 0, finish_grid = 0;
  cudaError_t e = resident_blocks(qs_count_kernel<K, V>, qs::partition_threads, 0, count_grid);
  if (e == cudaSuccess)
    e = resident_blocks(qs_scatter_kernel<K, V>, qs::partition_threads, qs_stage_bytes<K, V>,
                        scatter_grid);
  if (e == cudaSuccess)
    e = resident_blocks(qs_finish_kernel<K, V>, qs::finish_threads, finish_smem, finish_grid);
  if (e != cudaSuccess) return e;
  const auto at_most = [](unsigned grid, qs::index_t work) {
    return static_cast<unsigned>(work < grid ? work : grid);
  };
  count_grid = at_most(count_grid, qs::max_chunks(n));
  scatter_grid = at_most(scatter_grid, qs::max_chunks(n));
  finish_grid = at_most(finish_grid < finish_grid_cap ? finish_grid : finish_grid_cap,
                        qs::max_finishes(n));

  qs_start_kernel<K, V><<<1, 1, 0, stream>>>(keys, n, seqs[0], stats[0], state, flip);
  for (int round = 0; round < qs::max_rounds(8 * sizeof(U)); ++round) {
    const int p = round & 1;
    qs_count_kernel<K, V><<<count_grid, qs::partition_threads, 0, stream>>>(
        buf, seqs[p], stats[p], chunk_offsets, state, p, flip);
    qs_scatter_kernel<K, V><<<scatter_grid, qs::partition_threads, qs_stage_bytes<K, V>, stream>>>(
        buf, seqs[p], stats[p], chunk_offsets, {seqs[p ^ 1], stats[p ^ 1], finishes}, state, p,
        flip);
    qs_finish_kernel<K, V><<<finish_grid, qs::finish_threads, finish_smem, stream>>>(
        buf, finishes, state, {}, descending);
  }
  return cudaGetLastError();
}

}  // namespace gpusort::detail::device
