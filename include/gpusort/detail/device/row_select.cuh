// Top-k of wide rows (LLM decoding: 1-512 rows of 32k-256k logits, k up to 2048) by a radix
// select per row. Each row's k-th code is found a digit at a time from the top
// (network/row_select.hpp): every block of the row counts its keys that share the digits
// found so far, adds the counts to the row's, and the row's last block picks the digit that
// holds the k-th (select_digit_kernel). A digit whose bucket holds exactly the keys still
// needed ends the search early: for random rows of f32, two passes of the three. One pass then
// gathers the columns of the keys before the k-th and as many keys equal to it as k needs, and
// one block per row sorts those (code, column) pairs and writes the keys, read again by column
// so that NaN payloads come out as they went in, and their values or positions.
//
// The matrix is read once from memory and then, when it fits (a 64 x 131,072 f32 matrix is
// 32 MB), from L2. Ties are sorted by column, but which of several keys equal to the k-th are
// taken is not promised (torch.topk promises none either).
#pragma once

#include <cstdint>

#include <cub/block/block_merge_sort.cuh>
#include <cub/block/block_scan.cuh>

#include "gpusort/detail/block/warp_top_k.cuh"
#include "gpusort/detail/device/gather.cuh"
#include "gpusort/detail/device/launch.cuh"
#include "gpusort/detail/network/approx.hpp"
#include "gpusort/detail/network/row_select.hpp"

namespace gpusort::detail::device {

// One row's search, zeroed before its first pass.
struct row_select_state {
  unsigned long long prefix;     // the digits of the k-th code found so far, in place
  unsigned long long mask;       // the bits they cover
  unsigned long long taken[2];   // the gather's cursors: keys before the k-th, keys equal to it
  unsigned below;                // keys of the row whose code lies below the prefix
  unsigned done;                 // the prefix's bucket holds exactly the keys still needed
  unsigned blocks_done;          // blocks of the current pass that have added their counts
  unsigned sampled;              // the sampled threshold found the row's k columns: no passes
  unsigned long long threshold;  // the sampled threshold's code (candidates: codes up to it)
  unsigned long long candidates;  // keys of the row at or below the threshold
  unsigned counts[network::row_digit_buckets];  // the current digit's counts
};

// Keys each thread loads before it uses one: 16 bytes of them, so that a warp keeps several
// loads in flight (the passes are bound by memory latency otherwise).
template <class K>
inline constexpr int loads_in_flight = sizeof(K) >= 8 ? 2 : static_cast<int>(16 / sizeof(K));

// The part of its row a block reads: [first, last) of row `row`.
struct row_part {
  index_t row, first, last;
};
__device__ __forceinline__ row_part part_of_row(unsigned blocks_per_row, index_t row_length) {
  const index_t part = blockIdx.x % blocks_per_row;
  const index_t chunk = (row_length + blocks_per_row - 1) / blocks_per_row;
  const index_t first = part * chunk;
  return {blockIdx.x / blocks_per_row, first, first + chunk < row_length ? first + chunk : row_length};
}

// One digit of every row of the batch: keys[row * row_length ...] for row of the batch.
template <int THREADS, class K>
__global__ void __launch_bounds__(THREADS)
    select_row_digit_kernel(const K* keys, index_t row_length, unsigned blocks_per_row,
                            bool descending, int shift, int bits, unsigned k,
                            row_select_state* states) {
  using U = network::ordered_t<K>;
  constexpr unsigned buckets = network::row_digit_buckets, per_thread = buckets / THREADS;
  const row_part p = part_of_row(blocks_per_row, row_length);
  row_select_state& s = states[p.row];
  if (s.done || s.sampled) return;
  __shared__ unsigned counts[buckets];
  __shared__ bool last;
  using scan = cub::BlockScan<unsigned, THREADS>;
  __shared__ typename scan::TempStorage scan_storage;
  const unsigned digit_mask = (1u << bits) - 1;
  for (unsigned d = threadIdx.x; d <= digit_mask; d += THREADS) counts[d] = 0;
  __syncthreads();
  const U prefix = static_cast<U>(s.prefix), mask = static_cast<U>(s.mask);
  const K* row = keys + p.row * row_length;
  constexpr int unroll = loads_in_flight<K>;
  for (index_t start = p.first + threadIdx.x; start < p.last; start += index_t{THREADS} * unroll) {
    U codes[unroll];
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const index_t i = start + index_t{THREADS} * u;
      codes[u] = i < p.last ? network::select_code(row[i], descending) : static_cast<U>(~prefix);
    }
#pragma unroll
    for (int u = 0; u < unroll; ++u)
      if (start + index_t{THREADS} * u < p.last && static_cast<U>(codes[u] & mask) == prefix)
        atomicAdd(&counts[(codes[u] >> shift) & digit_mask], 1u);
  }
  __syncthreads();
  for (unsigned d = threadIdx.x; d <= digit_mask; d += THREADS)
    if (counts[d]) atomicAdd(&s.counts[d], counts[d]);
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&s.blocks_done, 1u) == blocks_per_row - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  // The row's last block: the digit that holds the rank-th of the codes with the prefix, the
  // counts read and zeroed for the next digit.
  unsigned mine[per_thread], sum = 0;
#pragma unroll
  for (unsigned j = 0; j < per_thread; ++j) {
    const unsigned d = threadIdx.x * per_thread + j;
    mine[j] = d <= digit_mask ? atomicExch(&s.counts[d], 0u) : 0u;
    sum += mine[j];
  }
  unsigned before = 0;
  scan(scan_storage).ExclusiveSum(sum, before);
  const unsigned below = s.below, rank = k - below;  // below < k <= below + keys with the prefix
#pragma unroll
  for (unsigned j = 0; j < per_thread; ++j) {
    if (before < rank && rank <= before + mine[j]) {
      const U digit = static_cast<U>(threadIdx.x * per_thread + j);
      s.prefix = static_cast<U>(prefix | static_cast<U>(digit << shift));
      s.mask = static_cast<U>(mask | static_cast<U>(static_cast<U>(digit_mask) << shift));
      s.below = below + before;
      s.done = mine[j] == rank - before;
    }
    before += mine[j];
  }
  if (threadIdx.x == 0) s.blocks_done = 0;
}

// The columns of every row's k first keys, in no order: columns[row * k, (row + 1) * k).
template <int THREADS, class K>
__global__ void __launch_bounds__(THREADS)
    gather_row_columns_kernel(const K* keys, index_t row_length, unsigned blocks_per_row,
                              bool descending, unsigned k, row_select_state* states,
                              std::uint32_t* columns) {
  using U = network::ordered_t<K>;
  const row_part p = part_of_row(blocks_per_row, row_length);
  row_select_state& s = states[p.row];
  if (s.sampled) return;
  const U prefix = static_cast<U>(s.prefix), mask = static_cast<U>(s.mask);
  const unsigned below = s.below, needed = k - below;
  const K* row = keys + p.row * row_length;
  std::uint32_t* out = columns + p.row * k;
  // Every lane runs every round: warp_reserve takes the whole warp.
  constexpr int unroll = loads_in_flight<K>;
  for (index_t start = p.first; start < p.last; start += index_t{THREADS} * unroll) {
    U high[unroll];
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const index_t i = start + index_t{THREADS} * u + threadIdx.x;
      high[u] = i < p.last ? static_cast<U>(network::select_code(row[i], descending) & mask) : U{0};
    }
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const index_t i = start + index_t{THREADS} * u + threadIdx.x;
      const bool in = i < p.last;
      const bool before_kth = in && high[u] < prefix, tied = in && high[u] == prefix;
      const unsigned long long at = warp_reserve(before_kth, &s.taken[0]);
      if (before_kth) out[at] = static_cast<std::uint32_t>(i);
      const unsigned long long tie = warp_reserve(tied, &s.taken[1]);
      if (tied && tie < needed) out[below + tie] = static_cast<std::uint32_t>(i);
    }
  }
}

// ---- the sampled threshold (network/row_select.hpp) ----------------------------------------

// The rank-th smallest (1-based, rank <= count) of the codes[0, count) in shared memory, and
// how many codes lie below it: a radix select in shared memory, 8 bits a pass from the top.
// Every thread of the block calls it; `counts` is 256 words of shared memory.
template <int THREADS, class U>
__device__ void block_select(const U* codes, unsigned count, unsigned rank, unsigned* counts,
                             U& kth, unsigned& below) {
  static_assert(THREADS == 256, "one bucket a thread");
  using scan = cub::BlockScan<unsigned, THREADS>;
  __shared__ typename scan::TempStorage scan_storage;
  __shared__ U picked;
  __shared__ unsigned picked_before;
  U prefix = 0, mask = 0;
  below = 0;
  for (int shift = static_cast<int>(sizeof(U) * 8) - 8; shift >= 0; shift -= 8) {
    counts[threadIdx.x] = 0;
    __syncthreads();
    for (unsigned i = threadIdx.x; i < count; i += THREADS)
      if (static_cast<U>(codes[i] & mask) == prefix) atomicAdd(&counts[(codes[i] >> shift) & 255u], 1u);
    __syncthreads();
    const unsigned mine = counts[threadIdx.x];
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

// One block per row of the batch: the row's threshold, the sample_rank-th smallest code of
// row_samples evenly spaced keys.
template <int THREADS, class K>
__global__ void __launch_bounds__(THREADS)
    sample_row_threshold_kernel(const K* keys, index_t row_length, bool descending,
                                unsigned rank, row_select_state* states) {
  using U = network::ordered_t<K>;
  constexpr unsigned samples = network::row_samples;
  __shared__ U codes[samples];
  __shared__ unsigned counts[256];
  const K* row = keys + index_t{blockIdx.x} * row_length;
  for (unsigned j = threadIdx.x; j < samples; j += THREADS)
    codes[j] = network::select_code(row[j * row_length / samples], descending);
  __syncthreads();
  U kth;
  unsigned below;
  block_select<THREADS>(codes, samples, rank, counts, kth, below);
  if (threadIdx.x == 0) states[blockIdx.x].threshold = kth;
}

// The columns of every key at or below its row's threshold, up to `capacity` a row:
// candidates[row * capacity, ...); the row's count goes on past the capacity (an overflow).
template <int THREADS, class K>
__global__ void __launch_bounds__(THREADS)
    gather_row_candidates_kernel(const K* keys, index_t row_length, unsigned blocks_per_row,
                                 bool descending, row_select_state* states,
                                 std::uint32_t* candidates, unsigned capacity) {
  using U = network::ordered_t<K>;
  const row_part p = part_of_row(blocks_per_row, row_length);
  row_select_state& s = states[p.row];
  const U threshold = static_cast<U>(s.threshold);
  const K* row = keys + p.row * row_length;
  std::uint32_t* out = candidates + p.row * capacity;
  constexpr int unroll = loads_in_flight<K>;
  for (index_t start = p.first; start < p.last; start += index_t{THREADS} * unroll) {
    bool take[unroll];
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const index_t i = start + index_t{THREADS} * u + threadIdx.x;
      take[u] = i < p.last && network::select_code(row[i], descending) <= threshold;
    }
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const unsigned long long at = warp_reserve(take[u], &s.candidates);
      if (take[u] && at < capacity)
        out[at] = static_cast<std::uint32_t>(start + index_t{THREADS} * u + threadIdx.x);
    }
  }
}

// One block per row of the batch: where the row's candidates hold its k first keys and fit,
// their k first columns (in no order) to columns[row * k, ...) and the row marked sampled;
// otherwise the radix passes take the row.
template <int THREADS, int CAPACITY, class K>
__global__ void __launch_bounds__(THREADS)
    select_row_candidates_kernel(const K* keys, index_t row_length, bool descending, unsigned k,
                                 row_select_state* states, const std::uint32_t* candidates,
                                 std::uint32_t* columns) {
  using U = network::ordered_t<K>;
  __shared__ U codes[CAPACITY];
  __shared__ std::uint32_t cand_columns[CAPACITY];
  __shared__ unsigned counts[256];
  __shared__ unsigned cursors[2];
  row_select_state& s = states[blockIdx.x];
  const unsigned long long found = s.candidates;
  if (found < k || found > CAPACITY) return;  // the radix passes take this row
  const auto count = static_cast<unsigned>(found);
  const K* row = keys + index_t{blockIdx.x} * row_length;
  const std::uint32_t* mine = candidates + index_t{blockIdx.x} * CAPACITY;
  for (unsigned i = threadIdx.x; i < count; i += THREADS) {
    const std::uint32_t column = mine[i];
    cand_columns[i] = column;
    codes[i] = network::select_code(row[column], descending);
  }
  if (threadIdx.x < 2) cursors[threadIdx.x] = 0;
  __syncthreads();
  U kth;
  unsigned below;
  block_select<THREADS>(codes, count, k, counts, kth, below);
  std::uint32_t* out = columns + index_t{blockIdx.x} * k;
  for (unsigned i = threadIdx.x; i < count; i += THREADS) {
    if (codes[i] < kth) {
      out[atomicAdd(&cursors[0], 1u)] = cand_columns[i];
    } else if (codes[i] == kth) {
      const unsigned tie = atomicAdd(&cursors[1], 1u);
      if (tie < k - below) out[below + tie] = cand_columns[i];
    }
  }
  if (threadIdx.x == 0) s.sampled = 1;
}

// Candidates a row's block holds in shared memory: 48 KB with their columns.
template <class K>
inline constexpr unsigned candidate_capacity = sizeof(network::ordered_t<K>) <= 4 ? 4096 : 2048;

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

// One block per row of the batch: its k columns sorted by (code, column) (CUB's block merge
// sort: a bitonic network of the block's whole tile ran 40 us for k = 50), the keys and values
// written in that order.
template <int THREADS, int ITEMS, class K, class Values, class V>
__global__ void __launch_bounds__(THREADS)
    emit_row_top_k_kernel(const K* keys, Values values, index_t row_length, index_t first_row,
                          unsigned k, bool descending, const std::uint32_t* columns,
                          K* out_keys, V* out_values) {
  using ranked = block::ranked_key<K>;
  using sorter = cub::BlockMergeSort<ranked, THREADS, ITEMS>;
  __shared__ typename sorter::TempStorage storage;
  const index_t row = blockIdx.x;
  const K* in = keys + row * row_length;
  ranked items[ITEMS];
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const unsigned l = threadIdx.x * ITEMS + j;
    items[j] = ranked::padding();
    if (l < k) {
      const std::uint32_t column = columns[row * k + l];
      items[j] = ranked::of(in[column], column, descending);
    }
  }
  sorter(storage).Sort(items, ranked_before{}, static_cast<int>(k), ranked::padding());
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

// Rows whose states and columns the workspace holds at once; more rows run in batches.
inline constexpr index_t row_select_batch_rows = 4096;

// top_k of every row (network::row_select_fits(row_length, k) must hold): keys and values
// (a device array of rows x row_length, or positions<V>: the columns) to out_keys and
// out_values (rows x k), each row's in order. Workspace: per row of a batch, its search state
// (8 KB) and k columns.
template <class K, class Values, class V>
cudaError_t top_k_rows_by_select(void* temp, std::size_t& temp_bytes, const K* keys,
                                 Values values, index_t rows, index_t row_length, K* out_keys,
                                 V* out_values, index_t k, bool descending, cudaStream_t stream) {
  const index_t batch = rows < row_select_batch_rows ? rows : row_select_batch_rows;
  constexpr unsigned capacity = candidate_capacity<K>;
  const bool sampled = network::sampled_threshold_fits(row_length, k, capacity);
  const std::size_t state_bytes = (sizeof(row_select_state) * batch + 255) / 256 * 256;
  const std::size_t column_bytes = (sizeof(std::uint32_t) * batch * k + 255) / 256 * 256;
  const std::size_t total =
      state_bytes + column_bytes + (sampled ? sizeof(std::uint32_t) * batch * capacity : 0);
  if (!temp) {
    temp_bytes = total;
    return cudaSuccess;
  }
  if (temp_bytes < total) return cudaErrorInvalidValue;
  auto* states = static_cast<row_select_state*>(temp);
  auto* columns = reinterpret_cast<std::uint32_t*>(static_cast<char*>(temp) + state_bytes);
  auto* candidates =
      reinterpret_cast<std::uint32_t*>(static_cast<char*>(temp) + state_bytes + column_bytes);
  if (rows == 0 || k == 0) return cudaSuccess;
  int device = 0, sms = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  constexpr int threads = 256;
  constexpr int width = sizeof(network::ordered_t<K>) * 8;
  const auto kk = static_cast<unsigned>(k);
  for (index_t first = 0; first < rows && e == cudaSuccess; first += batch) {
    const index_t count = rows - first < batch ? rows - first : batch;
    const auto per_row = static_cast<unsigned>(
        network::row_select_blocks(count, row_length, 4 * static_cast<index_t>(sms)));
    const auto grid = static_cast<unsigned>(count * per_row);
    const K* batch_keys = keys + first * row_length;
    e = cudaMemsetAsync(states, 0, sizeof(row_select_state) * count, stream);
    if (sampled && e == cudaSuccess) {
      // Rows the threshold settles skip the radix passes below (their kernels return at once).
      sample_row_threshold_kernel<threads, K><<<static_cast<unsigned>(count), threads, 0, stream>>>(
          batch_keys, row_length, descending, network::sample_rank(k, row_length), states);
      gather_row_candidates_kernel<threads, K><<<grid, threads, 0, stream>>>(
          batch_keys, row_length, per_row, descending, states, candidates, capacity);
      select_row_candidates_kernel<threads, capacity, K>
          <<<static_cast<unsigned>(count), threads, 0, stream>>>(
              batch_keys, row_length, descending, kk, states, candidates, columns);
      e = cudaGetLastError();
    }
    for (int pass = 0; pass < network::row_select_passes(width) && e == cudaSuccess; ++pass) {
      const network::digit_window d = network::row_select_digit(width, pass);
      select_row_digit_kernel<threads, K><<<grid, threads, 0, stream>>>(
          batch_keys, row_length, per_row, descending, d.shift, d.bits, kk, states);
      e = cudaGetLastError();
    }
    if (e != cudaSuccess) break;
    gather_row_columns_kernel<threads, K><<<grid, threads, 0, stream>>>(
        batch_keys, row_length, per_row, descending, kk, states, columns);
    e = cudaGetLastError();
    if (e != cudaSuccess) break;
    // keys and values are indexed from the batch's first row; outputs from the matrix's.
    const auto blocks = static_cast<unsigned>(count);
    if (k <= 128)
      emit_row_top_k_kernel<128, 1><<<blocks, 128, 0, stream>>>(
          batch_keys, values, row_length, first, kk, descending, columns, out_keys, out_values);
    else if (k <= 1024)
      emit_row_top_k_kernel<256, 4><<<blocks, 256, 0, stream>>>(
          batch_keys, values, row_length, first, kk, descending, columns, out_keys, out_values);
    else
      emit_row_top_k_kernel<256, 8><<<blocks, 256, 0, stream>>>(
          batch_keys, values, row_length, first, kk, descending, columns, out_keys, out_values);
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
