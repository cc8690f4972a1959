// Index math of the bitonic sorting network with Peters' virtual padding, and the
// multi-step schedule that groups its steps into passes over global memory.
//
// The network sorts N = 2^L slots, L = ceil(log2 n). Phase p (1..L) merges blocks of 2^p
// slots; its steps use partner bits p-1, p-2, ..., 0 (partner = i ^ 2^bit). The pair
// (i, partner) always puts the "smaller" key at the lower index when the block of 2^p slots
// holding i is ascending. Slots n..N-1 are virtual padding: keys larger than every real key.
// Peters' observation: if every block that holds both real and padded slots is ascending,
// padding never moves, so a comparator whose upper slot is >= n is simply skipped and the
// padded slots need not exist. Sibling blocks only need opposite directions, so the block
// holding slot i is ascending iff bit p of i equals bit p of n-1 (the boundary block's bit).
//
// Passes: a pass is a set of "windows" plus the run of consecutive network steps it
// performs inside each window; every step of the pass has its partner bit in the window.
// Two shapes (Capannini et al.'s Γ-partitions, specialised):
//  * a tile: 2^m consecutive slots (bits 0..m-1), held by one thread block in shared memory;
//  * a register group: the 2^g slots that differ in bits lo..lo+g-1, held by one thread.
//    Neighbouring threads take neighbouring slots, so every load is coalesced (lo >= m).
#pragma once

#include <cstdint>

#include "gpusort/detail/core/config.hpp"

namespace gpusort::detail::index_math {

using index_t = std::uint64_t;

// ceil(log2(n)) for n >= 1; 0 for n <= 1.
GPUSORT_HD constexpr int ceil_log2(index_t n) {
  int l = 0;
  while (l < 64 && (index_t{1} << l) < n) ++l;
  return l;
}

// Steps in phases 1..p together: 1 + 2 + ... + p.
GPUSORT_HD constexpr index_t steps_through_phase(int p) {
  return static_cast<index_t>(p) * static_cast<index_t>(p + 1) / 2;
}

// Position of step (phase, bit) in the network's order of steps (0-based).
GPUSORT_HD constexpr index_t step_index(int phase, int bit) {
  return steps_through_phase(phase - 1) + static_cast<index_t>(phase - 1 - bit);
}

struct step {
  int phase;  // 1..L
  int bit;    // 0..phase-1, partner = slot ^ (1 << bit)
};

// Inverse of step_index.
GPUSORT_HD constexpr step step_at(index_t s) {
  int p = 1;
  while (steps_through_phase(p) <= s) ++p;
  const int within = static_cast<int>(s - steps_through_phase(p - 1));
  return step{p, p - 1 - within};
}

// Does the comparator at slot i of step (phase, bit) order ascending? `descending`
// flips the whole network (a sort by the reversed comparator).
GPUSORT_HD constexpr bool ascending(index_t i, int phase, index_t n, bool descending = false) {
  const bool same = ((i >> phase) & 1u) == (((n - 1) >> phase) & 1u);
  return same != descending;
}

// The comparator between `lower` and `lower ^ 2^bit` (lower has that bit clear) exists only
// when both slots are real keys: the upper slot is the larger index.
GPUSORT_HD constexpr bool comparator_active(index_t lower, int bit, index_t n) {
  return (lower | (index_t{1} << bit)) < n;
}

// A window: 2^(low_bits + group_bits) slots, local index l maps to a global slot by keeping
// its low_bits lowest bits in place, moving the next group_bits to bits group_lo.., and
// filling the remaining global bits with the window's number.
struct window {
  int low_bits;    // c: bits 0..c-1 kept in place
  int group_lo;    // first global bit of the group (>= low_bits)
  int group_bits;  // g
  GPUSORT_HD constexpr int local_bits() const { return low_bits + group_bits; }
  GPUSORT_HD constexpr bool contiguous() const { return group_lo == low_bits; }

  // Global slot of local index l in window w.
  GPUSORT_HD constexpr index_t slot(index_t w, index_t l) const {
    const index_t low_mask = (index_t{1} << low_bits) - 1;
    const index_t group = l >> low_bits;
    const int gap = group_lo - low_bits;  // global bits between the low run and the group
    const index_t w_mid = w & ((index_t{1} << gap) - 1);
    const index_t w_high = w >> gap;
    return (w_high << (group_lo + group_bits)) | (group << group_lo) | (w_mid << low_bits) |
           (l & low_mask);
  }
  // Global slot of local index l relative to the window's first slot: slot(w, l) is
  // slot(w, 0) | offset(l), since the mapping only moves bits.
  GPUSORT_HD constexpr index_t offset(index_t l) const {
    const index_t low_mask = (index_t{1} << low_bits) - 1;
    return ((l >> low_bits) << group_lo) | (l & low_mask);
  }
  // Local bit that holds global bit b (b must be in the window).
  GPUSORT_HD constexpr int local_bit(int b) const {
    return b < low_bits ? b : low_bits + (b - group_lo);
  }
  GPUSORT_HD constexpr bool holds_bit(int b) const {
    return b < low_bits || (b >= group_lo && b < group_lo + group_bits);
  }
  // Windows needed so that every slot below n is covered (some may hold no real slot).
  GPUSORT_HD constexpr index_t count(index_t n) const {
    if (n == 0) return 0;
    const int high = group_lo + group_bits;
    const index_t highs = ((n - 1) >> high) + 1;
    return highs << (group_lo - low_bits);
  }
};

// One pass over global memory: a window shape and the steps [first_step, end_step).
struct pass {
  window win;
  index_t first_step;
  index_t end_step;
};

// Tunables of the schedule: tile_bits = log2 of the slots one block holds (m);
// register_bits = the most long-distance steps one thread runs per pass (g).
struct schedule_shape {
  int tile_bits;
  int register_bits;
};

// Calls f(pass) for every pass of the schedule sorting n keys, in order. Returns the count.
//   1. a tile pass: every tile of 2^m slots runs phases 1..m;
//   2. for each later phase p: its steps with bits >= m, at most g per pass from the top, in
//      register groups; then one tile pass for the phase's last m steps (bits m-1..0).
template <class F>
GPUSORT_HD constexpr int for_each_pass(index_t n, schedule_shape shape, F&& f) {
  if (n < 2) return 0;
  const int L = ceil_log2(n);
  const int m = shape.tile_bits < L ? shape.tile_bits : L;
  const int max_group = shape.register_bits > 0 ? shape.register_bits : 1;
  int passes = 0;
  f(pass{window{m, m, 0}, 0, steps_through_phase(m)});
  ++passes;
  for (int p = m + 1; p <= L; ++p) {
    int hi = p - 1;  // highest bit not yet done in this phase
    while (hi >= m) {
      const int span = hi - m + 1;
      const int g = span < max_group ? span : max_group;
      const int lo = hi - g + 1;
      f(pass{window{0, lo, g}, step_index(p, hi), step_index(p, lo) + 1});
      ++passes;
      hi = lo - 1;
    }
    f(pass{window{m, m, 0}, step_index(p, m - 1), step_index(p, 0) + 1});
    ++passes;
  }
  return passes;
}

// Steps [first, end) executed inside one window, in groups of up to `group` consecutive
// steps of one phase whose bits are consecutive local bits: a thread then holds the
// 2^k slots that differ in those k bits and runs the k steps in registers.
struct step_group {
  int phase;
  int top_local_bit;  // the group's steps use local bits top, top-1, ..., top-count+1
  int count;
};

template <class F>
GPUSORT_HD constexpr void for_each_step_group(const pass& ps, int group, F&& f) {
  index_t s = ps.first_step;
  while (s < ps.end_step) {
    const step first = step_at(s);
    int count = 1;
    while (count < group && s + count < ps.end_step) {
      const step next = step_at(s + count);
      if (next.phase != first.phase) break;
      // steps within a phase and window have consecutive decreasing local bits unless the
      // window splits them (the jump from group_lo down to the low run)
      if (ps.win.local_bit(next.bit) != ps.win.local_bit(first.bit) - count) break;
      ++count;
    }
    f(step_group{first.phase, ps.win.local_bit(first.bit), count});
    s += count;
  }
}

// Local index of the r-th slot (r < 2^count) of the q-th register set of a group whose bits
// are top-count+1..top: q's bits fill the other local bits from low to high.
GPUSORT_HD constexpr index_t group_member(index_t q, int lowest_bit, int count, index_t r) {
  const index_t below = q & ((index_t{1} << lowest_bit) - 1);
  const index_t above = q >> lowest_bit;
  return (above << (lowest_bit + count)) | (r << lowest_bit) | below;
}

// ---- a tile in shared memory (block/bitonic_tile.cuh) ------------------------------------
// Spare slots after every 32 of a tile: one 4-byte word for keys of 1 or 2 bytes alone (4 or
// 2 keys), else one slot (keys beside values share their index, and the values pad by one).
// A full round of a digit's steps has a warp's 32 threads reach 32 slots 2^(5k) apart, and a
// load 32 consecutive ones; with this padding either falls in 32 different banks (one slot
// after 32 keys of 2 bytes would shift the next 32 by half a bank: two ways of conflict in
// the lowest digit's rounds). Test: Network.TilePaddingSpreadsAWarpsSlotsOverTheBanks.
GPUSORT_HD constexpr unsigned tile_pad(unsigned key_bytes, bool with_values) {
  return key_bytes < 4 && !with_values ? 4 / key_bytes : 1;
}
// Shared-memory index of tile slot l. For x whose bits are disjoint from l's,
// tile_index<P>(l | x) == tile_index<P>(l) + tile_index<P>(x): member offsets are constants.
template <unsigned PAD>
GPUSORT_HD constexpr unsigned tile_index(unsigned l) {
  return l + (l >> 5) * PAD;
}

}  // namespace gpusort::detail::index_math
