// One tile of the one-pass merge of up to 8 sorted runs (src/dist/multiway_merge.cuh): a
// block's work in phases between its barriers, written for one thread at a time so that the
// CPU tests run the same code thread by thread (test_cpu_multiway_merge).
//   load   the tile's segment of every run (begin[q] .. end[q]) into buffer 0, in run order,
//          with each key's tile index, a thread's items all loaded before any is stored;
//   round  merges adjacent segments pairwise into the other buffer, every thread on its chunk
//          of `items` outputs, whichever pair it falls in (then next_round, the same on every
//          thread), until one segment is left;
//   write  the keys out, and the values through each key's tile index.
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

// Code: the keys' order code (index_math::dist::order_code<K>); TILE keys at most.
template <class K, class V, class Code, int TILE>
struct tile_merge {
  static_assert(TILE <= 65536, "a tile's key indices are 16-bit");
  static constexpr bool pairs = !std::is_same_v<V, no_value>;
  // The block's shared state: two buffers of keys and of their tile indices.
  struct buffers {
    K keys[2][TILE];
    std::uint16_t from[2][TILE];
  };

  const run_set<K, V>& runs;
  Code code;
  const std::uint64_t* begin;  // the tile's split, and the next tile's
  const std::uint64_t* end;
  buffers& shared;
  // Where run q's segment starts in the tile (fixed), and segment s of the current round:
  // [start[s], start[s] + length[s]) of buffer `cur`.
  std::uint32_t run_start[mm::max_runs] = {};
  std::uint32_t start[mm::max_runs] = {}, length[mm::max_runs] = {};
  std::uint32_t size = 0;
  int segments = 0, cur = 0;

  GPUSORT_HD tile_merge(const run_set<K, V>& r, Code c, const std::uint64_t* from,
                        const std::uint64_t* to, buffers& s)
      : runs(r), code(c), begin(from), end(to), shared(s), segments(r.count) {
    for (int q = 0; q < runs.count; ++q) {
      run_start[q] = start[q] = size;
      length[q] = static_cast<std::uint32_t>(end[q] - begin[q]);
      size += length[q];
    }
  }

  // Items a thread loads (or gathers values for) before it stores any.
  static constexpr int batch = 8;

  // The run whose segment holds tile index x (empty segments skipped).
  GPUSORT_HD int run_of(std::uint32_t x) const {
    int q = 0;
    while (q + 1 < runs.count && run_start[q + 1] <= x) ++q;
    return q;
  }

  // f(j, x) for each item j of a thread's batch at tile index x = base + thread + j threads.
  template <class F>
  GPUSORT_HD void for_batch(std::uint32_t base, unsigned thread, unsigned threads,
                            const F& f) const {
    GPUSORT_UNROLL
    for (int j = 0; j < batch; ++j) {
      const std::uint32_t x = base + thread + j * threads;
      if (x < size) f(j, x);
    }
  }

  GPUSORT_HD void load(unsigned thread, unsigned threads) {
    for (std::uint32_t base = 0; base < size; base += threads * batch) {
      K item[batch];
      for_batch(base, thread, threads, [&](int j, std::uint32_t x) {
        const int q = run_of(x);
        item[j] = runs.keys[q][begin[q] + (x - run_start[q])];
      });
      for_batch(base, thread, threads, [&](int j, std::uint32_t x) {
        shared.keys[0][x] = item[j];
        shared.from[0][x] = static_cast<std::uint16_t>(x);
      });
    }
  }

  GPUSORT_HD bool merged() const { return segments <= 1; }

  GPUSORT_HD void round(unsigned thread, std::uint32_t items) {
    const std::uint32_t x0 = thread * items;
    const std::uint32_t x1 = x0 + items < size ? x0 + items : size;
    const K* in = shared.keys[cur];
    for (int s = 0; s < segments; s += 2) {
      const std::uint32_t a = start[s], na = length[s];
      const std::uint32_t nb = s + 1 < segments ? length[s + 1] : 0;
      const std::uint32_t lo = x0 > a ? x0 : a, hi = x1 < a + na + nb ? x1 : a + na + nb;
      if (lo >= hi) continue;  // this thread's outputs are elsewhere
      const auto a_code = [&](std::uint64_t i) { return code(in[a + i]); };
      const auto b_code = [&](std::uint64_t j) { return code(in[a + na + j]); };
      mm::merge_chunk(a_code, na, b_code, nb, lo - a, hi - lo,
                      [&](std::uint64_t k, bool from_a, std::uint64_t index) {
                        const std::uint32_t source =
                            a + (from_a ? 0 : na) + static_cast<std::uint32_t>(index);
                        shared.keys[1 - cur][lo + k] = in[source];
                        shared.from[1 - cur][lo + k] = shared.from[cur][source];
                      });
    }
  }

  // After every thread's round: the pairs become the next round's segments.
  GPUSORT_HD void next_round() {
    for (int s = 0; s < segments; s += 2) {
      start[s / 2] = start[s];
      length[s / 2] = length[s] + (s + 1 < segments ? length[s + 1] : 0);
    }
    segments = (segments + 1) / 2;
    cur = 1 - cur;
  }

  // The keys out, and the values gathered through each key's tile index, a thread's batch of
  // values all loaded before any is stored.
  GPUSORT_HD void write(unsigned thread, unsigned threads, K* out_keys, V* out_values) const {
    for (std::uint32_t x = thread; x < size; x += threads) out_keys[x] = shared.keys[cur][x];
    if constexpr (pairs) {
      for (std::uint32_t base = 0; base < size; base += threads * batch) {
        V value[batch];
        for_batch(base, thread, threads, [&](int j, std::uint32_t x) {
          const std::uint32_t source = shared.from[cur][x];
          const int q = run_of(source);
          value[j] = runs.values[q][begin[q] + (source - run_start[q])];
        });
        for_batch(base, thread, threads,
                  [&](int j, std::uint32_t x) { out_values[x] = value[j]; });
      }
    }
  }
};

}  // namespace gpusort::detail::block
