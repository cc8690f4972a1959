// gpusort/external.hpp, the library's file sorts: keys, pairs and byte-key records under
// budgets small enough to force many runs and merge passes (the CPU backend without a GPU, the
// GPU pipeline and run path with one), against std::stable_sort; progress reports; the
// failures and what they leave behind.
#include <gtest/gtest.h>

#include <csignal>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "gpusort/external.hpp"
#include "gpusort/notices.hpp"
#include "records.hpp"  // key_code
#include "reference.hpp"
#include "scratch_dir.hpp"

namespace fs = std::filesystem;

namespace {

template <class T>
void write_file(const fs::path& path, const std::vector<T>& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data.data()),
          static_cast<std::streamsize>(data.size() * sizeof(T)));
}

template <class T>
std::vector<T> read_file(const fs::path& path) {
  std::vector<T> data(fs::file_size(path) / sizeof(T));
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(fs::file_size(path)));
  return data;
}

template <class K>
std::vector<K> random_keys(std::size_t n, std::uint64_t seed) {
  return gpusort::tools::generate<K>(gpusort::tools::distribution::uniform, n, seed);
}

// Keys with many repeats and, for floats, every special value: equal keys make stability show.
template <class K>
std::vector<K> hostile_keys(std::size_t n, std::uint64_t seed) {
  std::vector<K> keys = random_keys<K>(n, seed);
  for (std::size_t i = 0; i < n; i += 3) keys[i] = keys[i % 97];
  if constexpr (std::is_floating_point_v<K>) gpusort::testing::scatter_special_values(keys, seed);
  return keys;
}

class ExternalApi : public gpusort::testing::ScratchDirTest {
 protected:
  fs::path file(const std::string& name) const { return dir_ / name; }
  // What the directory holds besides `expected`: scratch left behind.
  std::vector<std::string> leftovers(std::vector<std::string> expected) const {
    std::vector<std::string> extra;
    for (const auto& entry : fs::directory_iterator(dir_))
      if (std::find(expected.begin(), expected.end(), entry.path().filename()) == expected.end())
        extra.push_back(entry.path().filename());
    return extra;
  }
  // Budgets that cut n records into runs of about 4096 and merge 4 at a time.
  static gpusort::external_options small_budgets(std::size_t record_bytes, bool descending) {
    gpusort::external_options opt;
    opt.sort.direction = descending ? gpusort::order::descending : gpusort::order::ascending;
    opt.device_budget_bytes = 4096 * 2 * (record_bytes + 16);
    opt.host_budget_bytes = 5 * 4096 * 16;
    return opt;
  }
};

GPUSORT_TYPED_SUITE(ExternalApiKeys, ExternalApi, gpusort::testing::key_types);

TYPED_TEST(ExternalApiKeys, SortFileMatchesStableSortInBothOrders) {
  using K = TypeParam;
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{40961}}) {
    for (const bool descending : {false, true}) {
     for (const gpusort::nan_order nans : {gpusort::nan_order::last, gpusort::nan_order::first}) {
      if (!std::is_floating_point_v<K> && nans == gpusort::nan_order::first) continue;
      SCOPED_TRACE(::testing::Message() << "n=" << n << " descending=" << descending
                                        << " nans " << gpusort::to_string(nans));
      const std::vector<K> input = hostile_keys<K>(n, n + descending);
      write_file(this->file("in"), input);
      write_file(this->file("out"), std::vector<K>(3, K{}));  // replaced when done
      gpusort::external_options opt = this->small_budgets(sizeof(K), descending);
      opt.sort.nans = nans;
      gpusort::sort_file<K>(this->file("in"), this->file("out"), opt);
      EXPECT_TRUE(gpusort::testing::same_bits(read_file<K>(this->file("out")),
                                              gpusort::testing::reference_sort(input, descending, nans)));
      EXPECT_TRUE(gpusort::testing::same_bits(read_file<K>(this->file("in")), input));
      EXPECT_EQ(this->leftovers({"in", "out"}), std::vector<std::string>{});
     }
    }
  }
}

// Host arrays: the CPU backend here; on a GPU host the keys pipeline, in runs of the small
// device budget merged in windows.
TYPED_TEST(ExternalApiKeys, SortOfAHostArrayMatchesStableSortInBothOrders) {
  using K = TypeParam;
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{40961}}) {
    for (const bool descending : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " descending=" << descending);
      const std::vector<K> input = hostile_keys<K>(n, 3 * n + descending);
      std::vector<K> keys = input;
      gpusort::external_options opt = this->small_budgets(sizeof(K), descending);
      std::uint64_t last_done = 0;
      std::string phases;
      opt.progress = [&](std::string_view phase, std::uint64_t done, std::uint64_t total) {
        if (phases.empty() || !phases.ends_with(std::string(phase) + " "))
          phases += std::string(phase) + " ";
        if (total > 0) {
          EXPECT_LE(done, total);
          last_done = done;
        }
      };
      const gpusort::file_sort_stats stats = gpusort::sort(std::span<K>(keys), opt);
      EXPECT_TRUE(gpusort::testing::same_bits(keys, gpusort::testing::reference_sort(input, descending)));
      if constexpr (std::is_floating_point_v<K>) {  // NaNs first, as asked
        std::vector<K> first = input;
        opt.sort.nans = gpusort::nan_order::first;
        gpusort::sort(std::span<K>(first), opt);
        EXPECT_TRUE(gpusort::testing::same_bits(
            first, gpusort::testing::reference_sort(input, descending, gpusort::nan_order::first)));
      }
      EXPECT_FALSE(stats.text().empty());
      if (n > 1) EXPECT_FALSE(phases.empty());  // "sorting", or "runs merge" on a GPU
      if (last_done > 0) EXPECT_EQ(last_done, n) << phases;  // counted phases end complete
    }
  }
}

TYPED_TEST(ExternalApiKeys, SortPairsFileKeepsEqualKeysInInputOrder) {
  using K = TypeParam;
  struct record {
    K key;
    std::uint32_t value;
  } __attribute__((packed));
  const std::size_t n = 30011;
  const std::vector<K> keys = hostile_keys<K>(n, 7);
  std::vector<record> input(n);
  for (std::size_t i = 0; i < n; ++i) input[i] = {keys[i], static_cast<std::uint32_t>(i)};
  write_file(this->file("in"), input);
  gpusort::sort_pairs_file<K>(this->file("in"), this->file("out"),
                              this->small_budgets(sizeof(record), false));
  std::vector<record> want = input;
  std::stable_sort(want.begin(), want.end(), [](const record& a, const record& b) {
    return gpusort::less<K>{}(a.key, b.key);
  });
  const std::vector<record> got = read_file<record>(this->file("out"));
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < n; ++i) {
    using traits = gpusort::key_traits<K>;
    ASSERT_EQ(traits::ordered(got[i].key), traits::ordered(want[i].key)) << i;
    ASSERT_EQ(got[i].value, want[i].value) << "record " << i << " out of input order";
  }
  EXPECT_EQ(this->leftovers({"in", "out"}), std::vector<std::string>{});
}

TEST_F(ExternalApi, SortRecordsFileOrdersByByteKeyStably) {
  // 100-byte records, 10-byte keys at offset 20 sharing 8-byte prefixes (the device sorts the
  // prefix; the rest of the key and the input order settle ties).
  constexpr std::size_t bytes = 100, offset = 20, key = 10, n = 20000;
  std::vector<unsigned char> input(n * bytes);
  std::mt19937_64 rng(5);
  for (std::size_t i = 0; i < n; ++i) {
    unsigned char* r = &input[i * bytes];
    for (std::size_t b = 0; b < bytes; ++b) r[b] = static_cast<unsigned char>(rng());
    std::memset(r + offset, static_cast<int>(rng() % 3), 8);  // three prefixes
    r[offset + 8] = static_cast<unsigned char>(rng() % 2);
    r[offset + 9] = 0;
    std::memcpy(r + 40, &i, sizeof i);  // the input position, to see stability
  }
  write_file(file("in"), input);
  gpusort::external_options opt = small_budgets(16, false);
  gpusort::sort_records_file(file("in"), file("out"), {bytes, offset, key}, opt);
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::memcmp(&input[a * bytes + offset], &input[b * bytes + offset], key) < 0;
  });
  const std::vector<unsigned char> got = read_file<unsigned char>(file("out"));
  ASSERT_EQ(got.size(), input.size());
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(std::memcmp(&got[i * bytes], &input[order[i] * bytes], bytes), 0) << i;
}

TEST_F(ExternalApi, ProgressReportsEveryPhaseUpToItsTotal) {
  const std::vector<std::uint32_t> input = random_keys<std::uint32_t>(50000, 3);
  write_file(file("in"), input);
  gpusort::external_options opt = small_budgets(4, false);
  std::vector<std::tuple<std::string, std::uint64_t, std::uint64_t>> reports;
  opt.progress = [&](std::string_view phase, std::uint64_t done, std::uint64_t total) {
    reports.emplace_back(std::string(phase), done, total);
  };
  const gpusort::file_sort_stats stats =
      gpusort::sort_file<std::uint32_t>(file("in"), file("out"), opt);
  EXPECT_NE(stats["plan"].find("runs of"), std::string::npos) << stats.text();
  EXPECT_NE(stats["read"].find(" s"), std::string::npos) << stats.text();
  ASSERT_FALSE(reports.empty());
  std::string phase;
  std::uint64_t last_done = 0;
  for (const auto& [name, done, total] : reports) {
    if (name != phase) {
      phase = name;
      last_done = 0;
    }
    if (total > 0) {
      EXPECT_LE(done, total) << name;
      EXPECT_GE(done, last_done) << name << ": progress went back";
      last_done = done;
    }
  }
  const auto& [name, done, total] = reports.back();
  EXPECT_EQ(done, total) << "the last phase, " << name << ", ended short";
  // The budgets cut the keys into runs (the GPU pipeline and the run path name them alike).
  EXPECT_TRUE(std::any_of(reports.begin(), reports.end(),
                          [](const auto& r) { return std::get<0>(r) == "runs"; }));
  EXPECT_TRUE(std::any_of(reports.begin(), reports.end(),
                          [](const auto& r) { return std::get<0>(r).starts_with("merge"); }));
}

TEST_F(ExternalApi, FailuresBeforeTheWorkLeaveNothingBehind) {
  write_file(file("out"), std::vector<std::uint32_t>{7, 8, 9});
  const auto out_kept = [&] {
    return read_file<std::uint32_t>(file("out")) == std::vector<std::uint32_t>{7, 8, 9};
  };
  // A missing input; a file that is no whole number of records.
  EXPECT_THROW(gpusort::sort_file<std::uint32_t>(file("missing"), file("out")),
               gpusort::invalid_request);
  write_file(file("odd"), std::vector<unsigned char>(4099, 1));
  gpusort::external_options budgets = small_budgets(8, false);
  EXPECT_THROW(gpusort::sort_file<std::uint64_t>(file("odd"), file("out"), budgets),
               gpusort::invalid_request);
  // Budgets too small for one record.
  write_file(file("in"), random_keys<std::uint64_t>(1000, 1));
  gpusort::external_options tiny;
  tiny.device_budget_bytes = 4;
  EXPECT_THROW(gpusort::sort_file<std::uint64_t>(file("in"), file("out"), tiny),
               gpusort::invalid_request);
  // A record layout whose key does not fit.
  EXPECT_THROW(gpusort::sort_records_file(file("in"), file("out"), {8, 4, 8}),
               gpusort::invalid_request);
  EXPECT_TRUE(out_kept());
  EXPECT_EQ(leftovers({"in", "odd", "out"}), std::vector<std::string>{});
}

// Narrow keys sort in memory (binary16 here: -0.0 before +0.0, NaNs where options::nans puts
// them, their payloads kept); budgets are refused before the work.
TEST_F(ExternalApi, NarrowKeyFilesSortInMemory) {
  // NaN, 1.0, -0.0, +0.0, -inf, a negative NaN, +inf, -1.0, 1.0 again
  const std::vector<std::uint16_t> bits = {0x7E00, 0x3C00, 0x8000, 0x0000, 0xFC00,
                                           0xFE01, 0x7C00, 0xBC00, 0x3C00};
  write_file(file("in"), bits);
  gpusort::external_options opt;
  opt.sort.nans = gpusort::nan_order::first;
  gpusort::sort_file<__half>(file("in"), file("out"), opt);
  const std::vector<std::uint16_t> got = read_file<std::uint16_t>(file("out"));
  ASSERT_EQ(got.size(), bits.size());
  std::vector<std::uint16_t> nans(got.begin(), got.begin() + 2);  // their order: by their codes
  std::ranges::sort(nans);
  EXPECT_EQ(nans, (std::vector<std::uint16_t>{0x7E00, 0xFE01}));
  EXPECT_EQ(std::vector<std::uint16_t>(got.begin() + 2, got.end()),
            (std::vector<std::uint16_t>{0xFC00, 0xBC00, 0x8000, 0x0000, 0x3C00, 0x3C00, 0x7C00}));
  write_file(file("pairs"), std::vector<std::uint8_t>{3, 1, 0, 0, 0, 9, 0, 0, 0, 0});  // u8 + u32
  opt = {};
  opt.sort.direction = gpusort::order::descending;
  gpusort::sort_pairs_file<std::uint8_t>(file("pairs"), file("pairs_out"), opt);
  EXPECT_EQ(read_file<std::uint8_t>(file("pairs_out")),
            (std::vector<std::uint8_t>{9, 0, 0, 0, 0, 3, 1, 0, 0, 0}));
  opt.devices = {0};  // pairs sort on one GPU (or the CPU) whatever the list
  gpusort::sort_pairs_file<std::uint8_t>(file("pairs"), file("new"), opt);
  EXPECT_EQ(read_file<std::uint8_t>(file("new")), read_file<std::uint8_t>(file("pairs_out")));
  EXPECT_EQ(leftovers({"in", "out", "pairs", "pairs_out", "new"}), std::vector<std::string>{});
}

// n narrow keys of random bits, every bit pattern possible, with many ties.
template <class K>
std::vector<K> random_narrow_keys(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<K> keys(n);
  for (K& key : keys) {
    const auto bits = static_cast<std::uint16_t>(rng() % 3 ? rng() : rng() % 8);
    std::memcpy(&key, &bits, sizeof(K));
  }
  return keys;
}

// Whether narrow key a comes before b in the library's order for `opt` (each key's code; 16-bit
// float NaNs where options::nans puts them, each payload its own place).
template <class K>
bool narrow_before(const K& a, const K& b, const gpusort::options& opt) {
  namespace ext = gpusort::detail::external;
  const bool lowest = gpusort::nans_lowest(opt.direction, opt.nans);
  const auto ca = ext::key_code(a, lowest), cb = ext::key_code(b, lowest);
  return opt.direction == gpusort::order::descending ? cb < ca : ca < cb;
}

template <class K>
bool same_narrow_bits(const std::vector<K>& a, const std::vector<K>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(K)) == 0;
}

// Narrow keys beyond the budgets: runs sorted one at a time and merged on the CPU, in the
// order the library sorts them (each key's code; 16-bit float NaNs where options::nans puts
// them, each payload its own place): every bit pattern of random bits, keys and stable pairs,
// both orders, both NaN placements, against std::stable_sort of the codes.
// With a device list (keys only), on a GPU host, the keys pipeline sorts them instead, as codes
// in runs merged in windows on the GPU; without a GPU the run path still does.
TEST_F(ExternalApi, NarrowKeyFilesSortByRuns) {
  const auto check = [&]<class K>(std::uint64_t seed) {
    constexpr std::size_t n = 150001;  // several runs under small_budgets, for 8-bit keys too
    const std::vector<K> keys = random_narrow_keys<K>(n, seed);
    struct record {
      K key;
      std::uint32_t value;
    };
    for (const int list : {0, 1, 2, 3})  // pairs; keys; keys, pairs with a device list
      for (const bool descending : {false, true})
        for (const auto nans : {gpusort::nan_order::last, gpusort::nan_order::first}) {
          const bool pairs = list == 0 || list == 3;
          SCOPED_TRACE(::testing::Message() << gpusort::detail::key_name<K> << " pairs=" << pairs
                                            << " devices=" << (list == 2) << " desc=" << descending
                                            << " nans first=" << (nans == gpusort::nan_order::first));
          gpusort::external_options opt =
              small_budgets(sizeof(K) + (pairs ? 4 : 0), descending);
          opt.sort.nans = nans;
          if (list >= 2) opt.devices = {0};
          const auto before = [&](const K& a, const K& b) { return narrow_before(a, b, opt.sort); };
          std::vector<unsigned char> input(n * (sizeof(K) + (pairs ? 4 : 0)));
          std::vector<record> want(n);
          for (std::size_t i = 0; i < n; ++i) want[i] = {keys[i], static_cast<std::uint32_t>(i)};
          for (std::size_t i = 0, at = 0; i < n; ++i) {
            std::memcpy(&input[at], &want[i].key, sizeof(K));
            at += sizeof(K);
            if (pairs) std::memcpy(&input[at], &want[i].value, 4), at += 4;
          }
          std::stable_sort(want.begin(), want.end(),
                           [&](const record& a, const record& b) { return before(a.key, b.key); });
          write_file(file("in"), input);
          const gpusort::file_sort_stats stats =
              pairs ? gpusort::sort_pairs_file<K>(file("in"), file("out"), opt)
                    : gpusort::sort_file<K>(file("in"), file("out"), opt);
          EXPECT_NE(stats["plan"].find("runs of"), std::string::npos) << stats.text();
          const std::vector<unsigned char> got = read_file<unsigned char>(file("out"));
          ASSERT_EQ(got.size(), input.size());
          for (std::size_t i = 0, at = 0; i < n; ++i) {
            std::uint32_t value = want[i].value;
            const bool same_key = std::memcmp(&got[at], &want[i].key, sizeof(K)) == 0;
            at += sizeof(K);
            if (pairs) std::memcpy(&value, &got[at], 4), at += 4;
            ASSERT_TRUE(same_key && value == want[i].value) << "record " << i;
          }
        }
  };
  check.operator()<std::int8_t>(1);
  check.operator()<std::uint8_t>(2);
  check.operator()<std::int16_t>(3);
  check.operator()<std::uint16_t>(4);
  check.operator()<__half>(5);
  check.operator()<__nv_bfloat16>(6);
  EXPECT_EQ(leftovers({"in", "out"}), std::vector<std::string>{});
}

// Host arrays of every narrow type: the CPU backend here; on a GPU host the keys pipeline, as
// codes in runs of the small device budget merged in windows. Sizes 0, 1, 2 and several runs;
// both orders, both NaN placements; against std::stable_sort of the codes. bool (no
// std::vector<bool> span): falses then trues, counted.
TEST_F(ExternalApi, NarrowHostArraysSortAsTheLibraryOrdersThem) {
  const auto check = [&]<class K>(std::uint64_t seed) {
    for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{100003}})
      for (const bool descending : {false, true})
        for (const auto nans : {gpusort::nan_order::last, gpusort::nan_order::first}) {
          SCOPED_TRACE(::testing::Message() << gpusort::detail::key_name<K> << " n=" << n
                                            << " desc=" << descending << " nans first="
                                            << (nans == gpusort::nan_order::first));
          const std::vector<K> input = random_narrow_keys<K>(n, seed + n);
          gpusort::external_options opt = small_budgets(4, descending);
          opt.sort.nans = nans;
          std::vector<K> want = input, keys = input;
          std::stable_sort(want.begin(), want.end(),
                           [&](const K& a, const K& b) { return narrow_before(a, b, opt.sort); });
          const gpusort::file_sort_stats stats = gpusort::sort(std::span<K>(keys), opt);
          ASSERT_TRUE(same_narrow_bits(keys, want)) << stats.text();
        }
  };
  check.operator()<std::int8_t>(12);
  check.operator()<std::uint8_t>(13);
  check.operator()<std::int16_t>(14);
  check.operator()<std::uint16_t>(15);
  check.operator()<__half>(16);
  check.operator()<__nv_bfloat16>(17);
  for (const bool descending : {false, true}) {
    constexpr std::size_t n = 100003;
    const auto flags = std::make_unique<bool[]>(n);
    std::size_t trues = 0;
    for (std::size_t i = 0; i < n; ++i) trues += (flags[i] = gpusort::tools::random_bits(18, i) % 3 == 0);
    gpusort::sort(std::span<bool>(flags.get(), n), small_budgets(4, descending));
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(flags[i], descending ? i < trues : i >= n - trues) << "bool " << i << " desc=" << descending;
  }
  EXPECT_EQ(leftovers({}), std::vector<std::string>{});
}

TEST_F(ExternalApi, SortsAFileOntoItself) {
  const std::vector<std::int32_t> input = random_keys<std::int32_t>(20000, 9);
  write_file(file("data"), input);
  gpusort::sort_file<std::int32_t>(file("data"), file("data"), small_budgets(4, false));
  EXPECT_TRUE(gpusort::testing::same_bits(read_file<std::int32_t>(file("data")),
                                      gpusort::testing::reference_sort(input)));
  EXPECT_EQ(leftovers({"data"}), std::vector<std::string>{});
}

// Issue 71: a library prints nothing and installs no signal handler unless its caller asks.
// Without a GPU the host sort falls back to the CPU, which is the notice a handler gets.
TEST_F(ExternalApi, PrintsNothingAndInstallsNoSignalHandlerUnlessAsked) {
  const auto sigint_handler = [] {
    struct sigaction current {};
    ::sigaction(SIGINT, nullptr, &current);
    return current.sa_handler;
  };
  const std::vector<std::uint32_t> input = random_keys<std::uint32_t>(20000, 4);
  write_file(file("in"), input);
  ::testing::internal::CaptureStderr();
  std::vector<std::uint32_t> host = input;
  gpusort::sort(host);
  gpusort::sort_file<std::uint32_t>(file("in"), file("out"), small_budgets(4, false));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(sigint_handler(), SIG_DFL);
  EXPECT_EQ(host, gpusort::testing::reference_sort(input));

  std::vector<std::string> notices;
  gpusort::set_notice_handler([&](std::string_view notice) { notices.emplace_back(notice); });
  gpusort::sort(host);
  gpusort::sort(host);  // once a process
  gpusort::set_notice_handler({});
  int devices = 0;
  const bool gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  cudaGetLastError();
  EXPECT_EQ(notices, gpu ? std::vector<std::string>{}
                         : std::vector<std::string>{"no CUDA device found; sorting on the CPU"});

  gpusort::set_signal_cleanup(true);
  gpusort::sort_file<std::uint32_t>(file("in"), file("out"), small_budgets(4, false));
  EXPECT_NE(sigint_handler(), SIG_DFL);
  gpusort::set_signal_cleanup(false);
  ::signal(SIGINT, SIG_DFL);
  EXPECT_EQ(read_file<std::uint32_t>(file("out")), gpusort::testing::reference_sort(input));
}

TEST_F(ExternalApi, CancelStopsAtTheNextReportAndLeavesNothingBehind) {
  const std::vector<std::uint64_t> input = random_keys<std::uint64_t>(60000, 4);
  write_file(file("in"), input);
  write_file(file("out"), std::vector<std::uint64_t>{1, 2});
  gpusort::external_options opt = small_budgets(8, false);
  std::atomic<bool> cancel{false};
  opt.cancel = &cancel;
  int reports = 0;
  opt.progress = [&](std::string_view, std::uint64_t, std::uint64_t) {
    if (++reports == 2) cancel = true;  // midway: after the first piece
  };
  EXPECT_THROW(gpusort::sort_file<std::uint64_t>(file("in"), file("out"), opt), gpusort::cancelled);
  EXPECT_EQ(reports, 2);
  EXPECT_EQ(read_file<std::uint64_t>(file("out")), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(leftovers({"in", "out"}), std::vector<std::string>{});
}

// ---- the keys pipeline on several GPUs (label multigpu) ---------------------------------------

int visible_gpus() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  cudaGetLastError();
  return count;
}

class ExternalApiOnSeveralGpus : public ExternalApi {
 protected:
  void SetUp() override {
    if (visible_gpus() < 2) GTEST_SKIP() << "needs 2 GPUs";
    ExternalApi::SetUp();
  }
};

GPUSORT_TYPED_SUITE(ExternalApiOnSeveralGpusKeys, ExternalApiOnSeveralGpus,
                    gpusort::testing::key_types);

// Every GPU takes runs and windows; the result is the one-GPU sort's, bit for bit, in both
// orders and both NaN placements, with runs in host memory and in a scratch file.
TYPED_TEST(ExternalApiOnSeveralGpusKeys, HostArraysMatchStableSort) {
  using K = TypeParam;
  for (const std::size_t n : {std::size_t{40961}, std::size_t{100003}})
    for (const bool descending : {false, true})
      for (const gpusort::nan_order nans : {gpusort::nan_order::last, gpusort::nan_order::first})
        for (const bool runs_in_a_file : {false, true}) {
          if (!std::is_floating_point_v<K> && nans == gpusort::nan_order::first) continue;
          SCOPED_TRACE(::testing::Message() << "n=" << n << " descending=" << descending << " nans "
                                            << gpusort::to_string(nans) << " file " << runs_in_a_file);
          const std::vector<K> input = hostile_keys<K>(n, n + descending);
          std::vector<K> keys = input;
          gpusort::external_options opt = this->small_budgets(sizeof(K), descending);
          opt.sort.nans = nans;
          opt.host_budget_bytes = runs_in_a_file ? 16 * 4096 : 0;  // 0: runs in memory
          opt.scratch_directory = this->dir_.string();
          std::uint64_t last_done = 0;
          opt.progress = [&](std::string_view, std::uint64_t done, std::uint64_t total) {
            if (total == 0) return;
            EXPECT_LE(done, total);
            last_done = done;
          };
          const gpusort::file_sort_stats stats = gpusort::sort(std::span<K>(keys), opt);
          EXPECT_TRUE(gpusort::testing::same_bits(
              keys, gpusort::testing::reference_sort(input, descending, nans)));
          EXPECT_NE(stats["plan"].find("on " + std::to_string(visible_gpus()) + " GPUs"),
                    std::string::npos)
              << stats.text();
          EXPECT_EQ(last_done, n);
          EXPECT_EQ(this->leftovers({}), std::vector<std::string>{});
        }
}

// A keys file on the GPUs named, in the order named; the output checked as it is written.
TEST_F(ExternalApiOnSeveralGpus, FilesSortOnTheNamedGpus) {
  const std::vector<std::uint64_t> input = hostile_keys<std::uint64_t>(70001, 5);
  write_file(file("in"), input);
  gpusort::external_options opt = small_budgets(8, false);
  opt.devices = {1, 0};
  const gpusort::file_sort_stats stats =
      gpusort::sort_file<std::uint64_t>(file("in"), file("out"), opt);
  EXPECT_EQ(read_file<std::uint64_t>(file("out")), gpusort::testing::reference_sort(input));
  EXPECT_NE(stats["plan"].find("on 2 GPUs"), std::string::npos) << stats.text();
  EXPECT_EQ(leftovers({"in", "out"}), std::vector<std::string>{});
}

// Narrow keys on every GPU, as codes: a bf16 file on the GPUs named, i8 and fp16 host arrays on
// all of them, against std::stable_sort of the codes.
TEST_F(ExternalApiOnSeveralGpus, NarrowKeysSortOnEveryGpu) {
  gpusort::external_options opt = small_budgets(4, true);
  opt.sort.nans = gpusort::nan_order::first;
  const std::vector<__nv_bfloat16> input = random_narrow_keys<__nv_bfloat16>(90001, 21);
  std::vector<__nv_bfloat16> want = input;
  std::stable_sort(want.begin(), want.end(), [&](const auto& a, const auto& b) {
    return narrow_before(a, b, opt.sort);
  });
  write_file(file("in"), input);
  opt.devices = {1, 0};
  gpusort::file_sort_stats stats = gpusort::sort_file<__nv_bfloat16>(file("in"), file("out"), opt);
  EXPECT_TRUE(same_narrow_bits(read_file<__nv_bfloat16>(file("out")), want));
  EXPECT_NE(stats["plan"].find("on 2 GPUs"), std::string::npos) << stats.text();
  opt.devices = {};
  const auto on_host = [&]<class K>(std::uint64_t seed) {
    const std::vector<K> keys = random_narrow_keys<K>(120007, seed);
    std::vector<K> sorted = keys, expect = keys;
    std::stable_sort(expect.begin(), expect.end(),
                     [&](const K& a, const K& b) { return narrow_before(a, b, opt.sort); });
    stats = gpusort::sort(std::span<K>(sorted), opt);
    EXPECT_TRUE(same_narrow_bits(sorted, expect)) << gpusort::detail::key_name<K>;
    EXPECT_NE(stats["plan"].find("on " + std::to_string(visible_gpus()) + " GPUs"),
              std::string::npos)
        << stats.text();
  };
  on_host.operator()<std::int8_t>(22);
  on_host.operator()<__half>(23);
  EXPECT_EQ(leftovers({"in", "out"}), std::vector<std::string>{});
}

// A GPU that does not exist, or one named twice: refused before any work, keys untouched.
TEST_F(ExternalApiOnSeveralGpus, BadGpuListsAreRefusedBeforeTheWork) {
  const std::vector<std::uint32_t> input = random_keys<std::uint32_t>(30000, 6);
  std::vector<std::uint32_t> keys = input;
  gpusort::external_options opt = small_budgets(4, false);
  for (const std::vector<int>& devices :
       {std::vector<int>{0, 0}, std::vector<int>{0, visible_gpus()}, std::vector<int>{-1}}) {
    opt.devices = devices;
    EXPECT_THROW(gpusort::sort(std::span<std::uint32_t>(keys), opt), gpusort::invalid_request);
    EXPECT_EQ(keys, input);
    write_file(file("in"), input);
    EXPECT_THROW(gpusort::sort_file<std::uint32_t>(file("in"), file("out"), opt),
                 gpusort::invalid_request);
    EXPECT_EQ(leftovers({"in"}), std::vector<std::string>{});
  }
}

// Cancelled while the GPUs work: every thread stops, the call throws, nothing is left behind.
TEST_F(ExternalApiOnSeveralGpus, CancelStopsEveryGpu) {
  const std::vector<std::uint64_t> input = random_keys<std::uint64_t>(200000, 4);
  write_file(file("in"), input);
  gpusort::external_options opt = small_budgets(8, false);
  std::atomic<bool> cancel{false};
  opt.cancel = &cancel;
  int reports = 0;
  opt.progress = [&](std::string_view, std::uint64_t, std::uint64_t) {
    if (++reports == 2) cancel = true;
  };
  EXPECT_THROW(gpusort::sort_file<std::uint64_t>(file("in"), file("out"), opt), gpusort::cancelled);
  EXPECT_EQ(reports, 2);
  EXPECT_EQ(leftovers({"in"}), std::vector<std::string>{});
}

}  // namespace
