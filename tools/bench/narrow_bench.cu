// gpusort-narrow-bench: the narrow keys (bool's 8- and 16-bit neighbours, __half,
// __nv_bfloat16) against the 32-bit keys and CUB's radix sort of the same type, one GPU.
//
//   gpusort-narrow-bench [--sizes 2^20,2^24,2^28] [--types f32,u32,bf16,f16,u16,i16,u8,i8]
//                        [--row 4096] [--reps 9] [--seed 1] [--csv FILE]
//
// Four operations a type and size:
//   keys     gpusort::sort_keys (automatic) | cub::DeviceRadixSort::SortKeys of the same type
//   pairs    gpusort::sort_pairs with u32 values | SortPairs with the same values
//   batched  gpusort::sort_batched_keys of rows of --row keys (automatic) |
//            cub::DeviceSegmentedRadixSort::SortKeys of the same rows
//   bitonic  gpusort::sort_keys with algorithm::bitonic (in place) | SortKeys, as for keys
// Keys are uniform random bits (16-bit floats: every finite value, no NaN, both zeros), made on
// the device from --seed. Timing: CUDA events around the sort alone, after a device copy from a
// pristine buffer; one warm-up, then the median of --reps. Each row gives milliseconds, keys/s,
// gpusort over CUB, and keys/s over f32's for the same operation and size (f32 runs first when
// listed). The extra device memory is the workspace each asks for.
// Every gpusort result is verified once, outside the timing: sorted (by the keys' order, on
// the host) and the same multiset of bits as the input; pairs: each value beside its key.
//
// Exit codes: 0 every result verified, 1 a wrong result, 2 bad usage, 3 a CUDA failure.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli.hpp"  // arguments, parse_sizes, parse_count, split, usage_error
#include "common/csv.hpp"
#include "small_bench.hpp"  // check, event_timer, bench_main
#include "gpusort/segmented.hpp"
#include "gpusort/sort.hpp"

namespace {

using gpusort::tools::usage_error;

using gpusort::tools::check;

// Uniform random bits; the floats' NaNs turned into finite keys of the same sign.
template <class K>
__global__ void fill_keys(K* keys, std::uint64_t n, std::uint64_t seed) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    std::uint64_t x = (i + seed * 0x632BE59BD9B4E019ull) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    if constexpr (std::is_same_v<K, __half>) {
      auto b = static_cast<unsigned short>(x);
      if ((b & 0x7c00) == 0x7c00) b ^= 0x4000;
      keys[i] = __ushort_as_half(b);
    } else if constexpr (std::is_same_v<K, __nv_bfloat16>) {
      auto b = static_cast<unsigned short>(x);
      if ((b & 0x7f80) == 0x7f80) b ^= 0x4000;
      keys[i] = __ushort_as_bfloat16(b);
    } else if constexpr (std::is_same_v<K, float>) {
      auto b = static_cast<unsigned>(x);
      if ((b & 0x7f800000u) == 0x7f800000u) b ^= 0x40000000u;
      keys[i] = __uint_as_float(b);
    } else {
      keys[i] = static_cast<K>(x);
    }
  }
}

__global__ void fill_positions(std::uint32_t* values, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x)
    values[i] = static_cast<std::uint32_t>(i);
}

// A key's value for the host check (every key here is finite).
template <class K>
double value_of(K k) {
  if constexpr (std::is_same_v<K, __half>)
    return __half2float(k);
  else if constexpr (std::is_same_v<K, __nv_bfloat16>)
    return __bfloat162float(k);
  else
    return static_cast<double>(k);
}

template <class K>
std::uint32_t bits_of(K k) {
  if constexpr (sizeof(K) == 2) {
    std::uint16_t b;
    std::memcpy(&b, &k, 2);
    return b;
  } else if constexpr (sizeof(K) == 1) {
    std::uint8_t b;
    std::memcpy(&b, &k, 1);
    return b;
  } else {
    std::uint32_t b;
    std::memcpy(&b, &k, 4);
    return b;
  }
}

struct row {
  std::string op, type;
  std::uint64_t n = 0;
  double ms = 0, cub_ms = 0;
  std::size_t extra_bytes = 0, cub_extra_bytes = 0;
  bool verified = false;
};

struct config {
  std::vector<std::uint64_t> sizes{std::uint64_t{1} << 20, std::uint64_t{1} << 24,
                                   std::uint64_t{1} << 28};
  std::vector<std::string> types{"f32", "u32", "bf16", "f16", "u16", "i16", "u8", "i8"};
  std::uint64_t row = 4096;
  int reps = 9;
  std::uint64_t seed = 1;
  std::string csv;
};

// A hash of the multiset of (row, bits): a sum of mixed words, so the order does not count.
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ull;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dull;
  return x ^ (x >> 33);
}

// One gpusort result against its input (host copies): each row in the keys' order (-0.0
// before +0.0), the same keys in each row, and each value the input position of its key.
template <class K>
bool verified(const std::vector<K>& input, const std::vector<K>& got,
              const std::vector<std::uint32_t>* values, std::uint64_t row) {
  std::uint64_t want = 0, have = 0;
  for (std::uint64_t i = 0; i < input.size(); ++i) {
    want += mix((i / row) << 32 | bits_of(input[i]));
    have += mix((i / row) << 32 | bits_of(got[i]));
    if ((i + 1) % row == 0 || i + 1 == got.size()) continue;
    const double a = value_of(got[i]), b = value_of(got[i + 1]);
    if (b < a || (a == b && std::signbit(b) && !std::signbit(a))) return false;
  }
  if (want != have) return false;
  if (values) {
    std::vector<bool> seen(input.size(), false);
    for (std::uint64_t i = 0; i < got.size(); ++i) {
      const std::uint32_t v = (*values)[i];
      if (v >= input.size() || seen[v] || bits_of(input[v]) != bits_of(got[i])) return false;
      seen[v] = true;
    }
  }
  return true;
}

template <class K>
void run_type(const std::string& name, const config& cfg, std::vector<row>& rows) {
  gpusort::tools::event_timer clock;
  for (const std::uint64_t n : cfg.sizes) {
    K *pristine = nullptr, *keys = nullptr, *alt_keys = nullptr;
    std::uint32_t *values = nullptr, *alt_values = nullptr, *positions = nullptr;
    std::uint64_t* offsets = nullptr;
    check(cudaMalloc(&pristine, n * sizeof(K)), "cudaMalloc");
    check(cudaMalloc(&keys, n * sizeof(K)), "cudaMalloc");
    check(cudaMalloc(&alt_keys, n * sizeof(K)), "cudaMalloc");
    check(cudaMalloc(&values, n * 4), "cudaMalloc");
    check(cudaMalloc(&alt_values, n * 4), "cudaMalloc");
    check(cudaMalloc(&positions, n * 4), "cudaMalloc");
    const std::uint64_t rows_count = n / cfg.row;
    check(cudaMalloc(&offsets, (rows_count + 1) * 8), "cudaMalloc");
    std::vector<std::uint64_t> host_offsets(rows_count + 1);
    for (std::uint64_t r = 0; r <= rows_count; ++r) host_offsets[r] = r * cfg.row;
    check(cudaMemcpy(offsets, host_offsets.data(), host_offsets.size() * 8, cudaMemcpyHostToDevice),
          "cudaMemcpy");
    fill_keys<<<4096, 256>>>(pristine, n, cfg.seed);
    fill_positions<<<4096, 256>>>(positions, n);
    check(cudaDeviceSynchronize(), "fill");
    std::vector<K> input(n), got(n);
    check(cudaMemcpy(input.data(), pristine, n * sizeof(K), cudaMemcpyDeviceToHost), "cudaMemcpy");
    const auto reset = [&] {
      check(cudaMemcpyAsync(keys, pristine, n * sizeof(K), cudaMemcpyDeviceToDevice), "copy");
      check(cudaMemcpyAsync(values, positions, n * 4, cudaMemcpyDeviceToDevice), "copy");
    };
    for (const std::string op : {"keys", "pairs", "batched", "bitonic"}) {
      const bool pairs = op == "pairs", batched = op == "batched", bitonic = op == "bitonic";
      const std::uint64_t count = batched ? rows_count * cfg.row : n;
      row r{op, name, count};
      if (batched && rows_count == 0) continue;
      std::size_t bytes = 0;
      const auto ours = [&](void* temp) {
        if (batched)
          return gpusort::sort_batched_keys(temp, bytes, keys, rows_count, cfg.row);
        if (pairs) return gpusort::sort_pairs(temp, bytes, keys, values, count);
        return gpusort::sort_keys(temp, bytes, keys, count,
                                  {.algo = bitonic ? gpusort::algorithm::bitonic
                                                   : gpusort::algorithm::automatic});
      };
      check(ours(nullptr), "gpusort workspace");
      void* temp = nullptr;
      check(cudaMalloc(&temp, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
      r.extra_bytes = bytes;
      r.ms = clock.median_ms(cfg.reps, reset, [&] { check(ours(temp), "gpusort"); });
      reset();
      check(ours(temp), "gpusort");
      check(cudaMemcpy(got.data(), keys, count * sizeof(K), cudaMemcpyDeviceToHost), "cudaMemcpy");
      std::vector<std::uint32_t> got_values;
      if (pairs) {
        got_values.resize(count);
        check(cudaMemcpy(got_values.data(), values, count * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
      }
      std::vector<K> in(input.begin(), input.begin() + count);
      got.resize(count);
      r.verified = verified(in, got, pairs ? &got_values : nullptr, batched ? cfg.row : count);
      got.resize(n);
      check(cudaFree(temp), "cudaFree");
      // CUB of the same type (its own float order: -0.0 and +0.0 tie), double buffers.
      std::size_t cub_bytes = 0;
      const auto cub_sort = [&](void* t) {
        cub::DoubleBuffer<K> k(keys, alt_keys);
        cub::DoubleBuffer<std::uint32_t> v(values, alt_values);
        if (batched)
          return cub::DeviceSegmentedRadixSort::SortKeys(t, cub_bytes, k, count, rows_count,
                                                         offsets, offsets + 1);
        if (pairs) return cub::DeviceRadixSort::SortPairs(t, cub_bytes, k, v, count);
        return cub::DeviceRadixSort::SortKeys(t, cub_bytes, k, count);
      };
      check(cub_sort(nullptr), "CUB workspace");
      check(cudaMalloc(&temp, std::max<std::size_t>(cub_bytes, 1)), "cudaMalloc");
      r.cub_extra_bytes = cub_bytes + count * sizeof(K) + (pairs ? count * 4 : 0);
      r.cub_ms = clock.median_ms(cfg.reps, reset, [&] { check(cub_sort(temp), "CUB"); });
      check(cudaFree(temp), "cudaFree");
      rows.push_back(r);
    }
    cudaFree(pristine);
    cudaFree(keys);
    cudaFree(alt_keys);
    cudaFree(values);
    cudaFree(alt_values);
    cudaFree(positions);
    cudaFree(offsets);
  }
}

const char* const usage =
    "usage: gpusort-narrow-bench [--sizes 2^20,2^24,2^28] [--types f32,u32,bf16,f16,u16,i16,u8,i8]\n"
    "                            [--row 4096] [--reps 9] [--seed 1] [--csv FILE]\n";

config parse(int argc, char** argv) {
  const gpusort::tools::arguments args = gpusort::tools::parse_arguments(
      argc, argv, {"sizes", "types", "row", "reps", "seed", "csv"}, {});
  args.positional(0, "options only");
  config cfg;
  if (args.has("sizes")) cfg.sizes = gpusort::tools::parse_sizes(args.get("sizes"));
  if (args.has("types")) cfg.types = gpusort::tools::split(args.get("types"), ',');
  if (args.has("row")) cfg.row = gpusort::tools::parse_count(args.get("row"), "--row");
  if (args.has("reps"))
    cfg.reps = static_cast<int>(gpusort::tools::parse_unsigned(args.get("reps"), "--reps"));
  if (args.has("seed")) cfg.seed = gpusort::tools::parse_unsigned(args.get("seed"), "--seed");
  cfg.csv = args.get("csv");
  if (cfg.reps < 1 || cfg.reps > 1000) throw usage_error("--reps: from 1 to 1000");
  if (cfg.row == 0) throw usage_error("--row: at least 1 key");
  for (const std::uint64_t n : cfg.sizes)
    if (n < 2 || n > (std::uint64_t{1} << 32))
      throw usage_error("--sizes: from 2 to 2^32 keys (the values are u32 positions)");
  return cfg;
}

void run(const config& cfg) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::vector<row> rows;
  for (const std::string& t : cfg.types) {
    if (t == "f32") run_type<float>(t, cfg, rows);
    else if (t == "u32") run_type<std::uint32_t>(t, cfg, rows);
    else if (t == "bf16") run_type<__nv_bfloat16>(t, cfg, rows);
    else if (t == "f16") run_type<__half>(t, cfg, rows);
    else if (t == "u16") run_type<std::uint16_t>(t, cfg, rows);
    else if (t == "i16") run_type<std::int16_t>(t, cfg, rows);
    else if (t == "u8") run_type<std::uint8_t>(t, cfg, rows);
    else if (t == "i8") run_type<std::int8_t>(t, cfg, rows);
    else throw usage_error("--types: unknown type " + t + " (f32 u32 bf16 f16 u16 i16 u8 i8)");
  }
  std::map<std::pair<std::string, std::uint64_t>, double> f32_rate;
  for (const row& r : rows)
    if (r.type == "f32") f32_rate[{r.op, r.n}] = r.n / r.ms;
  FILE* csv = cfg.csv.empty() ? nullptr : std::fopen(cfg.csv.c_str(), "w");
  if (!cfg.csv.empty() && !csv) throw usage_error("--csv: cannot write " + cfg.csv);
  const char* header =
      "gpu,op,type,n,gpusort_ms,gpusort_gkeys_s,cub_ms,cub_gkeys_s,gpusort_over_cub,"
      "keys_s_over_f32,gpusort_extra_bytes,cub_extra_bytes,verified\n";
  std::printf("%s", header);
  if (csv) std::fprintf(csv, "%s", header);
  bool all_verified = true;
  for (const row& r : rows) {
    const auto f32 = f32_rate.find({r.op, r.n});
    const std::string over_f32 =
        f32 == f32_rate.end() ? "" : std::to_string((r.n / r.ms) / f32->second);
    char line[512];
    std::snprintf(line, sizeof line, "%s,%s,%s,%llu,%.4f,%.2f,%.4f,%.2f,%.3f,%s,%zu,%zu,%s\n",
                  gpusort::tools::csv_field(prop.name).c_str(), r.op.c_str(), r.type.c_str(),
                  static_cast<unsigned long long>(r.n), r.ms, r.n / (r.ms * 1e6), r.cub_ms,
                  r.n / (r.cub_ms * 1e6), r.cub_ms / r.ms, over_f32.c_str(), r.extra_bytes,
                  r.cub_extra_bytes, r.verified ? "yes" : "NO");
    std::printf("%s", line);
    if (csv) std::fprintf(csv, "%s", line);
    all_verified = all_verified && r.verified;
  }
  if (csv) std::fclose(csv);
  if (!all_verified) throw std::logic_error("a result was wrong (verified: NO)");
}

}  // namespace

int main(int argc, char** argv) {
  return gpusort::tools::bench_main("gpusort-narrow-bench", usage, [&] {
    run(parse(argc, argv));
  });
}
