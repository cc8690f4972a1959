// GPU-ABiSort (Greß & Zachmann): the index math and the one-phase step, shared by the device
// kernels (device/adaptive_bitonic.cuh) and the CPU test that replays the device schedule.
//
// The sort works on items: a key's ordered bits and its position, so all items differ (the
// adaptive merge needs that) and ties keep their input order. n is padded up to a power of
// two N with sentinel items (all-ones key, position >= n) that sort after every real item.
//
// Level j merges the sorted runs of 2^(j-1) into runs of 2^j (tree t ascending if t is even),
// on bitonic trees over the in-order array: position x < 2^j - 1 is a node of height
// ctz(x + 1), children x -/+ 2^(h-1); the root is 2^(j-1) - 1 and the spare 2^j - 1. Such a
// "canonical" tree needs no stored pointers. A node that the merge visits is first copied to
// a side slot with its child pointers, and from then on changed in place there (CUDA can
// scatter; the paper's stream model could not, hence its Table 1 output layout). Pointers are
// tagged: side slot, or canonical position.
//
// Stage k of the merge runs the adaptive min/max determination on the 2^k subtrees at depth
// k, one instance each, phase i visiting depth k + i. Stages overlap as in the paper's 5.4:
// stage k phase i runs in step 2k + i. Only the first m = j - b stages are adaptive; the
// remaining b are the block bitonic merge of each depth-m subtree and its spare (section 7.2),
// a bitonic sequence of 2^b items, which a block gathers and merges in shared memory.
#pragma once

#include <cstdint>

#include "gpusort/detail/core/config.hpp"

namespace gpusort::detail::index_math::abisort {

using index_t = std::uint64_t;

// ---- items ----------------------------------------------------------------------------

// 32-bit keys: key and position packed in one 64-bit word, compared as one number.
// 64-bit keys: a 16-byte pair.
template <class U>
struct item_traits;

template <>
struct item_traits<std::uint32_t> {
  using type = std::uint64_t;
  GPUSORT_HD static constexpr type make(std::uint32_t key, std::uint32_t position) {
    return (type{key} << 32) | position;
  }
  GPUSORT_HD static constexpr std::uint32_t position(type t) { return static_cast<std::uint32_t>(t); }
  GPUSORT_HD static constexpr std::uint32_t key(type t) { return static_cast<std::uint32_t>(t >> 32); }
  GPUSORT_HD static constexpr bool less(type a, type b) { return a < b; }
};

struct alignas(16) item64 {
  std::uint64_t key;
  std::uint32_t position;
  std::uint32_t unused;
};

template <>
struct item_traits<std::uint64_t> {
  using type = item64;
  GPUSORT_HD static constexpr type make(std::uint64_t key, std::uint32_t position) {
    return {key, position, 0};
  }
  GPUSORT_HD static constexpr std::uint32_t position(const type& t) { return t.position; }
  GPUSORT_HD static constexpr std::uint64_t key(const type& t) { return t.key; }
  GPUSORT_HD static constexpr bool less(const type& a, const type& b) {
    return a.key < b.key || (a.key == b.key && a.position < b.position);
  }
};

template <class U>
using item_t = typename item_traits<U>::type;

// Comparator object for the block network.
template <class U>
struct item_less {
  GPUSORT_HD GPUSORT_FORCEINLINE bool operator()(const item_t<U>& a, const item_t<U>& b) const {
    return item_traits<U>::less(a, b);
  }
};

// Item at padded position i >= n: after every real item, in position order.
template <class U>
GPUSORT_HD constexpr item_t<U> sentinel(index_t i) {
  return item_traits<U>::make(static_cast<U>(~U{0}), static_cast<std::uint32_t>(i));
}

// ---- sizes ------------------------------------------------------------------------------

GPUSORT_HD constexpr int ceil_log2(index_t n) {
  int b = 0;
  while ((index_t{1} << b) < n) ++b;
  return b;
}

// The sort's tunables: 2^block_bits items per block sort and per block merge.
inline constexpr int default_block_bits = 12;
inline constexpr int max_items_log2 = 32;  // positions are 32-bit

// log2 of the padded length: at least one block.
GPUSORT_HD constexpr int padded_log2(index_t n, int block_bits) {
  const int l = ceil_log2(n);
  return l > block_bits ? l : block_bits;
}

// ---- trees -------------------------------------------------------------------------------

GPUSORT_HD constexpr int ctz(index_t x) {
  int c = 0;
  while (c < 64 && !((x >> c) & 1u)) ++c;
  return c;
}
GPUSORT_HD constexpr index_t root_of(int j) { return (index_t{1} << (j - 1)) - 1; }
GPUSORT_HD constexpr index_t spare_of(int j) { return (index_t{1} << j) - 1; }
GPUSORT_HD constexpr int height_of(index_t x) { return ctz(x + 1); }

// Pointers: bit 63 tags a side slot; otherwise a canonical position. `no_child` for leaves.
inline constexpr index_t side_tag = index_t{1} << 63;
inline constexpr index_t no_child = ~index_t{0};
GPUSORT_HD constexpr bool is_side(index_t p) { return (p & side_tag) != 0 && p != no_child; }
GPUSORT_HD constexpr index_t side_pointer(index_t slot) { return slot | side_tag; }
GPUSORT_HD constexpr index_t slot_of(index_t p) { return p & ~side_tag; }

// Canonical child (right = 1) of canonical node x, or no_child for a leaf.
GPUSORT_HD constexpr index_t canonical_child(index_t x, int right) {
  const int h = height_of(x);
  if (h == 0) return no_child;
  const index_t half = index_t{1} << (h - 1);
  return right ? x + half : x - half;
}

template <class T>
struct side_node {
  T value;
  index_t child[2];  // left, right
};

// Per instance, between phases: before phase 0 its subtree's root and spare, afterwards the
// pair p, q of the next phase. Stage k instance r lives at 2^k - 1 + r; "stage m" holds the
// (root, spare) of every depth-m subtree for the block merge.
struct pq_state {
  index_t p;
  index_t q;
};
GPUSORT_HD constexpr index_t state_index(int k, index_t r) { return (index_t{1} << k) - 1 + r; }
GPUSORT_HD constexpr index_t states_per_tree(int m) { return index_t{1} << (m + 1); }

// ---- side slots ----------------------------------------------------------------------------
// Slots 0 and 1 hold the root and the spare. Phase i < j - k - 1 of stage k instance r copies
// the two children it goes to next, if still canonical, into slots fixed by (k, r, i): so
// slots never collide and need no allocator.

// sum over k' < k of 2^k' (j - k' - 1): the phases with children of all earlier stages.
GPUSORT_HD constexpr index_t phases_before_stage(int j, int k) {
  // = (j - 1)(2^k - 1) - ((k - 2) 2^k + 2)
  const index_t p = index_t{1} << k;
  return static_cast<index_t>(j + 1) * (p - 1) - static_cast<index_t>(k) * p;
}
GPUSORT_HD constexpr index_t child_slot(int j, int k, index_t r, int i, int which) {
  return 2 + 2 * (phases_before_stage(j, k) + r * static_cast<index_t>(j - k - 1) +
                  static_cast<index_t>(i)) +
         static_cast<index_t>(which);
}
GPUSORT_HD constexpr index_t slots_per_tree(int j, int m) {
  return 2 + 2 * phases_before_stage(j, m);
}

// ---- the schedule --------------------------------------------------------------------------

// Merge level j: m adaptive stages, then the block merge of 2^(j - m) items.
GPUSORT_HD constexpr int adaptive_stages(int j, int block_bits) {
  return j > block_bits ? j - block_bits : 0;
}
// Steps of the overlapped stages: stage k phase i runs in step 2k + i, i < j - k.
GPUSORT_HD constexpr int steps_of_level(int j, int m) { return m == 0 ? 0 : m + j - 1; }

struct step_stages {
  int first;  // lowest active stage
  int last;   // highest active stage
  // Instances per tree in this step: stages first..last, 2^k each.
  GPUSORT_HD constexpr index_t instances() const {
    return (index_t{2} << last) - (index_t{1} << first);
  }
};
GPUSORT_HD constexpr step_stages stages_in_step(int j, int m, int s) {
  const int first = s - j + 1 > 0 ? s - j + 1 : 0;
  const int last = s / 2 < m - 1 ? s / 2 : m - 1;
  return {first, last};
}

// Instance f (0-based, within a tree) of a step: its stage and number within the stage.
struct instance_id {
  int stage;
  index_t r;
};
GPUSORT_HD constexpr instance_id instance_of(step_stages st, index_t f) {
  const index_t x = f + (index_t{1} << st.first);  // heap numbering: stage = floor(log2 x)
  int k = 0;
  while ((x >> (k + 1)) != 0) ++k;
  return {k, x - (index_t{1} << k)};
}

// Comparisons of one merge level per tree of 2^j items: sum of 2^k (j - k) over the adaptive
// stages, then (j - m) 2^(j - m - 1) in each of the 2^m block merges.
GPUSORT_HD constexpr index_t level_comparisons(int j, int m) {
  index_t c = 0;
  for (int k = 0; k < m; ++k) c += (index_t{1} << k) * static_cast<index_t>(j - k);
  const int b = j - m;
  return c + (index_t{1} << m) * static_cast<index_t>(b) * (index_t{1} << (b - 1));
}
// The whole sort of 2^L items: block sorts of 2^b (b(b+1)/2 steps of 2^(b-1) comparators),
// then levels b+1..L.
GPUSORT_HD constexpr index_t sort_comparisons(int L, int block_bits) {
  const int b = block_bits < L ? block_bits : L;
  index_t c = (index_t{1} << (L - b)) * static_cast<index_t>(b * (b + 1) / 2) *
              (b > 0 ? index_t{1} << (b - 1) : 0);
  for (int j = b + 1; j <= L; ++j)
    c += (index_t{1} << (L - j)) * level_comparisons(j, adaptive_stages(j, block_bits));
  return c;
}

// ---- one phase ---------------------------------------------------------------------------

// Copies canonical node x (if the pointer is canonical) into slot `slot` and returns the
// pointer to use from now on.
template <class T>
GPUSORT_HD GPUSORT_FORCEINLINE index_t materialize(index_t p, const T* canon, side_node<T>* side,
                                                   index_t slot) {
  if (p == no_child || is_side(p)) return p;
  side[slot] = side_node<T>{canon[p], {canonical_child(p, 0), canonical_child(p, 1)}};
  return side_pointer(slot);
}

// Phase i of stage k, instance r, on one tree: canon = its 2^j input items, side = its slots,
// st = the instance's state (in: this phase's pair, out: the next phase's), state = the
// tree's states, where phase 0 leaves the (root, spare) of the next stage's two instances.
// `reverse`: the tree sorts descending.
template <class T, class Less>
GPUSORT_HD GPUSORT_FORCEINLINE void adaptive_phase(const T* canon, side_node<T>* side,
                                                   pq_state& st, pq_state* state, int j, int k,
                                                   index_t r, int i, bool reverse, Less less) {
  index_t a, b;
  if (k == 0 && i == 0) {
    a = materialize(root_of(j), canon, side, 0);
    b = materialize(spare_of(j), canon, side, 1);
  } else {
    a = st.p;
    b = st.q;
  }
  side_node<T> p = side[slot_of(a)];
  side_node<T> q = side[slot_of(b)];
  const bool exchange = less(q.value, p.value) != reverse;  // p > q in the tree's order
  if (exchange) {
    const T v = p.value;
    p.value = q.value;
    q.value = v;
  }
  if (i == 0) {
    // a: the subtree's root, b: its spare.
    if (exchange) {
      const index_t c = p.child[0];
      p.child[0] = p.child[1];
      p.child[1] = c;
    }
    p.child[0] = materialize(p.child[0], canon, side, child_slot(j, k, r, 0, 0));
    p.child[1] = materialize(p.child[1], canon, side, child_slot(j, k, r, 0, 1));
    state[state_index(k + 1, 2 * r)] = pq_state{p.child[0], a};
    state[state_index(k + 1, 2 * r + 1)] = pq_state{p.child[1], b};
    st = pq_state{p.child[0], p.child[1]};
  } else {
    if (exchange) {
      const index_t c = p.child[0];
      p.child[0] = q.child[0];
      q.child[0] = c;
    }
    const int w = exchange ? 1 : 0;
    if (k + i < j - 1) {  // not the leaves: copy the next pair out
      p.child[w] = materialize(p.child[w], canon, side, child_slot(j, k, r, i, 0));
      q.child[w] = materialize(q.child[w], canon, side, child_slot(j, k, r, i, 1));
      st = pq_state{p.child[w], q.child[w]};
    }
  }
  side[slot_of(a)] = p;
  side[slot_of(b)] = q;
}

// ---- gathering a depth-m subtree for the block merge --------------------------------------
// Breadth-first over the subtree of height b - 1 (2^b - 1 nodes): the node at level d, index
// t has in-order position (2t + 1) 2^(b-1-d) - 1 in the gathered sequence; the spare goes
// last, at 2^b - 1.
GPUSORT_HD constexpr index_t bfs_position(int b, int d, index_t t) {
  return ((2 * t + 1) << (b - 1 - d)) - 1;
}

}  // namespace gpusort::detail::index_math::abisort
