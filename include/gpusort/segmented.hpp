// Many arrays sorted at once: sort_batched (equal sizes, back to back) and sort_segmented
// (any boundaries: CUB's convention of begin and end offsets); their _with_indices forms also
// give each key's position in its segment (torch.sort(x, dim=-1)'s indices), made by the
// kernels as they load the keys rather than read from memory.
//
// Every segment is sorted on its own by a bitonic network sized to it: a few lanes of a warp
// for tiny segments (registers and shuffles), a warp or a thread block in shared memory for
// medium ones, and the device sort's passes, shared by all of them, for segments longer than
// a block holds. Segments of 0 or 1 key cost nothing; mixed sizes do not wait for the
// largest. Ascending or descending; floats in the total order of key_traits.hpp, NaNs last or
// first as options::nans says. Not stable; options::stable runs CUB's segmented radix sort
// (stable, but NaNs of different bits in the order of their bits), as does cub_radix.
// cub_merge is CUB's DeviceSegmentedSort. CUB's sorts see float keys as codes (the whole
// array mapped before and back after).
//
// Memory: sort_batched uses none. sort_segmented's workspace lists the segments of more than
// 64 keys by size class: 4 bytes per entry, never more than n / 8 bytes in all (or 32
// bytes per segment when that is less), 8 bytes per possible long segment (at most n / 2^13
// of them for 4-byte keys) and 128 bytes of counters; the query reports it.
// Segments must not overlap; keys outside every segment keep their bits (only CUB's float
// sorts, which map the whole array, write them, as they were). A segment with
// end < begin or end > n is not sorted: the convenience layer rejects such offsets before
// it touches any key; the core skips them.
//
//   // 1000 rows of 256 floats, each sorted:
//   gpusort::sort_batched(std::span(d_rows, 256000), 1000, 256);
//   // CSR rows: row i is [offsets[i], offsets[i + 1]):
//   gpusort::sort_segmented(std::span(d_cols, nnz), std::span(d_offsets, rows + 1));
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpusort/detail/core/entry.hpp"
#include "gpusort/detail/core/float_order.hpp"
#include "gpusort/detail/core/narrow_keys.hpp"
#include "gpusort/detail/index_math/segments.hpp"
#include "gpusort/key_traits.hpp"

namespace gpusort {

namespace detail {
using index_math::segment_list;

template <class O>
concept offset_type = std::integral<O> && (sizeof(O) == 4 || sizeof(O) == 8);

// What a segmented sort's values start as: the value array, or each key's position in its
// segment (the indices of an argsort, 4- or 8-byte values only). The size-class sort makes
// positions as it loads the keys; the others write them first.
enum class value_source { array, positions };

// Defined in src/ for every supported key type and value size. algorithm::automatic and
// bitonic: the size-class sort; cub_radix: cub::DeviceSegmentedRadixSort; cub_merge:
// cub::DeviceSegmentedSort (those two need n key (and value) slots of workspace).
// stored: what unsigned keys hold, see src/segmented_impl.cuh (the float and signed key
// types' own calls set it).
template <class K, class P>
cudaError_t sort_segments(void* temp, std::size_t& temp_bytes, K* keys, P* values,
                          std::uint64_t n, const segment_list& segments, const options& opt,
                          key_bits stored = key_bits::unsigned_keys,
                          value_source source = value_source::array);
template <class K, class P>
void cpu_sort_segments(K* keys, P* values, std::uint64_t n, const segment_list& segments,
                       const options& opt);

// Narrow keys (detail/core/narrow_keys.hpp) in segments, src/segmented_narrow.cu: sorted as
// codes of their own width (bool and unsigned keys are their codes) by the unsigned segmented
// sort of that width, mapped as its size-class sort loads and stores them, or in place before
// and after CUB's sorts.
template <class K, class P>
cudaError_t sort_segments_narrow(void* temp, std::size_t& temp_bytes, K* keys, P* values,
                                 std::uint64_t n, const segment_list& segments,
                                 const options& opt, value_source source);
template <class K, class P>
void cpu_sort_segments_narrow(K* keys, P* values, std::uint64_t n, const segment_list& segments,
                              const options& opt);

// The entry points' one way down, for every key type they take (calls qualified, as in
// narrow_keys.hpp).
template <class K, class P>
cudaError_t sort_segments_any_key(void* temp, std::size_t& temp_bytes, K* keys, P* values,
                                  std::uint64_t n, const segment_list& segments,
                                  const options& opt, value_source source) {
  if constexpr (narrow_key<K>)
    return detail::sort_segments_narrow<K, P>(temp, temp_bytes, keys, values, n, segments, opt,
                                              source);
  else
    return detail::sort_segments<K, P>(temp, temp_bytes, keys, values, n, segments, opt,
                                       key_bits::unsigned_keys, source);
}
template <class K, class P>
void cpu_sort_segments_any_key(K* keys, P* values, std::uint64_t n, const segment_list& segments,
                               const options& opt) {
  if constexpr (narrow_key<K>)
    detail::cpu_sort_segments_narrow<K, P>(keys, values, n, segments, opt);
  else
    detail::cpu_sort_segments<K, P>(keys, values, n, segments, opt);
}

// A segment that names keys it cannot: end < begin or end > n.
struct invalid_segment {
  std::uint64_t index;  // == segments.count when every segment is valid
  std::uint64_t begin, end;
};
// Finds the first invalid segment on the device and waits for the answer (the convenience
// layer's check before it touches any key). (src/segmented.cu)
cudaError_t find_invalid_segment(const segment_list& segments, std::uint64_t n,
                                 cudaStream_t stream, invalid_segment& found);
// The same for offsets in host memory.
invalid_segment find_invalid_segment_host(const segment_list& segments, std::uint64_t n);
[[noreturn]] void throw_invalid_segment(const std::string& call, const invalid_segment& bad,
                                        std::uint64_t n);

// Checks the arrays a segmented sort reads before it touches them: keys and values in device
// memory, offsets of 4 or 8 bytes in device memory, at most 2^32 - 1 segments, a batch that
// does not overflow.
template <class K, class V>
cudaError_t validate_segment_arrays(const K* keys, const V* values, std::uint64_t n,
                                    const segment_list& segs) {
  cudaError_t e = validate_device_array(keys, n, sizeof(K), alignof(K));
  if (e == cudaSuccess && !std::is_same_v<V, no_value>)
    e = validate_device_array(values, n, sizeof(V), sizeof(V));
  if (e != cudaSuccess) return e;
  if (segs.batched())
    return segs.batch_size != 0 && segs.count > ~std::uint64_t{0} / segs.batch_size
               ? cudaErrorInvalidValue
               : cudaSuccess;
  if (segs.offset_bytes != 4 && segs.offset_bytes != 8) return cudaErrorInvalidValue;
  if (segs.count > 0xffffffffu) return cudaErrorInvalidValue;  // lists hold 32-bit indices
  e = validate_device_array(segs.begin, segs.count, segs.offset_bytes, segs.offset_bytes);
  if (e == cudaSuccess)
    e = validate_device_array(segs.end, segs.count, segs.offset_bytes, segs.offset_bytes);
  return e;
}

template <offset_type O>
segment_list make_segments(const O* begin, const O* end, std::uint64_t count) {
  return segment_list{begin, end, count, 0, static_cast<int>(sizeof(O))};
}
inline segment_list make_batches(std::uint64_t batch_count, std::uint64_t batch_size) {
  return segment_list{nullptr, nullptr, batch_count, batch_size, 8};
}

template <class K, class V>
cudaError_t sort_segments_checked(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                                  std::uint64_t n, const segment_list& segments,
                                  const options& opt,
                                  value_source source = value_source::array) {
  if constexpr (std::is_same_v<V, no_value>) {
    return never_zero(temp, temp_bytes,
                      sort_segments_any_key<K, no_value>(temp, temp_bytes, keys, nullptr, n,
                                                         segments, opt, value_source::array));
  } else {
    return never_zero(temp, temp_bytes,
                      sort_segments_any_key<K, payload_of<V>>(
                          temp, temp_bytes, keys, reinterpret_cast<payload_of<V>*>(values), n,
                          segments, opt, source));
  }
}

std::string describe_segments(const char* function, const options& opt,
                              std::string_view key_type, std::uint64_t n,
                              std::uint64_t segments);
}  // namespace detail

// ---- core layer -----------------------------------------------------------------------

// Sorts keys[begin_offsets[i], end_offsets[i]) for every i < segment_count; keys[0, n) must
// be device memory, the offsets device arrays of segment_count 4- or 8-byte integers.
// With a single offsets array of segment_count + 1 entries, pass (offsets, offsets + 1).
template <sortable_key K, detail::offset_type O>
cudaError_t sort_segmented_keys(void* temp, std::size_t& temp_bytes, K* keys, std::uint64_t n,
                                const O* begin_offsets, const O* end_offsets,
                                std::uint64_t segment_count, const options& opt = {}) {
  return detail::sort_segments_checked<K, detail::no_value>(
      temp, temp_bytes, keys, nullptr, n,
      detail::make_segments(begin_offsets, end_offsets, segment_count), opt);
}

template <sortable_key K, detail::supported_value V, detail::offset_type O>
cudaError_t sort_segmented_pairs(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                                 std::uint64_t n, const O* begin_offsets, const O* end_offsets,
                                 std::uint64_t segment_count, const options& opt = {}) {
  return detail::sort_segments_checked(
      temp, temp_bytes, keys, values, n,
      detail::make_segments(begin_offsets, end_offsets, segment_count), opt);
}

// Sorts batch_count arrays of batch_size keys each, stored back to back. Its query asks for
// 1 byte, which it never touches.
template <sortable_key K>
cudaError_t sort_batched_keys(void* temp, std::size_t& temp_bytes, K* keys,
                              std::uint64_t batch_count, std::uint64_t batch_size,
                              const options& opt = {}) {
  return detail::sort_segments_checked<K, detail::no_value>(
      temp, temp_bytes, keys, nullptr, batch_count * batch_size,
      detail::make_batches(batch_count, batch_size), opt);
}

template <sortable_key K, detail::supported_value V>
cudaError_t sort_batched_pairs(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                               std::uint64_t batch_count, std::uint64_t batch_size,
                               const options& opt = {}) {
  return detail::sort_segments_checked(temp, temp_bytes, keys, values,
                                       batch_count * batch_size,
                                       detail::make_batches(batch_count, batch_size), opt);
}

// Segmented argsort: sorts every segment and writes into indices[j] the position in its
// segment that the key now at j had (for rows: torch.sort(x, dim=-1)'s indices). The sort
// makes them as it loads the keys: indices are only written, never read, and those of keys
// outside every segment keep their bits. I: std::uint32_t (n up to 2^32; batched: rows up to
// 2^32) or std::uint64_t. Workspace as for the keys-and-values sort.
template <sortable_key K, detail::index_type I, detail::offset_type O>
cudaError_t sort_segmented_with_indices(void* temp, std::size_t& temp_bytes, K* keys,
                                        I* indices, std::uint64_t n, const O* begin_offsets,
                                        const O* end_offsets, std::uint64_t segment_count,
                                        const options& opt = {}) {
  if (!detail::indices_fit<I>(n)) return cudaErrorInvalidValue;
  return detail::sort_segments_checked(
      temp, temp_bytes, keys, indices, n,
      detail::make_segments(begin_offsets, end_offsets, segment_count), opt,
      detail::value_source::positions);
}

template <sortable_key K, detail::index_type I>
cudaError_t sort_batched_with_indices(void* temp, std::size_t& temp_bytes, K* keys, I* indices,
                                      std::uint64_t batch_count, std::uint64_t batch_size,
                                      const options& opt = {}) {
  if (!detail::indices_fit<I>(batch_size)) return cudaErrorInvalidValue;
  return detail::sort_segments_checked(temp, temp_bytes, keys, indices,
                                       batch_count * batch_size,
                                       detail::make_batches(batch_count, batch_size), opt,
                                       detail::value_source::positions);
}

// ---- convenience layer ------------------------------------------------------------------

namespace detail {
// Validates, allocates the workspace, sorts and waits; throws gpusort::error. Offsets that
// name keys past the end are rejected before any key is touched.
template <class K, class V>
void sort_segments_device(K* keys, V* values, std::uint64_t n, const segment_list& segments,
                          const options& opt, const std::string& call,
                          value_source source = value_source::array) {
  check_device_array(keys, n, sizeof(K), alignof(K), "keys");
  if constexpr (!std::is_same_v<V, no_value>)
    check_device_array(values, n, sizeof(V), sizeof(V), "values");
  if (!segments.batched() && segments.count > 0) {
    check_device_array(segments.begin, segments.count, segments.offset_bytes,
                       segments.offset_bytes, "offsets");
    check_device_array(segments.end, segments.count, segments.offset_bytes,
                       segments.offset_bytes, "offsets");
    invalid_segment bad{};
    const cudaError_t e = find_invalid_segment(segments, n, opt.stream, bad);
    if (e != cudaSuccess) throw_error(e, call);
    if (bad.index < segments.count) throw_invalid_segment(call, bad, n);
  }
  std::size_t bytes = 0;
  cudaError_t e = sort_segments_checked(nullptr, bytes, keys, values, n, segments, opt, source);
  if (e != cudaSuccess) throw_error(e, call);
  workspace temp(bytes, opt, call);
  e = sort_segments_checked(temp.get(), bytes, keys, values, n, segments, opt, source);
  if (e == cudaSuccess) e = cudaStreamSynchronize(opt.stream);
  if (e != cudaSuccess) throw_error(e, call);
}

inline void check_value_count(const std::string& call, std::uint64_t keys,
                              std::uint64_t values) {
  if (values != keys)
    throw_error(cudaErrorInvalidValue, call + ": " + std::to_string(values) + " values for " +
                                           std::to_string(keys) + " keys");
}

// Indices of type I for rows of `row` keys (sort.hpp's check_index_count does a whole array).
template <class I>
void check_row_index_width(const std::string& call, std::uint64_t row) {
  if (!indices_fit<I>(row))
    throw_error(cudaErrorInvalidValue, call + ": rows of " + std::to_string(row) +
                                           " keys need 64-bit indices (std::uint64_t)");
}

template <class K, class V>
void check_batches(const std::string& call, std::uint64_t keys, std::uint64_t values,
                   std::uint64_t batch_count, std::uint64_t batch_size) {
  if (batch_size != 0 && batch_count > ~std::uint64_t{0} / batch_size)
    throw_error(cudaErrorInvalidValue, call + ": batch_count * batch_size overflows");
  if (keys != batch_count * batch_size)
    throw_error(cudaErrorInvalidValue,
                call + ": " + std::to_string(keys) + " keys for " + std::to_string(batch_count) +
                    " batches of " + std::to_string(batch_size));
  if (!std::is_same_v<V, no_value>) check_value_count(call, keys, values);
}

template <class O>
segment_list offsets_to_segments(const std::string& call, const O* offsets, std::size_t size) {
  if (size == 0)
    throw_error(cudaErrorInvalidValue,
                call + ": offsets must hold segment_count + 1 entries (at least one)");
  return make_segments(offsets, offsets + 1, size - 1);
}

// Host arrays: on the GPU when there is one (copy in, sort, copy out), else on the CPU.
// On error the host arrays are as they were.
template <class K, class V, class O>
void sort_segments_host(std::vector<K>& keys, std::vector<V>* values, const O* host_offsets,
                        const segment_list& host_segments, const options& opt,
                        const std::string& call);
}  // namespace detail

// Sorts each of batch_count arrays of batch_size device keys (keys.size() must be
// batch_count * batch_size); waits for the stream. Throws gpusort::error.
template <sortable_key K>
void sort_batched(std::span<K> keys, std::uint64_t batch_count, std::uint64_t batch_size,
                  const options& opt = {}) {
  const std::string call = detail::describe_segments("gpusort::sort_batched", opt,
                                                     detail::key_name<K>, keys.size(),
                                                     batch_count);
  detail::check_batches<K, detail::no_value>(call, keys.size(), 0, batch_count, batch_size);
  detail::sort_segments_device<K, detail::no_value>(
      keys.data(), nullptr, keys.size(), detail::make_batches(batch_count, batch_size), opt,
      call);
}

template <sortable_key K, detail::supported_value V>
void sort_batched(std::span<K> keys, std::span<V> values, std::uint64_t batch_count,
                  std::uint64_t batch_size, const options& opt = {}) {
  const std::string call = detail::describe_segments("gpusort::sort_batched (pairs)", opt,
                                                     detail::key_name<K>, keys.size(),
                                                     batch_count);
  detail::check_batches<K, V>(call, keys.size(), values.size(), batch_count, batch_size);
  detail::sort_segments_device(keys.data(), values.data(), keys.size(),
                               detail::make_batches(batch_count, batch_size), opt, call);
}

// Sorts device keys in segments: segment i is [offsets[i], offsets[i + 1]), so offsets (in
// device memory) holds segment_count + 1 entries. Waits for the stream. Throws
// gpusort::error, before touching any key if an offset is out of range.
template <sortable_key K, class O>
  requires detail::offset_type<std::remove_const_t<O>>
void sort_segmented(std::span<K> keys, std::span<O> offsets, const options& opt = {}) {
  const std::string call =
      detail::describe_segments("gpusort::sort_segmented", opt, detail::key_name<K>,
                                keys.size(), offsets.empty() ? 0 : offsets.size() - 1);
  detail::sort_segments_device<K, detail::no_value>(
      keys.data(), nullptr, keys.size(),
      detail::offsets_to_segments(call, offsets.data(), offsets.size()), opt, call);
}

template <sortable_key K, detail::supported_value V, class O>
  requires detail::offset_type<std::remove_const_t<O>>
void sort_segmented(std::span<K> keys, std::span<V> values, std::span<O> offsets,
                    const options& opt = {}) {
  const std::string call =
      detail::describe_segments("gpusort::sort_segmented (pairs)", opt, detail::key_name<K>,
                                keys.size(), offsets.empty() ? 0 : offsets.size() - 1);
  detail::check_value_count(call, keys.size(), values.size());
  detail::sort_segments_device(keys.data(), values.data(), keys.size(),
                               detail::offsets_to_segments(call, offsets.data(), offsets.size()),
                               opt, call);
}

// Sorts each of batch_count device rows of batch_size keys and writes into device indices the
// position in its row that each key had (torch.sort(x, dim=-1)'s indices, made by the sort
// as it loads the keys). Waits for the stream. Throws gpusort::error.
template <sortable_key K, detail::index_type I>
void sort_batched_with_indices(std::span<K> keys, std::span<I> indices,
                               std::uint64_t batch_count, std::uint64_t batch_size,
                               const options& opt = {}) {
  const std::string call = detail::describe_segments("gpusort::sort_batched_with_indices", opt,
                                                     detail::key_name<K>, keys.size(),
                                                     batch_count);
  detail::check_batches<K, I>(call, keys.size(), indices.size(), batch_count, batch_size);
  detail::check_row_index_width<I>(call, batch_size);
  detail::sort_segments_device(keys.data(), indices.data(), keys.size(),
                               detail::make_batches(batch_count, batch_size), opt, call,
                               detail::value_source::positions);
}

// Sorts device keys in segments [offsets[i], offsets[i + 1]) and writes into device indices
// the position in its segment that each key had; indices of keys outside every segment keep
// their bits. Checks the offsets first, as sort_segmented does. Throws gpusort::error.
template <sortable_key K, detail::index_type I, class O>
  requires detail::offset_type<std::remove_const_t<O>>
void sort_segmented_with_indices(std::span<K> keys, std::span<I> indices, std::span<O> offsets,
                                 const options& opt = {}) {
  const std::string call =
      detail::describe_segments("gpusort::sort_segmented_with_indices", opt,
                                detail::key_name<K>, keys.size(),
                                offsets.empty() ? 0 : offsets.size() - 1);
  detail::check_index_count<I>(call, keys.size(), indices.size());
  detail::sort_segments_device(keys.data(), indices.data(), keys.size(),
                               detail::offsets_to_segments(call, offsets.data(), offsets.size()),
                               opt, call, detail::value_source::positions);
}

// Host arrays: sorted on the GPU if there is one, else by the CPU backend.
template <sortable_key K>
void sort_batched(std::vector<K>& keys, std::uint64_t batch_count, std::uint64_t batch_size,
                  const options& opt = {}) {
  const std::string call = detail::describe_segments("gpusort::sort_batched", opt,
                                                     detail::key_name<K>, keys.size(),
                                                     batch_count);
  detail::check_batches<K, detail::no_value>(call, keys.size(), 0, batch_count, batch_size);
  detail::sort_segments_host<K, detail::no_value, std::uint64_t>(
      keys, nullptr, nullptr, detail::make_batches(batch_count, batch_size), opt, call);
}

template <sortable_key K, detail::supported_value V>
void sort_batched(std::vector<K>& keys, std::vector<V>& values, std::uint64_t batch_count,
                  std::uint64_t batch_size, const options& opt = {}) {
  const std::string call = detail::describe_segments("gpusort::sort_batched (pairs)", opt,
                                                     detail::key_name<K>, keys.size(),
                                                     batch_count);
  detail::check_batches<K, V>(call, keys.size(), values.size(), batch_count, batch_size);
  detail::sort_segments_host<K, V, std::uint64_t>(
      keys, &values, nullptr, detail::make_batches(batch_count, batch_size), opt, call);
}

template <sortable_key K, detail::offset_type O>
void sort_segmented(std::vector<K>& keys, const std::vector<O>& offsets,
                    const options& opt = {}) {
  const std::string call =
      detail::describe_segments("gpusort::sort_segmented", opt, detail::key_name<K>,
                                keys.size(), offsets.empty() ? 0 : offsets.size() - 1);
  detail::sort_segments_host<K, detail::no_value, O>(
      keys, nullptr, offsets.data(),
      detail::offsets_to_segments(call, offsets.data(), offsets.size()), opt, call);
}

template <sortable_key K, detail::supported_value V, detail::offset_type O>
void sort_segmented(std::vector<K>& keys, std::vector<V>& values, const std::vector<O>& offsets,
                    const options& opt = {}) {
  const std::string call =
      detail::describe_segments("gpusort::sort_segmented (pairs)", opt, detail::key_name<K>,
                                keys.size(), offsets.empty() ? 0 : offsets.size() - 1);
  detail::check_value_count(call, keys.size(), values.size());
  detail::sort_segments_host<K, V, O>(
      keys, &values, offsets.data(),
      detail::offsets_to_segments(call, offsets.data(), offsets.size()), opt, call);
}

namespace detail {
// A device copy of a host array (the call's allocator, its stream), freed on scope exit;
// `ok` is false where the memory or the copy failed.
template <class T>
struct device_copy {
  std::optional<device_buffer<T>> buffer;
  T* ptr = nullptr;
  bool ok = false;
  device_copy(const T* host, std::size_t count, const options& opt, const std::string& call) {
    if (count == 0) {
      ok = true;
      return;
    }
    try {
      buffer.emplace(count, opt, call);
    } catch (const error&) {
      return;
    }
    ptr = buffer->get();
    cudaError_t e =
        cudaMemcpyAsync(ptr, host, sizeof(T) * count, cudaMemcpyHostToDevice, opt.stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(opt.stream);
    ok = e == cudaSuccess;
    if (!ok) cudaGetLastError();
  }
};

template <class K, class V, class O>
void sort_segments_host(std::vector<K>& keys, std::vector<V>* values, const O* host_offsets,
                        const segment_list& host_segments, const options& opt,
                        const std::string& call) {
  static_assert(!std::is_same_v<K, bool>, "std::vector<bool> packs its bits: sort bytes (std::uint8_t)");
  const std::uint64_t n = keys.size();
  if (!host_segments.batched()) {
    const invalid_segment bad = find_invalid_segment_host(host_segments, n);
    if (bad.index < host_segments.count) throw_invalid_segment(call, bad, n);
  }
  using P = std::conditional_t<std::is_same_v<V, no_value>, no_value, payload_of<V>>;
  P* host_payloads = values ? reinterpret_cast<P*>(values->data()) : nullptr;
  if (gpu_available() && n > 1) {
    device_copy<K> d_keys(keys.data(), n, opt, call);
    device_copy<V> d_values(values ? values->data() : nullptr, values ? n : 0, opt, call);
    const std::size_t offset_count = host_segments.batched() ? 0 : host_segments.count + 1;
    device_copy<O> d_offsets(host_offsets, offset_count, opt, call);
    if (d_keys.ok && d_values.ok && d_offsets.ok) {
      segment_list segments = host_segments;
      if (!segments.batched()) {
        segments.begin = d_offsets.ptr;
        segments.end = d_offsets.ptr + 1;
      }
      sort_segments_device(d_keys.ptr, values ? d_values.ptr : static_cast<V*>(nullptr), n,
                           segments, opt, call);
      // Copy both back before touching the host arrays: on error they stay as they were.
      std::vector<K> sorted_keys(n);
      std::vector<V> sorted_values(values ? n : 0);
      cudaError_t e = cudaMemcpyAsync(sorted_keys.data(), d_keys.ptr, sizeof(K) * n,
                                      cudaMemcpyDeviceToHost, opt.stream);
      if (e == cudaSuccess && values)
        e = cudaMemcpyAsync(sorted_values.data(), d_values.ptr, sizeof(V) * n,
                            cudaMemcpyDeviceToHost, opt.stream);
      if (e == cudaSuccess) e = cudaStreamSynchronize(opt.stream);
      if (e != cudaSuccess) throw_error(e, call + ": copy from the device failed");
      keys.swap(sorted_keys);
      if (values) values->swap(sorted_values);
      return;
    }
    notice_cpu_fallback("not enough device memory for the segments");
  }
  cpu_sort_segments_any_key<K, P>(keys.data(), host_payloads, n, host_segments, opt);
}
}  // namespace detail

}  // namespace gpusort
