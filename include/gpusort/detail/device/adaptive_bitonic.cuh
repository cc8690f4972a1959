// GPU-ABiSort on CUDA (Greß & Zachmann; index math in index_math/adaptive_bitonic.hpp).
//
// One sort of N = 2^L items (keys' ordered bits and positions, sentinels past n):
//  1. block sort: every tile of 2^b items sorted in shared memory, alternating directions
//     (section 7.1, with the block bitonic network instead of 8-item odd-even sorts);
//  2. for each level j = b+1..L: the first m = j - b stages of the adaptive merge, one kernel
//     per step of the overlapped schedule (section 5.4), on side copies of the visited nodes;
//     then one block per depth-m subtree gathers its 2^b items (a bitonic sequence) and
//     finishes them with the block bitonic merge (section 7.2), writing a sorted run.
// Ping-pong between two item buffers; the side slots and pq states are small (about
// 2(b + 1) / 2^b side nodes per item).
#pragma once

#include <cstdint>
#include <cuda_runtime.h>

#include <type_traits>

#include "gpusort/detail/block/bitonic_tile.cuh"
#include "gpusort/detail/index_math/adaptive_bitonic.hpp"
#include "gpusort/key_traits.hpp"

namespace gpusort::detail::device {

namespace abisort = index_math::abisort;

// Threads of the block sort and block merge: 16 items each. At most 64 registers a thread
// (4 steps per shared-memory round trip, 3 for 16-byte items), so that 1024 threads' worth of blocks fit on
// an SM: the gather's chain of dependent loads needs blocks to overlap (measured on an H100:
// 93 registers left one 512-thread block per SM, and the merge took 80% of the sort).
template <int BITS>
constexpr int abi_threads = BITS >= 8 ? (1 << (BITS - 4)) : 1;
template <int BITS>
constexpr int abi_min_blocks = abi_threads<BITS> >= 1024 ? 1
                               : abi_threads<BITS> >= 32 ? 1024 / abi_threads<BITS>
                                                         : 32;  // the most an SM holds

// Block sizes the library is built for: 10 to 13 (12 is the default), and 1 (no block sort
// or merge at all: the plain adaptive algorithm, for counting its comparisons).
constexpr bool abi_block_bits_supported(int b) { return b == 1 || (b >= 10 && b <= 13); }

// Adds the comparisons of the active threads of a warp (one each) to *counter.
__device__ __forceinline__ void count_one_per_thread(unsigned long long* counter) {
  const unsigned active = __activemask();
  if ((threadIdx.x & 31u) == static_cast<unsigned>(__ffs(active) - 1))
    atomicAdd(counter, static_cast<unsigned long long>(__popc(active)));
}

template <class U, int BITS>
using abi_tile = block::tile_network<abisort::item_t<U>, no_value, block::block_team<abi_threads<BITS>>,
                                     BITS, sizeof(abisort::item_t<U>) <= 8 ? 4 : 3,
                                     abisort::item_less<U>>;

// Sorts tile blockIdx.x of 2^BITS items in place; odd tiles descending.
template <class U, int BITS>
__global__ void __launch_bounds__(abi_threads<BITS>, abi_min_blocks<BITS>)
    abi_block_sort_kernel(abisort::item_t<U>* items, unsigned long long* counter) {
  using tile_t = abi_tile<U, BITS>;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  auto& smem = *reinterpret_cast<typename tile_t::storage*>(shared_bytes);
  abisort::item_t<U>* tile_items = items + (static_cast<abisort::index_t>(blockIdx.x) << BITS);
  tile_t tile{smem, 0, tile_t::slots, (blockIdx.x & 1u) != 0, {}};
  tile.load(tile_items, nullptr);
  tile.run(index_math::pass{index_math::window{BITS, BITS, 0}, 0, index_math::steps_through_phase(BITS)});
  tile.store(tile_items, nullptr);
  if (counter && threadIdx.x == 0)
    atomicAdd(counter, static_cast<unsigned long long>(BITS * (BITS + 1) / 2) << (BITS - 1));
}

// One step of the overlapped adaptive stages of level j, on every tree.
template <class U>
__global__ void abi_step_kernel(const abisort::item_t<U>* canon,
                                abisort::side_node<abisort::item_t<U>>* side,
                                abisort::pq_state* states, int j, int m, int s,
                                abisort::index_t trees, unsigned long long* counter) {
  const abisort::step_stages st = abisort::stages_in_step(j, m, s);
  const abisort::index_t per_tree = st.instances();
  const abisort::index_t g = static_cast<abisort::index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const abisort::index_t tree = g / per_tree;
  if (tree >= trees) return;
  const abisort::instance_id id = abisort::instance_of(st, g - tree * per_tree);
  abisort::pq_state* states_t = states + tree * abisort::states_per_tree(m);
  abisort::pq_state& pq = states_t[abisort::state_index(id.stage, id.r)];
  abisort::pq_state mine = pq;
  abisort::adaptive_phase(canon + (tree << j), side + tree * abisort::slots_per_tree(j, m), mine,
                          states_t, j, id.stage, id.r, s - 2 * id.stage, (tree & 1u) != 0,
                          abisort::item_less<U>{});
  pq = mine;
  if (counter) count_one_per_thread(counter);
}

// The first steps of a level, while a tree has few instances per step: one block per tree
// runs them all, with a barrier between steps instead of a kernel launch. Thread x - 1 is
// instance x in heap numbering (stage floor(log2 x)) throughout, so its pair stays in
// registers; a stage still running at the end leaves it in `states` for the step kernels.
template <class U>
__global__ void abi_tree_steps_kernel(const abisort::item_t<U>* canon,
                                      abisort::side_node<abisort::item_t<U>>* side,
                                      abisort::pq_state* states, int j, int m, int steps,
                                      unsigned long long* counter) {
  const abisort::index_t tree = blockIdx.x;
  const abisort::item_t<U>* canon_t = canon + (tree << j);
  abisort::side_node<abisort::item_t<U>>* side_t = side + tree * abisort::slots_per_tree(j, m);
  abisort::pq_state* states_t = states + tree * abisort::states_per_tree(m);
  const abisort::index_t x = threadIdx.x + 1;
  const int k = 31 - __clz(static_cast<unsigned>(x));
  const abisort::index_t r = x - (abisort::index_t{1} << k);
  abisort::pq_state mine{};
  for (int s = 0; s < steps; ++s) {
    const int i = s - 2 * k;
    if (k < m && i >= 0 && i < j - k) {
      if (i == 0) mine = states_t[abisort::state_index(k, r)];
      abisort::adaptive_phase(canon_t, side_t, mine, states_t, j, k, r, i, (tree & 1u) != 0,
                              abisort::item_less<U>{});
      if (counter) count_one_per_thread(counter);
    }
    __syncthreads();
  }
  const int i = steps - 2 * k;  // the phase this instance would run next
  if (k < m && i > 0 && i < j - k) states_t[abisort::state_index(k, r)] = mine;
}

// A pointer kept in an item slot of shared memory while the subtree is gathered.
template <class T>
__device__ __forceinline__ abisort::index_t& pointer_in(T& slot) {
  if constexpr (sizeof(T) == 8)
    return reinterpret_cast<abisort::index_t&>(slot);
  else
    return slot.key;
}

// Block (tree, s): gathers depth-m subtree s of its tree and that subtree's spare (2^BITS
// items in order, a bitonic sequence), merges them and writes the sorted run to `out`.
template <class U, int BITS>
__global__ void __launch_bounds__(abi_threads<BITS>, abi_min_blocks<BITS>)
    abi_block_merge_kernel(const abisort::item_t<U>* canon, const abisort::side_node<abisort::item_t<U>>* side,
                           const abisort::pq_state* states, abisort::item_t<U>* out, int j, int m,
                           unsigned long long* counter) {
  using T = abisort::item_t<U>;
  using tile_t = abi_tile<U, BITS>;
  constexpr int threads = abi_threads<BITS>;
  constexpr unsigned slots = 1u << BITS;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  auto& smem = *reinterpret_cast<typename tile_t::storage*>(shared_bytes);
  unsigned char* resolved = shared_bytes + sizeof(typename tile_t::storage);
  T* keys = smem.keys;  // slot l at tile_t::storage::index(l), the tile's own layout

  const abisort::index_t tree = blockIdx.x >> m;
  const abisort::index_t s = blockIdx.x & ((abisort::index_t{1} << m) - 1);
  const T* canon_t = canon + (tree << j);
  const abisort::side_node<T>* side_t = side + tree * abisort::slots_per_tree(j, m);
  const abisort::pq_state top = states[tree * abisort::states_per_tree(m) + abisort::state_index(m, s)];

  // Breadth-first: a side node gives its value and child pointers; a canonical pointer's
  // whole subtree is canonical, so its items are read afterwards, contiguously.
  if (threadIdx.x == 0) {
    keys[tile_t::storage::index(slots - 1)] = side_t[abisort::slot_of(top.q)].value;
    resolved[slots - 1] = 1;
    pointer_in(keys[tile_t::storage::index(abisort::bfs_position(BITS, 0, 0))]) = top.p;
  }
  __syncthreads();
  for (int d = 0; d < BITS; ++d) {
    for (unsigned t = threadIdx.x; t < (1u << d); t += threads) {
      const unsigned pos = static_cast<unsigned>(abisort::bfs_position(BITS, d, t));
      const abisort::index_t ptr = pointer_in(keys[tile_t::storage::index(pos)]);
      abisort::index_t left, right;
      if (abisort::is_side(ptr)) {
        const abisort::side_node<T> node = side_t[abisort::slot_of(ptr)];
        keys[tile_t::storage::index(pos)] = node.value;
        resolved[pos] = 1;
        left = node.child[0];
        right = node.child[1];
      } else {
        resolved[pos] = 0;
        left = abisort::canonical_child(ptr, 0);
        right = abisort::canonical_child(ptr, 1);
      }
      if (d + 1 < BITS) {
        const unsigned half = 1u << (BITS - 2 - d);
        pointer_in(keys[tile_t::storage::index(pos - half)]) = left;
        pointer_in(keys[tile_t::storage::index(pos + half)]) = right;
      }
    }
    __syncthreads();
  }
  // All of a thread's loads in flight at once.
  constexpr int per_thread = slots / threads;
  T loaded[per_thread];
#pragma unroll
  for (int e = 0; e < per_thread; ++e) {
    const unsigned l = e * threads + threadIdx.x;
    if (!resolved[l]) loaded[e] = canon_t[pointer_in(keys[tile_t::storage::index(l)])];
  }
#pragma unroll
  for (int e = 0; e < per_thread; ++e) {
    const unsigned l = e * threads + threadIdx.x;
    if (!resolved[l]) keys[tile_t::storage::index(l)] = loaded[e];
  }

  tile_t tile{smem, 0, slots, (tree & 1u) != 0, {}};
  tile.run(index_math::pass{index_math::window{BITS, BITS, 0}, index_math::step_index(BITS, BITS - 1),
                         index_math::step_index(BITS, 0) + 1});
  tile.store(out + (tree << j) + (s << BITS), nullptr);
  if (counter && threadIdx.x == 0)
    atomicAdd(counter, static_cast<unsigned long long>(BITS) << (BITS - 1));
}

// Workspace of a sort of N = 2^L items with blocks of 2^b.
struct abi_sizes {
  abisort::index_t side_nodes = 0;  // most side slots any level needs
  abisort::index_t states = 0;      // most pq states any level needs
};
constexpr abi_sizes abi_workspace(int L, int b) {
  abi_sizes z;
  for (int j = b + 1; j <= L; ++j) {
    const int m = abisort::adaptive_stages(j, b);
    const abisort::index_t trees = abisort::index_t{1} << (L - j);
    const abisort::index_t side = trees * abisort::slots_per_tree(j, m);
    const abisort::index_t st = trees * abisort::states_per_tree(m);
    if (side > z.side_nodes) z.side_nodes = side;
    if (st > z.states) z.states = st;
  }
  return z;
}

template <class U, int BITS>
cudaError_t abi_run(abisort::item_t<U>* buffers[2], abisort::side_node<abisort::item_t<U>>* side,
                    abisort::pq_state* states, int L, unsigned long long* counter,
                    cudaStream_t stream, int& result) {
  using tile_t = abi_tile<U, BITS>;
  constexpr int threads = abi_threads<BITS>;
  constexpr int sort_smem = sizeof(typename tile_t::storage);
  constexpr int merge_smem = sort_smem + (1 << BITS);
  auto sort_kernel = abi_block_sort_kernel<U, BITS>;
  auto merge_kernel = abi_block_merge_kernel<U, BITS>;
  if (L - BITS >= 31) return cudaErrorInvalidValue;  // one block per 2^BITS items
  cudaError_t e = cudaSuccess;
  if constexpr (merge_smem > 48 * 1024) {
    e = cudaFuncSetAttribute(sort_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, sort_smem);
    if (e == cudaSuccess)
      e = cudaFuncSetAttribute(merge_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               merge_smem);
    if (e != cudaSuccess) return e;
  }
  sort_kernel<<<static_cast<unsigned>(abisort::index_t{1} << (L - BITS)), threads, sort_smem, stream>>>(
      buffers[0], counter);
  int cur = 0;
  for (int j = BITS + 1; j <= L && e == cudaSuccess; ++j) {
    const int m = abisort::adaptive_stages(j, BITS);
    const abisort::index_t trees = abisort::index_t{1} << (L - j);
    // Fused prefix: the steps in which only stages below max_fused_stages are active.
    constexpr int max_fused_stages = 10;  // 1023 threads
    int fused = 0;
    while (fused < abisort::steps_of_level(j, m) &&
           abisort::stages_in_step(j, m, fused).last < max_fused_stages)
      ++fused;
    if (fused > 0) {
      const int top = abisort::stages_in_step(j, m, fused - 1).last;
      const unsigned block = static_cast<unsigned>((abisort::index_t{2} << top) - 1);
      abi_tree_steps_kernel<U><<<static_cast<unsigned>(trees), block, 0, stream>>>(
          buffers[cur], side, states, j, m, fused, counter);
    }
    for (int s = fused; s < abisort::steps_of_level(j, m); ++s) {
      const abisort::index_t total = trees * abisort::stages_in_step(j, m, s).instances();
      constexpr int step_threads = 256;
      abi_step_kernel<U><<<static_cast<unsigned>((total + step_threads - 1) / step_threads),
                           step_threads, 0, stream>>>(buffers[cur], side, states, j, m, s, trees,
                                                      counter);
    }
    merge_kernel<<<static_cast<unsigned>(trees << m), threads, merge_smem, stream>>>(
        buffers[cur], side, states, buffers[1 - cur], j, m, counter);
    cur = 1 - cur;
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaGetLastError();
  result = cur;
  return e;
}

// The item sort proper, for U = uint32 / uint64 and the supported block sizes (explicit
// instantiations in src/adaptive_bitonic.cu). Sorts buffers[0] (2^L items); `result` says which
// buffer holds the sorted items.
template <class U>
cudaError_t abi_sort_items(abisort::item_t<U>* buffers[2], abisort::side_node<abisort::item_t<U>>* side,
                           abisort::pq_state* states, int L, int block_bits,
                           unsigned long long* counter, cudaStream_t stream, int& result);

// ---- keys in, keys out ------------------------------------------------------------------------

// Inverse of key_traits<K>::ordered for every key but NaN (all NaNs share one ordered value).
template <class K>
__device__ __forceinline__ K key_from_ordered(typename key_traits<K>::ordered_type o) {
  using U = typename key_traits<K>::ordered_type;
  constexpr U sign = U{1} << (sizeof(U) * 8 - 1);
  if constexpr (std::is_integral_v<K>) {
    return static_cast<K>(std::is_signed_v<K> ? o ^ sign : o);
  } else {
    return detail::bit_cast<K>(static_cast<U>((o & sign) ? (o & ~sign) : ~o));
  }
}

// Items of padded position i: real keys (ordered bits, flipped for a descending sort), then
// sentinels.
template <class K>
__global__ void abi_encode_kernel(const K* keys, abisort::item_t<typename key_traits<K>::ordered_type>* items,
                                  abisort::index_t n, abisort::index_t padded,
                                  typename key_traits<K>::ordered_type flip) {
  using U = typename key_traits<K>::ordered_type;
  for (abisort::index_t i = static_cast<abisort::index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < padded; i += static_cast<abisort::index_t>(gridDim.x) * blockDim.x)
    items[i] = i < n ? abisort::item_traits<U>::make(key_traits<K>::ordered(keys[i]) ^ flip,
                                                 static_cast<std::uint32_t>(i))
                     : abisort::sentinel<U>(i);
}

// Keys back from the items (NaNs, whose bits the order forgets, from the copy), values
// gathered from the copy by position.
template <class K, class V>
__global__ void abi_decode_kernel(const abisort::item_t<typename key_traits<K>::ordered_type>* items,
                                  K* keys, const K* key_copy, V* values, const V* value_copy,
                                  abisort::index_t n, typename key_traits<K>::ordered_type flip) {
  using U = typename key_traits<K>::ordered_type;
  using traits = abisort::item_traits<U>;
  for (abisort::index_t i = static_cast<abisort::index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<abisort::index_t>(gridDim.x) * blockDim.x) {
    const auto item = items[i];
    const U o = traits::key(item) ^ flip;
    const std::uint32_t from = traits::position(item);
    if constexpr (std::is_floating_point_v<K>)
      keys[i] = o == static_cast<U>(~U{0}) ? key_copy[from] : key_from_ordered<K>(o);
    else
      keys[i] = key_from_ordered<K>(o);
    if constexpr (!std::is_same_v<V, no_value>) values[i] = value_copy[from];
  }
}

inline std::size_t abi_align(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// Sorts keys[0, n) (with values) by the library's order; stable. Workspace: two buffers of
// N = 2^ceil(log2 n) items (8 bytes for 32-bit keys, 16 for 64-bit; the free one at the end
// also holds copies of float keys and of the values), plus the side slots and pq states.
// `counter` (device-accessible, or null) receives the number of item comparisons.
template <class K, class V>
cudaError_t adaptive_bitonic_sort(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                                  abisort::index_t n, bool descending, int block_bits,
                                  unsigned long long* counter, cudaStream_t stream) {
  using U = typename key_traits<K>::ordered_type;
  using T = abisort::item_t<U>;
  if (block_bits == 0) block_bits = abisort::default_block_bits;
  if (!abi_block_bits_supported(block_bits)) return cudaErrorInvalidValue;
  if (n > (abisort::index_t{1} << abisort::max_items_log2)) return cudaErrorInvalidValue;
  const int L = abisort::padded_log2(n, block_bits);
  const abisort::index_t padded = abisort::index_t{1} << L;
  const abi_sizes sizes = abi_workspace(L, block_bits);
  const int free_buffer = 1 - (L - block_bits) % 2;
  std::size_t copies = 0;
  if constexpr (std::is_floating_point_v<K>) copies += abi_align(n * sizeof(K));
  if constexpr (!std::is_same_v<V, no_value>) copies += n * sizeof(V);
  std::size_t buffer_bytes[2] = {abi_align(padded * sizeof(T)), abi_align(padded * sizeof(T))};
  if (copies > buffer_bytes[free_buffer]) buffer_bytes[free_buffer] = abi_align(copies);
  const std::size_t side_bytes = abi_align(sizes.side_nodes * sizeof(abisort::side_node<T>));
  const std::size_t state_bytes = abi_align(sizes.states * sizeof(abisort::pq_state));
  const std::size_t total = buffer_bytes[0] + buffer_bytes[1] + side_bytes + state_bytes;
  if (!temp) {
    temp_bytes = n < 2 ? 0 : total;
    return cudaSuccess;
  }
  if (n < 2) return cudaSuccess;
  if (temp_bytes < total) return cudaErrorInvalidValue;
  char* base = static_cast<char*>(temp);
  T* buffers[2] = {reinterpret_cast<T*>(base), reinterpret_cast<T*>(base + buffer_bytes[0])};
  auto* side = reinterpret_cast<abisort::side_node<T>*>(base + buffer_bytes[0] + buffer_bytes[1]);
  auto* states = reinterpret_cast<abisort::pq_state*>(base + buffer_bytes[0] + buffer_bytes[1] +
                                                  side_bytes);
  const U flip = descending ? static_cast<U>(~U{0}) : U{0};
  constexpr int threads = 256;
  const auto grid = [](abisort::index_t count) {
    const abisort::index_t blocks = (count + threads - 1) / threads;
    return static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
  };
  abi_encode_kernel<K><<<grid(padded), threads, 0, stream>>>(keys, buffers[0], n, padded, flip);
  int result = 0;
  cudaError_t e = abi_sort_items<U>(buffers, side, states, L, block_bits, counter, stream, result);
  if (e != cudaSuccess) return e;
  char* spare = reinterpret_cast<char*>(buffers[1 - result]);
  K* key_copy = nullptr;
  V* value_copy = nullptr;
  if constexpr (std::is_floating_point_v<K>) {
    key_copy = reinterpret_cast<K*>(spare);
    e = cudaMemcpyAsync(key_copy, keys, n * sizeof(K), cudaMemcpyDeviceToDevice, stream);
    spare += abi_align(n * sizeof(K));
  }
  if constexpr (!std::is_same_v<V, no_value>) {
    value_copy = reinterpret_cast<V*>(spare);
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(value_copy, values, n * sizeof(V), cudaMemcpyDeviceToDevice, stream);
  }
  if (e != cudaSuccess) return e;
  abi_decode_kernel<K, V><<<grid(n), threads, 0, stream>>>(buffers[result], keys, key_copy, values,
                                                          value_copy, n, flip);
  return cudaGetLastError();
}

}  // namespace gpusort::detail::device
