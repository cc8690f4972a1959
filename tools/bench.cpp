// The benchmark's driver (bench.hpp): it checks the configuration before any timing, then
// walks it. A point is measured on --arrays input arrays generated one after another (the
// first from --seed), every algorithm timed and verified on each (bench_sorts.hpp); the
// statistics cover the timed runs of all of them. With --segments, every segment layout of a
// point reuses its input; a single array is the layout of one segment, so that one
// verification serves both. Each point's rows go to the table and the files as it is done
// (bench_report.hpp).
#include "bench.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/record_sorts.hpp"
#include "bench_algorithms.hpp"
#include "bench_input.hpp"
#include "bench_report.hpp"
#include "bench_sorts.hpp"
#include "bench_timing.hpp"
#include "bench_verify.hpp"
#include "cli.hpp"

namespace gpusort::tools {
namespace {

#ifdef GPUSORT_RECORD_BENCH
constexpr bool record_bench_built = true;
#else
constexpr bool record_bench_built = false;  // --types rec16 etc. are refused
#endif

// Throws usage_error for an unknown key type, a record type where it cannot run, and a
// count of 0.
void check_counts_and_types(const bench_config& config) {
  for (const std::string& type : config.key_types) {
    if (!gpusort::bench::is_record_type(type)) {
      with_file_key_type(type, [&]<class K>() {
        if constexpr (gpusort::narrow_key<K>)
          throw usage_error("--types: " + type + ": narrow keys are measured by "
                            "gpusort-narrow-bench (tools/bench/narrow_bench.cu), against CUB and f32");
      });
    } else if (!config.segments.empty()) {
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
}

// Every name and count is checked, and every output opened, before the first timing.
class harness {
 public:
  explicit harness(const bench_config& config)
      : config_(config), gpu_(cuda_device_present()), segmented_(!config.segments.empty()) {
    const algorithm_selection selected = select_algorithms(config.algorithms, gpu_, segmented_);
    algorithms_ = selected.run;
    check_counts_and_types(config);
    std::string gpu_name;
    if (gpu_) {
      const cudaDeviceProp prop = device_properties();
      gpu_name = prop.name;
      timer_.emplace(static_cast<std::size_t>(prop.l2CacheSize), config.flush_l2);
    } else {
      std::printf("gpusort: no CUDA device found; running the CPU backend\n");
      for (const std::string& name : selected.gpu_only)
        std::printf("skipping %s: needs a CUDA device\n", name.c_str());
      gpu_name = "cpu";
    }
    if (!config.gpu_name.empty()) gpu_name = config.gpu_name;
    report_.emplace(config, gpu_, std::move(gpu_name), algorithms_);
    sorts_.emplace(config, timer_ ? &*timer_ : nullptr, verdicts_);
  }

  int run() {
    report_->print_header();
    for (const std::string& type : config_.key_types)
      if (gpusort::bench::is_record_type(type))
        for (std::uint64_t n : config_.sizes) run_record_point(type, n);
      else
        for (distribution dist : config_.distributions)
        for (std::uint64_t n : config_.sizes)
          with_key_type(type, [&]<class K>() { run_point<K>(dist, n); });
    report_->finish(verdicts_);
    if (verdicts_.wrong() > 0) return 1;
    return cuda_failures_ > 0 ? 3 : 0;
  }

 private:
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
                                                  timer_->stream(),
                                                  [&](int run) { timer_->flush_l2(run); });
#endif
    } catch (const std::bad_alloc&) {
      std::printf("%s n=%llu: not enough device memory\n", type.c_str(),
                  static_cast<unsigned long long>(n));
      return;
    }
    std::vector<measurement> done;
    for (const gpusort::bench::record_timing& t : timings) {
      if (!verdicts_.record(t.algorithm, type + " n=" + std::to_string(n), t.problem)) continue;
      measurement m(t.algorithm);
      m.ms = t.ms;
      m.extra_bytes = t.extra_bytes;
      done.push_back(std::move(m));
    }
    report_->add_rows(type, "none", "uniform", n, std::nullopt, done);
  }

  // Measures every algorithm on --arrays inputs of the point, in each layout, and reports.
  template <class K>
  void run_point(distribution dist, std::uint64_t n) {
    point<K> p{dist, n, {{}, {}, config_.pairs}, {}, {}, {}, {}};
    if (p.input.pairs) p.input.values = original_indices(n);
    std::unique_ptr<device_input<K>> device;
    std::string no_device;  // why device algorithms cannot run on this point
    if (gpu_) device = allocate_device_input<K>(n, p.input.pairs, no_device);
    // The single array, or each segment layout; a layout's tally collects every array's runs.
    std::vector<std::optional<segment_spec>> layouts{std::nullopt};
    if (segmented_) layouts.assign(config_.segments.begin(), config_.segments.end());
    std::vector<measurement> fresh;
    for (const std::string& name : algorithms_) fresh.emplace_back(name);
    std::vector<std::vector<measurement>> tallies(layouts.size(), fresh);
    for (int array = 0; array < config_.arrays; ++array) {
      p.input.keys = generate<K>(dist, n, array_seed(config_.seed, array));
      if (config_.arrays > 1) p.array = array;
      if (device) device->upload(p.input);
      for (std::size_t layout = 0; layout < layouts.size(); ++layout) {
        p.segments = layouts[layout];
        p.offsets = p.segments ? segment_offsets(*p.segments, n, config_.seed)
                               : std::vector<std::uint64_t>{0, n};
        if (device && p.segments && !device->upload_offsets(p.offsets))
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
      report_->add_rows(p, done);
    }
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
        const measurement m = sorts_->measure(total.algorithm, p, device, no_device);
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

  const bench_config& config_;
  const bool gpu_, segmented_;
  std::vector<std::string> algorithms_;  // those that run here, in --algos order
  // Made once the configuration is checked, in the order their failures are reported.
  std::optional<device_timer> timer_;  // with a GPU
  std::optional<bench_report> report_;
  verdict_tally verdicts_;
  std::optional<sort_runner> sorts_;
  int cuda_failures_ = 0;
};

}  // namespace

bool cuda_device_present() {
  int count = 0;
  const bool present = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();  // a machine without a driver leaves an error behind
  return present;
}

int run_bench(const bench_config& config) { return harness(config).run(); }

}  // namespace gpusort::tools
