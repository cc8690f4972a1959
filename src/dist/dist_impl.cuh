// gpusort::dist::sort and sort_spread (include/gpusort/dist.hpp), instantiated per key type in
// dist_<key>.cu. The index math is in detail/index_math/dist.hpp.
#pragma once

#include <algorithm>
#include <barrier>
#include <chrono>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
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

// Where an exception leaves the call, the work still queued on a side stream comes before
// anything later on `into` (the buffers' stream-ordered frees among it).
struct stream_joined_on_unwind {
  cudaStream_t into, side;
  int exceptions = std::uncaught_exceptions();
  ~stream_joined_on_unwind() {
    if (!side || std::uncaught_exceptions() <= exceptions) return;
    gpusort::detail::owned_event done;
    if (gpusort::detail::create(done, cudaEventDisableTiming) == cudaSuccess &&
        cudaEventRecord(done.get(), side) == cudaSuccess)
      cudaStreamWaitEvent(into, done.get());
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

// partition_first: exchange first, with no merge (math::landing_plan). The shard is split
// into p * sub buckets by the p * sub - 1 splitters (device memory); every rank's bucket
// sizes are gathered before any key moves, so that the split puts each bucket for another
// rank where its transfer runs aligned at both ends and each own bucket straight where it
// lands. Then sub-bucket by sub-bucket: its exchange (on a stream of the highest priority),
// after which it sorts in place while the next one travels. The sorted sub-buckets, in
// order, are the rank's output. The caller's keys are read, not changed.
template <class K, class V>
shard<K, V> exchange_first(const communicator& comm, const K* keys, const V* values,
                           std::uint64_t n, int sub, const math::order_code<K>& code,
                           const gpusort::options& local, const device_memory& d_chosen,
                           device_memory& split_temp, std::size_t split_bytes,
                           device_memory& split_keys, device_memory& split_values,
                           const std::function<void()>& input_done, bool copy_engines,
                           const std::string& call, phase_times& times, event_timeline& clock) {
  constexpr bool pairs = !std::is_same_v<V, no_value>;
  const int p = comm.size(), buckets = p * sub, self = comm.rank();
  const auto rank = static_cast<std::uint32_t>(self);
  const cudaStream_t stream = local.stream;
  const auto* splitters = static_cast<const splitter*>(d_chosen.get());
  // 1. Each bucket's keys counted, and every rank's bucket sizes on every rank.
  const std::size_t row = static_cast<std::size_t>(buckets) + 1;
  device_memory bounds(sizeof(std::uint64_t) * row, stream, call);
  device_memory all_bounds(sizeof(std::uint64_t) * row * p, stream, call);
  check_cuda(split_count<K>(split_temp.get(), split_bytes, keys, n, buckets, rank, code,
                            splitters, static_cast<std::uint64_t*>(bounds.get()), stream),
             call + ": counting the buckets");
  all_gather(comm, bounds.get(), all_bounds.get(), sizeof(std::uint64_t) * row, stream,
             call + ": exchanging the counts");
  std::vector<std::uint64_t> rows(row * p), counts;
  copy_to_host(rows.data(), static_cast<const std::uint64_t*>(all_bounds.get()), rows.size(),
               stream, call);
  for (int s = 0; s < p; ++s)
    for (int b = 0; b < buckets; ++b) counts.push_back(rows[s * row + b + 1] - rows[s * row + b]);
  const math::landing_plan plan(std::move(counts), p, sub);
  const std::uint64_t received = plan.region_start(self, sub);
  times.bound = 0;  // no bound ahead: the most any rank receives
  for (int q = 0; q < p; ++q) times.bound = std::max(times.bound, plan.region_start(q, sub));

  // 2. The receive buffers, and one workspace for the sub-buckets' sorts (the largest's, asked
  //    of each where it lies); every rank learns whether all could be had before any key moves.
  rank_status room;
  device_memory recv_keys, recv_values, sort_temp;
  room.try_allocate(recv_keys, sizeof(K) * std::max<std::uint64_t>(received, 1), stream,
                    failure::receive_buffers);
  if (pairs && room.ok())
    room.try_allocate(recv_values, sizeof(V) * std::max<std::uint64_t>(received, 1), stream,
                      failure::receive_buffers);
  auto* out_keys = static_cast<K*>(recv_keys.get());
  auto* out_values = static_cast<V*>(recv_values.get());
  const auto region = [&](int j) {
    return std::pair{plan.region_start(self, j),
                     plan.region_start(self, j + 1) - plan.region_start(self, j)};
  };
  std::size_t sort_bytes = 0;
  for (int j = 0; j < sub && room.ok(); ++j) {
    const auto [at, length] = region(j);
    if (length < 2) continue;
    std::size_t bytes = 0;
    const cudaError_t e = gpusort::detail::sort_any_key<K, V>(
        nullptr, bytes, out_keys + at, pairs ? out_values + at : nullptr, length, local);
    if (e != cudaSuccess) room.fail(failure::local_sort, e);
    sort_bytes = std::max(sort_bytes, bytes);
  }
  if (room.ok())
    room.try_allocate(sort_temp, std::max<std::size_t>(sort_bytes, 1), stream,
                      failure::local_workspace);
  device_memory d_places;  // each bucket's place in the split, for keys and for values
  if (room.ok())
    room.try_allocate(d_places, sizeof(void*) * 2 * buckets, stream, failure::local_workspace);
  agree(comm, room, 0, 0, stream, call, "no rank has changed its keys");

  // 3. The split: each bucket to its place.
  const std::vector<std::uint64_t> key_starts = plan.split_starts(self, sizeof(K));
  const std::vector<std::uint64_t> value_starts = plan.split_starts(self, pairs ? sizeof(V) : 1);
  auto* split_key_base = static_cast<K*>(split_keys.get());
  auto* split_value_base = static_cast<V*>(split_values.get());
  std::vector<K*> key_places;
  std::vector<V*> value_places;
  for (int b = 0; b < buckets; ++b) {
    const bool own = plan.owner(b) == self;
    const std::uint64_t landing = own ? plan.landing(self, self, b % sub) : 0;
    key_places.push_back(own ? out_keys + landing : split_key_base + key_starts[b]);
    value_places.push_back(!pairs ? nullptr
                           : own  ? out_values + landing
                                  : split_value_base + value_starts[b]);
  }
  auto** d_key_places = static_cast<K**>(d_places.get());
  auto** d_value_places = reinterpret_cast<V**>(d_key_places + buckets);
  copy_async(d_key_places, key_places.data(), buckets, stream);
  if constexpr (pairs) copy_async(d_value_places, value_places.data(), buckets, stream);
  check_cuda(split_scatter<K, V>(split_temp.get(), split_bytes, keys, values, n, buckets, rank,
                                 code, splitters, d_key_places, pairs ? d_value_places : nullptr,
                                 nullptr, nullptr, stream),
             call + ": the split by bucket");
  split_temp.reset(stream);
  if (input_done) {
    check_cuda(cudaStreamSynchronize(stream), call + ": before the keys are given back");
    input_done();
  }
  clock.mark(1);
  clock.mark(2);

  // 4. Sub-bucket by sub-bucket: the exchange on a stream of the highest priority (its
  //    kernel's blocks then start before the sort's), and the sub-bucket's sort on the
  //    caller's stream once it is in, beside the next one's exchange. Nothing throws between
  //    two exchanges, in which the other ranks wait for this one: a failure waits for the end.
  gpusort::detail::owned_stream urgent;
  gpusort::detail::owned_event split_done;
  std::vector<gpusort::detail::owned_event> arrived(sub);
  bool lane_made = gpusort::detail::create_urgent(urgent) == cudaSuccess &&
                   gpusort::detail::create(split_done, cudaEventDisableTiming) == cudaSuccess &&
                   cudaEventRecord(split_done.get(), stream) == cudaSuccess &&
                   cudaStreamWaitEvent(urgent.get(), split_done.get()) == cudaSuccess;
  for (auto& event : arrived)
    lane_made = lane_made && gpusort::detail::create(event, cudaEventDisableTiming) == cudaSuccess;
  if (!lane_made) {
    cudaGetLastError();  // the exchanges then run on the caller's stream, before each sort
    urgent.reset();
  }
  const cudaStream_t lane = urgent ? urgent.get() : stream;
  const stream_joined_on_unwind join{stream, urgent.get()};
  cudaError_t sorting = cudaSuccess;
  for (int j = 0; j < sub; ++j) {
    std::vector<transfer> transfers;
    for (int q = 0; q < p; ++q) {
      if (q == self) continue;
      const int to = q * sub + j;  // this rank's part of q's sub-bucket j
      const std::uint64_t out = plan.count(self, to), in = plan.count(q, self * sub + j);
      const std::uint64_t landing = plan.landing(q, self, j);
      transfers.push_back({q, split_key_base + key_starts[to], sizeof(K) * out,
                           out_keys + landing, sizeof(K) * in});
      if constexpr (pairs)
        transfers.push_back({q, split_value_base + value_starts[to], sizeof(V) * out,
                             out_values + landing, sizeof(V) * in});
      times.bytes_sent += (sizeof(K) + (pairs ? sizeof(V) : 0)) * out;
      times.bytes_received += (sizeof(K) + (pairs ? sizeof(V) : 0)) * in;
    }
    exchange(comm, transfers, lane, call + ": exchanging the keys", copy_engines);
    if (urgent && sorting == cudaSuccess) {
      sorting = cudaEventRecord(arrived[j].get(), lane);
      if (sorting == cudaSuccess) sorting = cudaStreamWaitEvent(stream, arrived[j].get());
    }
    if (j == sub - 1) clock.mark(3);  // every key is in (and the sorts before)
    const auto [at, length] = region(j);
    if (length < 2 || sorting != cudaSuccess) continue;
    std::size_t bytes = sort_bytes;
    sorting = gpusort::detail::sort_any_key<K, V>(sort_temp.get(), bytes, out_keys + at,
                                                  pairs ? out_values + at : nullptr, length,
                                                  local);
  }
  check_cuda(sorting, call + ": sorting a sub-bucket");
  sort_temp.reset(stream);
  clock.mark(4);
  clock.mark(5);
  check_cuda(cudaStreamSynchronize(stream), call);
  // sampling: the samples, the counts, the agreement and the split; exchange: every
  // sub-bucket's, with the sorts of all but the last beside it; local sort: the last's.
  times.sampling_ms = clock.ms(0, 2);
  times.exchange_ms = clock.ms(2, 3);
  times.local_sort_ms = clock.ms(3, 4);
  times.merge_ms = 0;
  times.total_ms = clock.ms(0, 5);
  shard<K, V> out;
  std::vector<std::uint64_t> rank_sizes(p);
  for (int q = 0; q < p; ++q) rank_sizes[q] = plan.region_start(q, sub);
  shard_access<K, V>::fill(out, std::move(recv_keys), std::move(recv_values), received, times,
                           std::move(rank_sizes));
  return out;
}

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
  if (opt.sub_buckets < 0 || opt.sub_buckets > math::max_sub_buckets)
    status.fail(failure::sub_buckets, cudaErrorInvalidValue);
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
  // Under partition_first, the split's workspace and buffers instead (no local sort): p sub
  // buckets, and room in the split buffers for each bucket's alignment (landing_plan).
  const int sub = partition_first ? math::partition_sub_buckets(p, opt.sub_buckets) : 1;
  const int split_buckets = p * sub;
  std::size_t split_bytes = 0;
  if (status.ok() && partition_first) {
    e = split_count<K>(nullptr, split_bytes, keys, n, split_buckets, rank, code, nullptr, nullptr,
                       stream);
    if (e != cudaSuccess) status.fail(failure::local_workspace, e);
  }
  device_memory sort_temp, split_keys, split_values;
  if (status.ok())
    status.try_allocate(sort_temp,
                        partition_first ? std::max<std::size_t>(split_bytes, 1)
                                        : std::max<std::size_t>({sort_bytes, receive_bytes, 1}),
                        stream, failure::local_workspace);
  if (status.ok() && partition_first) {
    const std::uint64_t room_for = static_cast<std::uint64_t>(split_buckets);
    status.try_allocate(split_keys,
                        sizeof(K) * (n + room_for * math::elements_per_alignment(sizeof(K))),
                        stream, failure::local_workspace);
    if (pairs && status.ok())
      status.try_allocate(split_values,
                          sizeof(V) * (n + room_for * math::elements_per_alignment(sizeof(V))),
                          stream, failure::local_workspace);
  }
  constexpr bool floating = std::is_floating_point_v<K> || gpusort::detail::float16_key<K>;
  const math::call_signature signature{
      floating              ? math::key_kind::floating
      : std::is_signed_v<K> ? math::key_kind::signed_integer
                            : math::key_kind::unsigned_integer,
      static_cast<std::uint8_t>(sizeof(K)), static_cast<std::uint8_t>(pairs ? sizeof(V) : 0),
      opt.direction == order::descending, opt.nans == nan_order::first, opt.stable,
      static_cast<std::uint8_t>(opt.local_algo), opt.oversampling, partition_first,
      static_cast<std::uint8_t>(partition_first ? sub : 0), opt.copy_engines};
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
  // 1. Local sort (under partition_first, none: the sub-buckets sort once they are in). A
  //    sort that refuses its arguments now (it checks them before it moves a key) is not
  //    thrown here, where the other ranks would wait for this one in the next collective: it
  //    is shared with them at the agreement before the exchange.
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
  std::vector<splitter> chosen(std::max(split_buckets - 1, 1));  // p - 1 but for partition_first
  for (int j = 1; j < split_buckets; ++j)
    chosen[j - 1] = sorted[math::splitter_rank(j, samples, split_buckets)];

  // 3. Bucket boundaries, and every rank's boundaries on every rank.
  device_memory d_chosen(sizeof(splitter) * chosen.size(), stream, call);
  copy_async(static_cast<splitter*>(d_chosen.get()), chosen.data(), chosen.size(), stream);
  if (partition_first)
    return exchange_first<K, V>(comm, keys, values, n, sub, code, local, d_chosen, sort_temp,
                                split_bytes, split_keys, split_values, input_done,
                                opt.copy_engines, call, times, clock);
  //    Each rank's row: its p + 1 boundaries, then its keys' and values' addresses (the
  //    receivers lay their buffers out for aligned transfers from them).
  const std::size_t row = static_cast<std::size_t>(p) + 3;
  device_memory bounds(sizeof(std::uint64_t) * row, stream, call);
  device_memory all_bounds(sizeof(std::uint64_t) * row * p, stream, call);
  bucket_bounds_kernel<<<1, ((p + 1 + 31) / 32) * 32, 0, stream>>>(
      keys, n, static_cast<const splitter*>(d_chosen.get()), p, rank, code,
      static_cast<std::uint64_t*>(bounds.get()));
  check_cuda(cudaGetLastError(), call + ": bucket boundaries");
  const std::uint64_t addresses[2] = {reinterpret_cast<std::uintptr_t>(keys),
                                      reinterpret_cast<std::uintptr_t>(values)};
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
  const int buffers_now = input_done ? 1 : 2;
  for (int b = 0; b < buffers_now && room.ok(); ++b) {
    room.try_allocate(recv_keys[b], sizeof(K) * std::max<std::uint64_t>(b ? received : key_room, 1),
                      stream, failure::receive_buffers);
    if (pairs && room.ok())
      room.try_allocate(recv_values[b],
                        sizeof(V) * std::max<std::uint64_t>(b ? received : value_room, 1), stream,
                        failure::receive_buffers);
  }
  agree(comm, room, 0, 0, stream, call, "every shard is sorted locally and no key is lost");
  clock.mark(2);  // every rank is here (agree waits for all): the exchange alone from now
  // One transfer per peer for the keys and one for the values, each from the aligned address
  // at or below its start (the lead), into a receive buffer laid out for it
  // (math::received_run); the rank's own run stays in the shard, where the merge reads it.
  std::vector<transfer> transfers;
  auto* received_keys = static_cast<K*>(recv_keys[0].get());
  auto* received_values = static_cast<V*>(recv_values[0].get());
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
    add(q, keys, out_at, out, received_keys, in.key_at, in.length, in.key_lead);
    if constexpr (pairs)
      add(q, values, out_at, out, received_values, in.value_at, in.length, in.value_lead);
    times.bytes_sent += (sizeof(K) + (pairs ? sizeof(V) : 0)) * out;
    times.bytes_received += (sizeof(K) + (pairs ? sizeof(V) : 0)) * in.length;
  }
  exchange(comm, transfers, stream, call + ": exchanging the keys", opt.copy_engines);
  // The rank's own run, kept where it is, or copied out before the caller frees the keys.
  K* own_keys = keys + plan.send_offset(static_cast<int>(rank));
  V* own_values = pairs ? values + plan.send_offset(static_cast<int>(rank)) : nullptr;
  device_memory own_key_copy, own_value_copy;
  if (input_done) {
    const std::uint64_t own = plan.send_count(static_cast<int>(rank));
    rank_status after;
    after.try_allocate(own_key_copy, sizeof(K) * std::max<std::uint64_t>(own, 1), stream,
                       failure::receive_buffers);
    if (pairs && after.ok())
      after.try_allocate(own_value_copy, sizeof(V) * std::max<std::uint64_t>(own, 1), stream,
                         failure::receive_buffers);
    if (after.ok()) {
      copy_async(static_cast<K*>(own_key_copy.get()), own_keys, own, stream);
      if constexpr (pairs) copy_async(static_cast<V*>(own_value_copy.get()), own_values, own, stream);
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

  // 5. Merge the p received runs (rank order, so ties stay in (rank, position) order).
  std::vector<run_view<K, V>> views;
  for (const math::received_run& r : runs)
    views.push_back(r.in_place ? run_view<K, V>{own_keys, own_values, r.length}
                               : run_view<K, V>{received_keys + r.key_at,
                                                pairs ? received_values + r.value_at : nullptr,
                                                r.length});
  const int result = merge_runs<K, V>(recv_keys, recv_values, std::move(views), received, code,
                                      opt.merge_fan_in, stream, call);
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
