// What a sort call can be asked to do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

#include <cuda_runtime_api.h>

namespace gpusort {

// Sorting algorithms. Loops in tests and benchmarks run over all_algorithms.
enum class algorithm {
  automatic,  // built-in keys: cub_merge (small n) or cub_radix if the workspace fits in free
              // memory, else bitonic (detail/core/automatic.hpp, automatic_algorithm)
  bitonic,    // in-place bitonic network (Peters; Capannini): 0 extra bytes, not stable
  cub_radix,  // baseline: cub::DeviceRadixSort (needs a second buffer), stable; float keys
              // in CUB's own order (-0.0 == +0.0, negative NaNs first): automatic adds the fix-up
  cub_merge,  // baseline: cub::DeviceMergeSort (needs a second buffer), stable
  thrust,     // baseline: thrust::sort with the comparator
  sample_sort,  // sample sort (Dehne & Zaboli): needs n keys (and values) of workspace plus
                // O(n s / M); deterministic bucket bound; options::sampling picks the variant
  approx_refine,  // bucket sort: the approximate sort's intervals (approx.hpp), each then
                  // sorted by the segmented sort; needs n keys (and values) of workspace
  adaptive_bitonic,  // GPU-ABiSort (Greß & Zachmann): adaptive bitonic merges on bitonic
                     // trees, O(n log n) comparisons; stable; two buffers of 2^ceil(log2 n)
                     // (key, position) items as workspace (docs/adaptive_bitonic.md)
  quicksort,  // GPU quicksort (Cederman & Tsigas), the papers' baseline: three-way partitions
              // around midpoint pivots; not stable; a second buffer of n keys (and values)
              // plus under 1 byte per key (docs/quicksort.md)
};

inline constexpr algorithm all_algorithms[] = {algorithm::automatic, algorithm::bitonic,
                                               algorithm::cub_radix, algorithm::cub_merge,
                                               algorithm::thrust, algorithm::sample_sort,
                                               algorithm::approx_refine,
                                               algorithm::adaptive_bitonic,
                                               algorithm::quicksort};

constexpr std::string_view to_string(algorithm a) {
  switch (a) {
    case algorithm::automatic: return "automatic";
    case algorithm::bitonic: return "bitonic";
    case algorithm::cub_radix: return "cub_radix";
    case algorithm::cub_merge: return "cub_merge";
    case algorithm::thrust: return "thrust";
    case algorithm::sample_sort: return "sample_sort";
    case algorithm::approx_refine: return "approx_refine";
    case algorithm::adaptive_bitonic: return "adaptive_bitonic";
    case algorithm::quicksort: return "quicksort";
  }
  return "unknown";
}

// Parses a name as printed by to_string; returns false if it names no algorithm.
constexpr bool parse_algorithm(std::string_view name, algorithm& out) {
  for (algorithm a : all_algorithms) {
    if (to_string(a) == name) {
      out = a;
      return true;
    }
  }
  return false;
}

// What each algorithm guarantees, in one place: the library's dispatch, the Python package
// (gpusort.ALGORITHMS), the tool and the tests read it.
struct algorithm_traits {
  algorithm algo;
  bool stable;            // equal keys keep their input order without options::stable
  bool in_place;          // sorts with no workspace at all (the query may still ask for some)
  bool sorts_rows;        // the batched and segmented sorts (segmented.hpp) take it
  bool capturable;        // only stream-ordered work: runs inside a CUDA graph capture
  bool takes_comparator;  // sorts keys of any type by a user comparator (sort.cuh)
  int max_value_bytes;    // the largest values it carries (4, 8 or 16 bytes)
};

// automatic is in place because given 0 bytes it runs bitonic; it is not stable, because
// without options::stable it may pick bitonic. CUB's and Thrust's sorts are built for values
// of up to 8 bytes (detail/device/baselines.hpp, baseline_built).
inline constexpr algorithm_traits algorithm_table[] = {
    // algorithm               stable in_place rows  capture comparator values
    {algorithm::automatic,        false, true,  true,  true,  true,  16},
    {algorithm::bitonic,          false, true,  true,  true,  true,  16},
    {algorithm::cub_radix,        true,  false, true,  true,  false, 8},
    {algorithm::cub_merge,        true,  false, true,  true,  false, 8},
    {algorithm::thrust,           false, false, false, true,  false, 8},
    {algorithm::sample_sort,      false, false, false, true,  true,  16},
    {algorithm::approx_refine,    false, false, false, true,  false, 16},
    {algorithm::adaptive_bitonic, true,  false, false, true,  false, 16},
    {algorithm::quicksort,        false, false, false, true,  false, 16},
};

constexpr const algorithm_traits& traits_of(algorithm a) {
  for (const algorithm_traits& t : algorithm_table)
    if (t.algo == a) return t;
  return algorithm_table[0];  // unreachable: every algorithm has a row (static_assert below)
}

static_assert(std::size(algorithm_table) == std::size(all_algorithms));
static_assert([] {
  for (std::size_t i = 0; i < std::size(all_algorithms); ++i)
    if (algorithm_table[i].algo != all_algorithms[i]) return false;
  return true;
}(), "algorithm_table lists every algorithm once, in all_algorithms' order");

enum class order { ascending, descending };

// Where float keys' NaNs go: `last` (NumPy's choice, the default) puts them after every
// number in both orders; `first` before every number in both orders. Integer keys ignore it.
enum class nan_order { last, first };

constexpr std::string_view to_string(nan_order o) { return o == nan_order::last ? "last" : "first"; }

// Whether NaNs sort as the smallest keys rather than the largest: the one question every
// float path answers (ascending with NaNs first, or descending with NaNs last).
constexpr bool nans_lowest(order direction, nan_order nans) {
  return (direction == order::descending) != (nans == nan_order::first);
}

// Device memory for the convenience layer's workspace and results, in the style of a memory
// resource: allocate(bytes, stream, context) returns memory usable on `stream` (nullptr on
// failure); deallocate(ptr, bytes, stream, context) gives it back. Unset (the default), the
// library uses cudaMallocAsync / cudaFreeAsync on the call's stream. The core layer never
// allocates: the caller passes its workspace.
struct device_allocator {
  void* (*allocate)(std::size_t bytes, cudaStream_t stream, void* context) = nullptr;
  void (*deallocate)(void* ptr, std::size_t bytes, cudaStream_t stream, void* context) = nullptr;
  void* context = nullptr;
};

// How sample_sort picks its samples: `regular` (Dehne & Zaboli), every (M/s)-th key of each
// sorted tile, which guarantees that no bucket exceeds about 2n/s keys whatever the input;
// `random` (Leischner et al.), random keys of each unsorted tile, every key then classified
// by the splitters (no tile sort): no guarantee, and a bucket that comes out too large is
// sorted by slower means.
enum class sampling { regular, random };

// Where the approximate sort's intervals come from: `linear` (Xiao et al.), equal widths of
// [min, max]; `sampled`, boundaries taken from a sample of the keys, so that every interval
// holds about n / intervals keys whatever the distribution (ties split by position).
enum class splitters { linear, sampled };

struct options {
  algorithm algo = algorithm::automatic;
  order direction = order::ascending;
  nan_order nans = nan_order::last;  // float keys: NaNs after (or before) every number
  // Equal keys (and their values) keep their input order. The stable algorithms (cub_radix,
  // cub_merge, adaptive_bitonic) are so anyway; automatic then picks a stable one; the others
  // (bitonic, sample_sort, quicksort, approx_refine, thrust) sort (key, position) and then
  // each run of equal keys by position, which costs workspace (sort.hpp, docs/cpp.md).
  bool stable = false;
  cudaStream_t stream = nullptr;  // every device call is ordered on this stream
  // automatic, 8-byte integer keys, 2^24 to 2^32 of them: sort by the keys' most significant
  // differing bits first (CUB's radix sort of the top of them splits the keys into buckets,
  // the segmented sort finishes each bucket; detail/device/msd_split.cuh). Values of equal
  // keys may change places; with `stable` the pairs are sorted as without it. Ignored by the
  // CPU backend. Large buckets of different keys (outliers far above the rest put nearly all
  // keys in one) are sorted together by a radix sort after one wait for their count; under
  // graph capture, where nothing waits, by the segmented sort, many times slower. Off by
  // default until that rescue is measured (docs/notes-radix-sort.md).
  bool msd_split = false;
  // sample_sort only: the sampling (regular: the deterministic sort with its bucket bound;
  // random: keys classified by random splitters), and s, the buckets per level, a power of
  // two from 2 to 1024; 0 picks the measured default.
  sampling sampler = sampling::regular;
  unsigned buckets = 0;
  // approx_sort, top_k and approx_refine: the interval count (0: 10,000 for approx_sort,
  // chosen from n for approx_refine and top_k) and where the boundaries come from.
  std::uint32_t intervals = 0;
  splitters interval_splitters = splitters::linear;
  // adaptive_bitonic only: log2 of the items each block sorts first and of the bitonic
  // sequences the block merge finishes (section 7 of the paper): 10 to 13, 0 = 12 (the
  // default), or 1 = no block sort or merge, the plain algorithm. Ignored by the CPU backend,
  // which runs the plain algorithm.
  unsigned block_bits = 0;
  // adaptive_bitonic only, a debugging aid: if set, the number of comparisons the sort makes
  // is added to *comparison_count. For a GPU sort it must be memory the device can write
  // (device or managed memory), for the CPU backend host memory.
  std::uint64_t* comparison_count = nullptr;
  // The convenience layer's device allocations (workspace, results); unset: cudaMallocAsync.
  device_allocator allocator{};
};

// These options with NaNs as the largest keys (last ascending, first descending): the order of
// the parts that compare float keys themselves (the file sorts' merges and checks, the
// multi-GPU merge), whatever `nans` said.
constexpr options with_nans_largest(options opt) {
  opt.nans = opt.direction == order::descending ? nan_order::first : nan_order::last;
  return opt;
}

// Names of the algorithms as the tool, the benchmark and the result files spell them:
// to_string(algorithm), plus "sample_sort_random" for sample_sort with sampling::random.
constexpr std::string_view method_name(const options& opt) {
  if (opt.algo == algorithm::sample_sort && opt.sampler == sampling::random)
    return "sample_sort_random";
  return to_string(opt.algo);
}

// Sets opt.algo (and opt.sampler) from a name as method_name spells it; false if unknown.
constexpr bool parse_method(std::string_view name, options& opt) {
  if (name == "sample_sort_random") {
    opt.algo = algorithm::sample_sort;
    opt.sampler = sampling::random;
    return true;
  }
  if (!parse_algorithm(name, opt.algo)) return false;
  opt.sampler = sampling::regular;
  return true;
}

}  // namespace gpusort
