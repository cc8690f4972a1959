// The one-pass merge of R sorted runs (detail/index_math/multiway_merge.hpp), simulated on the
// CPU as the device runs it: pivots and their splits, the pivots around each tile's start,
// the tile's split found in their window, and each tile merged by the device's block code
// (block/tile_merge.hpp) run a thread at a time.
// The result must be the stable order by (code, run, position), on runs with heavy ties,
// empty runs, and tiles and pivot gaps of awkward sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "gpusort/detail/block/tile_merge.hpp"
#include "gpusort/detail/index_math/multiway_merge.hpp"

namespace {

namespace mm = gpusort::detail::index_math::multiway;
using runs_t = std::vector<std::vector<std::uint64_t>>;
using element = std::pair<int, std::uint64_t>;  // (run, position)

std::vector<element> reference_merge(const runs_t& runs) {
  std::vector<std::tuple<std::uint64_t, int, std::uint64_t>> all;
  for (int q = 0; q < static_cast<int>(runs.size()); ++q)
    for (std::uint64_t i = 0; i < runs[q].size(); ++i) all.emplace_back(runs[q][i], q, i);
  std::sort(all.begin(), all.end());
  std::vector<element> out;
  for (const auto& [c, q, i] : all) out.emplace_back(q, i);
  return out;
}

// The pivots of every run, numbered run by run as the device numbers them: their merged
// positions and splits (step 1 of the header), and where each run's pivots start.
struct pivot_table {
  std::vector<std::uint64_t> first, count, position;
  std::vector<std::vector<std::uint64_t>> split;
};

pivot_table make_pivots(const runs_t& runs, std::uint64_t m) {
  const int r = static_cast<int>(runs.size());
  const auto code = [&](int q, std::uint64_t i) { return runs[q][i]; };
  std::vector<std::uint64_t> zeros(r, 0), lengths(r);
  for (int q = 0; q < r; ++q) lengths[q] = runs[q].size();
  pivot_table t;
  for (int q = 0; q < r; ++q) {
    t.first.push_back(t.position.size());
    t.count.push_back(mm::pivot_count(lengths[q], m));
    for (std::uint64_t k = 0; k < t.count.back(); ++k) {
      std::vector<std::uint64_t> split(r);
      t.position.push_back(mm::split_at_element(code, r, zeros.data(), lengths.data(), q, k * m,
                                                runs[q][k * m], split.data()));
      t.split.push_back(std::move(split));
    }
  }
  return t;
}

// The splits of every tile start, as the device finds them (steps 2-3 of the header).
std::vector<std::vector<std::uint64_t>> tile_splits(const runs_t& runs, std::uint64_t m,
                                                    std::uint64_t tile) {
  const int r = static_cast<int>(runs.size());
  const auto code = [&](int q, std::uint64_t i) { return runs[q][i]; };
  std::vector<std::uint64_t> lengths(r);
  std::uint64_t total = 0;
  for (int q = 0; q < r; ++q) total += lengths[q] = runs[q].size();
  const pivot_table pivots = make_pivots(runs, m);
  const auto position = [&](std::uint64_t id) { return pivots.position[id]; };
  std::vector<std::vector<std::uint64_t>> splits;
  for (std::uint64_t d = 0; d < total; d += tile) {
    std::uint64_t before = 0, after = 0;
    mm::pivots_around(position, r, pivots.first.data(), pivots.count.data(), d, &before, &after);
    EXPECT_NE(before, mm::no_pivot) << "no pivot at or before " << d;
    const std::vector<std::uint64_t>& hi = after == mm::no_pivot ? lengths : pivots.split[after];
    std::vector<std::uint64_t> out(r);
    for (int q = 0; q < r; ++q)  // a thread a run on the device
      out[q] = mm::split_of_run(code, r, pivots.split[before].data(), hi.data(), d, q);
    splits.push_back(out);
  }
  splits.push_back(lengths);
  return splits;
}

// One tile merged by block::tile_merge, the device's own code, run a thread at a time between
// its barriers (items outputs a thread a round, as many threads as cover the tile). Keys are
// the codes; each value names its (run, position).
constexpr int test_tile = 64;
struct identity_code {
  std::uint64_t operator()(std::uint64_t key) const { return key; }
};

// The block's phases up to its write, each a thread at a time, as the barriers order them.
template <class Merge>
void run_phases(Merge& tile, unsigned threads, std::uint64_t items) {
  for (unsigned t = 0; t < threads; ++t) tile.plan(t);
  for (unsigned t = 0; t < threads; ++t) tile.load(t, threads);
  for (int k = 0; k < tile.rounds(); ++k)
    for (unsigned t = 0; t < threads; ++t) tile.round(t, k, static_cast<std::uint32_t>(items));
}

std::vector<element> merge_tile(const runs_t& runs, const std::vector<std::uint64_t>& from,
                                const std::vector<std::uint64_t>& to, std::uint64_t items) {
  using merge = gpusort::detail::block::tile_merge<std::uint64_t, std::uint64_t, identity_code,
                                                   test_tile>;
  std::vector<std::vector<std::uint64_t>> values(runs.size());
  gpusort::detail::block::run_set<std::uint64_t, std::uint64_t> set;
  for (std::size_t q = 0; q < runs.size(); ++q) {
    for (std::uint64_t i = 0; i < runs[q].size(); ++i) values[q].push_back(q << 32 | i);
    set.keys[q] = runs[q].data();
    set.values[q] = values[q].data();
    set.length[q] = runs[q].size();
  }
  set.count = static_cast<int>(runs.size());
  auto shared = std::make_unique<merge::buffers>();
  merge tile(set, identity_code{}, from.data(), to.data(), *shared);
  const auto threads = static_cast<unsigned>((test_tile + items - 1) / items);
  run_phases(tile, threads, items);
  const std::uint32_t size = tile.size();
  std::vector<std::uint64_t> out_keys(size), out_values(size);
  for (unsigned t = 0; t < threads; ++t) tile.write(t, threads, out_keys.data(), out_values.data());
  // Keys alone take the path without tile indices: the same keys.
  using keys_merge = gpusort::detail::block::tile_merge<std::uint64_t, gpusort::detail::no_value,
                                                        identity_code, test_tile>;
  gpusort::detail::block::run_set<std::uint64_t, gpusort::detail::no_value> key_set;
  for (std::size_t q = 0; q < runs.size(); ++q) {
    key_set.keys[q] = runs[q].data();
    key_set.length[q] = runs[q].size();
  }
  key_set.count = set.count;
  auto key_shared = std::make_unique<keys_merge::buffers>();
  keys_merge keys_only(key_set, identity_code{}, from.data(), to.data(), *key_shared);
  run_phases(keys_only, threads, items);
  std::vector<std::uint64_t> keys_alone(size);
  for (unsigned t = 0; t < threads; ++t) keys_only.write(t, threads, keys_alone.data(), nullptr);
  EXPECT_EQ(keys_alone, out_keys) << "keys alone merged otherwise";
  std::vector<element> got;
  for (std::uint32_t x = 0; x < size; ++x) {
    const element e(static_cast<int>(out_values[x] >> 32), out_values[x] & 0xffffffffu);
    EXPECT_EQ(out_keys[x], runs[e.first][e.second]) << "a key apart from its value";
    got.push_back(e);
  }
  return got;
}

void check_merge(const runs_t& runs, std::uint64_t m, std::uint64_t tile, std::uint64_t items) {
  SCOPED_TRACE(::testing::Message() << "runs=" << runs.size() << " m=" << m << " tile=" << tile
                                    << " items=" << items);
  const std::vector<element> want = reference_merge(runs);
  const auto splits = tile_splits(runs, m, tile);
  std::vector<element> got;
  for (std::size_t t = 0; t + 1 < splits.size(); ++t) {
    std::uint64_t from = 0, to = 0;
    for (std::size_t q = 0; q < runs.size(); ++q) {
      from += splits[t][q];
      to += splits[t + 1][q];
      ASSERT_LE(splits[t][q], splits[t + 1][q]) << "tile " << t << " run " << q;
    }
    ASSERT_EQ(from, t * tile) << "tile " << t << " starts elsewhere";
    ASSERT_LE(to - from, tile);
    for (const element& e : merge_tile(runs, splits[t], splits[t + 1], items)) got.push_back(e);
  }
  ASSERT_EQ(got, want);
}

runs_t random_runs(std::mt19937_64& rng, int count, std::uint64_t longest, std::uint64_t distinct) {
  runs_t runs(count);
  for (auto& run : runs) {
    const std::uint64_t n = rng() % 4 == 0 ? 0 : rng() % (longest + 1);
    for (std::uint64_t i = 0; i < n; ++i) run.push_back(rng() % distinct);
    std::sort(run.begin(), run.end());
  }
  return runs;
}

TEST(MultiwayMerge, CountBelowIsABinarySearch) {
  const std::vector<std::uint64_t> v{1, 3, 3, 3, 7};
  const auto code = [&](std::uint64_t i) { return v[i]; };
  EXPECT_EQ(mm::count_below(code, 0, 5, 3, false), 1u);
  EXPECT_EQ(mm::count_below(code, 0, 5, 3, true), 4u);
  EXPECT_EQ(mm::count_below(code, 2, 5, 3, true), 2u);  // within [2, 5)
  EXPECT_EQ(mm::count_below(code, 0, 5, 9, false), 5u);
  EXPECT_EQ(mm::count_below(code, 0, 0, 9, true), 0u);
}

TEST(MultiwayMerge, MergePathGivesTiesToTheFirstSequence) {
  const std::vector<std::uint64_t> a{2, 2}, b{2};
  const auto ca = [&](std::uint64_t i) { return a[i]; };
  const auto cb = [&](std::uint64_t i) { return b[i]; };
  EXPECT_EQ(mm::merge_path_split<std::uint64_t>(ca, 2, cb, 1, 0), 0u);
  EXPECT_EQ(mm::merge_path_split<std::uint64_t>(ca, 2, cb, 1, 1), 1u);
  EXPECT_EQ(mm::merge_path_split<std::uint64_t>(ca, 2, cb, 1, 2), 2u);  // both of a before b's tie
  EXPECT_EQ(mm::merge_path_split<std::uint64_t>(ca, 2, cb, 1, 3), 2u);
  EXPECT_EQ(mm::pivot_count(0, 4), 0u);
  EXPECT_EQ(mm::pivot_count(4, 4), 1u);
  EXPECT_EQ(mm::pivot_count(5, 4), 2u);
}

TEST(MultiwayMerge, PivotsKnowTheirMergedPositions) {
  std::mt19937_64 rng(3);
  const runs_t runs = random_runs(rng, 5, 40, 6);
  const std::vector<element> want = reference_merge(runs);
  std::vector<std::uint64_t> zeros(runs.size()), lengths, split(runs.size());
  for (const auto& run : runs) lengths.push_back(run.size());
  const auto code = [&](int q, std::uint64_t i) { return runs[q][i]; };
  for (int q = 0; q < 5; ++q)
    for (std::uint64_t i = 0; i < runs[q].size(); ++i) {
      const std::uint64_t position = mm::split_at_element(code, 5, zeros.data(), lengths.data(),
                                                          q, i, runs[q][i], split.data());
      ASSERT_EQ(want.at(position), element(q, i));
    }
}

// pivots_around against the pivots sorted by position: the last at or before d and the first
// after it, for every d, with empty runs and runs of one pivot among them.
TEST(MultiwayMerge, PivotsAroundAreTheSortedPivotsNeighbours) {
  std::mt19937_64 rng(11);
  for (int count = 1; count <= mm::max_runs; ++count)
    for (std::uint64_t m : {1, 3, 8}) {
      const runs_t runs = random_runs(rng, count, 50, 7);
      const pivot_table pivots = make_pivots(runs, m);
      std::vector<std::uint64_t> order(pivots.position.size());
      for (std::uint64_t id = 0; id < order.size(); ++id) order[id] = id;
      std::sort(order.begin(), order.end(), [&](std::uint64_t a, std::uint64_t b) {
        return pivots.position[a] < pivots.position[b];
      });
      std::uint64_t total = 0;
      for (const auto& run : runs) total += run.size();
      const auto position = [&](std::uint64_t id) { return pivots.position[id]; };
      for (std::uint64_t d = 0; d <= total + 1; ++d) {
        std::uint64_t want_before = mm::no_pivot, want_after = mm::no_pivot;
        for (std::uint64_t id : order)
          if (pivots.position[id] <= d)
            want_before = id;
          else if (want_after == mm::no_pivot)
            want_after = id;
        std::uint64_t before = 0, after = 0;
        mm::pivots_around(position, count, pivots.first.data(), pivots.count.data(), d, &before,
                          &after);
        ASSERT_EQ(before, want_before) << "runs=" << count << " m=" << m << " d=" << d;
        ASSERT_EQ(after, want_after) << "runs=" << count << " m=" << m << " d=" << d;
      }
    }
}

TEST(MultiwayMerge, TilesMergeToTheStableOrder) {
  std::mt19937_64 rng(7);
  for (int count = 1; count <= mm::max_runs; ++count)
    for (std::uint64_t distinct : {std::uint64_t{1}, std::uint64_t{3}, std::uint64_t{1000}})
      for (const auto& [m, tile, items] : {std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>{1, 1, 1},
                                           {3, 5, 2}, {4, 16, 4}, {7, 13, 3}, {16, 64, 8},
                                           {32, 64, 16}})
        for (int trial = 0; trial < 3; ++trial) {
          check_merge(random_runs(rng, count, 60, distinct), m, tile, items);
          if (::testing::Test::HasFatalFailure()) return;
        }
}

TEST(MultiwayMerge, EmptyAndOneElementRuns) {
  check_merge({{}, {}, {}}, 2, 4, 2);
  check_merge({{5}, {}, {5}, {4}}, 1, 1, 1);
  check_merge({{}, {1, 1, 1, 1, 1}, {}, {1}}, 2, 3, 2);
}

}  // namespace
