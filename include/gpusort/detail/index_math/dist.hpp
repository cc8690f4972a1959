// Index math of the distributed sample sort (gpusort::dist), shared by the device code and
// the CPU tests.
//
// p ranks hold shards of n_r keys, N in all. Every rank sorts its shard, then takes a regular
// sample with one global stride w: the keys at local positions w-1, 2w-1, ... (c_r =
// floor(n_r / w) samples). The S = sum c_r samples of all ranks are gathered and sorted, and
// the samples of sorted rank q_j = floor(j S / p), j = 1 .. p-1, are the splitters. Rank r
// sends the keys of bucket j (from splitter j to splitter j+1) to rank j.
//
// Ties: keys are ordered by (key, rank, position after the local sort), a strict total order,
// so equal keys are spread over ranks like distinct ones and the bound holds for any input.
//
// Bound: if c samples of rank r lie below a splitter, then its keys at positions < c w are
// below it and the key at (c + 1) w - 1, if any, is not: between c w and c w + w - 1 of its
// keys are. Summed over the ranks, a splitter with q samples below it has between q w and
// q w + p (w - 1) keys below it, so bucket j holds at most
//   (q_{j+1} - q_j) w + p (w - 1)  <=  ceil(S / p) w + p (w - 1)     (q_0 = 0, q_p = S)
// keys, and with S <= N / w that is below N / p + (p + 1) w. With w = ceil(N / (p s)) for an
// oversampling of s samples per rank on average, no rank receives more than about
// N / p (1 + (p + 1) / s) keys: 0.5% above N / p for p = 4 and s = 1024.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpusort/detail/core/config.hpp"
#include "gpusort/detail/core/narrow_keys.hpp"
#include "gpusort/key_traits.hpp"
#include "gpusort/options.hpp"

namespace gpusort::detail::index_math::dist {

// The sample stride for N keys on p ranks with `oversampling` samples per rank on average.
GPUSORT_HD constexpr std::uint64_t sample_stride(std::uint64_t total, int ranks,
                                                 std::uint64_t oversampling) {
  const std::uint64_t per = static_cast<std::uint64_t>(ranks) * (oversampling ? oversampling : 1);
  const std::uint64_t w = (total + per - 1) / per;
  return w ? w : 1;
}

// Samples a shard of n keys contributes, and the local position of its i-th sample.
GPUSORT_HD constexpr std::uint64_t sample_count(std::uint64_t n, std::uint64_t stride) {
  return n / stride;
}
GPUSORT_HD constexpr std::uint64_t sample_position(std::uint64_t i, std::uint64_t stride) {
  return (i + 1) * stride - 1;
}

// Sorted rank (among S samples) of the splitter that starts bucket j, 0 < j < p.
GPUSORT_HD constexpr std::uint64_t splitter_rank(int j, std::uint64_t samples, int ranks) {
  return static_cast<std::uint64_t>(j) * samples / static_cast<std::uint64_t>(ranks);
}

// The most keys any rank can receive (the bound above, exact form).
GPUSORT_HD constexpr std::uint64_t max_bucket(std::uint64_t samples, std::uint64_t stride,
                                              int ranks) {
  const std::uint64_t p = static_cast<std::uint64_t>(ranks);
  return (samples + p - 1) / p * stride + p * (stride - 1);
}

// max_bucket where `total` keys are split evenly over the ranks (rank r holds keys
// [total r / p, total (r + 1) / p)), as the host-array spread splits them. A buffer freed
// before the receive buffers are made (the local sort's workspace, the spread's slice) is made
// at least this large, so that the memory pool reuses its memory for them; correctness never
// depends on it.
GPUSORT_HD constexpr std::uint64_t even_split_max_bucket(std::uint64_t total, int ranks,
                                                         std::uint64_t oversampling) {
  const std::uint64_t p = static_cast<std::uint64_t>(ranks);
  const std::uint64_t stride = sample_stride(total, ranks, oversampling);
  std::uint64_t samples = 0;
  for (std::uint64_t r = 0; r < p; ++r)
    samples += sample_count(total * (r + 1) / p - total * r / p, stride);
  return max_bucket(samples, stride, ranks);
}

// A key's place in the order a call asks for, as one unsigned integer: the library's total
// order (key_traits::ordered, every NaN the largest), NaNs moved to the bottom where they go
// first ascending or last descending, and complemented for descending. Splitters, bucket
// bounds and the merge all compare these, so they agree with the local sort.
template <class K>
struct order_code {
  using U = typename key_traits<K>::ordered_type;
  std::uint64_t flip = 0;  // all ones of U for descending
  bool nans_low = false;   // gpusort::nans_lowest(direction, nans)

  GPUSORT_HD constexpr order_code(order direction, nan_order nans)
      : flip(direction == order::descending ? static_cast<std::uint64_t>(static_cast<U>(~U{0}))
                                            : 0),
        nans_low(nans_lowest(direction, nans)) {}

  GPUSORT_HD GPUSORT_FORCEINLINE std::uint64_t operator()(K k) const {
    U u = key_traits<K>::ordered(k);
    // ordered() gives ~0 to NaNs alone; 0 is no number's (-inf's code is above it).
    if constexpr (std::is_floating_point_v<K>)
      if (nans_low && u == static_cast<U>(~U{0})) u = 0;
    return static_cast<std::uint64_t>(u) ^ flip;
  }
};

// Narrow keys (bool ... __nv_bfloat16): their code (narrow_keys.hpp), which places NaNs itself,
// complemented within its width for descending.
template <narrow_key K>
struct order_code<K> {
  using U = typename narrow_format<K>::bits_type;
  std::uint64_t flip = 0;
  bool nans_low = false;

  GPUSORT_HD constexpr order_code(order direction, nan_order nans)
      : flip(direction == order::descending ? static_cast<std::uint64_t>(static_cast<U>(~U{0}))
                                            : 0),
        nans_low(nans_lowest(direction, nans)) {}

  GPUSORT_HD GPUSORT_FORCEINLINE std::uint64_t operator()(K k) const {
    return static_cast<std::uint64_t>(narrow_code<K>(bit_cast<U>(k), nans_low)) ^ flip;
  }
};

// A splitter in the total order (key, rank, position). `key` is the key's order code (the
// library's order as an unsigned integer, NaNs placed as options::nans asks, complemented for
// a descending sort: order_code above), so splitters compare as plain integers.
struct splitter {
  std::uint64_t key;
  std::uint32_t rank;
  std::uint64_t pos;
};

GPUSORT_HD constexpr bool operator<(const splitter& a, const splitter& b) {
  if (a.key != b.key) return a.key < b.key;
  if (a.rank != b.rank) return a.rank < b.rank;
  return a.pos < b.pos;
}

// How many keys of rank `rank` come before splitter s, given the range [equal_begin,
// equal_end) of its sorted keys equal to s.key: all equal keys if the rank comes before the
// splitter's rank, none if after, and those before its position on its own rank.
GPUSORT_HD constexpr std::uint64_t keys_before(const splitter& s, std::uint32_t rank,
                                               std::uint64_t equal_begin,
                                               std::uint64_t equal_end) {
  if (rank < s.rank) return equal_end;
  if (rank > s.rank) return equal_begin;
  return s.pos < equal_begin ? equal_begin : (s.pos > equal_end ? equal_end : s.pos);
}

// Partition first (options::partition_first): the splitters come from samples of the
// unsorted shards, so that keys can leave before they are sorted. The samples then sit at
// pseudo-random positions (a 64-bit mix of the rank and the sample's number), so that no
// period in the input lines up with them; positions are the unsorted shard's, and the order
// (key, rank, position) is again strict. The balance then holds with high probability, not
// always: a rank's share is off N / p by about sqrt(p / S) of it for S samples in all (one
// standard deviation; 3% at 1,024 samples a rank).
GPUSORT_HD constexpr std::uint64_t random_sample_position(std::uint64_t i, std::uint32_t rank,
                                                          std::uint64_t n) {
  std::uint64_t x = i + (std::uint64_t{rank} << 40) + 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return (x ^ (x >> 31)) % n;
}

// The bucket of key x: the number of the `count` sorted splitters at or below it (a splitter
// is a key, and starts its bucket).
GPUSORT_HD constexpr std::uint32_t bucket_of(const splitter* splitters, std::uint32_t count,
                                             const splitter& x) {
  std::uint32_t lo = 0, hi = count;
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (x < splitters[mid]) hi = mid; else lo = mid + 1;
  }
  return lo;
}

// A splitter as the keys of one tile of rank `rank` meet it, the tile's first key at shard
// position `first`: its key's code, and the offset in the tile from which a key of equal code
// lies at or past it (ties go by rank, then position). Key x at offset L of the tile then
// lies below the splitter exactly when (code(x), L) < (key, from), lexicographically: one
// compare of codes (32 bits wide where the keys are) and one of 32-bit offsets, no 64-bit
// position a key. C: the codes' type.
template <class C>
struct tile_splitter {
  C key;
  std::uint32_t from;
};
template <class C>
GPUSORT_HD constexpr tile_splitter<C> seen_from_tile(const splitter& s, std::uint32_t rank,
                                                     std::uint64_t first) {
  // The first position of rank `rank` at or past s among keys equal to it.
  const std::uint64_t at = rank < s.rank ? ~std::uint64_t{0} : rank > s.rank ? 0 : s.pos;
  const std::uint64_t past = at <= first ? 0 : at - first;
  return {static_cast<C>(s.key),
          past > 0xffffffffu ? 0xffffffffu : static_cast<std::uint32_t>(past)};
}
// Without branches (the split's kernels are bound by their issue): a 32-bit code and its
// offset as one 64-bit number, wider codes by bitwise rather than short-circuit operators.
template <class C>
GPUSORT_HD GPUSORT_FORCEINLINE constexpr bool below(C code, std::uint32_t offset,
                                                    const tile_splitter<C>& s) {
  if constexpr (sizeof(C) <= 4)
    return (std::uint64_t{code} << 32 | offset) < (std::uint64_t{s.key} << 32 | s.from);
  else
    return (code < s.key) | ((code == s.key) & (offset < s.from));
}
// bucket_of over a tile's splitters: how many of the `count` sorted ones lie at or below the
// key of code `code` at offset `offset`.
template <class C>
GPUSORT_HD constexpr std::uint32_t bucket_in_tile(const tile_splitter<C>* splitters,
                                                  std::uint32_t count, C code,
                                                  std::uint32_t offset) {
  std::uint32_t lo = 0, hi = count;
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (below(code, offset, splitters[mid])) hi = mid; else lo = mid + 1;
  }
  return lo;
}

// The split by bucket (src/dist/split.cuh), in tiles of split_tile keys, one block of
// split_block threads each: every tile counts its keys of each bucket; one exclusive scan
// over the counts laid out bucket by bucket (split_slot) then gives where a tile's keys of a
// bucket start in the split; each tile ranks its keys by bucket, stably, and writes them
// there. Bucket numbers are 8-bit digits, the number `buckets` marking the last tile's
// places past n: at most 255 ranks.
inline constexpr int split_block = 256, split_items = 8;
inline constexpr std::uint64_t split_tile = std::uint64_t{split_block} * split_items;
inline constexpr int max_partition_ranks = 255;
// The sub-buckets each rank's range is cut into under partition_first (landing_plan), as
// options::sub_buckets asks (1 to max_sub_buckets; 0: 2, so that the second's exchange runs
// while the first sorts), fewer where p of them would pass the split's 8-bit digits.
inline constexpr int max_sub_buckets = 8;
GPUSORT_HD constexpr int partition_sub_buckets(int ranks, int asked = 0) {
  const int most = max_partition_ranks / ranks;
  const int want = asked > 0 ? asked : 2;
  return want < most ? want : (most > 0 ? most : 1);
}
// The digit width the scatter ranks a tile's keys by: the narrowest of 2, 4 and 8 bits that
// holds every bucket (the last tile's places past n, the tile's last places, rank last in
// its last digit). CUB's counters cost more a digit, its match ranking a round of the warp's
// votes a bit.
GPUSORT_HD constexpr int split_rank_bits(int buckets) {
  return buckets <= 4 ? 2 : buckets <= 16 ? 4 : 8;
}
GPUSORT_HD constexpr std::uint64_t split_tiles(std::uint64_t n) {
  return (n + split_tile - 1) / split_tile;
}
GPUSORT_HD constexpr std::uint64_t split_slot(std::uint32_t bucket, std::uint64_t tile,
                                              std::uint64_t tiles) {
  return bucket * tiles + tile;
}
// The bucket of the key at rank r of a tile ranked by bucket, given each bucket's first rank
// (starts[0 .. buckets - 1], non-decreasing, starts[0] = 0): the last bucket starting at or
// before r (empty buckets start where the next does).
GPUSORT_HD constexpr std::uint32_t bucket_holding(const std::uint32_t* starts,
                                                  std::uint32_t buckets, std::uint32_t r) {
  std::uint32_t lo = 0, hi = buckets;  // the first bucket starting after r
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (starts[mid] <= r) lo = mid + 1; else hi = mid;
  }
  return lo - 1;
}
// The same from b, the bucket of a lower rank (ranks a thread visits rise by the block's
// size): a step past each start r has reached; starts[buckets], the tile's count, lies above
// any rank in the tile and stops it.
GPUSORT_HD constexpr std::uint32_t bucket_holding_from(const std::uint32_t* starts,
                                                       std::uint32_t b, std::uint32_t r) {
  while (starts[b + 1] <= r) ++b;
  return b;
}

// NCCL copies at full speed only between 16-byte aligned addresses: a 1 GiB send between two
// H200s took 3.0 ms aligned and 4.6 ms with both ends 4 bytes off (2026-11-26). A bucket starts
// anywhere in a shard, so a transfer starts at the aligned address at or below it, taking a
// few leading elements of the bucket before (its lead), into a receive buffer laid out so that
// it lands aligned too; the lead is dropped there.
inline constexpr std::uint64_t transfer_alignment = 16;

// The lead of a transfer from byte address `address`: the elements between it and the aligned
// address at or below it; 0 where that lies below `floor` (the shard's first byte) or where
// the element size cannot reach an aligned address.
GPUSORT_HD constexpr std::uint64_t lead_elements(std::uint64_t address, std::uint64_t floor,
                                                 std::uint64_t element_bytes) {
  const std::uint64_t off = address % transfer_alignment;
  if (off % element_bytes != 0 || address - off < floor) return 0;
  return off / element_bytes;
}

// The elements of one transfer alignment (one, for elements as large as it).
GPUSORT_HD constexpr std::uint64_t elements_per_alignment(std::uint64_t element_bytes) {
  return element_bytes >= transfer_alignment ? 1 : transfer_alignment / element_bytes;
}

// Where a received run starts, at or after `free`, so that its transfer (`lead` elements
// earlier) starts aligned in a buffer that is: at most 16 bytes of padding besides the lead.
GPUSORT_HD constexpr std::uint64_t aligned_start(std::uint64_t free, std::uint64_t lead,
                                                 std::uint64_t element_bytes) {
  const std::uint64_t per = elements_per_alignment(element_bytes);
  return (free + per - 1) / per * per + lead;
}

// The most elements a receive buffer for `keys` received keys takes with its runs' leads and
// padding (aligned_start): under two alignments' worth of elements a run, one run a rank.
GPUSORT_HD constexpr std::uint64_t receive_buffer_elements(std::uint64_t keys, int ranks,
                                                           std::uint64_t element_bytes) {
  return keys + 2 * elements_per_alignment(element_bytes) * static_cast<std::uint64_t>(ranks);
}

// A run one rank takes part in its merge: from which rank, where its keys and values start in
// the receive buffers, its length, and the leads of their transfers. The rank's own run is
// not received (in_place): the merge reads it from the sorted shard.
struct received_run {
  int from;
  bool in_place;
  std::uint64_t key_at, value_at, length, key_lead, value_lead;
};

// Who sends what to whom, from every rank's bucket boundaries: bounds[q * (p + 1) + j] is the
// number of rank q's keys before splitter j (0 for j = 0, n_q for j = p). Rank `self` sends
// its keys [bound j, bound j+1) to rank j and receives rank q's bucket `self` as its q-th run
// (received_runs: in rank order, each placed for an aligned transfer).
class exchange_plan {
 public:
  exchange_plan(const std::vector<std::uint64_t>& bounds, int ranks, std::uint32_t self)
      : bounds_(bounds), p_(ranks), self_(static_cast<int>(self)) {}

  std::uint64_t send_offset(int to) const { return at(self_, to); }
  std::uint64_t send_count(int to) const { return at(self_, to + 1) - at(self_, to); }
  std::uint64_t recv_count(int from) const { return at(from, self_ + 1) - at(from, self_); }
  // Keys rank `to` receives in all.
  std::uint64_t received_by(int to) const {
    std::uint64_t sum = 0;
    for (int q = 0; q < p_; ++q) sum += at(q, to + 1) - at(q, to);
    return sum;
  }
  std::uint64_t received() const { return received_by(self_); }
  // Where rank `from`'s keys for this rank start in its shard.
  std::uint64_t source_offset(int from) const { return at(from, self_); }

  // The non-empty runs this rank merges, in rank order, the received ones laid out for aligned
  // transfers: key_bases[q] and value_bases[q] are the byte addresses of rank q's keys and
  // values, which its transfers' leads follow from (value_bytes 0 for keys alone).
  std::vector<received_run> received_runs(const std::vector<std::uint64_t>& key_bases,
                                          std::uint64_t key_bytes,
                                          const std::vector<std::uint64_t>& value_bases,
                                          std::uint64_t value_bytes) const {
    std::vector<received_run> runs;
    std::uint64_t key_free = 0, value_free = 0;
    for (int q = 0; q < p_; ++q) {
      const std::uint64_t length = recv_count(q);
      if (length == 0) continue;
      received_run run{q, q == self_, 0, 0, length, 0, 0};
      if (!run.in_place) {
        run.key_lead = lead_elements(key_bases[q] + source_offset(q) * key_bytes, key_bases[q],
                                     key_bytes);
        run.key_at = aligned_start(key_free, run.key_lead, key_bytes);
        key_free = run.key_at + length;
        if (value_bytes > 0) {
          run.value_lead = lead_elements(value_bases[q] + source_offset(q) * value_bytes,
                                         value_bases[q], value_bytes);
          run.value_at = aligned_start(value_free, run.value_lead, value_bytes);
          value_free = run.value_at + length;
        }
      }
      runs.push_back(run);
    }
    return runs;
  }

 private:
  std::uint64_t at(int rank, int j) const {
    return bounds_[static_cast<std::size_t>(rank) * (p_ + 1) + j];
  }
  std::vector<std::uint64_t> bounds_;
  int p_;
  int self_;
};

// Exchange first with no merge (docs/distributed.md, "The next design"): every rank splits its
// shard into p * c buckets, bucket q * c + j being its part of rank q's sub-bucket j. Rank q
// receives sub-bucket j from every rank into one region of its receive buffer, the parts
// contiguous and in rank order (a stable local sort then keeps ties in (rank, position)
// order), region after region; each region sorts in place once its parts are in, and the
// sorted regions are q's output. counts[s * p * c + b]: rank s's keys in bucket b.
class landing_plan {
 public:
  landing_plan(std::vector<std::uint64_t> counts, int ranks, int sub_buckets)
      : counts_(std::move(counts)), p_(ranks), c_(sub_buckets) {}

  int buckets() const { return p_ * c_; }
  int owner(int bucket) const { return bucket / c_; }
  std::uint64_t count(int rank, int bucket) const {
    return counts_[static_cast<std::size_t>(rank) * buckets() + bucket];
  }
  // Where sub-bucket j starts in rank q's receive buffer (j = c: the keys q receives in all).
  std::uint64_t region_start(int q, int j) const {
    std::uint64_t at = 0;
    for (int i = 0; i < j; ++i)
      for (int s = 0; s < p_; ++s) at += count(s, q * c_ + i);
    return at;
  }
  // Where rank s's part of rank q's sub-bucket j lands in q's receive buffer.
  std::uint64_t landing(int s, int q, int j) const {
    std::uint64_t at = region_start(q, j);
    for (int r = 0; r < s; ++r) at += count(r, q * c_ + j);
    return at;
  }
  // Where each of rank s's buckets starts in its split buffer (element_bytes each), then the
  // elements that buffer needs: a bucket for another rank starts at or after the one before,
  // at the first place with its landing's alignment (both buffers 16-byte aligned), so that its
  // transfer runs aligned at both ends; the rank's own buckets take no room there (the split
  // writes them straight to their landings).
  std::vector<std::uint64_t> split_starts(int s, std::uint64_t element_bytes) const {
    const std::uint64_t per = elements_per_alignment(element_bytes);
    std::vector<std::uint64_t> starts;
    std::uint64_t free = 0;
    for (int b = 0; b < buckets(); ++b) {
      if (owner(b) == s) {
        starts.push_back(free);
        continue;
      }
      const std::uint64_t want = landing(s, owner(b), b % c_) % per;
      const std::uint64_t at = free + (want + per - free % per) % per;
      starts.push_back(at);
      free = at + count(s, b);
    }
    starts.push_back(free);
    return starts;
  }

 private:
  std::vector<std::uint64_t> counts_;
  int p_, c_;
};

// What every rank must agree on before any key moves, packed in one word that the first
// collective gathers: the key type (kind and width), the value width, the order, the NaN
// placement, stability, the local algorithm and the oversampling. Ranks that disagree would
// exchange keys of different widths or merge in different orders; with the word they all
// throw instead.
enum class key_kind : std::uint8_t { unsigned_integer, signed_integer, floating };
struct call_signature {
  key_kind kind;
  std::uint8_t key_bytes;
  std::uint8_t value_bytes;  // 0: keys alone
  bool descending;
  bool nans_first;
  bool stable;
  std::uint8_t local_algo;
  std::uint64_t oversampling;
  bool partition_first = false;
  std::uint8_t sub_buckets = 0;  // under partition_first, the sub-buckets a rank (up to 15)
  bool copy_engines = false;
};
// The most samples per rank a call may ask for: its signature holds it whole.
inline constexpr std::uint64_t max_oversampling = std::uint64_t{1} << 24;
constexpr std::uint64_t pack(const call_signature& c) {
  const std::uint64_t over = c.oversampling & ((max_oversampling << 1) - 1);
  return std::uint64_t{static_cast<std::uint8_t>(c.kind)} | std::uint64_t{c.key_bytes} << 4 |
         std::uint64_t{c.value_bytes} << 12 | std::uint64_t{c.descending} << 20 |
         std::uint64_t{c.nans_first} << 21 | std::uint64_t{c.stable} << 22 |
         std::uint64_t{c.partition_first} << 23 | std::uint64_t{c.local_algo} << 24 | over << 32 |
         std::uint64_t{c.sub_buckets & 15u} << 57 | std::uint64_t{c.copy_engines} << 61;
}
// The first rank whose word differs from rank 0's, or -1.
inline int first_disagreeing(const std::vector<std::uint64_t>& words) {
  for (std::size_t q = 1; q < words.size(); ++q)
    if (words[q] != words[0]) return static_cast<int>(q);
  return -1;
}
// What differs between two packed signatures, for the message ("the key type, the order").
inline std::string signature_difference(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t d = a ^ b;
  std::string what;
  const auto add = [&](std::uint64_t mask, const char* name) {
    if (d & mask) what += (what.empty() ? "" : ", ") + std::string(name);
  };
  add(0xfffu, "the key type");
  add(0xffu << 12, "the value size");
  add(1u << 20, "the order");
  add(1u << 21, "the NaN placement");
  add(1u << 22, "stable");
  add(1u << 23, "partition_first");
  add(0xffu << 24, "the local algorithm");
  add(((max_oversampling << 1) - 1) << 32, "the oversampling");
  add(0xfull << 57, "sub_buckets");
  add(1ull << 61, "copy_engines");
  return what;
}

}  // namespace gpusort::detail::index_math::dist
