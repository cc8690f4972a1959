// Out-of-core sorting on the CPU (src/external/run_plan.hpp, src/external/run_merge.hpp):
// the plan's arithmetic, the cuts of sorted runs into merge windows
// (src/external/merge_windows.hpp), runs cut, sorted, written and merged in one or more
// passes against a stable sort of the whole input (identical bytes: stable and nothing lost), and
// cleanup of the scratch files on an exception, a full disk and a signal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "merge_windows.hpp"
#include "run_merge.hpp"
#include "run_plan.hpp"
#include "scratch_dir.hpp"

namespace fs = std::filesystem;
namespace ext = gpusort::detail::external;
using bytes = std::vector<unsigned char>;

namespace {

// ---- plan -----------------------------------------------------------------------------

constexpr ext::plan_request request(std::uint64_t records, std::uint64_t record_bytes,
                                    std::uint64_t device_budget) {
  return {.records = records, .record_bytes = record_bytes, .device_budget_bytes = device_budget};
}

static_assert(ext::plan_runs(request(100, 8, 400)).run_count == 2);
static_assert(ext::merge_pass_count(7, 2) == 3);

TEST(RunPlan, WholeAndPartialRuns) {
  ext::run_plan plan = ext::plan_runs(request(100, 8, 400));  // 50 records fit
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan.run_records, 50u);
  EXPECT_EQ(plan.run_count, 2u);
  EXPECT_EQ(plan.last_run_records, 50u);
  EXPECT_EQ(plan.fan_in, 2u);
  EXPECT_EQ(plan.merge_passes, 1u);

  plan = ext::plan_runs(request(101, 8, 407));  // 50 fit; 7 bytes spare are no record
  EXPECT_EQ(plan.run_records, 50u);
  EXPECT_EQ(plan.run_count, 3u);
  EXPECT_EQ(plan.last_run_records, 1u);
  EXPECT_EQ(plan.records_of_run(0), 50u);
  EXPECT_EQ(plan.records_of_run(2), 1u);
  EXPECT_EQ(plan.fan_in, 3u);
  EXPECT_EQ(plan.merge_passes, 1u);
}

TEST(RunPlan, NoRecordsOneRecordAndAllFitting) {
  ext::run_plan plan = ext::plan_runs(request(0, 8, 400));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan.run_count, 0u);
  EXPECT_EQ(plan.merge_passes, 0u);

  plan = ext::plan_runs(request(1, 8, 8));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan.run_records, 1u);
  EXPECT_EQ(plan.run_count, 1u);
  EXPECT_EQ(plan.last_run_records, 1u);
  EXPECT_EQ(plan.fan_in, 0u);

  plan = ext::plan_runs(request(1000, 8, 1 << 20));  // all fit: one run, no merge
  EXPECT_EQ(plan.run_records, 1000u);
  EXPECT_EQ(plan.run_count, 1u);
  EXPECT_EQ(plan.last_run_records, 1000u);
  EXPECT_EQ(plan.fan_in, 0u);
  EXPECT_EQ(plan.merge_passes, 0u);
  EXPECT_EQ(plan.merge_buffer_bytes, ext::mebibyte);
}

TEST(RunPlan, WorkspaceCountsAgainstTheDeviceBudget) {
  ext::plan_request r = request(1000, 8, 1600);
  r.workspace_bytes_per_record = 8;  // a second buffer: 16 bytes a record
  const ext::run_plan plan = ext::plan_runs(r);
  EXPECT_EQ(plan.run_records, 100u);
  EXPECT_EQ(plan.run_count, 10u);

  r.record_bytes = 100;  // Sort Benchmark records with a second buffer: 200 bytes a record
  r.workspace_bytes_per_record = 100;
  r.device_budget_bytes = 200 * 10 + 199;
  EXPECT_EQ(ext::plan_runs(r).run_records, 10u);
  r.workspace_bytes_per_record = 0;  // in place: twice as many
  EXPECT_EQ(ext::plan_runs(r).run_records, 21u);
}

TEST(RunPlan, BudgetsTooSmallAreErrors) {
  EXPECT_EQ(ext::plan_runs(request(10, 8, 7)).problem,
            ext::plan_problem::device_budget_below_one_record);
  ext::plan_request r = request(10, 8, 12);
  r.workspace_bytes_per_record = 8;
  EXPECT_EQ(ext::plan_runs(r).problem, ext::plan_problem::device_budget_below_one_record);
  try {
    ext::plan_runs_or_throw(r);
    ADD_FAILURE() << "no error";
  } catch (const gpusort::invalid_request& e) {
    EXPECT_STREQ(e.what(),
                 "the device memory budget of 12 bytes cannot hold one 8-byte record and its 8 "
                 "bytes of workspace");
  }

  r = request(10, 8, 800);
  r.host_budget_bytes = 15;  // two run buffers of one record need 16
  EXPECT_EQ(ext::plan_runs(r).problem, ext::plan_problem::host_budget_below_one_record);
  EXPECT_THROW(ext::plan_runs_or_throw(r), gpusort::invalid_request);

  r.host_budget_bytes = 16;  // one record a run: 10 runs, but no room for merge buffers
  r.merge_buffer_bytes = 8;
  EXPECT_EQ(ext::plan_runs(r).problem, ext::plan_problem::host_budget_below_merge);
  r.host_budget_bytes = 24;  // 3 buffers: fan-in 2
  EXPECT_TRUE(ext::plan_runs(r).ok());
  EXPECT_EQ(ext::plan_runs(r).fan_in, 2u);

  EXPECT_EQ(ext::plan_runs(request(10, 0, 800)).problem, ext::plan_problem::no_record_bytes);
}

TEST(RunPlan, HostBudgetForcesMultiPassMerges) {
  ext::plan_request r = request(1000, 16, 16 * 10);  // 100 runs of 10
  r.merge_buffer_bytes = 50;                          // rounds up to 64: 4 records
  r.host_budget_bytes = 64 * 5 + 63;                  // 5 buffers: 4 in, 1 out
  ext::run_plan plan = ext::plan_runs(r);
  ASSERT_TRUE(plan.ok()) << ext::describe(plan.problem, r);
  EXPECT_EQ(plan.run_records, 10u);
  EXPECT_EQ(plan.run_count, 100u);
  EXPECT_EQ(plan.merge_buffer_bytes, 64u);
  EXPECT_EQ(plan.fan_in, 4u);
  EXPECT_EQ(plan.merge_passes, 4u);  // 100 -> 25 -> 7 -> 2 -> 1

  r.host_budget_bytes = 2 * 16 * 5;  // two run buffers of 5 records, or 10 merge buffers
  r.merge_buffer_bytes = 16;
  plan = ext::plan_runs(r);
  EXPECT_EQ(plan.run_records, 5u);
  EXPECT_EQ(plan.run_count, 200u);
  EXPECT_EQ(plan.fan_in, 9u);
  EXPECT_EQ(plan.merge_passes, 3u);  // 200 -> 23 -> 3 -> 1

  r.host_budget_bytes = 0;  // unlimited: only the open-file cap limits the fan-in
  r.max_fan_in = 10;
  plan = ext::plan_runs(r);
  EXPECT_EQ(plan.run_records, 10u);
  EXPECT_EQ(plan.fan_in, 10u);
  EXPECT_EQ(plan.merge_passes, 2u);
}

TEST(RunPlan, PassCount) {
  EXPECT_EQ(ext::merge_pass_count(0, 2), 0u);
  EXPECT_EQ(ext::merge_pass_count(1, 2), 0u);
  EXPECT_EQ(ext::merge_pass_count(2, 2), 1u);
  EXPECT_EQ(ext::merge_pass_count(8, 2), 3u);
  EXPECT_EQ(ext::merge_pass_count(9, 2), 4u);
  EXPECT_EQ(ext::merge_pass_count(16, 16), 1u);
  EXPECT_EQ(ext::merge_pass_count(17, 16), 2u);
  EXPECT_EQ(ext::merge_pass_count(256, 16), 2u);
  EXPECT_EQ(ext::merge_pass_count(257, 16), 3u);
}

// 40,961 keys in runs of 20,416 make 3 runs: on 4 GPUs, 4 runs of 10,241 instead.
TEST(RunPlan, EveryGpuSortsARunOnceTheKeysNeedSeveral) {
  EXPECT_EQ(ext::run_keys_on_gpus(40961, 20416, 4), 10241u);
  EXPECT_EQ(ext::run_keys_on_gpus(40961, 20416, 3), 20416u);   // 3 runs already
  EXPECT_EQ(ext::run_keys_on_gpus(100003, 20416, 4), 20416u);  // 5 runs
  EXPECT_EQ(ext::run_keys_on_gpus(20416, 20416, 4), 20416u);   // one run: no merge to add
  EXPECT_EQ(ext::run_keys_on_gpus(40961, 20416, 1), 20416u);
  EXPECT_EQ(ext::run_keys_on_gpus(0, 1, 4), 1u);
  for (std::uint64_t gpus = 1; gpus <= 8; ++gpus)
    for (std::uint64_t fit = 1; fit <= 40; ++fit)
      for (std::uint64_t count = 0; count <= 200; ++count) {
        const std::uint64_t keys = ext::run_keys_on_gpus(count, fit, gpus);
        const std::uint64_t runs = (count + keys - 1) / keys, before = (count + fit - 1) / fit;
        ASSERT_LE(keys, fit);
        ASSERT_GE(runs, before);
        if (before >= 2) {
          // Equal runs of count / gpus rounded up: one a GPU once count > gpus * (gpus - 1).
          if (count > gpus * (gpus - 1)) ASSERT_GE(runs, gpus);
          ASSERT_LE(runs, std::max(gpus, before));
        } else {
          ASSERT_EQ(keys, fit);
        }
      }
}

// ---- end to end -------------------------------------------------------------------------

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const fs::path& path, const bytes& data) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

bytes read_file(const fs::path& path) {
  const std::string text = slurp(path);
  return bytes(text.begin(), text.end());
}

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// The expected output, computed without the code under test: records stably sorted by a key
// read with `key_of` and compared with `less` (reversed for descending).
template <class Key, class Less>
bytes stable_reference(const bytes& input, std::size_t record_bytes, bool descending,
                       Key key_of, Less less) {
  const std::size_t n = input.size() / record_bytes;
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto ka = key_of(&input[a * record_bytes]), kb = key_of(&input[b * record_bytes]);
    return descending ? less(kb, ka) : less(ka, kb);
  });
  bytes out;
  for (const std::size_t i : order)
    out.insert(out.end(), input.begin() + i * record_bytes, input.begin() + (i + 1) * record_bytes);
  return out;
}

template <class K>
bytes typed_reference(const bytes& input, const ext::record_layout& layout) {
  return stable_reference(
      input, layout.record_bytes, layout.descending,
      [&](const unsigned char* record) {
        K key;
        std::memcpy(&key, record + layout.key_offset, sizeof key);
        return key;
      },
      gpusort::less<K>{});
}

bytes byte_key_reference(const bytes& input, const ext::record_layout& layout) {
  return stable_reference(
      input, layout.record_bytes, layout.descending,
      [&](const unsigned char* record) {
        return std::string(record + layout.key_offset, record + layout.key_offset + layout.key_bytes);
      },
      [](const std::string& a, const std::string& b) {
        return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                            [](char x, char y) {
                                              return static_cast<unsigned char>(x) <
                                                     static_cast<unsigned char>(y);
                                            });
      });
}

class ExternalSort : public gpusort::testing::ScratchDirTest {
 protected:
  fs::path file(const std::string& name) const { return dir_ / name; }

  // The whole out-of-core sort on the CPU: plan, cut into sorted runs, merge, commit.
  // Checks that only the input and the output are left, and returns the output.
  bytes sort_file(const bytes& input, const ext::record_layout& layout,
                  ext::plan_request request, ext::run_plan* planned = nullptr) {
    write_file(file("in"), input);
    request.records = input.size() / layout.record_bytes;
    request.record_bytes = layout.record_bytes;
    const ext::run_plan plan = ext::plan_runs_or_throw(request);
    if (planned) *planned = plan;
    {
      ext::pending_file out(file("out").string());
      ext::scratch_directory scratch(file("out"));
      const auto runs = cut_sorted_runs(layout, plan, scratch);
      EXPECT_EQ(runs.size(), plan.run_count);
      ext::merge_runs(runs, layout, plan.fan_in, plan.merge_buffer_bytes, scratch, out.get(),
                      out.path());
      out.commit();
    }
    EXPECT_EQ(listing(dir_), (std::vector<std::string>{"in", "out"}));
    EXPECT_EQ(read_file(file("in")), input) << "the input changed";
    return read_file(file("out"));
  }

  // Writes `input` (8-byte records, as from u32_pairs) as file "in" and plans its sort:
  // `run_records` to a run, merged through buffers of `window_records` with a host budget of
  // three such buffers.
  ext::run_plan write_input_and_plan(const bytes& input, std::uint64_t run_records,
                                     std::uint64_t window_records) const {
    write_file(file("in"), input);
    return ext::plan_runs_or_throw({.records = input.size() / 8, .record_bytes = 8,
                                    .device_budget_bytes = 8 * run_records,
                                    .host_budget_bytes = 8 * window_records * 3,
                                    .merge_buffer_bytes = 8 * window_records});
  }

  // Cuts file "in" into the runs of `plan` in `scratch`, each sorted on the CPU.
  std::vector<fs::path> cut_sorted_runs(const ext::record_layout& layout,
                                        const ext::run_plan& plan,
                                        ext::scratch_directory& scratch) const {
    return ext::cut_into_runs(
        file("in").string(), layout, plan, scratch,
        [&](std::span<unsigned char> run) { ext::stable_sort_records(run, layout); });
  }
};

template <class T>
void append(bytes& out, T value) {
  const auto* raw = reinterpret_cast<const unsigned char*>(&value);
  out.insert(out.end(), raw, raw + sizeof value);
}

// (u32 key from a few distinct ones, u32 original index): stability shows in the values.
bytes u32_pairs(std::size_t n, std::uint32_t distinct, unsigned seed) {
  std::mt19937 random(seed);
  bytes out;
  for (std::uint32_t i = 0; i < n; ++i) {
    append<std::uint32_t>(out, random() % distinct);
    append<std::uint32_t>(out, i);
  }
  return out;
}

TEST_F(ExternalSort, U32PairsOnePassAndMultiPassAreStable) {
  const ext::record_layout layout = ext::record_layout::keys<std::uint32_t>(4);
  const bytes input = u32_pairs(1000, 50, 1);
  const bytes expected = typed_reference<std::uint32_t>(input, layout);

  ext::run_plan plan;
  ext::plan_request one_pass{.device_budget_bytes = 8 * 64};  // 64 records a run: 16 runs
  EXPECT_EQ(sort_file(input, layout, one_pass, &plan), expected);
  EXPECT_EQ(plan.run_count, 16u);
  EXPECT_EQ(plan.last_run_records, 1000u - 15 * 64);
  EXPECT_EQ(plan.merge_passes, 1u);

  ext::plan_request fan_in_two = one_pass;
  fan_in_two.merge_buffer_bytes = 8 * 4;
  fan_in_two.host_budget_bytes = 8 * 4 * 3;  // 3 buffers; runs need 2 x 8 x 6 (runs of 6)
  EXPECT_EQ(sort_file(input, layout, fan_in_two, &plan), expected);
  EXPECT_EQ(plan.run_records, 6u);
  EXPECT_EQ(plan.run_count, 167u);
  EXPECT_EQ(plan.fan_in, 2u);
  EXPECT_EQ(plan.merge_passes, 8u);
}

TEST_F(ExternalSort, SevenRunsWithFanInTwo) {
  const ext::record_layout layout = ext::record_layout::keys<std::uint32_t>(4);
  const bytes input = u32_pairs(67, 5, 2);  // 7 runs of 10, the last of 7
  ext::run_plan plan;
  const bytes output = sort_file(input, layout,
                                 {.device_budget_bytes = 80, .host_budget_bytes = 3 * 80,
                                  .merge_buffer_bytes = 80},
                                 &plan);
  EXPECT_EQ(plan.run_count, 7u);
  EXPECT_EQ(plan.last_run_records, 7u);
  EXPECT_EQ(plan.fan_in, 2u);
  EXPECT_EQ(plan.merge_passes, 3u);
  EXPECT_EQ(output, typed_reference<std::uint32_t>(input, layout));
}

TEST_F(ExternalSort, DescendingKeepsEqualKeysInInputOrder) {
  const ext::record_layout layout = ext::record_layout::keys<std::uint32_t>(4, true);
  const bytes input = u32_pairs(500, 7, 3);
  const bytes output = sort_file(input, layout,
                                 {.device_budget_bytes = 8 * 33, .host_budget_bytes = 8 * 33 * 3,
                                  .merge_buffer_bytes = 8 * 33});
  EXPECT_EQ(output, typed_reference<std::uint32_t>(input, layout));
  std::uint32_t first_key;
  std::memcpy(&first_key, output.data(), 4);
  EXPECT_EQ(first_key, 6u);
}

// f64 keys with both zeros, infinities and NaNs of either sign and several payloads; the
// payloads come out unchanged, NaNs last, -0.0 before +0.0.
TEST_F(ExternalSort, F64KeysInTotalOrder) {
  const double specials[] = {-0.0,
                             0.0,
                             std::numeric_limits<double>::quiet_NaN(),
                             -std::numeric_limits<double>::quiet_NaN(),
                             std::bit_cast<double>(0x7ff0000000000123ull),
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(),
                             1.5,
                             -2.25};
  std::mt19937 random(4);
  bytes input;
  for (std::uint64_t i = 0; i < 400; ++i) {
    append<double>(input, specials[random() % std::size(specials)]);
    append<std::uint64_t>(input, i);
  }
  for (const bool descending : {false, true}) {
    const ext::record_layout layout = ext::record_layout::keys<double>(8, descending);
    const bytes output =
        sort_file(input, layout, {.device_budget_bytes = 16 * 23, .host_budget_bytes = 16 * 23 * 4,
                                  .merge_buffer_bytes = 16 * 23});
    EXPECT_EQ(output, typed_reference<double>(input, layout)) << descending;
    double nan_end;  // NaNs sort last: at the end ascending, at the start descending
    std::memcpy(&nan_end, output.data() + (descending ? 0 : output.size() - 16), 8);
    EXPECT_TRUE(std::isnan(nan_end));
  }
}

// Every typed key, extremes included, with the key after a 3-byte prefix (unaligned).
template <class K>
bytes typed_key_records() {
  const K extremes[] = {std::numeric_limits<K>::lowest(), std::numeric_limits<K>::max(), K{0},
                        K{1}, static_cast<K>(-1)};
  std::mt19937_64 random(5);
  bytes input;
  for (std::uint32_t i = 0; i < 300; ++i) {
    append<std::uint8_t>(input, 0xAB);
    append<std::uint16_t>(input, static_cast<std::uint16_t>(i));
    append<K>(input, i % 3 == 0 ? extremes[random() % 5] : static_cast<K>(random() % 20) - K{5});
  }
  return input;
}

template <class K>
void expect_typed_key_sorted(const std::function<bytes(const bytes&, const ext::record_layout&,
                                                       ext::plan_request)>& sort) {
  const bytes input = typed_key_records<K>();
  const ext::record_layout layout{3 + sizeof(K), 3, sizeof(K), ext::key_kind_of<K>(), false};
  const std::uint64_t run_bytes = layout.record_bytes * 41;  // 8 runs; fan-in 3: 2 passes
  EXPECT_EQ(sort(input, layout,
                 {.device_budget_bytes = run_bytes, .host_budget_bytes = run_bytes * 4,
                  .merge_buffer_bytes = run_bytes}),
            typed_reference<K>(input, layout))
      << gpusort::key_traits<K>::name;
}

TEST_F(ExternalSort, EverySixKeyTypesUnaligned) {
  const auto sort = [this](const bytes& input, const ext::record_layout& layout,
                           ext::plan_request request) { return sort_file(input, layout, request); };
  expect_typed_key_sorted<std::uint32_t>(sort);
  expect_typed_key_sorted<std::int32_t>(sort);
  expect_typed_key_sorted<float>(sort);
  expect_typed_key_sorted<std::uint64_t>(sort);
  expect_typed_key_sorted<std::int64_t>(sort);
  expect_typed_key_sorted<double>(sort);
}

// The Sort Benchmark's records: 100 bytes, a 10-byte key compared as unsigned bytes, drawn
// from 12 keys (bytes above 0x7f included) so that most are duplicates; the payload holds
// the record's index.
bytes sort_benchmark_records(std::size_t n, unsigned seed) {
  std::mt19937 random(seed);
  std::vector<bytes> keys(12, bytes(10));
  for (auto& key : keys)
    for (auto& b : key) b = static_cast<unsigned char>(random() % 3 == 0 ? 0xF0 : random());
  keys[1] = keys[0];
  keys[1][9] ^= 1;  // differs in the last byte only
  bytes out;
  for (std::uint32_t i = 0; i < n; ++i) {
    const bytes& key = keys[random() % keys.size()];
    out.insert(out.end(), key.begin(), key.end());
    append<std::uint32_t>(out, i);
    for (int b = 0; b < 86; ++b) out.push_back(static_cast<unsigned char>(i * 7 + b));
  }
  return out;
}

TEST_F(ExternalSort, SortBenchmarkRecords) {
  const bytes input = sort_benchmark_records(500, 6);
  for (const bool descending : {false, true}) {
    const ext::record_layout layout = ext::record_layout::sort_benchmark(descending);
    ext::run_plan plan;
    const bytes output = sort_file(input, layout,
                                   {.device_budget_bytes = 100 * 37, .host_budget_bytes = 100 * 40 * 4,
                                    .merge_buffer_bytes = 100 * 40},
                                   &plan);
    EXPECT_EQ(plan.run_count, 14u);  // 13 runs of 37 and one of 19
    EXPECT_EQ(plan.fan_in, 3u);
    EXPECT_EQ(plan.merge_passes, 3u);
    EXPECT_EQ(output, byte_key_reference(input, layout)) << descending;
  }
}

// Byte keys inside the record (`gpusort sort --record-bytes`): shorter than 8 bytes, longer
// (a prefix and a rest), one byte at the end; drawn from 5 keys, so that ties cross runs and
// keep input order; the payload starts with the record's index.
TEST_F(ExternalSort, ByteKeysAtAnOffset) {
  const struct {
    std::size_t record, offset, key;
  } layouts[] = {{16, 12, 4}, {37, 5, 13}, {9, 8, 1}};
  for (const auto& l : layouts) {
    std::mt19937 random(9);
    std::vector<bytes> keys(5, bytes(l.key));
    for (auto& key : keys)
      for (auto& b : key) b = static_cast<unsigned char>(random() % 2 ? 0xF7 : random());
    bytes input;
    for (std::uint32_t i = 0; i < 700; ++i) {
      bytes record(l.record);
      for (auto& b : record) b = static_cast<unsigned char>(random());
      std::memcpy(record.data(), &i, 4);
      const bytes& key = keys[random() % keys.size()];
      std::copy(key.begin(), key.end(), record.begin() + l.offset);
      input.insert(input.end(), record.begin(), record.end());
    }
    for (const bool descending : {false, true}) {
      const ext::record_layout layout{l.record, l.offset, l.key, ext::key_kind::bytes, descending};
      ext::run_plan plan;
      const bytes output = sort_file(input, layout,
                                     {.device_budget_bytes = l.record * 45,
                                      .host_budget_bytes = l.record * 45 * 4,
                                      .merge_buffer_bytes = l.record * 45},
                                     &plan);
      EXPECT_EQ(plan.run_count, 16u);  // 15 runs of 45 and one of 25
      EXPECT_EQ(plan.fan_in, 3u);
      EXPECT_EQ(plan.merge_passes, 3u);
      EXPECT_EQ(output, byte_key_reference(input, layout)) << l.record << " " << descending;
    }
  }
}

TEST_F(ExternalSort, EmptyInputGivesAnEmptyOutput) {
  ext::run_plan plan;
  EXPECT_EQ(sort_file({}, ext::record_layout::sort_benchmark(), {.device_budget_bytes = 1000},
                      &plan),
            bytes{});
  EXPECT_EQ(plan.run_count, 0u);
}

TEST_F(ExternalSort, OneRunIsCopied) {
  const ext::record_layout layout = ext::record_layout::keys<std::uint32_t>(4);
  const bytes input = u32_pairs(100, 10, 7);
  ext::run_plan plan;
  EXPECT_EQ(sort_file(input, layout, {.device_budget_bytes = 1 << 20}, &plan),
            typed_reference<std::uint32_t>(input, layout));
  EXPECT_EQ(plan.run_count, 1u);
}

// Sorted runs of the caller's, of lengths 0 to 17: merged stably with fan-in 2, and kept.
TEST_F(ExternalSort, CallersRunsOfDifferentLengthsAreMergedAndKept) {
  const ext::record_layout layout = ext::record_layout::keys<std::uint32_t>(4);
  const bytes input = u32_pairs(3 + 17 + 0 + 1 + 5 + 9, 4, 8);
  std::vector<fs::path> runs;
  std::size_t at = 0;
  for (const std::size_t length : {3, 17, 0, 1, 5, 9}) {
    bytes run(input.begin() + at * 8, input.begin() + (at + length) * 8);
    ext::stable_sort_records(run, layout);
    runs.push_back(file("caller" + std::to_string(runs.size())));
    write_file(runs.back(), run);
    at += length;
  }
  {
    ext::pending_file out(file("out").string());
    ext::scratch_directory scratch(file("out"));
    ext::merge_runs(runs, layout, 2, 16, scratch, out.get(), out.path());
    out.commit();
  }
  EXPECT_EQ(read_file(file("out")), typed_reference<std::uint32_t>(input, layout));
  EXPECT_EQ(listing(dir_), (std::vector<std::string>{"caller0", "caller1", "caller2", "caller3",
                                                     "caller4", "caller5", "out"}));
}

TEST(RecordLayout, ChecksTheKeyFits) {
  using usage_error = gpusort::invalid_request;
  EXPECT_NO_THROW(ext::check_layout(ext::record_layout::sort_benchmark()));
  EXPECT_THROW(ext::check_layout({100, 95, 10, ext::key_kind::bytes}), usage_error);
  EXPECT_THROW(ext::check_layout({8, 0, 8, ext::key_kind::u32}), usage_error);
  EXPECT_THROW(ext::check_layout({8, 0, 0, ext::key_kind::bytes}), usage_error);
  EXPECT_THROW(ext::check_layout({0, 0, 0, ext::key_kind::bytes}), usage_error);
}

// ---- interruptions -------------------------------------------------------------------

// A failure in the middle of the second pass (here thrown by the progress callback, as a
// Ctrl-C turned into an exception would be): no scratch file, no output, the input and the
// caller's runs untouched.
TEST_F(ExternalSort, AnExceptionMidMergeLeavesNoTemporaries) {
  const ext::record_layout layout = ext::record_layout::keys<std::uint32_t>(4);
  const bytes input = u32_pairs(200, 20, 9);
  const ext::run_plan plan = write_input_and_plan(input, 10, 4);
  ASSERT_EQ(plan.fan_in, 2u);
  ASSERT_GE(plan.merge_passes, 3u);
  write_file(file("caller_run"), bytes(input.begin(), input.begin() + 8));  // one record: sorted
  bool thrown = false;
  try {
    ext::pending_file out(file("out").string());
    ext::scratch_directory scratch(file("out"));
    auto runs = cut_sorted_runs(layout, plan, scratch);
    runs.insert(runs.begin(), file("caller_run"));
    EXPECT_EQ(listing(scratch.path()).size(), plan.run_count);
    ext::merge_runs(runs, layout, plan.fan_in, plan.merge_buffer_bytes, scratch, out.get(),
                    out.path(),
                    [&](std::string_view phase, std::uint64_t done, std::uint64_t) {
                      if (phase.starts_with("merge 2/") && done >= 40)
                        throw std::runtime_error("interrupted");
                    });
  } catch (const std::runtime_error& e) {
    thrown = std::string(e.what()) == "interrupted";
  }
  EXPECT_TRUE(thrown);
  EXPECT_EQ(listing(dir_), (std::vector<std::string>{"caller_run", "in"}));
  EXPECT_EQ(read_file(file("in")), input);
}

// A full disk: the write error names the file and says so; the scratch files go.
TEST_F(ExternalSort, AFullDiskIsAClearError) {
  const ext::record_layout layout = ext::record_layout::keys<std::uint32_t>(4);
  const ext::run_plan plan = write_input_and_plan(u32_pairs(100, 10, 10), 10, 4);
  std::string message;
  try {
    ext::scratch_directory scratch(file("out"));
    const auto runs = cut_sorted_runs(layout, plan, scratch);
    const ext::file_handle full(std::fopen("/dev/full", "wb"));
    ASSERT_TRUE(full);
    ext::merge_runs(runs, layout, plan.fan_in, plan.merge_buffer_bytes, scratch, full.get(),
                    "/dev/full");
  } catch (const gpusort::io_failure& e) {
    message = e.what();
  }
  EXPECT_EQ(message, "/dev/full: write failed: no space left on device");
  EXPECT_EQ(listing(dir_), (std::vector<std::string>{"in"}));
}

// SIGTERM or Ctrl-C in the middle of a merge: the process ends by the signal, and the scratch
// directory (with hundreds of runs: more than one read of its entries) and the pending output
// are gone.
using ExternalSortDeathTest = ExternalSort;  // death tests run first, before any thread

TEST_F(ExternalSortDeathTest, ASignalMidMergeRemovesTheTemporaries) {
  const ext::record_layout layout = ext::record_layout::keys<std::uint32_t>(4);
  const bytes input = u32_pairs(600, 30, 11);
  const ext::run_plan plan = write_input_and_plan(input, 2, 2);
  ASSERT_EQ(plan.run_count, 300u);
  for (const int signal_number : {SIGTERM, SIGINT}) {
    EXPECT_EXIT(
        {
          ext::signal_cleanup_allowed = true;  // as the tool asks (set_signal_cleanup)
          ext::pending_file out(file("out").string());
          ext::scratch_directory scratch(file("out"));
          const auto runs = cut_sorted_runs(layout, plan, scratch);
          ext::merge_runs(runs, layout, plan.fan_in, plan.merge_buffer_bytes, scratch, out.get(),
                          out.path(),
                          [&](std::string_view phase, std::uint64_t done, std::uint64_t) {
                            if (phase.starts_with("merge 1/") && done >= 300)
                              std::raise(signal_number);
                          });
          std::exit(0);  // not reached: the signal ends the process
        },
        ::testing::KilledBySignal(signal_number), "");
    EXPECT_EQ(listing(dir_), (std::vector<std::string>{"in"})) << signal_number;
    EXPECT_EQ(read_file(file("in")), input);
  }
}


// ---- merge windows --------------------------------------------------------------------

// Runs of (key, tag) records, each sorted by key, merged window by window as the GPU pipeline
// does (gather each window's slices, sort them stably by key) must give the stable merge of
// the runs: equal keys in run order, then position order.
template <class K>
void expect_windows_merge_stably(const std::vector<std::vector<K>>& runs, std::uint64_t width,
                                 bool descending) {
  std::vector<std::uint64_t> lengths;
  std::vector<std::pair<K, std::uint64_t>> expected;  // (key, tag): tag = run << 32 | index
  for (std::size_t r = 0; r < runs.size(); ++r) {
    lengths.push_back(runs[r].size());
    for (std::size_t i = 0; i < runs[r].size(); ++i) expected.push_back({runs[r][i], r << 32 | i});
  }
  const auto by_rank = [&](const auto& a, const auto& b) {
    return ext::rank_key(a.first, descending) < ext::rank_key(b.first, descending);
  };
  std::stable_sort(expected.begin(), expected.end(), by_rank);
  const auto key_at = [&](std::uint64_t run, std::uint64_t index) {
    return ext::rank_key(runs[run][index], descending);
  };
  std::vector<std::uint64_t> cuts(runs.size(), 0);
  std::vector<std::pair<K, std::uint64_t>> merged;
  const std::uint64_t total = expected.size();
  for (std::uint64_t w = 0; w * width < total; ++w) {
    const auto slices = ext::window_slices(lengths, total, width, w, cuts, key_at);
    std::vector<std::pair<K, std::uint64_t>> window;
    for (const ext::run_slice& s : slices) {
      ASSERT_LT(s.begin, s.end);
      for (std::uint64_t i = s.begin; i < s.end; ++i) window.push_back({runs[s.run][i], s.run << 32 | i});
    }
    ASSERT_EQ(window.size(), std::min(width, total - w * width)) << "window " << w;
    std::stable_sort(window.begin(), window.end(), by_rank);
    merged.insert(merged.end(), window.begin(), window.end());
  }
  EXPECT_EQ(cuts, lengths);
  ASSERT_EQ(merged.size(), expected.size());
  for (std::size_t i = 0; i < merged.size(); ++i) {
    ASSERT_EQ(merged[i].second, expected[i].second) << "position " << i;
  }
}

template <class K>
std::vector<std::vector<K>> sorted_runs(const std::vector<std::size_t>& lengths, K low, K high,
                                        bool descending, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<K>> runs;
  for (std::size_t length : lengths) {
    std::vector<K> run(length);
    for (K& k : run) {
      if constexpr (std::is_floating_point_v<K>)
        k = std::uniform_real_distribution<K>(low, high)(rng);
      else
        k = std::uniform_int_distribution<K>(low, high)(rng);
    }
    std::stable_sort(run.begin(), run.end(), [&](K a, K b) {
      return ext::rank_key(a, descending) < ext::rank_key(b, descending);
    });
    runs.push_back(run);
  }
  return runs;
}

TEST(MergeWindows, DistinctAndDuplicateKeysInEveryWindowWidth) {
  const std::vector<std::size_t> lengths{100, 100, 100, 37};
  for (bool descending : {false, true}) {
    for (std::uint32_t high : {std::uint32_t{3}, std::uint32_t{1000}, ~std::uint32_t{0}}) {
      const auto runs = sorted_runs<std::uint32_t>(lengths, 0, high, descending, high + descending);
      for (std::uint64_t width : {1u, 2u, 7u, 100u, 101u, 336u, 337u, 1000u})
        expect_windows_merge_stably(runs, width, descending);
    }
  }
}

TEST(MergeWindows, AllEqualKeysGoRunByRun) {
  const std::vector<std::vector<std::int64_t>> runs(5, std::vector<std::int64_t>(11, -4));
  for (std::uint64_t width : {1u, 3u, 11u, 12u, 55u}) expect_windows_merge_stably(runs, width, false);
}

TEST(MergeWindows, EmptyRunsAndExtremeKeys) {
  using limits = std::numeric_limits<std::int32_t>;
  for (bool descending : {false, true}) {
    std::vector<std::vector<std::int32_t>> runs{
        {}, {limits::min(), limits::min(), 0, limits::max()}, {}, {limits::min(), limits::max(), limits::max()}, {}};
    if (descending)
      for (auto& run : runs) std::reverse(run.begin(), run.end());
    for (std::uint64_t width : {1u, 2u, 4u, 7u}) expect_windows_merge_stably(runs, width, descending);
  }
}

TEST(MergeWindows, FloatsWithSignedZerosInfinitiesAndNaNs) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const double other_nan = -std::numeric_limits<double>::signaling_NaN();
  for (bool descending : {false, true}) {
    std::vector<std::vector<double>> runs{{-inf, -0.0, 0.0, 1.5, inf, nan, other_nan},
                                          {-0.0, -0.0, 0.0, nan},
                                          {-1.0, 0.0, inf, inf, other_nan, nan}};
    for (auto& run : runs)
      std::stable_sort(run.begin(), run.end(), [&](double a, double b) {
        return ext::rank_key(a, descending) < ext::rank_key(b, descending);
      });
    for (std::uint64_t width : {1u, 2u, 3u, 5u, 17u}) expect_windows_merge_stably(runs, width, descending);
  }
}

// Byte keys longer than a word (rank bytes, memcmp order) cut as u64 rank keys do: 10-byte keys
// that share their first 8 bytes or all of them, in every window width.
TEST(MergeWindows, ByteKeysCutByTheirWholeKey) {
  std::mt19937_64 rng(7);
  std::vector<std::vector<std::string>> runs(4);
  for (std::size_t r = 0; r < runs.size(); ++r) {
    for (std::size_t i = 0; i < 23 + 9 * r; ++i) {
      std::string key = "prefix\x00\xFF??";
      key[8] = static_cast<char>(rng() % 3);  // the 9th byte decides, often not even that
      key[9] = static_cast<char>(0xFE + rng() % 2);
      if (rng() % 5 == 0) key[0] = '\xF0';
      runs[r].push_back(key);
    }
    std::stable_sort(runs[r].begin(), runs[r].end());
  }
  std::vector<std::uint64_t> lengths;
  std::vector<std::pair<std::string, std::uint64_t>> expected;  // (key, run << 32 | index)
  for (std::size_t r = 0; r < runs.size(); ++r) {
    lengths.push_back(runs[r].size());
    for (std::size_t i = 0; i < runs[r].size(); ++i) expected.push_back({runs[r][i], r << 32 | i});
  }
  const auto by_key = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::stable_sort(expected.begin(), expected.end(), by_key);
  const auto key_at = [&](std::uint64_t run, std::uint64_t index) { return runs[run][index]; };
  for (std::uint64_t width : {1u, 2u, 5u, 23u, 40u, 200u}) {
    std::vector<std::uint64_t> cuts(runs.size(), 0);
    std::vector<std::pair<std::string, std::uint64_t>> merged;
    for (std::uint64_t w = 0; w * width < expected.size(); ++w) {
      std::vector<std::pair<std::string, std::uint64_t>> window;
      for (const ext::run_slice& s : ext::window_slices(lengths, expected.size(), width, w, cuts, key_at))
        for (std::uint64_t i = s.begin; i < s.end; ++i) window.push_back({runs[s.run][i], s.run << 32 | i});
      std::stable_sort(window.begin(), window.end(), by_key);
      merged.insert(merged.end(), window.begin(), window.end());
    }
    EXPECT_EQ(cuts, lengths) << width;
    EXPECT_EQ(merged, expected) << width;
  }
}

TEST(MergeWindows, RankKeysFollowTheSortOrder) {
  EXPECT_LT(ext::rank_key(-0.0f, false), ext::rank_key(0.0f, false));
  EXPECT_EQ(ext::rank_key(std::numeric_limits<float>::quiet_NaN(), false),
            ext::rank_key(-std::numeric_limits<float>::quiet_NaN(), false));
  EXPECT_LT(ext::rank_key(std::numeric_limits<float>::infinity(), false),
            ext::rank_key(std::numeric_limits<float>::quiet_NaN(), false));
  EXPECT_LT(ext::rank_key(std::int64_t{5}, true), ext::rank_key(std::int64_t{-5}, true));
  EXPECT_LT(ext::rank_key(std::numeric_limits<std::uint64_t>::max(), true), ext::rank_key(std::uint64_t{0}, true));
}

}  // namespace
