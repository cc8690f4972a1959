// The benchmark harness (bench.hpp). A point is measured on --arrays input arrays generated
// one after another (the first from --seed), every algorithm timed and verified on each; the
// statistics cover the timed runs of all of them. On a GPU, each input is generated on the
// host and copied to a pristine device buffer; every run copies it to a work buffer (not
// timed) and times the sort alone with CUDA events on one stream, after warm-up runs.
// The host sorts (std_sort, cpu_parallel) and the CPU backend are timed with std::chrono,
// with fewer runs for large n.
// approx, approx_sampled, top_k and (with --segments) top_k_rows (approx.hpp) read the work
// buffer and write to output buffers of their own; they are verified by what they promise,
// not as full sorts.
// With --segments, every segment layout of a point reuses its input; a single array is the
// layout of one segment, so that one verification serves both.
#include "bench.hpp"
#include "bench_results.hpp"
#include "bench_verify.hpp"

#include <cuda_runtime_api.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <optional>
#include <parallel/algorithm>
#include <string_view>
#include <utility>

#include "bench/classic_bitonic.hpp"
#include "bench/record_sorts.hpp"
#include "cli.hpp"
#include "gpusort/approx.hpp"
#include "gpusort/segmented.hpp"
#include "gpusort/sort.hpp"
#include "plot.hpp"
#include "gpusort/detail/external/records.hpp"

#ifndef GPUSORT_COMMIT
#define GPUSORT_COMMIT "unknown"
#endif

namespace gpusort::tools {
namespace {

#ifdef GPUSORT_RECORD_BENCH
constexpr bool record_bench_built = true;
#else
constexpr bool record_bench_built = false;  // --types rec16 etc. are refused
#endif

constexpr int device_warmups = 2;
constexpr std::uint64_t large_host_n = std::uint64_t{1} << 22;
constexpr double mib = 1024.0 * 1024.0;
constexpr std::uint64_t narrow_offsets_below = std::uint64_t{1} << 32;  // u32 offsets, else u64
// The methods of approx.hpp that do not sort the whole array (GPU, single arrays only).
constexpr std::string_view partial_methods[] = {"approx", "approx_sampled", "top_k"};
// The baselines that sort on the host, with or without a GPU, single arrays or segments.
constexpr std::string_view host_sorts[] = {"std_sort", "cpu_parallel"};

bool is_host_sort(std::string_view name) {
  return std::ranges::find(host_sorts, name) != std::end(host_sorts);
}

// The methods that leave the keys only partly sorted.
bool is_partial(std::string_view name) {
  return std::ranges::find(partial_methods, name) != std::end(partial_methods);
}

// The seed of a point's input array: --seed itself for the first (so that one array is the
// input of earlier versions), then seeds drawn from it, one per array.
std::uint64_t array_seed(std::uint64_t seed, int array) {
  return array == 0 ? seed : random_bits(seed, static_cast<std::uint64_t>(array));
}

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw error(e, what);
}

// Device memory that may fail to come: then failed() and the point or algorithm is skipped.
class device_memory {
 public:
  explicit device_memory(std::size_t bytes) {
    if (bytes > 0 && cudaMalloc(&ptr_, bytes) != cudaSuccess) {
      cudaGetLastError();  // not sticky: clear it
      ptr_ = nullptr;
      failed_ = true;
    }
  }
  ~device_memory() { cudaFree(ptr_); }
  device_memory(const device_memory&) = delete;
  device_memory& operator=(const device_memory&) = delete;
  bool failed() const { return failed_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
  bool failed_ = false;
};

// The point's input on the device, and the buffer each run sorts.
template <class K>
struct device_input {
  device_memory pristine_keys, pristine_values, keys, values;
  std::unique_ptr<device_memory> offsets;  // the layout's
  device_input(std::uint64_t n, bool pairs)
      : pristine_keys(n * sizeof(K)),
        pristine_values(pairs ? n * 4 : 0),
        keys(n * sizeof(K)),
        values(pairs ? n * 4 : 0) {}
  bool failed() const {
    return pristine_keys.failed() || pristine_values.failed() || keys.failed() || values.failed();
  }
};

// Device buffers for `count` records: keys, and u32 values for pairs.
template <class K>
struct device_records {
  device_memory keys, values;
  device_records(std::uint64_t count, bool pairs)
      : keys(count * sizeof(K)), values(pairs ? count * 4 : 0) {}
  bool failed() const { return keys.failed() || values.failed(); }
};

template <class K>
records<K> copy_to_host(const device_memory& keys, const device_memory& values,
                        std::uint64_t count, bool pairs) {
  records<K> out{std::vector<K>(count), std::vector<std::uint32_t>(pairs ? count : 0), pairs};
  cuda_check(cudaMemcpy(out.keys.data(), keys.as<K>(), count * sizeof(K), cudaMemcpyDeviceToHost),
             "copy from the device");
  if (pairs)
    cuda_check(cudaMemcpy(out.values.data(), values.as<std::uint32_t>(), count * 4,
                          cudaMemcpyDeviceToHost),
               "copy from the device");
  return out;
}

// What one algorithm did on one point (on one input array, or on all of them): the run
// times, or why it was not timed.
struct measurement {
  explicit measurement(std::string name, std::string why_skipped = "")
      : algorithm(std::move(name)), skipped(std::move(why_skipped)) {}
  std::string algorithm;
  std::string skipped;     // non-empty: not timed, for this reason
  std::vector<double> ms;  // ascending
  std::int64_t extra_bytes = 0;
  bool dropped = false;  // skipped, wrong or failed on some array: not reported for the point
  double median() const {
    const std::size_t m = ms.size() / 2;
    return ms.size() % 2 ? ms[m] : (ms[m - 1] + ms[m]) / 2;
  }
  // The sample standard deviation (0 for a single run).
  double std_dev() const {
    if (ms.size() < 2) return 0;
    const double mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
    double squares = 0;
    for (double t : ms) squares += (t - mean) * (t - mean);
    return std::sqrt(squares / static_cast<double>(ms.size() - 1));
  }
};

class harness {
 public:
  explicit harness(const bench_config& config)
      : config_(config), gpu_(cuda_device_present()), segmented_(!config.segments.empty()) {
    // The host sorts: --algos may name them with or without a GPU, in either mode.
    const auto with_host_sorts = [](std::vector<std::string> names) {
      for (std::string_view host : host_sorts)
        if (std::ranges::find(names, host) == names.end()) names.emplace_back(host);
      return names;
    };
    const std::vector<std::string> here = with_host_sorts(bench_algorithms(gpu_, segmented_));
    const std::vector<std::string> anywhere = with_host_sorts(bench_algorithms(true, segmented_));
    const std::vector<std::string> other_mode = bench_algorithms(true, !segmented_);
    std::vector<std::string> gpu_only;
    for (const std::string& name :
         config.algorithms.empty() ? bench_algorithms(gpu_, segmented_) : config.algorithms) {
      if (std::ranges::find(here, name) != here.end()) {
        algorithms_.push_back(name);
      } else if (std::ranges::find(anywhere, name) != anywhere.end()) {
        gpu_only.push_back(name);
      } else {
        std::string known;
        for (const std::string& a : anywhere) known += " " + a;
        const bool wrong_mode = std::ranges::find(other_mode, name) != other_mode.end();
        throw usage_error("--algos: " +
                          (!wrong_mode    ? "unknown algorithm '" + name + "'"
                           : segmented_ ? "'" + name + "' sorts single arrays, not --segments"
                                        : "'" + name + "' needs --segments") +
                          " (" + known.substr(1) + ")");
      }
    }
    for (const std::string& type : config.key_types) {
      if (!gpusort::bench::is_record_type(type)) {
        with_key_type(type, []<class K>() {});
      } else if (segmented_) {
        throw usage_error("--types: " + type + " sorts single arrays, not --segments");
      } else if (!record_bench_built) {
        throw usage_error("--types: " + type + ": this build has no record benchmarks "
                          "(configure with -DGPUSORT_BUILD_RECORD_BENCH=ON)");
      }
    }
    for (std::uint64_t n : config.sizes)
      if (n == 0) throw usage_error("--sizes: every size must be at least 1");
    for (const segment_spec& spec : config.segments)
      if (!spec.powerlaw && spec.size == 0)
        throw usage_error("--segments: a segment size must be at least 1");
    if (config.reps < 1) throw usage_error("--reps must be at least 1");
    if (config.arrays < 1) throw usage_error("--arrays must be at least 1");
    if (gpu_) {
      int device = 0;
      cudaDeviceProp prop{};
      cuda_check(cudaGetDevice(&device), "cudaGetDevice");
      cuda_check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
      gpu_name_ = prop.name;
      cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
      if (config.flush_l2) {
        flush_bytes_ = 2 * static_cast<std::size_t>(prop.l2CacheSize);
        flush_buffer_ = std::make_unique<device_memory>(flush_bytes_);
        if (flush_buffer_->failed()) throw usage_error("--flush-l2: no device memory for it");
      }
      cuda_check(cudaEventCreate(&start_), "cudaEventCreate");
      cuda_check(cudaEventCreate(&stop_), "cudaEventCreate");
      if (segmented_)
        references_ = {"cub_segmented_radix", "cub_segmented_sort"};
      else
        references_ = {"cub_radix", "cub_merge"};
    } else {
      std::printf("gpusort: no CUDA device found; running the CPU backend\n");
      for (const std::string& name : gpu_only)
        std::printf("skipping %s: needs a CUDA device\n", name.c_str());
      gpu_name_ = "cpu";
      references_ = {"std_sort"};
    }
    if (!config.gpu_name.empty()) gpu_name_ = config.gpu_name;
    for (const std::string& name : algorithms_)
      algorithm_width_ = std::max(algorithm_width_, static_cast<int>(name.size()));
    // Every output is opened before the first timing, so that a bad path fails at once, as
    // a usage error (as pending_file's).
    std::string csv_path = config.csv_path;
    if (!config.plot_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(config.plot_dir, ec);
      if (ec)
        throw usage_error(config.plot_dir + ": cannot create the directory: " + ec.message());
      if (csv_path.empty())
        csv_path = (std::filesystem::path(config.plot_dir) / "bench.csv").string();
    }
    results_ = std::make_unique<result_files>(csv_path, config.json_path);
  }

  ~harness() {
    if (stop_) cudaEventDestroy(stop_);
    if (start_) cudaEventDestroy(start_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  int run() {
    print_header();
    for (const std::string& type : config_.key_types)
      if (gpusort::bench::is_record_type(type))
        for (std::uint64_t n : config_.sizes) run_record_point(type, n);
      else
        for (distribution dist : config_.distributions)
        for (std::uint64_t n : config_.sizes)
          with_key_type(type, [&]<class K>() { run_point<K>(dist, n); });
    results_->finish(gpu_name_, GPUSORT_COMMIT);
    if (!config_.plot_dir.empty()) plot();
    if (wrong_ > 0) {
      std::printf("%d result(s) WRONG (see above)\n", wrong_);
      return 1;
    }
    std::printf(segmented_ ? "%d result(s) verified: every segment sorted, holding the records it "
                             "had (checksum)\n"
                           : "%d result(s) verified: sorted, same checksum as the input\n",
                verified_);
    if (std::ranges::find_first_of(algorithms_, partial_methods) != algorithms_.end())
      std::printf("(approx, approx_sampled: intervals in order, same checksum as the input; "
                  "top_k: the first k keys of the sorted input)\n");
    if (std::ranges::find(algorithms_, "top_k_rows") != algorithms_.end())
      std::printf("(top_k_rows: the first k keys of every sorted row)\n");
    return cuda_failures_ > 0 ? 3 : 0;
  }

 private:
  void print_header() const {
    std::printf("gpusort bench on %s, commit %s: median of %d runs", gpu_name_.c_str(),
                GPUSORT_COMMIT, config_.reps);
    if (config_.arrays > 1) std::printf(" on each of %d fresh input arrays", config_.arrays);
    if (gpu_)
      std::printf(" after %d warm-ups (host sorts: fewer runs", device_warmups);
    else
      std::printf(" (fewer runs");
    std::printf(" above 2^22 keys)\nstd %%: the standard deviation of the runs, in percent of "
                "the median\nvs X: keys/s of the row divided by keys/s of X (> 1: faster)\n");
    if (std::ranges::find(algorithms_, "cpu_parallel") != algorithms_.end())
      std::printf("cpu_parallel: GCC's parallel mode sort on %d threads\n", omp_get_max_threads());
    if (segmented_)
      std::printf("segments: all of that size (the last one shorter if need be), or powerlaw: "
                  "lognormal sizes, mu %g, sigma %g\n",
                  powerlaw_mu, powerlaw_sigma);
    std::printf("%-*s %-8s %-11s %11s", algorithm_width_, "algorithm", "keys", "dist", "n");
    if (segmented_) std::printf(" %8s", "segments");
    std::printf(" %10s %6s %8s", "median ms", "std %", "Gkeys/s");
    for (const std::string& ref : references_)
      std::printf(" %*s", ratio_width(ref), ("vs " + ref).c_str());
    std::printf(" %12s\n", "extra bytes");
    std::fflush(stdout);
  }

  // The column "vs ref": wide enough for its heading.
  static int ratio_width(const std::string& ref) {
    return std::max(12, static_cast<int>(ref.size()) + 3);
  }

  // Measures every algorithm on --arrays inputs of the point, in each layout, and reports.
  // Records with a user comparator (bench/record_sorts.hpp): the library's comparison sorts
  // against thrust::sort and CUB's merge sort with the same comparator.
  void run_record_point(const std::string& type, std::uint64_t n) {
    if (!gpu_) {
      std::printf("skipping %s: needs a CUDA device\n", type.c_str());
      return;
    }
    std::vector<std::string> names;
    for (const std::string& a : gpusort::bench::record_algorithms())
      if (config_.algorithms.empty() || std::ranges::find(config_.algorithms, a) !=
                                            config_.algorithms.end())
        names.push_back(a);
    std::vector<gpusort::bench::record_timing> timings;
    try {
#ifdef GPUSORT_RECORD_BENCH
      timings = gpusort::bench::time_record_sorts(type, n, config_.reps, config_.seed, names,
                                                  stream_, [&](int run) { flush_l2(run); });
#endif
    } catch (const std::bad_alloc&) {
      std::printf("%s n=%llu: not enough device memory\n", type.c_str(),
                  static_cast<unsigned long long>(n));
      return;
    }
    std::vector<measurement> done;
    for (const gpusort::bench::record_timing& t : timings) {
      if (!t.problem.empty()) {
        std::fprintf(stderr, "gpusort bench: WRONG RESULT from %s on %s n=%llu: %s\n",
                     t.algorithm.c_str(), type.c_str(), static_cast<unsigned long long>(n),
                     t.problem.c_str());
        ++wrong_;
        continue;
      }
      ++verified_;
      measurement m(t.algorithm);
      m.ms = t.ms;
      m.extra_bytes = t.extra_bytes;
      done.push_back(std::move(m));
    }
    report_rows(type, "none", "uniform", n, std::nullopt, done);
  }

  template <class K>
  void run_point(distribution dist, std::uint64_t n) {
    point<K> p{dist, n, {{}, {}, config_.pairs}, {}, {}, {}, {}};
    if (p.input.pairs) {
      p.input.values.resize(n);
      for (std::uint64_t i = 0; i < n; ++i) p.input.values[i] = static_cast<std::uint32_t>(i);
    }
    std::unique_ptr<device_input<K>> device;
    std::string no_device;  // why device algorithms cannot run on this point
    if (gpu_) {
      std::size_t free_bytes = 0, total = 0;
      cuda_check(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
      const double need = 2.0 * static_cast<double>(n * record_bytes<K>(p.input.pairs));
      device = std::make_unique<device_input<K>>(n, p.input.pairs);
      if (device->failed()) {
        char why[128];
        std::snprintf(why, sizeof why,
                      "not enough device memory (%.0f MiB for input and work "
                      "buffers, %.0f MiB free)",
                      need / mib, static_cast<double>(free_bytes) / mib);
        no_device = why;
        device.reset();
      }
    }
    // The single array, or each segment layout; a layout's tally collects every array's runs.
    std::vector<std::optional<segment_spec>> layouts{std::nullopt};
    if (segmented_) layouts.assign(config_.segments.begin(), config_.segments.end());
    std::vector<measurement> fresh;
    for (const std::string& name : algorithms_) fresh.emplace_back(name);
    std::vector<std::vector<measurement>> tallies(layouts.size(), fresh);
    for (int array = 0; array < config_.arrays; ++array) {
      p.input.keys = generate<K>(dist, n, array_seed(config_.seed, array));
      if (config_.arrays > 1) p.array = array;
      if (device) upload_input(p, *device);
      for (std::size_t layout = 0; layout < layouts.size(); ++layout) {
        p.segments = layouts[layout];
        p.offsets = p.segments ? segment_offsets(*p.segments, n, config_.seed)
                               : std::vector<std::uint64_t>{0, n};
        if (device && p.segments && !upload_offsets(p, *device))
          run_layout<K>(p, nullptr, "not enough device memory for the segment offsets",
                        tallies[layout]);
        else
          run_layout(p, device.get(), no_device, tallies[layout]);
      }
    }
    p.array.reset();
    for (std::size_t layout = 0; layout < layouts.size(); ++layout) {
      p.segments = layouts[layout];
      std::vector<measurement> done;
      for (measurement& m : tallies[layout]) {
        if (m.dropped) continue;
        std::ranges::sort(m.ms);
        done.push_back(std::move(m));
      }
      report(p, done);
    }
  }

  template <class K>
  void upload_input(const point<K>& p, device_input<K>& d) {
    cuda_check(cudaMemcpy(d.pristine_keys.template as<K>(), p.input.keys.data(), p.n * sizeof(K),
                          cudaMemcpyHostToDevice),
               "copy to the device");
    if (p.input.pairs)
      cuda_check(cudaMemcpy(d.pristine_values.template as<std::uint32_t>(), p.input.values.data(),
                            p.n * 4, cudaMemcpyHostToDevice),
                 "copy to the device");
  }

  // The layout's offsets on the device, as u32 below 2^32 keys, else u64 (batches too:
  // sort_segmented_offsets sorts them through offsets). False if they do not fit.
  template <class K>
  bool upload_offsets(const point<K>& p, device_input<K>& d) {
    const auto upload = [&](const auto& host) {
      const std::size_t bytes = host.size() * sizeof(host[0]);
      d.offsets = std::make_unique<device_memory>(bytes);
      if (!d.offsets->failed())
        cuda_check(cudaMemcpy(d.offsets->template as<void>(), host.data(), bytes,
                              cudaMemcpyHostToDevice),
                   "copy to the device");
    };
    d.offsets.reset();  // the previous layout's first
    if (p.n < narrow_offsets_below)
      upload(std::vector<std::uint32_t>(p.offsets.begin(), p.offsets.end()));
    else
      upload(p.offsets);
    return !d.offsets->failed();
  }

  // Times every algorithm still in the tally on the point in its current layout, and adds
  // the runs to its tally entry. One that is skipped, wrong or failing drops out of the point.
  template <class K>
  void run_layout(point<K>& p, device_input<K>* device, const std::string& no_device,
                  std::vector<measurement>& tally) {
    p.input_sum = checksum_by_segment(p.input, p.offsets);
    for (measurement& total : tally) {
      if (total.dropped) continue;
      total.dropped = true;  // until this array's runs are in
      try {
        const measurement m = measure(total.algorithm, p, device, no_device);
        if (!m.skipped.empty()) {
          std::printf("  skip %s on %s: %s\n", m.algorithm.c_str(), p.label().c_str(),
                      m.skipped.c_str());
        } else if (!m.ms.empty()) {  // empty: the result was wrong
          total.ms.insert(total.ms.end(), m.ms.begin(), m.ms.end());
          total.extra_bytes = m.extra_bytes;  // workspaces depend on n, not on the keys
          total.dropped = false;
        }
      } catch (const error& e) {
        std::fprintf(stderr, "gpusort bench: %s on %s failed: %s\n", total.algorithm.c_str(),
                     p.label().c_str(), e.what());
        ++cuda_failures_;
      }
    }
  }

  template <class K>
  measurement measure(const std::string& name, const point<K>& p, device_input<K>* device,
                      const std::string& no_device) {
    if (is_host_sort(name)) return time_host_sort(name, p);
    if (!gpu_) return time_cpu_backend(p);
    if (!device) return measurement(name, no_device);
    if (p.segments) {
      if (name == "top_k_rows") return time_top_k_rows(p, *device);
      if (name == "sort_segmented_indices") return time_segmented_indices(p, *device);
      return time_segmented(name, p, *device);
    }
    if (name == "classic_bitonic") return time_classic_bitonic(p, *device);
    options opt{.stream = stream_,
                .buckets = config_.buckets,
                .intervals = config_.intervals,
                .block_bits = config_.block_bits};
    if (name == "approx" || name == "approx_sampled") {
      opt.interval_splitters = name == "approx" ? splitters::linear : splitters::sampled;
      return time_approx(name, opt, p, *device);
    }
    if (name == "top_k") return time_top_k(opt, p, *device);
    parse_method(name, opt);
    return time_library(opt, p, *device);
  }

  // ---- device algorithms ---------------------------------------------------------------

  template <class K>
  measurement time_library(const options& opt, const point<K>& p, device_input<K>& d) {
    K* keys = d.keys.template as<K>();
    std::uint32_t* values = d.values.template as<std::uint32_t>();
    measurement m = time_with_workspace(
        std::string(method_name(opt)), p, d, [&](void* temp, std::size_t& bytes) {
          return p.input.pairs ? sort_pairs(temp, bytes, keys, values, p.n, opt)
                               : sort_keys(temp, bytes, keys, p.n, opt);
        });
    if (opt.algo == algorithm::thrust) m.extra_bytes = -1;  // it allocates its own: unknown
    return m;
  }

  // Our segmented sort and CUB's two through the same calls: batches when p.batched(), else
  // the offsets on the device; sort_segmented_offsets is ours through the offsets always, to
  // measure what they cost against batches of the same sizes.
  template <class K>
  measurement time_segmented(const std::string& name, const point<K>& p, device_input<K>& d) {
    const algorithm algo = name == "cub_segmented_radix"  ? algorithm::cub_radix
                           : name == "cub_segmented_sort" ? algorithm::cub_merge
                                                          : algorithm::bitonic;  // size classes
    const options opt{.algo = algo, .stream = stream_};
    K* keys = d.keys.template as<K>();
    std::uint32_t* values = d.values.template as<std::uint32_t>();
    const std::uint64_t count = p.segment_count();
    const auto by_offsets = [&](void* temp, std::size_t& bytes, const auto* offsets) {
      return p.input.pairs ? sort_segmented_pairs(temp, bytes, keys, values, p.n, offsets,
                                                  offsets + 1, count, opt)
                           : sort_segmented_keys(temp, bytes, keys, p.n, offsets, offsets + 1,
                                                 count, opt);
    };
    return time_with_workspace(name, p, d, [&](void* temp, std::size_t& bytes) {
      if (p.batched() && name != "sort_segmented_offsets")
        return p.input.pairs
                   ? sort_batched_pairs(temp, bytes, keys, values, count, p.segments->size, opt)
                   : sort_batched_keys(temp, bytes, keys, count, p.segments->size, opt);
      if (p.n < narrow_offsets_below)
        return by_offsets(temp, bytes, d.offsets->template as<const std::uint32_t>());
      return by_offsets(temp, bytes, d.offsets->template as<const std::uint64_t>());
    });
  }

  // Our segmented argsort: each key's position in its segment, made by the sort (--pairs u32
  // lends the value buffer for the indices; its input is never read). Checked as pairs: the
  // input's values are the keys' original indices, which are the positions plus the
  // segment's start.
  template <class K>
  measurement time_segmented_indices(const point<K>& p, device_input<K>& d) {
    const std::string name = "sort_segmented_indices";
    if (!p.input.pairs) return measurement(name, "needs --pairs u32 (the indices' buffer)");
    const options opt{.algo = algorithm::bitonic, .stream = stream_};
    K* keys = d.keys.template as<K>();
    std::uint32_t* indices = d.values.template as<std::uint32_t>();
    const std::uint64_t count = p.segment_count();
    const auto by_offsets = [&](void* temp, std::size_t& bytes, const auto* offsets) {
      return sort_segmented_with_indices(temp, bytes, keys, indices, p.n, offsets, offsets + 1,
                                         count, opt);
    };
    return time_with_workspace(
        name, p, d,
        [&](void* temp, std::size_t& bytes) {
          if (p.batched())
            return sort_batched_with_indices(temp, bytes, keys, indices, count, p.segments->size,
                                             opt);
          if (p.n < narrow_offsets_below)
            return by_offsets(temp, bytes, d.offsets->template as<const std::uint32_t>());
          return by_offsets(temp, bytes, d.offsets->template as<const std::uint64_t>());
        },
        [&] {
          records<K> r = result_of(p, d);
          for (std::size_t s = 0; s + 1 < p.offsets.size(); ++s)
            for (std::uint64_t i = p.offsets[s]; i < p.offsets[s + 1]; ++i)
              r.values[i] += static_cast<std::uint32_t>(p.offsets[s]);
          return sort_problem(p, r);
        },
        0);
  }

  // approx and approx_sampled: from the work buffer into buffers of their own, with the
  // offsets. That output is memory an in-place sort does without: it counts as extra bytes.
  template <class K>
  measurement time_approx(const std::string& name, const options& opt, const point<K>& p,
                          device_input<K>& d) {
    const std::uint64_t offset_count = approx_intervals(opt) + std::uint64_t{1};
    device_records<K> out(p.n, p.input.pairs);
    device_memory offsets(offset_count * sizeof(std::uint64_t));
    if (out.failed() || offsets.failed())
      return measurement(name, "not enough device memory for its output");
    const K* keys = d.keys.template as<const K>();
    const std::uint32_t* values = d.values.template as<const std::uint32_t>();
    K* out_keys = out.keys.template as<K>();
    std::uint32_t* out_values = out.values.template as<std::uint32_t>();
    std::uint64_t* out_offsets = offsets.as<std::uint64_t>();
    const auto problem = [&] {
      std::vector<std::uint64_t> host_offsets(offset_count);
      cuda_check(cudaMemcpy(host_offsets.data(), out_offsets, offset_count * sizeof(std::uint64_t),
                            cudaMemcpyDeviceToHost),
                 "copy from the device");
      return interval_problem(p, copy_to_host<K>(out.keys, out.values, p.n, p.input.pairs),
                              host_offsets);
    };
    return time_with_workspace(
        name, p, d,
        [&](void* temp, std::size_t& bytes) {
          return p.input.pairs ? approx_sort_pairs(temp, bytes, keys, out_keys, values,
                                                   out_values, p.n, out_offsets, opt)
                               : approx_sort_keys(temp, bytes, keys, out_keys, p.n, out_offsets,
                                                  opt);
        },
        problem, p.n * record_bytes<K>(p.input.pairs) + offset_count * sizeof(std::uint64_t));
  }

  // The k (--k, at most n) first keys; the output counts as extra bytes, as for approx.
  template <class K>
  measurement time_top_k(const options& opt, const point<K>& p, device_input<K>& d) {
    const std::uint64_t k = std::min(config_.k, p.n);
    device_records<K> out(k, p.input.pairs);
    if (out.failed()) return measurement("top_k", "not enough device memory for its output");
    const K* keys = d.keys.template as<const K>();
    const std::uint32_t* values = d.values.template as<const std::uint32_t>();
    K* out_keys = out.keys.template as<K>();
    std::uint32_t* out_values = out.values.template as<std::uint32_t>();
    return time_with_workspace(
        "top_k", p, d,
        [&](void* temp, std::size_t& bytes) {
          return p.input.pairs
                     ? top_k_pairs(temp, bytes, keys, values, p.n, out_keys, out_values, k, opt)
                     : top_k_keys(temp, bytes, keys, p.n, out_keys, k, opt);
        },
        [&] {
          return top_k_problem(p, copy_to_host<K>(out.keys, out.values, k, p.input.pairs), p.n);
        },
        k * record_bytes<K>(p.input.pairs));
  }

  // The --k (at most a row) first keys of every row of a batched layout; the output counts as
  // extra bytes.
  template <class K>
  measurement time_top_k_rows(const point<K>& p, device_input<K>& d) {
    if (!p.batched()) return measurement("top_k_rows", "rows of equal length only");
    const std::uint64_t row_length = p.segments->size, rows = p.segment_count();
    const std::uint64_t k = std::min(config_.k, row_length);
    device_records<K> out(rows * k, p.input.pairs);
    if (out.failed()) return measurement("top_k_rows", "not enough device memory for its output");
    const K* keys = d.keys.template as<const K>();
    const std::uint32_t* values = d.values.template as<const std::uint32_t>();
    K* out_keys = out.keys.template as<K>();
    std::uint32_t* out_values = out.values.template as<std::uint32_t>();
    const options opt{.stream = stream_};
    return time_with_workspace(
        "top_k_rows", p, d,
        [&](void* temp, std::size_t& bytes) {
          return p.input.pairs ? top_k_rows_pairs(temp, bytes, keys, values, rows, row_length,
                                                  out_keys, out_values, k, opt)
                               : top_k_rows_keys(temp, bytes, keys, rows, row_length, out_keys,
                                                 k, opt);
        },
        [&] {
          return top_k_problem(
              p, copy_to_host<K>(out.keys, out.values, rows * k, p.input.pairs), row_length);
        },
        rows * k * record_bytes<K>(p.input.pairs));
  }

  // Asks `sort` for its workspace and allocates it, then times the sort and verifies the
  // work buffer.
  template <class K, class Sort>
  measurement time_with_workspace(std::string name, const point<K>& p, device_input<K>& d,
                                  Sort&& sort) {
    return time_with_workspace(
        std::move(name), p, d, std::forward<Sort>(sort),
        [&] { return sort_problem(p, result_of(p, d)); }, 0);
  }

  // The same for any method: `problem` says what is wrong with its result (empty: nothing);
  // output_bytes, what it writes outside the work buffer, counts as extra bytes.
  template <class K, class Sort, class Problem>
  measurement time_with_workspace(std::string name, const point<K>& p, device_input<K>& d,
                                  Sort&& sort, Problem&& problem, std::uint64_t output_bytes) {
    std::size_t bytes = 0;
    const cudaError_t e = sort(nullptr, bytes);
    if (e == cudaErrorNotSupported)
      return measurement(name, "not supported for this key/value type or size");
    cuda_check(e, "workspace query");
    device_memory temp(bytes);
    if (temp.failed())
      return measurement(name, "not enough device memory for its " +
                                   std::to_string(static_cast<long long>(bytes / mib)) +
                                   " MiB workspace");
    // A null workspace only asks for its size, so algorithms that need none get a dummy.
    void* workspace = bytes > 0 ? temp.as<void>() : d.keys.template as<void>();
    measurement m(std::move(name));
    m.extra_bytes = static_cast<std::int64_t>(bytes + output_bytes);
    m.ms = time_device(p, d, [&] { return sort(workspace, bytes); });
    record_verdict(m, p, problem());
    return m;
  }

  template <class K>
  measurement time_classic_bitonic(const point<K>& p, device_input<K>& d) {
    if constexpr (!bench::classic_bitonic_built<K>) {
      return measurement("classic_bitonic", "built for u32, u64 and f32 keys only");
    } else {
      if (p.input.pairs) return measurement("classic_bitonic", "keys only");
      if (!std::has_single_bit(p.n)) return measurement("classic_bitonic", "power-of-two n only");
      measurement m("classic_bitonic");
      m.ms = time_device(
          p, d, [&] { return bench::classic_bitonic_sort(d.keys.template as<K>(), p.n, stream_); });
      verify(m, p, result_of(p, d));
      return m;
    }
  }

  // Writes over the L2 cache (--flush-l2), a different byte each run.
  void flush_l2(int run) {
    if (flush_buffer_)
      cuda_check(cudaMemsetAsync(flush_buffer_->template as<unsigned char>(), run & 0xff,
                                 flush_bytes_, stream_),
                 "flushing the L2 cache");
  }

  // Times `sort` on the stream: each run first restores the input from the pristine copy.
  template <class K, class Sort>
  std::vector<double> time_device(const point<K>& p, device_input<K>& d, Sort&& sort) {
    std::vector<double> ms;
    for (int run = 0; run < device_warmups + config_.reps; ++run) {
      cuda_check(cudaMemcpyAsync(d.keys.template as<K>(), d.pristine_keys.template as<K>(),
                                 p.n * sizeof(K), cudaMemcpyDeviceToDevice, stream_),
                 "restoring the input");
      if (p.input.pairs)
        cuda_check(cudaMemcpyAsync(d.values.template as<std::uint32_t>(),
                                   d.pristine_values.template as<std::uint32_t>(), p.n * 4,
                                   cudaMemcpyDeviceToDevice, stream_),
                   "restoring the input");
      flush_l2(run);
      cuda_check(cudaEventRecord(start_, stream_), "cudaEventRecord");
      cuda_check(sort(), "sort");
      cuda_check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
      cuda_check(cudaEventSynchronize(stop_), "sort");
      float elapsed = 0;
      cuda_check(cudaEventElapsedTime(&elapsed, start_, stop_), "cudaEventElapsedTime");
      if (run >= device_warmups) ms.push_back(elapsed);
    }
    std::ranges::sort(ms);
    return ms;
  }

  template <class K>
  records<K> result_of(const point<K>& p, const device_input<K>& d) {
    return copy_to_host<K>(d.keys, d.values, p.n, p.input.pairs);
  }

  // ---- host algorithms -----------------------------------------------------------------

  // std_sort, or cpu_parallel (on all cores, sort_each_segment); pairs as (key, value) pairs.
  template <class K>
  measurement time_host_sort(const std::string& name, const point<K>& p) {
    measurement m(name);
    const bool parallel = name == "cpu_parallel";
    const auto by_key = [](const auto& a, const auto& b) { return less<K>{}(a.first, b.first); };
    if (!p.input.pairs) {
      std::vector<K> keys;
      m.ms = time_host(
          p.n, [&] { keys = p.input.keys; },
          [&] { sort_each_segment(p, keys.begin(), less<K>{}, parallel); });
      verify(m, p, records<K>{std::move(keys), {}, false});
      return m;
    }
    std::vector<std::pair<K, std::uint32_t>> pristine(p.n), work;
    for (std::uint64_t i = 0; i < p.n; ++i) pristine[i] = {p.input.keys[i], p.input.values[i]};
    m.ms = time_host(
        p.n, [&] { work = pristine; },
        [&] { sort_each_segment(p, work.begin(), by_key, parallel); });
    records<K> out{{}, {}, true};
    for (const auto& [key, value] : work) {
      out.keys.push_back(key);
      out.values.push_back(value);
    }
    verify(m, p, out);
    return m;
  }

  template <class K>
  measurement time_cpu_backend(const point<K>& p) {
    measurement m(p.segments ? "sort_segmented" : "bitonic");
    const options opt{.algo = algorithm::bitonic};
    const detail::segment_list segments =
        p.batched() ? detail::make_batches(p.segment_count(), p.segments->size)
                    : detail::make_segments(p.offsets.data(), p.offsets.data() + 1,
                                            p.segment_count());
    records<K> work;
    m.ms = time_host(
        p.n, [&] { work = p.input; },
        [&] {
          auto* values = reinterpret_cast<detail::payload<4>*>(work.values.data());
          if (p.segments && work.pairs)
            detail::cpu_sort_segments(work.keys.data(), values, p.n, segments, opt);
          else if (p.segments)
            detail::cpu_sort_segments<K, detail::no_value>(work.keys.data(), nullptr, p.n,
                                                           segments, opt);
          else if (work.pairs)
            detail::cpu_sort_pairs(work.keys.data(), values, p.n, opt);
          else
            detail::cpu_sort_keys(work.keys.data(), p.n, opt);
        });
    verify(m, p, work);
    return m;
  }

  // Host runs take long for large n: fewer of them (at least 3), and no warm-up.
  template <class Reset, class Sort>
  std::vector<double> time_host(std::uint64_t n, Reset&& reset, Sort&& sort) {
    const std::uint64_t reps = static_cast<std::uint64_t>(config_.reps);
    const std::uint64_t runs =
        std::clamp(reps * large_host_n / n, std::min<std::uint64_t>(reps, 3), reps);
    const int warmups = n <= large_host_n ? 1 : 0;
    std::vector<double> ms;
    for (std::uint64_t run = 0; run < warmups + runs; ++run) {
      reset();
      const auto start = std::chrono::steady_clock::now();
      sort();
      const std::chrono::duration<double, std::milli> elapsed =
          std::chrono::steady_clock::now() - start;
      if (run >= static_cast<std::uint64_t>(warmups)) ms.push_back(elapsed.count());
    }
    std::ranges::sort(ms);
    return ms;
  }

  // ---- results ---------------------------------------------------------------------------

  template <class K>
  void verify(measurement& m, const point<K>& p, const records<K>& result) {
    record_verdict(m, p, sort_problem(p, result));
  }

  // Counts a right result (no problem); a wrong one is reported loudly and not measured.
  template <class K>
  void record_verdict(measurement& m, const point<K>& p, const std::string& problem) {
    if (problem.empty()) {
      ++verified_;
      return;
    }
    std::fprintf(stderr, "gpusort bench: WRONG RESULT from %s on %s: %s\n", m.algorithm.c_str(),
                 p.label().c_str(), problem.c_str());
    ++wrong_;
    m.ms.clear();
  }

  template <class K>
  void report(const point<K>& p, const std::vector<measurement>& done) {
    report_rows(std::string(key_traits<K>::name), p.input.pairs ? "u32" : "none",
                std::string(to_string(p.dist)), p.n,
                p.segments ? std::optional<std::string>(p.segments->name()) : std::nullopt, done);
  }

  // The rows of one point: the table line, the CSV line and the JSON row of each measurement.
  void report_rows(const std::string& key_type, const std::string& value_type,
                   const std::string& dist, std::uint64_t n,
                   const std::optional<std::string>& segments,
                   const std::vector<measurement>& done) {
    const std::string keys = key_type + (value_type == "none" ? "" : "+" + value_type);
    for (const measurement& m : done) {
      const double keys_per_s = static_cast<double>(n) / (m.median() * 1e-3);
      std::printf("%-*s %-8s %-11s %11llu", algorithm_width_, m.algorithm.c_str(), keys.c_str(),
                  dist.c_str(), static_cast<unsigned long long>(n));
      if (segments) std::printf(" %8s", segments->c_str());
      std::printf(" %10.3f %6.1f %8.3f", m.median(), 100 * m.std_dev() / m.median(),
                  keys_per_s * 1e-9);
      for (const std::string& ref : references_) {
        const auto it = std::ranges::find(done, ref, &measurement::algorithm);
        if (it == done.end())
          std::printf(" %*s", ratio_width(ref), "-");
        else
          std::printf(" %*.2f", ratio_width(ref), it->median() / m.median());
      }
      std::printf(" %12lld\n", static_cast<long long>(m.extra_bytes));
      results_->add({.algorithm = m.algorithm,
                       .key_type = key_type,
                       .value_type = value_type,
                       .distribution = dist,
                       .n = n,
                       .segment_size = segments ? *segments : "0",
                       .median_ms = m.median(),
                       .keys_per_s = keys_per_s,
                       .extra_device_bytes = m.extra_bytes,
                       .gpu = gpu_name_,
                       .commit = GPUSORT_COMMIT,
                       .min_ms = m.ms.front(),
                       .max_ms = m.ms.back(),
                       .reps = m.ms.size() / static_cast<std::size_t>(config_.arrays),
                       .std_ms = m.std_dev(),
                       .arrays = config_.arrays,
                       .l2 = gpu_ && config_.flush_l2 ? "flushed" : "warm"});
    }
    std::fflush(stdout);
  }

  // The figures of the CSV (the plotter refuses a CSV without rows). A plotter that cannot
  // run or fails is reported, but the measurements stand: the CSV is written already.
  void plot() const {
    if (results_->rows().empty()) {
      std::printf("no figures: each needs 2 sizes, or 2 distributions of one size, measured\n");
      return;
    }
    const plot_outcome drawn = run_plotter(results_->csv_path(), config_.plot_dir);
    for (const std::string& figure : drawn.figures) std::printf("figure: %s\n", figure.c_str());
    if (drawn.status != 0) {
      std::string why = drawn.error;
      if (why.starts_with("gpusort plot: ")) why.erase(0, 14);
      why.erase(std::min(why.find('\n'), why.size()));
      std::fflush(stdout);
      std::fprintf(stderr, "gpusort bench: no figures drawn (the CSV is %s): %s\n",
                   results_->csv_path().c_str(), why.c_str());
    } else if (drawn.figures.empty()) {
      std::printf("no figures: each needs 2 sizes, or 2 distributions of one size, measured\n");
    }
  }

  const bench_config& config_;
  const bool gpu_, segmented_;
  std::vector<std::string> algorithms_, references_;
  std::unique_ptr<device_memory> flush_buffer_;  // --flush-l2 on a GPU
  std::size_t flush_bytes_ = 0;
  int algorithm_width_ = 16;  // the table's first column: its longest name
  std::string gpu_name_;
  // The CSV (--csv, or bench.csv in the --plot directory) and the JSON file; every row
  // reported, which the plot draws.
  std::unique_ptr<result_files> results_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  int verified_ = 0, wrong_ = 0, cuda_failures_ = 0;
};

}  // namespace

bool cuda_device_present() {
  int count = 0;
  const bool present = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();  // a machine without a driver leaves an error behind
  return present;
}

std::vector<std::string> bench_algorithms(bool gpu, bool segmented) {
  if (segmented) {
    if (!gpu) return {"sort_segmented", "std_sort"};
    return {"sort_segmented", "sort_segmented_offsets", "sort_segmented_indices",
            "cub_segmented_radix", "cub_segmented_sort", "top_k_rows"};
  }
  if (!gpu) return {"bitonic", "std_sort", "cpu_parallel"};
  std::vector<std::string> names;
  for (algorithm a : all_algorithms) names.emplace_back(to_string(a));
  names.emplace_back("sample_sort_random");
  names.insert(names.end(), std::begin(partial_methods), std::end(partial_methods));
  names.insert(names.end(), {"classic_bitonic", "std_sort", "cpu_parallel"});
  return names;
}

int run_bench(const bench_config& config) { return harness(config).run(); }

namespace {

// One row of `largest --all`.
struct largest_size {
  std::uint64_t n = 0, workspace_bytes = 0;
  std::string note;
};

// The largest n whose records (keys, and values unless null) and the workspace that `name`
// asks for fit in free_bytes, n at most `most`. The arrays must span `most` records, since
// a query validates both ends of them.
template <class K>
largest_size largest_fitting(const std::string& name, K* keys, std::uint32_t* values,
                             std::uint64_t most, std::uint64_t free_bytes) {
  const std::uint64_t record = record_bytes<K>(values != nullptr);
  largest_size result;
  if (name == "classic_bitonic") {
    if (values)
      result.note = "keys only";
    else if (!bench::classic_bitonic_built<K>)
      result.note = "built for u32, u64 and f32 keys only";
    else
      result = {std::bit_floor(most), 0, "power-of-two n only, in place"};
    return result;
  }
  options opt;
  parse_method(name, opt);
  const bool thrust = opt.algo == algorithm::thrust;
  cudaError_t refused = cudaSuccess;  // the last failing query's error
  // Whether n records and their workspace (into `bytes`) fit.
  const auto fits = [&](std::uint64_t n, std::uint64_t& bytes) {
    std::size_t asked = 0;
    const cudaError_t e = values ? sort_pairs(nullptr, asked, keys, values, n, opt)
                                 : sort_keys(nullptr, asked, keys, n, opt);
    if (e != cudaSuccess) {
      cudaGetLastError();
      refused = e;
      return false;
    }
    // thrust allocates its own: count a second copy of the records, as the CUB sorts beneath
    // it need.
    bytes = thrust ? n * record : asked;
    return bytes <= free_bytes - n * record;
  };
  // Binary search, the workspace growing with n: fits(low), and nothing above high fits.
  std::uint64_t low = 0, high = most, bytes = 0;
  while (low < high) {
    const std::uint64_t mid = high - (high - low) / 2;
    if (fits(mid, bytes))
      low = mid;
    else
      high = mid - 1;
  }
  result.n = low;
  if (low > 0) fits(low, result.workspace_bytes);
  if (thrust) result.note = "allocates its own workspace: estimated as one more copy";
  // Say so when the algorithm, not the memory, stops at n.
  refused = cudaSuccess;
  if (low < most && !fits(low + 1, bytes) && refused != cudaSuccess)
    result.note = (refused == cudaErrorNotSupported ? std::string("not built for this type")
                                                    : cudaGetErrorString(refused)) +
                  (low > 0 ? " above this n" : "");
  return result;
}

}  // namespace

int print_largest_sizes(const std::string& key_type, bool pairs) {
  return with_key_type(key_type, [&]<class K>() {
    int device = 0;
    cudaDeviceProp prop{};
    cuda_check(cudaGetDevice(&device), "cudaGetDevice");
    cuda_check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    std::size_t free_bytes = 0, total_bytes = 0;
    cuda_check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    const std::uint64_t record = record_bytes<K>(pairs);
    const std::uint64_t most = free_bytes / record;  // no sort holds more records than fit
    // The queries' arrays: one managed allocation of `most` records. Nothing touches it, so
    // where the GPU pages managed memory on demand it takes no device memory.
    void* span = nullptr;
    cuda_check(cudaMallocManaged(&span, std::max<std::uint64_t>(most * record, 1)),
               "allocating managed memory for the queries");
    const std::unique_ptr<void, decltype(&cudaFree)> owner(span, &cudaFree);
    K* keys = static_cast<K*>(span);
    std::uint32_t* values = pairs ? reinterpret_cast<std::uint32_t*>(keys + most) : nullptr;

    constexpr double gib = 1024.0 * 1024.0 * 1024.0;
    std::printf("the largest n each algorithm sorts on %s: %s keys%s, %.2f GiB free of %.2f "
                "GiB\n(the records plus the workspace the algorithm asks for; found by workspace "
                "queries, nothing sorted)\n",
                prop.name, std::string(key_traits<K>::name).c_str(),
                pairs ? " with u32 values" : "", static_cast<double>(free_bytes) / gib,
                static_cast<double>(total_bytes) / gib);
    std::printf("%-18s %14s %7s %12s %14s  %s\n", "algorithm", "largest n", "log2 n",
                "records GiB", "workspace GiB", "note");
    for (const std::string& name : bench_algorithms(true, false)) {
      if (is_host_sort(name) || is_partial(name)) continue;
      const largest_size size = largest_fitting(name, keys, values, most, free_bytes);
      char log2_n[16] = "-";
      if (size.n > 0)
        std::snprintf(log2_n, sizeof log2_n, "%.2f", std::log2(static_cast<double>(size.n)));
      std::printf("%-18s %14llu %7s %12.2f %14.2f  %s\n", name.c_str(),
                  static_cast<unsigned long long>(size.n), log2_n,
                  static_cast<double>(size.n * record) / gib,
                  static_cast<double>(size.workspace_bytes) / gib, size.note.c_str());
    }
    return 0;
  });
}

}  // namespace gpusort::tools
