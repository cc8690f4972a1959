// `gpusort sort` out of core (tools/external/external_sort.hpp), run as a program: budgets
// that force several runs and multi-pass merges give the bytes of the in-memory sort (keys)
// or of a stable sort by key (pairs); budgets too small, --text and interruptions leave
// nothing behind. Without a GPU the run sorts use the CPU backend, and --device-memory
// counts each record twice (the record and one record of workspace).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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

 private:
  std::string saved_visible_;
  bool had_visible_ = false;
};

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
  // The order itself: -0.0 before +0.0, NaNs last.
  const std::vector<double> sorted = read_array<double>(file("mem.bin"));
  ASSERT_EQ(sorted.size(), keys.size());
  EXPECT_TRUE(std::isnan(sorted.front()));  // descending: NaNs first
  const auto zero = std::find(sorted.begin(), sorted.end(), 0.0);
  ASSERT_NE(zero, sorted.end());
  EXPECT_FALSE(std::signbit(*zero));
  const auto last_zero = std::find(sorted.rbegin(), sorted.rend(), 0.0);
  ASSERT_NE(last_zero, sorted.rend());
  EXPECT_TRUE(std::signbit(*last_zero));
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

}  // namespace
