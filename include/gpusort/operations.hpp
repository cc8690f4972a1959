// Operations built on the sort (issue 73): unique (the distinct keys, with how often each
// occurs) and searchsorted (where keys would go in a sorted array), for the built-in 32- and
// 64-bit keys (u32, i32, u64, i64, float, double); and on top_k_rows (issue 76),
// sample_candidates: the token LLM decoding draws from each row's top-k.
//
// Keys are equal when neither comes before the other in the library's order (key_traits.hpp):
// every NaN is one key (the largest), and -0.0 and +0.0 are two (-0.0 first). Python's
// gpusort.unique makes -0.0 +0.0 first, as NumPy counts them as one.
//
// Two layers, as sort.hpp's:
//  * the core, CUB-style: a workspace pointer and its size (temp == nullptr: a query that only
//    writes temp_bytes, never 0), device arrays, ordered on opt.stream, no waiting, no
//    allocation, no exceptions: cudaSuccess or the error, bad arrays reported before any data
//    is touched;
//  * the convenience layer on std::vector (host memory): the sort on the GPU when there is
//    one (gpusort::sort), the rest on the host; without a GPU the CPU backend.
//
// Example:
//   std::vector<float> v = ...;
//   const auto [keys, counts] = gpusort::unique(v);           // numpy.unique(v, return_counts=True)
//   const auto where = gpusort::searchsorted(keys, queries);   // numpy.searchsorted(keys, queries)
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpusort/detail/index_math/sampling.hpp"
#include "gpusort/sort.hpp"

namespace gpusort {

// Which place of a run of keys equal to the query searchsorted gives: before the run (left,
// numpy's default) or after it (right).
enum class side { left, right };

namespace detail {
// Defined in src/operations.cu for the six built-in key types.
template <class K>
cudaError_t unique_keys(void* temp, std::size_t& temp_bytes, const K* keys, std::uint64_t n,
                        K* unique_out, std::uint64_t* counts_out, std::uint64_t* num_unique,
                        const options& opt);
template <class K>
cudaError_t searchsorted(void* temp, std::size_t& temp_bytes, const K* sorted, std::uint64_t n,
                         const K* queries, std::uint64_t m, std::int64_t* positions, side where,
                         const options& opt);

// The place of q in sorted[0, n), ascending in the library's order: the first where it can go
// (side::left: the keys before it) or the last (side::right: the keys not after it). The
// device's searches and the host's run this one binary search.
template <class K>
GPUSORT_HD std::uint64_t place_in_sorted(const K* sorted, std::uint64_t n, const K& q, side where) {
  const less<K> before;
  std::uint64_t low = 0, high = n;
  while (low < high) {
    const std::uint64_t mid = low + (high - low) / 2;
    const bool after_mid = where == side::left ? before(sorted[mid], q) : !before(q, sorted[mid]);
    if (after_mid)
      low = mid + 1;
    else
      high = mid;
  }
  return low;
}

// The first key of each run of equal keys of sorted[0, n) (in the library's order), and how
// many there are of it: the host's half of the convenience layer's unique.
template <class K>
void unique_of_sorted(const std::vector<K>& sorted, std::vector<K>& keys,
                      std::vector<std::uint64_t>& counts) {
  keys.clear();
  counts.clear();
  const less<K> before;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (i == 0 || before(sorted[i - 1], sorted[i])) {
      keys.push_back(sorted[i]);
      counts.push_back(0);
    }
    ++counts.back();
  }
}
// Defined in src/operations.cu.
cudaError_t sample_candidates(const float* values, const std::int64_t* indices, std::uint64_t rows,
                              std::uint64_t k, float p, float temperature, const float* uniforms,
                              std::int64_t* tokens, cudaStream_t stream);
cudaError_t sample_candidates(const __half* values, const std::int64_t* indices,
                              std::uint64_t rows, std::uint64_t k, float p, float temperature,
                              const float* uniforms, std::int64_t* tokens, cudaStream_t stream);
cudaError_t sample_candidates(const __nv_bfloat16* values, const std::int64_t* indices,
                              std::uint64_t rows, std::uint64_t k, float p, float temperature,
                              const float* uniforms, std::int64_t* tokens, cudaStream_t stream);

// Whether sample_candidates takes these p and temperature.
constexpr bool sampling_arguments_valid(float p, float temperature) {
  return p > 0.0f && p <= 1.0f && temperature > 0.0f;  // NaNs fail each
}

// sample_candidates of one row on the host: what the device's kernel computes, in loops.
inline std::int64_t sample_row(const float* values, const std::int64_t* indices, std::uint64_t k,
                               float p, float temperature, float u) {
  std::uint64_t first = 0;  // the most likely number: past the NaNs top-k puts first
  while (first < k && values[first] != values[first]) ++first;
  if (first == k) return indices[0];
  const float inverse_temperature = 1.0f / temperature;
  float total = 0.0f;
  for (std::uint64_t i = 0; i < k; ++i)
    total += index_math::candidate_weight(values[i], values[first], inverse_temperature);
  float kept = 0.0f;  // the weight of the candidates kept so far, before the next
  std::uint64_t kept_count = 0;
  for (; kept_count < k && index_math::kept_by_top_p(kept, total, p); ++kept_count)
    kept += index_math::candidate_weight(values[kept_count], values[first], inverse_temperature);
  const float target = index_math::draw_target(u, kept);
  float running = 0.0f;
  for (std::uint64_t i = 0; i < kept_count; ++i) {
    running += index_math::candidate_weight(values[i], values[first], inverse_temperature);
    if (running > target) return indices[i];
  }
  return indices[kept_count - 1];
}
}  // namespace detail

// ---- core layer -----------------------------------------------------------------------

// One token a row, as LLM decoding samples it (gpusort.sample_top_k_top_p), from each row's
// k candidates: values[r * k, (r + 1) * k), most likely first as top_k_rows leaves them (NaNs
// first), with their token ids in indices. Each candidate weighs its softmax numerator at
// `temperature` (exp((value - most likely) / temperature); NaNs 0); top-p keeps those whose
// weight before them is below p of the row's total (the first always); tokens[r] is drawn
// from the kept in proportion to their weight by uniforms[r] in [0, 1). A row of NaNs gives its
// first candidate. p in (0, 1], temperature > 0 (infinity: every candidate alike), else
// cudaErrorInvalidValue. Device arrays, on `stream`, no waiting, no workspace: one block a
// row. Values are float, or the logits' __half or __nv_bfloat16 as top_k_rows left them
// (computed in float: no conversion first).
template <class T>
  requires std::same_as<T, float> || std::same_as<T, __half> || std::same_as<T, __nv_bfloat16>
inline cudaError_t sample_candidates(const T* values, const std::int64_t* indices,
                                     std::uint64_t rows, std::uint64_t k, float p,
                                     float temperature, const float* uniforms, std::int64_t* tokens,
                                     cudaStream_t stream = nullptr) {
  return detail::sample_candidates(values, indices, rows, k, p, temperature, uniforms, tokens, stream);
}

// The distinct keys of keys[0, n), in ascending order, into unique_out[0, *num_unique); and
// where counts_out is not null, counts_out[i] = how many keys equal unique_out[i]. keys is
// not changed. unique_out and counts_out hold room for n; num_unique is one std::uint64_t in
// device memory. Of NaNs of different bits one is kept (with opt.stable, the first). opt.algo
// picks the sort (float keys take automatic for cub_radix, whose bare order differs);
// opt.direction must be ascending and opt.nans last (numpy.unique's order): else
// cudaErrorInvalidValue. Workspace: a sorted copy of the keys and the sort's own (past INT_MAX
// keys, n 8-byte run numbers more).
template <supported_key K, std::integral N>
cudaError_t unique_keys(void* temp, std::size_t& temp_bytes, const K* keys, N n, K* unique_out,
                        std::uint64_t* counts_out, std::uint64_t* num_unique,
                        const options& opt = {}) {
  if (detail::negative(n)) return cudaErrorInvalidValue;
  return detail::never_zero(temp, temp_bytes,
                            detail::unique_keys<K>(temp, temp_bytes, keys,
                                                   static_cast<std::uint64_t>(n), unique_out,
                                                   counts_out, num_unique, opt));
}

// For each queries[j], j < m, the place in sorted[0, n) where it would go to keep the array in
// order, into positions[j]: the first place (side::left: the number of keys before it) or the
// last (side::right: the number not after it). sorted must be in ascending order (NaNs last),
// as gpusort::sort leaves it. Many queries are sorted first (a copy, with their positions), so
// that neighbouring searches share their path through the array. Workspace: for m >= 2^16, a
// copy of the queries, m 8-byte positions and the sort's own.
template <supported_key K, std::integral N, std::integral M>
cudaError_t searchsorted(void* temp, std::size_t& temp_bytes, const K* sorted, N n,
                         const K* queries, M m, std::int64_t* positions, side where = side::left,
                         const options& opt = {}) {
  if (detail::negative(n) || detail::negative(m)) return cudaErrorInvalidValue;
  return detail::never_zero(temp, temp_bytes,
                            detail::searchsorted<K>(temp, temp_bytes, sorted,
                                                    static_cast<std::uint64_t>(n), queries,
                                                    static_cast<std::uint64_t>(m), positions,
                                                    where, opt));
}

// ---- convenience layer ----------------------------------------------------------------

template <supported_key K>
struct unique_result {
  std::vector<K> keys;                 // the distinct keys, ascending
  std::vector<std::uint64_t> counts;   // how many of each
};

// numpy.unique(host_keys, return_counts=True), in the library's order (see the top): the sort
// on the GPU when there is one, else on the CPU. host_keys is not changed.
template <supported_key K>
unique_result<K> unique(const std::vector<K>& host_keys, const options& opt = {}) {
  if (opt.direction != order::ascending || opt.nans != nan_order::last)
    detail::throw_error(cudaErrorInvalidValue,
                        "gpusort::unique: the keys come out ascending, NaNs last (the "
                        "options ask for another order)");
  std::vector<K> sorted = host_keys;
  gpusort::sort(sorted, opt);
  unique_result<K> result;
  detail::unique_of_sorted(sorted, result.keys, result.counts);
  return result;
}

// sample_candidates on host arrays (the CPU backend's, and the device's reference): tokens of
// rows rows of k candidates each.
inline void sample_candidates_on_host(const float* values, const std::int64_t* indices,
                                      std::uint64_t rows, std::uint64_t k, float p,
                                      float temperature, const float* uniforms,
                                      std::int64_t* tokens) {
  if (!detail::sampling_arguments_valid(p, temperature) || (k == 0 && rows > 0))
    throw invalid_request("gpusort::sample_candidates: p must be in (0, 1], temperature above 0, "
                          "and a row must hold a candidate");
  for (std::uint64_t r = 0; r < rows; ++r)
    tokens[r] = detail::sample_row(values + r * k, indices + r * k, k, p, temperature, uniforms[r]);
}

// numpy.searchsorted(sorted, queries, side): on the host (the searches read each query once).
// sorted must be ascending in the library's order (NaNs last); gpusort::invalid_request if it
// is not.
template <supported_key K>
std::vector<std::int64_t> searchsorted(const std::vector<K>& sorted, const std::vector<K>& queries,
                                       side where = side::left) {
  const less<K> before;
  if (std::is_sorted(sorted.begin(), sorted.end(), before) == false)
    throw invalid_request("gpusort::searchsorted: the array searched is not in ascending order");
  std::vector<std::int64_t> positions(queries.size());
  std::transform(queries.begin(), queries.end(), positions.begin(), [&](const K& q) {
    return static_cast<std::int64_t>(detail::place_in_sorted(sorted.data(), sorted.size(), q, where));
  });
  return positions;
}

}  // namespace gpusort
