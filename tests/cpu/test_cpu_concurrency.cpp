// The host layer's two ways of running work at once (src/external/concurrency.hpp), the points
// where concurrent workers decide together (rank_checkpoints), and the writer beside the
// gatherer built on them (gather_in_pieces, record_host.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "concurrency.hpp"
#include "record_host.hpp"

namespace ext = gpusort::detail::external;

namespace {

TEST(RunConcurrently, EveryWorkerRunsAtTheSameTimeAndTheFirstOnTheCaller) {
  for (const unsigned workers : {0u, 1u, 2u, 7u, 32u}) {
    std::barrier all_here(static_cast<std::ptrdiff_t>(std::max(workers, 1u)));
    std::vector<int> ran(workers, 0);
    std::thread::id first;
    ext::run_concurrently(workers, [&](unsigned w) {
      if (w == 0) first = std::this_thread::get_id();
      all_here.arrive_and_wait();  // would never return unless all run at once
      ++ran[w];
    });
    EXPECT_EQ(ran, std::vector<int>(workers, 1)) << workers;
    if (workers > 0) EXPECT_EQ(first, std::this_thread::get_id());
  }
}

TEST(RunConcurrently, RethrowsTheFirstFailureOnceEveryWorkerReturned) {
  std::atomic<int> finished{0};
  try {
    ext::run_concurrently(6, [&](unsigned w) {
      if (w == 3) throw std::runtime_error("worker 3");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ++finished;
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "worker 3");
  }
  EXPECT_EQ(finished.load(), 5);
}

// Workers meeting at two points: worker 0 (the caller) reports at each, and every worker
// learns the same answer; a report that throws stops all at that point, and so does a worker
// that left before it. No case may hang.
TEST(RankCheckpoints, AllGoOnOrAllStopTogether) {
  constexpr unsigned workers = 5;
  for (int stop_at : {-1, 0, 1}) {  // the report that throws: none, the first, the second
    SCOPED_TRACE(stop_at);
    ext::rank_checkpoints points(workers);
    std::vector<int> passed(workers, 0);
    std::vector<std::thread::id> reporters;
    ext::run_concurrently(workers, [&](unsigned w) {
      for (int point = 0; point < 2; ++point) {
        const bool go_on = points.pass(static_cast<int>(w), [&] {
          reporters.push_back(std::this_thread::get_id());
          if (point == stop_at) throw std::runtime_error("cancelled");
        });
        if (!go_on) return;
        ++passed[w];
      }
    });
    const int expected = stop_at < 0 ? 2 : stop_at;
    EXPECT_EQ(passed, std::vector<int>(workers, expected));
    EXPECT_EQ(reporters, std::vector<std::thread::id>(stop_at < 0 ? 2 : stop_at + 1,
                                                      std::this_thread::get_id()));
    EXPECT_EQ(static_cast<bool>(points.stopped()), stop_at >= 0);
  }
}

TEST(RankCheckpoints, AWorkerThatLeftStopsTheOthersAtTheNextPoint) {
  constexpr unsigned workers = 4;
  for (unsigned leaver : {0u, 2u}) {
    for (int left_before : {0, 1}) {
      SCOPED_TRACE(::testing::Message() << "worker " << leaver << " left before point " << left_before);
      ext::rank_checkpoints points(workers);
      std::vector<int> passed(workers, 0);
      std::atomic<int> reports{0};
      ext::run_concurrently(workers, [&](unsigned w) {
        for (int point = 0; point < 2; ++point) {
          if (w == leaver && point == left_before) {
            points.leave();
            return;
          }
          if (!points.pass(static_cast<int>(w), [&] { ++reports; })) return;
          ++passed[w];
        }
      });
      for (unsigned w = 0; w < workers; ++w)
        EXPECT_EQ(passed[w], left_before) << "worker " << w;
      EXPECT_EQ(reports.load(), left_before);  // none at the point a worker left before
      EXPECT_FALSE(points.stopped());
    }
  }
}

TEST(ParallelSort, GivesStdSortsResultForAStrictOrder) {
  std::mt19937_64 random(7);
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{16383},
                              std::size_t{16384 * 5 + 3}, std::size_t{1000003}}) {
    // Heavy ties, broken by the index: the order is strict, so the result is unique.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> items(n);
    for (std::size_t i = 0; i < n; ++i) items[i] = {static_cast<std::uint32_t>(random() % 97), static_cast<std::uint32_t>(i)};
    std::shuffle(items.begin(), items.end(), random);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> want = items;
    std::sort(want.begin(), want.end());
    ext::parallel_sort(items.begin(), items.end(), std::less<>());
    EXPECT_EQ(items, want) << n;
  }
}

// Three pieces of 64 MiB: the writer fails on the second; the gather stops, nothing hangs, and
// the writer's error comes out. And a progress callback that throws (a cancel) stops the writer.
TEST(GatherInPieces, AFailureOnEitherSideStopsTheOther) {
  constexpr std::size_t bytes = 1024;
  const std::uint64_t piece = (std::uint64_t{64} << 20) / bytes, n = 2 * piece + 5;
  std::vector<unsigned char> data(n * bytes);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 31 / bytes);
  std::vector<std::uint32_t> index(n);
  std::iota(index.rbegin(), index.rend(), 0u);
  const ext::record_layout layout{bytes, 0, 8, ext::key_kind::bytes, false};
  const auto gather = [&](auto put, auto progress) {
    ext::gather_in_pieces(data.data(), index.data(), n, layout, nullptr, put, progress);
  };
  std::vector<unsigned char> out(n * bytes);
  gather([&](std::uint64_t first, const unsigned char* p, std::uint64_t count) {
           std::copy(p, p + count * bytes, out.begin() + static_cast<std::ptrdiff_t>(first * bytes));
         },
         [](std::uint64_t) {});
  for (std::uint64_t i = 0; i < n; i += 4099)
    ASSERT_TRUE(std::equal(out.begin() + i * bytes, out.begin() + (i + 1) * bytes,
                           data.begin() + (n - 1 - i) * bytes)) << i;

  int written = 0;
  EXPECT_THROW(gather([&](std::uint64_t, const unsigned char*, std::uint64_t) {
                        if (++written == 2) throw std::runtime_error("disk full");
                      },
                      [](std::uint64_t) {}),
               std::runtime_error);
  EXPECT_EQ(written, 2);
  int reported = 0;
  EXPECT_THROW(gather([](std::uint64_t, const unsigned char*, std::uint64_t) {},
                      [&](std::uint64_t) {
                        if (++reported == 1) throw std::runtime_error("cancelled");
                      }),
               std::runtime_error);
}

}  // namespace
