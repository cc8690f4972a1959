// gpusort::sort of keys (and pairs) in host memory (gpusort/external.hpp), compiled once per
// key type. Three plans, the first that fits:
//   spread:  several GPUs and a large array that fits their sum, where spreading pays (the
//            array is pinned, or does not fit one GPU): each GPU copies its slice in
//            over its own link, gpusort::dist sorts the slices (exchanging keys between the
//            GPUs), and each GPU copies its range of the result out over its own link (the
//            shape of RMG sort, Ilic et al., BTW 2023). Needs gpusort::dist (NCCL).
//   one GPU: the array and the sort's workspace fit one GPU: in over the link, one sort, out.
//   runs:    keys beyond that: runs sorted and merged in windows on every GPU
//            (sort_keys_through_gpu, src/external/gpu_pipeline.hpp); pairs on the CPU.
// Without a GPU the CPU backend sorts in place.
#include <atomic>
#include <barrier>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <semaphore>
#include <cstdint>
#include <exception>
#include <future>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "callback_progress.hpp"
#include "concurrency.hpp"
#include "external_sort.hpp"
#include "gpu_pipeline.hpp"
#include "gpusort/external.hpp"
#include "link_copy.hpp"
#include "nan_move.hpp"

#if GPUSORT_EXTERNAL_WITH_DIST
#include "gpusort/detail/index_math/dist.hpp"
#include "gpusort/dist.hpp"
#endif

namespace gpusort::detail::external {

namespace {

template <class P>
constexpr bool has_values = !std::is_same_v<P, no_value>;

template <class K, class P>
constexpr std::uint64_t record_bytes() {
  return sizeof(K) + (has_values<P> ? sizeof(P) : 0);
}

unsigned host_cores() { return std::max(1u, std::thread::hardware_concurrency()); }

// Staging threads per GPU: link_threads of the cores, or GPUSORT_LINK_THREADS (a benchmark's
// knob, 1 to 64).
unsigned staging_threads(unsigned gpus) {
  if (const char* text = std::getenv("GPUSORT_LINK_THREADS")) {
    const long threads = std::strtol(text, nullptr, 10);
    if (threads >= 1 && threads <= 64) return static_cast<unsigned>(threads);
  }
  return link_threads(host_cores(), gpus);
}

// The caller's pages pinned for the whole call when external_options::register_host_memory
// asks (and they are not pinned already); the seconds that took, for the statistics. Where
// the driver refuses (pages shared with memory registered already, a limit on locked memory),
// the array is staged as if not asked.
class pinned_for_call {
 public:
  pinned_for_call(void* p, std::uint64_t bytes, bool wanted) {
    if (!wanted || bytes == 0 || is_pinned_host_memory(p, bytes)) return;
    stage_clock clock;
    try {
      registration_.emplace(p, bytes);
    } catch (const gpusort::error&) {
    }
    seconds_ = clock.lap();
  }
  double seconds() const { return seconds_; }

 private:
  std::optional<host_registration> registration_;
  double seconds_ = 0;
};

// How one host array travels over one GPU's link: pinned piece by piece as it goes
// (register_host_memory, for pageable arrays of staged_min_bytes or more: pinned_pieces), else
// through the copier (staged, or straight when the caller's memory is pinned already).
class array_link {
 public:
  array_link(link_copier& copier, void* host, std::uint64_t bytes, bool pin_in_pieces)
      : copier_(copier), host_(host), bytes_(bytes) {
    if (pin_in_pieces && bytes >= staged_min_bytes && !is_pinned_host_memory(host, bytes))
      pieces_.emplace(host, bytes, copier.threads());
  }
  link_report to_device(void* device_to) {
    if (!pieces_) return report_ = copier_.to_device(device_to, host_, bytes_);
    return {pieces_->to_device(copier_.device(), device_to), false};
  }
  link_report to_host(const void* device_from) {
    if (!pieces_) return copier_.to_host(host_, device_from, bytes_);
    return {pieces_->to_host(copier_.device(), device_from), false};
  }
  double unpin() { return pieces_ ? pieces_->unpin() : 0.0; }
  bool pins_in_pieces() const { return pieces_.has_value(); }
  // For the statistics.
  std::string how() const {
    if (pieces_)
      return "pageable: pinned in pieces of " + std::to_string(default_pin_piece_bytes >> 20) +
             " MiB as copied (" +
             std::to_string(pieces_->pinned_bytes() * 100 / std::max<std::uint64_t>(bytes_, 1)) +
             "% pinned), " + std::to_string(copier_.threads()) + " threads";
    if (report_.straight) return "pinned: copied straight";
    if (bytes_ < staged_min_bytes) return "pageable: copied by the driver (small)";
    return "pageable: staged through pinned buffers by " + std::to_string(copier_.threads()) + " threads";
  }

 private:
  link_copier& copier_;
  void* host_;
  std::uint64_t bytes_;
  std::optional<pinned_pieces> pieces_;
  link_report report_;
};

// The one-GPU plan's device memory for n records: keys, values and the sort's workspace, or
// UINT64_MAX when the workspace query fails.
template <class K, class P>
std::uint64_t one_gpu_bytes(std::uint64_t n, const gpusort::options& opt) {
  return n * record_bytes<K, P>() +
         impl::device_workspace_bytes<K, std::conditional_t<has_values<P>, P, std::uint32_t>>(
             n, has_values<P>, opt);
}

// The one-GPU plan: the records in over the link, one sort, the records out.
template <class K, class P>
file_sort_stats sort_on_one_gpu(K* keys, P* values, std::uint64_t n, const external_options& opt,
                                int device, progress_sink& meter) {
  file_sort_stats stats;
  stage_clock clock;
  const device_scope on(device);
  stats.add("algorithm", describe_algorithm<K>(opt.sort, n, has_values<P>));
  stats.add("plan", "on GPU " + std::to_string(device) + " at once (" + std::to_string(n) +
                        " records): in over its link, one sort, out");
  meter.phase("copying to the GPU", false);
  gpusort::options sort_opt = opt.sort;
  owned_stream stream;
  cuda_check(create(stream), "cannot create a stream");
  sort_opt.stream = stream.get();
  device_array<K> d_keys;
  device_array<P> d_values;
  cuda_check(allocate(d_keys, n), "cannot allocate the keys on the GPU");
  if constexpr (has_values<P>) cuda_check(allocate(d_values, n), "cannot allocate the values on the GPU");
  std::size_t temp_bytes = 0;
  const auto run_sort = [&](void* temp) {
    if constexpr (has_values<P>)
      return gpusort::sort_pairs(temp, temp_bytes, d_keys.get(), d_values.get(), n, sort_opt);
    else
      return gpusort::sort_keys(temp, temp_bytes, d_keys.get(), n, sort_opt);
  };
  cuda_check(run_sort(nullptr), "the sort's workspace query failed");
  device_array<char> temp;
  cuda_check(allocate(temp, temp_bytes), "cannot allocate the sort's workspace");
  const unsigned threads = staging_threads(1);
  link_copier link(device, threads, link_chunk_bytes_for(n * std::max(sizeof(K), sizeof(P)), threads));
  array_link keys_link(link, keys, n * sizeof(K), opt.register_host_memory);
  std::optional<array_link> values_link;
  if constexpr (has_values<P>) values_link.emplace(link, values, n * sizeof(P), opt.register_host_memory);
  stats.add_seconds("allocate", clock.lap());

  link_report in = keys_link.to_device(d_keys.get());
  if constexpr (has_values<P>) in.seconds += values_link->to_device(d_values.get()).seconds;
  meter.phase("sorting", false);
  stream_timer timer;
  cuda_check(timer.init(), "cannot create an event");
  cuda_check(timer.start(stream.get()), "cannot record an event");
  cuda_check(run_sort(temp.get()), "the sort failed");
  double sort_s = 0;
  cuda_check(timer.seconds(stream.get(), sort_s), "the sort failed");
  temp.reset();
  meter.phase("copying back", false);
  link_report out = keys_link.to_host(d_keys.get());
  if constexpr (has_values<P>) out.seconds += values_link->to_host(d_values.get()).seconds;
  const double unpin_s = keys_link.unpin() + (values_link ? values_link->unpin() : 0.0);
  const double bytes = static_cast<double>(n * record_bytes<K, P>());
  stats.add("host memory", keys_link.how());
  stats.add_seconds("copy in", in.seconds);
  stats.add_seconds("sort", sort_s);
  stats.add_seconds("copy out", out.seconds);
  char rates[96];
  std::snprintf(rates, sizeof rates, "%.1f GB/s in, %.1f GB/s out", bytes / in.seconds / 1e9,
                bytes / out.seconds / 1e9);
  stats.add("copy rates", rates);
  if (keys_link.pins_in_pieces()) stats.add_seconds("unpin", unpin_s);
  meter.finish();
  return stats;
}

#if GPUSORT_EXTERNAL_WITH_DIST
// Arrays of at least this many bytes are spread over several GPUs; below it one GPU (or the
// runs) is as fast, without the communicators' set-up.
constexpr std::uint64_t spread_min_bytes = std::uint64_t{1} << 30;

// Whether spreading pays where it fits. Pageable memory is staged by host threads, whose
// memcpy (about 40 GB/s in all on a 2x H200 host) limits the copies however many links carry
// them: there one GPU is as fast where the array fits it (2^33 u32: 1.92 s on one H200, 2.00 s
// spread over two). Pinned memory goes straight over each link: 2^32 u32 took 0.75 s on one
// H200 and 0.54 s spread over two.
template <class K, class P>
bool spread_pays(bool fits_one_gpu, const K* keys, const P* values, std::uint64_t n) {
  if (!fits_one_gpu) return true;
  if (!is_pinned_host_memory(keys, n * sizeof(K))) return false;
  if constexpr (has_values<P>) return is_pinned_host_memory(values, n * sizeof(P));
  return true;
}

// Whether n records spread evenly over `devices` fit each one's budget: its slice, what it
// receives (about a slice) and the merged result (a slice), with a quarter slice of slack for
// the bound on what a GPU receives and the exchange's buffers.
template <class K, class P>
bool spread_fits(std::uint64_t n, const std::vector<int>& devices, const sort_request& request) {
  if (devices.size() < 2 || n * record_bytes<K, P>() < spread_min_bytes) return false;
  const std::uint64_t slice_bytes = (n + devices.size() - 1) / devices.size() * record_bytes<K, P>();
  for (const int device : devices) {
    const device_scope on(device);
    // The slice, then its received range and the merge's second buffer (the slice is freed
    // before that one is made: dist's input_done), and a quarter for imbalance and workspace.
    if (slice_bytes * 2 + slice_bytes / 4 > impl::device_budget(request)) return false;
  }
  return true;
}

// The communicators of a GPU list, made once per process (ncclCommInitAll takes 0.4-1 s, more
// than sorting 4 GiB) and kept to its end; one spread sort at a time on each list (`busy`: a
// semaphore, as the thread that takes it is not the one that gives it back).
struct gpu_list_communicators {
  std::binary_semaphore busy{1};
  std::vector<gpusort::dist::communicator> comms;
};

// NCCL connects peers at their first collective: a sort of one key a GPU makes it connect now,
// while the caller's first slices are still on the links, not in the first real sort.
void connect_peers(const std::vector<gpusort::dist::communicator>& comms) {
  run_concurrently(static_cast<unsigned>(comms.size()), [&](unsigned r) {
    const device_scope on(comms[r].device());
    device_array<std::uint32_t> one;
    cuda_check(allocate(one, 1), "cannot allocate a key on a GPU");
    cuda_check(cudaMemset(one.get(), 0, sizeof(std::uint32_t)), "cannot clear a key on a GPU");
    // A stream of its own that does not wait for (or hold up) the slices' copies.
    cudaStream_t stream = nullptr;
    cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cannot make a stream");
    gpusort::dist::options opt;
    opt.stream = stream;
    try {
      gpusort::dist::detail::sort<std::uint32_t, no_value>(comms[r], one.get(), nullptr, 1, opt);
    } catch (...) {
      cudaStreamDestroy(stream);
      throw;
    }
    cudaStreamDestroy(stream);
  });
}

std::shared_ptr<gpu_list_communicators> communicators_of(const std::vector<int>& devices) {
  static std::mutex m;
  // Never destroyed: NCCL's teardown after the CUDA runtime's at exit is not safe.
  static auto* made = new std::map<std::vector<int>, std::shared_ptr<gpu_list_communicators>>;
  std::lock_guard lock(m);
  std::shared_ptr<gpu_list_communicators>& entry = (*made)[devices];
  if (!entry) {
    auto fresh = std::make_shared<gpu_list_communicators>();
    fresh->comms = gpusort::dist::communicators_for_devices(devices);
    connect_peers(fresh->comms);
    entry = std::move(fresh);
  }
  return entry;
}

// A GPU's slice from dist's pool, given back on the stream: within the call's kept_memory
// scope, the merge's buffer made after the slice is freed (input_done) reuses its memory.
template <class T>
class pooled_slice {
 public:
  pooled_slice() = default;
  pooled_slice(const pooled_slice&) = delete;
  pooled_slice& operator=(const pooled_slice&) = delete;
  ~pooled_slice() { reset(); }

  void allocate(std::uint64_t count, cudaStream_t stream) {
    reset();
    stream_ = stream;
    void* p = nullptr;
    cuda_check(gpusort::dist::detail::allocate_from_pool(&p, sizeof(T) * std::max<std::uint64_t>(count, 1), stream),
               "cannot allocate a slice on a GPU");
    ptr_ = static_cast<T*>(p);
  }
  T* get() const { return ptr_; }
  void reset() {
    if (ptr_) cudaFreeAsync(ptr_, stream_);
    ptr_ = nullptr;
  }

 private:
  T* ptr_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

template <class K, class P>
file_sort_stats sort_spread_over_gpus(K* keys, P* values, std::uint64_t n,
                                      const external_options& opt, const std::vector<int>& devices,
                                      progress_sink& meter) {
  file_sort_stats stats;
  stage_clock clock;
  meter.phase("copying to the GPUs", false);
  const int p = static_cast<int>(devices.size());
  gpusort::dist::options dopt;
  dopt.direction = opt.sort.direction;
  dopt.nans = opt.sort.nans;
  dopt.stable = opt.sort.stable;
  const pinned_for_call pinned_keys(keys, n * sizeof(K), opt.register_host_memory);
  const pinned_for_call pinned_values(values, has_values<P> ? n * sizeof(P) : 0, opt.register_host_memory);
  const double pin_s = clock.lap();
  struct rank_times {
    double allocate = 0, in = 0, out = 0, waited = 0;  // waited: for the communicators, after the copy in
    gpusort::dist::phase_times sort;
  };
  std::vector<rank_times> times(p);
  std::vector<std::uint64_t> result_sizes(p);
  std::vector<std::exception_ptr> errors(p);
  // Between the phases the calling thread (rank 0's) tells the caller the next phase, and may
  // hear a cancel, once every GPU is there; all GPUs then stop or go on together.
  rank_checkpoints checkpoints(p);
  bool straight = false;
  // The communicators are made (the first time for this GPU list) on one more thread while the
  // GPUs copy their slices in; each GPU waits for them before its sort.
  std::promise<std::shared_ptr<gpu_list_communicators>> made;
  const std::shared_future<std::shared_ptr<gpu_list_communicators>> ready = made.get_future().share();
  const auto make_communicators = [&] {
    try {
      std::shared_ptr<gpu_list_communicators> list = communicators_of(devices);
      list->busy.acquire();
      made.set_value(std::move(list));
    } catch (...) {
      made.set_exception(std::current_exception());
    }
  };
  const auto work = [&](int r) {
    try {
      const device_scope on(devices[r]);
      const gpusort::dist::kept_memory kept_for_the_call(devices[r]);
      const std::uint64_t begin = n * r / p, count = n * (r + 1) / p - begin;
      // Room for what the GPU may receive, so that the merge's buffer fits the freed slice.
      const std::uint64_t room = std::max(
          count, gpusort::detail::index_math::dist::even_split_max_bucket(n, p, dopt.oversampling));
      const unsigned threads = staging_threads(static_cast<unsigned>(p));
      // The range a GPU copies out is at most a few per cent above its slice.
      link_copier link(devices[r], threads, link_chunk_bytes_for(count * std::max(sizeof(K), sizeof(P)), threads));
      // A slice that cannot be allocated or copied goes in as a null shard: dist::sort then
      // fails on every rank instead of leaving the others waiting in NCCL.
      pooled_slice<K> d_keys;
      pooled_slice<P> d_values;
      std::exception_ptr upload_failure;
      try {
        stage_clock lap;
        d_keys.allocate(room, dopt.stream);
        if constexpr (has_values<P>) d_values.allocate(room, dopt.stream);
        // The link's copies run on streams of their own: the slice is theirs once made.
        cuda_check(cudaStreamSynchronize(dopt.stream), "cannot allocate a slice on a GPU");
        times[r].allocate = lap.lap();
        const link_report in = link.to_device(d_keys.get(), keys + begin, count * sizeof(K));
        if (r == 0) straight = in.straight;
        if constexpr (has_values<P>) link.to_device(d_values.get(), values + begin, count * sizeof(P));
        times[r].in = lap.lap();
      } catch (...) {
        upload_failure = std::current_exception();
        d_keys.reset();
        d_values.reset();
      }
      // Every slice is in (or failed, and goes in as a null shard): the host array is as it
      // was, so a cancel here loses nothing.
      if (!checkpoints.pass(r, [&] { meter.phase("sorting", false); })) return;
      stage_clock wait;
      const gpusort::dist::communicator& comm = ready.get()->comms[r];
      times[r].waited = wait.lap();
      gpusort::dist::shard<K, P> part;
      try {
        // The slice is freed once its keys have left: the merge's buffers take its place.
        part = gpusort::dist::detail::sort<K, P>(comm, d_keys.get(), has_values<P> ? d_values.get() : nullptr,
                                                 count, dopt, [&] {
                                                   d_keys.reset();
                                                   d_values.reset();
                                                 });
      } catch (...) {
        if (upload_failure) std::rethrow_exception(upload_failure);
        throw;
      }
      d_keys.reset();
      d_values.reset();
      times[r].sort = part.times();
      result_sizes[r] = part.size();
      // Every range is sorted on its GPU and its size known; the host array is still as it
      // was until the copies back begin.
      if (!checkpoints.pass(r, [&] { meter.phase("copying back", false); })) return;
      std::uint64_t at = 0;
      for (int q = 0; q < r; ++q) at += result_sizes[q];
      stage_clock lap;
      link.to_host(keys + at, part.keys().data(), part.size() * sizeof(K));
      if constexpr (has_values<P>) link.to_host(values + at, part.values().data(), part.size() * sizeof(P));
      times[r].out = lap.lap();
    } catch (...) {
      errors[r] = std::current_exception();
      checkpoints.leave();
    }
  };
  run_concurrently(static_cast<unsigned>(p) + 1, [&](unsigned r) {
    if (r == static_cast<unsigned>(p))
      make_communicators();
    else
      work(static_cast<int>(r));
  });
  try {  // the list is given back however the ranks ended
    ready.get()->busy.release();
  } catch (...) {  // no list was made: every rank failed with that error, rethrown below
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  if (checkpoints.stopped()) std::rethrow_exception(checkpoints.stopped());
  const double total_s = clock.lap();
  stats.add("algorithm", "gpusort::dist (sample sort over NCCL; local " +
                             describe_algorithm<K>(opt.sort, n / p, has_values<P>) + ")");
  stats.add("plan", "spread over " + std::to_string(p) + " GPUs (" + std::to_string(n) +
                        " records): each copies its slice in over its own link, the GPUs sort "
                        "and exchange, each copies its range out");
  stats.add("host memory", straight ? "pinned: copied straight"
                                    : "pageable: staged through pinned buffers, " +
                                          std::to_string(staging_threads(static_cast<unsigned>(p))) + " threads a GPU");
  double waited = 0;
  for (const rank_times& t : times) waited = std::max(waited, t.waited);
  stats.add_seconds("waiting for the communicators after the copy in (made once per GPU list)",
                    waited);
  if (opt.register_host_memory) stats.add_seconds("pin host memory", pin_s);
  double allocate = 0, in = 0, out = 0, setup = 0, local = 0, sampling = 0, exchange = 0, merge = 0;
  for (const rank_times& t : times) {  // the slowest GPU's, phase by phase
    allocate = std::max(allocate, t.allocate);
    in = std::max(in, t.in);
    setup = std::max(setup, t.sort.setup_ms / 1e3);
    out = std::max(out, t.out);
    local = std::max(local, t.sort.local_sort_ms / 1e3);
    sampling = std::max(sampling, t.sort.sampling_ms / 1e3);
    exchange = std::max(exchange, t.sort.exchange_ms / 1e3);
    merge = std::max(merge, t.sort.merge_ms / 1e3);
  }
  stats.add_seconds("allocating the slices", allocate);
  stats.add_seconds("copy in", in);
  stats.add_seconds("set-up before the local sort (its workspace, the first agreement)", setup);
  stats.add_seconds("local sort", local);
  stats.add_seconds("sampling", sampling);
  stats.add_seconds("exchange", exchange);
  stats.add_seconds("merge", merge);
  stats.add_seconds("copy out", out);
  stats.add_seconds("spread total", total_s);
  meter.finish();
  return stats;
}
#endif

sort_request request_for(const external_options& opt, const gpusort::options& sort) {
  return sort_request{.opt = sort,
                      .device_budget_given = opt.device_budget_bytes > 0,
                      .device_budget_bytes = opt.device_budget_bytes,
                      .host_budget_bytes = opt.host_budget_bytes,
                      .devices = opt.devices};
}

// Keys beyond what the GPUs hold at once: runs through the keys pipeline.
template <class K>
file_sort_stats sort_host_keys_in_runs(std::span<K> keys, const external_options& opt,
                                       progress_sink& meter) {
  file_sort_stats stats;
  const std::uint64_t count = keys.size();
  using W = pipeline_key<K>;  // narrow keys travel as their codes
  const bool codes_nans_lowest = nans_lowest(opt.sort.direction, opt.sort.nans);
  const sort_request request =
      request_for(opt, narrow_key<K> ? opt.sort : with_nans_largest(opt.sort));
  const std::uint64_t run_keys = keys_run_records<W>(request, count);
  const std::filesystem::path scratch =
      (opt.scratch_directory.empty() ? std::filesystem::temp_directory_path()
                                     : std::filesystem::path(opt.scratch_directory)) /
      "gpusort-keys";
  stage_clock clock;
  const keys_pipeline_report report = sort_keys_through_gpu<W>(
      count, run_keys, request.opt, opt.host_budget_bytes, scratch,
      impl::request_devices(request),
      [&](W* slot, std::uint64_t first, std::uint64_t n) {
        if constexpr (narrow_key<K>)
          narrow_to_codes(keys.data() + first, slot, n, codes_nans_lowest);
        else
          copy_in_parallel(slot, keys.data() + first, n * sizeof(K));
      },
      [&](std::uint64_t first, const W* slot, std::uint64_t n) {
        if constexpr (narrow_key<K>)
          codes_to_narrow(slot, keys.data() + first, n, codes_nans_lowest);
        else
          copy_in_parallel(keys.data() + first, slot, n * sizeof(K));
      },
      meter);
  if constexpr (std::is_floating_point_v<K>)
    if (nans_lowest(opt.sort.direction, opt.sort.nans))
      move_host_nans(keys, opt.sort.direction == order::descending);
  stats.add("algorithm", describe_algorithm<K>(opt.sort, std::min(count, run_keys), false));
  add_pipeline_stats(stats, report, count, run_keys);
  stats.add_seconds("total", clock.lap());
  return stats;
}

template <class K, class P>
file_sort_stats on_the_cpu(K* keys, P* values, std::uint64_t n, const external_options& opt,
                           progress_sink& meter, const std::string& plan) {
  file_sort_stats stats;
  meter.phase("sorting", false);
  stage_clock clock;
  gpusort::detail::cpu_sort_any_key<K, P>(keys, has_values<P> ? values : nullptr, n, opt.sort);
  stats.add("algorithm", "the CPU backend");
  stats.add("plan", plan);
  stats.add_seconds("sort", clock.lap());
  meter.finish();
  return stats;
}

template <class K, class P>
file_sort_stats sort_host_records(K* keys, P* values, std::uint64_t n, const external_options& opt) {
  callback_progress meter(opt);
  if (!impl::gpu_present()) return on_the_cpu(keys, values, n, opt, meter, "in memory");
  const sort_request request = request_for(opt, opt.sort);
  const std::vector<int> devices = impl::request_devices(request);  // checks the list
  stage_clock clock;
  file_sort_stats stats;
  const auto finish = [&](file_sort_stats done) {
    done.add_seconds("total", clock.lap());
    return done;
  };
  if (n < 2) return finish(on_the_cpu(keys, values, n, opt, meter, "in memory (fewer than 2 records)"));
  const bool fits_one_gpu = [&] {
    const device_scope on(devices.front());
    return one_gpu_bytes<K, P>(n, opt.sort) <= impl::device_budget(request);
  }();
#if GPUSORT_EXTERNAL_WITH_DIST
  if (spread_pays(fits_one_gpu, keys, values, n) && spread_fits<K, P>(n, devices, request))
    return finish(sort_spread_over_gpus(keys, values, n, opt, devices, meter));
#endif
  if (fits_one_gpu) return finish(sort_on_one_gpu(keys, values, n, opt, devices.front(), meter));
  if constexpr (has_values<P>)
    return finish(on_the_cpu(keys, values, n, opt, meter,
                             "on the CPU: pairs beyond the GPUs' memory (sort_pairs_file takes them in runs)"));
  else
    return finish(sort_host_keys_in_runs(std::span<K>(keys, n), opt, meter));
}

}  // namespace

template <class K>
file_sort_stats sort_host_keys(std::span<K> keys, const external_options& opt) {
  return sort_host_records<K, no_value>(keys.data(), nullptr, keys.size(), opt);
}

template <class K, class P>
file_sort_stats sort_host_pairs(K* keys, P* values, std::uint64_t n, const external_options& opt) {
  return sort_host_records<K, P>(keys, values, n, opt);
}

#define GPUSORT_HOST_ARRAYS_INSTANTIATE(K)                                                        \
  template file_sort_stats sort_host_keys<K>(std::span<K>, const external_options&);              \
  template file_sort_stats sort_host_pairs<K, payload<4>>(K*, payload<4>*, std::uint64_t,        \
                                                          const external_options&);               \
  template file_sort_stats sort_host_pairs<K, payload<8>>(K*, payload<8>*, std::uint64_t,        \
                                                          const external_options&);               \
  template file_sort_stats sort_host_pairs<K, payload<16>>(K*, payload<16>*, std::uint64_t,      \
                                                           const external_options&);
GPUSORT_FOR_EACH_NARROW_KEY(GPUSORT_HOST_ARRAYS_INSTANTIATE)
GPUSORT_HOST_ARRAYS_INSTANTIATE(std::uint32_t)
GPUSORT_HOST_ARRAYS_INSTANTIATE(std::int32_t)
GPUSORT_HOST_ARRAYS_INSTANTIATE(float)
GPUSORT_HOST_ARRAYS_INSTANTIATE(std::uint64_t)
GPUSORT_HOST_ARRAYS_INSTANTIATE(std::int64_t)
GPUSORT_HOST_ARRAYS_INSTANTIATE(double)

}  // namespace gpusort::detail::external
