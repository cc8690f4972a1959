// What bench shows of its measurements: the table on stdout (a heading that says how it
// timed, then a line per algorithm and point, with its speed against the references), the
// rows of the CSV and JSON files (bench_results.hpp), the figures (--plot), and the tally of
// verdicts at the end.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench.hpp"
#include "bench_results.hpp"
#include "bench_timing.hpp"  // measurement
#include "bench_verify.hpp"  // point, verdict_tally

namespace gpusort::tools {

class bench_report {
 public:
  // gpu: whether device algorithms run; gpu_name goes into the heading and every row;
  // algorithms: those that run, in their order. Opens the outputs (see result_files), and
  // creates the --plot directory: throws usage_error where one cannot be.
  bench_report(const bench_config& config, bool gpu, std::string gpu_name,
               const std::vector<std::string>& algorithms);

  // How the runs are timed, what the columns mean, and the column headings.
  void print_header() const;

  // The rows of one point: the table line, the CSV line and the JSON row of each measurement
  // (each with at least one run).
  void add_rows(const std::string& key_type, const std::string& value_type,
                const std::string& dist, std::uint64_t n,
                const std::optional<std::string>& segments, const std::vector<measurement>& done);
  template <class K>
  void add_rows(const point<K>& p, const std::vector<measurement>& done) {
    add_rows(std::string(key_traits<K>::name), p.input.pairs ? "u32" : "none",
             std::string(to_string(p.dist)), p.n,
             p.segments ? std::optional<std::string>(p.segments->name()) : std::nullopt, done);
  }

  // Writes the JSON file, draws the figures (--plot) and says how many results were
  // verified, or how many were wrong.
  void finish(const verdict_tally& verdicts);

 private:
  void plot() const;

  const bench_config& config_;
  const bool gpu_, segmented_;
  const std::string gpu_name_;
  const std::vector<std::string> algorithms_;
  const std::vector<std::string> references_;
  int algorithm_width_ = 16;  // the table's first column: its longest name
  // The CSV (--csv, or bench.csv in the --plot directory) and the JSON file; every row
  // reported, which the plot draws.
  std::unique_ptr<result_files> results_;
};

}  // namespace gpusort::tools
