// The k first keys (and their values) of an array, exactly, by radix select: the k-th key's
// code (index_math::select_code) is found a digit at a time from the top, one pass over the keys
// per digit counting the keys that share the digits found so far; the last block of a pass
// picks the digit (a block scan of the counts, index_math::bucket_holds_rank). A last pass
// gathers every key before the k-th and as
// many keys equal to it as k needs. It reads the keys bits / 8 + 1 times, on any input.
//
// Two uses (select_input says which): top_k's fallback, whose every kernel first reads how
// many candidates the sampled gather found and returns at once when that is a usable count (k
// to capacity), so that in the usual case the fallback costs its launches only and the host
// never waits for the count; and select_k's selection among those candidates, as many as the
// device counted.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <cub/block/block_scan.cuh>

#include "gpusort/detail/device/gather.cuh"
#include "gpusort/detail/device/launch.cuh"
#include "gpusort/detail/index_math/approx.hpp"

namespace gpusort::detail::device {

using index_math::index_t;

inline constexpr int select_digit_bits = 8;
inline constexpr std::uint32_t select_buckets = 1u << select_digit_bits;

// Device state of one radix select, zeroed before the first pass.
struct radix_select_state {
  unsigned long long prefix;      // the digits of the k-th code found so far, in place
  unsigned long long below;       // keys whose code lies below every code with that prefix
  unsigned long long cursors[2];  // the gather: keys before the k-th, keys equal to it
  unsigned int blocks_done;       // blocks of the current pass that have added their counts
  unsigned int unused;
  unsigned long long counts[select_buckets];  // the current digit's counts
};

// Whether the sampled gather's count is unusable: fewer than k candidates, or more than the
// buffer (and the candidate sort planned for it) holds.
__device__ __forceinline__ bool select_needed(std::uint64_t gathered, index_t k,
                                              index_t capacity) {
  return gathered < k || gathered > capacity;
}

// The keys a radix select reads, and whether it runs at all (device counts, read by every
// kernel, so that the host never waits for them).
struct select_input {
  index_t n;                        // keys[0, n), or the first *count of them
  const std::uint64_t* count;       // device: how many keys there are (null: n)
  const std::uint64_t* gathered;    // device: run only where select_needed(*gathered, k,
  index_t capacity;                 //   capacity) (null: always)

  __device__ __forceinline__ index_t size() const {
    return count && *count < n ? static_cast<index_t>(*count) : n;
  }
  __device__ __forceinline__ bool runs(index_t k) const {
    return !gathered || select_needed(*gathered, k, capacity);
  }
};

// One digit: counts the keys that share the prefix found so far by their digit at `shift`;
// the last block to finish picks the digit holding the rank-th key: each thread sums its
// buckets, a block scan gives each the keys below them, and the thread whose bucket holds the
// rank writes it (one walk of 256 counts by one thread was most of a pass's time).
template <int THREADS, class K>
__global__ void __launch_bounds__(THREADS)
    select_digit_kernel(const K* keys, select_input input, bool descending, int shift,
                        index_t k, radix_select_state* state) {
  using U = index_math::ordered_t<K>;
  constexpr unsigned per_thread = select_buckets / THREADS;
  static_assert(per_thread >= 1 && select_buckets % THREADS == 0);
  using scan = cub::BlockScan<unsigned long long, THREADS>;
  if (!input.runs(k)) return;
  const index_t n = input.size();
  __shared__ unsigned counts[select_buckets];
  __shared__ typename scan::TempStorage scan_storage;
  __shared__ bool last;
  for (unsigned d = threadIdx.x; d < select_buckets; d += THREADS) counts[d] = 0;
  __syncthreads();
  const U prefix = static_cast<U>(state->prefix);
  const int above = shift + select_digit_bits;
  const U high = above >= static_cast<int>(sizeof(U) * 8) ? U{0} : static_cast<U>(~U{0} << above);
  for (index_t i = blockIdx.x * index_t{THREADS} + threadIdx.x; i < n;
       i += index_t{gridDim.x} * THREADS) {
    const U code = index_math::select_code(keys[i], descending);
    if (((code ^ prefix) & high) == 0) atomicAdd(&counts[(code >> shift) & (select_buckets - 1)], 1u);
  }
  __syncthreads();
  for (unsigned d = threadIdx.x; d < select_buckets; d += THREADS)
    if (counts[d]) atomicAdd(&state->counts[d], static_cast<unsigned long long>(counts[d]));
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&state->blocks_done, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  unsigned long long mine[per_thread], sum = 0;
  for (unsigned j = 0; j < per_thread; ++j) {
    const unsigned d = threadIdx.x * per_thread + j;
    sum += mine[j] = __ldcg(&state->counts[d]);
    state->counts[d] = 0;
  }
  const unsigned long long rank = k - state->below;  // read before the scan's barrier
  unsigned long long before = 0;
  scan(scan_storage).ExclusiveSum(sum, before);
  for (unsigned j = 0; j < per_thread; ++j) {
    if (index_math::bucket_holds_rank(before, mine[j], rank)) {
      state->prefix |= static_cast<unsigned long long>(threadIdx.x * per_thread + j) << shift;
      state->below += before;
    }
    before += mine[j];
  }
  if (threadIdx.x == 0) state->blocks_done = 0;
}

// The last pass: keys before the k-th to out[0, below), and the first keys equal to it to
// out[below, k). Writes to *out_count (unless null) the keys out: k, or, where the select does
// not run, the gathered count.
template <int THREADS, class K, class V, class Values>
__global__ void __launch_bounds__(THREADS)
    select_gather_kernel(const K* keys, Values values, select_input input, bool descending,
                         index_t k, radix_select_state* state, K* out_keys, V* out_values,
                         std::uint64_t* out_count) {
  using U = index_math::ordered_t<K>;
  const bool needed = input.runs(k);
  if (out_count && blockIdx.x == 0 && threadIdx.x == 0) *out_count = needed ? k : *input.gathered;
  if (!needed) return;
  const index_t n = input.size();
  const U kth = static_cast<U>(state->prefix);
  const index_t below = state->below, equal_wanted = k - below;
  // Whole warps walk the keys, so that every lane takes part in the reservations.
  const index_t stride = index_t{gridDim.x} * THREADS;
  for (index_t base = blockIdx.x * index_t{THREADS} + threadIdx.x / 32 * 32; base < n;
       base += stride) {
    const index_t i = base + threadIdx.x % 32;
    const bool inside = i < n;
    K key{};
    U code{};
    if (inside) code = index_math::select_code(key = keys[i], descending);
    const bool before = inside && code < kth, equal = inside && code == kth;
    const unsigned long long at_before = warp_reserve(before, &state->cursors[0]);
    const unsigned long long at_equal = warp_reserve(equal, &state->cursors[1]);
    if (before) {
      out_keys[at_before] = key;
      store_value(out_values, at_before, load_value(values, i));
    } else if (equal && at_equal < equal_wanted) {
      out_keys[below + at_equal] = key;
      store_value(out_values, below + at_equal, load_value(values, i));
    }
  }
}

// Launches the radix select of the k first keys of `input` into out_keys[0, k) (and
// out_values), in no order; k must be at most the input's size where it runs. state: a
// radix_select_state in device memory, zeroed on the stream before. Values: const V*, or
// positions<V>. out_count: as select_gather_kernel's.
template <class K, class V, class Values>
cudaError_t radix_select(const K* keys, Values values, select_input input, index_t k,
                         bool descending, radix_select_state* state, K* out_keys, V* out_values,
                         std::uint64_t* out_count, cudaStream_t stream) {
  constexpr int threads = 256;
  const unsigned wanted = static_cast<unsigned>(
      std::min<index_t>((input.n + threads - 1) / threads, index_t{1} << 20));
  unsigned blocks = 0;
  cudaError_t e = resident_blocks(select_digit_kernel<threads, K>, threads, 0, blocks);
  if (e != cudaSuccess) return e;
  blocks = std::max(1u, std::min(blocks, wanted));
  for (int shift = static_cast<int>(sizeof(index_math::ordered_t<K>) * 8) - select_digit_bits;
       shift >= 0; shift -= select_digit_bits) {
    select_digit_kernel<threads, K><<<blocks, threads, 0, stream>>>(keys, input, descending,
                                                                    shift, k, state);
    e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  select_gather_kernel<threads, K, V, Values><<<blocks, threads, 0, stream>>>(
      keys, values, input, descending, k, state, out_keys, out_values, out_count);
  return cudaGetLastError();
}

// ---- the element of one rank ------------------------------------------------------------

// One warp's vote for its lanes' digits into its own counts: where every counted lane has the
// same digit (all equal codes, the usual case of a few distinct keys) one atomic adds them all,
// else each lane adds its own. Every lane of the warp calls it.
__device__ __forceinline__ void warp_count_digit(unsigned* counts, bool counted, unsigned digit) {
  constexpr unsigned all = 0xffffffffu;
  const unsigned voters = __ballot_sync(all, counted);
  if (!voters) return;
  const unsigned first = __shfl_sync(all, digit, __ffs(voters) - 1);
  if (__all_sync(all, !counted || digit == first)) {
    if (threadIdx.x % 32 == 0) atomicAdd(&counts[first], static_cast<unsigned>(__popc(voters)));
  } else if (counted) {
    atomicAdd(&counts[digit], 1u);
  }
}

// The shared state of select_ranked_index_kernel: each warp's digit counts, the block scan's
// storage, and the digit pass's answer.
template <int THREADS, class U>
struct ranked_select_storage {
  unsigned counts[THREADS / 32][select_buckets];
  typename cub::BlockScan<index_t, THREADS>::TempStorage scan;
  U found_prefix;
  index_t found_below;
};

// The code of rank `rank` (0-based) among codes[0, count), by one block, a digit at a time from
// the top: each warp counts the codes that share the prefix found so far into its own counts,
// a block scan picks the digit (index_math::bucket_holds_rank). Gives the code (prefix) and how
// many codes lie below it (below), the same on every thread.
template <int THREADS, int BATCH, class U>
__device__ void block_select_code(const U* codes, index_t count, index_t rank,
                                  ranked_select_storage<THREADS, U>& s, U& prefix,
                                  index_t& below) {
  constexpr int warps = THREADS / 32;
  constexpr unsigned per_thread = warps * select_buckets / THREADS;
  static_assert(THREADS % 32 == 0 && THREADS >= int(select_buckets) &&
                (warps * select_buckets) % THREADS == 0);
  unsigned* mine = &s.counts[0][0] + threadIdx.x * per_thread;
  for (unsigned j = 0; j < per_thread; ++j) mine[j] = 0;
  prefix = 0;
  below = 0;  // codes below every code with the prefix found so far
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int shift = static_cast<int>(sizeof(U) * 8) - select_digit_bits; shift >= 0;
       shift -= select_digit_bits) {
    __syncthreads();  // the counts are zero
    const int above = shift + select_digit_bits;
    const U high = above >= static_cast<int>(sizeof(U) * 8) ? U{0} : static_cast<U>(~U{0} << above);
    // Whole warps walk the codes, so that every lane takes part in the votes; BATCH loads
    // of a lane are in flight at once (the codes come from L2, not from a stream).
    for (index_t base = warp * 32 * BATCH; base < count; base += index_t{THREADS} * BATCH) {
      U batch[BATCH];
#pragma unroll
      for (int j = 0; j < BATCH; ++j) {
        const index_t i = base + j * 32 + lane;
        batch[j] = i < count ? codes[i] : U{0};
      }
#pragma unroll
      for (int j = 0; j < BATCH; ++j)
        warp_count_digit(s.counts[warp],
                         base + j * 32 + lane < count && ((batch[j] ^ prefix) & high) == 0,
                         static_cast<unsigned>(batch[j] >> shift) & (select_buckets - 1));
    }
    __syncthreads();
    index_t bucket = 0;  // thread d < 256: digit d's count over the warps
    if (threadIdx.x < select_buckets)
      for (int w = 0; w < warps; ++w) bucket += s.counts[w][threadIdx.x];
    index_t before = 0;
    cub::BlockScan<index_t, THREADS>(s.scan).ExclusiveSum(bucket, before);  // every count read
    for (unsigned j = 0; j < per_thread; ++j) mine[j] = 0;
    if (threadIdx.x < select_buckets &&
        index_math::bucket_holds_rank(before, bucket, rank + 1 - below)) {
      s.found_prefix =
          static_cast<U>(prefix | static_cast<U>(static_cast<U>(threadIdx.x) << shift));
      s.found_below = below + before;
    }
    __syncthreads();
    prefix = s.found_prefix;
    below = s.found_below;
  }
}

// The index of the (wanted)-th code equal to `code` (0-based, in index order) to *chosen, by
// one block: each warp counts the equal codes of its contiguous chunk (read whole, by
// ballots), a block scan gives each warp the equal codes before its chunk, and the warp
// holding the wanted one finds its lane. After a barrier that ends the scan storage's last use.
template <int THREADS, class U>
__device__ void block_pick_equal(const U* codes, index_t count, U code, index_t wanted,
                                 ranked_select_storage<THREADS, U>& s, std::uint32_t* chosen) {
  constexpr int warps = THREADS / 32;
  constexpr unsigned all = 0xffffffffu;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const index_t chunk = (count + warps - 1) / warps;
  const index_t first = warp * chunk < count ? warp * chunk : count;
  const index_t last = first + chunk < count ? first + chunk : count;
  index_t equal = 0;  // the same on every lane
#pragma unroll 4
  for (index_t base = first; base < last; base += 32) {
    const index_t i = base + lane;
    equal += __popc(__ballot_sync(all, i < last && codes[i] == code));
  }
  index_t seen = 0;
  cub::BlockScan<index_t, THREADS>(s.scan).ExclusiveSum(lane == 0 ? equal : index_t{0}, seen);
  seen = __shfl_sync(all, seen, 0);
  if (wanted < seen || wanted >= seen + equal) return;  // the whole warp
  for (index_t base = first; base < last; base += 32) {
    const index_t i = base + lane;
    const unsigned hits = __ballot_sync(all, i < last && codes[i] == code);
    if (wanted < seen + __popc(hits)) {
      if ((hits >> lane & 1u) && __popc(hits & ((1u << lane) - 1u)) == wanted - seen)
        *chosen = static_cast<std::uint32_t>(i);
      return;
    }
    seen += __popc(hits);
  }
}

// Of codes[0, count), the index of the one of rank `rank` (0-based) in (code, index) order, to
// *chosen, by one block: the code by a radix select, then the pick among the codes equal to
// it. The codes (65,536 at most for top_k) stay in L2 between the passes; one launch instead
// of a launch of a few blocks a digit.
template <int THREADS, int BATCH, class U>
__global__ void __launch_bounds__(THREADS)
    select_ranked_index_kernel(const U* codes, index_t count, index_t rank,
                               std::uint32_t* chosen) {
  __shared__ ranked_select_storage<THREADS, U> storage;
  U code;
  index_t below;
  block_select_code<THREADS, BATCH>(codes, count, rank, storage, code, below);
  block_pick_equal<THREADS>(codes, count, code, rank - below, storage, chosen);
}

// The index of the element of rank `rank` among codes[0, count) (unsigned codes, rank below
// count; top_k has 4,096 to 65,536) in (code, index) order to *chosen (device), as a stable
// sort would place it, with no sort: one block's radix select and pick. (The CUB radix sort of
// 65,536 codes it replaced took about 64 us in four passes of 11 blocks; a radix select of a
// few blocks a digit, 55 us in four launches and a pick: H200.)
template <class U>
cudaError_t select_ranked_index(const U* codes, index_t count, index_t rank,
                                std::uint32_t* chosen, cudaStream_t stream) {
  static_assert(std::is_unsigned_v<U>);
  constexpr int threads = 512, batch = 8;
  select_ranked_index_kernel<threads, batch, U><<<1, threads, 0, stream>>>(codes, count, rank,
                                                                           chosen);
  return cudaGetLastError();
}

// top_k's fallback: the radix select of the k first keys of keys[0, n) into out (room for
// capacity), active only if *gathered is not in [k, capacity]; *count receives the usable
// count.
template <class K, class V, class Values>
cudaError_t radix_select_fallback(const K* keys, Values values, index_t n, index_t k,
                                  bool descending, const std::uint64_t* gathered,
                                  index_t capacity, radix_select_state* state, K* out_keys,
                                  V* out_values, std::uint64_t* count, cudaStream_t stream) {
  return radix_select<K, V>(keys, values, select_input{n, nullptr, gathered, capacity}, k,
                            descending, state, out_keys, out_values, count, stream);
}

}  // namespace gpusort::detail::device
