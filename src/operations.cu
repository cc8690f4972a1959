// unique and searchsorted on the device (include/gpusort/operations.hpp): the library's sort,
// then CUB's run-length encoding (or, past INT_MAX keys, light kernels and a scan), or binary
// searches; and sample_candidates, a block a row. Keys compare in the library's order (less<K>, or its order codes), so that equal
// means what the sort means (every NaN one key).
#include <algorithm>

#include <climits>
#include <type_traits>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "gpusort/operations.hpp"

namespace gpusort::detail {
namespace {

constexpr unsigned threads_per_block = 256;

unsigned blocks_for(std::uint64_t n) {
  return static_cast<unsigned>(
      std::max<std::uint64_t>(1, std::min<std::uint64_t>((n + threads_per_block - 1) / threads_per_block, 65536)));
}

__device__ std::uint64_t first_index() { return std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; }
__device__ std::uint64_t grid_stride() { return std::uint64_t{gridDim.x} * blockDim.x; }

// starts[i] = 1 where sorted[i] begins a run of equal keys, else 0.
template <class K>
__global__ void mark_run_starts(const K* sorted, std::uint64_t n, std::uint64_t* starts) {
  const less<K> before;
  for (std::uint64_t i = first_index(); i < n; i += grid_stride())
    starts[i] = (i == 0 || before(sorted[i - 1], sorted[i])) ? 1 : 0;
}

// runs[i]: the inclusive scan of the starts, so sorted[i] is in run runs[i] - 1. The first key
// of each run goes to unique_out, the last key's position + 1 to ends (when counts are asked
// for), and the number of runs to *num_unique.
template <class K>
__global__ void gather_runs(const K* sorted, std::uint64_t n, const std::uint64_t* runs,
                            K* unique_out, std::uint64_t* ends, std::uint64_t* num_unique) {
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) {
    const std::uint64_t run = runs[i] - 1;
    if (i == 0 || runs[i - 1] != runs[i]) unique_out[run] = sorted[i];
    if (ends && (i + 1 == n || runs[i + 1] != runs[i])) ends[run] = i + 1;
    if (i + 1 == n) *num_unique = runs[i];
  }
}

// lengths[j] = ends[j] - ends[j - 1] (ends[-1] = 0) for the *num_unique runs: into another
// array, as the neighbours read ends.
__global__ void run_lengths(const std::uint64_t* ends, const std::uint64_t* num_unique,
                            std::uint64_t* lengths) {
  const std::uint64_t runs = *num_unique;
  for (std::uint64_t j = first_index(); j < runs; j += grid_stride())
    lengths[j] = ends[j] - (j == 0 ? 0 : ends[j - 1]);
}

__global__ void copy_runs(const std::uint64_t* from, const std::uint64_t* num_unique,
                          std::uint64_t* to) {
  const std::uint64_t runs = *num_unique;
  for (std::uint64_t j = first_index(); j < runs; j += grid_stride()) to[j] = from[j];
}

// positions[origin[j]] (or positions[j] without origin) = the place of queries[j].
template <class K>
__global__ void search_each(const K* sorted, std::uint64_t n, const K* queries,
                            const std::uint64_t* origin, std::uint64_t m,
                            std::int64_t* positions, side where) {
  for (std::uint64_t j = first_index(); j < m; j += grid_stride())
    positions[origin ? origin[j] : j] =
        static_cast<std::int64_t>(place_in_sorted(sorted, n, queries[j], where));
}

// A float key's order code (key_traits.hpp): equal codes are equal keys in the library's order
// (every NaN one code, -0.0 and +0.0 two), so CUB's run-length encoding, which compares with ==,
// finds the library's runs on the codes. A NaN comes back (codes_to_keys) as one NaN of its type.
template <class K>
struct to_order_code {
  __device__ typename key_traits<K>::ordered_type operator()(K key) const {
    return key_traits<K>::ordered(key);
  }
};

// Order codes back to keys, in place: unique_out[j] for the *num_unique runs. (CUB's run-length
// encoding writes codes: through an output iterator that made keys, it would store each code
// in the iterator's value type first, and a u32 code does not survive a float.)
template <class K>
__global__ void codes_to_keys(K* unique_out, const std::uint64_t* num_unique) {
  using U = typename key_traits<K>::ordered_type;
  constexpr U sign = U{1} << (sizeof(U) * 8 - 1);
  const std::uint64_t runs = *num_unique;
  static_assert(std::is_floating_point_v<K>, "integer keys' runs are found on the keys");
  for (std::uint64_t j = first_index(); j < runs; j += grid_stride()) {
    const U code = bit_cast<U>(unique_out[j]);
    unique_out[j] = bit_cast<K>(static_cast<U>((code & sign) ? (code & ~sign) : ~code));
  }
}

// The runs of n sorted keys (n <= INT_MAX, CUB's count type) by CUB's run-length encoding:
// one pass over the keys. Integer keys are equal where their codes are, so their runs are
// found on the keys themselves; float keys go as codes.
template <class K>
cudaError_t encode_runs(void* temp, std::size_t& temp_bytes, const K* sorted, std::uint64_t n,
                        K* unique_out, std::uint64_t* counts_out, std::uint64_t* num_unique,
                        cudaStream_t stream) {
  const int items = static_cast<int>(n);
  if constexpr (std::is_integral_v<K>) {
    return counts_out ? cub::DeviceRunLengthEncode::Encode(temp, temp_bytes, sorted, unique_out,
                                                           counts_out, num_unique, items, stream)
                      : cub::DeviceRunLengthEncode::Encode(temp, temp_bytes, sorted, unique_out,
                                                           thrust::make_discard_iterator(),
                                                           num_unique, items, stream);
  } else {
    using U = typename key_traits<K>::ordered_type;
    const auto codes = thrust::make_transform_iterator(sorted, to_order_code<K>{});
    auto* codes_out = reinterpret_cast<U*>(unique_out);  // same size: the codes, then the keys
    const cudaError_t e =
        counts_out ? cub::DeviceRunLengthEncode::Encode(temp, temp_bytes, codes, codes_out,
                                                        counts_out, num_unique, items, stream)
                   : cub::DeviceRunLengthEncode::Encode(temp, temp_bytes, codes, codes_out,
                                                        thrust::make_discard_iterator(), num_unique,
                                                        items, stream);
    if (e != cudaSuccess || !temp) return e;
    codes_to_keys<<<blocks_for(n), threads_per_block, 0, stream>>>(unique_out, num_unique);
    return cudaGetLastError();
  }
}

bool ascending_nans_last(const options& opt) {
  return opt.direction == order::ascending && opt.nans == nan_order::last;
}

// The sort's options: the caller's, except that float keys never take cub_radix bare (CUB's
// own order puts negative NaNs first and ties -0.0 with +0.0; automatic fixes that up).
template <class K>
options sort_options(const options& opt) {
  options sort_opt = opt;
  if (std::is_floating_point_v<K> && sort_opt.algo == algorithm::cub_radix)
    sort_opt.algo = algorithm::automatic;
  return sort_opt;
}

// Integer keys in the sort of `automatic` (or cub_radix) go through CUB's radix sort straight
// from the caller's keys into the sorted copy: no copy first (one pass over the keys less).
template <class K>
bool radix_sorts_the_copy(const options& opt, bool by_cub) {
  return std::is_integral_v<K> && by_cub &&
         (opt.algo == algorithm::automatic || opt.algo == algorithm::cub_radix);
}

template <class K>
cudaError_t radix_sort_copy(void* temp, std::size_t& temp_bytes, const K* keys, K* sorted,
                            std::uint64_t n, cudaStream_t stream) {
  if constexpr (std::is_integral_v<K>)
    return cub::DeviceRadixSort::SortKeys(temp, temp_bytes, keys, sorted, static_cast<int>(n), 0,
                                          static_cast<int>(sizeof(K) * 8), stream);
  else
    return cudaErrorNotSupported;  // never asked: radix_sorts_the_copy
}

// Queries sorted first from this many on: their searches then walk the array in order.
constexpr std::uint64_t sorted_queries_from = std::uint64_t{1} << 16;

}  // namespace

template <class K>
cudaError_t unique_keys(void* temp, std::size_t& temp_bytes, const K* keys, std::uint64_t n,
                        K* unique_out, std::uint64_t* counts_out, std::uint64_t* num_unique,
                        const options& opt) {
  if (!ascending_nans_last(opt)) return cudaErrorInvalidValue;
  const options sort_opt = sort_options<K>(opt);
  // Up to INT_MAX keys the runs are CUB's run-length encoding of the sorted keys; beyond, the
  // run starts are marked, scanned (8 bytes a key) and gathered.
  const bool by_cub = n <= INT_MAX;
  const std::size_t copy_bytes = align_workspace(sizeof(K) * n);
  const std::size_t runs_bytes = by_cub ? 0 : align_workspace(sizeof(std::uint64_t) * n);
  const bool radix_copy = radix_sorts_the_copy<K>(opt, by_cub);
  std::size_t sort_bytes = 0, runs_temp_bytes = 0;
  cudaError_t e =
      radix_copy ? radix_sort_copy<K>(nullptr, sort_bytes, keys, nullptr, n, opt.stream)
                 : sort_workspace_bytes<K, no_value>(n, sort_opt, sort_bytes);  // keys unchecked yet
  if (e != cudaSuccess) return e;
  e = by_cub ? encode_runs<K>(nullptr, runs_temp_bytes, keys, n, unique_out, counts_out,
                              num_unique, opt.stream)
             : cub::DeviceScan::InclusiveSum(nullptr, runs_temp_bytes,
                                             static_cast<std::uint64_t*>(nullptr), n, opt.stream);
  if (e != cudaSuccess) return e;
  const std::size_t shared_bytes = std::max(sort_bytes, runs_temp_bytes);  // one after the other
  if (!temp) {
    temp_bytes = copy_bytes + runs_bytes + shared_bytes;
    return cudaSuccess;
  }
  if (temp_bytes < copy_bytes + runs_bytes + shared_bytes) return cudaErrorInvalidValue;
  e = validate_device_array(num_unique, 1, sizeof(std::uint64_t), alignof(std::uint64_t));
  if (e == cudaSuccess && n > 0) e = validate_device_array(keys, n, sizeof(K), alignof(K));
  if (e == cudaSuccess && n > 0) e = validate_device_array(unique_out, n, sizeof(K), alignof(K));
  if (e == cudaSuccess && n > 0 && counts_out)
    e = validate_device_array(counts_out, n, sizeof(std::uint64_t), alignof(std::uint64_t));
  if (e != cudaSuccess) return e;
  if (n == 0) return cudaMemsetAsync(num_unique, 0, sizeof(std::uint64_t), opt.stream);

  auto* sorted = static_cast<K*>(temp);
  auto* runs = reinterpret_cast<std::uint64_t*>(static_cast<char*>(temp) + copy_bytes);
  void* shared = static_cast<char*>(temp) + copy_bytes + runs_bytes;
  if (radix_copy) {
    e = radix_sort_copy<K>(shared, sort_bytes, keys, sorted, n, opt.stream);
  } else {
    e = cudaMemcpyAsync(sorted, keys, sizeof(K) * n, cudaMemcpyDeviceToDevice, opt.stream);
    if (e == cudaSuccess) e = detail::sort_keys<K>(shared, sort_bytes, sorted, n, sort_opt);
  }
  if (e != cudaSuccess) return e;
  if (by_cub)
    return encode_runs<K>(shared, runs_temp_bytes, sorted, n, unique_out, counts_out, num_unique,
                          opt.stream);
  const unsigned blocks = blocks_for(n);
  mark_run_starts<<<blocks, threads_per_block, 0, opt.stream>>>(sorted, n, runs);
  e = cub::DeviceScan::InclusiveSum(shared, runs_temp_bytes, runs, n, opt.stream);
  if (e != cudaSuccess) return e;
  gather_runs<<<blocks, threads_per_block, 0, opt.stream>>>(sorted, n, runs, unique_out, counts_out,
                                                             num_unique);
  if (counts_out) {  // counts_out holds the runs' ends; runs is free again
    run_lengths<<<blocks, threads_per_block, 0, opt.stream>>>(counts_out, num_unique, runs);
    copy_runs<<<blocks, threads_per_block, 0, opt.stream>>>(runs, num_unique, counts_out);
  }
  return cudaGetLastError();
}

template <class K>
cudaError_t searchsorted(void* temp, std::size_t& temp_bytes, const K* sorted, std::uint64_t n,
                         const K* queries, std::uint64_t m, std::int64_t* positions, side where,
                         const options& opt) {
  if (!ascending_nans_last(opt)) return cudaErrorInvalidValue;
  const options sort_opt = sort_options<K>(opt);
  const bool sort_queries = m >= sorted_queries_from;
  const std::size_t copy_bytes = sort_queries ? align_workspace(sizeof(K) * m) : 0;
  const std::size_t origin_bytes = sort_queries ? align_workspace(sizeof(std::uint64_t) * m) : 0;
  std::size_t sort_bytes = 0;
  using P = payload<sizeof(std::uint64_t)>;
  if (sort_queries) {
    const cudaError_t q = sort_workspace_bytes<K, P>(m, sort_opt, sort_bytes);  // of the copies
    if (q != cudaSuccess) return q;
  }
  if (!temp) {
    temp_bytes = copy_bytes + origin_bytes + sort_bytes;
    return cudaSuccess;
  }
  if (temp_bytes < copy_bytes + origin_bytes + sort_bytes) return cudaErrorInvalidValue;
  cudaError_t e = cudaSuccess;
  if (n > 0) e = validate_device_array(sorted, n, sizeof(K), alignof(K));
  if (e == cudaSuccess && m > 0) e = validate_device_array(queries, m, sizeof(K), alignof(K));
  if (e == cudaSuccess && m > 0)
    e = validate_device_array(positions, m, sizeof(std::int64_t), alignof(std::int64_t));
  if (e != cudaSuccess || m == 0) return e;
  const K* searched = queries;
  std::uint64_t* origin = nullptr;
  if (sort_queries) {
    auto* copy = static_cast<K*>(temp);
    origin = reinterpret_cast<std::uint64_t*>(static_cast<char*>(temp) + copy_bytes);
    void* sort_temp = static_cast<char*>(temp) + copy_bytes + origin_bytes;
    e = cudaMemcpyAsync(copy, queries, sizeof(K) * m, cudaMemcpyDeviceToDevice, opt.stream);
    if (e == cudaSuccess) e = fill_indices(origin, m, opt.stream);
    if (e == cudaSuccess)
      e = detail::sort_pairs<K, P>(sort_temp, sort_bytes, copy, reinterpret_cast<P*>(origin), m, sort_opt);
    if (e != cudaSuccess) return e;
    searched = copy;
  }
  search_each<<<blocks_for(m), threads_per_block, 0, opt.stream>>>(sorted, n, searched, origin, m,
                                                                    positions, where);
  return cudaGetLastError();
}

// sample_candidates' draw of one row (index_math/sampling.hpp) by a block: the first number
// (past the NaNs top-k puts first), the row's total weight, then scans over the candidates in
// tiles of Threads: the kept ones (a prefix) with their weight, and the first of them whose
// running weight passes the target. A candidate's weight is recomputed on each pass rather
// than kept: k is a few thousand at most where decoding samples. Values are float32, or
// the logits' own float16 or bfloat16 (read as floats: no conversion kernel before the draw).
template <int Threads, class T>
__global__ void __launch_bounds__(Threads)
    sample_rows(const T* values, const std::int64_t* indices, std::uint64_t k, float p,
                float inverse_temperature, const float* uniforms, std::int64_t* tokens) {
  using block_scan = cub::BlockScan<float, Threads>;
  using block_reduce = cub::BlockReduce<float, Threads>;
  __shared__ union {
    typename block_scan::TempStorage scan;
    typename block_reduce::TempStorage reduce;
  } temp;
  __shared__ unsigned long long first_number, kept_count, chosen;
  __shared__ unsigned kept_weight_bits;  // the kept weight's bits: non-negative floats order as integers
  __shared__ float total;
  const std::uint64_t row = blockIdx.x;
  const T* row_values = values + row * k;
  const auto v = [&](std::uint64_t i) { return static_cast<float>(row_values[i]); };
  if (threadIdx.x == 0) {
    first_number = chosen = k;
    kept_count = 0;
    kept_weight_bits = 0;
  }
  __syncthreads();
  for (std::uint64_t i = threadIdx.x; i < k; i += Threads)
    if (v(i) == v(i)) {
      atomicMin(&first_number, static_cast<unsigned long long>(i));
      break;
    }
  __syncthreads();
  if (first_number == k) {  // a row of NaNs: its first candidate
    if (threadIdx.x == 0) tokens[row] = indices[row * k];
    return;
  }
  const float top = v(first_number);
  const auto weight = [&](std::uint64_t i) {
    return i < k ? index_math::candidate_weight(v(i), top, inverse_temperature) : 0.0f;
  };
  float mine = 0.0f;
  for (std::uint64_t i = threadIdx.x; i < k; i += Threads) mine += weight(i);
  const float sum = block_reduce(temp.reduce).Sum(mine);
  if (threadIdx.x == 0) total = sum;
  __syncthreads();
  // Each candidate's weight before it and through it: a tile's scan plus the tiles before.
  const auto for_each_running = [&](auto&& visit) {
    float carry = 0.0f;
    for (std::uint64_t base = 0; base < k; base += Threads) {
      const std::uint64_t i = base + threadIdx.x;
      const float w = weight(i);
      float before = 0.0f, tile = 0.0f;
      block_scan(temp.scan).ExclusiveSum(w, before, tile);
      if (i < k) visit(i, carry + before, carry + before + w);
      carry += tile;
      __syncthreads();
    }
  };
  for_each_running([&](std::uint64_t i, float before, float through) {
    if (index_math::kept_by_top_p(before, total, p)) {
      atomicMax(&kept_count, static_cast<unsigned long long>(i + 1));
      atomicMax(&kept_weight_bits, __float_as_uint(through));
    }
  });
  __syncthreads();
  const float target = index_math::draw_target(uniforms[row], __uint_as_float(kept_weight_bits));
  for_each_running([&](std::uint64_t i, float, float through) {
    if (i < kept_count && through > target) atomicMin(&chosen, static_cast<unsigned long long>(i));
  });
  __syncthreads();
  if (threadIdx.x == 0) tokens[row] = indices[row * k + std::min(chosen, kept_count - 1)];
}

template <class T>
cudaError_t sample_candidates_of(const T* values, const std::int64_t* indices, std::uint64_t rows,
                                 std::uint64_t k, float p, float temperature,
                                 const float* uniforms, std::int64_t* tokens,
                                 cudaStream_t stream) {
  if (!sampling_arguments_valid(p, temperature) || (k == 0 && rows > 0) || rows > INT_MAX)
    return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  cudaError_t e = validate_device_array(values, rows * k, sizeof(T), alignof(T));
  if (e == cudaSuccess) e = validate_device_array(indices, rows * k, sizeof(std::int64_t), alignof(std::int64_t));
  if (e == cudaSuccess) e = validate_device_array(uniforms, rows, sizeof(float), alignof(float));
  if (e == cudaSuccess) e = validate_device_array(tokens, rows, sizeof(std::int64_t), alignof(std::int64_t));
  if (e != cudaSuccess) return e;
  // A row's candidates in as few tiles as a block holds: each tile is a scan and a barrier
  // on the row's serial path (k = 1,024 took 8 tiles of 128).
  const auto launch = [&]<int Threads>() {
    sample_rows<Threads, T><<<static_cast<unsigned>(rows), Threads, 0, stream>>>(
        values, indices, k, p, 1.0f / temperature, uniforms, tokens);
  };
  if (k <= 128) launch.template operator()<128>();
  else if (k <= 256) launch.template operator()<256>();
  else if (k <= 512) launch.template operator()<512>();
  else launch.template operator()<1024>();
  return cudaGetLastError();
}

cudaError_t sample_candidates(const float* values, const std::int64_t* indices, std::uint64_t rows,
                              std::uint64_t k, float p, float temperature, const float* uniforms,
                              std::int64_t* tokens, cudaStream_t stream) {
  return sample_candidates_of(values, indices, rows, k, p, temperature, uniforms, tokens, stream);
}
cudaError_t sample_candidates(const __half* values, const std::int64_t* indices,
                              std::uint64_t rows, std::uint64_t k, float p, float temperature,
                              const float* uniforms, std::int64_t* tokens, cudaStream_t stream) {
  return sample_candidates_of(values, indices, rows, k, p, temperature, uniforms, tokens, stream);
}
cudaError_t sample_candidates(const __nv_bfloat16* values, const std::int64_t* indices,
                              std::uint64_t rows, std::uint64_t k, float p, float temperature,
                              const float* uniforms, std::int64_t* tokens, cudaStream_t stream) {
  return sample_candidates_of(values, indices, rows, k, p, temperature, uniforms, tokens, stream);
}

#define GPUSORT_OPERATIONS(K)                                                                      \
  template cudaError_t unique_keys<K>(void*, std::size_t&, const K*, std::uint64_t, K*,          \
                                      std::uint64_t*, std::uint64_t*, const options&);            \
  template cudaError_t searchsorted<K>(void*, std::size_t&, const K*, std::uint64_t, const K*,   \
                                       std::uint64_t, std::int64_t*, side, const options&);
GPUSORT_OPERATIONS(std::uint32_t)
GPUSORT_OPERATIONS(std::int32_t)
GPUSORT_OPERATIONS(std::uint64_t)
GPUSORT_OPERATIONS(std::int64_t)
GPUSORT_OPERATIONS(float)
GPUSORT_OPERATIONS(double)
#undef GPUSORT_OPERATIONS

}  // namespace gpusort::detail
