// The sequential adaptive bitonic sort (Bilardi & Nicolau) with the simplified merge of
// Greß & Zachmann, section 4.2: the CPU backend of algorithm::adaptive_bitonic and the
// reference that the device version is checked against (same items, trees and counts).
//
// It sorts items (key, input position): they compare by key, then by position, so all items
// differ (the merge needs that) and the sort is stable. n is padded to a power of two N with
// items at positions >= n, which sort after every real item (by position, never by key, so
// any key type works) and are dropped at the end. Level j = 1..log2 N merges pairs of runs of
// 2^(j-1) into runs of 2^j, run t ascending if t is even, so every pair is bitonic.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpusort/detail/cpu/bitonic.hpp"
#include "gpusort/detail/core/types.hpp"

namespace gpusort::detail::cpu {

namespace abi {

template <class K>
struct item {
  K key;
  index_t position;
};

template <class K>
struct node {
  item<K> value;
  index_t left, right;  // indices in the tree; a leaf points at itself
};

// Strict order of items: by key (reversed when descending), then position; positions >= n
// are padding and come after every real item.
template <class K, class Compare>
struct item_before {
  Compare comp;
  bool descending;
  index_t n;
  bool operator()(const item<K>& a, const item<K>& b) const {
    if (a.position >= n || b.position >= n) return a.position < b.position;
    if (descending ? comp(b.key, a.key) : comp(a.key, b.key)) return true;
    if (descending ? comp(a.key, b.key) : comp(b.key, a.key)) return false;
    return a.position < b.position;
  }
};

// Adaptive bitonic merge of the bitonic tree (root, spare) of 2^levels items, ascending when
// `up`: phase 0 and phases 1..levels-1 of the simplified min/max determination, then the
// halves (root.left, root) and (root.right, spare). Returns the item comparisons made.
template <class K, class Before>
std::uint64_t merge_tree(node<K>* t, index_t root, index_t spare, int levels, bool up,
                         const Before& before) {
  std::uint64_t count = 0;
  // "a > b" in the run's direction; items are distinct, so descending is b > a.
  auto greater = [&](index_t a, index_t b) {
    ++count;
    return up ? before(t[b].value, t[a].value) : before(t[a].value, t[b].value);
  };
  // Tail-iterates on the right half, recurses on the left: depth <= levels.
  for (; levels > 0; --levels) {
    if (greater(root, spare)) {  // swaps halves p and q, so that p's last < q's last
      std::swap(t[root].value, t[spare].value);
      std::swap(t[root].left, t[root].right);
    }
    for (index_t p = t[root].left, q = t[root].right, i = 1; i < index_t(levels); ++i) {
      if (greater(p, q)) {
        std::swap(t[p].value, t[q].value);
        std::swap(t[p].left, t[q].left);
        p = t[p].right, q = t[q].right;
      } else {
        p = t[p].left, q = t[q].left;
      }
    }
    if (levels > 1) count += merge_tree(t, t[root].left, root, levels - 1, up, before);
    root = t[root].right;
  }
  return count;
}

// Writes the in-order sequence of the subtree at x (of the given height) to out.
template <class K>
void in_order(const node<K>* t, index_t x, int height, item<K>*& out) {
  if (height > 0) in_order(t, t[x].left, height - 1, out);
  *out++ = t[x].value;
  if (height > 0) in_order(t, t[x].right, height - 1, out);
}

}  // namespace abi

// Sorts keys[0, n) (values alongside unless V is no_value) by comp, ascending, or descending
// when `descending`; stable (ties keep their input order). Adds the number of item
// comparisons made to *comparisons when it is non-null.
template <class K, class V, class Compare>
void adaptive_bitonic_sort(K* keys, V* values, std::uint64_t n, Compare comp, bool descending,
                           std::uint64_t* comparisons = nullptr, unsigned threads = 0) {
  if (n < 2) return;
  const int levels = std::bit_width(n - 1);
  const index_t N = index_t{1} << levels;
  if (n < (index_t{1} << 16)) threads = 1;  // threads cost more than they save
  const abi::item_before<K, Compare> before{comp, descending, n};

  std::vector<abi::item<K>> run(N);  // the runs of the current level, in order
  for (index_t i = 0; i < N; ++i) run[i] = {keys[i < n ? i : 0], i};
  std::vector<abi::node<K>> tree(N);
  std::atomic<std::uint64_t> count{0};  // an integer sum: the same whatever the schedule

  for (int j = 1; j <= levels; ++j) {
    const index_t size = index_t{1} << j, root = size / 2 - 1, spare = size - 1;
    parallel_for(N >> j, threads, [&](index_t r) {
      abi::node<K>* t = tree.data() + r * size;
      abi::item<K>* items = run.data() + r * size;
      // The canonical bitonic tree over the two runs: node x has height ctz(x + 1).
      for (index_t x = 0; x < spare; ++x) {
        const int h = std::countr_zero(x + 1);
        const index_t half = h ? index_t{1} << (h - 1) : 0;
        t[x] = {items[x], x - half, x + half};
      }
      t[spare] = {items[spare], spare, spare};
      count += abi::merge_tree(t, root, spare, j, r % 2 == 0, before);
      abi::in_order(t, root, j - 1, items);
      *items = t[spare].value;
    });
  }

  // Padding sorts last, so run[0, n) are the real items in order.
  if constexpr (!std::is_same_v<V, no_value>) {
    const std::vector<V> original(values, values + n);
    for (index_t i = 0; i < n; ++i) values[i] = original[run[i].position];
  }
  for (index_t i = 0; i < n; ++i) keys[i] = run[i].key;
  if (comparisons) *comparisons += count;
}

}  // namespace gpusort::detail::cpu
