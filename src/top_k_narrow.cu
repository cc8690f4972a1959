// top_k, select_k and top_k_rows of narrow keys (approx.hpp, narrow_top_k): the keys widened
// in the workspace to 32-bit keys of the same order, the 32-bit top-k of those with every
// key's position (src/approx_<key>.cu), then the keys (and values) gathered from the caller's
// arrays by position. Workspace: [wide keys, n x 4 | wide out keys, rows k x 4 | positions,
// rows k x 8 | the 32-bit top-k's own], each rounded up to 256 bytes.
#include <algorithm>
#include <vector>

#include "gpusort/approx.hpp"
#include "gpusort/detail/core/narrow_keys.hpp"

namespace gpusort::detail {

namespace {

// The 32-bit key whose order is K's: float for the 16-bit floats (exact: every value, both
// zeros, NaNs stay NaNs, which top_k ranks largest whatever their bits), int32 or uint32.
template <class K>
using wide_key_t = std::conditional_t<
    float16_key<K>, float,
    std::conditional_t<std::is_signed_v<K>, std::int32_t, std::uint32_t>>;

template <class K>
GPUSORT_HD wide_key_t<K> widen_key(K key) {
  if constexpr (std::is_same_v<K, __half>)
    return __half2float(key);
  else if constexpr (std::is_same_v<K, __nv_bfloat16>)
    return __bfloat162float(key);
  else
    return static_cast<wide_key_t<K>>(key);
}

using position_t = payload<8>;  // the 32-bit top-k's values: each key's position (or column)

constexpr int threads = 256;

unsigned blocks_for(std::uint64_t n) {
  return static_cast<unsigned>(std::clamp<std::uint64_t>((n + threads - 1) / threads, 1, 8192));
}

template <class K>
__global__ void __launch_bounds__(threads)
    widen_kernel(const K* keys, wide_key_t<K>* wide, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{threads} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * threads)
    wide[i] = widen_key(keys[i]);
}

// Output j of row j / k: the key at its position, and its value (or the position itself).
template <class K, class P>
__global__ void __launch_bounds__(threads)
    gather_kernel(const K* keys, const P* values, const std::uint64_t* chosen, std::uint64_t count,
                  std::uint64_t k, std::uint64_t row_length, bool positions, K* out_keys,
                  P* out_values) {
  for (std::uint64_t j = blockIdx.x * std::uint64_t{threads} + threadIdx.x; j < count;
       j += std::uint64_t{gridDim.x} * threads) {
    const std::uint64_t at = chosen[j];
    const std::uint64_t from = j / k * row_length + at;
    out_keys[j] = keys[from];
    if constexpr (!std::is_same_v<P, no_value>) {
      if (positions) {
        if constexpr (sizeof(P) == 4 || sizeof(P) == 8) {
          using I = std::conditional_t<sizeof(P) == 4, std::uint32_t, std::uint64_t>;
          const I index = static_cast<I>(at);
          memcpy(&out_values[j], &index, sizeof(P));
        }
      } else {
        out_values[j] = values[from];
      }
    }
  }
}

}  // namespace

template <class K, class P>
cudaError_t narrow_top_k(void* temp, std::size_t& temp_bytes, const K* keys, const P* values,
                         std::uint64_t rows, std::uint64_t row_length, bool as_rows,
                         bool positions, K* out_keys, P* out_values, std::uint64_t k,
                         const options& opt) {
  using W = wide_key_t<K>;
  if (positions && sizeof(P) != 4 && sizeof(P) != 8) return cudaErrorInvalidValue;
  if (rows != 0 && row_length > ~std::uint64_t{0} / rows) return cudaErrorInvalidValue;
  const std::uint64_t n = rows * row_length;
  if (k > row_length || (rows != 0 && k > ~std::uint64_t{0} / 16 / rows))
    return cudaErrorInvalidValue;
  const std::uint64_t count = rows * k;
  const std::size_t wide_bytes = align_workspace(sizeof(W) * n);
  const std::size_t out_bytes = align_workspace(sizeof(W) * count);
  const std::size_t chosen_bytes = align_workspace(sizeof(position_t) * count);
  const std::size_t inner_at = wide_bytes + out_bytes + chosen_bytes;
  // The pointers the 32-bit top-k sees; at the query, where they do not exist yet, none (the
  // selection's workspace depends on the shape alone).
  char* base = static_cast<char*>(temp);
  W* wide = temp ? reinterpret_cast<W*>(base) : nullptr;
  W* wide_out = temp ? reinterpret_cast<W*>(base + wide_bytes) : nullptr;
  auto* chosen = temp ? reinterpret_cast<position_t*>(base + wide_bytes + out_bytes) : nullptr;
  void* inner = temp ? base + inner_at : nullptr;
  std::size_t inner_bytes = temp ? (temp_bytes > inner_at ? temp_bytes - inner_at : 0) : 0;
  const auto select = [&] {
    return as_rows ? detail::top_k_rows_positions<W, position_t>(inner, inner_bytes, wide, rows,
                                                                 row_length, wide_out, chosen, k,
                                                                 opt)
                   : detail::top_k_positions<W, position_t>(inner, inner_bytes, wide, n, wide_out,
                                                            chosen, k, opt);
  };
  if (!temp) {
    const cudaError_t e = select();
    if (e == cudaSuccess) temp_bytes = inner_at + inner_bytes;
    return e;
  }
  if (temp_bytes < inner_at) return cudaErrorInvalidValue;
  cudaError_t e = validate_device_array(keys, n, sizeof(K), alignof(K));
  if (e == cudaSuccess) e = validate_device_array(out_keys, count, sizeof(K), alignof(K));
  if (e == cudaSuccess && !std::is_same_v<P, no_value>) {
    if (!positions) e = validate_device_array(values, n, sizeof(P), sizeof(P));
    if (e == cudaSuccess) e = validate_device_array(out_values, count, sizeof(P), sizeof(P));
  }
  if (e != cudaSuccess || count == 0) return e;
  widen_kernel<K><<<blocks_for(n), threads, 0, opt.stream>>>(keys, wide, n);
  e = cudaGetLastError();
  if (e == cudaSuccess) e = select();
  if (e != cudaSuccess) return e;
  gather_kernel<K, P><<<blocks_for(count), threads, 0, opt.stream>>>(
      keys, values, reinterpret_cast<const std::uint64_t*>(chosen), count, k, row_length,
      positions, out_keys, out_values);
  return cudaGetLastError();
}

template <class K, class P>
void cpu_narrow_top_k(const K* keys, const P* values, std::uint64_t rows,
                      std::uint64_t row_length, bool as_rows, K* out_keys, P* out_values,
                      std::uint64_t k, const options& opt) {
  using W = wide_key_t<K>;
  const std::uint64_t n = rows * row_length, count = rows * k;
  std::vector<W> wide(n), wide_out(count);
  std::vector<std::uint64_t> at(n), chosen(count);
  for (std::uint64_t i = 0; i < n; ++i) {
    wide[i] = widen_key(keys[i]);
    at[i] = as_rows ? i % row_length : i;
  }
  auto* at_values = reinterpret_cast<const position_t*>(at.data());
  auto* chosen_values = reinterpret_cast<position_t*>(chosen.data());
  if (as_rows)
    detail::cpu_top_k_rows<W, position_t>(wide.data(), at_values, rows, row_length,
                                          wide_out.data(), chosen_values, k, opt);
  else
    detail::cpu_top_k<W, position_t>(wide.data(), at_values, n, wide_out.data(), chosen_values, k,
                                     opt);
  for (std::uint64_t j = 0; j < count; ++j) {
    const std::uint64_t from = j / k * row_length + chosen[j];
    out_keys[j] = keys[from];
    if constexpr (!std::is_same_v<P, no_value>)
      if (values) out_values[j] = values[from];
  }
}

#define GPUSORT_INSTANTIATE_NARROW_TOP_K(K, P)                                                   \
  template cudaError_t narrow_top_k<K, P>(void*, std::size_t&, const K*, const P*, std::uint64_t, \
                                          std::uint64_t, bool, bool, K*, P*, std::uint64_t,      \
                                          const options&);                                       \
  template void cpu_narrow_top_k<K, P>(const K*, const P*, std::uint64_t, std::uint64_t, bool,   \
                                       K*, P*, std::uint64_t, const options&);
#define GPUSORT_INSTANTIATE_NARROW_TOP_K_KEY(K)  \
  GPUSORT_INSTANTIATE_NARROW_TOP_K(K, no_value)   \
  GPUSORT_INSTANTIATE_NARROW_TOP_K(K, payload<4>) \
  GPUSORT_INSTANTIATE_NARROW_TOP_K(K, payload<8>) \
  GPUSORT_INSTANTIATE_NARROW_TOP_K(K, payload<16>)
GPUSORT_FOR_EACH_NARROW_KEY(GPUSORT_INSTANTIATE_NARROW_TOP_K_KEY)
#undef GPUSORT_INSTANTIATE_NARROW_TOP_K_KEY
#undef GPUSORT_INSTANTIATE_NARROW_TOP_K

}  // namespace gpusort::detail
