// Top-k of wide rows (LLM decoding: 1-512 rows of 32k-256k logits, k up to 2048) by a select
// per row, in one of two ways (index_math/row_select.hpp says which):
// - Sampled (k small against the row): one block a row finds a threshold among 2048 evenly
//   spaced keys that at least k keys lie at or below with near certainty; several blocks a row
//   gather the columns of those keys (a few thousand) through shared memory; one block a row
//   selects the k first among them by a radix select in shared memory, sorts them and writes
//   them. Three kernels. A row whose candidates turn out too few or too many (ties, hostile
//   rows) is searched again by that last block alone, by radix passes over the whole row.
// - Radix passes: each row's k-th code is found a digit at a time from the top: every block
//   of the row counts its keys that share the digits found so far, adds the counts to the
//   row's, and the row's last block picks the digit that holds the k-th. A digit whose bucket
//   holds exactly the keys still needed ends the search early. One pass then gathers the
//   columns of the keys before the k-th and as many keys equal to it as k needs, and one block
//   per row sorts them.
// Either way the k are sorted by (code, column) and the keys written read again by column, so
// that NaN payloads come out as they went in, with their values or positions.
//
// The matrix is read once from memory and then, when it fits (a 64 x 131,072 f32 matrix is
// 32 MB), from L2. Ties are sorted by column, but which of several keys equal to the k-th are
// taken is not promised (torch.topk promises none either).
#pragma once

#include <cstdint>
#include <cstring>

#include <cub/block/block_merge_sort.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/warp/warp_scan.cuh>

#include "gpusort/detail/block/warp_top_k.cuh"
#include "gpusort/detail/device/gather.cuh"
#include "gpusort/detail/device/launch.cuh"
#include "gpusort/detail/index_math/approx.hpp"
#include "gpusort/detail/index_math/row_select.hpp"

namespace gpusort::detail::device {

// One row's search, zeroed before its first pass.
struct row_select_state {
  unsigned long long prefix;     // the digits of the k-th code found so far, in place
  unsigned long long mask;       // the bits they cover
  unsigned long long taken[2];   // the gather's cursors: keys before the k-th, keys equal to it
  unsigned below;                // keys of the row whose code lies below the prefix
  unsigned done;                 // the prefix's bucket holds exactly the keys still needed
  unsigned blocks_done;          // blocks of the current pass that have added their counts
  unsigned counts[index_math::row_digit_buckets];  // the current digit's counts
};

// Keys each thread loads before it uses one: 16 bytes of them, so that a warp keeps several
// loads in flight (the passes are bound by memory latency otherwise).
template <class K>
inline constexpr int loads_in_flight = sizeof(K) >= 8 ? 2 : static_cast<int>(16 / sizeof(K));

// The part of its row a block reads: [first, last) of row `row`.
struct row_part {
  index_t row, first, last;
};
// Parts are multiples of 8 keys, so that a part of a 16-byte-aligned row of keys of 2 bytes or
// more starts aligned too (row_group's vector loads; 8-bit rows' parts may take scalar loads).
__device__ __forceinline__ row_part part_of_row(unsigned blocks_per_row, index_t row_length) {
  const index_t part = blockIdx.x % blocks_per_row;
  const index_t chunk = ((row_length + blocks_per_row - 1) / blocks_per_row + 7) / 8 * 8;
  const index_t first = part * chunk < row_length ? part * chunk : row_length;
  return {blockIdx.x / blocks_per_row, first, first + chunk < row_length ? first + chunk : row_length};
}

// ---- one digit of a row, and the gather: shared by the passes of several blocks a row and
// one block's search of its row ----------------------------------------------------------

// Adds to counts[digit] the keys of row[first, last) whose codes carry `prefix` under `mask`,
// by the digit at `shift`.
template <int THREADS, class K, class U>
__device__ __forceinline__ void count_row_digit(const K* row, index_t first, index_t last,
                                                bool descending, U prefix, U mask, int shift,
                                                unsigned digit_mask, unsigned* counts) {
  constexpr int unroll = loads_in_flight<K>;
  for (index_t start = first + threadIdx.x; start < last; start += index_t{THREADS} * unroll) {
    U codes[unroll];
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const index_t i = start + index_t{THREADS} * u;
      codes[u] = i < last ? index_math::select_code(row[i], descending) : static_cast<U>(~prefix);
    }
#pragma unroll
    for (int u = 0; u < unroll; ++u)
      if (start + index_t{THREADS} * u < last && static_cast<U>(codes[u] & mask) == prefix)
        atomicAdd(&counts[(codes[u] >> shift) & digit_mask], 1u);
  }
}

// Buckets of a digit each thread of a block of THREADS scans.
template <int THREADS>
inline constexpr unsigned row_buckets_per_thread = index_math::row_digit_buckets / THREADS;

// From the digit's counts (bucket threadIdx.x * row_buckets_per_thread + j in mine[j]), the
// digit that holds the k-th code: search's prefix, mask, below and done (a row_select_state, or
// one block's row_search) move on by it. prefix, mask and below are search's, read before.
template <int THREADS, class U, class Search>
__device__ __forceinline__ void pick_row_digit(const unsigned (&mine)[row_buckets_per_thread<THREADS>],
                                               U prefix, U mask, unsigned below, unsigned k,
                                               int shift, unsigned digit_mask, Search& search) {
  constexpr unsigned per_thread = row_buckets_per_thread<THREADS>;
  static_assert(THREADS * per_thread == index_math::row_digit_buckets);
  using scan = cub::BlockScan<unsigned, THREADS>;
  __shared__ typename scan::TempStorage scan_storage;
  unsigned sum = 0;
#pragma unroll
  for (unsigned j = 0; j < per_thread; ++j) sum += mine[j];
  unsigned before = 0;
  scan(scan_storage).ExclusiveSum(sum, before);
  const unsigned rank = k - below;  // below < k <= below + keys with the prefix
#pragma unroll
  for (unsigned j = 0; j < per_thread; ++j) {
    if (before < rank && rank <= before + mine[j]) {
      const U digit = static_cast<U>(threadIdx.x * per_thread + j);
      search.prefix = static_cast<U>(prefix | static_cast<U>(digit << shift));
      search.mask = static_cast<U>(mask | static_cast<U>(static_cast<U>(digit_mask) << shift));
      search.below = below + before;
      search.done = mine[j] == rank - before;
    }
    before += mine[j];
  }
}

// The columns of row[first, last)'s keys before the k-th (codes under mask below prefix) to
// out[taken[0]++], and of those equal to it to out[below + taken[1]++] while fewer than
// `needed` are: k columns in all, in no order. taken: cursors in global or shared memory.
template <int THREADS, class K, class U>
__device__ __forceinline__ void gather_row_part(const K* row, index_t first, index_t last,
                                                bool descending, U prefix, U mask,
                                                unsigned below, unsigned needed,
                                                unsigned long long* taken, std::uint32_t* out) {
  // Every lane runs every round: warp_reserve takes the whole warp.
  constexpr int unroll = loads_in_flight<K>;
  for (index_t start = first; start < last; start += index_t{THREADS} * unroll) {
    U high[unroll];
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const index_t i = start + index_t{THREADS} * u + threadIdx.x;
      high[u] = i < last ? static_cast<U>(index_math::select_code(row[i], descending) & mask) : U{0};
    }
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const index_t i = start + index_t{THREADS} * u + threadIdx.x;
      const bool in = i < last;
      const bool before_kth = in && high[u] < prefix, tied = in && high[u] == prefix;
      const unsigned long long at = warp_reserve(before_kth, &taken[0]);
      if (before_kth) out[at] = static_cast<std::uint32_t>(i);
      const unsigned long long tie = warp_reserve(tied, &taken[1]);
      if (tied && tie < needed) out[below + tie] = static_cast<std::uint32_t>(i);
    }
  }
}

// ---- the radix passes: several blocks a row -----------------------------------------------

// One digit of every row of the batch: keys[row * row_length ...] for row of the batch.
template <int THREADS, class K>
__global__ void __launch_bounds__(THREADS)
    select_row_digit_kernel(const K* keys, index_t row_length, unsigned blocks_per_row,
                            bool descending, int shift, int bits, unsigned k,
                            row_select_state* states) {
  using U = index_math::ordered_t<K>;
  constexpr unsigned buckets = index_math::row_digit_buckets;
  const row_part p = part_of_row(blocks_per_row, row_length);
  row_select_state& s = states[p.row];
  if (s.done) return;
  __shared__ unsigned counts[buckets];
  __shared__ bool last;
  const unsigned digit_mask = (1u << bits) - 1;
  for (unsigned d = threadIdx.x; d <= digit_mask; d += THREADS) counts[d] = 0;
  __syncthreads();
  const U prefix = static_cast<U>(s.prefix), mask = static_cast<U>(s.mask);
  count_row_digit<THREADS>(keys + p.row * row_length, p.first, p.last, descending, prefix, mask,
                           shift, digit_mask, counts);
  __syncthreads();
  for (unsigned d = threadIdx.x; d <= digit_mask; d += THREADS)
    if (counts[d]) atomicAdd(&s.counts[d], counts[d]);
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&s.blocks_done, 1u) == blocks_per_row - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  // The row's last block: the digit that holds the k-th, the counts read and zeroed for the
  // next digit.
  unsigned mine[row_buckets_per_thread<THREADS>];
#pragma unroll
  for (unsigned j = 0; j < row_buckets_per_thread<THREADS>; ++j) {
    const unsigned d = threadIdx.x * row_buckets_per_thread<THREADS> + j;
    mine[j] = d <= digit_mask ? atomicExch(&s.counts[d], 0u) : 0u;
  }
  pick_row_digit<THREADS>(mine, prefix, mask, s.below, k, shift, digit_mask, s);
  if (threadIdx.x == 0) s.blocks_done = 0;
}

// The columns of every row's k first keys, in no order: columns[row * k, (row + 1) * k).
template <int THREADS, class K>
__global__ void __launch_bounds__(THREADS)
    gather_row_columns_kernel(const K* keys, index_t row_length, unsigned blocks_per_row,
                              bool descending, unsigned k, row_select_state* states,
                              std::uint32_t* columns) {
  using U = index_math::ordered_t<K>;
  const row_part p = part_of_row(blocks_per_row, row_length);
  row_select_state& s = states[p.row];
  const unsigned below = s.below;
  gather_row_part<THREADS>(keys + p.row * row_length, p.first, p.last, descending,
                           static_cast<U>(s.prefix), static_cast<U>(s.mask), below, k - below,
                           s.taken, columns + p.row * k);
}

// ---- the sampled threshold (index_math/row_select.hpp) ----------------------------------------

// The rank-th smallest (1-based, rank <= count) of the codes[0, count) in shared memory, and
// how many codes lie below it: a radix select in shared memory, 8 bits a pass from the top.
// Every thread of the block calls it; `counts` is 256 words of shared memory, a bucket for
// each of the block's first 256 threads.
template <int THREADS, class U>
__device__ void block_select(const U* codes, unsigned count, unsigned rank, unsigned* counts,
                             U& kth, unsigned& below) {
  static_assert(THREADS >= 256, "a bucket for each of the first 256 threads");
  const bool holds_bucket = threadIdx.x < 256;
  using scan = cub::BlockScan<unsigned, THREADS>;
  __shared__ typename scan::TempStorage scan_storage;
  __shared__ U picked;
  __shared__ unsigned picked_before;
  U prefix = 0, mask = 0;
  below = 0;
  for (int shift = static_cast<int>(sizeof(U) * 8) - 8; shift >= 0; shift -= 8) {
    if (holds_bucket) counts[threadIdx.x] = 0;
    __syncthreads();
    for (unsigned i = threadIdx.x; i < count; i += THREADS)
      if (static_cast<U>(codes[i] & mask) == prefix) atomicAdd(&counts[(codes[i] >> shift) & 255u], 1u);
    __syncthreads();
    const unsigned mine = holds_bucket ? counts[threadIdx.x] : 0u;
    unsigned before = 0;
    scan(scan_storage).ExclusiveSum(mine, before);
    const unsigned wanted = rank - below;
    if (before < wanted && wanted <= before + mine) {
      picked = static_cast<U>(threadIdx.x);
      picked_before = before;
    }
    __syncthreads();
    prefix = static_cast<U>(prefix | static_cast<U>(picked << shift));
    mask = static_cast<U>(mask | static_cast<U>(U{255} << shift));
    below += picked_before;
    __syncthreads();  // counts, picked and the scan's storage are used again
  }
  kth = prefix;
}

// One row's sampled search: its threshold, and the keys at or below it (counted past the
// candidates' capacity: such a row is searched again by its own block).
struct sampled_row_state {
  unsigned long long threshold;
  unsigned candidates;
};

// Candidates a row's block holds in shared memory (16 or 24 KB with their columns).
template <class K>
inline constexpr unsigned candidate_capacity = sizeof(index_math::ordered_t<K>) <= 4 ? 4096 : 2048;

// One block per row of the batch: the row's threshold, the sample_rank-th smallest code of
// row_samples evenly spaced keys; the row's candidate count zeroed.
template <int THREADS, class K>
__global__ void __launch_bounds__(THREADS)
    sample_row_threshold_kernel(const K* keys, index_t row_length, bool descending,
                                unsigned rank, sampled_row_state* states) {
  using U = index_math::ordered_t<K>;
  constexpr unsigned samples = index_math::row_samples;
  __shared__ U codes[samples];
  __shared__ unsigned counts[256];
  let_next_grid_start();  // the gather loads its first keys meanwhile
  const K* row = keys + index_t{blockIdx.x} * row_length;
  static_assert(samples % THREADS == 0);
  K sample[samples / THREADS];  // every load in flight before the first is used
#pragma unroll
  for (unsigned j = 0; j < samples / THREADS; ++j)
    sample[j] = row[(j * THREADS + threadIdx.x) * row_length / samples];
#pragma unroll
  for (unsigned j = 0; j < samples / THREADS; ++j)
    codes[j * THREADS + threadIdx.x] = index_math::select_code(sample[j], descending);
  __syncthreads();
  U kth;
  unsigned below;
  block_select<THREADS>(codes, samples, rank, counts, kth, below);
  if (threadIdx.x == 0) states[blockIdx.x] = {kth, 0};
}

// A thread's group of keys: 16 contiguous bytes, one vector load where the row is aligned.
template <class K>
inline constexpr unsigned row_group = 16 / sizeof(K);
template <class K>
__device__ __forceinline__ void load_row_group(const K* row, index_t first, index_t last,
                                               bool aligned, K (&keys)[row_group<K>]) {
  if (aligned && first + row_group<K> <= last) {
    const uint4 bits = *reinterpret_cast<const uint4*>(row + first);
    memcpy(&keys, &bits, sizeof(bits));
    return;
  }
#pragma unroll
  for (unsigned j = 0; j < row_group<K>; ++j)
    if (first + j < last) keys[j] = row[first + j];
}

// The columns of every key at or below its row's threshold, up to candidate_capacity a row:
// candidates[row * capacity, ...). A block gathers its part's in shared memory, a warp's
// with one shared atomic a round, and reserves their place in the row's with one global
// atomic; a part with more than the capacity stops early (the row will be searched again),
// but its count still goes to the row's, which shows the overflow.
template <int THREADS, class K>
__global__ void __launch_bounds__(THREADS)
    gather_row_candidates_kernel(const K* keys, index_t row_length, unsigned blocks_per_row,
                                 bool descending, sampled_row_state* states,
                                 std::uint32_t* candidates) {
  using U = index_math::ordered_t<K>;
  using warp_scan = cub::WarpScan<unsigned>;
  constexpr unsigned capacity = candidate_capacity<K>, group = row_group<K>;
  // A thread's groups a round: 32 keys of up to 4 bytes, 16 of 8 (64-128 bytes in flight: a
  // block reads its part of the row in a few rounds, each a wait on memory).
  constexpr unsigned groups = sizeof(K) >= 8 ? 8 : 32 / group;
  static_assert(group * groups <= 32, "a thread's taken keys are bits of one word");
  __shared__ std::uint32_t staged[capacity];
  __shared__ typename warp_scan::TempStorage scan_storage[THREADS / 32];
  __shared__ unsigned staged_count, base;
  if (threadIdx.x == 0) staged_count = 0;
  __syncthreads();
  const row_part p = part_of_row(blocks_per_row, row_length);
  sampled_row_state& s = states[p.row];
  // The threshold kernel may still run (launch_overlapping): its state is read once the first
  // round's keys are loaded.
  U threshold{};
  bool waited = false;
  const K* row = keys + p.row * row_length;
  const bool aligned = reinterpret_cast<std::uintptr_t>(row + p.first) % 16 == 0;
  const unsigned lane = threadIdx.x % 32;
  // Every lane runs every round: the warp's scan and __any_sync take the whole warp.
  for (index_t start = p.first; start < p.last; start += index_t{THREADS} * group * groups) {
    if (__any_sync(0xffffffffu, *static_cast<volatile unsigned*>(&staged_count) > capacity))
      break;
    K group_keys[groups][group];
#pragma unroll
    for (unsigned g = 0; g < groups; ++g)
      load_row_group(row, start + (index_t{g} * THREADS + threadIdx.x) * group, p.last, aligned,
                     group_keys[g]);
    if (!waited) {
      wait_for_previous_grid();
      threshold = static_cast<U>(s.threshold);
      waited = true;
    }
    unsigned taken = 0;  // bit g * group + j: key j of group g is a candidate
#pragma unroll
    for (unsigned g = 0; g < groups; ++g) {
      // Keys of the group inside the part: all of them but at the part's end (one bounds
      // check a group, not a key).
      const index_t first_key = start + (index_t{g} * THREADS + threadIdx.x) * group;
      const unsigned inside = first_key + group <= p.last ? group
                              : first_key < p.last    ? static_cast<unsigned>(p.last - first_key)
                                                      : 0u;
#pragma unroll
      for (unsigned j = 0; j < group; ++j)
        if (j < inside && index_math::select_code(group_keys[g][j], descending) <= threshold)
          taken |= 1u << (g * group + j);
    }
    unsigned before = 0, warp_total = 0;
    warp_scan(scan_storage[threadIdx.x / 32]).ExclusiveSum(static_cast<unsigned>(__popc(taken)),
                                                           before, warp_total);
    if (warp_total == 0) continue;
    unsigned at = 0;
    if (lane == 0) at = atomicAdd(&staged_count, warp_total);
    at = __shfl_sync(0xffffffffu, at, 0) + before;
    for (; taken; taken &= taken - 1, ++at) {
      const unsigned bit = static_cast<unsigned>(__ffs(taken) - 1), g = bit / group;
      if (at < capacity)
        staged[at] = static_cast<std::uint32_t>(start + (index_t{g} * THREADS + threadIdx.x) * group +
                                                bit % group);
    }
  }
  if (!waited) wait_for_previous_grid();  // the threshold kernel zeroes s.candidates
  __syncthreads();
  const unsigned count = staged_count;
  if (threadIdx.x == 0) base = atomicAdd(&s.candidates, count);
  __syncthreads();
  if (count > capacity) return;
  std::uint32_t* out = candidates + p.row * capacity;
  for (unsigned i = threadIdx.x; i < count; i += THREADS)
    if (base + i < capacity) out[base + i] = staged[i];
}

// A row's value: values[row][column], or the column itself (positions<V>).
template <class V>
__device__ __forceinline__ V row_value(const V* values, index_t row, index_t row_length,
                                       std::uint32_t column) {
  return values[row * row_length + column];
}
template <class V>
__device__ __forceinline__ V row_value(positions<V>, index_t, index_t, std::uint32_t column) {
  return load_value(positions<V>{}, column);
}

struct ranked_before {
  template <class R>
  __device__ __forceinline__ bool operator()(const R& a, const R& b) const {
    return a.goes_before(b);
  }
};

template <class K, int THREADS, int ITEMS>
using row_sorter = cub::BlockMergeSort<block::ranked_key<K>, THREADS, ITEMS>;

// The block's row `row` of the batch: its k columns (in no order) sorted by (code, column)
// (CUB's block merge sort: a bitonic network of the block's whole tile ran 40 us for k = 50),
// the keys and values written in that order to row first_row + row of the outputs; in_order
// false: written in the columns' order, unsorted (torch.topk's sorted=False).
template <int THREADS, int ITEMS, class K, class Values, class V>
__device__ __forceinline__ void emit_row(const K* keys, Values values, index_t row_length,
                                         index_t first_row, index_t row, unsigned k,
                                         bool descending, bool in_order,
                                         const std::uint32_t* columns, K* out_keys, V* out_values,
                                         typename row_sorter<K, THREADS, ITEMS>::TempStorage& storage) {
  using ranked = block::ranked_key<K>;
  const K* in = keys + row * row_length;
  ranked items[ITEMS];
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const unsigned l = threadIdx.x * ITEMS + j;
    items[j] = ranked::padding();
    if (l < k) items[j] = ranked::of(in[columns[l]], columns[l], descending);
  }
  if (in_order)  // the same for the whole block
    row_sorter<K, THREADS, ITEMS>(storage).Sort(items, ranked_before{}, static_cast<int>(k),
                                                ranked::padding());
  const index_t out = (first_row + row) * k;
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const unsigned l = threadIdx.x * ITEMS + j;
    if (l < k) {
      out_keys[out + l] = in[items[j].column];
      if constexpr (!std::is_same_v<V, no_value>)
        out_values[out + l] = row_value(values, first_row + row, row_length, items[j].column);
    }
  }
}

// One block per row of the batch, after the radix passes: the row's columns[row * k, ...)
// sorted and written.
template <int THREADS, int ITEMS, class K, class Values, class V>
__global__ void __launch_bounds__(THREADS)
    emit_row_top_k_kernel(const K* keys, Values values, index_t row_length, index_t first_row,
                          unsigned k, bool descending, bool in_order,
                          const std::uint32_t* columns, K* out_keys, V* out_values) {
  __shared__ typename row_sorter<K, THREADS, ITEMS>::TempStorage storage;
  const index_t row = blockIdx.x;
  emit_row<THREADS, ITEMS>(keys, values, row_length, first_row, row, k, descending, in_order,
                           columns + row * k, out_keys, out_values, storage);
}

// One block's search of its row: the digits of the k-th code found so far.
struct row_search {
  unsigned long long prefix, mask;
  unsigned below, done;
};

// A row's candidates (columns) and their select codes in shared memory.
template <class U, unsigned CAPACITY>
struct candidate_codes {
  U codes[CAPACITY];
  std::uint32_t columns[CAPACITY];
};

// The k first of a row's `found` candidates (k <= found <= capacity) into winners: their codes
// loaded (every load in flight before the first is used), a radix select in shared memory,
// then the keys before the k-th and as many of its ties as fit.
template <int THREADS, class K, unsigned CAPACITY>
__device__ void select_among_candidates(const K* in, const std::uint32_t* mine, unsigned found,
                                        unsigned k, bool descending,
                                        candidate_codes<index_math::ordered_t<K>, CAPACITY>& shared,
                                        unsigned* select_counts, unsigned long long* taken,
                                        std::uint32_t* winners) {
  using U = index_math::ordered_t<K>;
  constexpr unsigned per_thread = CAPACITY / THREADS;
  std::uint32_t columns[per_thread];
  K found_keys[per_thread];
#pragma unroll
  for (unsigned j = 0; j < per_thread; ++j)
    columns[j] = j * THREADS + threadIdx.x < found ? mine[j * THREADS + threadIdx.x] : 0u;
#pragma unroll
  for (unsigned j = 0; j < per_thread; ++j) found_keys[j] = in[columns[j]];
#pragma unroll
  for (unsigned j = 0; j < per_thread; ++j) {
    const unsigned i = j * THREADS + threadIdx.x;
    if (i < found) {
      shared.columns[i] = columns[j];
      shared.codes[i] = index_math::select_code(found_keys[j], descending);
    }
  }
  __syncthreads();
  U kth;
  unsigned below;
  block_select<THREADS>(shared.codes, found, k, select_counts, kth, below);
  for (unsigned first = 0; first < found; first += THREADS) {  // every lane: warp_reserve
    const unsigned i = first + threadIdx.x;
    const U code = i < found ? shared.codes[i] : kth;
    const bool before_kth = i < found && code < kth, tied = i < found && code == kth;
    const unsigned long long at = warp_reserve(before_kth, &taken[0]);
    if (before_kth) winners[at] = shared.columns[i];
    const unsigned long long tie = warp_reserve(tied, &taken[1]);
    if (tied && tie < k - below) winners[below + tie] = shared.columns[i];
  }
}

// The k first keys of a row into winners by the block's own radix passes over the row (for
// rows whose candidates were too few or too many: ties, hostile rows): a digit at a time,
// counted in shared memory and picked (pick_row_digit), then the keys before the k-th code
// and enough of its ties gathered.
template <int THREADS, class K>
__device__ void select_by_row_passes(const K* in, index_t row_length, unsigned k,
                                     bool descending, unsigned* counts, row_search& search,
                                     unsigned long long* taken, std::uint32_t* winners) {
  using U = index_math::ordered_t<K>;
  constexpr int width = sizeof(U) * 8;
  if (threadIdx.x == 0) search = {0, 0, 0, 0};
  for (int pass = 0; pass < index_math::row_select_passes(width); ++pass) {
    __syncthreads();
    if (search.done) break;
    const index_math::digit_window d = index_math::row_select_digit(width, pass);
    const unsigned digit_mask = (1u << d.bits) - 1;
    for (unsigned b = threadIdx.x; b <= digit_mask; b += THREADS) counts[b] = 0;
    const U prefix = static_cast<U>(search.prefix), mask = static_cast<U>(search.mask);
    const unsigned below = search.below;
    __syncthreads();
    count_row_digit<THREADS>(in, 0, row_length, descending, prefix, mask, d.shift, digit_mask,
                             counts);
    __syncthreads();
    unsigned mine[row_buckets_per_thread<THREADS>];
#pragma unroll
    for (unsigned j = 0; j < row_buckets_per_thread<THREADS>; ++j) {
      const unsigned b = threadIdx.x * row_buckets_per_thread<THREADS> + j;
      mine[j] = b <= digit_mask ? counts[b] : 0u;
    }
    pick_row_digit<THREADS>(mine, prefix, mask, below, k, d.shift, digit_mask, search);
  }
  __syncthreads();
  const unsigned below = search.below;
  gather_row_part<THREADS>(in, 0, row_length, descending, static_cast<U>(search.prefix),
                           static_cast<U>(search.mask), below, k - below, taken, winners);
}

// One block per row of the batch, after the sampled gather: the k first keys among the row's
// candidates where they hold them and fit, found by a radix select in shared memory; otherwise
// (too few or too many candidates: ties, hostile rows) by the block's own radix passes over
// the row. Then sorted and written (emit_row).
template <int THREADS, int ITEMS, class K, class Values, class V>
__global__ void __launch_bounds__(THREADS)
    finish_sampled_rows_kernel(const K* keys, Values values, index_t row_length,
                               index_t first_row, unsigned k, bool descending, bool in_order,
                               const sampled_row_state* states,
                               const std::uint32_t* candidates, K* out_keys, V* out_values) {
  constexpr unsigned capacity = candidate_capacity<K>;
  static_assert(capacity % THREADS == 0);
  __shared__ union {
    candidate_codes<index_math::ordered_t<K>, capacity> found;
    unsigned counts[index_math::row_digit_buckets];
    typename row_sorter<K, THREADS, ITEMS>::TempStorage sort;
  } shared;
  __shared__ std::uint32_t winners[THREADS * ITEMS];
  __shared__ unsigned select_counts[256];
  __shared__ unsigned long long taken[2];
  __shared__ row_search search;
  const index_t row = blockIdx.x;
  const K* in = keys + row * row_length;
  wait_for_previous_grid();  // launch_overlapping: the gather's candidates
  const unsigned found = states[row].candidates;
  if (threadIdx.x < 2) taken[threadIdx.x] = 0;
  if (found >= k && found <= capacity)
    select_among_candidates<THREADS>(in, candidates + row * capacity, found, k, descending,
                                     shared.found, select_counts, taken, winners);
  else
    select_by_row_passes<THREADS>(in, row_length, k, descending, shared.counts, search, taken,
                                  winners);
  __syncthreads();  // winners complete; shared.found and shared.counts are the sort's now
  emit_row<THREADS, ITEMS>(keys, values, row_length, first_row, row, k, descending, in_order,
                           winners, out_keys, out_values, shared.sort);
}

// Rows whose states and columns the workspace holds at once; more rows run in batches.
inline constexpr index_t row_select_batch_rows = 4096;

// top_k of every row (index_math::row_select_fits(row_length, k) must hold): keys and values
// (a device array of rows x row_length, or positions<V>: the columns) to out_keys and
// out_values (rows x k), each row's in order (in_order false: in no order, unsorted). Rows
// whose k first keys a sample of 2048 keys bounds (sampled_threshold_fits) take three
// kernels: the threshold, the candidates' gather and one block a row to finish; other rows
// the radix passes of several blocks a row, the gather of the k columns and one block a row
// to sort them. Workspace: per row of a batch,
// its search state and its candidates (sampled) or k columns.
template <class K, class Values, class V>
cudaError_t top_k_rows_by_select(void* temp, std::size_t& temp_bytes, const K* keys,
                                 Values values, index_t rows, index_t row_length, K* out_keys,
                                 V* out_values, index_t k, bool descending, bool in_order,
                                 cudaStream_t stream) {
  const index_t batch = rows < row_select_batch_rows ? rows : row_select_batch_rows;
  constexpr unsigned capacity = candidate_capacity<K>;
  const bool sampled = index_math::sampled_threshold_fits(row_length, k, capacity);
  const std::size_t state_size = sampled ? sizeof(sampled_row_state) : sizeof(row_select_state);
  const std::size_t state_bytes = (state_size * batch + 255) / 256 * 256;
  const std::size_t list_bytes = sizeof(std::uint32_t) * batch * (sampled ? capacity : k);
  if (!temp) {
    temp_bytes = state_bytes + list_bytes;
    return cudaSuccess;
  }
  if (temp_bytes < state_bytes + list_bytes) return cudaErrorInvalidValue;
  auto* lists = reinterpret_cast<std::uint32_t*>(static_cast<char*>(temp) + state_bytes);
  if (rows == 0 || k == 0) return cudaSuccess;
  int device = 0, sms = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  constexpr int threads = 256;
  // The finish is one block a row and a chain of short steps (loads, select passes, a merge
  // sort): twice the warps of the other kernels, to hide their latency.
  constexpr int finish_threads = index_math::row_finish_threads;
  constexpr int width = sizeof(index_math::ordered_t<K>) * 8;
  const auto kk = static_cast<unsigned>(k);
  // The sampled path's gather and finish start while the kernel before them ends.
  const int items = index_math::row_finish_items(k);
  const auto finish = items == 1   ? finish_sampled_rows_kernel<finish_threads, 1, K, Values, V>
                      : items == 2 ? finish_sampled_rows_kernel<finish_threads, 2, K, Values, V>
                                   : finish_sampled_rows_kernel<finish_threads, 4, K, Values, V>;
  bool overlap = false;
  if (e == cudaSuccess && sampled)
    e = overlapping_launches(overlap, gather_row_candidates_kernel<threads, K>, finish);
  for (index_t first = 0; first < rows && e == cudaSuccess; first += batch) {
    const index_t count = rows - first < batch ? rows - first : batch;
    const auto per_row = static_cast<unsigned>(
        index_math::row_select_blocks(count, row_length, 4 * static_cast<index_t>(sms)));
    const auto grid = static_cast<unsigned>(count * per_row);
    const auto blocks = static_cast<unsigned>(count);
    // keys and values are indexed from the batch's first row; outputs from the matrix's.
    const K* batch_keys = keys + first * row_length;
    if (sampled) {
      auto* states = static_cast<sampled_row_state*>(temp);
      sample_row_threshold_kernel<threads, K><<<blocks, threads, 0, stream>>>(
          batch_keys, row_length, descending, index_math::sample_rank(k, row_length), states);
      e = cudaGetLastError();
      if (e == cudaSuccess)
        e = launch_overlapping(overlap, gather_row_candidates_kernel<threads, K>, grid, threads,
                               stream, batch_keys, row_length, per_row, descending, states,
                               lists);
      if (e == cudaSuccess)
        e = launch_overlapping(overlap, finish, blocks, finish_threads, stream, batch_keys, values,
                               row_length, first, kk, descending, in_order,
                               static_cast<const sampled_row_state*>(states),
                               static_cast<const std::uint32_t*>(lists), out_keys, out_values);
      continue;
    }
    auto* states = static_cast<row_select_state*>(temp);
    e = cudaMemsetAsync(states, 0, sizeof(row_select_state) * count, stream);
    for (int pass = 0; pass < index_math::row_select_passes(width) && e == cudaSuccess; ++pass) {
      const index_math::digit_window d = index_math::row_select_digit(width, pass);
      select_row_digit_kernel<threads, K><<<grid, threads, 0, stream>>>(
          batch_keys, row_length, per_row, descending, d.shift, d.bits, kk, states);
      e = cudaGetLastError();
    }
    if (e != cudaSuccess) break;
    gather_row_columns_kernel<threads, K><<<grid, threads, 0, stream>>>(
        batch_keys, row_length, per_row, descending, kk, states, lists);
    e = cudaGetLastError();
    if (e != cudaSuccess) break;
    if (k <= 128)
      emit_row_top_k_kernel<128, 1><<<blocks, 128, 0, stream>>>(
          batch_keys, values, row_length, first, kk, descending, in_order, lists, out_keys,
          out_values);
    else if (k <= 1024)
      emit_row_top_k_kernel<256, 4><<<blocks, 256, 0, stream>>>(
          batch_keys, values, row_length, first, kk, descending, in_order, lists, out_keys,
          out_values);
    else
      emit_row_top_k_kernel<256, 8><<<blocks, 256, 0, stream>>>(
          batch_keys, values, row_length, first, kk, descending, in_order, lists, out_keys,
          out_values);
    e = cudaGetLastError();
  }
  return e;
}

// columns[i] = i % row_length: the column matrix of the shapes the per-row select does not
// take (top_k_rows_positions).
template <class P>
__global__ void fill_row_columns_kernel(P* columns, index_t n, index_t row_length) {
  for (index_t i = blockIdx.x * index_t{256} + threadIdx.x; i < n; i += index_t{gridDim.x} * 256)
    columns[i] = load_value(positions<P>{}, i % row_length);
}
template <class P>
cudaError_t fill_row_columns(P* columns, index_t n, index_t row_length, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const index_t blocks = (n + 255) / 256;
  fill_row_columns_kernel<<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), 256, 0,
                            stream>>>(columns, n, row_length);
  return cudaGetLastError();
}

}  // namespace gpusort::detail::device
