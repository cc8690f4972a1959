// The size-class math and the CPU backend of the batched and segmented sorts, against
// std::stable_sort per segment; on a machine without a GPU the convenience layer's host
// overloads run here too.
#include <algorithm>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "gpusort/sort.hpp"
#include "reference.hpp"
#include "segments_reference.hpp"

using namespace gpusort::testing;
namespace tools = gpusort::tools;
using gpusort::detail::index_math::segment_classes;
using gpusort::detail::index_math::segment_list;

TEST(CpuSegmentClasses, EveryClassHasAWorkerAndAList) {
  for (int slot_bytes : {4, 8, 12, 16, 24}) {
    const segment_classes classes{slot_bytes};
    SCOPED_TRACE(::testing::Message() << "slot bytes " << slot_bytes);
    EXPECT_EQ(classes.of(0), 0);
    EXPECT_EQ(classes.of(1), 0);
    EXPECT_EQ(classes.of(2), 1);
    EXPECT_EQ(classes.of(33), 6);
    EXPECT_EQ(classes.of(1024), 10);
    EXPECT_EQ(classes.of(1025), 11);
    // Shuffle classes end where warp tiles begin; tiles fit in 32 KiB (+ padding).
    EXPECT_LE(classes.shuffle_max_bits(), 8);
    EXPECT_GE(classes.tile_max_bits(), classes.warp_tile_max_bits());
    EXPECT_LE((std::size_t{1} << classes.tile_max_bits()) * slot_bytes, 32u * 1024);
    // A warp holds a segment of the largest shuffle class, 2^items keys a lane.
    EXPECT_GE(5 + classes.items_log2(classes.shuffle_max_bits()), classes.shuffle_max_bits());
    EXPECT_EQ(classes.shuffle_max_bits() + 1, 8) << "warp tiles from 129 keys";
    EXPECT_EQ(classes.items_log2(1), 1) << "a 2-key segment: one lane";
    // Lists: one per class up to the tile limit, then one for all long segments.
    for (int c = 1; c <= classes.tile_max_bits(); ++c) EXPECT_EQ(classes.list_of(c), c);
    EXPECT_EQ(classes.list_of(classes.tile_max_bits() + 1), classes.tile_max_bits() + 1);
    EXPECT_EQ(classes.list_of(40), classes.tile_max_bits() + 1);
    EXPECT_LT(classes.tile_max_bits() + 1, segment_classes::max_lists);
  }
}

TEST(CpuSegmentClasses, NthSetBitFindsTheLaneOfEachSegment) {
  using gpusort::detail::index_math::nth_set_bit;
  for (std::uint32_t mask : {0u, 1u, 0x80000000u, 0xffffffffu, 0xaaaaaaaau, 0x00f0f00fu,
                             0x12345678u, 0x80000001u}) {
    unsigned k = 0;
    for (unsigned bit = 0; bit < 32; ++bit)
      if (mask >> bit & 1u) EXPECT_EQ(nth_set_bit(mask, k++), bit) << std::hex << mask;
    EXPECT_EQ(nth_set_bit(mask, k), 32u) << "no more set bits: " << std::hex << mask;
    EXPECT_EQ(nth_set_bit(mask, 31), mask == 0xffffffffu ? 31u : 32u);
  }
}

TEST(CpuSegmentClasses, NthSetBitOfWindowFindsEachSegmentInReadOrder) {
  using gpusort::detail::index_math::nth_set_bit_of_window;
  const std::uint32_t windows[][4] = {{0u, 0u, 0u, 0u},
                                      {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                                      {0u, 0x80000000u, 0u, 1u},
                                      {0x12345678u, 0u, 0xaaaaaaaau, 0x00f0f00fu},
                                      {0xffffffffu, 0xffffffffu, 0u, 0u}};
  for (const auto& masks : windows) {
    unsigned k = 0;  // the reads in order, each read's lanes in order
    for (unsigned at = 0; at < 128; ++at)
      if (masks[at / 32] >> (at % 32) & 1u)
        EXPECT_EQ(nth_set_bit_of_window(masks, k++), at) << "set bit " << k - 1;
    EXPECT_EQ(nth_set_bit_of_window(masks, k), 128u) << "no more set bits";
    EXPECT_EQ(nth_set_bit_of_window(masks, 1000), 128u);
  }
}

TEST(CpuSegmentClasses, WorkspaceListsHoldEveryTileAndLongSegmentOfAnyLayout) {
  using gpusort::detail::index_math::segment_workspace;
  for (int slot_bytes : {4, 8, 12, 16}) {
    const segment_classes classes{slot_bytes};
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      // Disjoint segments of every class, from 0 keys to several long ones.
      std::vector<std::uint64_t> sizes = power_law_sizes(1 << 18, seed);
      for (std::uint64_t m : {129u, 1025u, 8193u, 40000u, 0u, 1u}) sizes.push_back(m);
      std::uint64_t n = 0;
      std::vector<std::uint64_t> per_list(segment_classes::max_lists, 0);
      for (std::uint64_t m : sizes) {
        n += m;
        const int c = classes.of(m);
        if (c >= classes.listed_min_bits()) ++per_list[classes.list_of(c)];
      }
      const segment_workspace w{n, sizes.size(), classes};
      SCOPED_TRACE(::testing::Message() << "slot bytes " << slot_bytes << ", n " << n);
      EXPECT_EQ(w.first_list(), classes.listed_min_bits());
      EXPECT_LE(classes.listed_min_bits(), classes.shuffle_max_bits())
          << "the class below the tiles is listed: the shuffle worker's windows left warps idle";
      EXPECT_EQ(w.long_list(), classes.list_of(40));
      for (int list = w.first_list(); list <= w.long_list(); ++list) {
        EXPECT_LE(per_list[list], w.capacity(list)) << "list " << list;
        EXPECT_EQ(w.list_start(list + 1), w.list_start(list) + w.capacity(list));
      }
      EXPECT_LE(w.list_entries(), n / 32 + 16) << "the lists take about n / 8 bytes at most";
      EXPECT_GE(w.long_prefix_offset(), w.header_bytes + 4 * w.list_entries());
      EXPECT_EQ(w.long_prefix_offset() % 8, 0u);
      EXPECT_EQ(w.bytes(), w.long_prefix_offset() + 8 * (w.capacity(w.long_list()) + 1));
      EXPECT_LE(w.cursor_offset + 8, w.long_ticket_offset);
      EXPECT_LE(w.long_ticket_offset + 8, w.long_done_offset);
      EXPECT_LE(w.long_done_offset + 8, w.header_bytes);
    }
  }
  // Few segments: each list has room for all of them, no more.
  const segment_workspace few{1 << 20, 3, segment_classes{4}};
  EXPECT_EQ(few.capacity(few.first_list()), 3u);
  EXPECT_EQ(few.capacity(few.long_list()), 3u);
}

TEST(CpuSegmentClasses, WindowWorkerListsWhenSegmentsAverage64KeysOrFewer) {
  for (int slot_bytes : {4, 8, 16}) {
    const segment_classes classes{slot_bytes};
    EXPECT_EQ(std::uint64_t{1} << (classes.listed_min_bits() - 1), 64u)
        << "the window worker's largest class";
    EXPECT_TRUE(classes.window_worker_lists(32u << 19, 1u << 19)) << "batches of 32 by offsets";
    EXPECT_TRUE(classes.window_worker_lists(64u * 1000, 1000));
    EXPECT_FALSE(classes.window_worker_lists(64u * 1000 + 1, 1000)) << "a key over the mean";
    EXPECT_FALSE(classes.window_worker_lists(1u << 24, (1u << 24) / 128)) << "128-key segments";
    EXPECT_TRUE(classes.window_worker_lists(1u << 24, (1u << 24) / 41))
        << "the bench's power-law sizes: lognormal, mu 3, sigma 1.2, a mean of 41 keys";
    EXPECT_TRUE(classes.window_worker_lists(std::uint64_t{1} << 38, std::uint64_t{1} << 32))
        << "no overflow at the largest segment count";
  }
}

TEST(CpuSegmentClasses, LongQueueHasAStagePerPassAndATicketPerUnit) {
  using gpusort::detail::index_math::long_queue;
  using gpusort::detail::index_math::pass;
  using kind = long_queue::stage_kind;
  for (const int longest : {14, 17, 24})
    for (const bool mapped : {false, true}) {
      const long_queue q{longest, (std::uint64_t{3} << longest) + (std::uint64_t{1} << 13),
                         {13, 4}, 512, mapped, mapped};
      SCOPED_TRACE(::testing::Message() << "longest " << longest << ", mapped " << mapped);
      std::vector<pass> passes;
      gpusort::detail::index_math::for_each_pass(std::uint64_t{1} << longest, q.shape,
                                              [&](const pass& ps) { passes.push_back(ps); });
      std::vector<long_queue::stage> stages;
      const std::uint64_t tickets = q.for_each_stage([&](const auto& s) { stages.push_back(s); });
      ASSERT_EQ(stages.size(), passes.size() + (mapped ? 2 : 0));
      std::uint64_t next = 0;
      for (std::size_t i = 0; i < stages.size(); ++i) {
        const long_queue::stage& s = stages[i];
        EXPECT_EQ(s.first_ticket, next) << "stage " << i;
        next += s.units;
        const bool map = mapped && (i == 0 || i + 1 == stages.size());
        if (map) {
          EXPECT_EQ(s.kind, i == 0 ? kind::map_in : kind::map_out);
          EXPECT_EQ(s.units, q.line >> 13);
          continue;
        }
        const pass& ps = passes[i - (mapped ? 1 : 0)];
        EXPECT_EQ(s.ps.first_step, ps.first_step);
        EXPECT_EQ(s.ps.end_step, ps.end_step);
        if (ps.win.contiguous()) {
          EXPECT_EQ(s.kind, kind::tiles);
          EXPECT_EQ(s.units, q.line >> 13) << "a unit per tile";
        } else {
          EXPECT_EQ(s.kind, kind::registers);
          EXPECT_EQ(s.units, ((q.line >> ps.win.group_bits) + 511) / 512)
              << "a unit per 512 register groups, the last one partial";
        }
      }
      EXPECT_EQ(tickets, next);
      long_queue::stage found;
      for (std::size_t i = 0; i < stages.size(); ++i)
        for (const std::uint64_t t : {stages[i].first_ticket, stages[i].first_ticket + stages[i].units - 1}) {
          ASSERT_TRUE(q.find(t, found)) << "ticket " << t;
          EXPECT_EQ(found.first_ticket, stages[i].first_ticket) << "ticket " << t;
        }
      EXPECT_FALSE(q.find(tickets, found)) << "past the last ticket";
    }
}

// Blocks take tickets in order and finish their units in any order; a unit starts once the
// units done reach its stage's first ticket. That must mean every earlier stage is done, and
// the queue must drain whatever the order (no block waits for one that has not started).
TEST(CpuSegmentClasses, LongQueueRunsStagesInOrderWhateverBlocksFinishFirst) {
  using gpusort::detail::index_math::long_queue;
  const long_queue q{15, std::uint64_t{5} << 14, {13, 4}, 512, true, true};
  std::vector<long_queue::stage> stages;
  const std::uint64_t tickets = q.for_each_stage([&](const auto& s) { stages.push_back(s); });
  for (const int blocks : {1, 3, 16})
    for (std::uint32_t seed = 1; seed <= 5; ++seed) {
      std::mt19937 rng(seed);
      struct block_state { long_queue::stage stage{}; bool holding = false, running = false; };
      std::vector<block_state> state(blocks);
      std::vector<std::uint64_t> finished(stages.size(), 0);
      std::uint64_t next_ticket = 0, done = 0;
      for (std::uint64_t step = 0; done < tickets; ++step) {
        ASSERT_LT(step, 100 * tickets) << "the queue did not drain";
        block_state& b = state[rng() % blocks];
        if (!b.holding) {
          if (next_ticket == tickets) continue;
          ASSERT_TRUE(q.find(next_ticket++, b.stage));
          b.holding = true;
        } else if (!b.running) {
          if (done < b.stage.first_ticket) continue;  // waits
          for (const auto& earlier : stages)
            if (earlier.first_ticket < b.stage.first_ticket)
              ASSERT_EQ(finished[&earlier - stages.data()], earlier.units)
                  << "a unit started before an earlier stage was done";
          b.running = true;
        } else {
          ++finished[std::find_if(stages.begin(), stages.end(), [&](const auto& s) {
                       return s.first_ticket == b.stage.first_ticket;
                     }) - stages.begin()];
          ++done;
          b = {};
        }
      }
    }
}

TEST(CpuSegmentClasses, SegmentListsReadOffsetsOfEitherWidth) {
  const std::vector<std::uint32_t> narrow_offsets = {0, 5, 5, 9};
  const std::vector<std::uint64_t> wide_offsets = {0, 5, 5, 9};
  for (const segment_list& s :
       {gpusort::detail::make_segments(narrow_offsets.data(), narrow_offsets.data() + 1, 3),
        gpusort::detail::make_segments(wide_offsets.data(), wide_offsets.data() + 1, 3)}) {
    EXPECT_FALSE(s.batched());
    EXPECT_EQ(s.first(1), 5u);
    EXPECT_EQ(s.last(1), 5u);
    EXPECT_EQ(s.last(2), 9u);
    EXPECT_TRUE(s.valid(2, 9));
    EXPECT_FALSE(s.valid(2, 8)) << "ends past n";
  }
  const std::vector<std::int32_t> backwards = {7, 3};
  EXPECT_FALSE(gpusort::detail::make_segments(backwards.data(), backwards.data() + 1, 1).valid(0, 10));
  const segment_list batches = gpusort::detail::make_batches(4, 3);
  EXPECT_TRUE(batches.batched());
  EXPECT_EQ(batches.first(2), 6u);
  EXPECT_EQ(batches.last(3), 12u);
}

// An argsort's indices made in the kernels' loads: the payload bits of a std::uint32_t or
// std::uint64_t index.
TEST(CpuSegmentClasses, IndexPayloadsHoldTheIndexAsItsTypeStoresIt) {
  using gpusort::detail::payload;
  using gpusort::detail::payload_of_index;
  static_assert(gpusort::detail::index_payload<payload<4>> &&
                gpusort::detail::index_payload<payload<8>> &&
                !gpusort::detail::index_payload<payload<16>>);
  for (std::uint64_t i : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{0xfffffffe},
                          std::uint64_t{0x123456789abcdef0}}) {
    const payload<8> wide = payload_of_index<payload<8>>(i);
    std::uint64_t as_u64 = 0;
    std::memcpy(&as_u64, &wide, 8);
    EXPECT_EQ(as_u64, i);
    const payload<4> narrow = payload_of_index<payload<4>>(i);
    std::uint32_t as_u32 = 0;
    std::memcpy(&as_u32, &narrow, 4);
    EXPECT_EQ(as_u32, static_cast<std::uint32_t>(i));
  }
  static_assert(payload_of_index<payload<8>>(0x100000002ull).words[1] == 1);
}

GPUSORT_TYPED_SUITE(CpuSegmented, ::testing::Test, key_types);

TYPED_TEST(CpuSegmented, BackendMatchesStableSortPerSegment) {
  using K = TypeParam;
  std::vector<std::uint64_t> sizes = power_law_sizes(1 << 16, 21);
  for (std::uint64_t m : {0, 1, 2, 31, 32, 33, 1023, 4097, 70001})
    sizes.insert(sizes.begin() + (m * 31) % sizes.size(), m);
  const layout l = make_layout(sizes, 3, true, 5);
  for (bool descending : {false, true}) {
    SCOPED_TRACE(::testing::Message() << "desc=" << descending);
    std::vector<K> keys = tools::generate<K>(tools::distribution::uniform, l.n, 12);
    scatter_special_values(keys, 12);
    const std::vector<K> expect = reference_segmented(keys, l, descending);
    std::vector<std::uint32_t> values(l.n);
    for (std::size_t i = 0; i < l.n; ++i) values[i] = static_cast<std::uint32_t>(i);
    const segment_list segs =
        gpusort::detail::make_segments(l.begin.data(), l.end.data(), l.begin.size());
    const gpusort::options opt{.direction = descending ? gpusort::order::descending
                                                       : gpusort::order::ascending};
    gpusort::detail::cpu_sort_segments(
        keys.data(), reinterpret_cast<gpusort::detail::payload<4>*>(values.data()), l.n, segs,
        opt);
    ASSERT_TRUE(same_bits(keys, expect));
    // value = original index: each value must name a key equal to the one beside it.
    std::vector<K> original = tools::generate<K>(tools::distribution::uniform, l.n, 12);
    scatter_special_values(original, 12);
    for (std::size_t i = 0; i < l.n; ++i)
      ASSERT_EQ(gpusort::key_traits<K>::ordered(keys[i]),
                gpusort::key_traits<K>::ordered(original[values[i]]))
          << "value left its key at " << i;
  }
}

TEST(CpuSegmented, InvalidSegmentsAreSkipped) {
  std::vector<std::uint32_t> keys = {5, 4, 3, 2, 1, 0};
  const std::vector<std::uint64_t> begin = {0, 4, 2}, end = {3, 2, 9};
  gpusort::detail::cpu_sort_segments<std::uint32_t, gpusort::detail::no_value>(
      keys.data(), nullptr, keys.size(), gpusort::detail::make_segments(begin.data(), end.data(), 3),
      {});
  EXPECT_EQ(keys, (std::vector<std::uint32_t>{3, 4, 5, 2, 1, 0}));
}

TEST(CpuSegmented, HostOverloadsSortAndReject) {
  // On the GPU when there is one, else on the CPU: the result is the same.
  std::vector<float> rows = tools::generate<float>(tools::distribution::gaussian, 50 * 77, 3);
  const std::vector<float> rows_in = rows;
  gpusort::sort_batched(rows, 50, 77, {.direction = gpusort::order::descending});
  EXPECT_TRUE(same_bits(
      rows, reference_segmented(rows_in, make_layout(std::vector<std::uint64_t>(50, 77)), true)));

  const layout l = make_layout(power_law_sizes(5000, 2));
  std::vector<std::int64_t> keys = tools::generate<std::int64_t>(tools::distribution::zipf, l.n, 4);
  std::vector<std::uint64_t> values(l.n);
  for (std::size_t i = 0; i < l.n; ++i) values[i] = i;
  const std::vector<std::int64_t> keys_in = keys;
  std::vector<std::uint64_t> offsets = l.begin;
  offsets.push_back(l.n);
  gpusort::sort_segmented(keys, values, offsets);
  EXPECT_TRUE(same_bits(keys, reference_segmented(keys_in, l, false)));
  for (std::size_t i = 0; i < l.n; ++i) ASSERT_EQ(keys[i], keys_in[values[i]]);

  std::vector<std::int64_t> untouched = keys_in;
  offsets.back() = l.n + 1;
  try {
    gpusort::sort_segmented(untouched, offsets);
    FAIL() << "no exception";
  } catch (const gpusort::error& e) {
    EXPECT_NE(std::string(e.what()).find("ends past the"), std::string::npos) << e.what();
  }
  EXPECT_EQ(untouched, keys_in);
  EXPECT_THROW(gpusort::sort_batched(untouched, 7, 7), gpusort::error);
}
