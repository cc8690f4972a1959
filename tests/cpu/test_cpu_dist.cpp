// The distributed sample sort's index math (detail/index_math/dist.hpp), and the whole algorithm
// simulated on the CPU with p shards: the output must be the stable sort by (key, rank,
// position), and no rank may receive more than the stated bound, whatever the input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "gpusort/detail/index_math/dist.hpp"
#include "gpusort/key_traits.hpp"
#include "reference.hpp"

namespace {

namespace math = gpusort::detail::index_math::dist;
using math::splitter;

TEST(DistMath, SampleStrideCoversOversampling) {
  EXPECT_EQ(math::sample_stride(0, 4, 256), 1u);
  EXPECT_EQ(math::sample_stride(1, 4, 256), 1u);
  EXPECT_EQ(math::sample_stride(1024, 4, 256), 1u);
  EXPECT_EQ(math::sample_stride(1025, 4, 256), 2u);
  EXPECT_EQ(math::sample_stride(std::uint64_t{1} << 32, 4, 256), std::uint64_t{1} << 22);
  EXPECT_EQ(math::sample_stride(100, 2, 0), 50u);  // oversampling 0 counts as 1
}

TEST(DistMath, SamplesAreTheLastKeyOfEveryFullStride) {
  EXPECT_EQ(math::sample_count(9, 3), 3u);
  EXPECT_EQ(math::sample_count(8, 3), 2u);
  EXPECT_EQ(math::sample_position(0, 3), 2u);
  EXPECT_EQ(math::sample_position(2, 3), 8u);
  EXPECT_LT(math::sample_position(math::sample_count(8, 3) - 1, 3), 8u);
}

TEST(DistMath, SplitterRanksAreEvenlySpaced) {
  EXPECT_EQ(math::splitter_rank(1, 1000, 4), 250u);
  EXPECT_EQ(math::splitter_rank(3, 1000, 4), 750u);
  EXPECT_EQ(math::splitter_rank(1, 1, 4), 0u);
  EXPECT_EQ(math::splitter_rank(3, 3, 4), 2u);  // always a valid index below S
}

TEST(DistMath, KeysBeforeASplitterFollowRankThenPosition) {
  const splitter s{7, 2, 15};
  EXPECT_EQ(math::keys_before(s, 1, 10, 20), 20u);  // earlier rank: all equal keys before
  EXPECT_EQ(math::keys_before(s, 3, 10, 20), 10u);  // later rank: none
  EXPECT_EQ(math::keys_before(s, 2, 10, 20), 15u);  // own rank: those before its position
}

TEST(DistMath, SplittersOrderByKeyRankPosition) {
  EXPECT_TRUE((splitter{1, 5, 9} < splitter{2, 0, 0}));
  EXPECT_TRUE((splitter{2, 0, 9} < splitter{2, 1, 0}));
  EXPECT_TRUE((splitter{2, 1, 3} < splitter{2, 1, 4}));
  EXPECT_FALSE((splitter{2, 1, 4} < splitter{2, 1, 4}));
}

TEST(DistMath, ExchangePlanFromBounds) {
  // Two ranks: rank 0 has 5 keys (3 for rank 0, 2 for rank 1), rank 1 has 4 (1 and 3).
  const std::vector<std::uint64_t> bounds{0, 3, 5, 0, 1, 4};
  const math::exchange_plan r0(bounds, 2, 0), r1(bounds, 2, 1);
  EXPECT_EQ(r0.send_count(0), 3u);
  EXPECT_EQ(r0.send_count(1), 2u);
  EXPECT_EQ(r0.send_offset(1), 3u);
  EXPECT_EQ(r0.recv_count(1), 1u);
  EXPECT_EQ(r0.received(), 4u);
  EXPECT_EQ(r1.received(), 5u);
  EXPECT_EQ(r1.source_offset(0), 3u);
  EXPECT_EQ(r1.source_offset(1), 1u);
  // 4-byte keys: rank 0's own 3 keys stay in its shard; rank 1's one key for rank 0 is the
  // first of a shard that starts 4 bytes past an aligned address: no lead (that would reach
  // below the shard), placed at the buffer's start.
  const auto runs = r0.received_runs({0, 256 + 4}, 4, {}, 0);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].from, 0);
  EXPECT_TRUE(runs[0].in_place);
  EXPECT_EQ(runs[0].length, 3u);
  EXPECT_EQ(runs[1].from, 1);
  EXPECT_FALSE(runs[1].in_place);
  EXPECT_EQ(runs[1].length, 1u);
  EXPECT_EQ(runs[1].key_lead, 0u);
  EXPECT_EQ(runs[1].key_at, 0u);
  // Rank 1 takes rank 0's keys from position 3 of an aligned shard: a lead of 3 from 0.
  const auto of_r1 = r1.received_runs({256, 0}, 4, {}, 0);
  ASSERT_EQ(of_r1.size(), 2u);
  EXPECT_EQ(of_r1[0].key_lead, 3u);
  EXPECT_EQ(of_r1[0].key_at, 3u);
  EXPECT_TRUE(of_r1[1].in_place);
}

TEST(DistMath, LeadsReachBackToTheAlignedAddress) {
  EXPECT_EQ(math::lead_elements(4096, 0, 4), 0u);
  EXPECT_EQ(math::lead_elements(4096 + 4, 0, 4), 1u);
  EXPECT_EQ(math::lead_elements(4096 + 12, 0, 4), 3u);
  EXPECT_EQ(math::lead_elements(4096 + 8, 0, 8), 1u);
  EXPECT_EQ(math::lead_elements(4096 + 8, 4096 + 4, 4), 0u);  // the shard starts after 4096
  EXPECT_EQ(math::lead_elements(4096 + 8, 4096, 16), 0u);     // 16-byte values 8 bytes off
  for (std::uint64_t bytes : {4u, 8u})
    for (std::uint64_t address = 64; address < 128; address += bytes)
      EXPECT_EQ((address - bytes * math::lead_elements(address, 0, bytes)) % 16, 0u);
}

TEST(DistMath, TransfersStartAlignedAfterTheLastRun) {
  for (std::uint64_t bytes : {4u, 8u, 16u})
    for (std::uint64_t free = 0; free < 12; ++free)
      for (std::uint64_t lead = 0; lead * bytes < 16; ++lead) {
        const std::uint64_t at = math::aligned_start(free, lead, bytes);
        EXPECT_GE(at - lead, free);                       // after the last run
        EXPECT_LT((at - lead - free) * bytes, 16u);      // at most 16 bytes of padding
        EXPECT_EQ((at - lead) * bytes % 16, 0u) << bytes << " " << free << " " << lead;
      }
}

// Every sender's transfer, from its own addresses, is the one its receiver lays out for: the
// same lead, starting aligned at both ends where the shard allows, runs in rank order that do
// not overlap.
TEST(DistMath, ReceivedRunsMatchWhatEachSenderSends) {
  std::mt19937_64 gen(7);
  for (int p : {1, 2, 3, 5})
    for (int trial = 0; trial < 50; ++trial) {
      std::vector<std::uint64_t> bounds, key_bases, value_bases;
      for (int q = 0; q < p; ++q) {
        std::vector<std::uint64_t> row{0};
        for (int j = 1; j < p; ++j) row.push_back(row.back() + gen() % 9);
        row.push_back(row.back() + gen() % 9);
        bounds.insert(bounds.end(), row.begin(), row.end());
        key_bases.push_back(4096 * (q + 1) + 4 * (gen() % 4));
        value_bases.push_back(65536 * (q + 1) + 8 * (gen() % 2));
      }
      for (int self = 0; self < p; ++self) {
        const math::exchange_plan plan(bounds, p, self);
        const auto runs = plan.received_runs(key_bases, 4, value_bases, 8);
        std::uint64_t key_end = 0, value_end = 0, total = 0;
        int last = -1;
        for (const auto& run : runs) {
          EXPECT_GT(run.from, last);
          last = run.from;
          EXPECT_GT(run.length, 0u);
          EXPECT_EQ(run.in_place, run.from == self);
          total += run.length;
          if (run.in_place) continue;
          EXPECT_GE(run.key_at - run.key_lead, key_end);
          EXPECT_GE(run.value_at - run.value_lead, value_end);
          key_end = run.key_at + run.length;
          value_end = run.value_at + run.length;
          EXPECT_EQ((run.key_at - run.key_lead) * 4 % 16, 0u);
          EXPECT_EQ((run.value_at - run.value_lead) * 8 % 16, 0u);
          const math::exchange_plan sender(bounds, p, run.from);
          EXPECT_EQ(sender.send_count(self), run.length);
          const std::uint64_t key_from = key_bases[run.from] + 4 * sender.send_offset(self);
          const std::uint64_t value_from = value_bases[run.from] + 8 * sender.send_offset(self);
          EXPECT_EQ(run.key_lead, math::lead_elements(key_from, key_bases[run.from], 4));
          EXPECT_EQ(run.value_lead, math::lead_elements(value_from, value_bases[run.from], 8));
          if (run.key_lead > 0) EXPECT_EQ((key_from - 4 * run.key_lead) % 16, 0u);
          if (run.value_lead > 0) EXPECT_EQ((value_from - 8 * run.value_lead) % 16, 0u);
        }
        EXPECT_EQ(total, plan.received());
        // The receive buffers' room for the runs, leads and padding included.
        EXPECT_LE(key_end, math::receive_buffer_elements(plan.received(), p, 4));
        EXPECT_LE(value_end, math::receive_buffer_elements(plan.received(), p, 8));
      }
    }
}

// Every field of a call's signature changes its packed word, and the message names the
// fields that differ; the first rank that differs from rank 0 is found.
TEST(DistMath, CallSignaturesTellDisagreeingRanksApart) {
  const math::call_signature base{math::key_kind::floating, 4, 0, false, false, false, 0, 1024};
  const std::uint64_t word = math::pack(base);
  const auto differs = [&](math::call_signature other, const char* name) {
    const std::uint64_t w = math::pack(other);
    EXPECT_NE(w, word) << name;
    EXPECT_EQ(math::signature_difference(word, w), name);
  };
  auto c = base;
  c.kind = math::key_kind::unsigned_integer;
  differs(c, "the key type");
  c = base;
  c.key_bytes = 8;
  differs(c, "the key type");
  c = base;
  c.value_bytes = 4;
  differs(c, "the value size");
  c = base;
  c.descending = true;
  differs(c, "the order");
  c = base;
  c.nans_first = true;
  differs(c, "the NaN placement");
  c = base;
  c.stable = true;
  differs(c, "stable");
  c = base;
  c.partition_first = true;
  differs(c, "partition_first");
  c = base;
  c.local_algo = 5;
  differs(c, "the local algorithm");
  c = base;
  c.oversampling = math::max_oversampling;
  differs(c, "the oversampling");
  c = base;
  c.sub_buckets = 8;
  differs(c, "sub_buckets");
  c.sub_buckets = 1;
  differs(c, "sub_buckets");
  c = base;
  c.copy_engines = true;
  differs(c, "copy_engines");
  c = base;
  c.descending = true;
  c.value_bytes = 16;
  EXPECT_EQ(math::signature_difference(word, math::pack(c)), "the value size, the order");
  EXPECT_EQ(math::first_disagreeing({word, word, word}), -1);
  EXPECT_EQ(math::first_disagreeing({word, word, math::pack(c), word}), 2);
  EXPECT_EQ(math::first_disagreeing({word}), -1);
}

// Sorting by the order code alone gives the library's order for every key type, NaN
// placement and direction: the splitters and the merge agree with the local sort.
GPUSORT_TYPED_SUITE(DistOrderCode, ::testing::Test, gpusort::testing::key_types);

TYPED_TEST(DistOrderCode, SortingByTheCodeIsTheLibrarysOrder) {
  using K = TypeParam;
  gpusort::testing::for_each_hostile_input<K>(1 << 12, 7, [](std::vector<K>& keys,
                                                             bool descending) {
    for (gpusort::nan_order nans : {gpusort::nan_order::last, gpusort::nan_order::first}) {
      SCOPED_TRACE(::testing::Message() << "nans=" << gpusort::to_string(nans));
      const math::order_code<K> code(
          descending ? gpusort::order::descending : gpusort::order::ascending, nans);
      std::vector<K> by_code = keys;
      std::stable_sort(by_code.begin(), by_code.end(),
                       [&](K a, K b) { return code(a) < code(b); });
      ASSERT_TRUE(gpusort::testing::same_bits(
          by_code, gpusort::testing::reference_sort(keys, descending, nans)));
    }
  });
}

TEST(DistOrderCode, NansTieAndZerosKeepTheirOrder) {
  for (gpusort::order direction : {gpusort::order::ascending, gpusort::order::descending})
    for (gpusort::nan_order nans : {gpusort::nan_order::last, gpusort::nan_order::first}) {
      const math::order_code<float> code(direction, nans);
      const float nan = std::numeric_limits<float>::quiet_NaN();
      EXPECT_EQ(code(nan), code(-nan));
      const bool ascending = direction == gpusort::order::ascending;
      EXPECT_EQ(code(-0.0f) < code(0.0f), ascending);
      const float inf = std::numeric_limits<float>::infinity();
      // NaNs after every number in the sort's own direction for `last`, before for `first`.
      const bool nans_after = nans == gpusort::nan_order::last;
      EXPECT_EQ(code(nan) > code(inf) && code(nan) > code(-inf), nans_after);
      EXPECT_EQ(code(nan) < code(inf) && code(nan) < code(-inf), !nans_after);
    }
}

TEST(DistMath, EmptyRunsAreLeftOutOfTheMerge) {
  const std::vector<std::uint64_t> bounds{0, 0, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0};  // rank 1's 2 keys go to rank 1
  const math::exchange_plan r1(bounds, 3, 1), r0(bounds, 3, 0);
  const auto one = r1.received_runs({0, 0, 0}, 4, {}, 0);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].from, 1);
  EXPECT_TRUE(one[0].in_place);
  EXPECT_EQ(one[0].length, 2u);
  EXPECT_TRUE(r0.received_runs({0, 0, 0}, 4, {}, 0).empty());
}

// ---- the algorithm on the CPU ---------------------------------------------------------------

struct item {
  std::uint32_t key;
  std::uint32_t rank;  // where it started, and its position after the local sort
  std::uint64_t pos;
};

// What dist::sort does, step by step, on p shards; returns each rank's received keys merged.
std::vector<std::vector<item>> simulate(std::vector<std::vector<std::uint32_t>> shards,
                                        std::uint64_t oversampling, bool descending,
                                        std::uint64_t* bound_out) {
  const int p = static_cast<int>(shards.size());
  const std::uint64_t flip = descending ? 0xffffffffu : 0;
  auto image = [&](std::uint32_t k) { return std::uint64_t{gpusort::key_traits<std::uint32_t>::ordered(k)} ^ flip; };
  std::uint64_t total = 0;
  for (auto& s : shards) {
    total += s.size();
    std::stable_sort(s.begin(), s.end(), [&](auto a, auto b) { return image(a) < image(b); });
  }
  if (total == 0) return std::vector<std::vector<item>>(p);  // dist::sort returns at once
  const std::uint64_t w = math::sample_stride(total, p, oversampling);
  std::vector<splitter> samples;
  for (int r = 0; r < p; ++r)
    for (std::uint64_t i = 0; i < math::sample_count(shards[r].size(), w); ++i) {
      const std::uint64_t pos = math::sample_position(i, w);
      samples.push_back({image(shards[r][pos]), static_cast<std::uint32_t>(r), pos});
    }
  std::sort(samples.begin(), samples.end());
  *bound_out = math::max_bucket(samples.size(), w, p);
  std::vector<splitter> chosen;
  for (int j = 1; j < p; ++j) chosen.push_back(samples[math::splitter_rank(j, samples.size(), p)]);
  std::vector<std::uint64_t> bounds;
  for (int r = 0; r < p; ++r) {
    const auto& s = shards[r];
    bounds.push_back(0);
    for (const splitter& sp : chosen) {
      auto lo = std::partition_point(s.begin(), s.end(), [&](auto k) { return image(k) < sp.key; });
      auto hi = std::partition_point(s.begin(), s.end(), [&](auto k) { return image(k) <= sp.key; });
      bounds.push_back(math::keys_before(sp, r, lo - s.begin(), hi - s.begin()));
    }
    bounds.push_back(s.size());
  }
  std::vector<std::vector<item>> out(p);
  for (int to = 0; to < p; ++to) {
    const math::exchange_plan plan(bounds, p, to);
    for (int from = 0; from < p; ++from) {
      const math::exchange_plan sender(bounds, p, from);
      EXPECT_EQ(sender.send_count(to), plan.recv_count(from));
      for (std::uint64_t i = 0; i < sender.send_count(to); ++i) {
        const std::uint64_t pos = sender.send_offset(to) + i;
        out[to].push_back({shards[from][pos], static_cast<std::uint32_t>(from), pos});
      }
    }
    EXPECT_EQ(out[to].size(), plan.received());
    // The merge of runs in rank order: a stable sort by key does the same.
    std::stable_sort(out[to].begin(), out[to].end(),
                     [&](const item& a, const item& b) { return image(a.key) < image(b.key); });
  }
  return out;
}

void check(const std::vector<std::vector<std::uint32_t>>& shards, std::uint64_t oversampling,
           bool descending = false) {
  const int p = static_cast<int>(shards.size());
  std::uint64_t bound = 0;
  const auto out = simulate(shards, oversampling, descending, &bound);
  // Expected: every key tagged (rank, position after a stable local sort), sorted by
  // (key, rank, position).
  std::vector<item> expected;
  std::uint64_t total = 0;
  for (int r = 0; r < p; ++r) {
    auto s = shards[r];
    std::stable_sort(s.begin(), s.end(), [&](auto a, auto b) { return descending ? b < a : a < b; });
    for (std::uint64_t i = 0; i < s.size(); ++i)
      expected.push_back({s[i], static_cast<std::uint32_t>(r), i});
    total += s.size();
  }
  std::stable_sort(expected.begin(), expected.end(), [&](const item& a, const item& b) {
    return descending ? b.key < a.key : a.key < b.key;
  });
  std::vector<item> got;
  const std::uint64_t w = math::sample_stride(total, p, oversampling);
  // Shards split as the host-array spread splits an array: the bound in closed form is exact.
  bool even_split = total > 0;
  for (int r = 0; r < p; ++r)
    even_split = even_split && shards[r].size() == total * (r + 1) / p - total * r / p;
  if (even_split) EXPECT_EQ(math::even_split_max_bucket(total, p, oversampling), bound);
  for (int r = 0; r < p; ++r) {
    EXPECT_LE(out[r].size(), bound) << "rank " << r;
    // The closed form: below N / p + (p + 1) w.
    EXPECT_LE(out[r].size(), total / p + (p + 1) * w) << "rank " << r;
    got.insert(got.end(), out[r].begin(), out[r].end());
  }
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(std::tie(got[i].key, got[i].rank, got[i].pos),
              std::tie(expected[i].key, expected[i].rank, expected[i].pos))
        << "at " << i;
  }
}

std::vector<std::vector<std::uint32_t>> random_shards(const std::vector<std::size_t>& sizes,
                                                      std::uint32_t key_range, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<std::uint32_t> dist(0, key_range);
  std::vector<std::vector<std::uint32_t>> shards;
  for (std::size_t n : sizes) {
    shards.emplace_back(n);
    for (auto& k : shards.back()) k = dist(gen);
  }
  return shards;
}

TEST(DistSimulation, EvenShards) {
  for (int p : {2, 3, 4, 8})
    check(random_shards(std::vector<std::size_t>(p, 10007), 0xffffffffu, p), 16);
}

TEST(DistSimulation, AnArraySplitEvenlyMeetsItsBoundInClosedForm) {
  for (int p : {2, 3, 4, 7}) {
    const std::size_t total = 40009;  // prime: the slices differ by one key
    std::vector<std::size_t> sizes;
    for (int r = 0; r < p; ++r) sizes.push_back(total * (r + 1) / p - total * r / p);
    check(random_shards(sizes, 0xffffffffu, 20 + p), 16);
    check(random_shards(sizes, 3, 30 + p), 64);  // four distinct keys
    check(random_shards(sizes, 0xffffffffu, 40 + p), 1 << 20);  // stride 1: every key a sample
  }
}

TEST(DistSimulation, UnevenAndEmptyShards) {
  check(random_shards({0, 50000, 3, 0}, 0xffffffffu, 1), 16);
  check(random_shards({40000, 0}, 0xffffffffu, 2), 8);
  check(random_shards({0, 0, 1, 0}, 0xffffffffu, 3), 8);
  check(random_shards({1, 1, 1, 1, 1}, 0xffffffffu, 4), 2);
  check(random_shards({0, 0, 0}, 0xffffffffu, 5), 4);
}

TEST(DistSimulation, DuplicatesAndAllEqualKeysStayBalanced) {
  check(random_shards({30000, 20000, 25000, 1000}, 0, 6), 16);   // all equal
  check(random_shards({30000, 20000, 25000, 1000}, 3, 7), 16);   // four distinct keys
  check(random_shards({65536, 65536}, 1, 8), 4);                 // two distinct keys
}

TEST(DistSimulation, SortedAndReverseShards) {
  std::vector<std::vector<std::uint32_t>> shards(4);
  for (int r = 0; r < 4; ++r)
    for (std::uint32_t i = 0; i < 20000; ++i) shards[r].push_back(r * 20000 + (r % 2 ? 20000 - i : i));
  check(shards, 16);
  check(shards, 16, true);
}

TEST(DistSimulation, Descending) {
  check(random_shards({12345, 0, 777, 4096}, 100, 9), 8, true);
  check(random_shards({12345, 999, 777, 4096}, 0xffffffffu, 10), 64, true);
}

TEST(DistSimulation, BoundIsCloseToPerfectBalanceWithOversampling) {
  // With the default s = 1024 samples per rank the bound is within 0.5% of N / p for p = 4.
  const std::uint64_t n = std::uint64_t{1} << 30, p = 4;
  const std::uint64_t w = math::sample_stride(n, p, 1024);
  const std::uint64_t bound = math::max_bucket(n / w, w, p);
  EXPECT_LT(static_cast<double>(bound) / (n / p), 1.005);
}

// ---- partition first (options::partition_first) ----------------------------------------

TEST(DistMath, RandomSamplePositionsStayInTheShardAndSpreadOverIt) {
  for (const std::uint64_t n : {std::uint64_t{1}, std::uint64_t{7}, std::uint64_t{1} << 40}) {
    std::uint64_t below_half = 0;
    for (std::uint64_t i = 0; i < 4000; ++i) {
      const std::uint64_t pos = math::random_sample_position(i, 3, n);
      ASSERT_LT(pos, n);
      below_half += pos < n / 2;
    }
    if (n > 1) EXPECT_NEAR(static_cast<double>(below_half) / 4000, 0.5, 0.1) << n;
  }
  // Ranks draw different positions; no stride of the input lines up with them.
  EXPECT_NE(math::random_sample_position(5, 0, 1000003),
            math::random_sample_position(5, 1, 1000003));
  std::uint64_t even = 0;
  for (std::uint64_t i = 0; i < 4000; ++i)
    even += math::random_sample_position(i, 0, 1 << 20) % 2 == 0;
  EXPECT_NEAR(static_cast<double>(even) / 4000, 0.5, 0.1);
}

TEST(DistMath, BucketOfCountsTheSplittersAtOrBelowAKey) {
  const splitter s[] = {{10, 1, 5}, {10, 2, 0}, {20, 0, 3}};
  EXPECT_EQ(math::bucket_of(s, 3, {9, 3, 9}), 0u);
  EXPECT_EQ(math::bucket_of(s, 3, {10, 1, 4}), 0u);   // before the splitter on its rank
  EXPECT_EQ(math::bucket_of(s, 3, {10, 1, 5}), 1u);   // the splitter itself starts its bucket
  EXPECT_EQ(math::bucket_of(s, 3, {10, 1, 99}), 1u);
  EXPECT_EQ(math::bucket_of(s, 3, {10, 2, 0}), 2u);
  EXPECT_EQ(math::bucket_of(s, 3, {20, 0, 2}), 2u);
  EXPECT_EQ(math::bucket_of(s, 3, {20, 0, 3}), 3u);
  EXPECT_EQ(math::bucket_of(s, 3, {~std::uint64_t{0}, 0, 0}), 3u);
  EXPECT_EQ(math::bucket_of(s, 0, {0, 0, 0}), 0u);
}

// The split's kernels search splitters as a tile sees them (seen_from_tile): the order of
// (code, offset in the tile) must give every key the bucket that (code, rank, position)
// gives, for keys tied with splitters on lower, equal and higher ranks, tiles before, around
// and far behind a splitter's position (past 2^32 keys), and 32- and 64-bit codes.
template <class C>
void expect_tile_buckets_match(std::uint64_t first) {
  std::mt19937_64 rng(first * 31 + sizeof(C));
  for (int round = 0; round < 40; ++round) {
    const std::uint64_t top = sizeof(C) == 4 ? 0xffffffffu : ~std::uint64_t{0};
    std::vector<splitter> s;
    for (int k = 0; k < 1 + round % 14; ++k) {
      const std::uint64_t key = round % 2 ? rng() % 4 : rng() & top;  // ties, or spread
      const std::uint64_t pos = rng() % 3 == 0 ? rng() : first + rng() % 4100 - 2;
      s.push_back({key, static_cast<std::uint32_t>(rng() % 3), pos});
    }
    s.push_back({top, 2, ~std::uint64_t{0}});
    std::sort(s.begin(), s.end());
    const auto count = static_cast<std::uint32_t>(s.size());
    for (std::uint32_t rank = 0; rank < 3; ++rank) {
      std::vector<math::tile_splitter<C>> seen;
      for (const splitter& x : s) seen.push_back(math::seen_from_tile<C>(x, rank, first));
      for (std::uint32_t offset = 0; offset < math::split_tile; offset += 1 + rng() % 7) {
        const std::uint64_t code = round % 2 ? rng() % 5 : rng() & top;
        const std::uint32_t want = math::bucket_of(s.data(), count, {code, rank, first + offset});
        ASSERT_EQ(math::bucket_in_tile(seen.data(), count, static_cast<C>(code), offset), want)
            << "code " << code << " rank " << rank << " first " << first << " offset " << offset;
        std::uint32_t linear = 0;  // the kernels' form for few buckets
        for (const auto& t : seen) linear += !math::below(static_cast<C>(code), offset, t);
        ASSERT_EQ(linear, want);
      }
    }
  }
}
TEST(DistMath, ATilesViewOfTheSplittersGivesEveryKeyItsBucket) {
  const math::tile_splitter<std::uint32_t> t = math::seen_from_tile<std::uint32_t>(
      {7, 1, 100}, 1, 90);
  EXPECT_EQ(t.key, 7u);
  EXPECT_EQ(t.from, 10u);  // the splitter's own rank: from its position on
  EXPECT_EQ(math::seen_from_tile<std::uint32_t>({7, 1, 100}, 1, 200).from, 0u);
  EXPECT_EQ(math::seen_from_tile<std::uint32_t>({7, 1, 100}, 2, 0).from, 0u);  // after it
  EXPECT_EQ(math::seen_from_tile<std::uint32_t>({7, 1, 100}, 0, 200).from, 0xffffffffu);
  EXPECT_EQ(math::seen_from_tile<std::uint64_t>({7, 1, std::uint64_t{1} << 40}, 1, 0).from,
            0xffffffffu);
  EXPECT_TRUE(math::below<std::uint32_t>(7, 9, t));
  EXPECT_FALSE(math::below<std::uint32_t>(7, 10, t));
  EXPECT_FALSE(math::below<std::uint32_t>(8, 0, t));
  for (const std::uint64_t first : {std::uint64_t{0}, std::uint64_t{2048},
                                    std::uint64_t{1} << 33, (std::uint64_t{1} << 40) + 6144}) {
    expect_tile_buckets_match<std::uint32_t>(first);
    expect_tile_buckets_match<std::uint64_t>(first);
  }
}

// The split by bucket as src/dist/split.cuh composes it, on the CPU: per tile, each bucket's
// count; one exclusive sum over the counts bucket by bucket (split_slot); per tile, the keys
// ranked by bucket in the tile's order, each bucket's first rank, and each rank written to
// its bucket's run (bucket_holding); against a stable partition, for sizes around the tile
// and buckets that are empty, full or absent from some tiles.
TEST(DistMath, TheSplitByTilesIsAStablePartition) {
  const std::uint32_t starts[] = {0, 0, 3, 3, 7};
  EXPECT_EQ(math::bucket_holding(starts, 5, 0), 1u);  // bucket 0 is empty
  EXPECT_EQ(math::bucket_holding(starts, 5, 2), 1u);
  EXPECT_EQ(math::bucket_holding(starts, 5, 3), 3u);
  EXPECT_EQ(math::bucket_holding(starts, 5, 6), 3u);
  EXPECT_EQ(math::bucket_holding(starts, 5, 7), 4u);
  EXPECT_EQ(math::bucket_holding(starts, 5, 100), 4u);
  // The ranking's digits hold every bucket, in the narrowest width that does.
  for (int buckets = 2; buckets <= math::max_partition_ranks; ++buckets) {
    const int bits = math::split_rank_bits(buckets);
    EXPECT_LE(buckets, 1 << bits) << buckets;
    EXPECT_TRUE(bits == 2 || (buckets > 1 << (bits / 2))) << buckets << ": a narrower width";
  }
  const std::uint64_t tile = math::split_tile;
  std::mt19937_64 rng(12);
  for (const std::uint64_t n : {std::uint64_t{1}, tile - 1, tile, tile + 1, 5 * tile + 77})
    for (const std::uint32_t buckets : {2u, 3u, 17u, 255u}) {
      std::vector<std::uint32_t> bucket(n);
      for (auto& b : bucket) b = rng() % 4 == 0 ? buckets - 1 : rng() % buckets;
      const std::uint64_t tiles = math::split_tiles(n);
      std::vector<std::uint64_t> offsets(tiles * buckets, 0);
      for (std::uint64_t i = 0; i < n; ++i) ++offsets[math::split_slot(bucket[i], i / tile, tiles)];
      std::exclusive_scan(offsets.begin(), offsets.end(), offsets.begin(), std::uint64_t{0});
      std::vector<std::uint64_t> out(n, ~std::uint64_t{0});
      for (std::uint64_t t = 0; t < tiles; ++t) {
        const std::uint64_t first = t * tile, last = std::min(n, first + tile);
        std::vector<std::uint32_t> tile_starts(buckets + 1, 0);  // exclusive prefix of digits
        for (std::uint64_t i = first; i < last; ++i) ++tile_starts[bucket[i] + 1];
        std::partial_sum(tile_starts.begin(), tile_starts.end(), tile_starts.begin());
        std::vector<std::uint32_t> seen(buckets, 0);
        for (std::uint64_t i = first; i < last; ++i) {
          const std::uint32_t r = tile_starts[bucket[i]] + seen[bucket[i]]++;  // stable rank
          const std::uint32_t b = math::bucket_holding(tile_starts.data(), buckets, r);
          ASSERT_EQ(b, bucket[i]);
          const std::uint64_t at = offsets[math::split_slot(b, t, tiles)] + (r - tile_starts[b]);
          ASSERT_LT(at, n);
          ASSERT_EQ(out[at], ~std::uint64_t{0}) << "written twice";
          out[at] = i;
        }
      }
      for (std::uint64_t t = 0; t < tiles; ++t) {  // the scatter's walk: rising ranks
        const auto last = static_cast<std::uint32_t>(std::min(n - t * tile, tile));
        std::vector<std::uint32_t> tile_starts(buckets + 1, 0);
        for (std::uint64_t i = t * tile; i < t * tile + last; ++i) ++tile_starts[bucket[i] + 1];
        std::partial_sum(tile_starts.begin(), tile_starts.end(), tile_starts.begin());
        for (std::uint32_t thread = 0; thread < math::split_block && thread < last; ++thread) {
          std::uint32_t b = math::bucket_holding(tile_starts.data(), buckets, thread);
          for (std::uint32_t r = thread; r < last; r += math::split_block) {
            b = math::bucket_holding_from(tile_starts.data(), b, r);
            ASSERT_EQ(b, math::bucket_holding(tile_starts.data(), buckets, r)) << r;
          }
        }
      }
      std::vector<std::uint64_t> want(n);
      std::iota(want.begin(), want.end(), std::uint64_t{0});
      std::stable_sort(want.begin(), want.end(),
                       [&](std::uint64_t a, std::uint64_t b) { return bucket[a] < bucket[b]; });
      ASSERT_EQ(out, want) << "n " << n << " buckets " << buckets;
      for (std::uint32_t b = 0; b < buckets; ++b)  // the bounds: each bucket's first position
        EXPECT_EQ(offsets[math::split_slot(b, 0, tiles)],
                  static_cast<std::uint64_t>(std::count_if(bucket.begin(), bucket.end(),
                                                           [&](auto x) { return x < b; })));
    }
}

// The landing plan (exchange first with no merge): each rank's split buffer holds its buckets
// for the other ranks, each once and aligned as its landing; its own buckets and every part
// it receives fill its receive buffer exactly once, each sub-bucket's parts in rank order
// then input order, the sub-buckets in order: so the regions, each sorted stably, are the
// stable sort.
TEST(DistMath, TheLandingPlanPlacesEveryPartOnceAndAligned) {
  for (int p = 2; p <= math::max_partition_ranks; ++p)  // the split takes every bucket
    EXPECT_LE(p * math::partition_sub_buckets(p), math::max_partition_ranks) << p;
  EXPECT_EQ(math::partition_sub_buckets(2), 2);
  EXPECT_EQ(math::partition_sub_buckets(127), 2);
  EXPECT_EQ(math::partition_sub_buckets(128), 1);
  for (int p = 2; p <= math::max_partition_ranks; ++p)
    for (int asked = 1; asked <= math::max_sub_buckets; ++asked) {
      const int c = math::partition_sub_buckets(p, asked);
      EXPECT_TRUE(c == asked || (c < asked && p * (c + 1) > math::max_partition_ranks)) << p;
      EXPECT_LE(p * c, math::max_partition_ranks) << p;
      EXPECT_GE(c, 1);
    }
  EXPECT_EQ(math::partition_sub_buckets(2, 8), 8);
  EXPECT_EQ(math::partition_sub_buckets(64, 8), 3);
  EXPECT_EQ(math::partition_sub_buckets(3, 0), 2);
  std::mt19937_64 rng(21);
  for (const int p : {1, 2, 3, 5})
    for (const int c : {1, 2, 4})
      for (const std::uint64_t element_bytes : {1, 2, 4, 8, 16}) {
        const int buckets = p * c;
        std::vector<std::vector<int>> bucket_of(p);  // each key's bucket, rank by rank
        std::vector<std::uint64_t> counts(static_cast<std::size_t>(p) * buckets, 0);
        for (int s = 0; s < p; ++s) {
          const std::uint64_t n = s == 1 ? 0 : rng() % 3000;  // rank 1 holds no key
          for (std::uint64_t i = 0; i < n; ++i) {
            const int b = rng() % 3 == 0 ? 0 : static_cast<int>(rng() % buckets);
            bucket_of[s].push_back(b);
            ++counts[static_cast<std::size_t>(s) * buckets + b];
          }
        }
        const math::landing_plan plan(counts, p, c);
        const std::uint64_t per = math::elements_per_alignment(element_bytes);
        using key_id = std::pair<int, std::uint64_t>;  // (rank, position in its shard)
        const key_id none{-1, 0};
        std::vector<std::vector<key_id>> received(p);
        for (int q = 0; q < p; ++q) received[q].assign(plan.region_start(q, c), none);
        for (int s = 0; s < p; ++s) {
          const std::vector<std::uint64_t> starts = plan.split_starts(s, element_bytes);
          ASSERT_EQ(starts.size(), static_cast<std::size_t>(buckets) + 1);
          ASSERT_LE(starts.back(), bucket_of[s].size() + buckets * per);
          std::vector<key_id> split(starts.back(), none);
          std::vector<std::uint64_t> next(buckets, 0);  // the stable split
          for (std::uint64_t i = 0; i < bucket_of[s].size(); ++i) {
            const int b = bucket_of[s][i], q = plan.owner(b), j = b % c;
            const std::uint64_t k = next[b]++;
            if (q == s) {
              key_id& at = received[s][plan.landing(s, s, j) + k];
              ASSERT_EQ(at, none) << "an own key written twice";
              at = {s, i};
            } else {
              ASSERT_LT(starts[b] + k, split.size());
              key_id& at = split[starts[b] + k];
              ASSERT_EQ(at, none) << "two buckets overlap in the split buffer";
              at = {s, i};
            }
          }
          for (int b = 0; b < buckets; ++b) {  // the transfers
            const int q = plan.owner(b), j = b % c;
            if (q == s || plan.count(s, b) == 0) continue;
            const std::uint64_t to = plan.landing(s, q, j);
            EXPECT_EQ(starts[b] * element_bytes % 16, to * element_bytes % 16)
                << "bucket " << b << " of rank " << s << ": not aligned as its landing";
            for (std::uint64_t k = 0; k < plan.count(s, b); ++k) {
              key_id& at = received[q][to + k];
              ASSERT_EQ(at, none) << "a received key written twice";
              at = split[starts[b] + k];
            }
          }
        }
        for (int q = 0; q < p; ++q)  // each region: its bucket's keys in (rank, position) order
          for (int j = 0; j < c; ++j) {
            std::vector<key_id> want;
            for (int s = 0; s < p; ++s)
              for (std::uint64_t i = 0; i < bucket_of[s].size(); ++i)
                if (bucket_of[s][i] == q * c + j) want.push_back({s, i});
            const auto first = received[q].begin() + plan.region_start(q, j);
            ASSERT_EQ(std::vector<key_id>(first, first + want.size()), want)
                << "p " << p << " c " << c << " rank " << q << " region " << j;
            ASSERT_EQ(plan.region_start(q, j) + want.size(), plan.region_start(q, j + 1));
          }
      }
}

// partition_first as dist_impl.cuh composes it (exchange_first), on the CPU: samples at
// random positions of the unsorted shards, p * c - 1 splitters (c sub-buckets a rank), each
// key's bucket by (key, rank, position), a stable split, each bucket's parts landing in rank
// order (landing_plan), each sorted stably. The output must be the stable sort by (key, rank,
// position in the input), and with enough keys no rank may take more than
// N / p (1 + 6 sqrt(p / S)) for S samples.
void check_partition_first(const std::vector<std::vector<std::uint32_t>>& shards,
                           std::uint64_t oversampling, bool descending = false,
                           int sub_buckets = 0) {
  const int p = static_cast<int>(shards.size());
  const std::uint64_t flip = descending ? 0xffffffffu : 0;
  const auto image = [&](std::uint32_t k) {
    return std::uint64_t{gpusort::key_traits<std::uint32_t>::ordered(k)} ^ flip;
  };
  std::uint64_t total = 0;
  for (const auto& s : shards) total += s.size();
  const std::uint64_t w = math::sample_stride(total, p, oversampling);
  std::vector<splitter> samples;
  for (int r = 0; r < p; ++r)
    for (std::uint64_t i = 0; i < math::sample_count(shards[r].size(), w); ++i) {
      const std::uint64_t pos =
          math::random_sample_position(i, static_cast<std::uint32_t>(r), shards[r].size());
      samples.push_back({image(shards[r][pos]), static_cast<std::uint32_t>(r), pos});
    }
  std::sort(samples.begin(), samples.end());
  const int c = math::partition_sub_buckets(p, sub_buckets), buckets = p * c;
  std::vector<splitter> chosen;
  for (int j = 1; j < buckets && !samples.empty(); ++j)
    chosen.push_back(samples[math::splitter_rank(j, samples.size(), buckets)]);
  if (samples.empty()) chosen.assign(buckets - 1, splitter{0, 0, 0});  // any will do
  std::vector<std::vector<item>> out(buckets);  // each bucket's parts, landed in rank order
  for (int r = 0; r < p; ++r)
    for (std::uint64_t i = 0; i < shards[r].size(); ++i) {
      const splitter x{image(shards[r][i]), static_cast<std::uint32_t>(r), i};
      const std::uint32_t b = math::bucket_of(chosen.data(), buckets - 1, x);
      ASSERT_LT(b, static_cast<std::uint32_t>(buckets));
      out[b].push_back({shards[r][i], static_cast<std::uint32_t>(r), i});
    }
  std::vector<item> got;
  for (int r = 0; r < p; ++r) {
    std::uint64_t taken = 0;
    for (int b = r * c; b < (r + 1) * c; ++b) {  // the rank's sub-buckets, each sorted
      std::stable_sort(out[b].begin(), out[b].end(),
                       [&](const item& x, const item& y) { return image(x.key) < image(y.key); });
      got.insert(got.end(), out[b].begin(), out[b].end());
      taken += out[b].size();
    }
    if (total >= (std::uint64_t{1} << 16))
      EXPECT_LE(taken, total / p * (1 + 6 * std::sqrt(double(p) / samples.size())))
          << "rank " << r << " of " << p;
  }
  std::vector<item> expected;
  for (int r = 0; r < p; ++r)
    for (std::uint64_t i = 0; i < shards[r].size(); ++i)
      expected.push_back({shards[r][i], static_cast<std::uint32_t>(r), i});
  std::stable_sort(expected.begin(), expected.end(), [&](const item& a, const item& b) {
    return image(a.key) < image(b.key);
  });
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::tie(got[i].key, got[i].rank, got[i].pos),
              std::tie(expected[i].key, expected[i].rank, expected[i].pos))
        << "at " << i;
}

TEST(DistSimulation, PartitionFirstGivesTheStableOrderAndStaysBalanced) {
  for (int p : {2, 3, 4, 8}) {
    check_partition_first(random_shards(std::vector<std::size_t>(p, 40009), 0xffffffffu, p), 1024);
    check_partition_first(random_shards(std::vector<std::size_t>(p, 30011), 3, p), 1024, true);
    check_partition_first(random_shards(std::vector<std::size_t>(p, 30011), 0, p), 1024);
  }
  check_partition_first(random_shards({0, 50000, 3, 0}, 0xffffffffu, 1), 16);
  check_partition_first(random_shards({0, 0, 1, 0}, 0xffffffffu, 3), 8);
  check_partition_first(random_shards({0, 0, 0}, 0xffffffffu, 5), 4);
  std::vector<std::vector<std::uint32_t>> sorted(4);  // sorted and reverse shards
  for (int r = 0; r < 4; ++r)
    for (std::uint32_t i = 0; i < 20000; ++i)
      sorted[r].push_back(r * 20000 + (r % 2 ? 20000 - i : i));
  check_partition_first(sorted, 1024);
  for (int sub : {1, 3, 8}) {  // options::sub_buckets
    check_partition_first(random_shards({30011, 29989}, 0xffffffffu, 7), 1024, false, sub);
    check_partition_first(random_shards({20011, 0, 19997}, 3, 9), 1024, true, sub);
  }
}

}  // namespace
