// The gpusort command-line tool end to end: gen -> sort -> check round trips on files, and
// the errors with their exit codes. It runs the built binary, which sorts on the CPU where
// there is no GPU. Also bench's segment layouts (--segments), tested directly.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "common/segments.hpp"

#include "cpu/tool_fixture.hpp"

namespace {

using namespace gpusort_test_tool;

TEST_F(Tool, RoundTripsEveryKeyType) {
  for (const char* type : {"u32", "i32", "f32", "u64", "i64", "f64"}) {
    for (const char* dist : {"uniform", "few_unique", "organ_pipe"}) {
      SCOPED_TRACE(::testing::Message() << type << " " << dist);
      const std::string t = std::string(" --type ") + type + " ";
      ASSERT_EQ(run("gen" + t + "--n 4099 --seed 7 --dist " + dist + " " + file("in")).code, 0);
      EXPECT_EQ(fs::file_size(file("in")), 4099u * (type[1] == '3' ? 4 : 8));
      EXPECT_EQ(run("check" + t + file("in")).code, 1);
      const outcome sorted = run("sort" + t + file("in") + " " + file("out"));
      ASSERT_EQ(sorted.code, 0) << sorted.err;
      const outcome checked = run("check" + t + file("out"));
      EXPECT_EQ(checked.code, 0) << checked.out;
      EXPECT_EQ(field(checked.out, "sorted (ascending): "), "yes");
      EXPECT_EQ(field(checked.out, "out of order: "), "0");
      EXPECT_EQ(checksum(t + file("in")), field(checked.out, "checksum: "));
      EXPECT_FALSE(field(checked.out, "checksum: ").empty());
    }
  }
  // The tool's verdict against an independent sort.
  ASSERT_EQ(run("gen --type u32 --n 2^12 " + file("in")).code, 0);
  ASSERT_EQ(run("sort --type u32 " + file("in") + " " + file("out")).code, 0);
  std::vector<std::uint32_t> in = read_array<std::uint32_t>(file("in"));
  std::ranges::sort(in);
  EXPECT_EQ(read_array<std::uint32_t>(file("out")), in);
}

TEST_F(Tool, SizesAcceptPowersOfTwo) {
  ASSERT_EQ(run("gen --type u32 --n 2^10 " + file("a")).code, 0);
  EXPECT_EQ(fs::file_size(file("a")), 4096u);
  ASSERT_EQ(run("gen --type u64 --n 2^10+1 " + file("b")).code, 0);
  EXPECT_EQ(fs::file_size(file("b")), 8200u);
  ASSERT_EQ(run("gen --type i32 --n 2^4-1 " + file("c")).code, 0);
  EXPECT_EQ(fs::file_size(file("c")), 60u);
  ASSERT_EQ(run("gen --type i32 --n 0 " + file("d")).code, 0);
  EXPECT_EQ(fs::file_size(file("d")), 0u);
  EXPECT_EQ(run("check --type i32 " + file("d")).code, 0);
}

TEST_F(Tool, PairsKeepTheirValues) {
  const std::string p = " --type u64 --pairs u32 ";
  ASSERT_EQ(run("gen" + p + "--n 5000 --dist few_unique " + file("in")).code, 0);
  ASSERT_EQ(fs::file_size(file("in")), 5000u * 12);
  ASSERT_EQ(run("sort" + p + file("in") + " " + file("out")).code, 0);
  EXPECT_EQ(run("check" + p + file("out")).code, 0);
  EXPECT_EQ(checksum(p + file("in")), checksum(p + file("out")));
  // Records are packed (12 bytes): the value is the key's index in the input.
  const std::string in = slurp(file("in")), out = slurp(file("out"));
  ASSERT_EQ(in.size(), out.size());
  std::vector<bool> seen(5000);
  for (std::size_t r = 0; r < 5000; ++r) {
    std::uint64_t key, original_key;
    std::uint32_t index;
    std::memcpy(&key, out.data() + r * 12, 8);
    std::memcpy(&index, out.data() + r * 12 + 8, 4);
    ASSERT_LT(index, 5000u);
    ASSERT_FALSE(seen[index]) << "index " << index << " twice";
    seen[index] = true;
    std::memcpy(&original_key, in.data() + index * 12, 8);
    ASSERT_EQ(key, original_key) << "record " << r;
  }
}

TEST_F(Tool, TextFiles) {
  ASSERT_EQ(run("gen --type f32 --n 1000 --seed 3 --text " + file("in.txt")).code, 0);
  const std::string text = slurp(file("in.txt"));
  EXPECT_EQ(std::ranges::count(text, '\n'), 1000);
  ASSERT_EQ(run("sort --type f32 --text " + file("in.txt") + " " + file("out.txt")).code, 0);
  EXPECT_EQ(run("check --type f32 --text " + file("out.txt")).code, 0);
  // Text holds floats exactly: it checksums like the binary file of the same seed.
  ASSERT_EQ(run("gen --type f32 --n 1000 --seed 3 " + file("in.bin")).code, 0);
  EXPECT_EQ(checksum("--type f32 --text " + file("out.txt")),
            checksum("--type f32 " + file("in.bin")));

  ASSERT_EQ(run("gen --type i64 --pairs u32 --n 300 --text " + file("pairs.txt")).code, 0);
  const std::string pairs = slurp(file("pairs.txt"));
  EXPECT_EQ(std::count(pairs.begin(), pairs.begin() + pairs.find('\n'), ' '), 1) << "key value";
  const std::string p = " --type i64 --pairs u32 --text ";
  ASSERT_EQ(run("sort" + p + "--desc " + file("pairs.txt") + " " + file("sorted.txt")).code, 0);
  EXPECT_EQ(run("check" + p + "--desc " + file("sorted.txt")).code, 0);
  EXPECT_EQ(checksum(p + file("pairs.txt")), checksum(p + file("sorted.txt")));

  std::ofstream(file("bad.txt")) << "1\n2\nthree\n";
  const outcome bad = run("sort --type u32 --text " + file("bad.txt") + " " + file("x"));
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("bad.txt:3"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(file("x")));
}

TEST_F(Tool, DescendingAndEveryAlgorithm) {
  ASSERT_EQ(run("gen --type i32 --n 3001 --dist gaussian " + file("in")).code, 0);
  for (const char* algo :
       {"automatic", "bitonic", "cub_radix", "cub_merge", "thrust", "adaptive_bitonic"}) {
    SCOPED_TRACE(algo);
    const outcome sorted = run(std::string("sort --type i32 --desc --algo ") + algo + " " +
                               file("in") + " " + file("out"));
    ASSERT_EQ(sorted.code, 0) << sorted.err;
    EXPECT_EQ(run("check --type i32 --desc " + file("out")).code, 0);
    EXPECT_EQ(run("check --type i32 " + file("out")).code, 1);
    EXPECT_EQ(checksum("--type i32 " + file("in")), checksum("--type i32 " + file("out")));
  }
}

TEST_F(Tool, OutputMayReplaceTheInput) {
  ASSERT_EQ(run("gen --type f64 --n 777 " + file("data")).code, 0);
  const std::string before = checksum("--type f64 " + file("data"));
  ASSERT_EQ(run("sort --type f64 " + file("data") + " " + file("data")).code, 0);
  EXPECT_EQ(run("check --type f64 " + file("data")).code, 0);
  EXPECT_EQ(checksum("--type f64 " + file("data")), before);
  EXPECT_EQ(listing(), std::vector<std::string>{"data"});
}

TEST_F(Tool, CheckFindsDisorderAndChecksumsIgnoreOrder) {
  write_array<std::uint32_t>(file("a"), {1, 2, 5, 3, 4, 0});
  const outcome o = run("check --type u32 " + file("a"));
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(field(o.out, "sorted (ascending): "), "no");
  EXPECT_EQ(field(o.out, "first out of order: "), "3");
  EXPECT_EQ(field(o.out, "out of order: "), "2");
  EXPECT_EQ(field(o.out, "records: ").substr(0, 2), "6 ");
  write_array<std::uint32_t>(file("b"), {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(run("check --type u32 " + file("b")).code, 0);
  EXPECT_EQ(checksum("--type u32 " + file("a")), checksum("--type u32 " + file("b")));
  write_array<std::uint32_t>(file("c"), {0, 1, 2, 3, 4, 6});
  EXPECT_NE(checksum("--type u32 " + file("a")), checksum("--type u32 " + file("c")));
  write_array<std::uint32_t>(file("d"), {0, 1, 2, 3, 4, 4, 5});
  EXPECT_NE(checksum("--type u32 " + file("b")), checksum("--type u32 " + file("d")));
}

TEST_F(Tool, FloatsFollowTheTotalOrder) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  write_array<float>(file("sorted"), {-1.0f, -0.0f, 0.0f, 2.0f, nan, -nan});
  EXPECT_EQ(run("check --type f32 " + file("sorted")).code, 0);
  write_array<float>(file("zeros"), {0.0f, -0.0f});
  EXPECT_EQ(run("check --type f32 " + file("zeros")).code, 1);
  write_array<float>(file("nan_first"), {nan, 1.0f});
  EXPECT_EQ(run("check --type f32 " + file("nan_first")).code, 1);
}

TEST_F(Tool, BadInputFailsWithoutTouchingFiles) {
  // 10 bytes are not whole u32 records; 24 bytes are not whole 12-byte (u64, u32) records.
  std::ofstream(file("in"), std::ios::binary) << "0123456789";
  std::ofstream(file("out"), std::ios::binary) << "previous";
  for (const std::string& args :
       {"sort --type u32 " + file("in") + " " + file("out"),
        "sort --type u64 --pairs u32 " + file("in") + " " + file("out")}) {
    SCOPED_TRACE(args);
    const outcome o = run(args);
    EXPECT_EQ(o.code, 2);
    EXPECT_EQ(std::ranges::count(o.err, '\n'), 1) << o.err;
    EXPECT_NE(o.err.find("10 bytes"), std::string::npos) << o.err;
  }
  EXPECT_EQ(slurp(file("in")), "0123456789");
  EXPECT_EQ(slurp(file("out")), "previous");
  const outcome new_out = run("sort --type u32 " + file("in") + " " + file("new"));
  EXPECT_EQ(new_out.code, 2);
  EXPECT_EQ(run("check --type u32 " + file("in")).code, 2);
  EXPECT_EQ(listing(), (std::vector<std::string>{"in", "out"}));

  const outcome missing = run("sort --type u32 " + file("nothing") + " " + file("new"));
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("nothing: no such file"), std::string::npos) << missing.err;
  EXPECT_EQ(run("check --type u32 " + file("nothing")).code, 2);
  EXPECT_EQ(listing(), (std::vector<std::string>{"in", "out"}));
}

TEST_F(Tool, UsageErrorsNameTheProblem) {
  ASSERT_EQ(run("gen --type u32 --n 8 " + file("in")).code, 0);
  const std::pair<std::string, std::string> cases[] = {
      {"sort --type u16 " + file("in") + " " + file("out"), "u16"},
      {"sort --type u32 --algo quick " + file("in") + " " + file("out"), "quick"},
      {"sort --type u32 --algo top_k " + file("in") + " " + file("out"), "top_k"},
      {"sort --type u32 --pairs u64 " + file("in") + " " + file("out"), "u64"},
      {"sort --type u32 --frobnicate " + file("in") + " " + file("out"), "--frobnicate"},
      {"sort --type u32 " + file("in"), "IN and OUT"},
      {"sort " + file("in") + " " + file("out"), "--type"},
      {"sort --type u32 --desc=yes " + file("in") + " " + file("out"), "--desc"},
      {"gen --type u32 --n lots " + file("out"), "lots"},
      {"gen --type u32 --n 2^64 " + file("out"), "2^64"},
      {"gen --type u32 --n 8 --dist bumpy " + file("out"), "bumpy"},
      {"gen --type u32 --n", "--n"},
      {"bench --sizes 2^20..2^10", "2^20..2^10"},
      {"bench --algos bogosort", "bogosort"},
      {"bench --types u8", "u8"},
      {"bench --dists spiky", "spiky"},
      {"bench --segments 0", "--segments"},
      {"bench --segments 32,lognormal", "lognormal"},
      {"bench --segments 2^12..2^10", "2^12..2^10"},
      {"bench --segments 32 --algos cub_radix", "cub_radix"},
      {"bench --algos sort_segmented", "--segments"},
      {"bench --segments 32 --algos approx", "approx"},
      {"bench --intervals 2^25", "--intervals"},
      {"bench --k 0", "--k"},
      {"frobnicate", "frobnicate"},
  };
  for (const auto& [args, named] : cases) {
    SCOPED_TRACE(args);
    const outcome o = run(args);
    EXPECT_EQ(o.code, 2);
    EXPECT_EQ(std::ranges::count(o.err, '\n'), 1) << o.err;
    EXPECT_NE(o.err.find(named), std::string::npos) << o.err;
  }
  EXPECT_EQ(run("").code, 2);
  EXPECT_FALSE(fs::exists(file("out")));
}

TEST_F(Tool, HelpOnEveryCommand) {
  EXPECT_EQ(run("--help").code, 0);
  for (const std::string command : {"gen", "sort", "check", "bench", "demo", "comparisons"}) {
    const outcome o = run(command + " --help");
    EXPECT_EQ(o.code, 0) << command;
    EXPECT_TRUE(o.out.starts_with("usage: gpusort " + command)) << o.out;
  }
}

// The plain adaptive bitonic sort of 2^10 keys: sum over j of (n / 2^j)(2^(j+1) - j - 2)
// comparisons, against the network's n L (L + 1) / 4 = 28160.
TEST_F(Tool, ComparisonsCountsTheAdaptiveSort) {
  const outcome o = run("comparisons --sizes 2^10");
  ASSERT_EQ(o.code, 0) << o.err;
  std::uint64_t plain = 0;
  for (int j = 1; j <= 10; ++j) plain += (1024u >> j) * ((2u << j) - j - 2);
  EXPECT_NE(o.out.find(" " + std::to_string(plain) + " "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find(" 28160 "), std::string::npos) << o.out;
  EXPECT_EQ(run("comparisons --sizes 2^10 --bogus 1").code, 2);
}

TEST_F(Tool, BenchWritesCsvAndDemoVerifies) {
  const outcome bench =
      run("bench --sizes 2^10,1000 --dists uniform,sorted --reps 2 --csv " + file("r.csv"));
  ASSERT_EQ(bench.code, 0) << bench.out << bench.err;
  EXPECT_NE(bench.out.find("verified"), std::string::npos) << bench.out;
  std::istringstream csv(slurp(file("r.csv")));
  std::string line;
  std::getline(csv, line);
  EXPECT_TRUE(
      line.starts_with("algorithm,key_type,value_type,distribution,n,segment_size,"
                       "median_ms,keys_per_s,extra_device_bytes,gpu,commit"))
      << line;
  int rows = 0;
  for (; std::getline(csv, line); ++rows) {
    EXPECT_EQ(std::ranges::count(line, ','), 13) << line;
    EXPECT_NE(line.find(",u32,none,"), std::string::npos) << line;
  }
  EXPECT_GE(rows, 8);  // 2 sizes x 2 distributions x (at least) 2 algorithms

  const outcome demo = run("demo --n 2^12");
  EXPECT_EQ(demo.code, 0) << demo.out << demo.err;
  EXPECT_NE(demo.out.find("std_sort"), std::string::npos) << demo.out;
}

TEST_F(Tool, BenchTimesSegments) {
  const outcome bench = run("bench --sizes 1000,2^12 --segments 32,2^8,powerlaw --pairs u32 "
                            "--reps 2 --csv " + file("s.csv"));
  ASSERT_EQ(bench.code, 0) << bench.out << bench.err;
  EXPECT_NE(bench.out.find("verified"), std::string::npos) << bench.out;
  std::istringstream csv(slurp(file("s.csv")));
  std::string line;
  std::getline(csv, line);
  const std::set<std::string> layouts{"32", "256", "powerlaw"};
  const std::set<std::string> algorithms{"sort_segmented", "cub_segmented_radix",
                                         "cub_segmented_sort", "std_sort"};
  std::set<std::string> seen_layouts;
  int rows = 0;
  for (; std::getline(csv, line); ++rows) {
    ASSERT_EQ(std::ranges::count(line, ','), 13) << line;
    std::istringstream fields(line);
    std::string algorithm, key, value, dist, n, segment_size;
    for (std::string* f : {&algorithm, &key, &value, &dist, &n, &segment_size})
      std::getline(fields, *f, ',');
    EXPECT_TRUE(algorithms.contains(algorithm)) << line;
    EXPECT_EQ(key + "," + value, "u32,u32") << line;
    EXPECT_TRUE(layouts.contains(segment_size)) << line;
    seen_layouts.insert(segment_size);
  }
  EXPECT_EQ(seen_layouts, layouts);
  EXPECT_GE(rows, 12);  // 2 sizes x 3 layouts x (at least) 2 algorithms
}

// approx, approx_sampled and top_k: timed and verified on a GPU, skipped without one.
TEST_F(Tool, BenchApproximateMethods) {
  const outcome bench = run("bench --sizes 1000,2^12 --dists uniform,gaussian --pairs u32 "
                            "--reps 2 --algos approx,approx_sampled,top_k,std_sort "
                            "--intervals 64 --k 2000 --csv " + file("a.csv"));
  ASSERT_EQ(bench.code, 0) << bench.out << bench.err;
  EXPECT_NE(bench.out.find("verified"), std::string::npos) << bench.out;
  const bool gpu = bench.out.find("no CUDA device") == std::string::npos;
  std::istringstream csv(slurp(file("a.csv")));
  std::string line;
  std::getline(csv, line);
  std::set<std::string> timed;
  for (; std::getline(csv, line);) {
    ASSERT_EQ(std::ranges::count(line, ','), 13) << line;
    timed.insert(line.substr(0, line.find(',')));
  }
  if (gpu) {
    EXPECT_EQ(timed, (std::set<std::string>{"approx", "approx_sampled", "top_k", "std_sort"}));
  } else {
    EXPECT_EQ(timed, std::set<std::string>{"std_sort"});
    EXPECT_NE(bench.out.find("skipping top_k: needs a CUDA device"), std::string::npos)
        << bench.out;
  }
}

// ---- bench's segment layouts, without the tool ----------------------------------------

using gpusort::tools::parse_segments;
using gpusort::tools::powerlaw_segment_sizes;
using gpusort::tools::segment_offsets;
using gpusort::tools::segment_spec;

TEST(BenchSegments, ParsesSizesRangesAndPowerlaw) {
  const std::vector<segment_spec> specs = parse_segments("32,2^8,powerlaw,2^10..2^12,2^4+1");
  const std::vector<segment_spec> expected{{.size = 32},   {.size = 256},  {.powerlaw = true},
                                           {.size = 1024}, {.size = 2048}, {.size = 4096},
                                           {.size = 17}};
  EXPECT_EQ(specs, expected);
  EXPECT_EQ(specs[0].name(), "32");  // as the CSV's segment_size column holds it
  EXPECT_EQ(specs[2].name(), "powerlaw");
  for (const char* bad : {"", "0", "32,,64", "lognormal", "Powerlaw", "-5", "3x", "2^70",
                          "2^12..2^10", "2^8..100", "32,"})
    EXPECT_THROW(parse_segments(bad), gpusort::tools::usage_error) << "'" << bad << "'";
}

TEST(BenchSegments, PowerlawSizesAddUpAndRepeat) {
  for (std::uint64_t n : {0ull, 1ull, 40ull, 1000ull, (1ull << 20) + 3}) {
    SCOPED_TRACE(n);
    const std::vector<std::uint64_t> sizes = powerlaw_segment_sizes(n, 7);
    EXPECT_EQ(std::accumulate(sizes.begin(), sizes.end(), std::uint64_t{0}), n);
    EXPECT_EQ(sizes, powerlaw_segment_sizes(n, 7));
    if (n > 0) {
      EXPECT_GT(sizes.back(), 0u);  // the cut one holds what was left: never nothing
    }
  }
  EXPECT_NE(powerlaw_segment_sizes(1 << 16, 7), powerlaw_segment_sizes(1 << 16, 8));

  // Lognormal(3, 1.2) has mean e^(3 + 1.2^2 / 2) = 41.3; the last size, cut, is left out.
  const std::vector<std::uint64_t> sizes = powerlaw_segment_sizes(1 << 22, 1);
  const double mean = std::accumulate(sizes.begin(), sizes.end() - 1, 0.0) /
                      static_cast<double>(sizes.size() - 1);
  EXPECT_NEAR(mean, std::exp(3 + 1.2 * 1.2 / 2), 1.5);
  // A long tail both ways: some segments are empty, some hold thousands of keys.
  EXPECT_TRUE(std::ranges::find(sizes, 0u) != sizes.end());
  EXPECT_GT(std::ranges::max(sizes), 1000u);
}

TEST(BenchSegments, OffsetsCoverEveryKey) {
  EXPECT_EQ(segment_offsets({.size = 256}, 1000, 1),
            (std::vector<std::uint64_t>{0, 256, 512, 768, 1000}));
  EXPECT_EQ(segment_offsets({.size = 250}, 1000, 1),
            (std::vector<std::uint64_t>{0, 250, 500, 750, 1000}));
  EXPECT_EQ(segment_offsets({.size = 4096}, 1000, 1), (std::vector<std::uint64_t>{0, 1000}));
  EXPECT_EQ(segment_offsets({.size = 32}, 0, 1), std::vector<std::uint64_t>{0});
  const std::vector<std::uint64_t> powerlaw = segment_offsets({.powerlaw = true}, 5000, 3);
  EXPECT_EQ(powerlaw.front(), 0u);
  EXPECT_EQ(powerlaw.back(), 5000u);
  EXPECT_TRUE(std::ranges::is_sorted(powerlaw));
  EXPECT_EQ(powerlaw.size(), powerlaw_segment_sizes(5000, 3).size() + 1);
}

}  // namespace
