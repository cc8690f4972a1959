// gpusort::dist::sort and sort_spread (include/gpusort/dist.hpp), instantiated per key type in
// dist_<key>.cu. The index math is in detail/network/dist.hpp.
#pragma once

#include <algorithm>
#include <barrier>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <cub/device/device_merge.cuh>

#include "dist_common.hpp"
#include "gpusort/detail/network/dist.hpp"
#include "gpusort/dist.hpp"

namespace gpusort::dist::detail {

namespace math = gpusort::detail::network::dist;
using gpusort::detail::no_value;
using math::splitter;

// The merge's comparator: the order of the codes (equal codes tie, so the merge is stable).
template <class K>
struct by_order_code {
  math::order_code<K> code;
  __host__ __device__ __forceinline__ bool operator()(const K& a, const K& b) const {
    return code(a) < code(b);
  }
};

template <class K>
__global__ void take_samples_kernel(const K* keys, std::uint64_t count, std::uint64_t stride,
                                    std::uint32_t rank, math::order_code<K> code, splitter* out) {
  const std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  if (i >= count) return;
  const std::uint64_t pos = math::sample_position(i, stride);
  out[i] = splitter{code(keys[pos]), rank, pos};
}

// bounds[j] = keys of this rank before splitter j (bounds[0] = 0, bounds[p] = n): one thread
// per splitter, two binary searches for the range of keys equal to it.
template <class K>
__global__ void bucket_bounds_kernel(const K* keys, std::uint64_t n, const splitter* splitters,
                                     int ranks, std::uint32_t rank, math::order_code<K> code,
                                     std::uint64_t* bounds) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j > ranks) return;
  if (j == 0 || j == ranks) {
    bounds[j] = j == 0 ? 0 : n;
    return;
  }
  const splitter s = splitters[j - 1];
  std::uint64_t lo = 0, hi = n;  // first key not below s.key
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (code(keys[mid]) < s.key) lo = mid + 1; else hi = mid;
  }
  std::uint64_t end = lo, top = n;  // first key above s.key
  while (end < top) {
    const std::uint64_t mid = end + (top - end) / 2;
    if (code(keys[mid]) <= s.key) end = mid + 1; else top = mid;
  }
  bounds[j] = math::keys_before(s, rank, lo, end);
}

template <class K, class V>
struct shard_access {
  static void fill(shard<K, V>& s, device_memory&& keys, device_memory&& values,
                   std::uint64_t size, const phase_times& times) {
    s.keys_.reset(keys.release());
    s.values_.reset(values.release());
    s.size_ = size;
    s.times_ = times;
  }
};

// Merges the sorted runs in `from` (at offsets runs[i]) pairwise, adjacent runs only (stable),
// ping-ponging with `to`, until one is left; returns the buffer holding it (0: from, 1: to).
template <class K, class V, class Compare>
int merge_runs(device_memory* keys_buf, device_memory* values_buf, std::vector<std::uint64_t> runs,
               Compare comp, cudaStream_t stream, const std::string& call) {
  constexpr bool pairs = !std::is_same_v<V, no_value>;
  auto key_ptr = [&](int b) { return static_cast<K*>(keys_buf[b].get()); };
  auto value_ptr = [&](int b) { return static_cast<V*>(values_buf[b].get()); };
  auto merge = [&](void* temp, std::size_t& bytes, int src, std::uint64_t a, std::uint64_t b,
                   std::uint64_t c) {
    if constexpr (pairs) {
      return cub::DeviceMerge::MergePairs(temp, bytes, key_ptr(src) + a, value_ptr(src) + a,
                                          b - a, key_ptr(src) + b, value_ptr(src) + b, c - b,
                                          key_ptr(1 - src) + a, value_ptr(1 - src) + a, comp,
                                          stream);
    } else {
      return cub::DeviceMerge::MergeKeys(temp, bytes, key_ptr(src) + a, b - a, key_ptr(src) + b,
                                         c - b, key_ptr(1 - src) + a, comp, stream);
    }
  };
  // One workspace, as large as the largest merge asks.
  std::size_t temp_bytes = 0;
  {
    std::size_t bytes = 0;
    check_cuda(merge(nullptr, bytes, 0, 0, runs.back() / 2, runs.back()), call + ": merge");
    temp_bytes = bytes;
  }
  device_memory temp(temp_bytes, stream, call + ": merge workspace");
  int src = 0;
  while (runs.size() > 2) {
    std::vector<std::uint64_t> next{0};
    for (std::size_t i = 0; i + 1 < runs.size(); i += 2) {
      const std::uint64_t a = runs[i], b = runs[i + 1];
      const std::uint64_t c = i + 2 < runs.size() ? runs[i + 2] : b;
      if (i + 2 < runs.size()) {
        std::size_t bytes = temp_bytes;
        check_cuda(merge(temp.get(), bytes, src, a, b, c), call + ": merge");
      } else {  // an odd run out: copied through
        copy_async(key_ptr(1 - src) + a, key_ptr(src) + a, b - a, stream);
        if constexpr (pairs) copy_async(value_ptr(1 - src) + a, value_ptr(src) + a, b - a, stream);
      }
      next.push_back(c);
    }
    runs = std::move(next);
    src = 1 - src;
  }
  return src;
}

template <class K, class V>
shard<K, V> sort(const communicator& comm, K* keys, V* values, std::uint64_t n,
                 const options& opt) {
  constexpr bool pairs = !std::is_same_v<V, no_value>;
  const int p = comm.size();
  const auto rank = static_cast<std::uint32_t>(comm.rank());
  const cudaStream_t stream = opt.stream;
  const std::string call = "gpusort::dist::sort" + std::string(pairs ? " (pairs)" : "") +
                           " <" + std::string(key_traits<K>::name) + "> on rank " +
                           std::to_string(rank) + " of " + std::to_string(p);
  check_cuda(cudaSetDevice(comm.device()), call + ": cudaSetDevice");

  // Everything that could fail on this rank alone is checked before the first collective,
  // which shares the verdict: all ranks go on, or all throw.
  gpusort::options local;
  local.algo = opt.local_algo;
  local.direction = opt.direction;
  local.nans = opt.nans;
  local.stable = opt.stable;
  local.stream = stream;
  const math::order_code<K> code(opt.direction, opt.nans);
  rank_status status;
  status.check_array(keys, n, sizeof(K), alignof(K), comm.device(), failure::keys);
  if constexpr (pairs) status.check_array(values, n, sizeof(V), sizeof(V), comm.device(), failure::values);
  if (opt.oversampling == 0 || opt.oversampling > math::max_oversampling)
    status.fail(failure::oversampling, cudaErrorInvalidValue);
  std::size_t sort_bytes = 0;
  cudaError_t e = cudaSuccess;
  if (status.ok()) {
    if constexpr (pairs) e = gpusort::detail::sort_pairs<K, V>(nullptr, sort_bytes, keys, values, n, local);
    else e = gpusort::detail::sort_keys<K>(nullptr, sort_bytes, keys, n, local);
    if (e != cudaSuccess) status.fail(failure::local_sort, e);
  }
  device_memory sort_temp;
  if (status.ok())
    status.try_allocate(sort_temp, std::max<std::size_t>(sort_bytes, 1), stream,
                        failure::local_workspace);
  const math::call_signature signature{
      std::is_floating_point_v<K> ? math::key_kind::floating
      : std::is_signed_v<K>       ? math::key_kind::signed_integer
                                  : math::key_kind::unsigned_integer,
      static_cast<std::uint8_t>(sizeof(K)), static_cast<std::uint8_t>(pairs ? sizeof(V) : 0),
      opt.direction == order::descending, opt.nans == nan_order::first, opt.stable,
      static_cast<std::uint8_t>(opt.local_algo), opt.oversampling};
  const std::vector<std::uint64_t> sizes = agree(comm, status, n, math::pack(signature), stream,
                                                 call, "no rank has changed its keys");

  phase_times times;
  for (std::uint64_t s : sizes) times.total_keys += s;
  const std::uint64_t total = times.total_keys;
  if (total == 0) {
    shard<K, V> empty;
    shard_access<K, V>::fill(empty, device_memory{}, device_memory{}, 0, times);
    return empty;
  }

  event_timeline clock(stream, 5);
  clock.mark(0);
  // 1. Local sort.
  if (n > 1) {
    if constexpr (pairs) e = gpusort::detail::sort_pairs<K, V>(sort_temp.get(), sort_bytes, keys, values, n, local);
    else e = gpusort::detail::sort_keys<K>(sort_temp.get(), sort_bytes, keys, n, local);
    check_cuda(e, call + ": local sort");
  }
  sort_temp.reset(stream);
  clock.mark(1);

  // 2. Samples with one global stride, gathered on every rank; splitters picked on the host
  //    (at most a few thousand samples), the same on every rank.
  const std::uint64_t stride = math::sample_stride(total, p, opt.oversampling);
  std::uint64_t slots = 0, samples = 0;
  for (std::uint64_t s : sizes) {
    slots = std::max(slots, math::sample_count(s, stride));
    samples += math::sample_count(s, stride);
  }
  times.bound = math::max_bucket(samples, stride, p);
  device_memory my_samples(sizeof(splitter) * std::max<std::uint64_t>(slots, 1), stream, call);
  device_memory all_samples(sizeof(splitter) * std::max<std::uint64_t>(slots, 1) * p, stream, call);
  const std::uint64_t mine = math::sample_count(n, stride);
  if (mine > 0)
    take_samples_kernel<<<static_cast<unsigned>((mine + 255) / 256), 256, 0, stream>>>(
        keys, mine, stride, rank, code, static_cast<splitter*>(my_samples.get()));
  check_cuda(cudaGetLastError(), call + ": sampling");
  all_gather(comm, my_samples.get(), all_samples.get(), sizeof(splitter) * slots, stream,
             call + ": gathering the samples");
  std::vector<splitter> gathered(slots * p);
  copy_to_host(gathered.data(), static_cast<const splitter*>(all_samples.get()), gathered.size(),
               stream, call);
  std::vector<splitter> sorted;
  sorted.reserve(samples);
  for (int q = 0; q < p; ++q) {
    const auto first = gathered.begin() + static_cast<std::ptrdiff_t>(q * slots);
    sorted.insert(sorted.end(), first,
                  first + static_cast<std::ptrdiff_t>(math::sample_count(sizes[q], stride)));
  }
  std::sort(sorted.begin(), sorted.end());
  std::vector<splitter> chosen(std::max(p - 1, 1));
  for (int j = 1; j < p; ++j) chosen[j - 1] = sorted[math::splitter_rank(j, samples, p)];

  // 3. Bucket boundaries, and every rank's boundaries on every rank.
  device_memory d_chosen(sizeof(splitter) * chosen.size(), stream, call);
  copy_async(static_cast<splitter*>(d_chosen.get()), chosen.data(), chosen.size(), stream);
  device_memory bounds(sizeof(std::uint64_t) * (p + 1), stream, call);
  device_memory all_bounds(sizeof(std::uint64_t) * (p + 1) * p, stream, call);
  bucket_bounds_kernel<<<1, ((p + 1 + 31) / 32) * 32, 0, stream>>>(
      keys, n, static_cast<const splitter*>(d_chosen.get()), p, rank, code,
      static_cast<std::uint64_t*>(bounds.get()));
  check_cuda(cudaGetLastError(), call + ": bucket boundaries");
  all_gather(comm, bounds.get(), all_bounds.get(), sizeof(std::uint64_t) * (p + 1), stream,
             call + ": exchanging the counts");
  std::vector<std::uint64_t> matrix(static_cast<std::size_t>(p) * (p + 1));
  copy_to_host(matrix.data(), static_cast<const std::uint64_t*>(all_bounds.get()), matrix.size(),
               stream, call);
  const exchange_plan plan(matrix, p, rank);
  const std::uint64_t received = plan.received();
  for (int q = 0; q < p; ++q)
    if (plan.received_by(q) > times.bound)
      throw_internal(call + ": rank " + std::to_string(q) + " would receive " +
                     std::to_string(plan.received_by(q)) + " keys, above the bound " +
                     std::to_string(times.bound));

  // 4. The exchange. Receive and merge buffers are allocated first, and every rank learns
  //    whether all could, before any data moves.
  rank_status room;
  device_memory recv_keys[2], recv_values[2];
  for (int b = 0; b < 2 && room.ok(); ++b) {
    room.try_allocate(recv_keys[b], sizeof(K) * std::max<std::uint64_t>(received, 1), stream,
                      failure::receive_buffers);
    if (pairs && room.ok())
      room.try_allocate(recv_values[b], sizeof(V) * std::max<std::uint64_t>(received, 1), stream,
                        failure::receive_buffers);
  }
  agree(comm, room, 0, 0, stream, call, "every shard is sorted locally and no key is lost");
  clock.mark(2);  // every rank is here (agree waits for all): the exchange alone from now
  std::vector<transfer> transfers;
  auto* received_keys = static_cast<K*>(recv_keys[0].get());
  auto* received_values = static_cast<V*>(recv_values[0].get());
  forked_stream own_part(stream);  // the rank's own keys, copied while NCCL moves the rest
  for (int q = 0; q < p; ++q) {
    const std::uint64_t out = plan.send_count(q), in = plan.recv_count(q);
    const std::uint64_t out_at = plan.send_offset(q), in_at = plan.recv_offset(q);
    if (q == static_cast<int>(rank)) {
      copy_async(received_keys + in_at, keys + out_at, out, own_part.get());
      if constexpr (pairs) copy_async(received_values + in_at, values + out_at, out, own_part.get());
      continue;
    }
    transfers.push_back({q, keys + out_at, sizeof(K) * out, received_keys + in_at, sizeof(K) * in});
    if constexpr (pairs)
      transfers.push_back(
          {q, values + out_at, sizeof(V) * out, received_values + in_at, sizeof(V) * in});
    times.bytes_sent += (sizeof(K) + (pairs ? sizeof(V) : 0)) * out;
    times.bytes_received += (sizeof(K) + (pairs ? sizeof(V) : 0)) * in;
  }
  exchange(comm, transfers, stream, call + ": exchanging the keys");
  own_part.join();
  clock.mark(3);

  // 5. Merge the p received runs (rank order, so ties stay in (rank, position) order).
  int result = 0;
  std::vector<std::uint64_t> runs = plan.nonempty_run_bounds();
  if (runs.size() > 2)
    result = merge_runs<K, V>(recv_keys, recv_values, runs, by_order_code<K>{code}, stream, call);
  recv_keys[1 - result].reset(stream);
  recv_values[1 - result].reset(stream);
  clock.mark(4);
  check_cuda(cudaStreamSynchronize(stream), call);
  times.local_sort_ms = clock.ms(0, 1);
  times.sampling_ms = clock.ms(1, 2);
  times.exchange_ms = clock.ms(2, 3);
  times.merge_ms = clock.ms(3, 4);
  times.total_ms = clock.ms(0, 4);
  shard<K, V> out;
  shard_access<K, V>::fill(out, std::move(recv_keys[result]), std::move(recv_values[result]),
                           received, times);
  return out;
}

template <class K, class V>
void sort_spread(K* keys, V* values, std::uint64_t n, std::span<const int> devices,
                 const options& opt) {
  constexpr bool pairs = !std::is_same_v<V, no_value>;
  if (n == 0) return;
  std::vector<communicator> comms = communicators_for_devices(devices);
  const int p = static_cast<int>(comms.size());
  std::vector<std::uint64_t> result_sizes(p);
  std::vector<std::exception_ptr> errors(p);
  std::barrier sizes_known(p);
  auto work = [&](int r) {
    try {
      const communicator& comm = comms[r];
      check_cuda(cudaSetDevice(comm.device()), "gpusort::dist::sort_spread: cudaSetDevice");
      const std::uint64_t begin = n * r / p, count = n * (r + 1) / p - begin;
      // A slice that cannot be allocated goes in as a null shard: dist::sort then reports it
      // on every rank instead of leaving the others waiting.
      device_memory d_keys, d_values;
      rank_status room;
      room.try_allocate(d_keys, sizeof(K) * std::max<std::uint64_t>(count, 1), nullptr,
                        failure::slice);
      if (pairs && room.ok())
        room.try_allocate(d_values, sizeof(V) * std::max<std::uint64_t>(count, 1), nullptr,
                          failure::slice);
      K* slice_keys = room.ok() ? static_cast<K*>(d_keys.get()) : nullptr;
      V* slice_values = room.ok() ? static_cast<V*>(d_values.get()) : nullptr;
      if (room.ok()) {
        copy_async(slice_keys, keys + begin, count, nullptr);
        if constexpr (pairs) copy_async(slice_values, values + begin, count, nullptr);
      }
      options o = opt;
      o.stream = nullptr;
      shard<K, V> part = sort<K, V>(comm, slice_keys, slice_values, count, o);
      result_sizes[r] = part.size();
      sizes_known.arrive_and_wait();  // every slice has been read before any is overwritten
      std::uint64_t at = 0;
      for (int q = 0; q < r; ++q) at += result_sizes[q];
      copy_async(keys + at, part.keys().data(), part.size(), nullptr);
      if constexpr (pairs) copy_async(values + at, part.values().data(), part.size(), nullptr);
      check_cuda(cudaStreamSynchronize(nullptr), "gpusort::dist::sort_spread: copy back");
    } catch (...) {
      errors[r] = std::current_exception();
      sizes_known.arrive_and_drop();
    }
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r) threads.emplace_back(work, r);
  for (auto& t : threads) t.join();
  for (auto& err : errors)
    if (err) std::rethrow_exception(err);
}

}  // namespace gpusort::dist::detail

#define GPUSORT_DIST_INSTANTIATE_VALUE(K, V)                                                   \
  template gpusort::dist::shard<K, V> gpusort::dist::detail::sort<K, V>(                        \
      const gpusort::dist::communicator&, K*, V*, std::uint64_t, const gpusort::dist::options&); \
  template void gpusort::dist::detail::sort_spread<K, V>(K*, V*, std::uint64_t,                 \
                                                         std::span<const int>,                  \
                                                         const gpusort::dist::options&);

#define GPUSORT_DIST_INSTANTIATE_KEY(K)                                  \
  GPUSORT_DIST_INSTANTIATE_VALUE(K, gpusort::detail::no_value)           \
  GPUSORT_DIST_INSTANTIATE_VALUE(K, gpusort::detail::payload<4>)         \
  GPUSORT_DIST_INSTANTIATE_VALUE(K, gpusort::detail::payload<8>)         \
  GPUSORT_DIST_INSTANTIATE_VALUE(K, gpusort::detail::payload<16>)
