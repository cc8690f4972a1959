// The sample sort's index math and its CPU backend: the plan, the bucket bound on adversarial
// inputs (every level's largest bucket against the bound), and the sort against
// std::stable_sort for every key type, both samplings, keys and pairs; the merge of sorted
// runs (index_math/merge_runs.hpp) that finishes the final buckets.
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <utility>

#include "gpusort/detail/cpu/sample_sort.hpp"
#include "gpusort/detail/index_math/merge_runs.hpp"
#include "gpusort/detail/index_math/sample_sort.hpp"
#include "gpusort/sort.hpp"
#include "reference.hpp"

using namespace gpusort::testing;
namespace tools = gpusort::tools;
namespace net = gpusort::detail::index_math;
namespace cpu = gpusort::detail::cpu;
using net::index_t;

// merge_path against counting: the split of every diagonal, ties taken from a first.
TEST(MergeRuns, MergePathSplitsEveryDiagonal) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int> a(rng() % 9), b(rng() % 9);
    for (int& x : a) x = static_cast<int>(rng() % 5);
    for (int& x : b) x = static_cast<int>(rng() % 5);
    std::ranges::sort(a);
    std::ranges::sort(b);
    // The stable merge, each item tagged with its side.
    std::vector<std::pair<int, int>> merged;  // (key, 0 for a, 1 for b)
    for (int x : a) merged.emplace_back(x, 0);
    for (int x : b) merged.emplace_back(x, 1);
    std::ranges::stable_sort(merged, {}, &std::pair<int, int>::first);
    for (index_t d = 0; d <= static_cast<index_t>(merged.size()); ++d) {
      index_t from_a = 0;
      for (index_t i = 0; i < d; ++i) from_a += merged[i].second == 0;
      EXPECT_EQ(net::merge_path([&](index_t i) { return a[i]; }, a.size(),
                                [&](index_t j) { return b[j]; }, b.size(), d, std::less<int>()),
                from_a)
          << "trial " << trial << " diagonal " << d;
    }
  }
}

// Rounds of merge_round_part over random runs (empty ones, odd counts, many ties), the
// outputs of each round split among random workers, against std::stable_sort: every item
// once, in order, equal keys in input order.
TEST(MergeRuns, RoundsSplitAmongWorkersMergeStably) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const auto run_count = static_cast<index_t>(1 + rng() % 13);
    std::vector<index_t> runs{0};
    std::vector<std::pair<int, int>> items;  // (key, input position)
    for (index_t r = 0; r < run_count; ++r) {
      std::vector<int> run(rng() % 40 == 0 ? 0 : rng() % 50);
      for (int& x : run) x = static_cast<int>(rng() % 20);
      std::ranges::sort(run);
      for (int x : run) items.emplace_back(x, static_cast<int>(items.size()));
      runs.push_back(static_cast<index_t>(items.size()));
    }
    std::vector<std::pair<int, int>> want = items;
    std::ranges::stable_sort(want, {}, &std::pair<int, int>::first);
    const auto n = static_cast<index_t>(items.size());
    std::vector<std::pair<int, int>> out(n, {-1, -1});
    for (index_t count = run_count; count > 1; count = net::next_merge_round(runs.data(), count)) {
      std::ranges::fill(out, std::pair{-1, -1});
      for (index_t first = 0; first < n;) {  // workers of random widths
        const index_t last = std::min(n, first + 1 + static_cast<index_t>(rng() % 17));
        net::merge_round_part(
            runs.data(), count, first, last, [&](index_t i) { return items[i].first; },
            [&](index_t from, index_t to) {
              ASSERT_EQ(out[to].second, -1) << "output " << to << " written twice";
              out[to] = items[from];
            },
            std::less<int>());
        first = last;
      }
      items = out;
    }
    EXPECT_EQ(items, want) << "trial " << trial;
  }
}

// final_bucket_run_bound: the runs of every final bucket of a scanned count matrix, as they
// lie after the last scatter and mirrored (n - 1 - i), against the runs laid out by hand.
TEST(MergeRuns, FinalBucketRunsInBothLayouts) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    const index_t slots = 1 + rng() % 6, buckets = 1 + rng() % 5;
    std::vector<index_t> counts(slots * buckets);
    for (index_t& c : counts) c = rng() % 4 == 0 ? 0 : rng() % 9;
    // run (q, t) holds the values q * 100 + t, as many as its count, in order of the matrix
    std::vector<index_t> layout;
    for (index_t i = 0; i < slots * buckets; ++i)
      layout.insert(layout.end(), counts[i], (i / slots) * 100 + i % slots);
    const auto n = static_cast<index_t>(layout.size());
    std::exclusive_scan(counts.begin(), counts.end(), counts.begin(), index_t{0});
    const net::problem_list list{counts.data(), slots, buckets, n};
    for (const bool mirror : {false, true}) {
      std::vector<index_t> placed = layout;
      if (mirror) std::ranges::reverse(placed);
      for (index_t q = 0; q < buckets; ++q) {
        const index_t first = mirror ? n - list.end(q) : list.begin(q);
        ASSERT_EQ(net::final_bucket_run_bound(list, q, 0, mirror), 0);
        ASSERT_EQ(net::final_bucket_run_bound(list, q, slots, mirror), list.end(q) - list.begin(q));
        for (index_t r = 0; r < slots; ++r) {
          const index_t t = mirror ? slots - 1 - r : r;  // the slot run r holds
          for (index_t i = net::final_bucket_run_bound(list, q, r, mirror);
               i < net::final_bucket_run_bound(list, q, r + 1, mirror); ++i)
            ASSERT_EQ(placed[first + i], q * 100 + t)
                << "trial " << trial << " mirror " << mirror << " bucket " << q << " run " << r;
        }
      }
    }
  }
}

TEST(SampleSortPlan, LevelsReachTheFinalCapForEverySize) {
  for (int tile_bits : {11, 13, 14}) {
    for (int bucket_bits : {2, 5, 8, 10}) {
      for (index_t n : {index_t{0}, index_t{1}, index_t{8192}, index_t{8193}, index_t{1} << 20,
                        index_t{10000019}, index_t{1} << 28, (index_t{1} << 34) + 3}) {
        SCOPED_TRACE(::testing::Message() << "tile_bits=" << tile_bits
                                          << " bucket_bits=" << bucket_bits << " n=" << n);
        const net::sample_plan plan = net::plan_sample_sort(n, tile_bits, 8192, bucket_bits,
                                                            bucket_bits + (n % 2));
        index_t cap = n, problems = 1;
        for (int l = 0; l < plan.count; ++l) {
          const net::sample_level& lv = plan.levels[l];
          EXPECT_EQ(lv.cap, cap);
          EXPECT_EQ(lv.problems, problems);
          EXPECT_LE(lv.bucket_bits, std::min(bucket_bits + int(n % 2), tile_bits));
          EXPECT_LT(lv.bucket_bound(cap), cap) << "a level must shrink the problems";
          // The bound of the paper, up to rounding: 2 n / s plus two strides.
          EXPECT_LE(lv.bucket_bound(cap), 2 * cap / lv.buckets() + 2 * lv.stride());
          cap = lv.bucket_bound(cap);
          problems *= lv.buckets();
        }
        EXPECT_EQ(plan.final_cap, cap);
        EXPECT_EQ(plan.final_problems, problems);
        if (bucket_bits >= 5) EXPECT_LE(plan.final_cap, index_t{8192});
      }
    }
  }
}

TEST(SampleSortPlan, BoundIsTwoNOverSWhenEverythingDivides) {
  const net::sample_level lv{1, index_t{1} << 20, 12, 6};  // M = 4096, s = 64
  EXPECT_EQ(lv.stride(), 64u);
  EXPECT_EQ(lv.tiles(), 256u);
  EXPECT_EQ(lv.sample_slots(index_t{1} << 20), 256u * 64u);
  EXPECT_EQ(lv.first_sample(1000), 15u);
  EXPECT_EQ(lv.bucket_bound(index_t{1} << 20), 2 * (index_t{1} << 20) / 64 - 256);
  EXPECT_EQ(lv.splitter_rank(1, 64 * 256), 256u);
  EXPECT_EQ(lv.splitter_rank(63, 10), 10u) << "few samples: the last splitters are infinite";
  EXPECT_EQ(lv.count_index(0, 1, 3), 256u + 3u);
}

TEST(SampleSortPlan, SplitterCountsFollowPositionsForEqualKeys) {
  // A tile at [100, 110): lower_bound 2, upper_bound 7 for the splitter's key.
  EXPECT_EQ(net::below_splitter(2, 7, 100, 10, 50), 2u);   // splitter before: equal keys above
  EXPECT_EQ(net::below_splitter(2, 7, 100, 10, 500), 7u);  // after: equal keys below
  EXPECT_EQ(net::below_splitter(2, 7, 100, 10, 104), 4u);  // inside: its own position
}

TEST(SampleSortPlan, RandomSamplesStayInTheTileAndVary) {
  std::vector<int> hits(97, 0);
  for (unsigned i = 0; i < 97 * 50; ++i) {
    const unsigned at = net::random_sample(12345, i, 97, 7);
    ASSERT_LT(at, 97u);
    ++hits[at];
  }
  for (int h : hits) EXPECT_GT(h, 10) << "positions should spread over the tile";
  EXPECT_EQ(net::random_sample(1, 2, 1000, 3), net::random_sample(1, 2, 1000, 3));
}

// index_math::classify against a count of the splitters at or below (key, position), over
// splitters with ties, repeated keys at other positions, and splitters above every key.
TEST(SampleSortPlan, ClassifyCountsTheSplittersAtOrBelowTheKey) {
  std::mt19937 rng(11);
  for (unsigned bits : {0u, 1u, 2u, 4u, 6u}) {
    const unsigned s = 1u << bits;
    for (int trial = 0; trial < 40; ++trial) {
      const unsigned finite = s == 1 ? 0 : rng() % s;  // splitters 1..finite exist
      std::vector<net::sample<std::uint32_t>> splitters(s);
      for (unsigned j = 1; j <= finite; ++j)
        splitters[j] = {rng() % 50, static_cast<std::uint32_t>(rng() % 4), 0};
      std::sort(splitters.begin() + 1, splitters.begin() + 1 + finite,
                net::sample_less<gpusort::less<std::uint32_t>>{{}});

      for (std::uint32_t key = 0; key < 5; ++key) {
        for (std::uint64_t pos = 0; pos < 52; ++pos) {
          unsigned expect = 0;
          for (unsigned j = 1; j <= finite; ++j) {
            const auto& g = splitters[j];
            expect += g.key < key || (g.key == key && g.pos <= pos);
          }
          const auto above = [&](unsigned v, unsigned d) {
            const auto& g = splitters[net::tree_entry(v, d, bits, finite)];
            return net::splitter_above(key, pos, g.key, g.pos, gpusort::less<std::uint32_t>{});
          };
          ASSERT_EQ(net::classify(bits, finite, above), expect)
              << "s=" << s << " key=" << key << " pos=" << pos;
        }
      }
    }
  }
}

// The descent by key alone (the GPU's first try) ends in classify's bucket wherever it met no
// splitter of the key's own key, over keys and splitters drawn from few values.
TEST(SampleSortPlan, DescentByKeyMatchesClassifyWithoutTies) {
  std::mt19937 rng(5);
  const gpusort::less<std::uint32_t> less;
  int untied = 0, tied = 0;
  for (unsigned bits : {1u, 3u, 6u}) {
    const unsigned s = 1u << bits;
    for (int trial = 0; trial < 30; ++trial) {
      const unsigned finite = 1 + rng() % (s - 1);
      std::vector<net::sample<std::uint32_t>> sorted(s);
      for (unsigned j = 1; j <= finite; ++j)
        sorted[j] = {rng() % 40, static_cast<std::uint32_t>(rng() % 8), 0};
      std::sort(sorted.begin() + 1, sorted.begin() + 1 + finite,
                net::sample_less<gpusort::less<std::uint32_t>>{{}});
      std::vector<net::sample<std::uint32_t>> tree(s);  // as the device's table holds them
      for (unsigned v = 1; v < s; ++v)
        tree[v] = sorted[net::tree_entry(v, net::tree_depth(v), bits, finite)];
      for (std::uint32_t key = 0; key < 42; ++key) {
        for (std::uint64_t pos = 0; pos < 9; ++pos) {
          const unsigned expect = net::classify(bits, finite, [&](unsigned v, unsigned) {
            return net::splitter_above(key, pos, tree[v].key, tree[v].pos, less);
          });
          unsigned node = 1;
          bool tie = false;
          for (unsigned d = 0; d < bits; ++d)
            node = net::descend_by_key(node, key, tree[node].key, tie, less);
          if (tie) {
            ++tied;
            continue;
          }
          ++untied;
          ASSERT_EQ(std::min(node - s, finite), expect) << "bits=" << bits << " key=" << key;
        }
      }
    }
  }
  EXPECT_GT(tied, 100);  // both kinds of descent occur
  EXPECT_GT(untied, 1000);
}

// The tree holds every splitter once, in order (an in-order walk visits 1..s-1), and a node's
// depth is the one tree_splitter takes.
TEST(SampleSortPlan, SplitterTreeHoldsEverySplitterInOrder) {
  for (unsigned bits = 1; bits <= 10; ++bits) {
    const unsigned s = 1u << bits;
    std::vector<unsigned> in_order;
    const auto walk = [&](auto&& self, unsigned node) -> void {
      if (node >= s) return;
      self(self, 2 * node);
      in_order.push_back(net::tree_splitter(node, net::tree_depth(node), bits));
      self(self, 2 * node + 1);
    };
    walk(walk, 1);
    ASSERT_EQ(in_order.size(), s - 1);
    for (unsigned j = 1; j < s; ++j) ASSERT_EQ(in_order[j - 1], j) << "bits=" << bits;
  }
  EXPECT_EQ(net::tree_depth(1), 0u);
  EXPECT_EQ(net::tree_depth(2), 1u);
  EXPECT_EQ(net::tree_depth(3), 1u);
  EXPECT_EQ(net::tree_depth(1023), 9u);
  EXPECT_EQ(net::tree_splitter(1, 0, 10), 512u);
  EXPECT_EQ(net::tree_splitter(3, 1, 10), 768u);
}

// Small tiles and final buckets, so that a few thousand keys take several levels.
cpu::sample_sort_config small_config(bool random, int bucket_bits = 3) {
  cpu::sample_sort_config cfg;
  cfg.tile_bits = 7;
  cfg.final_cap = 40;
  cfg.max_bucket_bits = cfg.finish_bucket_bits = bucket_bits;
  cfg.random = random;
  return cfg;
}

template <class K>
void check_sorted_with_bound(std::vector<K> keys, const cpu::sample_sort_config& cfg,
                             bool descending) {
  const std::vector<K> expect = reference_sort(keys, descending, nans_largest(descending));
  cpu::sample_sort_report report;
  cpu::sample_sort(keys.data(), static_cast<gpusort::detail::no_value*>(nullptr), keys.size(),
                   net::directed<gpusort::less<K>>{{}, descending}, cfg, &report);
  ASSERT_TRUE(same_bits(keys, expect));
  if (cfg.random) return;
  for (int l = 0; l < report.plan.count; ++l) {
    const net::sample_level& lv = report.plan.levels[l];
    EXPECT_LE(report.largest_bucket[l], lv.bucket_bound(lv.cap))
        << "level " << l << " of " << report.plan.count << ", s=" << lv.buckets();
  }
}

GPUSORT_TYPED_SUITE(CpuSampleSort, ::testing::Test, key_types);

TYPED_TEST(CpuSampleSort, KeysMatchStableSortOnEveryDistribution) {
  using K = TypeParam;
  for_each_hostile_input<K>(1 << 14, 13, [](const std::vector<K>& keys, bool descending) {
    for (bool random : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "random=" << random);
      check_sorted_with_bound(keys, small_config(random), descending);
      if (::testing::Test::HasFatalFailure()) return;
    }
  });
}

TYPED_TEST(CpuSampleSort, DefaultTilesOnLargerInputs) {
  using K = TypeParam;
  for (std::size_t n : {std::size_t{8193}, std::size_t{100003}, std::size_t{1} << 19}) {
    for (tools::distribution d : {tools::distribution::uniform, tools::distribution::all_equal,
                                  tools::distribution::zipf}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << tools::to_string(d));
      for (bool random : {false, true}) {
        cpu::sample_sort_config cfg;
        cfg.random = random;
        check_sorted_with_bound(tools::generate<K>(d, n, n + 5), cfg, false);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// The inputs against regular sampling, and tiles that each hold a single value, and
// descending keys.
std::vector<std::vector<std::uint32_t>> adversarial_inputs(std::size_t n, unsigned stride,
                                                           unsigned tile) {
  std::vector<std::vector<std::uint32_t>> sets = against_regular_sampling(n, stride, tile, 7u);
  std::vector<std::uint32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint32_t>((i / tile) % 3);
  sets.push_back(v);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint32_t>(n - i);
  sets.push_back(v);
  return sets;
}

TEST(CpuSampleSortBound, HoldsOnAdversarialInputs) {
  for (int bucket_bits : {1, 2, 3, 5}) {
    const cpu::sample_sort_config cfg = small_config(false, bucket_bits);
    const unsigned tile = 1u << cfg.tile_bits, stride = tile >> bucket_bits;
    for (std::size_t n : {std::size_t{129}, std::size_t{1000}, std::size_t{20011}}) {
      int set = 0;
      for (auto& keys : adversarial_inputs(n, stride, tile)) {
        SCOPED_TRACE(::testing::Message() << "s=" << (1 << bucket_bits) << " n=" << n
                                          << " input " << set++);
        check_sorted_with_bound(keys, cfg, false);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TEST(CpuSampleSortBound, AllEqualKeysSplitEvenly) {
  // Ties broken by position: all-equal keys fill the buckets like distinct ones, under regular
  // sampling within the bound of an even split, under randomized sampling (classified by key
  // and position) with none holding a quarter.
  for (bool random : {false, true}) {
    std::vector<std::uint32_t> keys(1 << 16, 42u);
    cpu::sample_sort_report report;
    cpu::sample_sort(keys.data(), static_cast<gpusort::detail::no_value*>(nullptr), keys.size(),
                     gpusort::less<std::uint32_t>{}, small_config(random, 4), &report);
    ASSERT_GE(report.plan.count, 1);
    const net::sample_level& lv = report.plan.levels[0];
    const index_t most = random ? lv.cap / 4 : (lv.cap + lv.buckets() - 1) / lv.buckets() + lv.stride();
    EXPECT_LE(report.largest_bucket[0], most) << "random=" << random;
    EXPECT_TRUE(std::all_of(keys.begin(), keys.end(), [](std::uint32_t k) { return k == 42u; }));
  }
}

TEST(SampleSortPlan, FiniteSplittersAreThoseOfRankBelowS) {
  for (int bits = 1; bits <= 10; ++bits) {
    const net::sample_level lv{1, 1 << 20, 14, bits};
    for (index_t S : {0, 1, 2, 3, 5, 7, 31, 64, 100, 1023, 1024, 1025, 5000}) {
      index_t expect = 0;
      while (expect + 1 < lv.buckets() && lv.splitter_rank(expect + 1, S) < S) ++expect;
      EXPECT_EQ(lv.finite_splitters(S), expect) << "s=" << lv.buckets() << " S=" << S;
    }
  }
}

TEST(SampleSortPlan, RandomSamplingThinsTheSamplesOfManyTiles) {
  const net::sample_plan plan = net::thin_random_samples(net::plan_sample_sort(1 << 24, 14, 8192, 8, 10));
  ASSERT_EQ(plan.count, 2);
  const net::sample_level& first = plan.levels[0];  // 1024 tiles, 256 buckets
  EXPECT_EQ(first.thinning, 5);
  EXPECT_EQ(first.tile_samples(), 8u);
  EXPECT_EQ(first.stride(), 2048u);
  EXPECT_EQ(first.samples(first.cap) / first.buckets(), net::random_samples_per_bucket);
  EXPECT_EQ(plan.levels[1].thinning, 0) << "few tiles a problem: a sample per stride as before";
  // A tile keeps a sample at least, however many tiles.
  net::sample_plan many = net::plan_sample_sort(index_t{1} << 34, 7, 8192, 2, 2);
  many = net::thin_random_samples(many);
  EXPECT_EQ(many.levels[0].tile_samples(), 1u);
}

// A problem of few tiles takes several samples a bucket from each tile, where the densest
// stride allows, for random_samples_per_bucket a bucket; by default one a bucket and tile.
TEST(SampleSortPlan, RandomSamplingTakesMoreSamplesFromFewTiles) {
  net::sample_plan plan;
  plan.count = 3;
  plan.levels[0] = {32, 9216, 10, 4};   // 32-byte records' 2^18: 9 tiles a problem, 16 buckets
  plan.levels[1] = {1, 4096, 11, 2};    // 16-byte records' 2^12: 2 tiles, 4 buckets
  plan.levels[2] = {1, 1 << 10, 10, 6}; // one tile at the densest stride already
  const net::sample_plan dense = net::thin_random_samples(plan, 4);
  const net::sample_level& nine = dense.levels[0];
  EXPECT_EQ(nine.thinning, -2);
  EXPECT_EQ(nine.stride(), 16u);
  EXPECT_EQ(nine.tile_samples(), 64u);
  EXPECT_GE(nine.samples(nine.cap) / nine.buckets(), net::random_samples_per_bucket);
  const net::sample_level& two = dense.levels[1];
  EXPECT_EQ(two.thinning, -4) << "the sparsest stride that gives 32 a bucket";
  EXPECT_EQ(two.samples(two.cap) / two.buckets(), net::random_samples_per_bucket);
  EXPECT_EQ(dense.levels[2].thinning, 0) << "stride 16 already: no denser";
  EXPECT_EQ(dense.levels[2].stride(), 16u);
  const net::sample_plan sparse = net::thin_random_samples(plan);
  for (int l = 0; l < sparse.count; ++l) {
    EXPECT_EQ(sparse.levels[l].thinning, 0) << "by default a sample a bucket and tile: " << l;
    EXPECT_EQ(sparse.levels[l].tile_samples(), sparse.levels[l].buckets());
  }
}

// A final bucket's place, mirrored for a descending sort, and who sorts a record bucket.
TEST(SampleSortPlan, FinalBucketsTheirRangeAndTheirSorter) {
  const index_t offsets[] = {0, 3, 3, 10};
  const net::problem_list buckets{offsets, 1, 4, 16};
  const index_t expect[][2] = {{0, 3}, {3, 3}, {3, 10}, {10, 16}};
  for (index_t q = 0; q < 4; ++q) {
    const net::key_range r = net::final_bucket_range(buckets, q, false);
    EXPECT_EQ(r.begin, expect[q][0]) << q;
    EXPECT_EQ(r.end, expect[q][1]) << q;
    const net::key_range m = net::final_bucket_range(buckets, q, true);
    EXPECT_EQ(m.begin, 16 - expect[q][1]) << "mirrored: position i at n - 1 - i; " << q;
    EXPECT_EQ(m.end, 16 - expect[q][0]) << q;
  }
  using net::bucket_sorter;
  for (index_t size : {0, 1, 1023, 1024})
    EXPECT_EQ(net::records_bucket_sorter(size, 1024, 2048), bucket_sorter::tile) << size;
  for (index_t size : {1025, 2047, 2048})
    EXPECT_EQ(net::records_bucket_sorter(size, 1024, 2048), bucket_sorter::twice_tile) << size;
  for (index_t size : {2049, 100000})
    EXPECT_EQ(net::records_bucket_sorter(size, 1024, 2048), bucket_sorter::segmented) << size;
  EXPECT_EQ(net::records_bucket_sorter(1025, 1024, 1024), bucket_sorter::segmented)
      << "no twice-tile block: beyond the tile, the segmented sort";
}

TEST(SampleSortPlan, KeptSamplesAreDistinctAndSpreadOverAll) {
  for (index_t S : {1, 2, 7, 100, 1000, 8192, 8193, 32768, 1000003}) {
    for (index_t kept : {index_t{1}, index_t{2}, index_t{100}, index_t{2048}, index_t{8192}}) {
      if (kept > S) continue;
      const index_t gap = (S + kept - 1) / kept;  // every window of this many holds one
      index_t last = 0;
      for (index_t j = 0; j < kept; ++j) {
        const index_t k = net::kept_sample(j, S, kept);
        ASSERT_LT(k, S) << S << " " << kept << " " << j;
        if (j == 0) {
          EXPECT_EQ(k, 0u);
        } else {
          ASSERT_GT(k, last) << "distinct, in order: S=" << S << " kept=" << kept;
          ASSERT_LE(k - last, gap) << "no gap wider than S / kept: S=" << S << " kept=" << kept;
        }
        last = k;
      }
      EXPECT_GE(last + gap, S) << "the last window reached: S=" << S << " kept=" << kept;
    }
  }
  net::sample_level lv{1, 1 << 20, 14, 8};
  EXPECT_EQ(lv.sorted_samples(1 << 20), lv.samples(1 << 20)) << "no cap: all";
  lv.sorted_cap = 100;
  EXPECT_EQ(lv.sorted_samples(1 << 20), 100u);
  EXPECT_EQ(lv.sorted_samples(lv.stride() * 7), 7u) << "fewer than the cap: all";
}

TEST(SampleSortPlan, BlocksSortTheSamplesOfLevelsOfManyProblemsOnly) {
  constexpr index_t small = 2048, large = 8192;
  net::sample_level one{1, 1 << 24, 13, 8};  // the first level: one problem
  one.thinning = 6;
  EXPECT_EQ(net::block_sorted_cap(one, small, large), 0u) << "one problem: the device sort";
  net::sample_level few = one;
  few.problems = net::block_sorted_min_problems - 1;
  EXPECT_EQ(net::block_sorted_cap(few, small, large), 0u);
  net::sample_level many{256, 1 << 16, 13, 5};  // 2^24's second level: 512 samples a problem
  ASSERT_LE(many.samples(many.cap), small);
  EXPECT_EQ(net::block_sorted_cap(many, small, large), small);
  many.bucket_bits = 9;  // 8,192 a problem: more than the small block holds
  ASSERT_GT(many.samples(many.cap), small);
  EXPECT_EQ(net::block_sorted_cap(many, small, large), large);
  many.problems = net::block_sorted_min_problems;
  EXPECT_EQ(net::block_sorted_cap(many, small, large), large) << "the threshold itself: blocks";
}

TEST(SampleSortPlan, RandomPlansTakeTheFewestLevelsToTheirMean) {
  struct shape {
    int tile_bits;
    index_t final_cap;
    int max_bits;
    index_t headroom;
  };
  for (shape sh : {shape{14, 8184, 9, 4}, shape{11, 2046, 8, 2}, shape{10, 1022, 7, 2}, shape{7, 40, 3, 4},
                   shape{7, 40, 1, 4}}) {
    index_t target = 1;
    while (target * sh.headroom < sh.final_cap) target *= 2;
    for (index_t n : {index_t{0}, index_t{1}, sh.final_cap, sh.final_cap + 1, index_t{1} << 20,
                      index_t{3000017}, index_t{1} << 24, index_t{1} << 28, index_t{5} << 30}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " final_cap=" << sh.final_cap
                                        << " max_bits=" << sh.max_bits);
      const net::sample_plan plan =
          net::plan_random_sample_sort(n, sh.tile_bits, sh.final_cap, sh.max_bits, sh.headroom);
      if (n <= sh.final_cap) {
        EXPECT_EQ(plan.count, 0);
        continue;
      }
      ASSERT_GE(plan.count, 1);
      ASSERT_LE(plan.count, net::sample_plan::max_levels);
      index_t problems = 1;
      int bits = 0;
      for (int l = 0; l < plan.count; ++l) {
        const net::sample_level& lv = plan.levels[l];
        EXPECT_EQ(lv.problems, problems) << "level " << l;
        EXPECT_GE(lv.bucket_bits, 1);
        EXPECT_LE(lv.bucket_bits, sh.max_bits);
        if (l > 0) {
          EXPECT_LE(lv.bucket_bits, plan.levels[l - 1].bucket_bits) << "spare bits go first";
          EXPECT_GE(lv.bucket_bits + 1, plan.levels[l - 1].bucket_bits) << "bits spread evenly";
          const index_t mean = (n + problems - 1) / problems;
          EXPECT_EQ(lv.cap, mean + mean / 8) << "level " << l;
        } else {
          EXPECT_EQ(lv.cap, n);
        }
        problems *= lv.buckets();
        bits += lv.bucket_bits;
      }
      EXPECT_EQ(plan.final_problems, problems);
      EXPECT_EQ(plan.final_cap, (n + problems - 1) / problems);
      if (plan.count < net::sample_plan::max_levels) {
        EXPECT_LE(n >> bits, target) << "final buckets at the target mean";
        EXPECT_GT(n >> (bits - 1), target) << "no more buckets than needed";
        EXPECT_GT(bits, (plan.count - 1) * sh.max_bits) << "no fewer levels reach it";
      }
    }
  }
  // Records' shape (16-byte records: tiles of 2,048, at most 2^8 buckets): two levels where the
  // bound's plan takes three.
  EXPECT_EQ(net::plan_random_sample_sort(index_t{1} << 24, 11, 2046, 8, 2).count, 2);
  EXPECT_EQ(net::plan_random_sample_sort(index_t{1} << 26, 11, 2046, 8, 2).count, 2);
  EXPECT_EQ(net::plan_sample_sort(index_t{1} << 26, 11, 2046, 7, 7).count, 3);
}

TEST(CpuSampleSortBound, ThinnedRandomSamplesStillSplitEvenly) {
  cpu::sample_sort_config cfg = small_config(true, 3);  // tiles of 128 keys: 512 at 2^16
  for (tools::distribution d : {tools::distribution::uniform, tools::distribution::all_equal,
                                tools::distribution::few_unique}) {
    std::vector<std::uint32_t> keys = tools::generate<std::uint32_t>(d, 1 << 16, 3);
    const std::vector<std::uint32_t> expect = reference_sort(keys);
    cpu::sample_sort_report report;
    cpu::sample_sort(keys.data(), static_cast<gpusort::detail::no_value*>(nullptr), keys.size(),
                     gpusort::less<std::uint32_t>{}, cfg, &report);
    ASSERT_TRUE(same_bits(keys, expect)) << tools::to_string(d);
    ASSERT_EQ(report.plan.levels[0].thinning, 3);
    EXPECT_LE(report.largest_bucket[0], 3 * (index_t{1} << 16) / 2 / 8) << tools::to_string(d);
  }
}

// Denser samples where tiles are few sort the same, and keep the largest bucket nearer its
// mean: a problem of 8 tiles of 128 keys and 8 buckets takes 4 samples a bucket and tile.
TEST(CpuSampleSortBound, DenserRandomSamplesSortAndSplitEvenly) {
  cpu::sample_sort_config cfg = small_config(true, 3);
  cfg.final_cap = 300;  // about 2^10 keys: one level of 8 buckets (mean 128) from 8 tiles
  cfg.min_stride_bits = 2;
  for (tools::distribution d : {tools::distribution::uniform, tools::distribution::all_equal,
                                tools::distribution::few_unique, tools::distribution::sorted}) {
    for (std::size_t n : {std::size_t{1000}, std::size_t{1} << 10, std::size_t{1031}}) {
      std::vector<std::uint32_t> keys = tools::generate<std::uint32_t>(d, n, 5);
      const std::vector<std::uint32_t> expect = reference_sort(keys);
      std::vector<std::uint32_t> values(n);
      std::iota(values.begin(), values.end(), 0u);
      const std::vector<std::uint32_t> input = keys;
      cpu::sample_sort_report report;
      cpu::sample_sort(keys.data(), values.data(), n, gpusort::less<std::uint32_t>{}, cfg, &report);
      ASSERT_TRUE(same_bits(keys, expect)) << tools::to_string(d) << " n=" << n;
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(input[values[i]], keys[i]) << i;
      ASSERT_GE(report.plan.count, 1);
      EXPECT_LT(report.plan.levels[0].thinning, 0) << "denser than a sample a bucket and tile";
      EXPECT_GE(report.plan.levels[0].stride(), 4u);
      if (d == tools::distribution::uniform)
        EXPECT_LE(report.largest_bucket[0], 2 * n / 8) << "n=" << n;
    }
  }
}

TYPED_TEST(CpuSampleSort, PairsKeepTheirValues) {
  using K = TypeParam;
  for (bool random : {false, true}) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{3000}, std::size_t{50021}}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " random=" << random);
      const std::vector<K> input = tools::generate<K>(tools::distribution::few_unique, n, n);
      std::vector<K> keys = input;
      std::vector<std::uint64_t> values(n);
      for (std::size_t i = 0; i < n; ++i) values[i] = i;
      cpu::sample_sort(keys.data(), values.data(), n, gpusort::less<K>{}, small_config(random));
      ASSERT_TRUE(same_bits(keys, reference_sort(input)));
      ASSERT_TRUE(values_follow_keys(input, keys, values, [](std::uint64_t i) { return i; }));
    }
  }
}

TEST(CpuSampleSort, ThroughTheLibraryWithEveryBucketCount) {
  for (unsigned buckets : {0u, 2u, 16u, 1024u}) {
    for (auto sampler : {gpusort::sampling::regular, gpusort::sampling::random}) {
      std::vector<float> keys = tools::generate<float>(tools::distribution::gaussian, 70001, buckets);
      const std::vector<float> expect = reference_sort(keys, true, nans_largest(true));
      gpusort::detail::cpu_sort_keys(keys.data(), keys.size(),
                                     {.algo = gpusort::algorithm::sample_sort,
                                      .direction = gpusort::order::descending,
                                      .sampler = sampler,
                                      .buckets = buckets});
      ASSERT_TRUE(same_bits(keys, expect)) << "buckets=" << buckets;
    }
  }
  std::vector<float> keys(10, 1.0f);
  EXPECT_THROW(gpusort::detail::cpu_sort_keys(keys.data(), keys.size(),
                                              {.algo = gpusort::algorithm::sample_sort,
                                               .buckets = 48}),
               gpusort::error);
}

TEST(SampleSortNames, RandomSamplingHasItsOwnName) {
  gpusort::options opt;
  ASSERT_TRUE(gpusort::parse_method("sample_sort_random", opt));
  EXPECT_EQ(opt.algo, gpusort::algorithm::sample_sort);
  EXPECT_EQ(opt.sampler, gpusort::sampling::random);
  EXPECT_EQ(gpusort::method_name(opt), "sample_sort_random");
  ASSERT_TRUE(gpusort::parse_method("sample_sort", opt));
  EXPECT_EQ(opt.sampler, gpusort::sampling::regular);
  EXPECT_EQ(gpusort::method_name(opt), "sample_sort");
  EXPECT_FALSE(gpusort::parse_method("sample", opt));
}
