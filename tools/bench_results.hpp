// The benchmark's results as files: one row per measurement, a CSV line written as each row
// comes (so that an interrupted run keeps what it measured) and one JSON file at the end.
// The harness (bench.cpp and bench_*.cpp) measures; this part only records. The columns are docs/design.md's (Benchmarks
// and results), later ones appended so that readers of older files keep working.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"  // usage_error, io_error, and the file machinery's names
#include "records.hpp"  // file_handle, pending_file

namespace gpusort::tools {

struct result_row {
  std::string algorithm, key_type, value_type, distribution;
  std::uint64_t n = 0;
  std::string segment_size;  // 0 for a single array, else as --segments spells the layout
  double median_ms = 0, keys_per_s = 0;
  std::int64_t extra_device_bytes = 0;  // -1: unknown (thrust allocates its own)
  std::string gpu, commit;
  double min_ms = 0, max_ms = 0;
  std::uint64_t reps = 0;  // timed runs per array
  double std_ms = 0;
  int arrays = 1;
  std::string l2;  // "flushed" before each device run, or "warm"
};

// The CSV's first line, and a row as a CSV line or a JSON object.
std::string csv_header();
std::string csv_line(const result_row& row);
std::string json_object(const result_row& row);

// A JSON string: quotes, backslashes and control characters escaped, other bytes (UTF-8) kept.
std::string json_string(std::string_view text);

class result_files {
 public:
  // Both files are opened before any timing, so that a bad path fails at once, as a usage
  // error. An empty path: no such file.
  result_files(const std::string& csv_path, const std::string& json_path);

  // Records a row: its CSV line is written and flushed.
  void add(result_row row);
  // Closes the CSV and writes the JSON file (which appears complete under its name).
  void finish(std::string_view gpu, std::string_view commit);

  const std::vector<result_row>& rows() const { return rows_; }
  const std::string& csv_path() const { return csv_path_; }

 private:
  std::string csv_path_;
  file_handle csv_;
  std::unique_ptr<pending_file> json_;
  std::vector<result_row> rows_;
};

}  // namespace gpusort::tools
