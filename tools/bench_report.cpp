// The table, the result files and the figures of bench (bench_report.hpp).
#include "bench_report.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <utility>

#include "bench_algorithms.hpp"
#include "common/segments.hpp"
#include "plot.hpp"

#ifndef GPUSORT_COMMIT
#define GPUSORT_COMMIT "unknown"
#endif

namespace gpusort::tools {
namespace {

// The column "vs ref": wide enough for its heading.
int ratio_width(const std::string& ref) { return std::max(12, static_cast<int>(ref.size()) + 3); }

}  // namespace

bench_report::bench_report(const bench_config& config, bool gpu, std::string gpu_name,
                           const std::vector<std::string>& algorithms)
    : config_(config),
      gpu_(gpu),
      segmented_(!config.segments.empty()),
      gpu_name_(std::move(gpu_name)),
      algorithms_(algorithms),
      references_(reference_algorithms(gpu, segmented_)) {
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

void bench_report::print_header() const {
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

void bench_report::add_rows(const std::string& key_type, const std::string& value_type,
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

void bench_report::finish(const verdict_tally& verdicts) {
  results_->finish(gpu_name_, GPUSORT_COMMIT);
  if (!config_.plot_dir.empty()) plot();
  if (verdicts.wrong() > 0) {
    std::printf("%d result(s) WRONG (see above)\n", verdicts.wrong());
    return;
  }
  std::printf(segmented_ ? "%d result(s) verified: every segment sorted, holding the records it "
                           "had (checksum)\n"
                         : "%d result(s) verified: sorted, same checksum as the input\n",
              verdicts.verified());
  if (std::ranges::find_first_of(algorithms_, partial_methods) != algorithms_.end())
    std::printf("(approx, approx_sampled: intervals in order, same checksum as the input; "
                "top_k: the first k keys of the sorted input)\n");
  if (std::ranges::find(algorithms_, "top_k_rows") != algorithms_.end())
    std::printf("(top_k_rows: the first k keys of every sorted row)\n");
}

// The figures of the CSV (the plotter refuses a CSV without rows). A plotter that cannot
// run or fails is reported, but the measurements stand: the CSV is written already.
void bench_report::plot() const {
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

}  // namespace gpusort::tools
