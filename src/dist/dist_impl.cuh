// gpusort::dist::sort and sort_spread (include/gpusort/dist.hpp), instantiated per key type in
// dist_<key>.cu. The index math is in detail/index_math/dist.hpp.
#pragma once

#include <algorithm>
#include <array>
#include <barrier>
#include <chrono>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dist_common.hpp"
#include "gpusort/detail/index_math/dist.hpp"
#include "gpusort/detail/core/cuda_resources.hpp"
#include "merge_runs.cuh"
#include "split.cuh"
#include "gpusort/dist.hpp"

namespace gpusort::dist::detail {

namespace math = gpusort::detail::index_math::dist;
using gpusort::detail::no_value;
using math::splitter;

// The rank's samples: at the regular positions of its sorted shard, or (random_of = n, the
// shard's size, under partition_first) at pseudo-random positions of the unsorted one.
template <class K>
__global__ void take_samples_kernel(const K* keys, std::uint64_t count, std::uint64_t stride,
                                    std::uint64_t random_of, std::uint32_t rank,
                                    math::order_code<K> code, splitter* out) {
  const std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  if (i >= count) return;
  const std::uint64_t pos = random_of ? math::random_sample_position(i, rank, random_of)
                                      : math::sample_position(i, stride);
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

// Where an exception leaves the call, the work still queued on the side streams comes
// before anything later on `into` (the buffers' stream-ordered frees among it).
struct streams_joined_on_unwind {
  cudaStream_t into;
  std::array<cudaStream_t, 2> side;
  int exceptions = std::uncaught_exceptions();
  ~streams_joined_on_unwind() {
    if (std::uncaught_exceptions() <= exceptions) return;
    for (cudaStream_t s : side) {
      gpusort::detail::owned_event done;
      if (s && gpusort::detail::create(done, cudaEventDisableTiming) == cudaSuccess &&
          cudaEventRecord(done.get(), s) == cudaSuccess)
        cudaStreamWaitEvent(into, done.get());
    }
  }
};

template <class K, class V>
struct shard_access {
  static void fill(shard<K, V>& s, device_memory&& keys, device_memory&& values,
                   std::uint64_t size, const phase_times& times,
                   std::vector<std::uint64_t> rank_sizes) {
    s.keys_.reset(keys.release());
    s.values_.reset(values.release());
    s.size_ = size;
    s.times_ = times;
    s.rank_sizes_ = std::move(rank_sizes);
  }
};

template <class K, class V>
shard<K, V> sort(const communicator& comm, K* keys, V* values, std::uint64_t n,
                 const options& opt, const std::function<void()>& input_done) {
  constexpr bool pairs = !std::is_same_v<V, no_value>;
  const int p = comm.size();
  const auto rank = static_cast<std::uint32_t>(comm.rank());
  const cudaStream_t stream = opt.stream;
  const std::string call = "gpusort::dist::sort" + std::string(pairs ? " (pairs)" : "") +
                           " <" + std::string(gpusort::detail::key_name<K>) + "> on rank " +
                           std::to_string(rank) + " of " + std::to_string(p);
  const auto entered = std::chrono::steady_clock::now();
  check_cuda(cudaSetDevice(comm.device()), call + ": cudaSetDevice");
  const gpusort::dist::kept_memory kept_for_the_call(comm.device());  // freed buffers reused, not remapped

  // Everything that could fail on this rank alone is checked before the first collective,
  // which shares the verdict: all ranks go on, or all throw.
  gpusort::options local;
  local.algo = opt.local_algo;
  local.direction = opt.direction;
  local.nans = opt.nans;
  local.stable = opt.stable;
  local.stream = stream;
  const math::order_code<K> code(opt.direction, opt.nans);
  const bool partition_first = opt.partition_first && p > 1 && p <= math::max_partition_ranks;
  rank_status status;
  status.check_array(keys, n, sizeof(K), alignof(K), comm.device(), failure::keys);
  if constexpr (pairs) status.check_array(values, n, sizeof(V), sizeof(V), comm.device(), failure::values);
  if (opt.oversampling == 0 || opt.oversampling > math::max_oversampling)
    status.fail(failure::oversampling, cudaErrorInvalidValue);
  if (opt.merge_fan_in < 2 || opt.merge_fan_in > mm::max_runs)
    status.fail(failure::merge_fan_in, cudaErrorInvalidValue);
  std::size_t sort_bytes = 0;
  cudaError_t e = cudaSuccess;
  if (status.ok()) {
    e = gpusort::detail::sort_any_key<K, V>(nullptr, sort_bytes, keys, values, n, local);
    if (e != cudaSuccess) status.fail(failure::local_sort, e);
  }
  // The workspace is made as large as the receive buffer for keys will likely be (every shard
  // of n keys), so that the buffer, made once the workspace is freed, reuses its memory.
  const std::size_t receive_bytes =
      sizeof(K) * math::receive_buffer_elements(
                      math::even_split_max_bucket(n * static_cast<std::uint64_t>(p), p,
                                                  opt.oversampling ? opt.oversampling : 1),
                      p, sizeof(K));
  // Under partition_first, the split's workspace and buffers instead (no local sort yet).
  std::size_t split_bytes = 0;
  if (status.ok() && partition_first) {
    e = split_by_bucket<K, V>(nullptr, split_bytes, keys, values, n, p, rank, code, nullptr,
                              nullptr, nullptr, nullptr, stream);
    if (e != cudaSuccess) status.fail(failure::local_workspace, e);
  }
  device_memory sort_temp, split_keys, split_values;
  if (status.ok())
    status.try_allocate(sort_temp,
                        partition_first ? std::max<std::size_t>(split_bytes, 1)
                                        : std::max<std::size_t>({sort_bytes, receive_bytes, 1}),
                        stream, failure::local_workspace);
  if (status.ok() && partition_first) {
    status.try_allocate(split_keys, sizeof(K) * std::max<std::uint64_t>(n, 1), stream,
                        failure::local_workspace);
    if (pairs && status.ok())
      status.try_allocate(split_values, sizeof(V) * std::max<std::uint64_t>(n, 1), stream,
                          failure::local_workspace);
  }
  constexpr bool floating = std::is_floating_point_v<K> || gpusort::detail::float16_key<K>;
  const math::call_signature signature{
      floating              ? math::key_kind::floating
      : std::is_signed_v<K> ? math::key_kind::signed_integer
                            : math::key_kind::unsigned_integer,
      static_cast<std::uint8_t>(sizeof(K)), static_cast<std::uint8_t>(pairs ? sizeof(V) : 0),
      opt.direction == order::descending, opt.nans == nan_order::first, opt.stable,
      static_cast<std::uint8_t>(opt.local_algo), opt.oversampling, partition_first};
  const std::vector<std::uint64_t> sizes = agree(comm, status, n, math::pack(signature), stream,
                                                 call, "no rank has changed its keys");

  phase_times times;
  for (std::uint64_t s : sizes) times.total_keys += s;
  const std::uint64_t total = times.total_keys;
  if (total == 0) {
    shard<K, V> empty;
    shard_access<K, V>::fill(empty, device_memory{}, device_memory{}, 0, times,
                             std::vector<std::uint64_t>(p, 0));
    return empty;
  }

  times.setup_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - entered).count();
  event_timeline clock(stream, 6);
  clock.mark(0);
  // 1. Local sort (under partition_first, none: the runs sort once they are split). A sort
  //    that refuses its arguments now (it checks them before it moves a key) is not thrown
  //    here, where the other ranks would wait for this one in the next collective: it is
  //    shared with them at the agreement before the exchange.
  rank_status room;
  if (n > 1 && !partition_first) {
    e = gpusort::detail::sort_any_key<K, V>(sort_temp.get(), sort_bytes, keys, values, n, local);
    if (e != cudaSuccess) room.fail(failure::local_sort, e);
  }
  if (!partition_first) {
    sort_temp.reset(stream);
    clock.mark(1);
  }

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
        keys, mine, stride, partition_first ? n : 0, rank, code,
        static_cast<splitter*>(my_samples.get()));
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
  //    Each rank's row: its p + 1 boundaries, then its keys' and values' addresses (the
  //    receivers lay their buffers out for aligned transfers from them).
  const std::size_t row = static_cast<std::size_t>(p) + 3;
  device_memory bounds(sizeof(std::uint64_t) * row, stream, call);
  device_memory all_bounds(sizeof(std::uint64_t) * row * p, stream, call);
  //    Under partition_first, the shard split into its buckets instead, which the keys then
  //    leave from; the caller's keys are no longer needed.
  K* shard_keys = keys;
  V* shard_values = values;
  if (partition_first) {
    shard_keys = static_cast<K*>(split_keys.get());
    shard_values = static_cast<V*>(split_values.get());
    check_cuda(split_by_bucket<K, V>(sort_temp.get(), split_bytes, keys, values, n, p, rank, code,
                                     static_cast<const splitter*>(d_chosen.get()), shard_keys,
                                     shard_values, static_cast<std::uint64_t*>(bounds.get()),
                                     stream),
               call + ": the split by bucket");
    sort_temp.reset(stream);
    if (input_done) {
      check_cuda(cudaStreamSynchronize(stream), call + ": before the keys are given back");
      input_done();
    }
    clock.mark(1);
  } else {
    bucket_bounds_kernel<<<1, ((p + 1 + 31) / 32) * 32, 0, stream>>>(
        keys, n, static_cast<const splitter*>(d_chosen.get()), p, rank, code,
        static_cast<std::uint64_t*>(bounds.get()));
    check_cuda(cudaGetLastError(), call + ": bucket boundaries");
  }
  const std::uint64_t addresses[2] = {reinterpret_cast<std::uintptr_t>(shard_keys),
                                      reinterpret_cast<std::uintptr_t>(shard_values)};
  copy_async(static_cast<std::uint64_t*>(bounds.get()) + p + 1, addresses, 2, stream);
  all_gather(comm, bounds.get(), all_bounds.get(), sizeof(std::uint64_t) * row, stream,
             call + ": exchanging the counts");
  std::vector<std::uint64_t> rows(row * p), matrix, key_bases, value_bases;
  copy_to_host(rows.data(), static_cast<const std::uint64_t*>(all_bounds.get()), rows.size(),
               stream, call);
  for (int q = 0; q < p; ++q) {
    const auto first = rows.begin() + static_cast<std::ptrdiff_t>(q * row);
    matrix.insert(matrix.end(), first, first + p + 1);
    key_bases.push_back(first[p + 1]);
    value_bases.push_back(first[p + 2]);
  }
  const exchange_plan plan(matrix, p, rank);
  const std::uint64_t received = plan.received();
  if (partition_first) {  // no bound ahead: the most any rank receives
    times.bound = 0;
    for (int q = 0; q < p; ++q) times.bound = std::max(times.bound, plan.received_by(q));
  }
  const std::vector<math::received_run> runs =
      plan.received_runs(key_bases, sizeof(K), value_bases, pairs ? sizeof(V) : 0);
  // Buffer 0 holds the received runs with their leads and padding, and later the merge's
  // rounds; buffer 1 the merge's first round.
  std::uint64_t key_room = received, value_room = received;
  for (const math::received_run& r : runs) {
    key_room = std::max(key_room, r.key_at + r.length);
    value_room = std::max(value_room, r.value_at + r.length);
  }

  // 4. The exchange. Receive and merge buffers are allocated first, and every rank learns
  //    whether all could (and whether every local sort ran), before any data moves. Where the
  //    caller frees its keys once they have left (input_done), the merge's second buffer is
  //    allocated after that instead.
  device_memory recv_keys[2], recv_values[2];
  const bool free_input_late = input_done && !partition_first;
  const int buffers_now = free_input_late ? 1 : 2;
  for (int b = 0; b < buffers_now && room.ok(); ++b) {
    room.try_allocate(recv_keys[b], sizeof(K) * std::max<std::uint64_t>(b ? received : key_room, 1),
                      stream, failure::receive_buffers);
    if (pairs && room.ok())
      room.try_allocate(recv_values[b],
                        sizeof(V) * std::max<std::uint64_t>(b ? received : value_room, 1), stream,
                        failure::receive_buffers);
  }
  // Where each received run lies: the rank's own run stays in the shard, where the merge
  // reads it (under partition_first, the split's buffer); the others in receive buffer 0.
  const auto own = static_cast<int>(rank);
  K* own_keys = shard_keys + plan.send_offset(own);
  V* own_values = pairs ? shard_values + plan.send_offset(own) : nullptr;
  auto* received_keys = static_cast<K*>(recv_keys[0].get());
  auto* received_values = static_cast<V*>(recv_values[0].get());
  struct run_place {
    K* keys;
    V* values;
  };
  const auto place_of = [&](const math::received_run& r) {
    return r.in_place ? run_place{own_keys, own_values}
                      : run_place{received_keys + r.key_at,
                                  pairs ? received_values + r.value_at : nullptr};
  };
  // Under partition_first, one workspace for the runs' sorts (the largest's), asked of each
  // run where it lies (the sort checks that every key lies in one allocation).
  device_memory run_temp;
  std::size_t run_bytes = 0;
  for (const math::received_run& r : runs) {
    if (!partition_first || !room.ok() || r.length < 2) continue;
    std::size_t bytes = 0;
    const run_place at = place_of(r);
    e = gpusort::detail::sort_any_key<K, V>(nullptr, bytes, at.keys, at.values, r.length, local);
    if (e != cudaSuccess) room.fail(failure::local_sort, e);
    run_bytes = std::max(run_bytes, bytes);
  }
  if (partition_first && room.ok())
    room.try_allocate(run_temp, std::max<std::size_t>(run_bytes, 1), stream,
                      failure::local_workspace);
  agree(comm, room, 0, 0, stream, call, "every shard is sorted locally and no key is lost");
  clock.mark(2);  // every rank is here (agree waits for all): the exchange alone from now
  // Under partition_first, the rank's own run sorts on a second stream while the exchange
  // runs (the sends read only the other buckets, and the leads before them, which the
  // receivers drop); where that stream cannot be had, after the exchange with the received
  // runs. Nothing here throws before the exchange, in which the other ranks wait for this one.
  gpusort::detail::owned_stream side;
  gpusort::detail::owned_event own_sort_ready, own_sorted;
  cudaError_t own_sort = cudaSuccess;
  if (partition_first && plan.send_count(own) > 1 &&
      gpusort::detail::create(side) == cudaSuccess &&
      gpusort::detail::create(own_sort_ready, cudaEventDisableTiming) == cudaSuccess &&
      gpusort::detail::create(own_sorted, cudaEventDisableTiming) == cudaSuccess &&
      cudaEventRecord(own_sort_ready.get(), stream) == cudaSuccess &&
      cudaStreamWaitEvent(side.get(), own_sort_ready.get()) == cudaSuccess) {
    gpusort::options on_side = local;
    on_side.stream = side.get();
    std::size_t bytes = run_bytes;
    own_sort = gpusort::detail::sort_any_key<K, V>(run_temp.get(), bytes, own_keys, own_values,
                                                   plan.send_count(own), on_side);
    const cudaError_t recorded = cudaEventRecord(own_sorted.get(), side.get());
    if (recorded != cudaSuccess) {
      cudaStreamSynchronize(side.get());  // its work done before anything moves on
      own_sorted.reset();
      if (own_sort == cudaSuccess) own_sort = recorded;
    }
  } else if (partition_first) {
    cudaGetLastError();  // a failed creation's error, cleared: the own run sorts later
    side.reset();
    own_sorted.reset();
  }
  const bool own_sorts_later = partition_first && !side;
  // One transfer per peer for the keys and one for the values, each from the aligned address
  // at or below its start (the lead), into a receive buffer laid out for it
  // (math::received_run).
  std::vector<transfer> transfers;
  const auto run_from = [&](int q) -> math::received_run {
    for (const math::received_run& r : runs)
      if (r.from == q) return r;
    return {q, false, 0, 0, 0, 0, 0};
  };
  const auto add = [&](int q, const auto* shard, std::uint64_t out_at, std::uint64_t out,
                       auto* recv, std::uint64_t in_at, std::uint64_t in, std::uint64_t in_lead) {
    const std::uint64_t size = sizeof(*shard);
    const auto base = reinterpret_cast<std::uintptr_t>(shard);
    const std::uint64_t out_lead = out == 0 ? 0 : math::lead_elements(base + size * out_at, base, size);
    if (in == 0) in_lead = 0;
    transfers.push_back({q, shard + out_at - out_lead, size * (out + out_lead),
                         recv + in_at - in_lead, size * (in + in_lead)});
  };
  for (int q = 0; q < p; ++q) {
    if (q == static_cast<int>(rank)) continue;
    const math::received_run in = run_from(q);
    const std::uint64_t out = plan.send_count(q), out_at = plan.send_offset(q);
    add(q, shard_keys, out_at, out, received_keys, in.key_at, in.length, in.key_lead);
    if constexpr (pairs)
      add(q, shard_values, out_at, out, received_values, in.value_at, in.length, in.value_lead);
    times.bytes_sent += (sizeof(K) + (pairs ? sizeof(V) : 0)) * out;
    times.bytes_received += (sizeof(K) + (pairs ? sizeof(V) : 0)) * in.length;
  }
  // While the own run sorts beside it, the exchange goes on a stream of the highest priority:
  // otherwise its kernel's blocks wait behind the sort's for the SMs, and the two took longer
  // together than one after the other (2 x H200, f080981).
  gpusort::detail::owned_stream urgent;
  gpusort::detail::owned_event exchanged;
  if (side && (gpusort::detail::create_urgent(urgent) != cudaSuccess ||
               gpusort::detail::create(exchanged, cudaEventDisableTiming) != cudaSuccess ||
               cudaStreamWaitEvent(urgent.get(), own_sort_ready.get()) != cudaSuccess)) {
    cudaGetLastError();  // the exchange then runs on the caller's stream
    urgent.reset();
  }
  const streams_joined_on_unwind join{stream, {side.get(), urgent.get()}};
  exchange(comm, transfers, urgent ? urgent.get() : stream, call + ": exchanging the keys");
  if (urgent) {
    check_cuda(cudaEventRecord(exchanged.get(), urgent.get()), call);
    check_cuda(cudaStreamWaitEvent(stream, exchanged.get()), call);
  }
  // The rank's own run copied out before the caller frees the keys.
  device_memory own_key_copy, own_value_copy;
  if (free_input_late) {
    const std::uint64_t own_count = plan.send_count(own);
    rank_status after;
    after.try_allocate(own_key_copy, sizeof(K) * std::max<std::uint64_t>(own_count, 1), stream,
                       failure::receive_buffers);
    if (pairs && after.ok())
      after.try_allocate(own_value_copy, sizeof(V) * std::max<std::uint64_t>(own_count, 1),
                         stream, failure::receive_buffers);
    if (after.ok()) {
      copy_async(static_cast<K*>(own_key_copy.get()), own_keys, own_count, stream);
      if constexpr (pairs)
        copy_async(static_cast<V*>(own_value_copy.get()), own_values, own_count, stream);
      own_keys = static_cast<K*>(own_key_copy.get());
      own_values = static_cast<V*>(own_value_copy.get());
      check_cuda(cudaStreamSynchronize(stream), call + ": before the keys are given back");
      input_done();
      after.try_allocate(recv_keys[1], sizeof(K) * std::max<std::uint64_t>(received, 1), stream,
                         failure::receive_buffers);
      if (pairs && after.ok())
        after.try_allocate(recv_values[1], sizeof(V) * std::max<std::uint64_t>(received, 1),
                           stream, failure::receive_buffers);
    }
    agree(comm, after, 0, 0, stream, call, "every rank has room to merge");
  }
  clock.mark(3);
  // Under partition_first, the received runs sorted where they landed, after the own one.
  if (own_sorted) check_cuda(cudaStreamWaitEvent(stream, own_sorted.get()), call);
  check_cuda(own_sort, call + ": sorting the rank's own bucket");
  for (const math::received_run& r : runs) {
    if (!partition_first || (r.in_place && !own_sorts_later) || r.length < 2) continue;
    std::size_t bytes = run_bytes;
    const run_place at = place_of(r);
    check_cuda(gpusort::detail::sort_any_key<K, V>(run_temp.get(), bytes, at.keys, at.values,
                                                   r.length, local),
               call + ": sorting a received run");
  }
  run_temp.reset(stream);
  clock.mark(4);

  // 5. Merge the p received runs (rank order, so ties stay in (rank, position) order).
  std::vector<run_view<K, V>> views;
  for (const math::received_run& r : runs) {
    const run_place at = place_of(r);
    views.push_back({at.keys, at.values, r.length});
  }
  const int result = merge_runs<K, V>(recv_keys, recv_values, std::move(views), received, code,
                                      opt.merge_fan_in, stream, call);
  recv_keys[1 - result].reset(stream);
  recv_values[1 - result].reset(stream);
  clock.mark(5);
  check_cuda(cudaStreamSynchronize(stream), call);
  times.local_sort_ms = partition_first ? clock.ms(3, 4) : clock.ms(0, 1);
  times.sampling_ms = partition_first ? clock.ms(0, 2) : clock.ms(1, 2);
  times.exchange_ms = clock.ms(2, 3);
  times.merge_ms = clock.ms(4, 5);
  times.total_ms = clock.ms(0, 5);
  shard<K, V> out;
  std::vector<std::uint64_t> rank_sizes(p);
  for (int q = 0; q < p; ++q) rank_sizes[q] = plan.received_by(q);
  shard_access<K, V>::fill(out, std::move(recv_keys[result]), std::move(recv_values[result]),
                           received, times, std::move(rank_sizes));
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
      const gpusort::dist::communicator&, K*, V*, std::uint64_t, const gpusort::dist::options&, \
      const std::function<void()>&);                                                            \
  template void gpusort::dist::detail::sort_spread<K, V>(K*, V*, std::uint64_t,                 \
                                                         std::span<const int>,                  \
                                                         const gpusort::dist::options&);

#define GPUSORT_DIST_INSTANTIATE_KEY(K)                                  \
  GPUSORT_DIST_INSTANTIATE_VALUE(K, gpusort::detail::no_value)           \
  GPUSORT_DIST_INSTANTIATE_VALUE(K, gpusort::detail::payload<4>)         \
  GPUSORT_DIST_INSTANTIATE_VALUE(K, gpusort::detail::payload<8>)         \
  GPUSORT_DIST_INSTANTIATE_VALUE(K, gpusort::detail::payload<16>)
