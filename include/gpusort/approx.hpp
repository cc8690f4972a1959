// Approximate sort by interval projection (Xiao et al.), top_k, and how good an approximate
// sort is.
//
// approx_sort moves every key to one of K intervals (options::intervals, 10,000 by default):
// intervals come out in order, keys inside one interval in no particular order (which may
// differ from run to run). offsets[i] .. offsets[i + 1] bounds interval i, so callers can use
// the buckets. options::interval_splitters picks the boundaries:
//  * splitters::linear (the paper): equal widths of [min, max]. Skewed inputs (gaussian,
//    zipf) pile into few intervals. Floats: projected by value over the finite keys; -inf in
//    the first interval, +inf and NaN in the last. min == max: one interval holds them all.
//  * splitters::sampled: boundaries from a sorted sample of 8 K keys, ties split by
//    position, so that every interval holds about n / K keys on any input.
// Descending order reverses the intervals. Every key is kept (the output is a permutation of
// the input) and values move with their keys.
// Cost: the keys are read three times (linear: min/max, counts, scatter; sampled: twice) and
// written once; K up to 16,384 counts in shared memory, more with global atomics (slower).
//
// algorithm::approx_refine (through gpusort::sort) sorts every interval exactly afterwards:
// a bucket sort. top_k returns the k smallest (or, descending, largest) keys in order: three
// sampled intervals split around the k-th key, so that only about k keys are sorted.
// top_k_rows does the same for every row of a matrix (torch.topk(x, k, dim=-1)); select_k
// returns the k keys in no promised order and the k-th key (std::nth_element's answer).
//
// Example:
//   gpusort::approx_result r = gpusort::approx_sort(std::span<const float>(d_in, n),
//                                                   std::span<float>(d_out, n));
//   // d_out[r.offsets[i] .. r.offsets[i + 1]) is interval i; r.largest_interval its largest
//   gpusort::approx_quality q = gpusort::measure_approx(std::span<const float>(d_out, n),
//                                                       r.offsets);
//   float kth = gpusort::top_k(std::span<const float>(d_in, n), std::span<float>(d_out, 1000));
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpusort/detail/core/narrow_keys.hpp"
#include "gpusort/detail/index_math/approx.hpp"
#include "gpusort/sort.hpp"

namespace gpusort {

// The interval count an approximate sort of n keys uses with these options.
constexpr std::uint32_t approx_intervals(const options& opt) {
  return opt.intervals ? opt.intervals : detail::index_math::default_intervals;
}

// How close an approximate sort is to the exact one. A key's distance is how far it lies from
// the nearest place the exact sort (same order, ties anywhere) could put it.
struct approx_quality {
  std::uint64_t largest_interval = 0;  // keys in the largest interval
  std::uint64_t out_of_place = 0;      // keys at a nonzero distance
  double mean_distance = 0;            // over all n keys
  std::uint64_t max_distance = 0;      // below largest_interval, by construction
};

struct approx_result {
  std::vector<std::uint64_t> offsets;  // intervals + 1 entries: offsets[0] = 0, back() = n
  std::uint64_t largest_interval = 0;
};

namespace detail {
// Defined in src/approx_<key>.cu for every supported key type and value size.
template <class K, class P>
cudaError_t approx_sort(void* temp, std::size_t& temp_bytes, const K* keys, K* out_keys,
                        const P* values, P* out_values, std::uint64_t n,
                        std::uint64_t* offsets, const options& opt);
// in_order false: the k in no order, selected without a sort (select_k).
template <class K, class P>
cudaError_t top_k(void* temp, std::size_t& temp_bytes, const K* keys, const P* values,
                  std::uint64_t n, K* out_keys, P* out_values, std::uint64_t k,
                  const options& opt, bool in_order = true);
template <class K, class P>
cudaError_t top_k_positions(void* temp, std::size_t& temp_bytes, const K* keys, std::uint64_t n,
                            K* out_keys, P* out_positions, std::uint64_t k, const options& opt,
                            bool in_order = true);
template <class K, class P>
cudaError_t top_k_rows(void* temp, std::size_t& temp_bytes, const K* keys, const P* values,
                       std::uint64_t rows, std::uint64_t row_length, K* out_keys, P* out_values,
                       std::uint64_t k, const options& opt);
template <class K, class P>
cudaError_t top_k_rows_positions(void* temp, std::size_t& temp_bytes, const K* keys,
                                 std::uint64_t rows, std::uint64_t row_length, K* out_keys,
                                 P* out_columns, std::uint64_t k, const options& opt,
                                 bool in_order = true);
template <class K>
cudaError_t approx_measure(void* temp, std::size_t& temp_bytes, const K* keys, std::uint64_t n,
                           const std::uint64_t* offsets, unsigned long long* quality,
                           const options& opt);
template <class K, class P>
cudaError_t approx_refine(void* temp, std::size_t& temp_bytes, K* keys, P* values,
                          std::uint64_t n, const options& opt);
// The CPU backend: the same intervals (identical offsets) on host threads.
template <class K, class P>
void cpu_approx_sort(const K* keys, K* out_keys, const P* values, P* out_values,
                     std::uint64_t n, std::uint64_t* offsets, const options& opt);
template <class K, class P>
void cpu_top_k(const K* keys, const P* values, std::uint64_t n, K* out_keys, P* out_values,
               std::uint64_t k, const options& opt);
template <class K, class P>
void cpu_top_k_rows(const K* keys, const P* values, std::uint64_t rows, std::uint64_t row_length,
                    K* out_keys, P* out_values, std::uint64_t k, const options& opt);
template <class K>
approx_quality cpu_approx_measure(const K* keys, std::uint64_t n, const std::uint64_t* offsets,
                                  const options& opt);

// Narrow keys (detail/core/narrow_keys.hpp), src/top_k_narrow.cu: widened in the workspace to
// a 32-bit key of the same order (float for the 16-bit floats, int32 or uint32), selected with
// their positions by the 32-bit top-k, and gathered from the caller's arrays by position, so
// the keys come back with their exact bits. `rows` x `row_length` (rows = 1: one array);
// positions: out_values get each key's position (its column, for rows), not values[].
template <class K, class P>
cudaError_t narrow_top_k(void* temp, std::size_t& temp_bytes, const K* keys, const P* values,
                         std::uint64_t rows, std::uint64_t row_length, bool as_rows,
                         bool positions, K* out_keys, P* out_values, std::uint64_t k,
                         const options& opt);
template <class K, class P>
void cpu_narrow_top_k(const K* keys, const P* values, std::uint64_t rows,
                      std::uint64_t row_length, bool as_rows, K* out_keys, P* out_values,
                      std::uint64_t k, const options& opt);

// The entry points' one way down, for every key type they take (calls qualified, as in
// narrow_keys.hpp).
template <class K, class P>
cudaError_t top_k_any_key(void* temp, std::size_t& temp_bytes, const K* keys, const P* values,
                          std::uint64_t n, K* out_keys, P* out_values, std::uint64_t k,
                          const options& opt, bool in_order = true) {
  // Narrow keys come out in order either way (their top-k runs on widened keys).
  if constexpr (narrow_key<K>)
    return detail::narrow_top_k<K, P>(temp, temp_bytes, keys, values, 1, n, false, false,
                                      out_keys, out_values, k, opt);
  else
    return detail::top_k<K, P>(temp, temp_bytes, keys, values, n, out_keys, out_values, k, opt,
                               in_order);
}
template <class K, class P>
cudaError_t top_k_positions_any_key(void* temp, std::size_t& temp_bytes, const K* keys,
                                    std::uint64_t n, K* out_keys, P* out_positions,
                                    std::uint64_t k, const options& opt, bool in_order = true) {
  if constexpr (narrow_key<K>)
    return detail::narrow_top_k<K, P>(temp, temp_bytes, keys, nullptr, 1, n, false, true,
                                      out_keys, out_positions, k, opt);
  else
    return detail::top_k_positions<K, P>(temp, temp_bytes, keys, n, out_keys, out_positions, k,
                                         opt, in_order);
}
template <class K, class P>
cudaError_t top_k_rows_any_key(void* temp, std::size_t& temp_bytes, const K* keys,
                               const P* values, std::uint64_t rows, std::uint64_t row_length,
                               K* out_keys, P* out_values, std::uint64_t k, const options& opt) {
  if constexpr (narrow_key<K>)
    return detail::narrow_top_k<K, P>(temp, temp_bytes, keys, values, rows, row_length, true,
                                      false, out_keys, out_values, k, opt);
  else
    return detail::top_k_rows<K, P>(temp, temp_bytes, keys, values, rows, row_length, out_keys,
                                    out_values, k, opt);
}
template <class K, class P>
cudaError_t top_k_rows_positions_any_key(void* temp, std::size_t& temp_bytes, const K* keys,
                                         std::uint64_t rows, std::uint64_t row_length,
                                         K* out_keys, P* out_columns, std::uint64_t k,
                                         const options& opt, bool in_order = true) {
  if constexpr (narrow_key<K>)  // in order either way
    return detail::narrow_top_k<K, P>(temp, temp_bytes, keys, nullptr, rows, row_length, true,
                                      true, out_keys, out_columns, k, opt);
  else
    return detail::top_k_rows_positions<K, P>(temp, temp_bytes, keys, rows, row_length, out_keys,
                                              out_columns, k, opt, in_order);
}
template <class K, class P>
void cpu_top_k_any_key(const K* keys, const P* values, std::uint64_t rows,
                       std::uint64_t row_length, bool as_rows, K* out_keys, P* out_values,
                       std::uint64_t k, const options& opt) {
  if constexpr (narrow_key<K>)
    detail::cpu_narrow_top_k<K, P>(keys, values, rows, row_length, as_rows, out_keys, out_values,
                                   k, opt);
  else if (as_rows)
    detail::cpu_top_k_rows<K, P>(keys, values, rows, row_length, out_keys, out_values, k, opt);
  else
    detail::cpu_top_k<K, P>(keys, values, row_length, out_keys, out_values, k, opt);
}

// Validates options.intervals (1 .. 2^24) and the interval mode; the convenience layer
// throws with this message when it is not empty.
std::string check_approx_options(const options& opt);
approx_quality quality_from_words(const unsigned long long (&words)[4], std::uint64_t n);
}  // namespace detail

// ---- core layer -----------------------------------------------------------------------
// CUB-style: temp == nullptr only writes the workspace bytes. Stream-ordered, no sync, no
// allocation. Input and output must not overlap. `offsets`: device array of
// approx_intervals(opt) + 1 entries.

template <supported_key K, std::integral N>
cudaError_t approx_sort_keys(void* temp, std::size_t& temp_bytes, const K* keys, K* out_keys,
                             N n, std::uint64_t* offsets, const options& opt = {}) {
  if (detail::negative(n)) return cudaErrorInvalidValue;
  return detail::never_zero(
      temp, temp_bytes,
      detail::approx_sort<K, detail::no_value>(temp, temp_bytes, keys, out_keys, nullptr, nullptr,
                                               static_cast<std::uint64_t>(n), offsets, opt));
}

template <supported_key K, detail::supported_value V, std::integral N>
cudaError_t approx_sort_pairs(void* temp, std::size_t& temp_bytes, const K* keys, K* out_keys,
                              const V* values, V* out_values, N n, std::uint64_t* offsets,
                              const options& opt = {}) {
  if (detail::negative(n)) return cudaErrorInvalidValue;
  using P = detail::payload_of<V>;
  return detail::never_zero(temp, temp_bytes,
                            detail::approx_sort<K, P>(temp, temp_bytes, keys, out_keys,
                                                      reinterpret_cast<const P*>(values),
                                                      reinterpret_cast<P*>(out_values),
                                                      static_cast<std::uint64_t>(n), offsets, opt));
}

// The k smallest keys in ascending order (descending: the k largest, largest first) into
// out_keys[0, k). Workspace: about k keys (and values) and a radix sort's of as many, on any
// input (index_math::candidate_capacity).
template <sortable_key K, std::integral N>
cudaError_t top_k_keys(void* temp, std::size_t& temp_bytes, const K* keys, N n, K* out_keys,
                       std::uint64_t k, const options& opt = {}) {
  if (detail::negative(n)) return cudaErrorInvalidValue;
  return detail::never_zero(
      temp, temp_bytes,
      detail::top_k_any_key<K, detail::no_value>(temp, temp_bytes, keys, nullptr,
                                                 static_cast<std::uint64_t>(n), out_keys, nullptr,
                                                 k, opt));
}

template <sortable_key K, detail::supported_value V, std::integral N>
cudaError_t top_k_pairs(void* temp, std::size_t& temp_bytes, const K* keys, const V* values,
                        N n, K* out_keys, V* out_values, std::uint64_t k,
                        const options& opt = {}) {
  if (detail::negative(n)) return cudaErrorInvalidValue;
  using P = detail::payload_of<V>;
  return detail::never_zero(
      temp, temp_bytes,
      detail::top_k_any_key<K, P>(temp, temp_bytes, keys, reinterpret_cast<const P*>(values),
                                  static_cast<std::uint64_t>(n), out_keys,
                                  reinterpret_cast<P*>(out_values), k, opt));
}

namespace detail {
// top_k_indices and select_k_indices: in_order says which.
template <class K, class I, std::integral N>
cudaError_t top_k_indices_in(void* temp, std::size_t& temp_bytes, const K* keys, N n,
                             K* out_keys, I* out_indices, std::uint64_t k, const options& opt,
                             bool in_order) {
  if (negative(n)) return cudaErrorInvalidValue;
  if (sizeof(I) == 4 && static_cast<std::uint64_t>(n) > (std::uint64_t{1} << 31))
    return cudaErrorInvalidValue;  // a position would not fit
  using P = payload<sizeof(I)>;
  return never_zero(temp, temp_bytes,
                    top_k_positions_any_key<K, P>(temp, temp_bytes, keys,
                                                  static_cast<std::uint64_t>(n), out_keys,
                                                  reinterpret_cast<P*>(out_indices), k, opt,
                                                  in_order));
}
}  // namespace detail

// top_k_pairs with every key's position in `keys` as its value, out_indices[j] the position
// of out_keys[j] (torch.topk's indices): the positions are generated where a key is chosen,
// so no index array of n is written or read. I: std::int32_t (n below 2^31) or std::int64_t.
template <sortable_key K, class I, std::integral N>
  requires std::is_same_v<I, std::int32_t> || std::is_same_v<I, std::int64_t>
cudaError_t top_k_indices(void* temp, std::size_t& temp_bytes, const K* keys, N n, K* out_keys,
                          I* out_indices, std::uint64_t k, const options& opt = {}) {
  return detail::top_k_indices_in<K, I>(temp, temp_bytes, keys, n, out_keys, out_indices, k, opt,
                                        true);
}

// top_k_indices in no promised order (torch.topk(sorted=False)): select_k's radix select among
// the candidates instead of their sort (narrow keys: top_k_indices' sorted answer). The
// workspace is top_k_indices'.
template <sortable_key K, class I, std::integral N>
  requires std::is_same_v<I, std::int32_t> || std::is_same_v<I, std::int64_t>
cudaError_t select_k_indices(void* temp, std::size_t& temp_bytes, const K* keys, N n,
                             K* out_keys, I* out_indices, std::uint64_t k,
                             const options& opt = {}) {
  return detail::top_k_indices_in<K, I>(temp, temp_bytes, keys, n, out_keys, out_indices, k, opt,
                                        false);
}

namespace detail {
// The k first keys (in order, or as select_k leaves them) and the k-th key to *kth_key
// (device), copied on the stream once it is there: out_keys[k - 1] either way (a selection
// puts the keys equal to the k-th last).
template <class K, class P>
cudaError_t top_k_with_kth(void* temp, std::size_t& temp_bytes, const K* keys, const P* values,
                           std::uint64_t n, K* out_keys, P* out_values, std::uint64_t k,
                           K* kth_key, const options& opt, bool in_order) {
  const cudaError_t e = never_zero(
      temp, temp_bytes,
      top_k_any_key<K, P>(temp, temp_bytes, keys, values, n, out_keys, out_values, k, opt,
                          in_order));
  if (e != cudaSuccess || !temp || k == 0) return e;
  if (!kth_key) return cudaErrorInvalidValue;
  return cudaMemcpyAsync(kth_key, out_keys + (k - 1), sizeof(K), cudaMemcpyDeviceToDevice,
                         opt.stream);
}
}  // namespace detail

// The k smallest keys (descending: the k largest) to out_keys[0, k) in no promised order, and
// the k-th of them (the largest of the k; descending, the smallest) to *kth_key (device): what
// std::nth_element leaves, torch.topk(sorted=False) and its threshold. top_k's sampled gather,
// then a radix select among its candidates instead of their sort (narrow keys: top_k's sorted
// answer). k = 0 writes nothing. The workspace is top_k's.
template <sortable_key K, std::integral N>
cudaError_t select_k_keys(void* temp, std::size_t& temp_bytes, const K* keys, N n, K* out_keys,
                          std::uint64_t k, K* kth_key, const options& opt = {}) {
  if (detail::negative(n)) return cudaErrorInvalidValue;
  return detail::top_k_with_kth<K, detail::no_value>(temp, temp_bytes, keys, nullptr,
                                                     static_cast<std::uint64_t>(n), out_keys,
                                                     nullptr, k, kth_key, opt, false);
}

template <sortable_key K, detail::supported_value V, std::integral N>
cudaError_t select_k_pairs(void* temp, std::size_t& temp_bytes, const K* keys, const V* values,
                           N n, K* out_keys, V* out_values, std::uint64_t k, K* kth_key,
                           const options& opt = {}) {
  if (detail::negative(n)) return cudaErrorInvalidValue;
  using P = detail::payload_of<V>;
  return detail::top_k_with_kth<K, P>(temp, temp_bytes, keys, reinterpret_cast<const P*>(values),
                                      static_cast<std::uint64_t>(n), out_keys,
                                      reinterpret_cast<P*>(out_values), k, kth_key, opt, false);
}

// Every row of a rows x row_length matrix (row-major, contiguous): its k smallest keys
// (descending: the k largest) in order, to out_keys[r * k, (r + 1) * k), values alongside, as
// torch.topk(x, k, dim=-1) gives them. Ties may come out in any order. k <= 32 of 2048 rows
// or more of at least 256 keys: one warp selects each row's keys, with no workspace. Else k up
// to 2048 of rows of 2048 keys or more: a radix select per row (8 KB and k columns of
// workspace a row). Otherwise the rows are copied and sorted whole: a copy of the keys (and
// values) and the batched sort's workspace.
template <sortable_key K, std::integral N, std::integral L>
cudaError_t top_k_rows_keys(void* temp, std::size_t& temp_bytes, const K* keys, N rows,
                            L row_length, K* out_keys, std::uint64_t k, const options& opt = {}) {
  if (detail::negative(rows) || detail::negative(row_length)) return cudaErrorInvalidValue;
  return detail::never_zero(temp, temp_bytes,
                            detail::top_k_rows_any_key<K, detail::no_value>(
                                temp, temp_bytes, keys, nullptr, static_cast<std::uint64_t>(rows),
                                static_cast<std::uint64_t>(row_length), out_keys, nullptr, k, opt));
}

template <sortable_key K, detail::supported_value V, std::integral N, std::integral L>
cudaError_t top_k_rows_pairs(void* temp, std::size_t& temp_bytes, const K* keys, const V* values,
                             N rows, L row_length, K* out_keys, V* out_values, std::uint64_t k,
                             const options& opt = {}) {
  if (detail::negative(rows) || detail::negative(row_length)) return cudaErrorInvalidValue;
  using P = detail::payload_of<V>;
  return detail::never_zero(
      temp, temp_bytes,
      detail::top_k_rows_any_key<K, P>(temp, temp_bytes, keys, reinterpret_cast<const P*>(values),
                               static_cast<std::uint64_t>(rows),
                               static_cast<std::uint64_t>(row_length), out_keys,
                               reinterpret_cast<P*>(out_values), k, opt));
}

namespace detail {
// top_k_rows_indices and select_k_rows_indices: in_order, or each row's k in no order.
template <class K, class I, class N, class L>
cudaError_t rows_indices(void* temp, std::size_t& temp_bytes, const K* keys, N rows,
                         L row_length, K* out_keys, I* out_indices, std::uint64_t k,
                         const options& opt, bool in_order) {
  if (negative(rows) || negative(row_length)) return cudaErrorInvalidValue;
  if (sizeof(I) == 4 && static_cast<std::uint64_t>(row_length) > (std::uint64_t{1} << 31))
    return cudaErrorInvalidValue;  // a column would not fit
  using P = payload<sizeof(I)>;
  return never_zero(temp, temp_bytes,
                    top_k_rows_positions_any_key<K, P>(
                        temp, temp_bytes, keys, static_cast<std::uint64_t>(rows),
                        static_cast<std::uint64_t>(row_length), out_keys,
                        reinterpret_cast<P*>(out_indices), k, opt, in_order));
}
}  // namespace detail

// top_k_rows_pairs with every key's column as its value, out_indices[r * k + j] the column of
// out_keys[r * k + j] (torch.topk(x, k, dim=-1)'s indices), generated as the keys are chosen:
// no index matrix is written or read. Rows of 2048 keys or more with k up to 2048 (LLM
// decoding: vocabularies of 32k-256k logits) take a radix select per row whose workspace is
// 8 KB and k columns per row (of at most 4,096 rows at once); other shapes are top_k_rows_pairs
// of a column matrix made in the workspace. I: std::int32_t (rows below 2^31 keys) or
// std::int64_t.
template <sortable_key K, class I, std::integral N, std::integral L>
  requires std::is_same_v<I, std::int32_t> || std::is_same_v<I, std::int64_t>
cudaError_t top_k_rows_indices(void* temp, std::size_t& temp_bytes, const K* keys, N rows,
                               L row_length, K* out_keys, I* out_indices, std::uint64_t k,
                               const options& opt = {}) {
  return detail::rows_indices(temp, temp_bytes, keys, rows, row_length, out_keys, out_indices, k,
                              opt, true);
}

// top_k_rows_indices with each row's k keys (and their columns) in no promised order
// (torch.topk(x, k, sorted=False)): the shapes of the per-row select skip the sort of the k;
// other shapes, and keys narrower than 32 bits, come in order anyway.
template <sortable_key K, class I, std::integral N, std::integral L>
  requires std::is_same_v<I, std::int32_t> || std::is_same_v<I, std::int64_t>
cudaError_t select_k_rows_indices(void* temp, std::size_t& temp_bytes, const K* keys, N rows,
                                  L row_length, K* out_keys, I* out_indices, std::uint64_t k,
                                  const options& opt = {}) {
  return detail::rows_indices(temp, temp_bytes, keys, rows, row_length, out_keys, out_indices, k,
                              opt, false);
}

// quality[0..3] (device) = {largest interval, keys out of place, sum of distances, largest
// distance} of an approximate sort's output with its offsets (same options).
template <supported_key K, std::integral N>
cudaError_t approx_measure_keys(void* temp, std::size_t& temp_bytes, const K* keys, N n,
                                const std::uint64_t* offsets, unsigned long long* quality,
                                const options& opt = {}) {
  if (detail::negative(n)) return cudaErrorInvalidValue;
  return detail::never_zero(
      temp, temp_bytes,
      detail::approx_measure<K>(temp, temp_bytes, keys, static_cast<std::uint64_t>(n), offsets,
                                quality, opt));
}

// ---- convenience layer ----------------------------------------------------------------

namespace detail {
// Runs a core call twice (query, then with an allocated workspace) and waits; throws.
template <class Call>
void run_core(const std::string& what, const options& opt, Call call) {
  const std::string bad = check_approx_options(opt);
  if (!bad.empty()) throw_error(cudaErrorInvalidValue, what + ": " + bad);
  run_with_workspace(what, opt, call);
}

// Copies on the call's stream (where its device buffers were allocated) and waits.
inline void copy_and_wait(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind,
                          const options& opt, const std::string& what) {
  if (bytes == 0) return;
  cudaError_t e = cudaMemcpyAsync(to, from, bytes, kind, opt.stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(opt.stream);
  if (e != cudaSuccess) throw_error(e, what);
}

inline approx_result result_from_offsets(const std::uint64_t* d_offsets, std::uint32_t intervals,
                                         const options& opt, const std::string& what) {
  approx_result r;
  r.offsets.resize(intervals + std::size_t{1});
  copy_and_wait(r.offsets.data(), d_offsets, sizeof(std::uint64_t) * r.offsets.size(),
                cudaMemcpyDeviceToHost, opt, what + ": copy of the offsets failed");
  for (std::uint32_t i = 0; i < intervals; ++i)
    r.largest_interval = std::max(r.largest_interval, r.offsets[i + 1] - r.offsets[i]);
  return r;
}
}  // namespace detail

// Device keys to device out_keys (same size); waits. Throws gpusort::error.
template <supported_key K>
approx_result approx_sort(std::span<const K> keys, std::span<K> out_keys,
                          const options& opt = {}) {
  const std::uint64_t n = keys.size();
  const std::string what = detail::describe_call("gpusort::approx_sort", opt, key_traits<K>::name, n);
  if (out_keys.size() != n)
    detail::throw_error(cudaErrorInvalidValue, what + ": output has " +
                                                   std::to_string(out_keys.size()) + " keys");
  detail::check_device_array(keys.data(), n, sizeof(K), alignof(K), "keys");
  detail::check_device_array(out_keys.data(), n, sizeof(K), alignof(K), "out_keys");
  const std::uint32_t intervals = approx_intervals(opt);
  detail::device_buffer<std::uint64_t> offsets(intervals + std::uint64_t{1}, opt, what);
  detail::run_core(what, opt, [&](void* t, std::size_t& b) {
    return approx_sort_keys(t, b, keys.data(), out_keys.data(), n, offsets.get(), opt);
  });
  return detail::result_from_offsets(offsets.get(), intervals, opt, what);
}

template <supported_key K, detail::supported_value V>
approx_result approx_sort(std::span<const K> keys, std::span<K> out_keys,
                          std::span<const V> values, std::span<V> out_values,
                          const options& opt = {}) {
  const std::uint64_t n = keys.size();
  const std::string what =
      detail::describe_call("gpusort::approx_sort (pairs)", opt, key_traits<K>::name, n);
  if (out_keys.size() != n || values.size() != n || out_values.size() != n)
    detail::throw_error(cudaErrorInvalidValue, what + ": arrays of different sizes");
  detail::check_device_array(keys.data(), n, sizeof(K), alignof(K), "keys");
  detail::check_device_array(out_keys.data(), n, sizeof(K), alignof(K), "out_keys");
  detail::check_device_array(values.data(), n, sizeof(V), sizeof(V), "values");
  detail::check_device_array(out_values.data(), n, sizeof(V), sizeof(V), "out_values");
  const std::uint32_t intervals = approx_intervals(opt);
  detail::device_buffer<std::uint64_t> offsets(intervals + std::uint64_t{1}, opt, what);
  detail::run_core(what, opt, [&](void* t, std::size_t& b) {
    return approx_sort_pairs(t, b, keys.data(), out_keys.data(), values.data(),
                             out_values.data(), n, offsets.get(), opt);
  });
  return detail::result_from_offsets(offsets.get(), intervals, opt, what);
}

// Host keys, approximately sorted in place: on the GPU if there is one, else on the CPU (the
// same intervals).
template <supported_key K>
approx_result approx_sort(std::vector<K>& keys, const options& opt = {}) {
  const std::uint64_t n = keys.size();
  const std::string what = detail::describe_call("gpusort::approx_sort", opt, key_traits<K>::name, n);
  const std::string bad = detail::check_approx_options(opt);
  if (!bad.empty()) detail::throw_error(cudaErrorInvalidValue, what + ": " + bad);
  std::vector<K> out(n);
  approx_result r;
  if (detail::gpu_available()) {
    detail::device_buffer<K> in_d(n, opt, what), out_d(n, opt, what);
    detail::copy_and_wait(in_d.get(), keys.data(), sizeof(K) * n, cudaMemcpyHostToDevice, opt,
                          what + ": copy to the device failed");
    r = approx_sort(std::span<const K>(in_d.get(), n), std::span<K>(out_d.get(), n), opt);
    detail::copy_and_wait(out.data(), out_d.get(), sizeof(K) * n, cudaMemcpyDeviceToHost, opt,
                          what + ": copy from the device failed");
  } else {
    r.offsets.resize(approx_intervals(opt) + std::size_t{1});
    detail::cpu_approx_sort<K, detail::no_value>(keys.data(), out.data(), nullptr, nullptr, n,
                                                 r.offsets.data(), opt);
    for (std::size_t i = 0; i + 1 < r.offsets.size(); ++i)
      r.largest_interval = std::max(r.largest_interval, r.offsets[i + 1] - r.offsets[i]);
  }
  keys.swap(out);
  return r;
}

// The quality of device keys that an approximate sort with `opt` left with these offsets.
template <supported_key K>
approx_quality measure_approx(std::span<const K> keys, const std::vector<std::uint64_t>& offsets,
                              const options& opt = {}) {
  const std::uint64_t n = keys.size();
  const std::string what = detail::describe_call("gpusort::measure_approx", opt, key_traits<K>::name, n);
  if (offsets.size() != approx_intervals(opt) + std::size_t{1} || offsets.back() != n)
    detail::throw_error(cudaErrorInvalidValue, what + ": offsets do not match the options and n");
  detail::check_device_array(keys.data(), n, sizeof(K), alignof(K), "keys");
  detail::device_buffer<std::uint64_t> d_offsets(offsets.size(), opt, what);
  detail::device_buffer<unsigned long long> d_quality(4, opt, what);
  detail::copy_and_wait(d_offsets.get(), offsets.data(), sizeof(std::uint64_t) * offsets.size(),
                        cudaMemcpyHostToDevice, opt, what + ": copy of the offsets failed");
  detail::run_core(what, opt, [&](void* t, std::size_t& b) {
    return approx_measure_keys(t, b, keys.data(), n, d_offsets.get(), d_quality.get(), opt);
  });
  unsigned long long words[4] = {};
  detail::copy_and_wait(words, d_quality.get(), sizeof(words), cudaMemcpyDeviceToHost, opt,
                        what + ": copy of the result failed");
  return detail::quality_from_words(words, n);
}

// The same for host keys (computed on the CPU).
template <supported_key K>
approx_quality measure_approx(const std::vector<K>& keys, const std::vector<std::uint64_t>& offsets,
                              const options& opt = {}) {
  if (offsets.size() != approx_intervals(opt) + std::size_t{1} || offsets.back() != keys.size())
    detail::throw_error(cudaErrorInvalidValue,
                        "gpusort::measure_approx: offsets do not match the options and n");
  return detail::cpu_approx_measure(keys.data(), keys.size(), offsets.data(), opt);
}

namespace detail {
// top_k's and select_k's device call: the k = out_keys.size() first keys of the sorted order
// into out_keys (in order, or as select_k leaves them), the k-th key returned.
template <class K>
K top_k_on_device(std::span<const K> keys, std::span<K> out_keys, const options& opt,
                  const char* name, bool in_order) {
  const std::uint64_t n = keys.size(), k = out_keys.size();
  const std::string what = describe_call(name, opt, key_name<K>, n);
  if (k > n)
    throw_error(cudaErrorInvalidValue, what + ": k = " + std::to_string(k) + " is more than the " +
                                           std::to_string(n) + " keys");
  check_device_array(keys.data(), n, sizeof(K), alignof(K), "keys");
  check_device_array(out_keys.data(), k, sizeof(K), alignof(K), "out_keys");
  device_buffer<K> kth(1, opt, what);
  run_core(what, opt, [&](void* t, std::size_t& b) {
    return top_k_with_kth<K, no_value>(t, b, keys.data(), nullptr, n, out_keys.data(), nullptr, k,
                                       kth.get(), opt, in_order);
  });
  K result{};
  if (k) copy_and_wait(&result, kth.get(), sizeof(K), cudaMemcpyDeviceToHost, opt,
                       what + ": copy of the k-th key failed");
  return result;
}
}  // namespace detail

// The k = out_keys.size() smallest device keys (descending: the k largest), sorted, into
// device out_keys; returns the k-th of them (K{} when k = 0). Waits. Throws gpusort::error.
// NaNs count as the largest keys here whatever options::nans (torch.topk's convention).
template <sortable_key K>
K top_k(std::span<const K> keys, std::span<K> out_keys, const options& opt = {}) {
  return detail::top_k_on_device(keys, out_keys, opt, "gpusort::top_k", true);
}

// The same for host keys, into a host vector: on the GPU if there is one, else on the CPU.
template <sortable_key K>
std::vector<K> top_k(const std::vector<K>& keys, std::uint64_t k, const options& opt = {}) {
  static_assert(!std::is_same_v<K, bool>, "std::vector<bool> packs its bits: use std::uint8_t");
  if (k > keys.size())
    detail::throw_error(cudaErrorInvalidValue, "gpusort::top_k: k = " + std::to_string(k) +
                                                   " is more than the " +
                                                   std::to_string(keys.size()) + " keys");
  std::vector<K> result(k);
  if (detail::gpu_available()) {
    const std::string what = "gpusort::top_k";
    detail::device_buffer<K> d(keys.size(), opt, what), out(k, opt, what);
    detail::copy_and_wait(d.get(), keys.data(), sizeof(K) * keys.size(), cudaMemcpyHostToDevice,
                          opt, what + ": copy to the device failed");
    top_k(std::span<const K>(d.get(), keys.size()), std::span<K>(out.get(), k), opt);
    detail::copy_and_wait(result.data(), out.get(), sizeof(K) * k, cudaMemcpyDeviceToHost, opt,
                          what + ": copy of the result failed");
    return result;
  }
  detail::cpu_top_k_any_key<K, detail::no_value>(keys.data(), nullptr, 1, keys.size(), false,
                                                 result.data(), nullptr, k, opt);
  return result;
}

// select_k's answer for host keys: the k selected keys (in no promised order) and the k-th.
template <sortable_key K>
struct selection {
  std::vector<K> keys;
  K kth{};  // keys' largest (descending: smallest); K{} when k = 0
};

// The out_keys.size() smallest device keys (descending: largest) into device out_keys, in no
// promised order; returns the k-th of them (K{} when out_keys is empty). Waits. Throws.
template <sortable_key K>
K select_k(std::span<const K> keys, std::span<K> out_keys, const options& opt = {}) {
  return detail::top_k_on_device(keys, out_keys, opt, "gpusort::select_k", false);
}

// The same for host keys: on the GPU if there is one, else on the CPU.
template <sortable_key K>
selection<K> select_k(const std::vector<K>& keys, std::uint64_t k, const options& opt = {}) {
  selection<K> s{top_k(keys, k, opt), K{}};
  if (k) s.kth = s.keys.back();
  return s;
}

// top_k of every row of host keys (keys.size() = rows x row_length, row-major): on the GPU if
// there is one, else on the CPU (stable there). Returns rows x k keys.
template <sortable_key K>
std::vector<K> top_k_rows(const std::vector<K>& keys, std::uint64_t row_length, std::uint64_t k,
                          const options& opt = {}) {
  static_assert(!std::is_same_v<K, bool>, "std::vector<bool> packs its bits: use std::uint8_t");
  const std::string what = "gpusort::top_k_rows";
  if (row_length == 0 ? !keys.empty() : keys.size() % row_length != 0)
    detail::throw_error(cudaErrorInvalidValue, what + ": " + std::to_string(keys.size()) +
                                                   " keys are not rows of " +
                                                   std::to_string(row_length));
  if (k > row_length)
    detail::throw_error(cudaErrorInvalidValue, what + ": k = " + std::to_string(k) +
                                                   " is more than a row's " +
                                                   std::to_string(row_length) + " keys");
  const std::string bad = detail::check_approx_options(opt);
  if (!bad.empty()) detail::throw_error(cudaErrorInvalidValue, what + ": " + bad);
  const std::uint64_t rows = row_length ? keys.size() / row_length : 0;
  std::vector<K> result(rows * k);
  if (result.empty()) return result;
  if (!detail::gpu_available()) {
    detail::cpu_top_k_any_key<K, detail::no_value>(keys.data(), nullptr, rows, row_length, true,
                                                   result.data(), nullptr, k, opt);
    return result;
  }
  detail::device_buffer<K> d(keys.size(), opt, what);
  detail::device_buffer<K> out(result.size(), opt, what);
  detail::copy_and_wait(d.get(), keys.data(), sizeof(K) * keys.size(), cudaMemcpyHostToDevice,
                        opt, what + ": copy to the device failed");
  detail::run_core(what, opt, [&](void* t, std::size_t& b) {
    return top_k_rows_keys(t, b, d.get(), rows, row_length, out.get(), k, opt);
  });
  detail::copy_and_wait(result.data(), out.get(), sizeof(K) * result.size(),
                        cudaMemcpyDeviceToHost, opt, what + ": copy of the result failed");
  return result;
}

}  // namespace gpusort
