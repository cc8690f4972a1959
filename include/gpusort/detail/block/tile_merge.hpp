// One tile of the one-pass merge of up to 8 sorted runs (src/dist/multiway_merge.cuh): a
// block's work in phases between its barriers, written for one thread at a time so that the
// CPU tests run the same code thread by thread (test_cpu_multiway_merge).
//   plan   thread 0 writes where each run's segment lies in the tile (the block's one shared
//          fact; every round's segments follow from it);
//   load   the tile's segment of every run (begin[q] .. end[q]) into buffer 0, in run order,
//          a thread's items all loaded before any is stored (with pairs, each key's tile
//          index beside it);
//   round  k = 0, 1, ...: merges adjacent segments of 2^k runs pairwise into the other buffer,
//          every thread on its chunk of `items` outputs, whichever pair it falls in (a
//          merge-path search, then a serial merge), until one segment is left (rounds() of
//          them);
//   write  the keys out, and the values through each key's tile index.
// Tile index x lives at slot(x): one spare slot every 32, so that the threads of a warp,
// storing their chunks of consecutive outputs side by side, hit distinct banks.
#pragma once

#include <cstdint>
#include <type_traits>

#include "gpusort/detail/core/config.hpp"
#include "gpusort/detail/core/types.hpp"
#include "gpusort/detail/index_math/multiway_merge.hpp"

namespace gpusort::detail::block {

namespace mm = gpusort::detail::index_math::multiway;

// The runs, by value in each kernel's parameters.
template <class K, class V>
struct run_set {
  const K* keys[mm::max_runs] = {};
  const V* values[mm::max_runs] = {};
  std::uint64_t length[mm::max_runs] = {};
  int count = 0;
};

// Pairwise rounds that merge `runs` segments into one: ceil(log2 runs).
GPUSORT_HD constexpr int merge_rounds(int runs) {
  int rounds = 0;
  while ((1 << rounds) < runs) ++rounds;
  return rounds;
}

// The shared slot of tile index x (one spare every 32 indices).
GPUSORT_HD constexpr std::uint32_t padded_slot(std::uint32_t x) { return x + x / 32; }

// Code: the keys' order code (index_math::dist::order_code<K>); TILE keys at most.
template <class K, class V, class Code, int TILE>
struct tile_merge {
  static_assert(TILE <= 65536, "a tile's key indices are 16-bit");
  static constexpr bool pairs = !std::is_same_v<V, no_value>;
  static constexpr std::uint32_t slots = padded_slot(TILE);
  // The block's shared state: two buffers of keys (and, with values, of their tile indices),
  // and the plan: run q's segment is tile indices [start[q], start[q + 1]), read from
  // position start[q] + offset[q] of run q (offset wraps: begin[q] - start[q]).
  struct buffers {
    K keys[2][slots];
    std::uint16_t from[2][pairs ? slots : 1];
    std::uint32_t start[mm::max_runs + 1];
    std::uint64_t offset[mm::max_runs];
  };

  const run_set<K, V>& runs;
  Code code;
  const std::uint64_t* begin;  // the tile's split, and the next tile's
  const std::uint64_t* end;
  buffers& shared;

  GPUSORT_HD tile_merge(const run_set<K, V>& r, Code c, const std::uint64_t* from,
                        const std::uint64_t* to, buffers& s)
      : runs(r), code(c), begin(from), end(to), shared(s) {}

  GPUSORT_HD void plan(unsigned thread) {
    if (thread != 0) return;
    std::uint32_t size = 0;
    for (int q = 0; q < runs.count; ++q) {
      shared.start[q] = size;
      shared.offset[q] = begin[q] - size;
      size += static_cast<std::uint32_t>(end[q] - begin[q]);
    }
    shared.start[runs.count] = size;
  }

  // After plan's barrier.
  GPUSORT_HD std::uint32_t size() const { return shared.start[runs.count]; }
  GPUSORT_HD int rounds() const { return merge_rounds(runs.count); }

  // Items a thread loads (or gathers values for) before it stores any.
  static constexpr int batch = 8;

  // The run whose segment holds tile index x (empty segments skipped).
  GPUSORT_HD int run_of(std::uint32_t x) const {
    int q = 0;
    while (q + 1 < runs.count && shared.start[q + 1] <= x) ++q;
    return q;
  }

  // f(j, x) for each item j of a thread's batch at tile index x = base + thread + j threads.
  template <class F>
  GPUSORT_HD void for_batch(std::uint32_t base, std::uint32_t size, unsigned thread,
                            unsigned threads, const F& f) const {
    GPUSORT_UNROLL
    for (int j = 0; j < batch; ++j) {
      const std::uint32_t x = base + thread + j * threads;
      if (x < size) f(j, x);
    }
  }

  GPUSORT_HD void load(unsigned thread, unsigned threads) {
    const std::uint32_t n = size();
    for (std::uint32_t base = 0; base < n; base += threads * batch) {
      K item[batch];
      for_batch(base, n, thread, threads, [&](int j, std::uint32_t x) {
        const int q = run_of(x);
        item[j] = runs.keys[q][shared.offset[q] + x];
      });
      for_batch(base, n, thread, threads, [&](int j, std::uint32_t x) {
        shared.keys[0][padded_slot(x)] = item[j];
        if constexpr (pairs) shared.from[0][padded_slot(x)] = static_cast<std::uint16_t>(x);
      });
    }
  }

  // Round k: segments of 2^k runs (from buffer k % 2), merged pairwise into the other buffer.
  GPUSORT_HD void round(unsigned thread, int k, std::uint32_t items) {
    const std::uint32_t n = size();
    const std::uint32_t x0 = thread * items;
    const std::uint32_t x1 = x0 + items < n ? x0 + items : n;
    if (x0 >= x1) return;
    const int in = k & 1, width = 1 << k;
    const K* keys = shared.keys[in];
    const auto boundary = [&](int run) {
      return shared.start[run < runs.count ? run : runs.count];
    };
    for (int first = 0; first < runs.count; first += 2 * width) {
      const std::uint32_t a = boundary(first), b = boundary(first + width);
      const std::uint32_t e = boundary(first + 2 * width);
      const std::uint32_t lo = x0 > a ? x0 : a, hi = x1 < e ? x1 : e;
      if (lo >= hi) continue;  // this thread's outputs are elsewhere
      const auto a_code = [&](std::uint32_t i) { return code(keys[padded_slot(a + i)]); };
      const auto b_code = [&](std::uint32_t j) { return code(keys[padded_slot(b + j)]); };
      const std::uint32_t taken = mm::merge_path_split(a_code, b - a, b_code, e - b, lo - a);
      merge_serially(in, a + taken, b, lo - taken + (b - a), e, lo, hi);
    }
  }

  // Outputs lo .. hi - 1 of the merge of tile indices [i, a_end) and [j, b_end) of buffer
  // `in` (the first on ties) into the other buffer: the two candidates held in registers,
  // each step a select of one and a single shared load of its successor, with no branch for
  // the warp to diverge on. Index 0 stands in for a candidate past its end (never taken).
  GPUSORT_HD void merge_serially(int in, std::uint32_t i, std::uint32_t a_end, std::uint32_t j,
                                 std::uint32_t b_end, std::uint32_t lo, std::uint32_t hi) {
    const K* keys = shared.keys[in];
    K x = keys[padded_slot(i < a_end ? i : 0)], y = keys[padded_slot(j < b_end ? j : 0)];
    for (std::uint32_t out = lo; out < hi; ++out) {
      // Bitwise, not short-circuit: both sides are registers, and no branch is taken.
      const bool take_a = (j >= b_end) | ((i < a_end) & !(code(y) < code(x)));
      const std::uint32_t taken = take_a ? i : j, next = taken + 1;
      shared.keys[1 - in][padded_slot(out)] = take_a ? x : y;
      if constexpr (pairs)
        shared.from[1 - in][padded_slot(out)] = shared.from[in][padded_slot(taken)];
      const K successor = keys[padded_slot(next < (take_a ? a_end : b_end) ? next : 0)];
      i = take_a ? next : i;
      j = take_a ? j : next;
      x = take_a ? successor : x;
      y = take_a ? y : successor;
    }
  }

  // The keys out, and the values gathered through each key's tile index, a thread's batch of
  // values all loaded before any is stored. After the last round's barrier.
  GPUSORT_HD void write(unsigned thread, unsigned threads, K* out_keys, V* out_values) const {
    const std::uint32_t n = size();
    const int last = rounds() & 1;
    for (std::uint32_t x = thread; x < n; x += threads)
      out_keys[x] = shared.keys[last][padded_slot(x)];
    if constexpr (pairs) {
      for (std::uint32_t base = 0; base < n; base += threads * batch) {
        V value[batch];
        for_batch(base, n, thread, threads, [&](int j, std::uint32_t x) {
          const std::uint32_t source = shared.from[last][padded_slot(x)];
          const int q = run_of(source);
          value[j] = runs.values[q][shared.offset[q] + source];
        });
        for_batch(base, n, thread, threads,
                  [&](int j, std::uint32_t x) { out_values[x] = value[j]; });
      }
    }
  }
};

}  // namespace gpusort::detail::block
