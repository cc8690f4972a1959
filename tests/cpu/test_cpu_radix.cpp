// The radix sort's index math (index_math/radix.hpp) on worked keys, and the CPU backend's
// radix sort (cpu/radix_sort.hpp: algorithm::cub_radix and automatic there) against
// std::stable_sort of the keys' ordered bits, every key type, both orders, with values that
// show stability; sizes around the threads' shares, and keys whose high digits all agree
// (passes that move nothing).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "float_keys.hpp"
#include "gpusort/detail/cpu/radix_sort.hpp"
#include "gpusort/detail/index_math/approx.hpp"  // from_ordered
#include "gpusort/detail/index_math/radix.hpp"
#include "reference.hpp"

using namespace gpusort::testing;
namespace im = gpusort::detail::index_math;

namespace {

TEST(RadixIndexMath, PassesAndDigits) {
  EXPECT_EQ(im::radix_passes<std::uint32_t>(8), 4);
  EXPECT_EQ(im::radix_passes<std::uint64_t>(8), 8);
  EXPECT_EQ(im::radix_passes<std::uint32_t>(11), 3);  // 11 + 11 + 10 bits
  EXPECT_EQ(im::radix_passes<std::uint64_t>(11), 6);
  constexpr std::uint32_t key = 0x12345678u;
  EXPECT_EQ(im::radix_digit(key, 0, 8, false), 0x78u);
  EXPECT_EQ(im::radix_digit(key, 3, 8, false), 0x12u);
  EXPECT_EQ(im::radix_digit(key, 0, 8, true), 0x87u);  // descending: the complement's digits
  EXPECT_EQ(im::radix_digit(key, 2, 11, false), 0x12345678u >> 22);
  EXPECT_EQ(im::radix_digit(~std::uint64_t{0}, 7, 8, false), 0xffu);
  static_assert(im::radix_digit(std::uint64_t{1} << 63, 7, 8, false) == 0x80u);
}

// The MSD split's frame and bucket starts: zero counts on every single bit; the frame keeps
// the codes' order and comes back exactly; each bucket's end written once, by the position
// of its last key, and the running maximum of the ends each bucket's lower bound in the
// sorted keys (empty buckets too);
// on wide, narrow and equal keys and on windows wider than the differing bits.
// The buckets' starts as detail/device/msd_split.cuh makes them: a zeroed table, each
// bucket's end written at entry bucket + 1 by the position that ends it (once a bucket), then
// the running maximum.
template <class BucketOf>
std::vector<std::uint64_t> bucket_starts(std::uint64_t n, std::uint64_t buckets,
                                         BucketOf bucket_of) {
  std::vector<std::uint64_t> start(buckets + 1, 0);
  std::vector<bool> written(buckets + 1, false);
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t b = bucket_of(i);
    if (!im::ends_its_bucket(i, n, b, i + 1 < n ? bucket_of(i + 1) : 0)) continue;
    EXPECT_FALSE(written[b + 1]) << "bucket " << b << " ended twice";
    written[b + 1] = true;
    start[b + 1] = i + 1;
  }
  for (std::uint64_t k = 1; k <= buckets; ++k) start[k] = std::max(start[k], start[k - 1]);
  return start;
}

TEST(RadixIndexMath, MsdBucketsStartWhereTheirKeysDo) {
  for (int b = 0; b < 64; ++b) {
    EXPECT_EQ(im::leading_zero_bits(std::uint64_t{1} << b), 63 - b);
    EXPECT_EQ(im::leading_zero_bits((std::uint64_t{1} << b) | 1), 63 - b);
  }
  static_assert(im::leading_zero_bits(0) == 64);
  EXPECT_EQ(im::msd_shift(0), 0);                                 // every code the same
  EXPECT_EQ(im::msd_shift(0x3ff), 54);                            // 10 bits: to the top
  EXPECT_EQ(im::msd_shift(~std::uint64_t{0}), 0);                 // the top bit differs
  EXPECT_EQ(im::msd_prefix(0xabcdef0123456789ull, 16), 0xabcd000000000000ull);
  EXPECT_EQ(im::framed_bucket(0xabcdef0123456789ull, 24), 0xabcdefu);
  // Ranks in a bucket [2, 7) of codes 5 3 5 9 1: ties in split order, each place once.
  const std::uint64_t codes5[] = {0, 0, 5, 3, 5, 9, 1};
  const auto at = [&](std::uint64_t j) { return codes5[j]; };
  for (const bool desc : {false, true}) {
    std::vector<std::uint64_t> ranks;
    for (std::uint64_t i = 2; i < 7; ++i)
      ranks.push_back(im::rank_in_bucket(codes5[i], i, 2, 7, desc, at));
    using ranks_t = std::vector<std::uint64_t>;
    const ranks_t want = desc ? ranks_t{1, 3, 2, 0, 4} : ranks_t{2, 1, 3, 4, 0};
    EXPECT_EQ(ranks, want);
  }
  std::mt19937_64 rng(5);
  for (const std::uint64_t mask : {~std::uint64_t{0}, (std::uint64_t{1} << 40) - 1,
                                   std::uint64_t{0xff}, std::uint64_t{0}})
    for (const int bits : {1, 4, 12}) {
      std::vector<std::uint64_t> codes(3000);
      for (auto& c : codes) c = (rng() & mask) | (std::uint64_t{7} << 60 & ~mask);
      std::sort(codes.begin(), codes.end());
      std::uint64_t differing = 0;
      for (std::uint64_t c : codes) differing |= c ^ codes[0];
      const int shift = im::msd_shift(differing);
      const std::uint64_t prefix = im::msd_prefix(codes.back(), shift);
      for (std::uint64_t& c : codes) {
        const std::uint64_t framed = im::to_frame(c, shift);
        ASSERT_EQ(im::from_frame(framed, shift, prefix), c);
        c = framed;
      }
      ASSERT_TRUE(std::is_sorted(codes.begin(), codes.end())) << "the frame keeps the order";
      const std::uint64_t buckets = std::uint64_t{1} << bits, n = codes.size();
      const auto bucket_of = [&](std::uint64_t i) { return im::framed_bucket(codes[i], bits); };
      const std::vector<std::uint64_t> start = bucket_starts(n, buckets, bucket_of);
      for (std::uint64_t k = 0; k <= buckets; ++k) {
        const auto want = std::partition_point(codes.begin(), codes.end(), [&](std::uint64_t c) {
          return im::framed_bucket(c, bits) < k;
        });
        ASSERT_EQ(start[k], k == buckets ? n : static_cast<std::uint64_t>(want - codes.begin()))
            << "mask " << mask << " bits " << bits << " bucket " << k;
      }
    }
}

// The whole MSD split as detail/device/msd_split.cuh composes it, on the host, in both
// orders: the OR of the codes' differences, each key framed in place (as the key whose code
// is its framed code), a stable sort by the window's bits (buckets along the output), the
// buckets' starts by the index math, the finish (keys out of the frame; in buckets of up to
// msd_rank_max keys placed by their rank, larger ones left in place and listed where their
// keys differ), the listed buckets sorted, and with the rescue (index_math::msd_rescues, its
// long class made small for these sizes): large listed buckets taken off the list, their
// keys gathered in bucket order by each key's bucket, sorted whole, scattered back; against
// std::sort of 8-byte integer keys from every distribution, of keys sharing their top bits,
// and of keys below 2^40 with a few outliers at the top (nearly all in bucket 0).
template <class K>
void msd_split_sorts() {
  using traits = gpusort::key_traits<K>;
  std::vector<std::vector<K>> inputs;
  for (const gpusort::tools::distribution d : gpusort::tools::all_distributions)
    inputs.push_back(gpusort::tools::generate<K>(d, 5003, 11));
  std::mt19937_64 rng(3);
  for (const std::uint64_t mask : {std::uint64_t{0xfff}, (std::uint64_t{1} << 40) - 1}) {
    inputs.emplace_back(4001);
    for (K& k : inputs.back()) k = static_cast<K>((rng() & mask) | std::uint64_t{0x9b} << 52);
  }
  inputs.emplace_back(6007);
  for (std::size_t i = 0; i < inputs.back().size(); ++i)
    inputs.back()[i] = i % 1000 == 3 ? std::numeric_limits<K>::max() : static_cast<K>(rng() >> 24);
  for (const std::vector<K>& input : inputs)
    for (const int bits : {3, 7, 12})
      for (const bool desc : {false, true})
        for (const bool rescue : {false, true}) {
        std::vector<K> split = input, want = input;
        std::sort(want.begin(), want.end());
        if (desc) std::reverse(want.begin(), want.end());
        std::uint64_t differing = 0;
        for (K k : split) differing |= traits::ordered(k) ^ traits::ordered(split[0]);
        const int shift = im::msd_shift(differing);
        const std::uint64_t prefix = im::msd_prefix(traits::ordered(split[0]), shift);
        for (K& k : split) k = im::from_ordered<K>(im::to_frame(traits::ordered(k), shift));
        const std::uint64_t n = split.size(), buckets = std::uint64_t{1} << bits;
        const auto along = [&](K k) {
          const std::uint64_t b = im::framed_bucket(traits::ordered(k), bits);
          return desc ? buckets - 1 - b : b;
        };
        std::stable_sort(split.begin(), split.end(), [&](K a, K b) { return along(a) < along(b); });
        const std::vector<std::uint64_t> start =
            bucket_starts(n, buckets, [&](std::uint64_t i) { return along(split[i]); });
        const auto code_at = [&](std::uint64_t j) { return traits::ordered(split[j]); };
        std::vector<K> keys(n);
        std::vector<bool> listed(buckets, false);
        for (std::uint64_t i = 0; i < n; ++i) {
          const std::uint64_t b = along(split[i]), first = start[b], last = start[b + 1];
          std::uint64_t to = i;
          if (last - first <= im::msd_rank_max)
            to = first + im::rank_in_bucket(code_at(i), i, first, last, desc, code_at);
          else if (code_at(i) != code_at(first))
            listed[b] = true;
          keys[to] = im::from_ordered<K>(im::from_frame(code_at(i), shift, prefix));
        }
        const auto in_order = [&](K x, K y) { return desc ? y < x : x < y; };
        if (rescue) {
          constexpr std::uint64_t long_min = 2 * im::msd_rank_max;
          std::vector<std::uint64_t> gathered_at(buckets + 1, 0);
          for (std::uint64_t b = 0; b < buckets; ++b)
            if (im::msd_rescues(start[b + 1] - start[b], listed[b], long_min)) {
              listed[b] = false;
              gathered_at[b] = start[b + 1] - start[b];
            }
          std::exclusive_scan(gathered_at.begin(), gathered_at.end(), gathered_at.begin(),
                              std::uint64_t{0});
          const auto bucket_of_key = [&](K k) {
            return along(im::from_ordered<K>(im::to_frame(traits::ordered(k), shift)));
          };
          std::vector<K> gathered(gathered_at[buckets]);
          for (std::uint64_t i = 0; i < n; ++i) {
            const std::uint64_t b = bucket_of_key(keys[i]);
            if (gathered_at[b + 1] != gathered_at[b])
              gathered[gathered_at[b] + (i - start[b])] = keys[i];
          }
          std::sort(gathered.begin(), gathered.end(), in_order);
          for (std::uint64_t j = 0; j < gathered.size(); ++j) {
            const std::uint64_t b = bucket_of_key(gathered[j]);
            keys[start[b] + (j - gathered_at[b])] = gathered[j];
          }
        }
        for (std::uint64_t b = 0; b < buckets; ++b)
          if (listed[b]) std::sort(keys.begin() + start[b], keys.begin() + start[b + 1], in_order);
        ASSERT_EQ(keys, want) << "bits " << bits << " shift " << shift << " desc " << desc
                              << " rescue " << rescue;
      }
}

// The rescue's room in the second key buffer: the sizes' scan at its end, on a 256-byte
// boundary, and the gathered keys with CUB's second buffer below it; the sort's bits.
TEST(RadixIndexMath, MsdRescueFitsTheSecondBuffer) {
  constexpr std::uint64_t n = std::uint64_t{1} << 24, buckets = std::uint64_t{1} << 22;
  const std::uint64_t at = im::msd_rescue_sizes_at(n, 8, buckets);
  EXPECT_EQ(at % 256, 0u);
  EXPECT_GE(n * 8 - at, 4 * (buckets + 1));
  EXPECT_LT(n * 8 - at, 4 * (buckets + 1) + 256);
  EXPECT_TRUE(im::msd_rescue_gathers(at / 16, n, 8, buckets));
  EXPECT_FALSE(im::msd_rescue_gathers(at / 16 + 1, n, 8, buckets));
  EXPECT_FALSE(im::msd_rescue_gathers(n / 2, n, 8, buckets));  // the sizes take room too
  EXPECT_EQ(im::msd_rescue_sizes_at(4, 8, 8), 0u);              // no room: the whole array
  EXPECT_FALSE(im::msd_rescue_gathers(1, 4, 8, 8));
  EXPECT_TRUE(im::msd_rescues(4097, true, 4097));
  EXPECT_FALSE(im::msd_rescues(4096, true, 4097));
  EXPECT_FALSE(im::msd_rescues(1 << 20, false, 4097));  // equal keys: nothing to sort
  EXPECT_EQ(im::msd_rescue_end_bit(0), 64);
  EXPECT_EQ(im::msd_rescue_end_bit(24), 40);
}

TEST(RadixIndexMath, MsdSplitThenBucketsSortsEveryDistribution) {
  msd_split_sorts<std::uint64_t>();
  msd_split_sorts<std::int64_t>();
}

// When automatic splits and how wide the window is: the sizes measured (2^24: 22 bits, 2^26
// and 2^28: 24), their neighbours, and the ends of the range (CUB's 32-bit count).
TEST(RadixIndexMath, MsdSplitWindowFollowsTheKeyCount) {
  constexpr std::uint64_t one = 1;
  EXPECT_FALSE(im::msd_split_applies((one << 24) - 1));
  EXPECT_TRUE(im::msd_split_applies(one << 24));
  EXPECT_TRUE(im::msd_split_applies((one << 32) - 1));
  EXPECT_FALSE(im::msd_split_applies(one << 32));
  EXPECT_EQ(im::msd_split_bits(one << 24), 22);
  EXPECT_EQ(im::msd_split_bits((one << 25) - 1), 22);
  EXPECT_EQ(im::msd_split_bits(one << 25), 23);
  EXPECT_EQ(im::msd_split_bits(one << 26), 24);
  EXPECT_EQ(im::msd_split_bits(one << 28), 24);
  EXPECT_EQ(im::msd_split_bits((one << 32) - 1), 24);  // capped at 2^24 buckets
  EXPECT_EQ(im::msd_split_bits(1000), 16);              // floored, where it never runs
  static_assert(im::msd_split_bits(~std::uint64_t{0}) == 24);
}

GPUSORT_TYPED_SUITE(CpuRadixSort, ::testing::Test, key_types);

// keys sorted by the radix sort with their positions as values, against std::stable_sort of
// (ordered bits, position).
template <class K>
void expect_stable_order(std::vector<K> keys, bool descending) {
  using U = typename gpusort::key_traits<K>::ordered_type;
  const std::size_t n = keys.size();
  std::vector<std::pair<U, std::uint32_t>> want(n);
  for (std::size_t i = 0; i < n; ++i)
    want[i] = {gpusort::key_traits<K>::ordered(keys[i]), static_cast<std::uint32_t>(i)};
  std::stable_sort(want.begin(), want.end(), [&](const auto& a, const auto& b) {
    return descending ? a.first > b.first : a.first < b.first;
  });
  std::vector<std::uint32_t> positions(n);
  for (std::size_t i = 0; i < n; ++i) positions[i] = static_cast<std::uint32_t>(i);
  gpusort::detail::cpu::radix_sort(keys.data(), positions.data(), n, descending);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(positions[i], want[i].second) << "n=" << n << " at " << i;
    ASSERT_EQ(gpusort::key_traits<K>::ordered(keys[i]), want[i].first) << "n=" << n << " at " << i;
  }
}

TYPED_TEST(CpuRadixSort, StableOnHostileInputs) {
  using K = TypeParam;
  for_each_hostile_input<K>(std::size_t{1} << 17, 13, [](const std::vector<K>& keys, bool descending) {
    expect_stable_order(keys, descending);
  });
  for (const bool descending : {false, true}) expect_stable_order(tied_keys<K>(300007, 5), descending);
}

// Keys that differ only in their lowest byte: every other pass finds one digit and moves
// nothing, so the sorted keys end in the second buffer or the first by the passes' parity.
TYPED_TEST(CpuRadixSort, PassesThatMoveNothing) {
  using K = TypeParam;
  std::mt19937_64 rng(42);
  std::vector<K> keys(100003);
  for (K& k : keys) k = static_cast<K>(100 + rng() % 50);
  expect_stable_order(keys, false);
  expect_stable_order(keys, true);
}

}  // namespace
