// gpusort bench's measurements and outputs end to end: fresh input arrays (--arrays) and the
// statistics columns, the JSON file, the cpu_parallel baseline, the figures (--plot) and
// `largest --all`. Without a GPU, bench times the CPU backend (bitonic) against the host
// sorts, and largest fails with a usage error.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cpu/tool_fixture.hpp"
#include "gpusort/sort.hpp"

namespace {

using namespace gpusort_test_tool;

// ---- a CSV as bench writes it ------------------------------------------------------------

// The fields of one line; a field may be quoted, "" standing for a quote.
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

struct csv_table {
  std::vector<std::string> columns;
  std::vector<std::map<std::string, std::string>> rows;  // column -> field
};

csv_table read_csv(const std::string& path) {
  std::istringstream text(slurp(path));
  csv_table table;
  std::string line;
  std::getline(text, line);
  table.columns = csv_fields(line);
  while (std::getline(text, line)) {
    const std::vector<std::string> fields = csv_fields(line);
    EXPECT_EQ(fields.size(), table.columns.size()) << line;
    auto& row = table.rows.emplace_back();
    for (std::size_t i = 0; i < std::min(fields.size(), table.columns.size()); ++i)
      row[table.columns[i]] = fields[i];
  }
  return table;
}

// docs/design.md's columns (Benchmarks and results), then those added since (always at the end).
const std::vector<std::string> expected_columns = {
    "algorithm", "key_type", "value_type", "distribution", "n", "segment_size", "median_ms",
    "keys_per_s", "extra_device_bytes", "gpu", "commit", "min_ms", "max_ms", "reps", "std_ms",
    "arrays", "l2"};
const std::set<std::string> text_columns = {"algorithm", "key_type", "value_type",
                                            "distribution", "segment_size", "gpu", "commit", "l2"};

double number(const std::map<std::string, std::string>& row, const std::string& column) {
  return std::stod(row.at(column));
}

// The count before " result(s) verified" in bench's output, or -1.
int verified_count(const std::string& out) {
  const std::size_t at = out.find(" result(s) verified");
  if (at == std::string::npos) return -1;
  const std::size_t line = out.rfind('\n', at);
  return std::stoi(out.substr(line == std::string::npos ? 0 : line + 1, at));
}

bool ran_on_a_gpu(const std::string& bench_out) {
  return bench_out.find("no CUDA device") == std::string::npos;
}

// ---- a strict JSON reader: the value tree, or nothing for malformed text -----------------

struct json_value {
  enum class kind { null, boolean, number, string, array, object } type = kind::null;
  double number = 0;
  std::string text;  // a string's characters
  std::vector<json_value> items;
  std::vector<std::pair<std::string, json_value>> members;  // in the file's order
  const json_value* member(const std::string& name) const {
    for (const auto& [key, value] : members)
      if (key == name) return &value;
    return nullptr;
  }
};

class json_reader {
 public:
  static std::optional<json_value> parse(const std::string& text) {
    json_reader r(text);
    json_value v;
    if (!r.value(v)) return std::nullopt;
    r.blanks();
    if (r.at_ != text.size()) return std::nullopt;
    return v;
  }

 private:
  explicit json_reader(const std::string& text) : s_(text) {}

  void blanks() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\n' || s_[at_] == '\t' ||
                               s_[at_] == '\r'))
      ++at_;
  }
  bool take(char c) {
    blanks();
    if (at_ >= s_.size() || s_[at_] != c) return false;
    ++at_;
    return true;
  }
  bool word(const std::string& w) {
    if (s_.compare(at_, w.size(), w) != 0) return false;
    at_ += w.size();
    return true;
  }

  bool value(json_value& v) {
    blanks();
    if (at_ >= s_.size()) return false;
    const char c = s_[at_];
    if (c == '{') return object(v);
    if (c == '[') return array(v);
    if (c == '"') {
      v.type = json_value::kind::string;
      return string(v.text);
    }
    if (word("null")) return true;
    if (word("true") || word("false")) {
      v.type = json_value::kind::boolean;
      return true;
    }
    return number(v);
  }

  bool object(json_value& v) {
    v.type = json_value::kind::object;
    ++at_;
    if (take('}')) return true;
    do {
      std::string key;
      blanks();
      if (at_ >= s_.size() || s_[at_] != '"' || !string(key) || !take(':')) return false;
      json_value member;
      if (!value(member)) return false;
      v.members.emplace_back(std::move(key), std::move(member));
    } while (take(','));
    return take('}');
  }

  bool array(json_value& v) {
    v.type = json_value::kind::array;
    ++at_;
    if (take(']')) return true;
    do {
      if (!value(v.items.emplace_back())) return false;
    } while (take(','));
    return take(']');
  }

  // A string from its opening quote; \uXXXX only for the ASCII characters bench escapes.
  bool string(std::string& out) {
    ++at_;
    while (at_ < s_.size() && s_[at_] != '"') {
      const char c = s_[at_++];
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= s_.size()) return false;
      const char e = s_[at_++];
      const std::string simple = "\"\\/bfnrt", meaning = "\"\\/\b\f\n\r\t";
      if (const std::size_t i = simple.find(e); i != std::string::npos) {
        out += meaning[i];
      } else if (e == 'u' && at_ + 4 <= s_.size()) {
        const int code = std::stoi(s_.substr(at_, 4), nullptr, 16);
        if (code >= 0x80) return false;
        out += static_cast<char>(code);
        at_ += 4;
      } else {
        return false;
      }
    }
    return at_++ < s_.size();
  }

  // JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  bool number(json_value& v) {
    const std::size_t start = at_;
    const auto digits = [&] {
      const std::size_t from = at_;
      while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') ++at_;
      return at_ > from;
    };
    if (at_ < s_.size() && s_[at_] == '-') ++at_;
    if (at_ < s_.size() && s_[at_] == '0')
      ++at_;
    else if (!digits())
      return false;
    if (at_ < s_.size() && s_[at_] == '.' && (++at_, !digits())) return false;
    if (at_ < s_.size() && (s_[at_] == 'e' || s_[at_] == 'E')) {
      ++at_;
      if (at_ < s_.size() && (s_[at_] == '+' || s_[at_] == '-')) ++at_;
      if (!digits()) return false;
    }
    v.type = json_value::kind::number;
    v.number = std::stod(s_.substr(start, at_ - start));
    return true;
  }

  const std::string& s_;
  std::size_t at_ = 0;
};

TEST(JsonReader, AcceptsJsonAndRejectsTheRest) {
  const auto v = json_reader::parse(R"({"a": [1, -2.5e3, "x\"\\\u0001"], "b": {}, "c": null})");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->member("a")->items.size(), 3u);
  EXPECT_EQ(v->member("a")->items[1].number, -2500);
  EXPECT_EQ(v->member("a")->items[2].text, "x\"\\\x01");
  for (const std::string bad : {"{", R"({"a" 1})", "[1,]", "[01]", "[1.]", R"(["a)", "[inf]",
                                "[nan]", "{} {}", "[\"\t\"]"})
    EXPECT_FALSE(json_reader::parse(bad)) << bad;
}

// ---- bench -------------------------------------------------------------------------------

using BenchTool = Tool;

TEST_F(BenchTool, ArraysAddStatisticsColumns) {
  const outcome o =
      run("bench --sizes 1000,2^12 --dists uniform,gaussian --reps 3 --arrays 4 --csv " +
          file("a.csv"));
  ASSERT_EQ(o.code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("median of 3 runs on each of 4 fresh input arrays"), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("std %"), std::string::npos) << o.out;
  const csv_table table = read_csv(file("a.csv"));
  EXPECT_EQ(table.columns, expected_columns);
  std::set<std::string> algorithms;
  for (const auto& row : table.rows) {
    SCOPED_TRACE(row.at("algorithm") + " n=" + row.at("n"));
    algorithms.insert(row.at("algorithm"));
    const double min = number(row, "min_ms"), median = number(row, "median_ms"),
                 max = number(row, "max_ms"), std_dev = number(row, "std_ms");
    EXPECT_LE(min, median);
    EXPECT_LE(median, max);
    EXPECT_GE(std_dev, 0);
    EXPECT_LE(std_dev, max - min + 1e-6);  // 12 runs: the deviation is below the range
    EXPECT_EQ(std_dev > 0, min < max);
    EXPECT_EQ(row.at("reps"), "3");
    EXPECT_EQ(row.at("arrays"), "4");
  }
  EXPECT_TRUE(algorithms.contains("std_sort"));
  EXPECT_TRUE(algorithms.contains("cpu_parallel"));
  EXPECT_GE(table.rows.size(), 12u);  // 2 sizes x 2 distributions x (at least) 3 algorithms
  // Every algorithm verified on every array of every point.
  EXPECT_EQ(verified_count(o.out), static_cast<int>(4 * table.rows.size())) << o.out;
}

TEST_F(BenchTool, OneArrayOneRunHasNoDeviation) {
  const outcome o = run("bench --sizes 2^10 --reps 1 --csv " + file("one.csv"));
  ASSERT_EQ(o.code, 0) << o.out << o.err;
  EXPECT_EQ(o.out.find("fresh input arrays"), std::string::npos) << o.out;
  const csv_table table = read_csv(file("one.csv"));
  ASSERT_FALSE(table.rows.empty());
  for (const auto& row : table.rows) {
    EXPECT_EQ(row.at("std_ms"), "0.000000");
    EXPECT_EQ(row.at("reps"), "1");
    EXPECT_EQ(row.at("arrays"), "1");
    EXPECT_EQ(row.at("min_ms"), row.at("max_ms"));
  }
  EXPECT_EQ(verified_count(o.out), static_cast<int>(table.rows.size())) << o.out;
}

// The l2 column says whether device runs started with a flushed L2 cache: only with a GPU
// (and --flush-l2 on, the default); the host sorts and the CPU backend run warm.
TEST_F(BenchTool, L2ColumnSaysWhetherTheCacheWasFlushed) {
  for (const std::string flag : {"", "--flush-l2 on", "--flush-l2 off"}) {
    SCOPED_TRACE(flag);
    const outcome o = run("bench --sizes 2^10 --reps 1 " + flag + " --csv " + file("l2.csv"));
    ASSERT_EQ(o.code, 0) << o.out << o.err;
    const csv_table table = read_csv(file("l2.csv"));
    ASSERT_FALSE(table.rows.empty());
    const bool flushed = gpusort::detail::gpu_available() && flag != "--flush-l2 off";
    for (const auto& row : table.rows) EXPECT_EQ(row.at("l2"), flushed ? "flushed" : "warm");
  }
}

// The JSON file holds the CSV's rows, numbers as numbers, and the GPU's name escaped.
TEST_F(BenchTool, WritesJson) {
  const std::string gpu_name = R"(lab "A", rack\1)";
  const outcome o = run("bench --sizes 1000,2^12 --dists uniform,sorted --pairs u32 --reps 2 "
                        "--arrays 2 --gpu-name '" + gpu_name + "' --csv " + file("r.csv") +
                        " --json " + file("r.json"));
  ASSERT_EQ(o.code, 0) << o.out << o.err;
  const csv_table table = read_csv(file("r.csv"));
  const std::optional<json_value> json = json_reader::parse(slurp(file("r.json")));
  ASSERT_TRUE(json) << slurp(file("r.json"));
  ASSERT_EQ(json->type, json_value::kind::object);
  ASSERT_TRUE(json->member("gpu") && json->member("commit") && json->member("rows"));
  EXPECT_EQ(json->member("gpu")->text, gpu_name);
  EXPECT_EQ(json->member("commit")->type, json_value::kind::string);
  const std::vector<json_value>& rows = json->member("rows")->items;
  ASSERT_EQ(rows.size(), table.rows.size());
  ASSERT_GE(rows.size(), 12u);  // 2 sizes x 2 distributions x (at least) 3 algorithms
  for (std::size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE("row " + std::to_string(i));
    ASSERT_EQ(rows[i].type, json_value::kind::object);
    std::vector<std::string> keys;
    for (const auto& [key, value] : rows[i].members) {
      keys.push_back(key);
      const std::string& field = table.rows[i].at(key);
      if (text_columns.contains(key)) {
        EXPECT_EQ(value.type, json_value::kind::string) << key;
        EXPECT_EQ(value.text, field) << key;
      } else {
        EXPECT_EQ(value.type, json_value::kind::number) << key;
        EXPECT_NEAR(value.number, std::stod(field), 1e-9 * std::abs(std::stod(field))) << key;
      }
    }
    EXPECT_EQ(keys, expected_columns);
  }
  EXPECT_EQ(listing(), (std::vector<std::string>{"r.csv", "r.json"}));  // no temporary file
}

TEST_F(BenchTool, CpuParallelSortsKeysPairsAndSegments) {
  for (const std::string pairs : {"", " --pairs u32"}) {
    const outcome o = run("bench --sizes 1000,2^12 --types u32,f64 --reps 2" + pairs +
                          " --csv " + file("p.csv"));
    ASSERT_EQ(o.code, 0) << o.out << o.err;
    const std::string threads = field(o.out, "cpu_parallel: GCC's parallel mode sort on ");
    EXPECT_GE(std::atoi(threads.c_str()), 1) << o.out;
    int rows = 0;
    for (const auto& row : read_csv(file("p.csv")).rows)
      rows += row.at("algorithm") == "cpu_parallel" &&
              row.at("value_type") == (pairs.empty() ? "none" : "u32");
    EXPECT_EQ(rows, 4) << pairs;  // 2 key types x 2 sizes, each verified (else exit code 1)
  }
  const outcome segments = run("bench --sizes 2^12 --segments 32,powerlaw --pairs u32 --reps 2 "
                               "--algos cpu_parallel,std_sort --csv " + file("s.csv"));
  ASSERT_EQ(segments.code, 0) << segments.out << segments.err;
  std::set<std::string> layouts;
  for (const auto& row : read_csv(file("s.csv")).rows)
    if (row.at("algorithm") == "cpu_parallel") layouts.insert(row.at("segment_size"));
  EXPECT_EQ(layouts, (std::set<std::string>{"32", "powerlaw"}));
}

TEST_F(BenchTool, OutputProblemsFailBeforeTiming) {
  expect_usage_errors({{"bench --arrays 0", "--arrays"},
                       {"bench --arrays many", "many"},
                       {"bench --algos bogosort --json " + file("r.json"), "bogosort"},
                       {"bench --flush-l2 maybe", "--flush-l2"},
                       {"bench --types rec16 --segments 32", "rec16"}});
  // An output that cannot be created fails as gen's does, before anything is timed.
  const int unwritable_code = run("gen --type u32 --n 8 " + file("missing/keys")).code;
  EXPECT_NE(unwritable_code, 0);
  std::ofstream(file("plain")) << "a file, not a directory\n";
  const std::string unwritable[] = {"--json " + file("missing/r.json"),
                                    "--csv " + file("missing/r.csv"), "--plot " + file("plain")};
  for (const std::string& output : unwritable) {
    SCOPED_TRACE(output);
    const outcome o = run("bench --sizes 1000 --reps 1 " + output);
    EXPECT_EQ(o.code, unwritable_code);
    EXPECT_EQ(std::ranges::count(o.err, '\n'), 1) << o.err;
    EXPECT_EQ(o.out.find("verified"), std::string::npos) << o.out;
  }
  EXPECT_EQ(listing(), std::vector<std::string>{"plain"});
}

TEST_F(BenchTool, PlotsItsCsv) {
  const outcome o = run("bench --sizes 2^10..2^12 --reps 1 --plot " + file("figures"));
  ASSERT_EQ(o.code, 0) << o.out << o.err;
  const csv_table table = read_csv(file("figures/bench.csv"));
  EXPECT_EQ(table.columns, expected_columns);
  EXPECT_FALSE(table.rows.empty());
  // The figures need matplotlib in the plotter's Python (CI installs python3-matplotlib).
  if (o.err.find("matplotlib is not available") != std::string::npos)
    GTEST_SKIP() << "no matplotlib: " << o.err;
  std::istringstream lines(o.out);
  int figures = 0;
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("figure: ")) continue;
    ++figures;
    EXPECT_TRUE(slurp(line.substr(8)).starts_with("\x89PNG")) << line;
  }
  EXPECT_GE(figures, 1) << o.out;
}

TEST_F(BenchTool, HelpNamesTheNewOptions) {
  const std::string bench = run("bench --help").out;
  for (const std::string option :
       {"--arrays", "--json", "--plot", "cpu_parallel", "std_ms", "--flush-l2", "rec16"})
    EXPECT_NE(bench.find(option), std::string::npos) << option;
  EXPECT_NE(run("largest --help").out.find("--all"), std::string::npos);
}

// ---- largest --all -----------------------------------------------------------------------

TEST_F(BenchTool, LargestAllListsEveryAlgorithmOrNeedsAGpu) {
  expect_usage_errors({{"largest --all --n 2^20", "--all"},
                       {"largest --all --algo bitonic", "--all"},
                       {"largest --type u64", "--all"},
                       {"largest --pairs u32", "--all"},
                       {"largest --all --type u8", "u8"},
                       {"largest --all --pairs u64", "u64"},
                       {"largest --all=yes", "--all"}});
  const bool gpu = ran_on_a_gpu(run("bench --sizes 8 --reps 1 --algos std_sort").out);
  const outcome o = run("largest --all --type u32 --pairs u32");
  if (!gpu) {
    EXPECT_EQ(o.code, 2);
    EXPECT_EQ(o.err, "gpusort largest: needs a CUDA device\n");
    EXPECT_TRUE(o.out.empty()) << o.out;
    return;
  }
  ASSERT_EQ(o.code, 0) << o.out << o.err;
  for (const std::string algorithm : {"bitonic", "cub_radix", "cub_merge", "thrust",
                                      "sample_sort", "adaptive_bitonic", "classic_bitonic"})
    EXPECT_NE(o.out.find("\n" + algorithm + " "), std::string::npos) << algorithm << o.out;
  EXPECT_NE(o.out.find("keys only"), std::string::npos) << o.out;  // classic_bitonic
}

}  // namespace
