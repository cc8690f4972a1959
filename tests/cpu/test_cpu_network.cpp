// The bitonic network math and the multi-step schedule, checked on the CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <vector>

#include "gpusort/detail/cpu/bitonic.hpp"
#include "gpusort/detail/index_math/bitonic.hpp"
#include "gpusort/detail/index_math/group_steps.hpp"
#include "gpusort/detail/index_math/segments.hpp"
#include "gpusort/key_traits.hpp"
#include "reference.hpp"

namespace net = gpusort::detail::index_math;
using gpusort::detail::no_value;
using gpusort::detail::cpu::bitonic_sort;
using gpusort::detail::cpu::cpu_schedule;

TEST(Network, CeilLog2) {
  EXPECT_EQ(net::ceil_log2(0), 0);
  for (const auto [n, expected] : gpusort::testing::small_ceil_log2_cases)
    EXPECT_EQ(net::ceil_log2(n), expected) << n;
  EXPECT_EQ(net::ceil_log2((net::index_t{1} << 34) + 1), 35);
  static_assert(net::ceil_log2(1u << 20) == 20);
}

TEST(Network, StepIndexRoundTrips) {
  net::index_t s = 0;
  for (int p = 1; p <= 40; ++p)
    for (int b = p - 1; b >= 0; --b, ++s) {
      ASSERT_EQ(net::step_index(p, b), s);
      const net::step st = net::step_at(s);
      ASSERT_EQ(st.phase, p);
      ASSERT_EQ(st.bit, b);
    }
  static_assert(net::steps_through_phase(28) == 406);  // docs/bitonic.md's count for 2^28
}

TEST(Network, WindowSlotsAreABijection) {
  const net::window shapes[] = {{5, 5, 0}, {3, 7, 2}, {2, 4, 3}, {4, 9, 1}, {0, 3, 2}};
  for (const net::window& win : shapes) {
    const net::index_t n = 1u << 12;
    std::set<net::index_t> seen;
    for (net::index_t w = 0; w < win.count(n); ++w)
      for (net::index_t l = 0; l < (net::index_t{1} << win.local_bits()); ++l) {
        const net::index_t s = win.slot(w, l);
        ASSERT_TRUE(seen.insert(s).second) << "slot " << s << " twice";
        for (int b = 0; b < win.local_bits(); ++b) {
          // local bit b moves global bit local_bit^-1(b)
          const net::index_t other = win.slot(w, l ^ (net::index_t{1} << b));
          const int global = b < win.low_bits ? b : win.group_lo + b - win.low_bits;
          ASSERT_EQ(s ^ other, net::index_t{1} << global);
          ASSERT_EQ(win.local_bit(global), b);
          ASSERT_TRUE(win.holds_bit(global));
        }
      }
    EXPECT_EQ(seen.size(), n);
    EXPECT_EQ(*seen.rbegin(), n - 1);
  }
}

// The schedule performs every step of the network exactly once, in order, and each pass's
// steps use bits its window holds: tiles of at most 2^m slots or register groups of at most
// g bits, all at or above bit m.
TEST(Network, ScheduleCoversEveryStepInOrder) {
  for (int m = 1; m <= 14; ++m)
    for (int g = 1; g <= 6; ++g)
      for (net::index_t n : {2ull, 3ull, 5ull, 100ull, 4096ull, 4097ull, (1ull << 22) + 3,
                             (1ull << 34)}) {
        net::index_t next = 0;
        int passes = 0;
        const int counted = net::for_each_pass(n, {m, g}, [&](const net::pass& ps) {
          ++passes;
          ASSERT_EQ(ps.first_step, next);
          ASSERT_LT(ps.first_step, ps.end_step);
          if (ps.win.contiguous()) {
            ASSERT_LE(ps.win.local_bits(), m);
          } else {
            ASSERT_EQ(ps.win.low_bits, 0);
            ASSERT_LE(ps.win.group_bits, g);
            ASSERT_GE(ps.win.group_lo, m);
          }
          for (net::index_t s = ps.first_step; s < ps.end_step; ++s)
            ASSERT_TRUE(ps.win.holds_bit(net::step_at(s).bit)) << "step " << s;
          next = ps.end_step;
        });
        ASSERT_EQ(counted, passes);
        ASSERT_EQ(next, net::steps_through_phase(net::ceil_log2(n)));
      }
}

// docs/bitonic.md's pass count: 2^28 keys, tiles of 2^15, 10 long-distance steps per pass.
TEST(Network, PassCountForTheDesignExample) {
  EXPECT_EQ(net::for_each_pass(1ull << 28, {15, 10}, [](const net::pass&) {}), 30);
}

TEST(Network, StepGroupsPartitionEachPass) {
  net::for_each_pass((1ull << 20) + 77, {9, 3}, [](const net::pass& ps) {
    for (int group = 1; group <= 4; ++group) {
      net::index_t s = ps.first_step;
      net::for_each_step_group(ps, group, [&](const net::step_group& g) {
        ASSERT_GE(g.count, 1);
        ASSERT_LE(g.count, group);
        for (int k = 0; k < g.count; ++k, ++s) {
          const net::step st = net::step_at(s);
          ASSERT_EQ(st.phase, g.phase);
          ASSERT_EQ(ps.win.local_bit(st.bit), g.top_local_bit - k);
        }
      });
      ASSERT_EQ(s, ps.end_step);
    }
  });
}

TEST(Network, GroupMembersCoverTheWindowOnce) {
  for (int bits = 1; bits <= 8; ++bits)
    for (int count = 1; count <= std::min(bits, 4); ++count)
      for (int lowest = 0; lowest + count <= bits; ++lowest) {
        std::vector<int> hits(1u << bits, 0);
        for (net::index_t q = 0; q < (net::index_t{1} << (bits - count)); ++q)
          for (net::index_t r = 0; r < (net::index_t{1} << count); ++r)
            ++hits[net::group_member(q, lowest, count, r)];
        ASSERT_TRUE(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }));
      }
}

// A tile's shared-memory layout (tile_pad, tile_index; block/bitonic_tile.cuh): in a round of
// a digit's steps a warp's 32 threads take member r of 32 consecutive register sets
// (group_member), and the loads and stores take 32 consecutive slots. For keys alone of 1 to
// 8 bytes, and for 4- and 8-byte values beside keys, a full digit's round (5 steps, the first
// phases' too) and a load reach each bank as few times as the bytes allow, and the digits
// above the lowest are never worse than with one padded slot every 32 (the layout before
// narrow keys were padded a word). Rounds of fewer than 5 steps on the lowest digit do not
// occur: from phase 5 on a phase's lowest digit is whole, and phases 1-5 run as one round.
TEST(Network, TilePaddingSpreadsAWarpsSlotsOverTheBanks) {
  const auto index = [](unsigned pad, unsigned l) {
    return pad == 4 ? net::tile_index<4>(l) : pad == 2 ? net::tile_index<2>(l) : net::tile_index<1>(l);
  };
  // Shared-memory wavefronts of one warp's access: the most distinct 4-byte words in a bank.
  const auto wavefronts = [&](unsigned bytes, unsigned pad, const std::vector<unsigned>& slots) {
    std::vector<std::set<unsigned>> banks(32);
    for (unsigned l : slots) {
      const unsigned first = index(pad, l) * bytes;
      for (unsigned w = first / 4; w < (first + bytes + 3) / 4; ++w) banks[w % 32].insert(w);
    }
    std::size_t most = 0;
    for (const auto& words : banks) most = std::max(most, words.size());
    return static_cast<unsigned>(most);
  };
  for (unsigned bytes : {1u, 2u, 4u, 8u})
    for (bool with_values : {false, true}) {
      if (with_values && bytes < 4) continue;  // keys beside values pad as the values do
      const unsigned pad = net::tile_pad(bytes, with_values);
      const unsigned fewest = std::max(1u, 32 * bytes / 128);
      std::vector<unsigned> run(32);
      for (unsigned lane = 0; lane < 32; ++lane) run[lane] = 160 + lane;
      EXPECT_EQ(wavefronts(bytes, pad, run), fewest) << bytes << "-byte loads";
      for (int lowest : {0, 5, 10})
        for (int count = 1; count <= 5; ++count)
          for (unsigned r = 0; r < (1u << count); ++r) {
            std::vector<unsigned> members(32);
            for (unsigned q = 0; q < 32; ++q)
              members[q] = static_cast<unsigned>(net::group_member(q, lowest, count, r));
            const unsigned got = wavefronts(bytes, pad, members);
            if (count == 5)
              ASSERT_EQ(got, fewest) << bytes << " bytes, digit at " << lowest << ", member " << r;
            else if (lowest > 0)
              ASSERT_LE(got, wavefronts(bytes, 1, members))
                  << bytes << " bytes, digit at " << lowest << ", " << count << " steps";
          }
    }
  // Member offsets are constants: the index of l | x is the sum of theirs.
  for (unsigned l : {0u, 7u, 31u, 32u, 1000u})
    for (int shift : {5, 6, 10})
      for (unsigned r : {1u, 3u}) {
        const unsigned x = r << shift;
        if (l & x) continue;
        ASSERT_EQ(net::tile_index<2>(l | x), net::tile_index<2>(l) + net::tile_index<2>(x));
        ASSERT_EQ(net::tile_index<4>(l | x), net::tile_index<4>(l) + net::tile_index<4>(x));
      }
}

TEST(Network, PaddingBlockIsAlwaysAscending) {
  // The block of 2^p slots that holds slot n-1 and padding sorts ascending in every phase.
  for (net::index_t n = 2; n < 300; ++n)
    for (int p = 1; p <= net::ceil_log2(n); ++p)
      ASSERT_TRUE(net::ascending(n - 1, p, n));
}

const cpu_schedule small_shapes[] = {
    {{1, 0}, 1, 1}, {{2, 1}, 2, 1}, {{3, 1}, 3, 1}, {{4, 2}, 4, 1}, {{5, 2}, 3, 1}};

// The 0-1 principle: a comparator network sorts every input iff it sorts every 0-1 input.
TEST(Network, SortsEveryZeroOneInputUpTo20) {
  for (const cpu_schedule& sched : small_shapes) {
    for (int n = 0; n <= 20; ++n) {
      if (n > 16 && sched.shape.tile_bits != 3) continue;  // keep the run short
      std::vector<std::uint8_t> keys(n);
      for (std::uint32_t bits = 0; bits < (1u << n); ++bits) {
        for (int i = 0; i < n; ++i) keys[i] = (bits >> i) & 1u;
        bitonic_sort(keys.data(), static_cast<no_value*>(nullptr), n, std::less<>{}, false, sched);
        const int ones = __builtin_popcount(bits);
        for (int i = 0; i < n; ++i)
          ASSERT_EQ(keys[i], i >= n - ones ? 1 : 0) << "n=" << n << " input=" << bits;
      }
    }
  }
}

TEST(Network, SortsLikeStdSortForEveryNUpTo5000) {
  std::mt19937_64 rng(12345);
  SCOPED_TRACE("seed 12345");
  for (const cpu_schedule& sched : {cpu_schedule{{4, 2}, 3, 1}, cpu_schedule{{6, 3}, 4, 1}}) {
    for (int n = 0; n <= 5000; ++n) {
      std::vector<std::uint32_t> keys(n);
      for (auto& k : keys) k = static_cast<std::uint32_t>(rng() % (n + 1));
      std::vector<std::uint32_t> expect = keys;
      std::sort(expect.begin(), expect.end());
      bitonic_sort(keys.data(), static_cast<no_value*>(nullptr), n, std::less<>{}, false, sched);
      ASSERT_EQ(keys, expect) << "n=" << n;
    }
  }
}

TEST(Network, SortsRandomLargerSizesDescendingToo) {
  std::mt19937_64 rng(777);
  SCOPED_TRACE("seed 777");
  for (int trial = 0; trial < 12; ++trial) {
    const std::size_t n = 5000 + rng() % 300000;
    std::vector<std::uint64_t> keys(n);
    for (auto& k : keys) k = rng();
    const bool descending = trial % 2;
    std::vector<std::uint64_t> expect = keys;
    std::sort(expect.begin(), expect.end());
    if (descending) std::reverse(expect.begin(), expect.end());
    cpu_schedule sched{{static_cast<int>(5 + trial % 8), 2 + trial % 3}, 1 + trial % 4, 0};
    bitonic_sort(keys.data(), static_cast<no_value*>(nullptr), n, std::less<>{}, descending, sched);
    ASSERT_EQ(keys, expect) << "n=" << n;
  }
}

// Phases 1..COUNT in registers against the same comparators one step at a time, values
// along, for member sets in every place of a network (both directions of phase COUNT).
template <int COUNT>
void check_first_phases(std::mt19937_64& rng) {
  constexpr int members = 1 << COUNT;
  for (int trial = 0; trial < 200; ++trial) {
    const net::index_t n = members + rng() % (members * 20);
    const net::index_t slot0 = (rng() % (n / members)) * members;
    const bool descending = trial % 2;
    std::uint32_t keys[members], values[members];
    std::vector<std::uint32_t> want_keys(members), want_values(members);
    for (int r = 0; r < members; ++r) {
      keys[r] = want_keys[r] = static_cast<std::uint32_t>(rng() % 7);  // many ties
      values[r] = want_values[r] = r;
    }
    for (int phase = 1; phase <= COUNT; ++phase)
      for (int b = phase - 1; b >= 0; --b)
        for (int r = 0; r < members; ++r) {
          if (r & (1 << b)) continue;
          const int u = r | (1 << b);
          if (net::ascending(slot0 + r, phase, n, descending))
            net::compare_exchange<true>(want_keys[r], want_keys[u], want_values[r],
                                        want_values[u], std::less<>{});
          else
            net::compare_exchange<false>(want_keys[r], want_keys[u], want_values[r],
                                         want_values[u], std::less<>{});
        }
    net::sort_first_phases<COUNT>(keys, values, slot0, n, descending, std::less<>{});
    ASSERT_EQ(std::vector<std::uint32_t>(keys, keys + members), want_keys)
        << "COUNT " << COUNT << " n " << n << " slot0 " << slot0;
    ASSERT_EQ(std::vector<std::uint32_t>(values, values + members), want_values);
    const bool asc = net::ascending(slot0, COUNT, n, descending);
    ASSERT_TRUE(asc ? std::is_sorted(keys, keys + members)
                    : std::is_sorted(keys, keys + members, std::greater<>{}));
  }
}

TEST(Network, FirstPhasesInRegistersMatchTheStepsOneByOne) {
  std::mt19937_64 rng(4242);
  SCOPED_TRACE("seed 4242");
  check_first_phases<1>(rng);
  check_first_phases<2>(rng);
  check_first_phases<3>(rng);
  check_first_phases<4>(rng);
  check_first_phases<5>(rng);
}

template <class K>
void check_padding_key() {
  const K up = net::padding_key<K>(false), down = net::padding_key<K>(true);
  std::mt19937_64 rng(17);
  for (int i = 0; i < 1000; ++i) {
    const K k = static_cast<K>(rng());
    ASSERT_FALSE(gpusort::less<K>{}(up, k)) << "a key above the ascending filler";
    ASSERT_FALSE(gpusort::less<K>{}(k, down)) << "a key below the descending filler";
  }
  ASSERT_EQ(up, std::numeric_limits<K>::max());
  ASSERT_EQ(down, std::numeric_limits<K>::lowest());
}

TEST(Network, PaddingKeySortsAfterEveryKeyInEitherOrder) {
  check_padding_key<std::uint32_t>();
  check_padding_key<std::int32_t>();
  check_padding_key<std::uint64_t>();
  check_padding_key<std::int64_t>();  // float keys arrive as unsigned codes
}
