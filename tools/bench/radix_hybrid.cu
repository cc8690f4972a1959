// gpusort-radix-hybrid: 8-byte integer keys sorted by automatic's MSD split
// (options::msd_split: the bits where the keys differ found on the device, the keys framed
// so that those bits lead, a split into buckets by CUB's radix sort of the top of them, then
// the buckets by the segmented sort; detail/device/msd_split.cuh, issue 77's third
// direction) against CUB's radix sort (cub_radix: 8 digit passes) and `automatic` without
// it, on one GPU:
//   gpusort-radix-hybrid [--sizes 2^24,2^26,2^28] [--bits 16,20,24]
//                        [--types u64,i64,u64+u32,i64+u32] [--dists uniform,zipf,outliers]
//                        [--reps 9]
//                        [--seed 1] [--csv FILE] [--help]
// --dists takes the tools' distributions and `outliers`: keys below 2^40 with one key in
// 2^20 the largest, which puts nearly every key in one bucket of the split's window (the
// rescue's case: index_math::msd_rescues).
// Rows: cub_radix, automatic, automatic_split (the library's call with msd_split, its window
// msd_split_bits(n)), msd_split at each --bits (the split itself with that window, for the
// sweep that sets msd_split_bits; 16 bits takes two digit passes, which leave the split in
// the caller's array, copied to the second buffer before the finish).
// Each run starts from a pristine copy (not timed); CUDA events, one warm-up, the median of
// --reps; the workspace each asks for. Every output's keys are checked byte for byte against
// CUB's; values (+u32: each key's input position) must sit beside their keys, each once (the
// split does not keep equal keys' order).
// Each row prints (and goes to the CSV) as soon as it is measured.
// Exit codes: 0 every result verified, 1 a wrong result, 2 bad usage, 3 a CUDA failure.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cli.hpp"  // arguments, parse_sizes, parse_unsigned, split, usage_error
#include "common/csv.hpp"
#include "common/distributions.hpp"
#include "small_bench.hpp"  // check, event_timer, bench_main
#include "gpusort/detail/device/msd_split.cuh"
#include "gpusort/segmented.hpp"
#include "gpusort/sort.hpp"

namespace {

namespace im = gpusort::detail::index_math;
using gpusort::tools::check;
using gpusort::tools::usage_error;

struct config {
  std::vector<std::uint64_t> sizes{std::uint64_t{1} << 24, std::uint64_t{1} << 26,
                                   std::uint64_t{1} << 28};
  std::vector<std::uint64_t> bits{16, 20, 24};
  std::vector<std::string> dists{"uniform", "zipf"};
  std::vector<std::string> types{"u64", "i64"};
  int reps = 9;
  std::uint64_t seed = 1;
  std::string csv;
};

struct row {
  std::string algorithm, type, dist;
  std::uint64_t n = 0;
  int bits = 0;  // the split's window (automatic_split, msd_split)
  double ms = 0, cub_ms = 0;
  std::size_t extra_bytes = 0;
  bool verified = true;
};

// Prints each row as soon as it is measured (to stdout and the CSV, flushed), so a run cut
// short by a time limit keeps what it measured.
struct row_printer {
  FILE* csv = nullptr;
  std::string gpu;
  bool all_verified = true;
  row_printer(const std::string& path, const char* gpu_name)
      : gpu(gpusort::tools::csv_field(gpu_name)) {
    if (!path.empty() && !(csv = std::fopen(path.c_str(), "w")))
      throw usage_error("--csv: cannot open " + path);
    print("gpu,algorithm,type,dist,n,bits,ms,gkeys_per_s,cub_radix_ms,vs_cub_radix,extra_bytes,"
          "verified\n");
  }
  ~row_printer() {
    if (csv) std::fclose(csv);
  }
  row_printer(const row_printer&) = delete;
  row_printer& operator=(const row_printer&) = delete;
  void print(const char* line) {
    std::printf("%s", line);
    std::fflush(stdout);
    if (csv) {
      std::fprintf(csv, "%s", line);
      std::fflush(csv);
    }
  }
  void add(const row& r) {
    char line[512];
    std::snprintf(line, sizeof line, "%s,%s,%s,%s,%llu,%d,%.4f,%.2f,%.4f,%.3f,%zu,%s\n",
                  gpu.c_str(), r.algorithm.c_str(), r.type.c_str(), r.dist.c_str(),
                  static_cast<unsigned long long>(r.n), r.bits, r.ms, r.n / (r.ms * 1e6),
                  r.cub_ms, r.cub_ms / r.ms, r.extra_bytes, r.verified ? "yes" : "NO");
    print(line);
    all_verified = all_verified && r.verified;
  }
};

using gpusort::detail::no_value;

// A sort in place on keys (and values: V = no_value for none) in CUB's convention, its
// workspace made once: gpusort's sort_keys or sort_pairs with some options, or the MSD split
// at a window of its own.
template <class K, class V>
struct measured_sort {
  std::function<cudaError_t(void*, std::size_t&, K*, V*, std::uint64_t)> call;
  void* temp = nullptr;
  std::size_t bytes = 0;
  measured_sort(decltype(call) c, K* keys, V* values, std::uint64_t n) : call(std::move(c)) {
    check(call(nullptr, bytes, keys, values, n), "workspace");
    check(cudaMalloc(&temp, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
  }
  ~measured_sort() { cudaFree(temp); }
  measured_sort(const measured_sort&) = delete;
  measured_sort& operator=(const measured_sort&) = delete;
  void operator()(K* keys, V* values, std::uint64_t n) {
    check(call(temp, bytes, keys, values, n), "sort");
  }
};

template <class K, class V>
auto library_call(gpusort::options opt) {
  return [opt](void* temp, std::size_t& bytes, K* keys, V* values, std::uint64_t n) {
    if constexpr (std::is_same_v<V, no_value>)
      return gpusort::sort_keys(temp, bytes, keys, n, opt);
    else
      return gpusort::sort_pairs(temp, bytes, keys, values, n, opt);
  };
}

// The split as the library runs it, its values as the library's payloads of their size.
template <class K, class V>
auto split_call(int bits) {
  using P = std::conditional_t<std::is_same_v<V, no_value>, no_value,
                               gpusort::detail::payload<sizeof(V)>>;
  const auto buckets = [](void* t, std::size_t& b, K* k, P* v, std::uint64_t n,
                          const im::segment_list& segs, bool descending, cudaStream_t stream) {
    return gpusort::detail::sort_segments<K, P>(
        t, b, k, v, n, segs,
        {.direction = descending ? gpusort::order::descending : gpusort::order::ascending,
         .stream = stream});
  };
  return [bits, buckets](void* temp, std::size_t& bytes, K* keys, V* values, std::uint64_t n) {
    return gpusort::detail::device::msd_split_sort(temp, bytes, keys,
                                                   reinterpret_cast<P*>(values), n, bits,
                                                   false, buckets, true, nullptr);
  };
}

// Whether values (each key's input position) came out beside their keys, each once.
template <class K>
bool values_follow(const std::vector<K>& input, const std::vector<K>& keys,
                   const std::vector<std::uint32_t>& values) {
  std::vector<bool> seen(input.size(), false);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::uint32_t from = values[i];
    if (from >= input.size() || seen[from] || input[from] != keys[i]) return false;
    seen[from] = true;
  }
  return true;
}

// The keys of a --dists name: a tools distribution, or `outliers`.
constexpr const char* outliers = "outliers";
template <class K>
std::vector<K> keys_of(const std::string& name, std::uint64_t n, std::uint64_t seed) {
  if (name == outliers) {
    std::vector<K> keys(n);
    for (std::uint64_t i = 0; i < n; ++i)
      keys[i] = i % (std::uint64_t{1} << 20) == 7
                    ? std::numeric_limits<K>::max()
                    : static_cast<K>(gpusort::tools::random_bits(seed, i) >> 24);
    return keys;
  }
  gpusort::tools::distribution d{};
  gpusort::tools::parse_distribution(name, d);
  return gpusort::tools::generate<K>(d, n, seed);
}

template <class K, class V>
void run_size(const config& cfg, const std::string& type, std::uint64_t n,
              const std::string& dist, row_printer& out) {
  constexpr bool pairs = !std::is_same_v<V, no_value>;
  const std::vector<K> input = keys_of<K>(dist, n, cfg.seed);
  std::vector<std::uint32_t> positions(pairs ? n : 0);
  for (std::uint64_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<std::uint32_t>(i);
  K *pristine = nullptr, *keys = nullptr;
  std::uint32_t *pristine_values = nullptr, *values = nullptr;
  check(cudaMalloc(&pristine, n * sizeof(K)), "cudaMalloc");
  check(cudaMalloc(&keys, n * sizeof(K)), "cudaMalloc");
  check(cudaMemcpy(pristine, input.data(), n * sizeof(K), cudaMemcpyHostToDevice), "cudaMemcpy");
  if constexpr (pairs) {
    check(cudaMalloc(&pristine_values, n * sizeof(V)), "cudaMalloc");
    check(cudaMalloc(&values, n * sizeof(V)), "cudaMalloc");
    check(cudaMemcpy(pristine_values, positions.data(), n * sizeof(V), cudaMemcpyHostToDevice),
          "cudaMemcpy");
  }
  V* sorted_values = reinterpret_cast<V*>(values);
  const auto reset = [&] {
    check(cudaMemcpyAsync(keys, pristine, n * sizeof(K), cudaMemcpyDeviceToDevice), "copy");
    if (pairs)
      check(cudaMemcpyAsync(values, pristine_values, n * sizeof(V), cudaMemcpyDeviceToDevice),
            "copy");
  };
  gpusort::tools::event_timer clock;
  std::vector<K> want(n), got(n);
  std::vector<std::uint32_t> got_values(positions.size());
  double cub_ms = 0;
  // One row: `run` sorts the keys (and values) in place, with `bytes` of workspace.
  const auto measure = [&](row r, const auto& run, std::size_t bytes) {
    r.ms = clock.median_ms(cfg.reps, reset, run);
    r.extra_bytes = bytes;
    reset();
    run();
    check(cudaDeviceSynchronize(), "sort");
    check(cudaMemcpy(got.data(), keys, n * sizeof(K), cudaMemcpyDeviceToHost), "cudaMemcpy");
    if (pairs)
      check(cudaMemcpy(got_values.data(), values, n * sizeof(V), cudaMemcpyDeviceToHost),
            "cudaMemcpy");
    if (r.algorithm == "cub_radix") {
      want = got;
      cub_ms = r.ms;
    }
    r.cub_ms = cub_ms;
    r.verified = got == want && (!pairs || values_follow(input, got, got_values));
    out.add(r);
  };
  const int window = im::msd_split_applies(n) ? im::msd_split_bits(n) : 0;
  for (const auto& [name, opt] :
       {std::pair{"cub_radix", gpusort::options{.algo = gpusort::algorithm::cub_radix}},
        std::pair{"automatic", gpusort::options{}},
        std::pair{"automatic_split", gpusort::options{.msd_split = true}}}) {
    measured_sort<K, V> sort(library_call<K, V>(opt), keys, sorted_values, n);
    measure({name, type, dist, n, name == std::string("automatic_split") ? window : 0},
            [&] { sort(keys, sorted_values, n); }, sort.bytes);
  }
  for (const std::uint64_t bits : cfg.bits) {
    measured_sort<K, V> sort(split_call<K, V>(static_cast<int>(bits)), keys, sorted_values, n);
    measure({"msd_split", type, dist, n, static_cast<int>(bits)},
            [&] { sort(keys, sorted_values, n); }, sort.bytes);
  }
  cudaFree(pristine);
  cudaFree(keys);
  cudaFree(pristine_values);
  cudaFree(values);
}

void run(const config& cfg) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  row_printer out(cfg.csv, prop.name);
  for (const std::string& type : cfg.types)
    for (const std::string& d : cfg.dists)
      for (const std::uint64_t n : cfg.sizes) {
        if (type == "u64")
          run_size<std::uint64_t, no_value>(cfg, type, n, d, out);
        else if (type == "i64")
          run_size<std::int64_t, no_value>(cfg, type, n, d, out);
        else if (type == "u64+u32")
          run_size<std::uint64_t, std::uint32_t>(cfg, type, n, d, out);
        else
          run_size<std::int64_t, std::uint32_t>(cfg, type, n, d, out);
      }
  if (!out.all_verified) throw std::logic_error("a result was wrong (verified: NO)");
}

const char* const usage =
    "usage: gpusort-radix-hybrid [--sizes 2^24,2^26,2^28] [--bits 16,20,24]\n"
    "                            [--types u64,i64,u64+u32,i64+u32]\n"
    "                            [--dists uniform,zipf,outliers] [--reps 9] [--seed 1]\n"
    "                            [--csv FILE]\n";

// The configuration, or none for --help.
std::optional<config> parse(int argc, char** argv) {
  const gpusort::tools::arguments args = gpusort::tools::parse_arguments(
      argc, argv, {"sizes", "bits", "dists", "types", "reps", "seed", "csv"}, {"help"});
  if (args.has("help")) return std::nullopt;
  args.positional(0, "options only");
  config cfg;
  if (args.has("sizes")) cfg.sizes = gpusort::tools::parse_sizes(args.get("sizes"));
  if (args.has("bits")) {
    cfg.bits.clear();
    for (const std::string& b : gpusort::tools::split(args.get("bits"), ','))
      cfg.bits.push_back(gpusort::tools::parse_unsigned(b, "--bits"));
  }
  if (args.has("dists")) {
    cfg.dists.clear();
    for (const std::string& name : gpusort::tools::split(args.get("dists"), ',')) {
      gpusort::tools::distribution d{};
      if (name != outliers && !gpusort::tools::parse_distribution(name, d))
        throw usage_error("--dists: no distribution '" + name + "'");
      cfg.dists.push_back(name);
    }
  }
  if (args.has("types")) cfg.types = gpusort::tools::split(args.get("types"), ',');
  for (const std::string& type : cfg.types)
    if (type != "u64" && type != "i64" && type != "u64+u32" && type != "i64+u32")
      throw usage_error("--types: u64, i64, u64+u32 or i64+u32, not " + type);
  if (args.has("reps"))
    cfg.reps = static_cast<int>(gpusort::tools::parse_unsigned(args.get("reps"), "--reps"));
  if (args.has("seed")) cfg.seed = gpusort::tools::parse_unsigned(args.get("seed"), "--seed");
  cfg.csv = args.get("csv");
  if (cfg.reps < 1 || cfg.reps > 1000) throw usage_error("--reps: from 1 to 1000");
  for (const std::uint64_t b : cfg.bits)
    if (b < 1 || b > 28) throw usage_error("--bits: from 1 to 28 (2^bits buckets)");
  for (const std::uint64_t n : cfg.sizes)
    if (n < 2 || n >= (std::uint64_t{1} << 32))
      throw usage_error("--sizes: from 2 to 2^32 - 1 keys (32-bit bucket starts)");
  return cfg;
}

}  // namespace

int main(int argc, char** argv) {
  return gpusort::tools::bench_main("gpusort-radix-hybrid", usage, [&] {
    const std::optional<config> cfg = parse(argc, argv);
    if (cfg)
      run(*cfg);
    else
      std::printf("%s", usage);
  });
}
