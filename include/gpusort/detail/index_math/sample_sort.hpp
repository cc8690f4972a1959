// Index math of the sample sort (Dehne & Zaboli's GPU Bucket Sort; Leischner et al.'s
// randomized twin), shared by the device and CPU backends and tested on the CPU.
//
// A level splits each of its problems (contiguous ranges of at most `cap` keys) into s
// buckets: tiles of M keys are sorted, every tile yields one sample per `stride` = M / s keys,
// the samples of a problem are sorted, every (S/s)-th becomes a splitter, and the keys move to
// their bucket. The buckets of one level are the problems of the next; the last level's
// buckets (at most `final_cap` keys) are sorted by one block each.
//
// Ties: keys are ordered by (key, position after the tile sort), a strict total order, so
// equal keys spread over buckets like distinct ones and the bound below holds for any input.
//
// Bound (regular sampling): a tile's keys in one bucket form a run with c samples of the
// tile in it, so at most (c + 1) * stride - 1 keys. Summed over the T tiles of a problem and
// with at most ceil(S / s) samples per bucket:
//   bucket <= (ceil(S / s) + T) * stride - T,   S = floor(size / stride), T = ceil(size / M),
// which is 2 * size / s when M divides size and s divides S, and below 2 * size / s + 2 * stride
// always.
#pragma once

#include <cstdint>

#include "gpusort/detail/core/config.hpp"
#include "gpusort/detail/index_math/bitonic.hpp"

namespace gpusort::detail::index_math {

// comp with its arguments swapped: the descending order.
template <class Compare>
struct reversed {
  Compare comp;
  template <class K>
  GPUSORT_HD GPUSORT_FORCEINLINE bool operator()(const K& a, const K& b) const { return comp(b, a); }
};

// One sample: a key, its position after the tile sort (randomized sampling: in the level's
// array), and its problem. Samples of all problems are sorted together by (problem, key,
// position); `tag` is 2 * problem, plus 1 for an unused slot, which sorts after its
// problem's samples.
template <class K>
struct sample {
  index_t pos;
  K key;
  std::uint32_t tag;
};

template <class Compare>
struct sample_less {
  Compare comp;
  template <class K>
  GPUSORT_HD GPUSORT_FORCEINLINE bool operator()(const sample<K>& a, const sample<K>& b) const {
    if (a.tag != b.tag) return a.tag < b.tag;
    if (comp(a.key, b.key)) return true;
    if (comp(b.key, a.key)) return false;
    return a.pos < b.pos;
  }
};

// A comparator with its direction chosen at run time, so one instantiation serves both.
template <class Compare>
struct directed {
  Compare comp;
  bool descending;
  template <class K>
  GPUSORT_HD GPUSORT_FORCEINLINE bool operator()(const K& a, const K& b) const {
    return descending ? comp(b, a) : comp(a, b);
  }
};

// The problems of a level: problem p is [begin(p), end(p)). The first level has one, [0, n);
// later ones read their bounds from the previous level's scanned bucket counts, every
// `stride`-th entry.
struct problem_list {
  const index_t* offsets = nullptr;
  index_t stride = 1;
  index_t count = 1;
  index_t n = 0;
  GPUSORT_HD constexpr index_t begin(index_t p) const { return offsets ? offsets[p * stride] : 0; }
  GPUSORT_HD constexpr index_t end(index_t p) const {
    return p + 1 < count ? offsets[(p + 1) * stride] : n;
  }
};

// Final bucket q's place in the keys, [begin, end): mirrored where a descending sort's last
// scatter wrote position i to n - 1 - i.
struct key_range {
  index_t begin, end;
};
GPUSORT_HD constexpr key_range final_bucket_range(const problem_list& buckets, index_t q,
                                                  bool mirror) {
  const index_t b = buckets.begin(q), e = buckets.end(q);
  return mirror ? key_range{buckets.n - e, buckets.n - b} : key_range{b, e};
}

// Who sorts a final bucket of records (tiles merge-sorted by one block): that block where it
// fits a tile; a block of twice the items a thread where it fits `twice_tile` (randomized
// sampling's buckets overflow now and then; the tile itself where twice would not fit shared
// memory); the segmented sort beyond, whose long class sorts it through the whole bitonic
// network in one block (1.3 ms for 32-byte records, docs/sample_sort.md).
enum class bucket_sorter { tile, twice_tile, segmented };
GPUSORT_HD constexpr bucket_sorter records_bucket_sorter(index_t size, index_t tile,
                                                         index_t twice_tile) {
  return size <= tile         ? bucket_sorter::tile
         : size <= twice_tile ? bucket_sorter::twice_tile
                              : bucket_sorter::segmented;
}

// Run r's bound of final bucket q, relative to the bucket's first position (r = 0 ..
// slots): the bucket is the last level's share of each of its `slots` tile slots, slot t
// starting at buckets.offsets[q * slots + t]. Mirrored (a descending sort's last scatter
// writes position i to n - 1 - i) the slots' runs lie reversed, in reverse order: run r is
// slot slots - 1 - r.
GPUSORT_HD constexpr index_t final_bucket_run_bound(const problem_list& buckets, index_t q,
                                                    index_t r, bool mirror) {
  const index_t slots = buckets.stride, b = buckets.begin(q), e = buckets.end(q);
  const index_t t = mirror ? slots - r : r;
  const index_t start = t == slots ? e : buckets.offsets[q * slots + t];
  return mirror ? e - start : start - b;
}

struct sample_level {
  index_t problems;    // ranges split by this level
  index_t cap;         // keys in the largest one (a bound, for randomized sampling a target)
  int tile_bits;       // M = 2^tile_bits
  int bucket_bits;     // s = 2^bucket_bits buckets per problem
  // A full tile gives s / 2^thinning samples: 0 for regular sampling (its bound needs s);
  // randomized sampling thins them where a problem has many tiles, and takes more (thinning
  // below 0) where it has few (thin_random_samples).
  int thinning = 0;
  // Randomized sampling on the GPU: at most this many of a problem's samples are sorted and
  // give its splitters (one block sorts them), an even subset where it has more (kept_sample);
  // 0: all of them.
  index_t sorted_cap = 0;

  GPUSORT_HD constexpr index_t tile() const { return index_t{1} << tile_bits; }
  GPUSORT_HD constexpr index_t buckets() const { return index_t{1} << bucket_bits; }
  GPUSORT_HD constexpr index_t tile_samples() const { return index_t{1} << (bucket_bits - thinning); }
  GPUSORT_HD constexpr index_t stride() const {
    return index_t{1} << (tile_bits - bucket_bits + thinning);
  }
  // Tiles of one problem: blocks per problem, and the rows of the bucket-count matrix.
  GPUSORT_HD constexpr index_t tiles() const { return cap == 0 ? 1 : (cap + tile() - 1) / tile(); }
  // The samples of all problems lie in one array of n / stride slots: problem [b, e) has
  // floor((e - b) / stride) samples from slot b / stride on (sample k of a problem: tile
  // k / tile_samples, number k % tile_samples), so problems never overlap; the slot a
  // rounding leaves between two problems is unused.
  GPUSORT_HD constexpr index_t sample_slots(index_t n) const { return n / stride(); }
  GPUSORT_HD constexpr index_t first_sample(index_t begin) const { return begin / stride(); }
  GPUSORT_HD constexpr index_t samples(index_t size) const { return size / stride(); }
  // The samples whose sorted order gives a problem of `size` keys its splitters.
  GPUSORT_HD constexpr index_t sorted_samples(index_t size) const {
    const index_t S = samples(size);
    return sorted_cap != 0 && S > sorted_cap ? sorted_cap : S;
  }
  // Entries of the bucket-count matrix: bucket-major within a problem, one column per tile.
  GPUSORT_HD constexpr index_t counts() const { return problems * buckets() * tiles(); }
  GPUSORT_HD constexpr index_t count_index(index_t problem, index_t bucket, index_t tile) const {
    return (problem * buckets() + bucket) * tiles() + tile;
  }
  // Rank among a problem's S sorted samples of splitter j (1 <= j < s); splitter j is
  // infinite (above every key) when the rank is S.
  GPUSORT_HD constexpr index_t splitter_rank(index_t j, index_t sample_count) const {
    return (j * sample_count + buckets() - 1) >> bucket_bits;
  }
  // How many splitters j = 1..s-1 are finite (splitter_rank(j, S) < S): s - ceil(s / S).
  GPUSORT_HD constexpr index_t finite_splitters(index_t sample_count) const {
    if (sample_count == 0) return 0;
    return buckets() - (buckets() + sample_count - 1) / sample_count;
  }
  // The largest bucket a problem of `size` keys can produce under regular sampling (see the
  // header comment).
  GPUSORT_HD constexpr index_t bucket_bound(index_t size) const {
    if (size == 0) return 0;
    const index_t S = size / stride();
    const index_t T = (size + tile() - 1) / tile();
    const index_t per_bucket = (S + buckets() - 1) >> bucket_bits;
    const index_t bound = (per_bucket + T) * stride() - T;
    return bound < size ? bound : size;
  }
};

// options::buckets as a power of two's exponent: 0 for the default (0), -1 if it is not one
// of 2..1024.
GPUSORT_HD constexpr int bucket_bits_of(unsigned buckets) {
  if (buckets == 0) return 0;
  for (int b = 1; b <= 10; ++b)
    if (buckets == (1u << b)) return b;
  return -1;
}

// Deterministic sample position: the last key of each stride.
GPUSORT_HD constexpr unsigned regular_sample(unsigned i, unsigned stride) {
  return (i + 1) * stride - 1;
}

// Randomized sample position in a tile of `length` keys: a hash of the tile and sample
// number (splitmix64), so runs are repeatable and need no random state.
GPUSORT_HD constexpr unsigned random_sample(index_t tile, unsigned i, unsigned length,
                                            index_t seed) {
  index_t z = seed + tile * 0x9E3779B97F4A7C15ull + (index_t{i} << 32) + i;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<unsigned>(z % length);
}

// Which of a problem's S samples is the j-th of the `kept` (<= S) it sorts: spread evenly over
// all of them, so over all of its tiles (a problem's samples lie tile by tile); every one
// where kept == S.
GPUSORT_HD constexpr index_t kept_sample(index_t j, index_t S, index_t kept) {
  return kept == S ? j : j * S / kept;
}

// Randomized sampling on the GPU: how a level's samples are sorted, as its sorted_cap. A level
// of few problems (the first level's one) has all its samples sorted by CUB's device merge sort
// (0), which spreads them over the whole GPU, since one block sorting them alone takes longer
// (measured on the H200: 2^24 u32 went from 0.91 to 1.04 ms); a level of many problems has
// each problem's sorted by one block: `small_cap` samples in the small block where the plan's
// problems have no more, else `large_cap` (an even subset where a problem has more).
inline constexpr index_t block_sorted_min_problems = 64;
GPUSORT_HD constexpr index_t block_sorted_cap(const sample_level& lv, index_t small_cap,
                                              index_t large_cap) {
  if (lv.problems < block_sorted_min_problems) return 0;
  return lv.samples(lv.cap) <= small_cap ? small_cap : large_cap;
}

// Randomized sampling classifies instead (Leischner et al.'s sample sort): tiles are not
// sorted, a key's position is its place in the level's array, and the key at position `pos`
// goes to bucket b = the number of the problem's splitters j = 1..s-1 at or below (key, pos)
// in the (key, position) order (a splitter opens its bucket).

// Whether splitter (g, q) lies above the key at position pos.
template <class K, class Compare>
GPUSORT_HD GPUSORT_FORCEINLINE constexpr bool splitter_above(const K& key, index_t pos, const K& g,
                                                             index_t q, Compare comp) {
  return comp(key, g) || (!comp(g, key) && pos < q);
}

// The splitters as an implicit search tree (Eytzinger order): node 1 holds splitter s/2 and
// node v's children are 2v and 2v + 1, so the nodes of depth d are 2^d neighbours. A warp
// searching a table in this order reads neighbouring words at every depth; in sorted order the
// reads of a depth lie s / 2^(d+1) entries apart, in one shared-memory bank for s >= 64.
// The splitter (1..s-1) at node v of depth d (2^d <= v < 2^(d+1)) of the tree of s = 2^bits.
GPUSORT_HD constexpr unsigned tree_splitter(unsigned node, unsigned depth, unsigned bits) {
  return (2 * (node - (1u << depth)) + 1) << (bits - depth - 1);
}

// The depth of node v of the tree: floor(log2(v)).
GPUSORT_HD constexpr unsigned tree_depth(unsigned node) {
  unsigned d = 0;
  while (node >>= 1) ++d;
  return d;
}

// The splitter (1..finite) whose sample tree node v (depth d) holds for classify: its own, or
// for a splitter above every key (j > finite) a copy of splitter `finite`, so that the
// entries in sorted order never decrease and the descent needs no test for the missing ones.
GPUSORT_HD constexpr unsigned tree_entry(unsigned node, unsigned depth, unsigned bits,
                                         unsigned finite) {
  const unsigned j = tree_splitter(node, depth, bits);
  return j < finite ? j : finite;
}

// The rank, among a problem's S sorted samples, of the sample tree node v (depth d) of level
// lv holds (finite = lv.finite_splitters(S) >= 1).
GPUSORT_HD constexpr index_t tree_sample_rank(const sample_level& lv, unsigned node,
                                              unsigned depth, index_t sample_count,
                                              unsigned finite) {
  const auto bits = static_cast<unsigned>(lv.bucket_bits);
  return lv.splitter_rank(tree_entry(node, depth, bits, finite), sample_count);
}

// The bucket of a key among s = 2^bits buckets whose splitters 1..finite are finite (the rest
// above every key): the number of those at or below the key. `above(node, depth)` says
// whether the sample of tree_entry(node, depth, bits, finite) lies above the key. The descent
// counts the tree's entries at or below the key: all s - 1 exactly when splitter `finite` is
// (then its copies are too), so the count clamped to `finite` is the bucket. Up to MAX_BITS
// steps, unrolled.
template <unsigned MAX_BITS = 10, class Above>
GPUSORT_HD GPUSORT_FORCEINLINE constexpr unsigned classify(unsigned bits, unsigned finite,
                                                           Above above) {
  if (finite == 0) return 0;
  unsigned node = 1;
#pragma unroll
  for (unsigned d = 0; d < MAX_BITS; ++d)
    if (d < bits) node = 2 * node + (above(node, d) ? 0u : 1u);
  const unsigned b = node - (1u << bits);
  return b < finite ? b : finite;
}

// A step of the descent by key alone: the child of `node` (whose splitter's key is g) the key
// goes to, `tie` set if g is the key's own, when only the positions could decide. A descent
// without a tie ends where classify's does (it takes the same turns); one with a tie is
// classified again by key and position.
template <class K, class Compare>
GPUSORT_HD GPUSORT_FORCEINLINE constexpr unsigned descend_by_key(unsigned node, const K& key,
                                                                 const K& g, bool& tie,
                                                                 Compare comp) {
  const bool above = comp(key, g);
  tie |= !above & !comp(g, key);
  return 2 * node + (above ? 0u : 1u);
}

// How many of a tile's keys fall below splitter (key g, position q), given lower_bound and
// upper_bound of g in the sorted tile [start, start + length): equal keys order by position.
GPUSORT_HD constexpr index_t below_splitter(index_t lower, index_t upper, index_t start,
                                            index_t length, index_t q) {
  if (q < start) return lower;
  if (q >= start + length) return upper;
  return q - start;
}

// The levels of a sample sort of n keys: each level's s is the smallest power of two (up to
// 2^finish_bits) whose bound takes the problems down to final_cap, else 2^max_bucket_bits.
// At most max_levels.
struct sample_plan {
  static constexpr int max_levels = 6;
  sample_level levels[max_levels] = {};
  int count = 0;
  index_t final_problems = 1;
  index_t final_cap = 0;  // bound on the keys of one final bucket
};

GPUSORT_HD constexpr sample_plan plan_sample_sort(index_t n, int tile_bits, index_t final_cap,
                                                  int max_bucket_bits, int finish_bits = 0) {
  sample_plan plan;
  index_t problems = 1, cap = n;
  if (max_bucket_bits > tile_bits) max_bucket_bits = tile_bits;
  if (finish_bits < max_bucket_bits) finish_bits = max_bucket_bits;
  if (finish_bits > tile_bits) finish_bits = tile_bits;
  while (cap > final_cap && plan.count < sample_plan::max_levels) {
    sample_level lv{problems, cap, tile_bits, 1};
    while (lv.bucket_bits < finish_bits && lv.bucket_bound(cap) > final_cap) ++lv.bucket_bits;
    if (lv.bucket_bound(cap) > final_cap) lv.bucket_bits = max_bucket_bits;
    const index_t next = lv.bucket_bound(cap);
    if (next >= cap) break;  // no progress: the final sort takes it as it is
    plan.levels[plan.count++] = lv;
    problems *= lv.buckets();
    cap = next;
  }
  plan.final_problems = problems;
  plan.final_cap = cap;
  return plan;
}

// Randomized sampling needs no sample of every tile for every bucket: with a samples a
// bucket, a bucket of c times the mean size has odds about exp(-a (c - 1 - ln c)): at a = 32,
// 3e-13 for c = 3 (a last level's mean is a quarter of a final bucket's bound or less), 6e-5
// for c = 2 (a level's planned cap); the samples' sort shrinks with a.
inline constexpr index_t random_samples_per_bucket = 32;

// Randomized sampling has no bound to plan by: its buckets come out near their mean (odds
// above), so its levels are planned by the mean. The fewest levels, each of at most
// 2^max_bucket_bits buckets, whose final buckets average at most final_cap / headroom
// (rounded up to a power of two), the bucket bits spread evenly over the levels (the first
// ones take the spare bits). A later level's cap (the planned size of its problems, which
// sets a problem's blocks) is the mean plus an eighth; the plan's final_cap is the final
// buckets' mean. Headroom 4 leaves keys' final buckets where the segmented sort has classes
// below its largest; records' final buckets are each sorted as a whole tile, so theirs is 2.
GPUSORT_HD constexpr sample_plan plan_random_sample_sort(index_t n, int tile_bits, index_t final_cap,
                                                         int max_bucket_bits, index_t headroom) {
  sample_plan plan;
  plan.final_cap = n;
  if (n <= final_cap) return plan;
  if (max_bucket_bits > tile_bits) max_bucket_bits = tile_bits;
  index_t target = 1;
  while (target * headroom < final_cap) target *= 2;
  int bits = 0;
  while ((n >> bits) > target) ++bits;
  int levels = (bits + max_bucket_bits - 1) / max_bucket_bits;
  if (levels > sample_plan::max_levels) {
    levels = sample_plan::max_levels;
    bits = levels * max_bucket_bits;
  }
  index_t problems = 1, mean = n;
  for (int l = 0; l < levels; ++l) {
    const int level_bits = (bits + (levels - l) - 1) / (levels - l);
    bits -= level_bits;
    const index_t cap = l == 0 ? n : mean + mean / 8;
    plan.levels[plan.count++] = sample_level{problems, cap, tile_bits, level_bits};
    problems <<= level_bits;
    mean = (mean + (index_t{1} << level_bits) - 1) >> level_bits;
  }
  plan.final_problems = problems;
  plan.final_cap = mean;
  return plan;
}

// Sets every level's samples for random_samples_per_bucket a bucket from its problem's planned
// tiles: a problem of many tiles thins them (a full tile keeps at least one); one of fewer
// tiles than that takes several a bucket from each tile, down to one every 2^min_stride_bits
// keys (the default: never more than one a bucket and tile). Few samples a bucket leave
// buckets far above their mean: at 9 a bucket (32-byte records, 2^18 of them: 9 tiles a
// problem on the last level), by the odds above, about one bucket in 16 comes out above twice
// the mean, which for records is more than a tile, left to the segmented sort.
GPUSORT_HD constexpr sample_plan thin_random_samples(sample_plan plan, int min_stride_bits = 64) {
  for (int l = 0; l < plan.count; ++l) {
    sample_level& lv = plan.levels[l];
    while (lv.thinning < lv.bucket_bits &&
           (lv.tiles() >> (lv.thinning + 1)) >= random_samples_per_bucket)
      ++lv.thinning;
    const int densest = min_stride_bits - (lv.tile_bits - lv.bucket_bits);  // stride's floor
    while (lv.thinning <= 0 && lv.thinning > densest &&
           (lv.tiles() << -lv.thinning) < random_samples_per_bucket)
      --lv.thinning;
  }
  return plan;
}

}  // namespace gpusort::detail::index_math
