// `gpusort sort` out of core (tools/external/external_sort.hpp), run as a program: budgets
// that force several runs and multi-pass merges give the bytes of the in-memory sort (keys)
// or of a stable sort by key (pairs); budgets too small, --text and interruptions leave
// nothing behind. Without a GPU the run sorts use the CPU backend, and --device-memory
// counts each record twice (the record and one record of workspace). Records with a byte key
// (--record-bytes, tools/external/record_sort.hpp), as the Sort Benchmark's, in memory and
// out of core, come out as a std::stable_sort by memcmp key computed here.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cpu/tool_fixture.hpp"

namespace {

using namespace gpusort_test_tool;
namespace fs = std::filesystem;

// The exact plans below count the device budget as the CPU backend does (each record twice),
// so these tests hide any GPU from the tool; ExternalToolAnyDevice runs it as it is.
class ExternalTool : public Tool {
 protected:
  void SetUp() override {
    Tool::SetUp();
    if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) saved_visible_ = visible;
    had_visible_ = std::getenv("CUDA_VISIBLE_DEVICES") != nullptr;
    ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  }
  void TearDown() override {
    if (had_visible_)
      ::setenv("CUDA_VISIBLE_DEVICES", saved_visible_.c_str(), 1);
    else
      ::unsetenv("CUDA_VISIBLE_DEVICES");
    Tool::TearDown();
  }
  // Sorts `in` in memory into mem.bin and out of core with `budget` into ooc.bin, expects
  // equal bytes, and returns --stats' output of the out-of-core sort.
  std::string expect_same_as_in_memory(const std::string& sort_args, const std::string& budget) {
    const outcome in_memory = run("sort " + sort_args + " --stats " + file("in.bin") + " " +
                                  file("mem.bin"));
    EXPECT_EQ(in_memory.code, 0) << in_memory.err;
    EXPECT_EQ(field(in_memory.out, "plan: "), "in memory");
    const outcome out_of_core = run("sort " + sort_args + " " + budget + " --stats " +
                                    file("in.bin") + " " + file("ooc.bin"));
    EXPECT_EQ(out_of_core.code, 0) << out_of_core.err;
    EXPECT_NE(field(out_of_core.out, "plan: "), "in memory");
    const std::string expected = slurp(file("mem.bin"));
    EXPECT_FALSE(expected.empty());
    EXPECT_TRUE(slurp(file("ooc.bin")) == expected) << "out-of-core bytes differ, " << budget;
    EXPECT_EQ(listing(), (std::vector<std::string>{"in.bin", "mem.bin", "ooc.bin"}));
    return out_of_core.out;
  }
  void gen(const std::string& args) {
    const outcome o = run("gen " + args + " " + file("in.bin"));
    ASSERT_EQ(o.code, 0) << o.err;
  }
  // Sorts in.bin with `sort_args` into out.bin, expects `expected` and only in.bin and
  // out.bin left, and returns --stats' output.
  std::string expect_sorted_as(const std::string& sort_args, const std::string& expected) {
    const outcome o =
        run("sort " + sort_args + " --stats " + file("in.bin") + " " + file("out.bin"));
    EXPECT_EQ(o.code, 0) << sort_args << ": " << o.err;
    EXPECT_TRUE(slurp(file("out.bin")) == expected) << sort_args << "\n" << o.out;
    EXPECT_EQ(listing(), (std::vector<std::string>{"in.bin", "out.bin"})) << sort_args;
    return o.out;
  }

 private:
  std::string saved_visible_;
  bool had_visible_ = false;
};

// The records of `input` (record_bytes each) stably sorted by key_bytes bytes at key_offset,
// compared as unsigned bytes (memcmp): the expected output, computed without the tool.
std::string stable_sort_by_byte_key(const std::string& input, std::size_t record_bytes,
                                    std::size_t key_offset, std::size_t key_bytes,
                                    bool descending = false) {
  const std::size_t n = input.size() / record_bytes;
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  const auto key = [&](std::size_t i) { return input.data() + i * record_bytes + key_offset; };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const int sign = std::memcmp(key(a), key(b), key_bytes);
    return descending ? sign > 0 : sign < 0;
  });
  std::string out;
  out.reserve(input.size());
  for (const std::size_t i : order) out.append(input, i * record_bytes, record_bytes);
  return out;
}

// With the GPU where there is one (its sorts' workspace sets the run length): the plan adds
// up to the file and the bytes are those of the in-memory sort.
class ExternalToolAnyDevice : public Tool {
 protected:
  // Sorts in.bin with the host's std::sort into ref.bin, then with each budget into out.bin,
  // and expects the same bytes each time.
  void expect_budgets_match_the_host_sort(const std::string& sort_args,
                                          const std::vector<std::string>& budgets) {
    const outcome host = run("sort " + sort_args + " --algo std_sort " + file("in.bin") + " " +
                             file("ref.bin"));
    ASSERT_EQ(host.code, 0) << host.err;
    const std::string expected = slurp(file("ref.bin"));
    for (const std::string& budget : budgets) {
      const outcome o = run("sort " + sort_args + " " + budget + " --stats " + file("in.bin") +
                            " " + file("out.bin"));
      ASSERT_EQ(o.code, 0) << sort_args << " " << budget << ": " << o.err;
      EXPECT_TRUE(slurp(file("out.bin")) == expected) << sort_args << " " << budget << "\n" << o.out;
      EXPECT_EQ(listing(), (std::vector<std::string>{"in.bin", "out.bin", "ref.bin"})) << budget;
      fs::remove(file("out.bin"));
    }
    fs::remove(file("ref.bin"));
  }
};

// Budgets of one run, a few runs, many small windows, and runs kept in a scratch file (the
// host budget below the file), on every key type: the bytes of the host's sort. On a GPU
// these go through the pipeline (gpu_pipeline.hpp), without one through the CPU run path.
TEST_F(ExternalToolAnyDevice, KeysMatchTheHostSortUnderEveryBudget) {
  const std::vector<std::string> budgets{"", "--device-memory 1M", "--device-memory 64K",
                                         "--device-memory 16K --memory 160K",
                                         "--device-memory 64K --memory 64K"};
  const struct {
    std::string gen, sort;
  } cases[] = {{"--type u32 --n 50000 --seed 3", "--type u32"},
               {"--type u32 --n 2^15+1 --dist few_unique --seed 4", "--type u32 --desc"},
               {"--type i64 --n 30011 --dist zipf --seed 5", "--type i64 --desc"},
               {"--type f32 --n 40000 --dist gaussian --seed 6", "--type f32"},
               {"--type f64 --n 2^14-1 --dist sorted --seed 7", "--type f64 --desc"}};
  for (const auto& c : cases) {
    ASSERT_EQ(run("gen " + c.gen + " " + file("in.bin")).code, 0) << c.gen;
    expect_budgets_match_the_host_sort(c.sort, budgets);
  }
}

TEST_F(ExternalToolAnyDevice, EmptyOneAndTwoKeys) {
  for (const std::vector<std::uint32_t>& keys :
       {std::vector<std::uint32_t>{}, {42}, {7, 3}, {3, 3}}) {
    write_array(file("in.bin"), keys);
    expect_budgets_match_the_host_sort("--type u32", {"", "--device-memory 64K"});
  }
}

// Ctrl-C during the runs (a test hook raises SIGINT after the second) leaves the input and
// nothing else: no pending output, no scratch directory.
TEST_F(ExternalToolAnyDevice, InterruptLeavesNothingBehind) {
  ASSERT_EQ(run("gen --type u32 --n 20000 --seed 8 " + file("in.bin")).code, 0);
  const std::string input = slurp(file("in.bin"));
  for (const std::string budget : {"--device-memory 8K", "--device-memory 8K --memory 32K"}) {
    ::setenv("GPUSORT_TEST_INTERRUPT_AFTER_RUNS", "2", 1);
    const outcome o = run("sort --type u32 " + budget + " " + file("in.bin") + " " + file("out.bin"));
    ::unsetenv("GPUSORT_TEST_INTERRUPT_AFTER_RUNS");
    EXPECT_NE(o.code, 0);
    EXPECT_EQ(listing(), std::vector<std::string>{"in.bin"}) << budget;
    EXPECT_TRUE(slurp(file("in.bin")) == input);
  }
}

// The host sorts (the GPU's baseline) sort pairs stably, and take no budgets.
TEST_F(ExternalToolAnyDevice, HostSortsArePairsStableAndTakeNoBudget) {
  ASSERT_EQ(run("gen --type u32 --n 30000 --dist few_unique --pairs u32 --seed 9 " + file("in.bin")).code, 0);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> records;
  {
    const std::string raw = slurp(file("in.bin"));
    for (std::size_t at = 0; at < raw.size(); at += 8) {
      std::uint32_t key, value;
      std::memcpy(&key, raw.data() + at, 4);
      std::memcpy(&value, raw.data() + at + 4, 4);
      records.push_back({key, value});
    }
  }
  std::stable_sort(records.begin(), records.end(), [](auto a, auto b) { return a.first < b.first; });
  std::string expected(records.size() * 8, '\0');
  for (std::size_t i = 0; i < records.size(); ++i) {
    std::memcpy(expected.data() + i * 8, &records[i].first, 4);
    std::memcpy(expected.data() + i * 8 + 4, &records[i].second, 4);
  }
  for (const std::string algo : {"std_sort", "cpu_parallel"}) {
    const outcome o = run("sort --type u32 --pairs u32 --algo " + algo + " " + file("in.bin") + " " + file("out.bin"));
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_TRUE(slurp(file("out.bin")) == expected) << algo;
    const outcome budget = run("sort --type u32 --algo " + algo + " --device-memory 1M " +
                               file("in.bin") + " " + file("bad.bin"));
    EXPECT_EQ(budget.code, 2);
    EXPECT_NE(budget.err.find("no --device-memory"), std::string::npos) << budget.err;
  }
  EXPECT_EQ(listing(), (std::vector<std::string>{"in.bin", "out.bin"}));
}

TEST_F(ExternalToolAnyDevice, RunsAddUpAndMatchTheInMemorySort) {
  const std::uint64_t n = 100001;
  ASSERT_EQ(run("gen --type u32 --n 100001 --seed 8 " + file("in.bin")).code, 0);
  const outcome in_memory = run("sort --type u32 " + file("in.bin") + " " + file("mem.bin"));
  ASSERT_EQ(in_memory.code, 0) << in_memory.err;
  const outcome o = run("sort --type u32 --device-memory 64K --stats " + file("in.bin") + " " +
                        file("ooc.bin"));
  ASSERT_EQ(o.code, 0) << o.err;
  // The GPU pipeline (keys on a GPU) and the CPU run path both start the plan so.
  unsigned long long runs = 0, length = 0, last = 0;
  ASSERT_EQ(std::sscanf(field(o.out, "plan: ").c_str(), "%llu runs of %llu records (the last %llu)",
                        &runs, &length, &last),
            3)
      << o.out;
  EXPECT_GT(runs, 1u);
  EXPECT_EQ((runs - 1) * length + last, n);
  EXPECT_LE(last, length);
  EXPECT_LE(length * 4, 64u * 1024) << "a run's keys must fit the device budget";
  EXPECT_TRUE(slurp(file("ooc.bin")) == slurp(file("mem.bin")));
  EXPECT_EQ(listing(), (std::vector<std::string>{"in.bin", "mem.bin", "ooc.bin"}));
}

TEST_F(ExternalTool, U32KeysManyRunsAndMultiPassMerge) {
  gen("--type u32 --n 100001 --seed 3");
  // 16 KiB / (4 + 4 bytes of workspace) = 2048 keys a run: 48 full runs and one of 1697.
  std::string stats = expect_same_as_in_memory("--type u32", "--device-memory 16K");
  EXPECT_EQ(field(stats, "plan: "),
            "49 runs of 2048 records (the last 1697), merged 49 at a time in 1 pass(es)");
  for (const char* stage : {"read: ", "sort: ", "write runs: ", "merge: "})
    EXPECT_TRUE(field(stats, stage).ends_with(" s")) << stage << " in\n" << stats;
  // 36 KiB of host memory: merge buffers of 4 KiB, 8 runs at a time: 49 -> 7 -> 1.
  stats = expect_same_as_in_memory("--type u32", "--device-memory 16384 --memory 36K");
  EXPECT_EQ(field(stats, "plan: "),
            "49 runs of 2048 records (the last 1697), merged 8 at a time in 2 pass(es)");
  // The host budget alone bounds the runs: 32 KiB / 2 buffers of 4 bytes = 4096 keys.
  stats = expect_same_as_in_memory("--type u32", "--memory 32KiB");
  EXPECT_TRUE(field(stats, "plan: ").starts_with("25 runs of 4096 records")) << stats;
}

TEST_F(ExternalTool, F64KeysWithSignedZerosNaNsAndInfinities) {
  std::mt19937_64 rng(7);
  std::vector<double> keys(50000);
  const double specials[] = {-0.0, 0.0, std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(), 1.5, -1.5};
  for (double& key : keys)
    key = rng() % 3 == 0 ? specials[rng() % 7]
                         : std::uniform_real_distribution<double>(-1e6, 1e6)(rng);
  write_array(file("in.bin"), keys);
  // 32 KiB / 16 bytes = 2048 keys a run: 25 runs, the last of 848.
  const std::string stats = expect_same_as_in_memory("--type f64", "--device-memory 32K");
  EXPECT_TRUE(field(stats, "plan: ").starts_with("25 runs of 2048 records (the last 848)"));
  expect_same_as_in_memory("--type f64 --desc", "--device-memory 32K --memory 40K");
  // The order itself: -0.0 before +0.0 (after it descending), NaNs last in both orders.
  const std::vector<double> sorted = read_array<double>(file("mem.bin"));
  ASSERT_EQ(sorted.size(), keys.size());
  EXPECT_TRUE(std::isnan(sorted.back()));
  EXPECT_FALSE(std::isnan(sorted.front()));
  const auto zero = std::find(sorted.begin(), sorted.end(), 0.0);
  ASSERT_NE(zero, sorted.end());
  EXPECT_FALSE(std::signbit(*zero));
  const auto last_zero = std::find(sorted.rbegin(), sorted.rend(), 0.0);
  ASSERT_NE(last_zero, sorted.rend());
  EXPECT_TRUE(std::signbit(*last_zero));
}

// --nans first: the NaN block moved before the output is committed, in memory and out of
// core alike, binary and text; check agrees only with the placement it is told.
TEST_F(ExternalTool, NansFirstOrLastInBothOrders) {
  std::mt19937_64 rng(11);
  std::vector<float> keys(20000);
  for (float& key : keys)
    key = rng() % 4 == 0 ? std::numeric_limits<float>::quiet_NaN()
                         : std::uniform_real_distribution<float>(-10, 10)(rng);
  write_array(file("in.bin"), keys);
  const std::size_t nan_count = std::count_if(keys.begin(), keys.end(), [](float k) { return k != k; });
  for (const std::string order : {"", " --desc"}) {
    for (const std::string nans : {"last", "first"}) {
      const std::string args = "--type f32" + order + " --nans " + nans;
      expect_same_as_in_memory(args, "--device-memory 16K");
      const std::vector<float> sorted = read_array<float>(file("mem.bin"));
      ASSERT_EQ(sorted.size(), keys.size());
      const std::size_t lead = nans == "first" ? nan_count : 0;
      for (std::size_t i = 0; i < sorted.size(); ++i)
        ASSERT_EQ(std::isnan(sorted[i]), nans == "first" ? i < lead : i >= sorted.size() - nan_count)
            << args << " at " << i;
      EXPECT_EQ(run("check " + args + " " + file("mem.bin")).code, 0) << args;
      const std::string other = nans == "first" ? "last" : "first";
      EXPECT_EQ(run("check --type f32" + order + " --nans " + other + " " + file("mem.bin")).code, 1)
          << args;
      fs::remove(file("mem.bin"));
      fs::remove(file("ooc.bin"));
    }
  }
  // Text, in memory.
  {
    std::ofstream text(file("in.txt"));
    text << "2.5\nnan\n-1\n-nan\n7\n";
  }
  ASSERT_EQ(run("sort --type f32 --text --desc --nans first " + file("in.txt") + " " + file("out.txt")).code, 0);
  const std::string out = slurp(file("out.txt"));
  EXPECT_TRUE(out.starts_with("nan\n-nan\n") || out.starts_with("-nan\nnan\n") ||
              out.starts_with("nan\nnan\n") || out.starts_with("-nan\n-nan\n")) << out;
  EXPECT_TRUE(out.ends_with("7\n2.5\n-1\n")) << out;
  EXPECT_EQ(run("sort --type f32 --nans middle " + file("in.bin") + " " + file("x.bin")).code, 2);
}

TEST_F(ExternalTool, I64KeysDescending) {
  gen("--type i64 --n 30001 --dist few_unique --seed 5");
  expect_same_as_in_memory("--type i64 --desc", "--device-memory 8K --memory 20K");
  gen("--type i64 --n 30001 --seed 6");
  expect_same_as_in_memory("--type i64 --desc", "--device-memory 8K");
}

struct pair_record {
  std::uint32_t key, value;
};
static_assert(sizeof(pair_record) == 8);

// Pairs come out as std::stable_sort by key, whatever the algorithm (bitonic is not stable).
TEST_F(ExternalTool, PairsAreStable) {
  gen("--type u32 --n 60001 --dist few_unique --pairs u32 --seed 9");
  std::vector<pair_record> expected = read_array<pair_record>(file("in.bin"));
  ASSERT_EQ(expected.size(), 60001u);
  std::vector<pair_record> descending = expected;
  std::stable_sort(expected.begin(), expected.end(),
                   [](pair_record a, pair_record b) { return a.key < b.key; });
  std::stable_sort(descending.begin(), descending.end(),
                   [](pair_record a, pair_record b) { return a.key > b.key; });
  const auto as_bytes = [](const std::vector<pair_record>& records) {
    return std::string(reinterpret_cast<const char*>(records.data()), records.size() * 8);
  };
  for (const std::string& algo : {"", " --algo bitonic", " --algo sample_sort"}) {
    // 16 KiB / 16 bytes = 1024 records a run, 59 runs; 48 KiB of host memory: 7 at a time.
    outcome o = run("sort --type u32 --pairs u32 --device-memory 16K --memory 48K --stats" +
                    algo + " " + file("in.bin") + " " + file("out.bin"));
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_EQ(field(o.out, "plan: "),
              "59 runs of 1024 records (the last 609), merged 7 at a time in 3 pass(es)");
    EXPECT_TRUE(slurp(file("out.bin")) == as_bytes(expected)) << algo;
    o = run("sort --type u32 --pairs u32 --desc --device-memory 16K" + algo + " " +
            file("in.bin") + " " + file("out.bin"));
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_TRUE(slurp(file("out.bin")) == as_bytes(descending)) << algo << " --desc";
  }
  EXPECT_EQ(listing(), (std::vector<std::string>{"in.bin", "out.bin"}));
}

TEST_F(ExternalTool, OutputMayBeTheInput) {
  gen("--type u32 --n 20000 --seed 4");
  ASSERT_EQ(run("sort --type u32 " + file("in.bin") + " " + file("mem.bin")).code, 0);
  const outcome o = run("sort --type u32 --device-memory 8K " + file("in.bin") + " " +
                        file("in.bin"));
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(slurp(file("in.bin")) == slurp(file("mem.bin")));
  EXPECT_EQ(listing(), (std::vector<std::string>{"in.bin", "mem.bin"}));
}

TEST_F(ExternalTool, EmptyFileAndOneRecord) {
  write_array(file("in.bin"), std::vector<std::uint32_t>{});
  outcome o = run("sort --type u32 --device-memory 16 --memory 64 " + file("in.bin") + " " +
                  file("out.bin"));
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(fs::exists(file("out.bin")));
  EXPECT_EQ(fs::file_size(file("out.bin")), 0u);
  write_array(file("in.bin"), std::vector<std::uint32_t>{42});
  o = run("sort --type u32 --device-memory 8 " + file("in.bin") + " " + file("out.bin"));
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(read_array<std::uint32_t>(file("out.bin")), std::vector<std::uint32_t>{42});
  // Two records, one a run: a merge of two one-record runs.
  write_array(file("in.bin"), std::vector<std::uint32_t>{7, 3});
  o = run("sort --type u32 --device-memory 8 --stats " + file("in.bin") + " " + file("out.bin"));
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(field(o.out, "plan: ").starts_with("2 runs of 1 records"));
  EXPECT_EQ(read_array<std::uint32_t>(file("out.bin")), (std::vector<std::uint32_t>{3, 7}));
  EXPECT_EQ(listing(), (std::vector<std::string>{"in.bin", "out.bin"}));
}

TEST_F(ExternalTool, BudgetsTooSmallAreUsageErrors) {
  gen("--type u32 --n 1000 --seed 2");
  const std::string input = slurp(file("in.bin"));
  const auto expect_usage_error = [&](const std::string& options, const std::string& words) {
    const outcome o = run("sort --type u32 " + options + " " + file("in.bin") + " " +
                          file("out.bin"));
    EXPECT_EQ(o.code, 2) << options;
    EXPECT_NE(o.err.find(words), std::string::npos) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
    EXPECT_TRUE(o.out.empty());
    EXPECT_TRUE(slurp(file("in.bin")) == input);
    EXPECT_EQ(listing(), std::vector<std::string>{"in.bin"}) << options;
  };
  expect_usage_error("--device-memory 7",
                     "the device memory budget of 7 bytes cannot hold one 4-byte record");
  expect_usage_error("--device-memory 0", "the device memory budget of 0 bytes");
  expect_usage_error("--memory 7", "the host memory budget of 7 bytes cannot hold 2 run buffers");
  expect_usage_error("--pairs u32 --device-memory 1K --memory 23",
                     "the host memory budget of 23 bytes cannot hold 3 run buffers");
  expect_usage_error("--device-memory 12X", "--device-memory: '12X' is not a byte count");
  expect_usage_error("--memory K", "--memory: 'K' is not a byte count");
  expect_usage_error("--memory 99999999999999999T", "too large");
  expect_usage_error("--gpus 0,x", "--gpus: 'x' is not a GPU number");
  expect_usage_error("--gpus -1", "--gpus: '-1' is not a GPU number");
}

TEST_F(ExternalTool, TextIsRejectedWithABudget) {
  std::ofstream(file("in.txt")) << "3\n1\n2\n";
  outcome o = run("sort --type u32 --text --device-memory 1M " + file("in.txt") + " " +
                  file("out.txt"));
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("raw binary"), std::string::npos) << o.err;
  EXPECT_EQ(listing(), std::vector<std::string>{"in.txt"});
  o = run("sort --type u32 --text --memory 1M " + file("in.txt") + " " + file("out.txt"));
  EXPECT_EQ(o.code, 2);
  // Without a budget, text sorts in memory as before.
  o = run("sort --type u32 --text " + file("in.txt") + " " + file("out.txt"));
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(slurp(file("out.txt")), "1\n2\n3\n");
}

TEST_F(ExternalTool, StatsInMemory) {
  gen("--type u32 --n 1000 --seed 2");
  const outcome o = run("sort --type u32 --stats " + file("in.bin") + " " + file("out.bin"));
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(field(o.out, "plan: "), "in memory");
  for (const char* stage : {"read: ", "sort: ", "write: "})
    EXPECT_TRUE(field(o.out, stage).ends_with(" s")) << stage << " in\n" << o.out;
  // Without --stats, nothing on stdout, budgets or not.
  EXPECT_TRUE(run("sort --type u32 " + file("in.bin") + " " + file("out.bin")).out.empty());
  EXPECT_TRUE(
      run("sort --type u32 --device-memory 1K " + file("in.bin") + " " + file("out.bin")).out.empty());
}

// An interruption after the second run (a test hook raises SIGINT) removes the scratch
// directory of runs and the pending output.
TEST_F(ExternalTool, InterruptLeavesNothingBehind) {
  gen("--type u32 --n 20000 --seed 8");
  const std::string input = slurp(file("in.bin"));
  ::setenv("GPUSORT_TEST_INTERRUPT_AFTER_RUNS", "2", 1);
  const outcome o = run("sort --type u32 --device-memory 8K " + file("in.bin") + " " +
                        file("out.bin"));
  ::unsetenv("GPUSORT_TEST_INTERRUPT_AFTER_RUNS");
  EXPECT_NE(o.code, 0);
  EXPECT_EQ(listing(), std::vector<std::string>{"in.bin"});
  EXPECT_TRUE(slurp(file("in.bin")) == input);
}

// ---- records with a byte key (--record-bytes) ----------------------------------------

// The Sort Benchmark's records (100 bytes, a 10-byte key) in memory and out of core, with
// runs bounded by the device budget (one merge pass) or the host budget (two passes),
// ascending and descending: a stable sort by memcmp key. few_unique keys share their first
// 8 bytes in pairs and differ in the last 2, so both the prefix sort and the tie-break show.
TEST_F(ExternalTool, SortBenchmarkRecordsInMemoryAndOutOfCore) {
  for (const std::string dist : {"uniform", "few_unique"}) {
    gen("--record-bytes 100 --key-bytes 10 --n 20011 --seed 3 --dist " + dist);
    const std::string input = slurp(file("in.bin"));
    ASSERT_EQ(input.size(), 2001100u);
    for (const bool descending : {false, true}) {
      SCOPED_TRACE(dist + (descending ? " --desc" : ""));
      const std::string expected = stable_sort_by_byte_key(input, 100, 0, 10, descending);
      const std::string args =
          std::string("--record-bytes 100 --key-bytes 10") + (descending ? " --desc" : "");
      EXPECT_EQ(field(expect_sorted_as(args, expected), "plan: "), "in memory");
      // 64 KiB / (12 bytes of sort key, twice) = 2730 records a run.
      std::string stats = expect_sorted_as(args + " --device-memory 64K", expected);
      EXPECT_EQ(field(stats, "plan: "),
                "8 runs of 2730 records (the last 901), merged 8 at a time in 1 pass(es)");
      for (const char* stage : {"read: ", "sort: ", "write runs: ", "merge: "})
        EXPECT_TRUE(field(stats, stage).ends_with(" s")) << stage << " in\n" << stats;
      // 300 KiB / 3 buffers of 100 bytes = 1024 records a run; merge buffers of 342 records,
      // 7 runs at a time: 20 -> 3 -> 1.
      stats = expect_sorted_as(args + " --device-memory 64K --memory 300K", expected);
      EXPECT_EQ(field(stats, "plan: "),
                "20 runs of 1024 records (the last 555), merged 7 at a time in 2 pass(es)");
      // The sorted file checks as sorted, with the input's checksum.
      const std::string check_args = args + " " + file("out.bin");
      const outcome checked = run("check " + check_args);
      EXPECT_EQ(checked.code, 0) << checked.out << checked.err;
      EXPECT_EQ(field(checked.out, "records: "),
                "20011 100-byte records (10-byte key at offset 0)");
      EXPECT_EQ(field(checked.out, "out of order: "), "0");
      EXPECT_EQ(field(checked.out, "checksum: "), checksum(args + " " + file("in.bin")));
      fs::remove(file("out.bin"));
    }
  }
}

// gen's few_unique records: 16 distinct 8-byte prefixes, each with two tails; the payload
// starts with the record's index, so that every record is distinct.
TEST_F(ExternalTool, GenFewUniqueRecordsSharePrefixesAndCarryTheirIndex) {
  gen("--record-bytes 100 --key-bytes 10 --n 5000 --dist few_unique --seed 11");
  const std::string input = slurp(file("in.bin"));
  std::vector<std::string> prefixes, keys;
  for (std::size_t i = 0; i < 5000; ++i) {
    prefixes.push_back(input.substr(i * 100, 8));
    keys.push_back(input.substr(i * 100, 10));
    std::uint64_t index = 0;
    std::memcpy(&index, input.data() + i * 100 + 10, 8);
    ASSERT_EQ(index, i);
  }
  for (auto* list : {&prefixes, &keys}) {
    std::sort(list->begin(), list->end());
    list->erase(std::unique(list->begin(), list->end()), list->end());
  }
  EXPECT_LE(prefixes.size(), 16u);
  EXPECT_GT(keys.size(), prefixes.size());
  EXPECT_LE(keys.size(), 2 * prefixes.size());
  // The same seed gives the same file; sorted gives sorted keys.
  const outcome again = run("gen --record-bytes 100 --key-bytes 10 --n 5000 --dist few_unique "
                            "--seed 11 " + file("again.bin"));
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_TRUE(slurp(file("again.bin")) == input);
  for (const std::string dist : {"sorted", "all_equal"}) {
    gen("--record-bytes 100 --key-bytes 10 --n 3000 --seed 2 --dist " + dist);
    EXPECT_EQ(run("check --record-bytes 100 --key-bytes 10 " + file("in.bin")).code, 0) << dist;
  }
  gen("--record-bytes 100 --key-bytes 10 --n 3000 --seed 2 --dist reverse");
  EXPECT_EQ(run("check --record-bytes 100 --key-bytes 10 --desc " + file("in.bin")).code, 0);
}

// No records, one, two and three: in memory and with runs of one record (24 bytes of device
// budget hold one 12-byte sort key and its workspace on the CPU backend).
TEST_F(ExternalTool, ByteRecordsZeroOneTwoAndThree) {
  for (const int n : {0, 1, 2, 3}) {
    SCOPED_TRACE(n);
    gen("--record-bytes 100 --key-bytes 10 --dist few_unique --seed 5 --n " + std::to_string(n));
    const std::string input = slurp(file("in.bin"));
    ASSERT_EQ(input.size(), 100u * n);
    for (const std::string desc : {"", " --desc"}) {
      const std::string expected = stable_sort_by_byte_key(input, 100, 0, 10, desc != "");
      expect_sorted_as("--record-bytes 100 --key-bytes 10" + desc, expected);
      const std::string stats =
          expect_sorted_as("--record-bytes 100 --key-bytes 10 --device-memory 24" + desc, expected);
      if (n >= 2)
        EXPECT_TRUE(field(stats, "plan: ").starts_with(std::to_string(n) + " runs of 1 records"))
            << stats;
      else
        EXPECT_EQ(field(stats, "plan: "), "in memory");
    }
    fs::remove(file("out.bin"));
  }
}

// Keys at a nonzero offset: 4 bytes at the end of 16-byte records (a prefix of its own, ties
// put in order by index alone), and 13 bytes at offset 5 of 37-byte records (a prefix and a
// 5-byte rest), few distinct and uniform, several runs and merge passes.
TEST_F(ExternalTool, ByteKeysAtAnOffset) {
  const struct {
    std::size_t record, offset, key;
  } layouts[] = {{16, 12, 4}, {37, 5, 13}, {9, 8, 1}};
  for (const auto& l : layouts) {
    const std::string options = "--record-bytes " + std::to_string(l.record) + " --key-bytes " +
                                std::to_string(l.key) + " --key-offset " + std::to_string(l.offset);
    for (const std::string dist : {"few_unique", "uniform"}) {
      gen(options + " --n 12007 --seed 7 --dist " + dist);
      const std::string input = slurp(file("in.bin"));
      for (const bool descending : {false, true}) {
        SCOPED_TRACE(options + " " + dist + (descending ? " --desc" : ""));
        const std::string expected =
            stable_sort_by_byte_key(input, l.record, l.offset, l.key, descending);
        const std::string args = options + (descending ? " --desc" : "");
        EXPECT_EQ(field(expect_sorted_as(args, expected), "plan: "), "in memory");
        EXPECT_NE(field(expect_sorted_as(args + " --device-memory 16K", expected), "plan: "),
                  "in memory");
        const std::string stats =
            expect_sorted_as(args + " --device-memory 16K --memory 20K", expected);
        unsigned long long runs = 0, length = 0, last = 0, fan_in = 0, passes = 0;
        ASSERT_EQ(std::sscanf(field(stats, "plan: ").c_str(),
                              "%llu runs of %llu records (the last %llu), merged %llu at a time "
                              "in %llu pass(es)",
                              &runs, &length, &last, &fan_in, &passes),
                  5)
            << stats;
        EXPECT_EQ((runs - 1) * length + last, 12007u);
        EXPECT_GE(passes, 2u);
        EXPECT_EQ(run("check " + args + " " + file("out.bin")).code, 0);
        fs::remove(file("out.bin"));
      }
    }
  }
}

// Groups of equal prefixes over 2^16 records (put in order on all cores): 70001 records whose
// 10-byte keys share their first 8 bytes and differ in the last 2 (one of 4 tails), and
// all_equal records of a 4-byte key.
TEST_F(ExternalTool, LargeGroupsOfEqualPrefixes) {
  std::mt19937 random(13);
  std::string input;
  for (std::uint32_t i = 0; i < 70001; ++i) {
    char record[16];
    std::memcpy(record, &i, 2);
    std::memcpy(record + 2, "\x80" "ABCDEFG", 8);
    record[10] = static_cast<char>(0xF0 + random() % 2);
    record[11] = static_cast<char>(random() % 2);
    std::memcpy(record + 12, &i, 4);
    input.append(record, 16);
  }
  std::ofstream(file("in.bin"), std::ios::binary).write(input.data(), input.size());
  for (const bool descending : {false, true}) {
    const std::string expected = stable_sort_by_byte_key(input, 16, 2, 10, descending);
    const std::string args = std::string("--record-bytes 16 --key-bytes 10 --key-offset 2") +
                             (descending ? " --desc" : "");
    EXPECT_EQ(field(expect_sorted_as(args, expected), "plan: "), "in memory");
    expect_sorted_as(args + " --device-memory 1M", expected);
  }
  gen("--record-bytes 16 --key-bytes 4 --key-offset 12 --n 70001 --dist all_equal --seed 3");
  const std::string equal = slurp(file("in.bin"));
  expect_sorted_as("--record-bytes 16 --key-bytes 4 --key-offset 12", equal);
  expect_sorted_as("--record-bytes 16 --key-bytes 4 --key-offset 12 --desc", equal);
}

TEST_F(ExternalTool, ByteRecordsOutputMayBeTheInput) {
  gen("--record-bytes 100 --key-bytes 10 --n 3001 --dist few_unique --seed 4");
  const std::string expected = stable_sort_by_byte_key(slurp(file("in.bin")), 100, 0, 10);
  for (const std::string budget : {"", "--device-memory 8K"}) {
    gen("--record-bytes 100 --key-bytes 10 --n 3001 --dist few_unique --seed 4");
    const outcome o = run("sort --record-bytes 100 --key-bytes 10 " + budget + " " +
                          file("in.bin") + " " + file("in.bin"));
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_TRUE(slurp(file("in.bin")) == expected) << budget;
    EXPECT_EQ(listing(), std::vector<std::string>{"in.bin"});
  }
}

// Bad combinations and files are one-line usage errors (exit 2) that leave nothing behind.
TEST_F(ExternalTool, ByteRecordUsageErrors) {
  gen("--record-bytes 100 --key-bytes 10 --n 100 --seed 2");
  const std::string input = slurp(file("in.bin"));
  const std::string records = "--record-bytes 100 --key-bytes 10 ";
  const auto expect_usage_error = [&](const std::string& args, const std::string& words) {
    SCOPED_TRACE(args);
    const outcome o = run(args);
    EXPECT_EQ(o.code, 2);
    EXPECT_NE(o.err.find(words), std::string::npos) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
    EXPECT_TRUE(o.out.empty()) << o.out;
    EXPECT_TRUE(slurp(file("in.bin")) == input);
    EXPECT_EQ(listing(), std::vector<std::string>{"in.bin"});
  };
  const std::string files = file("in.bin") + " " + file("out.bin");
  for (const std::string command : {"sort ", "check "}) {
    const std::string args = command == "sort " ? files : file("in.bin");
    for (const std::string typed : {"--type u32", "--pairs u32", "--text"})
      expect_usage_error(command + records + typed + " " + args,
                         typed.substr(0, typed.find(' ')) + " does not go with --record-bytes");
    expect_usage_error(command + "--record-bytes 100 " + args, "--record-bytes needs --key-bytes");
    expect_usage_error(command + "--type u32 --key-bytes 4 " + args, "go with --record-bytes");
    expect_usage_error(command + "--type u32 --key-offset 4 " + args, "go with --record-bytes");
    expect_usage_error(command + "--record-bytes 100 --key-bytes 0 " + args, "at least 1");
    expect_usage_error(command + "--record-bytes 100 --key-bytes 10 --key-offset 91 " + args,
                       "a key of 10 bytes at offset 91 does not fit in a record of 100 bytes");
    expect_usage_error(command + "--record-bytes 0 --key-bytes 1 " + args, "from 1 to 65536");
    expect_usage_error(command + "--record-bytes 65537 --key-bytes 1 " + args, "from 1 to 65536");
    expect_usage_error(command + "--record-bytes ten --key-bytes 1 " + args, "'ten'");
    // 10000 bytes are no whole number of 64-byte records.
    expect_usage_error(command + "--record-bytes 64 --key-bytes 10 " + args,
                       "10000 bytes is not a whole number of 64-byte records (10-byte key at "
                       "offset 0)");
  }
  expect_usage_error("sort --record-bytes 64 --key-bytes 10 --device-memory 1M " + files,
                     "not a whole number of 64-byte records");
  expect_usage_error("sort " + records + "--device-memory 23 " + files,
                     "the device memory budget of 23 bytes cannot hold one record's 12-byte "
                     "sort key");
  expect_usage_error("sort " + records + "--memory 299 " + files,
                     "the host memory budget of 299 bytes cannot hold 3 run buffers");
  expect_usage_error("sort " + records + "--algo std_sort --memory 1M " + files,
                     "no --device-memory");
  expect_usage_error("sort " + records + "--algo quick " + files, "quick");
  expect_usage_error("gen " + records + "--n 10 --dist zipf " + file("out.bin"), "--dist zipf");
  expect_usage_error("gen " + records + "--n 10 --dist gaussian " + file("out.bin"), "few_unique");
  expect_usage_error("gen " + records + "--n 10 --dist wobbly " + file("out.bin"), "wobbly");
  expect_usage_error("gen " + records + "--type u32 --n 10 " + file("out.bin"), "--type");
  expect_usage_error("gen " + records + "--pairs u32 --n 10 " + file("out.bin"), "--pairs");
  expect_usage_error("gen " + records + "--text --n 10 " + file("out.bin"), "--text");
  expect_usage_error("gen " + records + file("out.bin"), "--n is required");
  expect_usage_error("gen --record-bytes 8 --key-bytes 9 --n 10 " + file("out.bin"),
                     "does not fit");
}

// check's report and exit codes on records with a byte key: 1 out of order (which record
// first, how many), 0 in order; the checksum covers all bytes of a record, the payload too.
TEST_F(ExternalTool, CheckByteRecords) {
  // 6-byte records, a 2-byte key at offset 1: keys 01 00, 00 ff, 00 ff, 02 00, 01 ff.
  const unsigned char raw[] = {9, 1, 0, 0, 0, 0,  9, 0, 0xff, 1, 1, 1, 9, 0, 0xff, 2, 2, 2,
                               9, 2, 0, 3, 3, 3,  9, 1, 0xff, 4, 4, 4};
  std::ofstream(file("in.bin"), std::ios::binary)
      .write(reinterpret_cast<const char*>(raw), sizeof raw);
  const std::string layout = "--record-bytes 6 --key-bytes 2 --key-offset 1 ";
  outcome o = run("check " + layout + file("in.bin"));
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_EQ(field(o.out, "records: "), "5 6-byte records (2-byte key at offset 1)");
  EXPECT_EQ(field(o.out, "sorted (ascending): "), "no");
  EXPECT_EQ(field(o.out, "first out of order: "), "1");
  EXPECT_EQ(field(o.out, "out of order: "), "2");
  const std::string input_sum = field(o.out, "checksum: ");
  o = run("check " + layout + "--desc " + file("in.bin"));
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(field(o.out, "first out of order: "), "3");
  EXPECT_EQ(field(o.out, "out of order: "), "1");
  EXPECT_EQ(field(o.out, "checksum: "), input_sum);
  ASSERT_EQ(run("sort " + layout + file("in.bin") + " " + file("out.bin")).code, 0);
  const std::string sorted = slurp(file("out.bin"));
  EXPECT_TRUE(sorted == stable_sort_by_byte_key(slurp(file("in.bin")), 6, 1, 2));
  EXPECT_EQ(sorted.substr(6, 6), std::string("\x09\x00\xff\x02\x02\x02", 6));  // stable
  o = run("check " + layout + file("out.bin"));
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(field(o.out, "sorted (ascending): "), "yes");
  EXPECT_EQ(field(o.out, "first out of order: "), "none");
  EXPECT_EQ(field(o.out, "checksum: "), input_sum);
  // A changed payload byte changes the checksum, not the order.
  std::string changed = sorted;
  changed[5] ^= 1;
  std::ofstream(file("changed.bin"), std::ios::binary).write(changed.data(), changed.size());
  o = run("check " + layout + file("changed.bin"));
  EXPECT_EQ(o.code, 0);
  EXPECT_NE(field(o.out, "checksum: "), input_sum);
  // An empty file is sorted.
  std::ofstream(file("empty.bin"), std::ios::binary).close();
  o = run("check " + layout + file("empty.bin"));
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(field(o.out, "records: "), "0 6-byte records (2-byte key at offset 1)");
}

// An interruption after the second run leaves the input and nothing else.
TEST_F(ExternalTool, ByteRecordsInterruptLeavesNothingBehind) {
  gen("--record-bytes 100 --key-bytes 10 --n 5000 --seed 8");
  const std::string input = slurp(file("in.bin"));
  ::setenv("GPUSORT_TEST_INTERRUPT_AFTER_RUNS", "2", 1);
  const outcome o = run("sort --record-bytes 100 --key-bytes 10 --device-memory 8K " +
                        file("in.bin") + " " + file("out.bin"));
  ::unsetenv("GPUSORT_TEST_INTERRUPT_AFTER_RUNS");
  EXPECT_NE(o.code, 0);
  EXPECT_EQ(listing(), std::vector<std::string>{"in.bin"});
  EXPECT_TRUE(slurp(file("in.bin")) == input);
}

// With the GPU where there is one (the record pipeline: prefixes and positions sorted on the
// device, its workspace setting the run length) and every kind of sort: the bytes of a stable sort by memcmp key.
TEST_F(ExternalToolAnyDevice, ByteRecordsMatchAStableSortUnderEveryBudget) {
  ASSERT_EQ(run("gen --record-bytes 100 --key-bytes 10 --n 2^15+3 --dist few_unique --seed 12 " +
                file("in.bin")).code,
            0);
  const std::string input = slurp(file("in.bin"));
  for (const bool descending : {false, true}) {
    const std::string expected = stable_sort_by_byte_key(input, 100, 0, 10, descending);
    for (const std::string options :
         {"", "--device-memory 64K", "--device-memory 1M --memory 256K", "--memory 512K",
          "--algo std_sort", "--algo cpu_parallel", "--algo bitonic --device-memory 128K",
          "--algo sample_sort"}) {
      const std::string args =
          "--record-bytes 100 --key-bytes 10 " + options + (descending ? " --desc" : "");
      const outcome o =
          run("sort " + args + " --stats " + file("in.bin") + " " + file("out.bin"));
      ASSERT_EQ(o.code, 0) << args << ": " << o.err;
      EXPECT_TRUE(slurp(file("out.bin")) == expected) << args << "\n" << o.out;
      // One pass without budgets: in memory, or on a GPU the record pipeline's single run.
      const std::string plan = field(o.out, "plan: ");
      EXPECT_EQ(plan == "in memory" || plan.starts_with("on the GPU at once"),
                options.find("memory") == std::string::npos)
          << args << "\n" << o.out;
      EXPECT_EQ(listing(), (std::vector<std::string>{"in.bin", "out.bin"})) << args;
      fs::remove(file("out.bin"));
    }
  }
}

}  // namespace
