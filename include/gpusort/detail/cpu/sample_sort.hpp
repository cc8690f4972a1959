// The sample sort on host threads: the device algorithm's levels (index_math/sample_sort.hpp)
// step by step, tiles and problems spread over the threads. Regular sampling sorts the tiles
// and locates the splitters in them; randomized sampling classifies every key instead
// (index_math::classify). It is the CPU backend, and it reports every level's largest bucket,
// so the bound is tested where CI runs.
#pragma once

#include <algorithm>
#include <numeric>
#include <vector>

#include "gpusort/detail/cpu/bitonic.hpp"
#include "gpusort/detail/index_math/merge_runs.hpp"
#include "gpusort/detail/index_math/sample_sort.hpp"
#include "gpusort/detail/core/types.hpp"

namespace gpusort::detail::cpu {

using index_math::sample;
using index_math::sample_less;

struct sample_sort_config {
  int tile_bits = 14;            // M
  index_t final_cap = 1 << 13;   // final buckets' bound
  int max_bucket_bits = 8;       // s at most 2^this
  int finish_bucket_bits = 10;   // or up to 2^this when that makes a level the last
  bool random = false;           // sampling::random
  int min_stride_bits = 64;      // its densest samples (index_math::thin_random_samples)
  index_t seed = 0x5EED;
};

// What a run did: the plan, and the largest bucket each level produced.
struct sample_sort_report {
  index_math::sample_plan plan;
  index_t largest_bucket[index_math::sample_plan::max_levels] = {};
};

// Merges the sorted runs [runs[r], runs[r + 1]) of keys (and values) into one, in rounds of
// pairwise merges (index_math/merge_runs.hpp, one worker): log2(runs) passes. runs[0] is 0.
template <class K, class V, class Compare>
void merge_sorted_runs(K* keys, V* values, std::vector<index_t> runs, Compare comp) {
  constexpr bool has_values = !std::is_same_v<V, no_value>;
  const index_t n = runs.back();
  std::vector<K> merged_keys(n);
  std::vector<V> merged_values(has_values ? n : 0);
  for (auto count = static_cast<index_t>(runs.size() - 1); count > 1;
       count = index_math::next_merge_round(runs.data(), count)) {
    index_math::merge_round_part(
        runs.data(), count, 0, n, [&](index_t i) -> const K& { return keys[i]; },
        [&](index_t from, index_t to) {
          merged_keys[to] = keys[from];
          if constexpr (has_values) merged_values[to] = values[from];
        },
        comp);
    std::copy(merged_keys.begin(), merged_keys.end(), keys);
    if constexpr (has_values) std::copy(merged_values.begin(), merged_values.end(), values);
  }
}

template <class K, class V, class Compare>
void sample_sort(K* keys, V* values, index_t n, Compare comp, const sample_sort_config& cfg,
                 sample_sort_report* report = nullptr) {
  constexpr bool has_values = !std::is_same_v<V, no_value>;
  // Randomized sampling plans by the buckets' mean (as the GPU's does), regular by its bound.
  index_math::sample_plan plan =
      cfg.random ? index_math::thin_random_samples(index_math::plan_random_sample_sort(
                                                    n, cfg.tile_bits, cfg.final_cap,
                                                    cfg.finish_bucket_bits, 4),
                                                cfg.min_stride_bits)
                 : index_math::plan_sample_sort(n, cfg.tile_bits, cfg.final_cap, cfg.max_bucket_bits,
                                             cfg.finish_bucket_bits);
  if (report) *report = {plan, {}};
  std::vector<K> buffer_keys(plan.count ? n : 0);
  std::vector<V> buffer_values(has_values && plan.count ? n : 0);
  std::vector<index_t> begins{0, n};  // problem p is [begins[p], begins[p + 1])
  std::vector<index_t> run_starts;     // the last level's: bucket q's run of tile slot t
  index_t runs_per_bucket = 0;         // at run_starts[q * runs_per_bucket + t]
  for (int level = 0; level < plan.count; ++level) {
    const index_math::sample_level& lv = plan.levels[level];
    const index_t M = lv.tile(), T = lv.tiles(), s = lv.buckets();
    const auto stride = static_cast<unsigned>(lv.stride());
    std::vector<sample<K>> samples(lv.sample_slots(n));
    // Every tile into the buffer (regular sampling: sorted; randomized: as it is, to be
    // classified), with its samples.
    parallel_for(lv.problems * T, 0, [&](index_t job) {
      const index_t p = job / T, t = job % T, size = begins[p + 1] - begins[p];
      for (index_t tile = t; tile * M < size; tile += T) {
        const index_t start = begins[p] + tile * M;
        const auto length = static_cast<unsigned>(std::min(M, size - tile * M));
        if (cfg.random) {
          std::copy(keys + start, keys + start + length, buffer_keys.begin() + start);
          if constexpr (has_values)
            std::copy(values + start, values + start + length, buffer_values.begin() + start);
        } else {
          std::vector<unsigned> order(length);
          std::iota(order.begin(), order.end(), 0u);
          std::sort(order.begin(), order.end(),
                    [&](unsigned a, unsigned b) { return comp(keys[start + a], keys[start + b]); });
          for (unsigned l = 0; l < length; ++l) {
            buffer_keys[start + l] = keys[start + order[l]];
            if constexpr (has_values) buffer_values[start + l] = values[start + order[l]];
          }
        }
        for (unsigned i = 0; i < length / stride; ++i) {
          const unsigned at = cfg.random ? index_math::random_sample(start, i, length, cfg.seed)
                                         : index_math::regular_sample(i, stride);
          samples[lv.first_sample(begins[p]) + tile * lv.tile_samples() + i] = {
              start + at, buffer_keys[start + at], static_cast<std::uint32_t>(2 * p)};
        }
      }
    });
    // Sort every problem's samples; count each tile's keys per bucket.
    std::vector<index_t> counts(lv.counts());
    parallel_for(lv.problems, 0, [&](index_t p) {
      const index_t size = begins[p + 1] - begins[p], S = lv.samples(size);
      auto* first = samples.data() + lv.first_sample(begins[p]);
      std::sort(first, first + S, sample_less<Compare>{comp});
    });
    auto bounds_of = [&](index_t p, index_t tile, std::vector<index_t>& bounds) {
      const index_t size = begins[p + 1] - begins[p], S = lv.samples(size);
      const index_t start = begins[p] + tile * M, length = std::min(M, size - tile * M);
      const K* first = buffer_keys.data() + start;
      bounds.assign(s + 1, length);
      bounds[0] = 0;
      for (index_t j = 1; j < s; ++j) {
        const index_t rank = lv.splitter_rank(j, S);
        if (rank >= S) break;
        const sample<K>& g = samples[lv.first_sample(begins[p]) + rank];
        const index_t lower = std::lower_bound(first, first + length, g.key, comp) - first;
        const index_t upper = std::upper_bound(first, first + length, g.key, comp) - first;
        bounds[j] = index_math::below_splitter(lower, upper, start, length, g.pos);
      }
    };
    // Randomized sampling: every key's bucket, classified once (index_math::classify) by its
    // problem's splitters, gathered per problem first in the tree's order.
    const auto bits = static_cast<unsigned>(lv.bucket_bits);
    std::vector<sample<K>> splitters(cfg.random ? lv.problems * s : 0);
    std::vector<unsigned> finite(cfg.random ? lv.problems : 0);
    std::vector<std::uint16_t> bucket(cfg.random ? n : 0);
    if (cfg.random)
      parallel_for(lv.problems, 0, [&](index_t p) {
        const index_t S = lv.samples(begins[p + 1] - begins[p]);
        finite[p] = static_cast<unsigned>(lv.finite_splitters(S));
        for (unsigned v = 1; finite[p] > 0 && v < s; ++v) {
          const index_t rank =
              index_math::tree_sample_rank(lv, v, index_math::tree_depth(v), S, finite[p]);
          splitters[p * s + v] = samples[lv.first_sample(begins[p]) + rank];
        }
      });
    auto classify = [&](index_t p, index_t i) {
      const sample<K>* tree = splitters.data() + p * s;
      return index_math::classify(bits, finite[p], [&](unsigned v, unsigned) {
        return index_math::splitter_above(buffer_keys[i], i, tree[v].key, tree[v].pos, comp);
      });
    };
    parallel_for(lv.problems * T, 0, [&](index_t job) {
      const index_t p = job / T, t = job % T, size = begins[p + 1] - begins[p];
      std::vector<index_t> bounds;
      for (index_t tile = t; tile * M < size; tile += T) {
        if (cfg.random) {
          const index_t start = begins[p] + tile * M, end = start + std::min(M, size - tile * M);
          for (index_t i = start; i < end; ++i) {
            bucket[i] = static_cast<std::uint16_t>(classify(p, i));
            ++counts[lv.count_index(p, bucket[i], t)];
          }
          continue;
        }
        bounds_of(p, tile, bounds);
        for (index_t j = 0; j < s; ++j) counts[lv.count_index(p, j, t)] += bounds[j + 1] - bounds[j];
      }
    });
    // Column-order prefix sum: where each tile's part of each bucket goes.
    std::exclusive_scan(counts.begin(), counts.end(), counts.begin(), index_t{0});
    parallel_for(lv.problems * T, 0, [&](index_t job) {
      const index_t p = job / T, t = job % T, size = begins[p + 1] - begins[p];
      std::vector<index_t> bounds, dest(s);
      for (index_t j = 0; j < s; ++j) dest[j] = counts[lv.count_index(p, j, t)];
      for (index_t tile = t; tile * M < size; tile += T) {
        const index_t start = begins[p] + tile * M;
        if (cfg.random) {  // in the tile's order: stable within a tile
          for (index_t i = start; i < start + std::min(M, size - tile * M); ++i) {
            const index_t to = dest[bucket[i]]++;
            keys[to] = buffer_keys[i];
            if constexpr (has_values) values[to] = buffer_values[i];
          }
          continue;
        }
        bounds_of(p, tile, bounds);
        for (index_t j = 0; j < s; ++j) {
          for (index_t l = bounds[j]; l < bounds[j + 1]; ++l) {
            keys[dest[j] + l - bounds[j]] = buffer_keys[start + l];
            if constexpr (has_values) values[dest[j] + l - bounds[j]] = buffer_values[start + l];
          }
          dest[j] += bounds[j + 1] - bounds[j];
        }
      }
    });
    std::vector<index_t> next(lv.problems * s + 1, n);
    for (index_t q = 0; q < lv.problems * s; ++q) next[q] = counts[q * T];
    if (report)
      for (index_t q = 0; q < lv.problems * s; ++q)
        report->largest_bucket[level] = std::max(report->largest_bucket[level], next[q + 1] - next[q]);
    begins.swap(next);
    if (level == plan.count - 1) {
      run_starts.swap(counts);
      runs_per_bucket = T;
    }
  }
  // Final buckets. Each is the last level's share of every tile slot of its problem: sorted
  // runs where a slot held one tile, as regular sampling's bound guarantees, merged rather
  // than sorted again. Randomized sampling (a slot may walk several tiles) and a sort of no
  // level sort them with one network each.
  cpu_schedule one_thread;
  one_thread.threads = 1;
  const bool merge_runs = !cfg.random && runs_per_bucket > 0;
  parallel_for(begins.size() - 1, 0, [&](index_t p) {
    V* bucket_values = nullptr;
    if constexpr (has_values) bucket_values = values + begins[p];
    if (merge_runs) {
      const index_math::problem_list buckets{run_starts.data(), runs_per_bucket,
                                          static_cast<index_t>(begins.size() - 1), n};
      std::vector<index_t> runs(runs_per_bucket + 1);
      for (index_t r = 0; r <= runs_per_bucket; ++r)
        runs[r] = index_math::final_bucket_run_bound(buckets, p, r, false);
      merge_sorted_runs(keys + begins[p], bucket_values, std::move(runs), comp);
      return;
    }
    bitonic_sort(keys + begins[p], bucket_values, begins[p + 1] - begins[p], comp, false,
                 begins[p + 1] - begins[p] > cfg.final_cap ? cpu_schedule{} : one_thread);
  });
}

}  // namespace gpusort::detail::cpu
