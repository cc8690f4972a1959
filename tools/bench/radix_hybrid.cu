// gpusort-radix-hybrid: 64-bit keys sorted by a most-significant-digit split, then every bucket
// on its own (issue 77's third direction, docs/notes-radix-sort.md), against CUB's radix sort
// (cub_radix: 8 digit passes) and gpusort's `automatic` of the same keys, on one GPU:
//   gpusort-radix-hybrid [--sizes 2^24,2^26,2^28] [--bits 16,20,24] [--types u64,i64]
//                        [--dists uniform,zipf] [--reps 9] [--seed 1] [--csv FILE] [--help]
// The hybrid, 8-byte integer keys alone (floats would need automatic's fix-up of -0.0 and
// negative NaNs as well), from the input into a second buffer, on the keys' ordered bits:
//   window   the OR of every key XOR the first (cub::DeviceReduce), read back by the host: the
//            --bits bits under the highest bit where two keys differ (msd_window_for); rows
//            msd_hybrid_top take the codes' top --bits bits instead, with no reduction or wait;
//   msd      CUB's radix sort of those bits alone: ceil(bits / 8) digit passes, stable;
//   starts   each bucket's first position, written by the position of its first key
//            (buckets_starting_at, buckets_after_last: index_math/radix.hpp), and
//   buckets  gpusort::sort_segmented_keys of the 2^bits buckets on the bits below the window,
//            both skipped where the window holds every differing bit (sorted already).
// A prototype that measures the direction, not a sort of the library: it waits for the device
// once (the window), and keys alone show no stability.
// Each run starts from a pristine copy (not timed); CUDA events, one warm-up, the median of
// --reps, the phases from the same runs. Every output is checked byte for byte against CUB's.
// Exit codes: 0 every result verified, 1 a wrong result, 2 bad usage, 3 a CUDA failure.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli.hpp"  // arguments, parse_sizes, parse_unsigned, split, usage_error
#include "common/csv.hpp"
#include "common/distributions.hpp"
#include "small_bench.hpp"  // check, event_timer, bench_main
#include "gpusort/detail/index_math/radix.hpp"
#include "gpusort/segmented.hpp"
#include "gpusort/sort.hpp"

namespace {

namespace im = gpusort::detail::index_math;
using gpusort::tools::check;
using gpusort::tools::usage_error;
using code = std::uint64_t;  // a key's ordered bits (key_traits<K>::ordered)

struct config {
  std::vector<std::uint64_t> sizes{std::uint64_t{1} << 24, std::uint64_t{1} << 26,
                                   std::uint64_t{1} << 28};
  std::vector<std::uint64_t> bits{16, 20, 24};
  std::vector<gpusort::tools::distribution> dists{gpusort::tools::distribution::uniform,
                                                  gpusort::tools::distribution::zipf};
  std::vector<std::string> types{"u64", "i64"};
  int reps = 9;
  std::uint64_t seed = 1;
  std::string csv;
};

template <class K>
__host__ __device__ code ordered(K k) {
  return gpusort::key_traits<K>::ordered(k);
}

// A key's difference from the first key (its ordered bits that are not the first's).
template <class K>
struct differs_from_first {
  const K* keys;
  __device__ code operator()(K k) const { return ordered(k) ^ ordered(keys[0]); }
};

struct bitwise_or {
  __device__ code operator()(code a, code b) const { return a | b; }
};

// Each bucket's first position in the keys sorted by bucket, starts[buckets] = n. The thread
// of a bucket's first key also writes the empty buckets before it (one each for keys spread
// evenly; a skewed input leaves a few threads long runs of them).
template <class K>
__global__ void bucket_starts_kernel(const K* sorted, std::uint64_t n, im::msd_window w,
                                     std::uint32_t* starts) {
  const std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  const std::uint64_t bucket = im::msd_bucket(ordered(sorted[i]), w);
  const im::bucket_range here =
      im::buckets_starting_at(i, i ? im::msd_bucket(ordered(sorted[i - 1]), w) : 0, bucket);
  for (std::uint64_t b = here.first; b < here.last; ++b) starts[b] = static_cast<std::uint32_t>(i);
  if (i + 1 < n) return;
  const im::bucket_range tail = im::buckets_after_last(bucket, std::uint64_t{1} << w.bits);
  for (std::uint64_t b = tail.first; b < tail.last; ++b) starts[b] = static_cast<std::uint32_t>(n);
}

// The hybrid's buffers and workspaces for n keys and up to 2^max_bits buckets. CUB's radix
// sort reads a signed key's bits with the sign flipped, as key_traits' ordered bits do.
template <class K>
class hybrid {
 public:
  hybrid(std::uint64_t n, int max_bits) : n_(n) {
    check(cudaMalloc(&differing_, sizeof(code)), "cudaMalloc");
    check(cudaMalloc(&starts_, sizeof(std::uint32_t) * ((std::uint64_t{1} << max_bits) + 1)),
          "cudaMalloc");
  }
  ~hybrid() {
    cudaFree(differing_);
    cudaFree(starts_);
    cudaFree(temp_);
  }
  hybrid(const hybrid&) = delete;
  hybrid& operator=(const hybrid&) = delete;

  std::size_t extra_bytes(int bits) const {
    return sizeof(std::uint32_t) * ((std::uint64_t{1} << bits) + 1) + temp_bytes_;
  }

  // Sorts in into out (n keys each) with a window of up to `bits` bits, recording events[0..4]
  // at the phases' boundaries. `top`: the window is the codes' top bits, found without the
  // reduction and the wait (right for any keys; keys that share their top bits then land in
  // few buckets, and the segmented sort gets few large segments).
  void sort(const K* in, K* out, int bits, bool top, cudaEvent_t* events) {
    check(cudaEventRecord(events[0]), "cudaEventRecord");
    im::msd_window w{64 - bits, bits};
    std::size_t bytes = 0;
    if (!top) {
      const differs_from_first<K> diff{in};
      check(cub::DeviceReduce::TransformReduce(nullptr, bytes, in, differing_, n_, bitwise_or{},
                                               diff, code{0}),
            "window");
      room(bytes);
      check(cub::DeviceReduce::TransformReduce(temp_, bytes, in, differing_, n_, bitwise_or{},
                                               diff, code{0}),
            "window");
      code differing = 0;
      check(cudaMemcpy(&differing, differing_, sizeof differing, cudaMemcpyDeviceToHost),
            "window");
      w = im::msd_window_for(differing, bits);
    }
    check(cudaEventRecord(events[1]), "cudaEventRecord");
    const auto count = static_cast<std::uint32_t>(n_);
    if (w.bits == 0) {  // every key the same
      check(cudaMemcpyAsync(out, in, n_ * sizeof(K), cudaMemcpyDeviceToDevice), "msd");
    } else {
      bytes = 0;
      check(cub::DeviceRadixSort::SortKeys(nullptr, bytes, in, out, count, w.low_bit,
                                           w.low_bit + w.bits),
            "msd");
      room(bytes);
      check(cub::DeviceRadixSort::SortKeys(temp_, bytes, in, out, count, w.low_bit,
                                           w.low_bit + w.bits),
            "msd");
    }
    check(cudaEventRecord(events[2]), "cudaEventRecord");
    // A window that holds every differing bit (low_bit 0) leaves the keys sorted already.
    const std::uint64_t buckets = std::uint64_t{1} << w.bits;
    if (w.low_bit > 0) {
      bucket_starts_kernel<<<static_cast<unsigned>((n_ + 255) / 256), 256>>>(out, n_, w,
                                                                             starts_);
      check(cudaGetLastError(), "starts");
    }
    check(cudaEventRecord(events[3]), "cudaEventRecord");
    if (w.low_bit > 0) {
      bytes = 0;
      check(gpusort::sort_segmented_keys(nullptr, bytes, out, n_, starts_, starts_ + 1, buckets),
            "buckets");
      room(bytes);
      check(gpusort::sort_segmented_keys(temp_, bytes, out, n_, starts_, starts_ + 1, buckets),
            "buckets");
    }
    check(cudaEventRecord(events[4]), "cudaEventRecord");
  }

 private:
  // The workspace grown to `bytes` (once per size: the first, untimed run grows it).
  void room(std::size_t bytes) {
    if (bytes <= temp_bytes_) return;
    check(cudaFree(temp_), "cudaFree");
    temp_ = nullptr;
    check(cudaMalloc(&temp_, bytes), "cudaMalloc");
    temp_bytes_ = bytes;
  }

  std::uint64_t n_;
  code* differing_ = nullptr;
  std::uint32_t* starts_ = nullptr;
  void* temp_ = nullptr;
  std::size_t temp_bytes_ = 0;
};

struct row {
  std::string algorithm, type, dist;
  std::uint64_t n = 0;
  int bits = 0;
  double ms = 0, cub_ms = 0;
  double phase_ms[4] = {};  // window, msd, starts, buckets (the hybrid's rows)
  std::size_t extra_bytes = 0;
  bool verified = true;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// gpusort::sort_keys with `algo`, in place on keys, its workspace made once.
template <class K>
struct library_sort {
  gpusort::algorithm algo;
  void* temp = nullptr;
  std::size_t bytes = 0;
  library_sort(gpusort::algorithm a, K* keys, std::uint64_t n) : algo(a) {
    check(gpusort::sort_keys(nullptr, bytes, keys, n, {.algo = algo}), "workspace");
    check(cudaMalloc(&temp, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
  }
  ~library_sort() { cudaFree(temp); }
  library_sort(const library_sort&) = delete;
  library_sort& operator=(const library_sort&) = delete;
  void operator()(K* keys, std::uint64_t n) {
    check(gpusort::sort_keys(temp, bytes, keys, n, {.algo = algo}), "sort");
  }
};

template <class K>
void run_size(const config& cfg, const std::string& type, std::uint64_t n,
              gpusort::tools::distribution d, std::vector<row>& rows) {
  const std::string dist(gpusort::tools::to_string(d));
  const std::vector<K> input = gpusort::tools::generate<K>(d, n, cfg.seed);
  K *pristine = nullptr, *keys = nullptr, *out = nullptr;
  check(cudaMalloc(&pristine, n * sizeof(K)), "cudaMalloc");
  check(cudaMalloc(&keys, n * sizeof(K)), "cudaMalloc");
  check(cudaMalloc(&out, n * sizeof(K)), "cudaMalloc");
  check(cudaMemcpy(pristine, input.data(), n * sizeof(K), cudaMemcpyHostToDevice), "cudaMemcpy");
  const auto reset = [&] {
    check(cudaMemcpyAsync(keys, pristine, n * sizeof(K), cudaMemcpyDeviceToDevice), "copy");
  };
  gpusort::tools::event_timer clock;
  std::vector<K> want(n), got(n);
  double cub_ms = 0;
  for (const gpusort::algorithm algo :
       {gpusort::algorithm::cub_radix, gpusort::algorithm::automatic}) {
    library_sort<K> sort(algo, keys, n);
    row r{std::string(gpusort::to_string(algo)), type, dist, n};
    r.ms = clock.median_ms(cfg.reps, reset, [&] { sort(keys, n); });
    r.extra_bytes = sort.bytes;
    reset();
    sort(keys, n);
    check(cudaMemcpy(got.data(), keys, n * sizeof(K), cudaMemcpyDeviceToHost), "cudaMemcpy");
    if (algo == gpusort::algorithm::cub_radix) {
      want = got;
      cub_ms = r.ms;
    }
    r.cub_ms = cub_ms;
    r.verified = got == want;
    rows.push_back(r);
  }
  cudaEvent_t events[5];
  for (cudaEvent_t& e : events) check(cudaEventCreate(&e), "cudaEventCreate");
  const int max_bits = static_cast<int>(*std::max_element(cfg.bits.begin(), cfg.bits.end()));
  hybrid<K> h(n, max_bits);
  for (const std::uint64_t bits : cfg.bits)
    for (const bool top : {false, true}) {
      row r{top ? "msd_hybrid_top" : "msd_hybrid", type, dist, n, static_cast<int>(bits)};
      std::vector<double> total, phase[4];
      for (int rep = 0; rep <= cfg.reps; ++rep) {
        reset();
        h.sort(keys, out, r.bits, top, events);
        check(cudaEventSynchronize(events[4]), "hybrid");
        if (rep == 0) continue;  // the warm-up (it also grows the workspace)
        float ms = 0;
        check(cudaEventElapsedTime(&ms, events[0], events[4]), "cudaEventElapsedTime");
        total.push_back(ms);
        for (int p = 0; p < 4; ++p) {
          check(cudaEventElapsedTime(&ms, events[p], events[p + 1]), "cudaEventElapsedTime");
          phase[p].push_back(ms);
        }
      }
      r.ms = median(total);
      for (int p = 0; p < 4; ++p) r.phase_ms[p] = median(phase[p]);
      r.cub_ms = cub_ms;
      r.extra_bytes = h.extra_bytes(r.bits) + n * sizeof(K);  // and the output buffer
      check(cudaMemcpy(got.data(), out, n * sizeof(K), cudaMemcpyDeviceToHost), "cudaMemcpy");
      r.verified = got == want;
      rows.push_back(r);
    }
  for (cudaEvent_t e : events) cudaEventDestroy(e);
  cudaFree(pristine);
  cudaFree(keys);
  cudaFree(out);
}

void run(const config& cfg) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::vector<row> rows;
  for (const std::string& type : cfg.types)
    for (const gpusort::tools::distribution d : cfg.dists)
      for (const std::uint64_t n : cfg.sizes) {
        if (type == "u64")
          run_size<std::uint64_t>(cfg, type, n, d, rows);
        else
          run_size<std::int64_t>(cfg, type, n, d, rows);
      }
  FILE* csv = cfg.csv.empty() ? nullptr : std::fopen(cfg.csv.c_str(), "w");
  if (!cfg.csv.empty() && !csv) throw usage_error("--csv: cannot open " + cfg.csv);
  const char* header =
      "gpu,algorithm,type,dist,n,bits,ms,gkeys_per_s,cub_radix_ms,vs_cub_radix,window_ms,msd_ms,"
      "starts_ms,buckets_ms,extra_bytes,verified\n";
  std::printf("%s", header);
  if (csv) std::fprintf(csv, "%s", header);
  bool all_verified = true;
  for (const row& r : rows) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "%s,%s,%s,%s,%llu,%d,%.4f,%.2f,%.4f,%.3f,%.4f,%.4f,%.4f,%.4f,%zu,%s\n",
                  gpusort::tools::csv_field(prop.name).c_str(), r.algorithm.c_str(),
                  r.type.c_str(), r.dist.c_str(),
                  static_cast<unsigned long long>(r.n), r.bits, r.ms, r.n / (r.ms * 1e6), r.cub_ms,
                  r.cub_ms / r.ms, r.phase_ms[0], r.phase_ms[1], r.phase_ms[2], r.phase_ms[3],
                  r.extra_bytes, r.verified ? "yes" : "NO");
    std::printf("%s", line);
    if (csv) std::fprintf(csv, "%s", line);
    all_verified = all_verified && r.verified;
  }
  if (csv) std::fclose(csv);
  if (!all_verified) throw std::logic_error("a result was wrong (verified: NO)");
}

const char* const usage =
    "usage: gpusort-radix-hybrid [--sizes 2^24,2^26,2^28] [--bits 16,20,24] [--types u64,i64]\n"
    "                            [--dists uniform,zipf] [--reps 9] [--seed 1] [--csv FILE]\n";

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
      if (!gpusort::tools::parse_distribution(name, d))
        throw usage_error("--dists: no distribution '" + name + "'");
      cfg.dists.push_back(d);
    }
  }
  if (args.has("types")) cfg.types = gpusort::tools::split(args.get("types"), ',');
  for (const std::string& type : cfg.types)
    if (type != "u64" && type != "i64") throw usage_error("--types: u64 or i64, not " + type);
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
