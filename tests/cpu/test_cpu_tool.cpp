// The gpusort command-line tool end to end: gen -> sort -> check round trips on files, every
// distribution gen makes, and the errors with their exit codes. It runs the built binary,
// which sorts on the CPU where there is no GPU. Also the progress line (progress.hpp) and
// bench's segment layouts (--segments), tested directly.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli.hpp"
#include "common/distributions.hpp"
#include "common/segments.hpp"
#include "progress.hpp"
#include "records.hpp"

#include "cpu/tool_fixture.hpp"

namespace {

using namespace gpusort_test_tool;

const char* const key_type_names[] = {"u32", "i32", "f32", "u64", "i64", "f64"};

std::size_t key_bytes(const std::string& type) { return type.ends_with("32") ? 4 : 8; }

// Commas in a row of bench's CSV: 17 columns (test_cpu_bench.cpp checks their names).
constexpr long bench_csv_commas = 16;

TEST_F(Tool, RoundTripsEveryKeyType) {
  for (const char* type : key_type_names) {
    for (const char* dist : {"uniform", "few_unique", "organ_pipe"}) {
      SCOPED_TRACE(::testing::Message() << type << " " << dist);
      const std::string t = std::string(" --type ") + type + " ";
      ASSERT_EQ(run("gen" + t + "--n 4099 --seed 7 --dist " + dist + " " + file("in")).code, 0);
      EXPECT_EQ(fs::file_size(file("in")), 4099u * key_bytes(type));
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

// Every distribution of every key type: the same seed gives the same keys (run after run,
// keys alone or in pairs), pairs carry their index as value, text holds the same records
// (floats exactly), and the text pairs sort. Sorting the keys alone: RoundTripsEveryKeyType.
TEST_F(Tool, GenMakesEveryDistribution) {
  constexpr std::size_t n = 1000;
  for (const char* type : key_type_names) {
    for (const gpusort::tools::distribution dist : gpusort::tools::all_distributions) {
      const std::string name(gpusort::tools::to_string(dist));
      SCOPED_TRACE(::testing::Message() << type << " " << name);
      const std::string t = std::string(" --type ") + type + " ";
      const std::string g = "gen" + t + "--n 1000 --seed 5 --dist " + name + " ";
      const std::string p = t + "--pairs u32 ";
      ASSERT_EQ(run(g + file("keys")).code, 0);
      ASSERT_EQ(run(g + "--pairs u32 " + file("pairs")).code, 0);
      ASSERT_EQ(run(g + "--pairs u32 --text " + file("pairs.txt")).code, 0);
      const std::string keys = slurp(file("keys"));
      ASSERT_EQ(keys.size(), n * key_bytes(type));

      const std::string pairs = slurp(file("pairs"));
      const std::size_t record = key_bytes(type) + 4;
      ASSERT_EQ(pairs.size(), n * record);
      for (std::size_t i = 0; i < n; ++i) {
        std::uint32_t value;
        std::memcpy(&value, pairs.data() + i * record + key_bytes(type), 4);
        ASSERT_EQ(value, i);
        ASSERT_EQ(pairs.compare(i * record, key_bytes(type), keys, i * key_bytes(type),
                                key_bytes(type)),
                  0)
            << "key " << i;
      }
      const std::string pairs_sum = checksum(p + file("pairs"));
      EXPECT_FALSE(pairs_sum.empty());
      EXPECT_EQ(checksum(p + "--text " + file("pairs.txt")), pairs_sum);

      ASSERT_EQ(run("sort" + p + "--text " + file("pairs.txt") + " " + file("sorted.txt")).code, 0);
      const outcome sorted = run("check" + p + "--text " + file("sorted.txt"));
      EXPECT_EQ(sorted.code, 0) << sorted.out;
      EXPECT_EQ(field(sorted.out, "checksum: "), pairs_sum);
    }
  }
  EXPECT_EQ(listing(), (std::vector<std::string>{"keys", "pairs", "pairs.txt", "sorted.txt"}));
}

TEST_F(Tool, GenSeedsGiveDifferentFiles) {
  for (const gpusort::tools::distribution dist : gpusort::tools::all_distributions) {
    if (dist == gpusort::tools::distribution::all_equal) continue;
    const std::string name(gpusort::tools::to_string(dist));
    SCOPED_TRACE(name);
    ASSERT_EQ(run("gen --type u64 --n 500 --seed 1 --dist " + name + " " + file("a")).code, 0);
    ASSERT_EQ(run("gen --type u64 --n 500 --seed 2 --dist " + name + " " + file("b")).code, 0);
    EXPECT_NE(slurp(file("a")), slurp(file("b")));
  }
}

// Fraction of the bits set in the u64 keys of `path`.
double set_bit_fraction(const std::string& path) {
  const std::vector<std::uint64_t> keys = read_array<std::uint64_t>(path);
  std::uint64_t set = 0;
  for (const std::uint64_t key : keys) set += std::popcount(key);
  return static_cast<double>(set) / (64.0 * static_cast<double>(keys.size()));
}

// reduced_entropy ANDs --and K more random words into each key: a bit is set with
// probability 2^-(K+1). Without more ANDs its integers are uniform's.
TEST_F(Tool, GenReducedEntropyAndsRandomWords) {
  const std::string g = "gen --type u64 --n 2^14 --dist reduced_entropy ";
  for (int ands = 0; ands <= 8; ++ands) {
    SCOPED_TRACE(ands);
    ASSERT_EQ(run(g + "--and " + std::to_string(ands) + " " + file("k")).code, 0);
    const double expected = std::ldexp(1.0, -(ands + 1));
    EXPECT_NEAR(set_bit_fraction(file("k")), expected, 0.05 * expected + 1e-4);
  }
  ASSERT_EQ(run(g + file("default")).code, 0);
  ASSERT_EQ(run(g + "--and 2 " + file("two")).code, 0);
  EXPECT_EQ(slurp(file("default")), slurp(file("two")));
  ASSERT_EQ(run(g + "--and 0 " + file("none")).code, 0);
  ASSERT_EQ(run("gen --type u64 --n 2^14 --dist uniform " + file("uniform")).code, 0);
  EXPECT_EQ(slurp(file("none")), slurp(file("uniform")));
}

// Floats take the AND-ed bits too, but stay finite: |key| < 2, some subnormal.
template <class F>
void expect_finite_reduced_entropy(const std::string& path, int ands) {
  const std::vector<F> keys = read_array<F>(path);
  ASSERT_EQ(keys.size(), 1u << 14);
  std::size_t negative = 0, subnormal = 0, zero = 0;
  for (const F key : keys) {
    ASSERT_TRUE(std::isfinite(key)) << key;
    ASSERT_LT(std::fabs(key), F(2)) << key;
    negative += std::signbit(key);
    subnormal += std::fpclassify(key) == FP_SUBNORMAL;
    zero += key == 0;
  }
  // The sign bit is set in 2^-(ands+1) of the keys; with more ANDs the exponent is mostly 0,
  // and then the mantissa too.
  EXPECT_NEAR(static_cast<double>(negative) / keys.size(), std::ldexp(1.0, -(ands + 1)), 0.03);
  if (ands == 2) {
    EXPECT_GT(subnormal, keys.size() / 5);
  }
  if (ands == 8) {
    EXPECT_GT(zero, keys.size() / 2);
  }
}

TEST_F(Tool, GenReducedEntropyFloatsAreFinite) {
  for (int ands : {0, 2, 8}) {
    SCOPED_TRACE(ands);
    const std::string g = "gen --n 2^14 --dist reduced_entropy --and " + std::to_string(ands);
    ASSERT_EQ(run(g + " --type f32 " + file("f32")).code, 0);
    ASSERT_EQ(run(g + " --type f64 " + file("f64")).code, 0);
    expect_finite_reduced_entropy<float>(file("f32"), ands);
    expect_finite_reduced_entropy<double>(file("f64"), ands);
  }
}

// Continuous Zipf over ranks 1..2^20 with exponent s: the smallest key (rank 1) takes
// (1 - 2^(1-s)) / (1 - 2^(20(1-s))) of the keys, ln 2 / ln 2^20 for s = 1.
TEST_F(Tool, GenZipfTakesItsExponent) {
  const auto zero_fraction = [&](const std::string& exponent) {
    const std::string option = exponent.empty() ? "" : "--zipf " + exponent + " ";
    EXPECT_EQ(run("gen --type u32 --n 2^16 --dist zipf " + option + file("z")).code, 0);
    const std::vector<std::uint32_t> keys = read_array<std::uint32_t>(file("z"));
    return static_cast<double>(std::ranges::count(keys, 0u)) / static_cast<double>(keys.size());
  };
  EXPECT_NEAR(zero_fraction("2"), 0.5, 0.02);
  EXPECT_NEAR(zero_fraction("1.5"), (1 - std::pow(2, -0.5)) / (1 - std::pow(2, -10)), 0.02);
  EXPECT_NEAR(zero_fraction("1"), std::log(2) / std::log(1 << 20), 0.01);
  EXPECT_NEAR(zero_fraction(""), std::log(2) / std::log(1 << 20), 0.01);
  EXPECT_LT(zero_fraction("0.5"), 0.002);
}

// The mean of four uniforms over [-1e6, 1e6): mean 0, deviation 2e6 / sqrt(12 * 4).
TEST_F(Tool, GenGaussianIsTheMeanOfFourUniforms) {
  ASSERT_EQ(run("gen --type f64 --n 2^16 --dist gaussian " + file("g")).code, 0);
  const std::vector<double> keys = read_array<double>(file("g"));
  ASSERT_EQ(keys.size(), 1u << 16);
  const double mean = std::accumulate(keys.begin(), keys.end(), 0.0) / keys.size();
  double squares = 0;
  for (const double key : keys) squares += (key - mean) * (key - mean);
  EXPECT_NEAR(mean, 0, 5e3);
  EXPECT_NEAR(std::sqrt(squares / keys.size()), 2e6 / std::sqrt(48.0), 5e3);
  EXPECT_TRUE(std::ranges::all_of(keys, [](double k) { return k >= -1e6 && k < 1e6; }));
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

// sort -u of typed keys (issue 73): the first record of each key, in order; equal values are
// one key, NaNs too, and -0.0 is +0.0; with pairs the record kept is the key's first in the
// input. In memory, out of core (budgets), to a stream, and descending.
TEST_F(Tool, UniqueKeepsTheFirstRecordOfEachKey) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> floats;
  for (int i = 0; i < 3000; ++i) floats.push_back(static_cast<float>(i * 37 % 101) - 50.0f);
  for (const float special : {nan, -nan, -0.0f, 0.0f, nan, -0.0f}) floats.push_back(special);
  write_array(file("floats"), floats);
  for (const std::string& options : {"", " --desc", " --device-memory 16K --memory 64K"}) {
    SCOPED_TRACE(options);
    ASSERT_EQ(run("sort --type f32 -u" + options + " " + file("floats") + " " + file("out")).code, 0);
    const std::vector<float> out = read_array<float>(file("out"));
    ASSERT_EQ(out.size(), 101u + 1u);  // 101 numbers (0 among them, once) and one NaN
    const bool descending = !options.empty() && options.find("desc") != std::string::npos;
    for (std::size_t i = 1; i + 1 < out.size(); ++i)
      EXPECT_TRUE(descending ? out[i] > out[i + 1] || std::isnan(out[i + 1]) : out[i - 1] < out[i]) << i;
    EXPECT_EQ(std::count_if(out.begin(), out.end(), [](float f) { return std::isnan(f); }), 1);
  }
  // Pairs: (key, position in the input); the kept value is each key's first position.
  std::vector<std::uint32_t> pairs;
  for (std::uint32_t i = 0; i < 5000; ++i) pairs.insert(pairs.end(), {i * 7919 % 53, i});
  write_array(file("pairs"), pairs);
  const outcome streamed = run("sort --type u32 --pairs u32 --unique " + file("pairs") + " -");
  ASSERT_EQ(streamed.code, 0) << streamed.err;
  std::vector<std::uint32_t> out(streamed.out.size() / 4);
  std::memcpy(out.data(), streamed.out.data(), out.size() * 4);
  ASSERT_EQ(out.size(), 2u * 53);
  for (std::uint32_t k = 0; k < 53; ++k) {
    EXPECT_EQ(out[2 * k], k);
    std::uint32_t first = 0;
    while (pairs[2 * first] != k) ++first;
    EXPECT_EQ(out[2 * k + 1], first) << k;
  }
  EXPECT_TRUE(usage_failure(run("sort --type u32 -u --text " + file("pairs") + " " + file("x")),
                            "sort", "-u keeps the first record"));
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
}

// The narrow key types (issue 47): gen, sort and check round trips in both orders, keys and
// pairs, binary and text, against an independent sort; 16-bit floats' NaNs where --nans puts
// them and their zeros and infinities in the total order.
TEST_F(Tool, NarrowKeyTypesRoundTrip) {
  for (const char* type : {"i8", "u8", "i16", "u16", "f16", "bf16"}) {
    const std::size_t bytes = std::string(type).ends_with('8') ? 1 : 2;
    for (const char* dist : {"uniform", "zipf", "few_unique", "organ_pipe"}) {
      for (const char* order : {"", "--desc "}) {
        SCOPED_TRACE(::testing::Message() << type << " " << dist << " " << order);
        const std::string t = std::string(" --type ") + type + " " + order;
        ASSERT_EQ(run("gen --type " + std::string(type) + " --n 3001 --seed 5 --dist " + dist +
                      " " + file("in")).code, 0);
        EXPECT_EQ(fs::file_size(file("in")), 3001u * bytes);
        const outcome sorted = run("sort" + t + file("in") + " " + file("out"));
        ASSERT_EQ(sorted.code, 0) << sorted.err;
        EXPECT_EQ(run("check" + t + file("out")).code, 0);
        EXPECT_EQ(checksum(t + file("in")), checksum(t + file("out")));
      }
    }
    SCOPED_TRACE(type);
    const std::string t = std::string(" --type ") + type + " ";
    ASSERT_EQ(run("gen" + t + "--pairs u32 --n 2000 --text " + file("p.txt")).code, 0);
    ASSERT_EQ(run("sort" + t + "--pairs u32 --desc --text " + file("p.txt") + " " + file("q.txt")).code, 0);
    EXPECT_EQ(run("check" + t + "--pairs u32 --desc --text " + file("q.txt")).code, 0);
    EXPECT_EQ(checksum(t + "--pairs u32 --text " + file("p.txt")),
              checksum(t + "--pairs u32 --text " + file("q.txt")));
  }
  // Integers against std::sort.
  ASSERT_EQ(run("gen --type i16 --n 4099 " + file("in")).code, 0);
  ASSERT_EQ(run("sort --type i16 " + file("in") + " " + file("out")).code, 0);
  std::vector<std::int16_t> keys = read_array<std::int16_t>(file("in"));
  std::ranges::sort(keys);
  EXPECT_EQ(read_array<std::int16_t>(file("out")), keys);
  // Beyond the budgets: runs merged on the CPU.
  ASSERT_EQ(run("gen --type i16 --n 100003 " + file("in")).code, 0);
  const outcome by_runs = run("sort --type i16 --device-memory 64K --memory 256K --stats " +
                              file("in") + " " + file("out"));
  ASSERT_EQ(by_runs.code, 0) << by_runs.err;
  EXPECT_NE(by_runs.out.find("runs of"), std::string::npos) << by_runs.out;
  keys = read_array<std::int16_t>(file("in"));
  std::ranges::sort(keys);
  EXPECT_EQ(read_array<std::int16_t>(file("out")), keys);
  // With --gpus, on a GPU host: the keys pipeline, as codes, in runs merged on the GPU
  // (without a GPU --gpus names none there is: a usage error, issue 70).
  const outcome on_gpus = run("sort --type i16 --desc --gpus 0 --device-memory 64K --memory 256K "
                              "--stats " + file("in") + " " + file("out"));
  if (on_gpus.err.find("there is no GPU 0 (this machine has 0)") != std::string::npos) {
    EXPECT_TRUE(usage_failure(on_gpus, "sort", "--gpus"));
  } else {
    ASSERT_EQ(on_gpus.code, 0) << on_gpus.err;
    EXPECT_NE(on_gpus.out.find("runs of"), std::string::npos) << on_gpus.out;
    std::ranges::reverse(keys);
    EXPECT_EQ(read_array<std::int16_t>(file("out")), keys);
  }
  // binary16 bits: NaN, 1.0, -0.0, +0.0, -inf, a negative NaN with a payload, +inf, -1.0.
  const std::vector<std::uint16_t> specials = {0x7E00, 0x3C00, 0x8000, 0x0000,
                                               0xFC00, 0xFE01, 0x7C00, 0xBC00};
  write_array(file("h"), specials);
  EXPECT_EQ(run("check --type f16 " + file("h")).code, 1);
  const auto is_nan = [](std::uint16_t bits) { return (bits & 0x7C00) == 0x7C00 && (bits & 0x3FF); };
  for (const char* nans : {"last", "first"}) {
    for (const bool descending : {false, true}) {
      SCOPED_TRACE(::testing::Message() << nans << (descending ? " desc" : " asc"));
      const std::string o = std::string(" --type f16 --nans ") + nans + (descending ? " --desc " : " ");
      ASSERT_EQ(run("sort" + o + file("h") + " " + file("hs")).code, 0);
      EXPECT_EQ(run("check" + o + file("hs")).code, 0);
      std::vector<std::uint16_t> got = read_array<std::uint16_t>(file("hs"));
      const bool nans_first = std::string(nans) == "first";
      const auto numbers = got.begin() + (nans_first ? 2 : 0);
      EXPECT_TRUE(is_nan(got[nans_first ? 0 : 6]) && is_nan(got[nans_first ? 1 : 7]));
      std::vector<std::uint16_t> ordered = {0xFC00, 0xBC00, 0x8000, 0x0000, 0x3C00, 0x7C00};
      if (descending) std::ranges::reverse(ordered);
      EXPECT_EQ(std::vector<std::uint16_t>(numbers, numbers + 6), ordered);
    }
  }
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

// Every bad input of sort and check: exit code 2, one line on stderr naming the file and
// the problem (and the line of a text file), the input and an existing OUT untouched, no
// temporary file left behind.
TEST_F(Tool, BadInputFailsWithoutTouchingFiles) {
  const std::map<std::string, std::string> inputs = {
      {"ten_bytes", "0123456789"},        {"word.txt", "1\n2\nthree\n"},
      {"big.txt", "1\n4294967296\n"},     {"negative.txt", "5\n\n-1\n"},
      {"huge.txt", "1.5\n1e999\n"},
      {"two_keys.txt", "1\n2 3\n"},       {"half_pair.txt", "1 0\n2\n"},
      {"bad_value.txt", "1 0\n2 -5\n"},   {"float_value.txt", "1 0.5\n"},
      {"hex.txt", "0x10\n"},              {"out", "previous"},
      {"ten_bytes.odd", "0123456789a"}};
  for (const auto& [name, contents] : inputs)
    std::ofstream(file(name), std::ios::binary) << contents;
  fs::create_directory(file("dir"));
  const std::vector<std::string> files = listing();

  struct bad_input {
    std::string options, input, named;
  };
  // A text key that the key type cannot hold, named with its file and line.
  const auto out_of_range = [](const std::string& type, const std::string& input, int line,
                               const std::string& key) {
    return bad_input{"--type " + type + " --text", input,
                     input + ":" + std::to_string(line) + ": '" + key +
                         "' is out of the range of " + type + " keys"};
  };
  const bad_input cases[] = {
      {"--type u32", "ten_bytes", "ten_bytes: 10 bytes is not a whole number of 4-byte records"},
      {"--type u64 --pairs u32", "ten_bytes",
       "ten_bytes: 10 bytes is not a whole number of 12-byte records (u64 key, u32 value)"},
      {"--type u32", "nothing", "nothing: no such file"},
      {"--type u32", "dir", "dir: not a regular file"},
      {"--type u128", "ten_bytes", "unknown key type 'u128'"},
      {"--type f16", "ten_bytes.odd", "ten_bytes.odd: 11 bytes is not a whole number of 2-byte records"},
      {"--type u32 --text", "word.txt", "word.txt:3: 'three' is not a u32 key"},
      out_of_range("u32", "big.txt", 2, "4294967296"),
      out_of_range("i32", "big.txt", 2, "4294967296"),
      out_of_range("u64", "negative.txt", 3, "-1"),
      out_of_range("f32", "huge.txt", 2, "1e999"),
      out_of_range("f16", "big.txt", 2, "4294967296"),  // finite in f32, beyond binary16
      out_of_range("bf16", "huge.txt", 2, "1e999"),
      out_of_range("i8", "big.txt", 2, "4294967296"),
      out_of_range("u16", "negative.txt", 3, "-1"),
      {"--type i16 --text", "hex.txt", "hex.txt:1: '0x10' is not an i16 key"},
      {"--type i64 --text", "hex.txt", "hex.txt:1: '0x10' is not an i64 key"},
      {"--type i32 --text", "two_keys.txt", "two_keys.txt:2: expected one key, got '2 3'"},
      {"--type u32 --pairs u32 --text", "half_pair.txt", "half_pair.txt:2: expected 'key value'"},
      {"--type i64 --pairs u32 --text", "bad_value.txt",
       "bad_value.txt:2: '-5' is out of the range of u32 values"},
      {"--type f32 --pairs u32 --text", "float_value.txt",
       "float_value.txt:1: '0.5' is not a u32 value"},
  };
  for (const auto& [options, input, named] : cases) {
    const std::string in = " " + options + " " + file(input) + " ";
    std::vector<std::string> outs{file("out"), file("new")};
    if (input != "dir") outs.push_back(file(input));  // a directory is a bad OUT first
    for (const std::string& out : outs) {
      SCOPED_TRACE("sort" + in + out);
      EXPECT_TRUE(usage_failure(run("sort" + in + out), "sort", named));
    }
    SCOPED_TRACE("check" + in);
    EXPECT_TRUE(usage_failure(run("check" + in), "check", named));
  }
  for (const auto& [name, contents] : inputs) EXPECT_EQ(slurp(file(name)), contents) << name;
  EXPECT_EQ(listing(), files);
}

// The file sort writes: a directory, or a place where no file can be made, is a usage error
// found before any work.
TEST_F(Tool, BadOutputFailsBeforeTheWork) {
  ASSERT_EQ(run("gen --type u32 --n 100 " + file("in")).code, 0);
  fs::create_directory(file("dir"));
  const std::string in = slurp(file("in"));
  const std::vector<std::string> files = listing();
  EXPECT_TRUE(usage_failure(run("sort --type u32 " + file("in") + " " + file("dir")), "sort",
                            file("dir") + ": is a directory"));
  EXPECT_TRUE(usage_failure(run("sort --type u32 " + file("in") + " " + file("none/out")), "sort",
                            file("none/out") + ": cannot create a file in " + file("none")));
  EXPECT_TRUE(usage_failure(run("sort --type u32 " + file("nothing") + " " + file("none/out")),
                            "sort", "cannot create a file in"));
  EXPECT_TRUE(usage_failure(run("gen --type u32 --n 10 " + file("dir")), "gen",
                            file("dir") + ": is a directory"));
  EXPECT_TRUE(usage_failure(run("gen --type u32 --n 10 " + file("in/x")), "gen",
                            "cannot create a file in"));
  EXPECT_EQ(slurp(file("in")), in);
  EXPECT_EQ(listing(), files);
  EXPECT_TRUE(fs::is_empty(file("dir")));
}

// A file that the tool may not read. As root, setpriv takes away the capabilities that
// bypass file permissions.
TEST_F(Tool, UnreadableInputIsAUsageError) {
  std::ofstream(file("in"), std::ios::binary) << "12345678";
  fs::permissions(file("in"), fs::perms::none);
  const std::string launcher = without_permission_override();
  if (std::system((launcher + "true").c_str()) != 0 ||
      std::system((launcher + "cat '" + file("in") + "' >/dev/null 2>&1").c_str()) == 0)
    GTEST_SKIP() << "cannot make a file unreadable here";
  const auto run_limited = [&](const std::string& args) { return run(args, launcher); };
  const std::string named = file("in") + ": cannot open: Permission denied";
  EXPECT_TRUE(usage_failure(run_limited("sort --type u32 " + file("in") + " " + file("out")),
                            "sort", named));
  EXPECT_TRUE(usage_failure(run_limited("check --type u32 " + file("in")), "check", named));
  fs::permissions(file("in"), fs::perms::owner_read);
  EXPECT_EQ(slurp(file("in")), "12345678");
  EXPECT_EQ(listing(), std::vector<std::string>{"in"});
}

// --stats names the algorithm that ran; for automatic, the sort it picked (the in-place
// bitonic sort on the CPU; CUB's merge or radix sort, or bitonic, on a GPU).
TEST_F(Tool, StatsNameTheAlgorithm) {
  ASSERT_EQ(run("gen --type f32 --n 5000 " + file("in")).code, 0);
  const outcome automatic = run("sort --type f32 --stats " + file("in") + " " + file("out"));
  ASSERT_EQ(automatic.code, 0) << automatic.err;
  const std::string picked = field(automatic.out, "algorithm: ");
  EXPECT_TRUE(picked == "automatic (bitonic)" || picked == "automatic (cub_merge)" ||
              picked == "automatic (cub_radix)")
      << automatic.out;
  const outcome chosen =
      run("sort --type f32 --stats --algo sample_sort " + file("in") + " " + file("out"));
  EXPECT_EQ(field(chosen.out, "algorithm: "), "sample_sort") << chosen.out;
  const outcome host = run("sort --type f32 --stats --algo std_sort " + file("in") + " " + file("out"));
  EXPECT_EQ(field(host.out, "algorithm: "), "std_sort") << host.out;
}

// 0 records is a valid file: it sorts to an empty file and checks as sorted.
TEST_F(Tool, EmptyFilesSortToEmptyFiles) {
  std::ofstream(file("empty"), std::ios::binary).flush();
  std::ofstream(file("blank.txt")) << "\n  \n\n";
  for (const std::string options : {"--type u32", "--type f64 --pairs u32", "--type i32 --text"}) {
    SCOPED_TRACE(options);
    const std::string in = file(options.ends_with("text") ? "blank.txt" : "empty");
    const outcome sorted = run("sort " + options + " " + in + " " + file("out"));
    ASSERT_EQ(sorted.code, 0) << sorted.err;
    EXPECT_EQ(visible_messages(sorted.err), std::vector<std::string>{});
    EXPECT_EQ(fs::file_size(file("out")), 0u);
    const outcome checked = run("check " + options + " " + file("out"));
    EXPECT_EQ(checked.code, 0);
    EXPECT_EQ(field(checked.out, "records: ").substr(0, 2), "0 ");
    EXPECT_EQ(field(checked.out, "sorted (ascending): "), "yes");
    EXPECT_EQ(checksum(options + " " + in), field(checked.out, "checksum: "));
  }
  EXPECT_EQ(listing(), (std::vector<std::string>{"blank.txt", "empty", "out"}));
}

TEST_F(Tool, UsageErrorsNameTheProblem) {
  ASSERT_EQ(run("gen --type u32 --n 8 " + file("in")).code, 0);
  expect_usage_errors({
      {"sort --type u128 " + file("in") + " " + file("out"), "u128"},
      {"sort --type bool " + file("in") + " " + file("out"), "bool"},
      {"sort --type f16 --algo std_sort " + file("in") + " " + file("out"), "std_sort"},
      {"bench --types u32,bf16 --sizes 2^10", "gpusort-narrow-bench"},
      {"sort --type u32 --algo quick " + file("in") + " " + file("out"), "quick"},
      {"sort --type u32 --algo top_k " + file("in") + " " + file("out"), "top_k"},
      {"sort --type u32 --pairs u64 " + file("in") + " " + file("out"), "u64"},
      {"sort --type u32 --frobnicate " + file("in") + " " + file("out"), "--frobnicate"},
      {"sort --type u32 " + file("in"), "IN and OUT"},
      // Without --type, text lines: both files are inputs, and OUT is missing.
      {"sort " + file("in") + " " + file("out"), file("out") + ": cannot open"},
      {"sort --type u32 --desc=yes " + file("in") + " " + file("out"), "--desc"},
      {"gen --type u32 --n lots " + file("out"), "lots"},
      {"gen --type u32 --n 2^64 " + file("out"), "2^64"},
      {"gen --type u64 --n 2^61 " + file("out"), "2^61"},
      {"gen --type u64 --n 2^62+18446744073709551615 " + file("out"), "too large"},
      {"bench --sizes 1..9223372036854775808", "--sizes"},
      {"bench --sizes 2^41", "--sizes"},
      {"gen --type u32 --n 8 --dist bumpy " + file("out"), "bumpy"},
      {"gen --type u32 --n 8 --zipf 2 " + file("out"), "--zipf needs --dist zipf"},
      {"gen --type u32 --n 8 --dist reduced_entropy --zipf 2 " + file("out"), "--zipf"},
      {"gen --type u32 --n 8 --dist zipf --zipf", "--zipf"},
      {"gen --type u32 --n 8 --and 2 " + file("out"), "--and needs --dist reduced_entropy"},
      {"gen --type u32 --n 8 --dist zipf --and 2 " + file("out"), "--and"},
      {"gen --type u32 --n 8 --dist reduced_entropy --and 9 " + file("out"), "0 to 8"},
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
  });
  // A bad value of --zipf or --and is named, quoted.
  for (const std::string bad : {"0", "-1.5", "inf", "nan", "steep"})
    expect_usage_errors(
        {{"gen --type u32 --n 8 --dist zipf --zipf " + bad + " " + file("out"), "'" + bad + "'"}});
  for (const std::string bad : {"-1", "many"})
    expect_usage_errors({{"gen --type u32 --n 8 --dist reduced_entropy --and " + bad + " " +
                              file("out"),
                          "'" + bad + "'"}});
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
    EXPECT_EQ(std::ranges::count(line, ','), bench_csv_commas) << line;
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
  const std::set<std::string> algorithms{"sort_segmented",      "sort_segmented_offsets",
                                         "sort_segmented_indices", "cub_segmented_radix",
                                         "cub_segmented_sort",  "top_k_rows",
                                         "std_sort"};
  std::set<std::string> seen_layouts;
  int rows = 0;
  for (; std::getline(csv, line); ++rows) {
    ASSERT_EQ(std::ranges::count(line, ','), bench_csv_commas) << line;
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

// approx, approx_sampled, top_k and select_k: timed and verified on a GPU, skipped without
// one.
TEST_F(Tool, BenchApproximateMethods) {
  const outcome bench = run("bench --sizes 1000,2^12 --dists uniform,gaussian --pairs u32 "
                            "--reps 2 --algos approx,approx_sampled,top_k,select_k,std_sort "
                            "--intervals 64 --k 2000 --csv " + file("a.csv"));
  ASSERT_EQ(bench.code, 0) << bench.out << bench.err;
  EXPECT_NE(bench.out.find("verified"), std::string::npos) << bench.out;
  const bool gpu = bench.out.find("no CUDA device") == std::string::npos;
  std::istringstream csv(slurp(file("a.csv")));
  std::string line;
  std::getline(csv, line);
  std::set<std::string> timed;
  for (; std::getline(csv, line);) {
    ASSERT_EQ(std::ranges::count(line, ','), bench_csv_commas) << line;
    timed.insert(line.substr(0, line.find(',')));
  }
  if (gpu) {
    EXPECT_EQ(timed, (std::set<std::string>{"approx", "approx_sampled", "top_k", "select_k",
                                            "std_sort"}));
  } else {
    EXPECT_EQ(timed, std::set<std::string>{"std_sort"});
    EXPECT_NE(bench.out.find("skipping top_k: needs a CUDA device"), std::string::npos)
        << bench.out;
    EXPECT_NE(bench.out.find("skipping select_k: needs a CUDA device"), std::string::npos)
        << bench.out;
  }
}

// The progress line: drawn when asked (GPUSORT_PROGRESS=1 stands for a terminal), erased at
// the end, never touching what the commands write; never drawn into a file otherwise.
TEST_F(Tool, ProgressLineOnlyWhenAsked) {
  // A host sort of pairs: the in-memory path and its phases on any device (on a GPU, keys and
  // pairs take the pipelines, whose phase is "sorting").
  ASSERT_EQ(run("gen --type u32 --n 2^16 --pairs u32 " + file("in")).code, 0);
  ASSERT_EQ(run("gen --type f32 --n 2^12 --text " + file("in.txt")).code, 0);
  const outcome plain = run("sort --type u32 --pairs u32 " + file("in") + " " + file("plain"));
  ASSERT_EQ(plain.code, 0);
  EXPECT_EQ(plain.err.find('\r'), std::string::npos) << plain.err;
  EXPECT_EQ(visible_messages(plain.err), std::vector<std::string>{});
  const outcome plain_check = run("check --type u32 --pairs u32 " + file("plain"));
  EXPECT_EQ(plain_check.err, "");
  const std::vector<std::string> erased;
  {
    const scoped_environment forced("GPUSORT_PROGRESS", "1");
    const outcome sorted =
        run("sort --type u32 --pairs u32 --algo std_sort " + file("in") + " " + file("drawn"));
    ASSERT_EQ(sorted.code, 0) << sorted.err;
    for (const char* phase : {"reading", "checking", "sorting", "writing"})
      EXPECT_NE(sorted.err.find(std::string("\r") + phase + " "), std::string::npos) << phase;
    EXPECT_EQ(visible_messages(sorted.err), erased) << sorted.err;

    const outcome text = run("sort --type f32 --text " + file("in.txt") + " " + file("out.txt"));
    ASSERT_EQ(text.code, 0) << text.err;
    EXPECT_NE(text.err.find("\rparsing "), std::string::npos) << text.err;
    EXPECT_EQ(visible_messages(text.err), erased) << text.err;

    const outcome checked = run("check --type u32 --pairs u32 " + file("plain"));
    EXPECT_EQ(checked.out, plain_check.out);
    EXPECT_NE(checked.err.find("\rchecking "), std::string::npos) << checked.err;
    EXPECT_EQ(visible_messages(checked.err), erased) << checked.err;

    const outcome generated = run("gen --type u32 --n 2^16 --pairs u32 " + file("again"));
    EXPECT_NE(generated.err.find("\rgenerating "), std::string::npos) << generated.err;
    EXPECT_NE(generated.err.find("\rwriting "), std::string::npos) << generated.err;
    EXPECT_EQ(visible_messages(generated.err), erased) << generated.err;

    // An error replaces the line: the terminal shows the message alone.
    const outcome failed = run("sort --type u32 " + file("nothing") + " " + file("out"));
    EXPECT_EQ(failed.code, 2);
    EXPECT_EQ(visible_messages(failed.err),
              std::vector<std::string>{"gpusort sort: " + file("nothing") + ": no such file"});
  }
  {
    const scoped_environment off("GPUSORT_PROGRESS", "0");
    const outcome quiet = run("sort --type u32 --pairs u32 " + file("in") + " " + file("quiet"));
    EXPECT_EQ(quiet.err.find('\r'), std::string::npos) << quiet.err;
  }
  EXPECT_EQ(slurp(file("drawn")), slurp(file("plain")));
  EXPECT_EQ(slurp(file("quiet")), slurp(file("plain")));
  EXPECT_EQ(slurp(file("again")), slurp(file("in")));
  EXPECT_EQ(run("check --type f32 --text " + file("out.txt")).code, 0);
  EXPECT_EQ(listing(), (std::vector<std::string>{"again", "drawn", "in", "in.txt", "out.txt",
                                                 "plain", "quiet"}));
}

// Issue 44: a replaced output keeps the mode and owner of the file it replaces (root can give
// it back to its owner), a new one gets the umask's mode, and while it is written it is
// readable by its writer alone.
TEST_F(Tool, AReplacedOutputKeepsItsModeAndOwner) {
  ASSERT_EQ(run("gen --type u32 --n 1000 " + file("s.bin")).code, 0);
  ::chmod(file("s.bin").c_str(), 0600);
  ASSERT_EQ(run("sort --type u32 " + file("s.bin") + " " + file("s.bin")).code, 0);
  struct stat info {};
  ASSERT_EQ(::stat(file("s.bin").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  EXPECT_EQ(run("check --type u32 " + file("s.bin")).code, 0);
  ASSERT_EQ(shell("umask 027 && \"$GPUSORT\" gen --type u32 --n 10 " + file("new")).code, 0);
  ASSERT_EQ(::stat(file("new").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0640u);
  if (::geteuid() == 0) {
    ::chmod(file("s.bin").c_str(), 0640);
    ASSERT_EQ(::chown(file("s.bin").c_str(), 65534, 65534), 0);
    ASSERT_EQ(run("sort --type u32 --desc " + file("s.bin") + " " + file("s.bin")).code, 0);
    ASSERT_EQ(::stat(file("s.bin").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0640u);
    EXPECT_EQ(info.st_uid, 65534u);
    EXPECT_EQ(info.st_gid, 65534u);
  }
  // The temporary file is 0600 while it is written, whatever the umask.
  const mode_t mask = ::umask(0);
  {
    gpusort::detail::external::pending_file pending(file("big"));
    ASSERT_EQ(::stat(file(".big.tmp" + std::to_string(::getpid()) + "-0").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0600u);
  }
  ::umask(mask);
  EXPECT_FALSE(fs::exists(file("big")));
}

// Issue 44: what a sort killed by SIGKILL left (its temporary output, its runs directory) is
// removed by the next run for that output; scratch a live run holds (its lock, issue 70), or
// another output's, stays.
TEST_F(Tool, AKilledRunsLeftoversGoWithTheNextRun) {
  const std::string dead = "4194303", live = std::to_string(::getpid());
  std::ofstream(file(".out.tmp" + dead + "-0")) << "half an output";
  fs::create_directories(file(".out.runs" + dead + "-1"));
  std::ofstream(file(".out.runs" + dead + "-1/run0")) << "a run";
  std::ofstream(file(".out.tmp" + live + "-0")) << "a live sort's";
  const int held = ::open(file(".out.tmp" + live + "-0").c_str(), O_RDWR);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  std::ofstream(file(".other.tmp" + dead + "-0")) << "another output's";
  ASSERT_EQ(run("gen --type u32 --n 100 " + file("in")).code, 0);
  ASSERT_EQ(run("sort --type u32 " + file("in") + " " + file("out")).code, 0);
  ::close(held);
  EXPECT_EQ(listing(), (std::vector<std::string>{".other.tmp" + dead + "-0",
                                                 ".out.tmp" + live + "-0", "in", "out"}));
}

// The same with a real SIGKILL mid-sort (out of core, so that there is scratch to leave): the
// old output survives it, and the next run leaves nothing but its output.
TEST_F(Tool, ASigkilledSortKeepsTheOldOutputAndTheNextRunCleansUp) {
  ASSERT_EQ(run("gen --type u64 --n 2^21 " + file("in")).code, 0);
  std::ofstream(file("out")) << "old";
  const outcome o = shell(
      "\"$GPUSORT\" sort --type u64 --device-memory 64K --memory 256K " + file("in") + " " +
      file("out") + " & pid=$!\n"
      "for i in $(seq 1 200); do ls -a '" + file("") + "' | grep -q '^\\.out\\.' && break; "
      "sleep 0.05; done\n"
      "kill -9 $pid; wait $pid; echo \"killed $?\"");
  ASSERT_NE(o.out.find("killed 137"), std::string::npos) << o.out << o.err;
  EXPECT_EQ(slurp(file("out")), "old");
  ASSERT_GT(listing().size(), 2u) << "the sort left nothing to clean up";
  ASSERT_EQ(run("sort --type u64 " + file("in") + " " + file("out")).code, 0);
  EXPECT_EQ(listing(), (std::vector<std::string>{"in", "out"}));
  EXPECT_EQ(run("check --type u64 " + file("out")).code, 0);
}

TEST(ScratchNames, OwnerPid) {
  using gpusort::detail::external::scratch_owner_pid;
  static_assert(scratch_owner_pid(".out.tmp123-0", "out") == 123);
  static_assert(scratch_owner_pid(".out.runs77-12", "out") == 77);
  static_assert(scratch_owner_pid(".out.tmp123-", "out") == 0);
  static_assert(scratch_owner_pid(".out.tmp-1", "out") == 0);
  static_assert(scratch_owner_pid(".out.tmp12x-1", "out") == 0);
  static_assert(scratch_owner_pid(".out.tmp12-1x", "out") == 0);
  static_assert(scratch_owner_pid(".outx.tmp12-1", "out") == 0);
  static_assert(scratch_owner_pid("out.tmp12-1", "out") == 0);
  static_assert(scratch_owner_pid(".out.bak12-1", "out") == 0);
  EXPECT_EQ(scratch_owner_pid(".a b.tmp9-0", "a b"), 9);
}

// Issue 44: a working directory the tool cannot read ends in one line and an exit code, not
// an abort.
TEST_F(Tool, AnUnreadableWorkingDirectoryIsOneLine) {
  ASSERT_EQ(run("gen --type u32 --n 100 " + file("in")).code, 0);
  fs::create_directories(file("dark"));
  const std::string launcher = without_permission_override();
  if (std::system((launcher + "true").c_str()) != 0) GTEST_SKIP() << "no setpriv";
  for (const char* out : {"out", "sub/out"}) {
    ::chmod(file("dark").c_str(), 0);  // neither read nor search
    const outcome o = shell("cd '" + file("dark") + "' && " + launcher +
                            "\"$GPUSORT\" sort --type u32 " + file("in") + " " + out);
    ::chmod(file("dark").c_str(), 0700);
    EXPECT_TRUE(usage_failure(o, "sort", "Permission denied")) << out;
  }
}

// ---- files and the progress line, without the tool -------------------------------------

// Ctrl-C while sort or gen writes: the temporary file goes, the process ends by the signal.
TEST(PendingFileDeathTest, ASignalLeavesNoTemporaryFile) {
  const fs::path dir =
      fs::temp_directory_path() / ("gpusort_pending_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const int signal_number : {SIGINT, SIGTERM}) {
    EXPECT_EXIT(
        {
          gpusort::detail::external::signal_cleanup_allowed = true;  // as the tool asks
          gpusort::detail::external::pending_file out((dir / "out").string());
          std::fputs("half a file", out.get());
          std::fflush(out.get());
          std::raise(signal_number);
        },
        ::testing::KilledBySignal(signal_number), "");
    EXPECT_TRUE(fs::is_empty(dir)) << signal_number;
  }
  fs::remove_all(dir);
}


using gpusort::tools::progress;
using gpusort::tools::progress_line;
using gpusort::tools::progress_settings_for;

TEST(ProgressLine, DrawsABarOrASpinner) {
  EXPECT_EQ(progress_line("reading", 0.5, 2.14, 0),
            "reading  [###############...............]  50%  2.1 s");
  EXPECT_EQ(progress_line("writing", 1.0, 0.0, 3),
            "writing  [##############################] 100%  0.0 s");
  EXPECT_EQ(progress_line("writing", 0.999, 0.0, 3),
            "writing  [#############################.]  99%  0.0 s");
  EXPECT_EQ(progress_line("reading", 1.5, 0.0, 0), progress_line("reading", 1.0, 0.0, 0));
  EXPECT_EQ(progress_line("sorting", -1, 12.34, 1), "sorting  /  12.3 s");
  std::string spinner;
  for (unsigned frame = 0; frame < 5; ++frame) spinner += progress_line("sorting", -1, 0, frame)[9];
  EXPECT_EQ(spinner, "|/-\\|");
  // The bar does not move the time, whatever the percent; longer phases push it right.
  for (double fraction : {0.0, 0.001, 0.1, 0.5, 1.0})
    EXPECT_EQ(progress_line("reading", fraction, 1.0, 0).size(),
              progress_line("reading", 0.0, 1.0, 0).size());
  EXPECT_TRUE(progress_line("generating", -1, 0, 0).starts_with("generating |"));
}

TEST(ProgressLine, ShownOnTerminalsOrWhenAsked) {
  EXPECT_FALSE(progress_settings_for(nullptr, false).enabled);
  EXPECT_TRUE(progress_settings_for(nullptr, true).enabled);
  EXPECT_EQ(progress_settings_for(nullptr, true).delay, std::chrono::seconds{1});
  EXPECT_FALSE(progress_settings_for("0", true).enabled);
  EXPECT_TRUE(progress_settings_for("1", false).enabled);
  EXPECT_EQ(progress_settings_for("1", false).delay, std::chrono::milliseconds{0});
  EXPECT_FALSE(progress_settings_for("yes", false).enabled);
  EXPECT_TRUE(progress_settings_for("", true).enabled);
}

std::string contents_of(std::FILE* f) {
  std::rewind(f);
  std::string text;
  char buffer[4096];
  for (std::size_t got; (got = std::fread(buffer, 1, sizeof buffer, f)) > 0;)
    text.append(buffer, got);
  return text;
}

TEST(ProgressLine, DrawsEachPhaseTicksAndErases) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  {
    progress meter({.enabled = true, .delay = std::chrono::milliseconds{0}}, out);
    meter.phase("reading", true);
    meter.advance(1, 4);
    meter.phase("sorting", false);
    std::this_thread::sleep_for(std::chrono::milliseconds{350});  // the ticker turns the spinner
    meter.phase("writing", true);
  }
  const std::string text = contents_of(out);
  std::fclose(out);
  EXPECT_NE(text.find("\rreading  [....."), std::string::npos) << text;
  EXPECT_NE(text.find("\rwriting  [....."), std::string::npos) << text;
  std::size_t sorting_frames = 0;
  for (std::size_t at = text.find("\rsorting "); at != std::string::npos;
       at = text.find("\rsorting ", at + 1))
    ++sorting_frames;
  EXPECT_GE(sorting_frames, 2u) << text;
  EXPECT_EQ(std::ranges::count(text, '\n'), 0);
  EXPECT_EQ(visible_messages(text), std::vector<std::string>{}) << text;
}

TEST(ProgressLine, QuietWhenOffOrQuick) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  {
    progress off({.enabled = false}, out);
    off.phase("reading", true);
    off.advance(1, 2);
  }
  {
    progress later({.enabled = true, .delay = std::chrono::hours{1}}, out);
    later.phase("sorting", false);
    later.finish();
    later.finish();
  }
  EXPECT_EQ(contents_of(out), "");
  std::fclose(out);
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
