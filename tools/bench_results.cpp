#include "bench_results.hpp"

#include <cmath>
#include <concepts>
#include <cstdio>

#include "common/csv.hpp"

namespace gpusort::tools {

namespace {

// One value of a row as each format spells it.
struct column {
  std::string_view name;
  std::string csv, json;
};

column text_column(std::string_view name, const std::string& value) {
  return {name, csv_field(value), json_string(value)};
}

column integer_column(std::string_view name, std::integral auto value) {
  const std::string text = std::to_string(value);
  return {name, text, text};
}

column decimal_column(std::string_view name, double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return {name, text, std::isfinite(value) ? text : "null"};  // JSON has no inf or nan
}

// The row's columns in the CSV's order.
std::vector<column> columns_of(const result_row& r) {
  return {text_column("algorithm", r.algorithm),
          text_column("key_type", r.key_type),
          text_column("value_type", r.value_type),
          text_column("distribution", r.distribution),
          integer_column("n", r.n),
          text_column("segment_size", r.segment_size),
          decimal_column("median_ms", r.median_ms, 6),
          decimal_column("keys_per_s", r.keys_per_s, 0),
          integer_column("extra_device_bytes", r.extra_device_bytes),
          text_column("gpu", r.gpu),
          text_column("commit", r.commit),
          decimal_column("min_ms", r.min_ms, 6),
          decimal_column("max_ms", r.max_ms, 6),
          integer_column("reps", r.reps),
          decimal_column("std_ms", r.std_ms, 6),
          integer_column("arrays", r.arrays),
          text_column("l2", r.l2)};
}

}  // namespace

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string csv_header() {
  std::string header;
  for (const column& c : columns_of({})) header += (header.empty() ? "" : ",") + std::string(c.name);
  return header;
}

std::string csv_line(const result_row& row) {
  std::string line;
  for (const column& c : columns_of(row)) line += (line.empty() ? "" : ",") + c.csv;
  return line;
}

std::string json_object(const result_row& row) {
  std::string object;
  for (const column& c : columns_of(row))
    object += (object.empty() ? "{" : ", ") + json_string(c.name) + ": " + c.json;
  return object + "}";
}

result_files::result_files(const std::string& csv_path, const std::string& json_path)
    : csv_path_(csv_path) {
  if (!csv_path_.empty()) {
    csv_.reset(std::fopen(csv_path_.c_str(), "w"));
    if (!csv_) throw usage_error(csv_path_ + ": cannot create: " + system_error_text());
    std::fprintf(csv_.get(), "%s\n", csv_header().c_str());
  }
  if (!json_path.empty()) json_ = std::make_unique<pending_file>(json_path);
}

void result_files::add(result_row row) {
  rows_.push_back(std::move(row));
  if (!csv_) return;
  std::fprintf(csv_.get(), "%s\n", csv_line(rows_.back()).c_str());
  if (std::fflush(csv_.get()) != 0)
    throw io_error(csv_path_ + ": write failed: " + system_error_text());
}

void result_files::finish(std::string_view gpu, std::string_view commit) {
  if (csv_ && std::fclose(csv_.release()) != 0)
    throw io_error(csv_path_ + ": write failed: " + system_error_text());
  if (!json_) return;
  std::FILE* f = json_->get();
  std::fprintf(f, "{\n  \"gpu\": %s,\n  \"commit\": %s,\n  \"rows\": [",
               json_string(gpu).c_str(), json_string(commit).c_str());
  for (std::size_t i = 0; i < rows_.size(); ++i)
    std::fprintf(f, "%s\n    %s", i > 0 ? "," : "", json_object(rows_[i]).c_str());
  std::fputs(rows_.empty() ? "]\n}\n" : "\n  ]\n}\n", f);
  if (std::ferror(f)) throw io_error(json_->path() + ": write failed: " + system_error_text());
  json_->commit();
}

}  // namespace gpusort::tools
