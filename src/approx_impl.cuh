// The core layer of the approximate sort, top_k, the quality measure and approx_refine, for
// one key type: validation, then device/approx.cuh. src/approx_<key>.cu instantiates it.
#pragma once

#include "gpusort/approx.hpp"
#include "gpusort/detail/cpu/approx.hpp"
#include "gpusort/detail/device/approx.cuh"
#include "gpusort/detail/device/baselines.hpp"

namespace gpusort::detail {

// options -> approx_config; false if the options are not valid.
inline bool config_of(const options& opt, device::approx_config& cfg) {
  if (!check_approx_options(opt).empty()) return false;
  cfg = {approx_intervals(opt), opt.interval_splitters == splitters::sampled,
         opt.direction == order::descending};
  return true;
}

// The segmented sort instantiated in src/segmented_<key>.cu.
template <class K, class V>
struct sort_intervals {
  cudaError_t operator()(void* t, std::size_t& bytes, K* k, V* v, std::uint64_t n,
                         const segment_list& segs, bool descending, cudaStream_t stream) const {
    // NaNs as the largest keys, as the intervals put them (approx_refine's NaN placement
    // comes after, src/sort_impl.cuh).
    return sort_segments<K, V>(t, bytes, k, v, n, segs,
                               with_nans_largest({.direction = descending ? order::descending
                                                                          : order::ascending,
                                                  .stream = stream}));
  }
};

// top_k's candidate sort: codes with their 32-bit places, by CUB's radix sort (stable, so
// the padding stays behind the candidates; src/baselines_<key>.cu).
struct sort_codes {
  template <class U>
  cudaError_t operator()(void* t, std::size_t& bytes, U* codes, std::uint32_t* places,
                         std::uint64_t n, cudaStream_t stream) const {
    return device::cub_radix_sort(t, bytes, codes, reinterpret_cast<payload<4>*>(places), n,
                                  false, stream);
  }
};

template <class K, class V>
cudaError_t validate_arrays(const K* keys, const V* values, std::uint64_t n) {
  cudaError_t e = validate_device_array(keys, n, sizeof(K), alignof(K));
  if (e == cudaSuccess && !std::is_same_v<V, no_value>)
    e = validate_device_array(values, n, sizeof(V), sizeof(V));
  return e;
}

template <class K, class P>
cudaError_t approx_sort(void* temp, std::size_t& temp_bytes, const K* keys, K* out_keys,
                        const P* values, P* out_values, std::uint64_t n,
                        std::uint64_t* offsets, const options& opt) {
  device::approx_config cfg;
  if (!config_of(opt, cfg)) return cudaErrorInvalidValue;
  if (temp) {
    cudaError_t e = validate_arrays(keys, values, n);
    if (e == cudaSuccess) e = validate_arrays(out_keys, out_values, n);
    if (e == cudaSuccess)
      e = validate_device_array(offsets, cfg.intervals + std::uint64_t{1}, 8, 8);
    if (e != cudaSuccess) return e;
  }
  return device::approx_scatter(temp, temp_bytes, keys, out_keys, values, out_values, n, offsets,
                                cfg, opt.stream);
}

// approx_refine (and the CPU's top_k) use sampled splitters unless told the interval count:
// then the intervals (or the candidates) stay small on any input.
inline device::approx_config exact_config(const options& opt, std::uint64_t n,
                                          int slot_bytes) {
  device::approx_config cfg{approx_intervals(opt), opt.interval_splitters == splitters::sampled,
                            opt.direction == order::descending};
  if (opt.intervals == 0) {
    cfg.intervals = index_math::exact_intervals(n, slot_bytes);
    cfg.sampled = true;
  }
  return cfg;
}

template <class K, class P>
cudaError_t top_k(void* temp, std::size_t& temp_bytes, const K* keys, const P* values,
                  std::uint64_t n, K* out_keys, P* out_values, std::uint64_t k,
                  const options& opt, bool in_order) {
  if (!check_approx_options(opt).empty() || k > n) return cudaErrorInvalidValue;
  // Sampled splitters around the k-th key: the keys are read once for the candidates, and
  // only about k of them are sorted (or, not in order, selected). options.intervals and
  // interval_splitters do not apply.
  const device::approx_config cfg{.descending = opt.direction == order::descending,
                                  .in_order = in_order};
  if (temp) {
    cudaError_t e = validate_arrays(keys, values, n);
    if (e == cudaSuccess) e = validate_arrays(out_keys, out_values, k);
    if (e != cudaSuccess) return e;
  }
  return device::top_k(temp, temp_bytes, keys, values, n, out_keys, out_values, k, cfg,
                       sort_codes{}, sort_intervals<K, P>{}, opt.stream);
}

// top_k with the keys' positions as values (P: the payload of the index type).
template <class K, class P>
cudaError_t top_k_positions(void* temp, std::size_t& temp_bytes, const K* keys, std::uint64_t n,
                            K* out_keys, P* out_positions, std::uint64_t k, const options& opt,
                            bool in_order) {
  if (!check_approx_options(opt).empty() || k > n) return cudaErrorInvalidValue;
  const device::approx_config cfg{.descending = opt.direction == order::descending,
                                  .in_order = in_order};
  if (temp) {
    cudaError_t e = validate_arrays(keys, static_cast<const no_value*>(nullptr), n);
    if (e == cudaSuccess) e = validate_arrays(out_keys, out_positions, k);
    if (e != cudaSuccess) return e;
  }
  return device::top_k<K, P>(temp, temp_bytes, keys, device::positions<P>{}, n, out_keys,
                             out_positions, k, cfg, sort_codes{}, sort_intervals<K, P>{},
                             opt.stream);
}

template <class K, class P>
cudaError_t top_k_rows(void* temp, std::size_t& temp_bytes, const K* keys, const P* values,
                       std::uint64_t rows, std::uint64_t row_length, K* out_keys, P* out_values,
                       std::uint64_t k, const options& opt) {
  if (!check_approx_options(opt).empty() || k > row_length) return cudaErrorInvalidValue;
  if (row_length && rows > ~std::uint64_t{0} / row_length) return cudaErrorInvalidValue;
  if (temp) {
    cudaError_t e = validate_arrays(keys, values, rows * row_length);
    if (e == cudaSuccess) e = validate_arrays(out_keys, out_values, rows * k);
    if (e != cudaSuccess) return e;
  }
  return device::top_k_rows(temp, temp_bytes, keys, values, rows, row_length, out_keys,
                            out_values, k, opt.direction == order::descending,
                            sort_intervals<K, P>{}, opt.stream);
}

// top_k_rows with the columns as values: the per-row select generates them (in_order false:
// each row's k in no order, the sort of the k skipped); other shapes run top_k_rows on a
// column matrix made in the workspace, in order (16-bit keys, which have no batched sort:
// cudaErrorNotSupported).
template <class K, class P>
cudaError_t top_k_rows_positions(void* temp, std::size_t& temp_bytes, const K* keys,
                                 std::uint64_t rows, std::uint64_t row_length, K* out_keys,
                                 P* out_columns, std::uint64_t k, const options& opt,
                                 bool in_order) {
  if (!check_approx_options(opt).empty() || k > row_length) return cudaErrorInvalidValue;
  if (row_length && rows > ~std::uint64_t{0} / row_length) return cudaErrorInvalidValue;
  const bool descending = opt.direction == order::descending;
  if (temp) {
    cudaError_t e = validate_arrays(keys, static_cast<const no_value*>(nullptr), rows * row_length);
    if (e == cudaSuccess) e = validate_arrays(out_keys, out_columns, rows * k);
    if (e != cudaSuccess) return e;
  }
  if (index_math::row_select_fits(row_length, k))
    return device::top_k_rows_by_select(temp, temp_bytes, keys, device::positions<P>{}, rows,
                                        row_length, out_keys, out_columns, k, descending,
                                        in_order, opt.stream);
  if constexpr (sizeof(K) == 2) {
    return cudaErrorNotSupported;
  } else {
    const std::uint64_t n = rows * row_length;
    const std::size_t matrix_bytes = (sizeof(P) * n + 255) / 256 * 256;
    std::size_t rest = 0;
    char* const base = static_cast<char*>(temp);
    cudaError_t e = top_k_rows<K, P>(nullptr, rest, keys, nullptr, rows, row_length, out_keys,
                                     out_columns, k, opt);
    if (!temp || e != cudaSuccess) {
      temp_bytes = matrix_bytes + rest;
      return e;
    }
    if (temp_bytes < matrix_bytes + rest) return cudaErrorInvalidValue;
    if (rows == 0 || k == 0) return cudaSuccess;
    auto* columns = reinterpret_cast<P*>(base);
    e = device::fill_row_columns(columns, n, row_length, opt.stream);
    if (e == cudaSuccess)
      e = top_k_rows<K, P>(base + matrix_bytes, rest, keys, columns, rows, row_length, out_keys,
                           out_columns, k, opt);
    return e;
  }
}

template <class K>
cudaError_t approx_measure(void* temp, std::size_t& temp_bytes, const K* keys, std::uint64_t n,
                           const std::uint64_t* offsets, unsigned long long* quality,
                           const options& opt) {
  device::approx_config cfg;
  if (!config_of(opt, cfg)) return cudaErrorInvalidValue;
  if (temp) {
    cudaError_t e = validate_device_array(keys, n, sizeof(K), alignof(K));
    if (e == cudaSuccess)
      e = validate_device_array(offsets, cfg.intervals + std::uint64_t{1}, 8, 8);
    if (e == cudaSuccess) e = validate_device_array(quality, 4, 8, 8);
    if (e != cudaSuccess) return e;
  }
  return device::approx_quality(temp, temp_bytes, keys, n, offsets, cfg.intervals,
                                cfg.descending, quality, sort_intervals<K, no_value>{},
                                opt.stream);
}

template <class K, class P>
cudaError_t approx_refine(void* temp, std::size_t& temp_bytes, K* keys, P* values,
                          std::uint64_t n, const options& opt) {
  if (!check_approx_options(opt).empty()) return cudaErrorInvalidValue;
  constexpr int slot = sizeof(K) + (std::is_same_v<P, no_value> ? 0 : sizeof(P));
  return device::approx_refine(temp, temp_bytes, keys, values, n, exact_config(opt, n, slot),
                               sort_intervals<K, P>{}, opt.stream);
}

template <class K, class P>
void cpu_approx_sort(const K* keys, K* out_keys, const P* values, P* out_values,
                     std::uint64_t n, std::uint64_t* offsets, const options& opt) {
  device::approx_config cfg;
  if (!config_of(opt, cfg))
    throw_error(cudaErrorInvalidValue, "gpusort::approx_sort: " + check_approx_options(opt));
  cpu::approx_sort(keys, out_keys, values, out_values, n, offsets, cfg.intervals, cfg.sampled,
                   cfg.descending);
}

template <class K, class P>
void cpu_top_k(const K* keys, const P* values, std::uint64_t n, K* out_keys, P* out_values,
               std::uint64_t k, const options& opt) {
  const std::string bad = check_approx_options(opt);
  if (!bad.empty()) throw_error(cudaErrorInvalidValue, "gpusort::top_k: " + bad);
  const device::approx_config cfg = exact_config(opt, n, sizeof(K));
  cpu::top_k(keys, values, n, out_keys, out_values, k, cfg.intervals, cfg.sampled,
             cfg.descending);
}

template <class K, class P>
void cpu_top_k_rows(const K* keys, const P* values, std::uint64_t rows, std::uint64_t row_length,
                    K* out_keys, P* out_values, std::uint64_t k, const options& opt) {
  const std::string bad = check_approx_options(opt);
  if (!bad.empty()) throw_error(cudaErrorInvalidValue, "gpusort::top_k_rows: " + bad);
  cpu::top_k_rows(keys, values, rows, row_length, out_keys, out_values, k,
                  opt.direction == order::descending);
}

template <class K>
approx_quality cpu_approx_measure(const K* keys, std::uint64_t n, const std::uint64_t* offsets,
                                  const options& opt) {
  device::approx_config cfg;
  if (!config_of(opt, cfg))
    throw_error(cudaErrorInvalidValue, "gpusort::measure_approx: " + check_approx_options(opt));
  unsigned long long words[4];
  cpu::approx_quality(keys, n, offsets, cfg.intervals, cfg.descending, words);
  return quality_from_words(words, n);
}

}  // namespace gpusort::detail

#define GPUSORT_INSTANTIATE_APPROX(K, P)                                                      \
  template cudaError_t gpusort::detail::approx_sort<K, P>(void*, std::size_t&, const K*, K*,  \
                                                          const P*, P*, std::uint64_t,       \
                                                          std::uint64_t*, const options&);   \
  template cudaError_t gpusort::detail::top_k<K, P>(void*, std::size_t&, const K*, const P*,  \
                                                    std::uint64_t, K*, P*, std::uint64_t,    \
                                                    const options&, bool);                   \
  template cudaError_t gpusort::detail::approx_refine<K, P>(void*, std::size_t&, K*, P*,      \
                                                            std::uint64_t, const options&);  \
  template void gpusort::detail::cpu_approx_sort<K, P>(const K*, K*, const P*, P*,            \
                                                       std::uint64_t, std::uint64_t*,        \
                                                       const options&);                      \
  template void gpusort::detail::cpu_top_k<K, P>(const K*, const P*, std::uint64_t, K*, P*,   \
                                                 std::uint64_t, const options&);             \
  template cudaError_t gpusort::detail::top_k_rows<K, P>(                                     \
      void*, std::size_t&, const K*, const P*, std::uint64_t, std::uint64_t, K*, P*,          \
      std::uint64_t, const options&);                                                         \
  template void gpusort::detail::cpu_top_k_rows<K, P>(const K*, const P*, std::uint64_t,      \
                                                      std::uint64_t, K*, P*, std::uint64_t,   \
                                                      const options&);

#define GPUSORT_INSTANTIATE_TOP_K_ROWS_POSITIONS(K)                                          \
  template cudaError_t gpusort::detail::top_k_rows_positions<K, gpusort::detail::payload<4>>( \
      void*, std::size_t&, const K*, std::uint64_t, std::uint64_t, K*,                        \
      gpusort::detail::payload<4>*, std::uint64_t, const options&, bool);                     \
  template cudaError_t gpusort::detail::top_k_rows_positions<K, gpusort::detail::payload<8>>( \
      void*, std::size_t&, const K*, std::uint64_t, std::uint64_t, K*,                        \
      gpusort::detail::payload<8>*, std::uint64_t, const options&, bool);

#define GPUSORT_INSTANTIATE_APPROX_FOR_KEY(K)                                                 \
  template cudaError_t gpusort::detail::approx_measure<K>(                                    \
      void*, std::size_t&, const K*, std::uint64_t, const std::uint64_t*, unsigned long long*, \
      const options&);                                                                        \
  template gpusort::approx_quality gpusort::detail::cpu_approx_measure<K>(                    \
      const K*, std::uint64_t, const std::uint64_t*, const options&);                         \
  template cudaError_t gpusort::detail::top_k_positions<K, gpusort::detail::payload<4>>(      \
      void*, std::size_t&, const K*, std::uint64_t, K*, gpusort::detail::payload<4>*,         \
      std::uint64_t, const options&, bool);                                                   \
  template cudaError_t gpusort::detail::top_k_positions<K, gpusort::detail::payload<8>>(      \
      void*, std::size_t&, const K*, std::uint64_t, K*, gpusort::detail::payload<8>*,         \
      std::uint64_t, const options&, bool);                                                   \
  GPUSORT_INSTANTIATE_TOP_K_ROWS_POSITIONS(K)                                                 \
  GPUSORT_INSTANTIATE_APPROX(K, gpusort::detail::no_value)                                    \
  GPUSORT_INSTANTIATE_APPROX(K, gpusort::detail::payload<4>)                                  \
  GPUSORT_INSTANTIATE_APPROX(K, gpusort::detail::payload<8>)                                  \
  GPUSORT_INSTANTIATE_APPROX(K, gpusort::detail::payload<16>)
