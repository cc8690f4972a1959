// How bench calls each algorithm on a point, times it (bench_timing.hpp) and verifies the
// result (bench_verify.hpp). The device sorts go through their workspace queries and sort the
// work buffer in place; approx, approx_sampled, top_k, select_k and (with --segments) top_k_rows
// (approx.hpp) read the work buffer and write to output buffers of their own, and are
// verified by what they promise, not as full sorts. The host sorts (std_sort, cpu_parallel)
// and the CPU backend sort host copies of the input.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bench.hpp"
#include "bench/classic_bitonic.hpp"
#include "bench_algorithms.hpp"
#include "bench_input.hpp"
#include "bench_timing.hpp"
#include "bench_verify.hpp"
#include "gpusort/approx.hpp"
#include "gpusort/segmented.hpp"
#include "gpusort/sort.hpp"

namespace gpusort::tools {

// The harness's one way to run an algorithm on a point, whatever kind it is.
class sort_runner {
 public:
  // timer: the device's, or null without a GPU (then the CPU backend runs). Verdicts go to
  // `verdicts`.
  sort_runner(const bench_config& config, device_timer* timer, verdict_tally& verdicts)
      : config_(config), timer_(timer), verdicts_(verdicts) {}

  // Times and verifies `name` on p. device: the point's buffers, or null with the reason in
  // no_device (then a device algorithm is skipped). Throws gpusort::error if a CUDA call fails.
  template <class K>
  measurement measure(const std::string& name, const point<K>& p, device_input<K>* device,
                      const std::string& no_device) {
    if (is_host_sort(name)) return time_host_sort(name, p);
    if (!timer_) return time_cpu_backend(p);
    if (!device) return measurement(name, no_device);
    if (p.segments) {
      if (name == "top_k_rows") return time_top_k_rows(p, *device);
      if (name == "sort_segmented_indices") return time_segmented_indices(p, *device);
      return time_segmented(name, p, *device);
    }
    if (name == "classic_bitonic") return time_classic_bitonic(p, *device);
    options opt{.stream = timer_->stream(),
                .buckets = config_.buckets,
                .intervals = config_.intervals,
                .block_bits = config_.block_bits};
    if (name == "approx" || name == "approx_sampled") {
      opt.interval_splitters = name == "approx" ? splitters::linear : splitters::sampled;
      return time_approx(name, opt, p, *device);
    }
    if (name == "top_k" || name == "select_k") return time_top_k(name, opt, p, *device);
    parse_method(name, opt);
    return time_library(opt, p, *device);
  }

 private:
  // ---- device algorithms ---------------------------------------------------------------

  template <class K>
  measurement time_library(const options& opt, const point<K>& p, device_input<K>& d) {
    K* keys = d.keys();
    std::uint32_t* values = d.values();
    measurement m = time_with_workspace(
        std::string(method_name(opt)), p, d, [&](void* temp, std::size_t& bytes) {
          return p.input.pairs ? sort_pairs(temp, bytes, keys, values, p.n, opt)
                               : sort_keys(temp, bytes, keys, p.n, opt);
        });
    if (opt.algo == algorithm::thrust) m.extra_bytes = -1;  // it allocates its own: unknown
    return m;
  }

  // Our segmented sort and CUB's two through the same calls: batches when p.batched(), else
  // the offsets on the device; sort_segmented_offsets is ours through the offsets always, to
  // measure what they cost against batches of the same sizes.
  template <class K>
  measurement time_segmented(const std::string& name, const point<K>& p, device_input<K>& d) {
    const algorithm algo = name == "cub_segmented_radix"  ? algorithm::cub_radix
                           : name == "cub_segmented_sort" ? algorithm::cub_merge
                                                          : algorithm::bitonic;  // size classes
    const options opt{.algo = algo, .stream = timer_->stream()};
    K* keys = d.keys();
    std::uint32_t* values = d.values();
    const std::uint64_t count = p.segment_count();
    return time_with_workspace(name, p, d, [&](void* temp, std::size_t& bytes) {
      if (p.batched() && name != "sort_segmented_offsets")
        return p.input.pairs
                   ? sort_batched_pairs(temp, bytes, keys, values, count, p.segments->size, opt)
                   : sort_batched_keys(temp, bytes, keys, count, p.segments->size, opt);
      return d.with_offsets([&](const auto* offsets) {
        return p.input.pairs ? sort_segmented_pairs(temp, bytes, keys, values, p.n, offsets,
                                                    offsets + 1, count, opt)
                             : sort_segmented_keys(temp, bytes, keys, p.n, offsets, offsets + 1,
                                                   count, opt);
      });
    });
  }

  // Our segmented argsort: each key's position in its segment, made by the sort (--pairs u32
  // lends the value buffer for the indices; its input is never read). Checked as pairs: the
  // input's values are the keys' original indices, which are the positions plus the
  // segment's start.
  template <class K>
  measurement time_segmented_indices(const point<K>& p, device_input<K>& d) {
    const std::string name = "sort_segmented_indices";
    if (!p.input.pairs) return measurement(name, "needs --pairs u32 (the indices' buffer)");
    const options opt{.algo = algorithm::bitonic, .stream = timer_->stream()};
    K* keys = d.keys();
    std::uint32_t* indices = d.values();
    const std::uint64_t count = p.segment_count();
    return time_with_workspace(
        name, p, d,
        [&](void* temp, std::size_t& bytes) {
          if (p.batched())
            return sort_batched_with_indices(temp, bytes, keys, indices, count, p.segments->size,
                                             opt);
          return d.with_offsets([&](const auto* offsets) {
            return sort_segmented_with_indices(temp, bytes, keys, indices, p.n, offsets,
                                               offsets + 1, count, opt);
          });
        },
        [&] {
          records<K> r = d.result();
          for (std::size_t s = 0; s + 1 < p.offsets.size(); ++s)
            for (std::uint64_t i = p.offsets[s]; i < p.offsets[s + 1]; ++i)
              r.values[i] += static_cast<std::uint32_t>(p.offsets[s]);
          return sort_problem(p, r);
        },
        0);
  }

  // approx and approx_sampled: from the work buffer into buffers of their own, with the
  // offsets. That output is memory an in-place sort does without: it counts as extra bytes.
  template <class K>
  measurement time_approx(const std::string& name, const options& opt, const point<K>& p,
                          device_input<K>& d) {
    const std::uint64_t offset_count = approx_intervals(opt) + std::uint64_t{1};
    device_records<K> out(p.n, p.input.pairs);
    device_memory offsets(offset_count * sizeof(std::uint64_t));
    if (out.failed() || offsets.failed())
      return measurement(name, "not enough device memory for its output");
    const K* keys = d.keys();
    const std::uint32_t* values = d.values();
    K* out_keys = out.keys.template as<K>();
    std::uint32_t* out_values = out.values.template as<std::uint32_t>();
    std::uint64_t* out_offsets = offsets.as<std::uint64_t>();
    const auto problem = [&] {
      std::vector<std::uint64_t> host_offsets(offset_count);
      cuda_check(cudaMemcpy(host_offsets.data(), out_offsets, offset_count * sizeof(std::uint64_t),
                            cudaMemcpyDeviceToHost),
                 "copy from the device");
      return interval_problem(p, copy_to_host<K>(out.keys, out.values, p.n, p.input.pairs),
                              host_offsets);
    };
    return time_with_workspace(
        name, p, d,
        [&](void* temp, std::size_t& bytes) {
          return p.input.pairs ? approx_sort_pairs(temp, bytes, keys, out_keys, values,
                                                   out_values, p.n, out_offsets, opt)
                               : approx_sort_keys(temp, bytes, keys, out_keys, p.n, out_offsets,
                                                  opt);
        },
        problem, p.n * record_bytes<K>(p.input.pairs) + offset_count * sizeof(std::uint64_t));
  }

  // top_k or select_k: the k (--k, at most n) first keys (select_k's in no order, and the
  // k-th key); the output counts as extra bytes, as for approx.
  template <class K>
  measurement time_top_k(const std::string& name, const options& opt, const point<K>& p,
                         device_input<K>& d) {
    const bool select = name == "select_k";
    const std::uint64_t k = std::min(config_.k, p.n);
    device_records<K> out(k, p.input.pairs), kth(1, false);
    if (out.failed() || kth.failed())
      return measurement(name, "not enough device memory for its output");
    const K* keys = d.keys();
    const std::uint32_t* values = d.values();
    K* out_keys = out.keys.template as<K>();
    std::uint32_t* out_values = out.values.template as<std::uint32_t>();
    K* kth_key = kth.keys.template as<K>();
    return time_with_workspace(
        name, p, d,
        [&](void* temp, std::size_t& bytes) {
          if (select)
            return p.input.pairs ? select_k_pairs(temp, bytes, keys, values, p.n, out_keys,
                                                  out_values, k, kth_key, opt)
                                 : select_k_keys(temp, bytes, keys, p.n, out_keys, k, kth_key, opt);
          return p.input.pairs
                     ? top_k_pairs(temp, bytes, keys, values, p.n, out_keys, out_values, k, opt)
                     : top_k_keys(temp, bytes, keys, p.n, out_keys, k, opt);
        },
        [&] {
          records<K> result = copy_to_host<K>(out.keys, out.values, k, p.input.pairs);
          if (!select) return top_k_problem(p, result, p.n);
          const K last = k ? copy_to_host<K>(kth.keys, kth.values, 1, false).keys[0] : K{};
          return select_k_problem(p, std::move(result), last);
        },
        k * record_bytes<K>(p.input.pairs));
  }

  // The --k (at most a row) first keys of every row of a batched layout; the output counts as
  // extra bytes.
  template <class K>
  measurement time_top_k_rows(const point<K>& p, device_input<K>& d) {
    if (!p.batched()) return measurement("top_k_rows", "rows of equal length only");
    const std::uint64_t row_length = p.segments->size, rows = p.segment_count();
    const std::uint64_t k = std::min(config_.k, row_length);
    device_records<K> out(rows * k, p.input.pairs);
    if (out.failed()) return measurement("top_k_rows", "not enough device memory for its output");
    const K* keys = d.keys();
    const std::uint32_t* values = d.values();
    K* out_keys = out.keys.template as<K>();
    std::uint32_t* out_values = out.values.template as<std::uint32_t>();
    const options opt{.stream = timer_->stream()};
    return time_with_workspace(
        "top_k_rows", p, d,
        [&](void* temp, std::size_t& bytes) {
          return p.input.pairs ? top_k_rows_pairs(temp, bytes, keys, values, rows, row_length,
                                                  out_keys, out_values, k, opt)
                               : top_k_rows_keys(temp, bytes, keys, rows, row_length, out_keys,
                                                 k, opt);
        },
        [&] {
          return top_k_problem(
              p, copy_to_host<K>(out.keys, out.values, rows * k, p.input.pairs), row_length);
        },
        rows * k * record_bytes<K>(p.input.pairs));
  }

  // Asks `sort` for its workspace and allocates it, then times the sort and verifies the
  // work buffer.
  template <class K, class Sort>
  measurement time_with_workspace(std::string name, const point<K>& p, device_input<K>& d,
                                  Sort&& sort) {
    return time_with_workspace(
        std::move(name), p, d, std::forward<Sort>(sort),
        [&] { return sort_problem(p, d.result()); }, 0);
  }

  // The same for any method: `problem` says what is wrong with its result (empty: nothing);
  // output_bytes, what it writes outside the work buffer, counts as extra bytes.
  template <class K, class Sort, class Problem>
  measurement time_with_workspace(std::string name, const point<K>& p, device_input<K>& d,
                                  Sort&& sort, Problem&& problem, std::uint64_t output_bytes) {
    std::size_t bytes = 0;
    const cudaError_t e = sort(nullptr, bytes);
    if (e == cudaErrorNotSupported)
      return measurement(name, "not supported for this key/value type or size");
    cuda_check(e, "workspace query");
    device_memory temp(bytes);
    if (temp.failed())
      return measurement(name, "not enough device memory for its " +
                                   std::to_string(static_cast<long long>(bytes / mib)) +
                                   " MiB workspace");
    // A null workspace only asks for its size, so algorithms that need none get a dummy.
    void* workspace = bytes > 0 ? temp.as<void>() : static_cast<void*>(d.keys());
    measurement m(std::move(name));
    m.extra_bytes = static_cast<std::int64_t>(bytes + output_bytes);
    m.ms = time_device(d, [&] { return sort(workspace, bytes); });
    judge(m, p, problem());
    return m;
  }

  template <class K>
  measurement time_classic_bitonic(const point<K>& p, device_input<K>& d) {
    if constexpr (!bench::classic_bitonic_built<K>) {
      return measurement("classic_bitonic", "built for u32, u64 and f32 keys only");
    } else {
      if (p.input.pairs) return measurement("classic_bitonic", "keys only");
      if (!std::has_single_bit(p.n)) return measurement("classic_bitonic", "power-of-two n only");
      measurement m("classic_bitonic");
      m.ms = time_device(
          d, [&] { return bench::classic_bitonic_sort(d.keys(), p.n, timer_->stream()); });
      judge(m, p, sort_problem(p, d.result()));
      return m;
    }
  }

  // --reps runs of `sort` on the work buffer, each on the input restored.
  template <class K, class Sort>
  std::vector<double> time_device(device_input<K>& d, Sort&& sort) {
    return timer_->time(
        config_.reps, [&] { d.restore(timer_->stream()); }, std::forward<Sort>(sort));
  }

  // ---- host algorithms -----------------------------------------------------------------

  // std_sort, or cpu_parallel (on all cores, sort_each_segment); pairs as (key, value) pairs.
  template <class K>
  measurement time_host_sort(const std::string& name, const point<K>& p) {
    measurement m(name);
    const bool parallel = name == "cpu_parallel";
    const auto by_key = [](const auto& a, const auto& b) { return less<K>{}(a.first, b.first); };
    if (!p.input.pairs) {
      std::vector<K> keys;
      m.ms = time_host(
          config_.reps, p.n, [&] { keys = p.input.keys; },
          [&] { sort_each_segment(p, keys.begin(), less<K>{}, parallel); });
      judge(m, p, sort_problem(p, records<K>{std::move(keys), {}, false}));
      return m;
    }
    std::vector<std::pair<K, std::uint32_t>> pristine(p.n), work;
    for (std::uint64_t i = 0; i < p.n; ++i) pristine[i] = {p.input.keys[i], p.input.values[i]};
    m.ms = time_host(
        config_.reps, p.n, [&] { work = pristine; },
        [&] { sort_each_segment(p, work.begin(), by_key, parallel); });
    records<K> out{{}, {}, true};
    for (const auto& [key, value] : work) {
      out.keys.push_back(key);
      out.values.push_back(value);
    }
    judge(m, p, sort_problem(p, out));
    return m;
  }

  template <class K>
  measurement time_cpu_backend(const point<K>& p) {
    measurement m(p.segments ? "sort_segmented" : "bitonic");
    const options opt{.algo = algorithm::bitonic};
    const detail::segment_list segments =
        p.batched() ? detail::make_batches(p.segment_count(), p.segments->size)
                    : detail::make_segments(p.offsets.data(), p.offsets.data() + 1,
                                            p.segment_count());
    records<K> work;
    m.ms = time_host(
        config_.reps, p.n, [&] { work = p.input; },
        [&] {
          auto* values = reinterpret_cast<detail::payload<4>*>(work.values.data());
          if (p.segments && work.pairs)
            detail::cpu_sort_segments(work.keys.data(), values, p.n, segments, opt);
          else if (p.segments)
            detail::cpu_sort_segments<K, detail::no_value>(work.keys.data(), nullptr, p.n,
                                                           segments, opt);
          else if (work.pairs)
            detail::cpu_sort_pairs(work.keys.data(), values, p.n, opt);
          else
            detail::cpu_sort_keys(work.keys.data(), p.n, opt);
        });
    judge(m, p, sort_problem(p, work));
    return m;
  }

  // Records the verdict on m's result; a wrong one keeps no times, so it is not reported.
  template <class K>
  void judge(measurement& m, const point<K>& p, const std::string& problem) {
    if (!verdicts_.record(m.algorithm, p.label(), problem)) m.ms.clear();
  }

  const bench_config& config_;
  device_timer* timer_;
  verdict_tally& verdicts_;
};

}  // namespace gpusort::tools
