// The device schedule of GPU-ABiSort (index_math/adaptive_bitonic.hpp) replayed on the host:
// block sorts, the overlapped steps of the adaptive stages (instances of a step in either
// order, as the GPU may run them), the gather of each depth-m subtree and its block merge.
// Checks the index math against std::stable_sort, and the comparison count formula.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "gpusort/detail/index_math/adaptive_bitonic.hpp"

namespace abisort = gpusort::detail::index_math::abisort;
using abisort::index_t;

TEST(AdaptiveSchedule, SlotsAreDistinctAndInRange) {
  for (int j = 2; j <= 12; ++j) {
    for (int m = 1; m < j; ++m) {
      std::set<index_t> seen = {0, 1};
      for (int k = 0; k < m; ++k)
        for (index_t r = 0; r < (index_t{1} << k); ++r)
          for (int i = 0; i + 1 < j - k; ++i)
            for (int w = 0; w < 2; ++w) {
              const index_t s = abisort::child_slot(j, k, r, i, w);
              ASSERT_LT(s, abisort::slots_per_tree(j, m)) << j << " " << m << " " << k;
              ASSERT_TRUE(seen.insert(s).second) << "slot " << s << " twice";
            }
      EXPECT_EQ(seen.size(), abisort::slots_per_tree(j, m));
    }
  }
}

TEST(AdaptiveSchedule, EveryPhaseRunsOnceInItsStep) {
  for (int j = 2; j <= 14; ++j) {
    for (int m = 1; m < j; ++m) {
      std::vector<std::vector<int>> ran(m, std::vector<int>(j, -1));  // step of (k, i)
      for (int s = 0; s < abisort::steps_of_level(j, m); ++s) {
        const abisort::step_stages st = abisort::stages_in_step(j, m, s);
        ASSERT_LE(st.first, st.last);
        for (index_t f = 0; f < st.instances(); ++f) {
          const abisort::instance_id id = abisort::instance_of(st, f);
          ASSERT_GE(id.stage, st.first);
          ASSERT_LE(id.stage, st.last);
          ASSERT_LT(id.r, index_t{1} << id.stage);
          const int i = s - 2 * id.stage;
          ASSERT_GE(i, 0);
          ASSERT_LT(i, j - id.stage);
          if (id.r == 0) ran[id.stage][i] = s;
        }
      }
      for (int k = 0; k < m; ++k)
        for (int i = 0; i < j - k; ++i) ASSERT_EQ(ran[k][i], 2 * k + i) << j << " " << m;
    }
  }
}

// Sorts items with the device's schedule, on one thread; counts the comparisons.
template <class U>
void replay(std::vector<abisort::item_t<U>>& items, int b, bool reverse_instances,
            index_t& comparisons) {
  using T = abisort::item_t<U>;
  const auto less = abisort::item_less<U>{};
  comparisons = 0;
  const auto counting_less = [&](const T& x, const T& y) {
    ++comparisons;
    return less(x, y);
  };
  const int L = abisort::ceil_log2(items.size());
  // Block sorts, alternating directions; a network makes b(b+1)/2 steps of 2^(b-1).
  for (index_t t = 0; t < (index_t{1} << (L - b)); ++t) {
    auto first = items.begin() + (t << b), last = first + (index_t{1} << b);
    std::sort(first, last, less);
    if (t & 1) std::reverse(first, last);
    comparisons += static_cast<index_t>(b * (b + 1) / 2) << (b - 1);
  }
  std::vector<T> out(items.size());
  for (int j = b + 1; j <= L; ++j) {
    const int m = abisort::adaptive_stages(j, b);
    const index_t trees = index_t{1} << (L - j);
    std::vector<abisort::side_node<T>> side(trees * abisort::slots_per_tree(j, m));
    std::vector<abisort::pq_state> states(trees * abisort::states_per_tree(m));
    for (int s = 0; s < abisort::steps_of_level(j, m); ++s) {
      const abisort::step_stages st = abisort::stages_in_step(j, m, s);
      const index_t total = trees * st.instances();
      for (index_t x = 0; x < total; ++x) {
        const index_t g = reverse_instances ? total - 1 - x : x;
        const index_t tree = g / st.instances();
        const abisort::instance_id id = abisort::instance_of(st, g % st.instances());
        abisort::pq_state* tree_states = states.data() + tree * abisort::states_per_tree(m);
        abisort::adaptive_phase(items.data() + (tree << j),
                                side.data() + tree * abisort::slots_per_tree(j, m),
                                tree_states[abisort::state_index(id.stage, id.r)], tree_states, j,
                                id.stage, id.r, s - 2 * id.stage, (tree & 1) != 0, counting_less);
      }
    }
    // Each depth-m subtree in order, then its spare: a bitonic sequence, merged.
    for (index_t tree = 0; tree < trees; ++tree) {
      const T* canon = items.data() + (tree << j);
      const abisort::side_node<T>* side_t = side.data() + tree * abisort::slots_per_tree(j, m);
      for (index_t sub = 0; sub < (index_t{1} << m); ++sub) {
        const abisort::pq_state top = states[tree * abisort::states_per_tree(m) + abisort::state_index(m, sub)];
        std::vector<T> seq;
        auto visit = [&](auto&& self, index_t p) -> void {
          if (p == abisort::no_child) return;
          index_t left, right;
          T value;
          if (abisort::is_side(p)) {
            const auto& node = side_t[abisort::slot_of(p)];
            value = node.value;
            left = node.child[0];
            right = node.child[1];
          } else {
            value = canon[p];
            left = abisort::canonical_child(p, 0);
            right = abisort::canonical_child(p, 1);
          }
          self(self, left);
          seq.push_back(value);
          self(self, right);
        };
        visit(visit, top.p);
        ASSERT_TRUE(abisort::is_side(top.q)) << "spares are always copied out";
        seq.push_back(side_t[abisort::slot_of(top.q)].value);
        EXPECT_EQ(seq.size(), index_t{1} << b);
        // A bitonic sequence: at most two changes of direction around the cycle.
        int turns = 0;
        for (std::size_t i = 0; i < seq.size(); ++i) {
          const T& x = seq[i];
          const T& y = seq[(i + 1) % seq.size()];
          const T& z = seq[(i + 2) % seq.size()];
          if (less(x, y) != less(y, z)) ++turns;
        }
        EXPECT_LE(turns, 2) << "j=" << j << " subtree " << sub;
        std::sort(seq.begin(), seq.end(), less);
        if (tree & 1) std::reverse(seq.begin(), seq.end());
        std::copy(seq.begin(), seq.end(), out.begin() + (tree << j) + (sub << b));
        comparisons += static_cast<index_t>(b) << (b - 1);
      }
    }
    items.swap(out);
  }
}

class AdaptiveReplay : public ::testing::TestWithParam<int> {};

TEST_P(AdaptiveReplay, SortsLikeStableSort) {
  const int b = GetParam();
  std::mt19937_64 rng(7 + b);
  for (index_t n : {index_t{2}, index_t{3}, index_t{17}, index_t{64}, index_t{1000}, index_t{4097},
                    index_t{1} << 14}) {
    for (bool few_unique : {false, true}) {
      for (bool reverse_instances : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n << " b=" << b << " few=" << few_unique
                                          << " reverse=" << reverse_instances);
        const int L = abisort::padded_log2(n, b);
        std::vector<std::uint32_t> keys(n);
        for (auto& k : keys) k = static_cast<std::uint32_t>(few_unique ? rng() % 5 : rng());
        std::vector<std::uint64_t> items(index_t{1} << L);
        for (index_t i = 0; i < items.size(); ++i)
          items[i] = i < n ? abisort::item_traits<std::uint32_t>::make(keys[i], static_cast<std::uint32_t>(i))
                           : abisort::sentinel<std::uint32_t>(i);
        index_t comparisons = 0;
        replay<std::uint32_t>(items, b, reverse_instances, comparisons);
        if (::testing::Test::HasFatalFailure()) return;
        EXPECT_EQ(comparisons, abisort::sort_comparisons(L, b));
        std::vector<std::uint32_t> order(n);
        for (index_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
        std::stable_sort(order.begin(), order.end(),
                         [&](std::uint32_t x, std::uint32_t y) { return keys[x] < keys[y]; });
        for (index_t i = 0; i < n; ++i)
          ASSERT_EQ(abisort::item_traits<std::uint32_t>::position(items[i]), order[i]) << "at " << i;
      }
    }
  }
}
INSTANTIATE_TEST_SUITE_P(BlockBits, AdaptiveReplay, ::testing::Values(1, 2, 3, 5, 12));

TEST(AdaptiveSchedule, PlainAlgorithmCountsAtMostTwoNLogN) {
  for (int L = 1; L <= 32; ++L) {
    const index_t n = index_t{1} << L;
    index_t expect = 0;  // per level j: n / 2^j trees of 2^(j+1) - j - 2 comparisons
    for (int j = 1; j <= L; ++j) expect += (n >> j) * ((index_t{2} << j) - j - 2);
    EXPECT_EQ(abisort::sort_comparisons(L, 1), expect) << L;
    EXPECT_LE(abisort::sort_comparisons(L, 1), 2 * n * L);
  }
}
