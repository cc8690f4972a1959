// gpusort_host_keys: gpusort::sort of keys (or pairs) in host memory (gpusort/external.hpp) on
// one GPU and on several, against the bare link rate and GCC's parallel mode sort on all
// cores, on the same random array, in one process:
//   gpusort_host_keys LOG2N|COUNT [DEVICE_BUDGET_BYTES] [TYPE] [GPU_COUNTS] [FLAGS...]
// COUNT: 2^k or 2^k+c (the tool's counts), for sizes between powers of two.
// TYPE: u32 (default), i32, f32, u64, i64, f64, u16, f16, or KEY+VALUE for pairs with values of
// 4 or 8 bytes (u32+u32, u64+u32, f32+u32, u32+u64).
// GPU_COUNTS: a comma list (default 1): each count c sorts on GPUs 0 .. c-1
// (external_options::devices).
// FLAGS: nocpu (no CPU baseline), pinned (the array in cudaHostAlloc'd memory), register
// (external_options::register_host_memory).
// Prints the link rate of every GPU (a pinned cudaMemcpy of the array's bytes, up to 4 GiB,
// each way, alone and on all GPUs of the count at once), the floor it implies (every byte in
// once and out once over the links), one CSV row per side and the ratios; then the plan and
// phase times of each GPU side. Every output is checked (in order, and the same records by an
// order-independent checksum) before anything is printed. The array is filled again from the
// same seed before each side.
#include <cuda_runtime.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <parallel/algorithm>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "cli.hpp"  // parse_count
#include "gpusort/external.hpp"
#include "link_copy.hpp"  // measure_link (src/external)
#include "records.hpp"    // mix64

namespace {

namespace ext = gpusort::detail::external;

std::uint64_t bits_of(const void* p, std::size_t size) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, p, size);
  return bits;
}

template <class K>
K key_from(std::uint64_t bits) {
  if constexpr (std::is_floating_point_v<K>) {
    return static_cast<K>(static_cast<double>(bits >> 11) * 0x1.0p-53 * 2e6 - 1e6);
  } else if constexpr (std::is_same_v<K, __half>) {
    return __float2half(static_cast<float>(static_cast<double>(bits >> 11) * 0x1.0p-53 * 2e4 - 1e4));
  } else {
    K key;
    std::memcpy(&key, &bits, sizeof(K));
    return key;
  }
}

template <class K, class V>
void fill(K* keys, V* values, std::uint64_t n) {
#pragma omp parallel for schedule(static, 1 << 16)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
    keys[i] = key_from<K>(ext::mix64(static_cast<std::uint64_t>(i) + 12345));
    if constexpr (!std::is_void_v<V>) values[i] = static_cast<V>(i);
  }
}

// (sum, xor) of the records' hashes, and whether the keys are in order.
template <class K, class V>
std::pair<std::pair<std::uint64_t, std::uint64_t>, bool> summary(const K* keys, const V* values,
                                                                  std::uint64_t n) {
  std::uint64_t sum = 0, x = 0, bad = 0;
#pragma omp parallel for reduction(+ : sum, bad) reduction(^ : x)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
    std::uint64_t bits = bits_of(&keys[i], sizeof(K));
    if constexpr (!std::is_void_v<V>) bits = ext::mix64(bits) + bits_of(&values[i], sizeof(V));
    const std::uint64_t h = ext::mix64(bits);
    sum += h;
    x ^= h;
    if (i > 0 && gpusort::less<K>{}(keys[i], keys[i - 1])) ++bad;
  }
  return {{sum, x}, bad == 0};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Host memory for the array: pageable (new[]), or pinned (cudaHostAlloc).
template <class T>
struct host_array {
  host_array(std::uint64_t n, bool pinned) : pinned_(pinned) {
    if (pinned) {
      void* p = nullptr;
      if (cudaMallocHost(&p, std::max<std::uint64_t>(n, 1) * sizeof(T)) != cudaSuccess) {
        std::fprintf(stderr, "gpusort_host_keys: cannot allocate %llu pinned bytes\n",
                     static_cast<unsigned long long>(n * sizeof(T)));
        std::exit(1);
      }
      data = static_cast<T*>(p);
    } else {
      data = new T[std::max<std::uint64_t>(n, 1)];
    }
  }
  ~host_array() {
    if (pinned_) cudaFreeHost(data); else delete[] data;
  }
  T* data = nullptr;
  bool pinned_;
};

struct side {
  std::string name;
  int gpus;
  double seconds;
  std::string stats;
};

// The links of GPUs 0 .. count-1: each alone, then all at once; returns the floor of moving
// `bytes` in and out, split evenly over them, at the all-at-once rates.
double print_links(int count, std::uint64_t bytes) {
  const std::uint64_t probe = std::min<std::uint64_t>(bytes, std::uint64_t{4} << 30);
  for (int g = 0; g < count; ++g) {
    const ext::link_rate r = ext::measure_link(g, probe);
    std::printf("# link GPU %d alone: %.1f GB/s to the GPU, %.1f GB/s back (pinned cudaMemcpy of %llu bytes)\n",
                g, probe / r.to_device_seconds / 1e9, probe / r.to_host_seconds / 1e9,
                static_cast<unsigned long long>(probe));
  }
  std::vector<ext::link_rate> all(count);
  std::vector<std::thread> threads;
  for (int g = 0; g < count; ++g) threads.emplace_back([&, g] { all[g] = ext::measure_link(g, probe); });
  for (std::thread& t : threads) t.join();
  double in_rate = 0, out_rate = 0;
  for (const ext::link_rate& r : all) {
    in_rate += probe / r.to_device_seconds;
    out_rate += probe / r.to_host_seconds;
  }
  const double floor = bytes / in_rate + bytes / out_rate;
  std::printf("# links of %d GPU(s) at once: %.1f GB/s to, %.1f GB/s back; floor (every byte in and "
              "out once): %.3f s = %.1f GB/s end to end\n",
              count, in_rate / 1e9, out_rate / 1e9, floor, bytes / floor / 1e9);
  return floor;
}

template <class K, class V>
int run(std::uint64_t n, std::uint64_t budget, const std::string& type, const std::vector<int>& counts,
        bool cpu, bool pinned, bool registered) {
  constexpr bool pairs = !std::is_void_v<V>;
  using VS = std::conditional_t<pairs, V, char>;
  host_array<K> keys(n, pinned);
  host_array<VS> values(pairs ? n : 0, pinned);
  V* vals = nullptr;
  if constexpr (pairs) vals = values.data;
  const std::uint64_t bytes = n * (sizeof(K) + (pairs ? sizeof(VS) : 0));
  fill<K, V>(keys.data, vals, n);
  const auto before = summary<K, V>(keys.data, vals, n).first;
  std::vector<side> sides;
  std::vector<double> floors;
  for (const int count : counts) {
    floors.push_back(print_links(count, bytes));
    fill<K, V>(keys.data, vals, n);
    gpusort::external_options opt;
    opt.device_budget_bytes = budget;
    opt.register_host_memory = registered;
    for (int d = 0; d < count; ++d) opt.devices.push_back(d);
    const auto start = std::chrono::steady_clock::now();
    gpusort::file_sort_stats stats;
    if constexpr (pairs)
      stats = gpusort::sort(std::span<K>(keys.data, n), std::span<V>(vals, n), opt);
    else
      stats = gpusort::sort(std::span<K>(keys.data, n), opt);
    const double seconds = seconds_since(start);
    const auto after = summary<K, V>(keys.data, vals, n);
    if (after.first != before || !after.second) {
      std::fprintf(stderr, "gpusort_host_keys: wrong result on %d GPU(s) (%s)\n", count,
                   after.second ? "records changed" : "out of order");
      return 1;
    }
    sides.push_back({"gpusort::sort", count, seconds, stats.text()});
  }
  if (cpu) {
    fill<K, V>(keys.data, vals, n);
    const auto start = std::chrono::steady_clock::now();
    if constexpr (pairs) {
      std::vector<std::pair<K, V>> records(n);
#pragma omp parallel for
      for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) records[i] = {keys.data[i], vals[i]};
      __gnu_parallel::stable_sort(records.begin(), records.end(), [](const auto& a, const auto& b) {
        return gpusort::less<K>{}(a.first, b.first);
      });
#pragma omp parallel for
      for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
        keys.data[i] = records[i].first;
        vals[i] = records[i].second;
      }
    } else {
      __gnu_parallel::sort(keys.data, keys.data + n, gpusort::less<K>{});
    }
    sides.push_back({"cpu_parallel", 0, seconds_since(start), ""});
    if (!summary<K, V>(keys.data, vals, n).second) return 1;
  }
  std::printf("side,type,keys,bytes,device_budget,gpus,host_memory,seconds,keys_per_s,gb_per_s,link_floor_s\n");
  for (std::size_t i = 0; i < sides.size(); ++i) {
    const side& s = sides[i];
    std::printf("%s,%s,%llu,%llu,%llu,%d,%s,%.3f,%.4g,%.2f,%.3f\n", s.name.c_str(), type.c_str(),
                static_cast<unsigned long long>(n), static_cast<unsigned long long>(bytes),
                static_cast<unsigned long long>(budget), s.gpus,
                pinned ? "pinned" : (registered ? "registered" : "pageable"), s.seconds, n / s.seconds,
                bytes / s.seconds / 1e9, s.gpus > 0 ? floors[i] : 0.0);
  }
  for (std::size_t i = 0; i < counts.size(); ++i)
    std::printf("# %d GPU(s): %.2f GB/s end to end, %.0f%% of the link floor, %.2fx the first count\n",
                sides[i].gpus, bytes / sides[i].seconds / 1e9, 100 * floors[i] / sides[i].seconds,
                sides[0].seconds / sides[i].seconds);
  if (cpu)
    std::printf("# ratio cpu_parallel / gpusort::sort on %d GPU(s): %.2fx (%d threads)\n",
                sides[0].gpus, sides.back().seconds / sides[0].seconds, omp_get_max_threads());
  for (std::size_t i = 0; i < counts.size(); ++i)
    std::printf("# stats on %d GPU(s):\n%s", sides[i].gpus, sides[i].stats.c_str());
  return 0;
}

template <class K>
int with_values(const std::string& value, std::uint64_t n, std::uint64_t budget,
                const std::string& type, const std::vector<int>& counts, bool cpu, bool pinned,
                bool registered) {
  if (value.empty()) return run<K, void>(n, budget, type, counts, cpu, pinned, registered);
  if (value == "u32") return run<K, std::uint32_t>(n, budget, type, counts, cpu, pinned, registered);
  if (value == "u64") return run<K, std::uint64_t>(n, budget, type, counts, cpu, pinned, registered);
  std::fprintf(stderr, "gpusort_host_keys: values are u32 or u64\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: gpusort_host_keys LOG2N|COUNT [DEVICE_BUDGET_BYTES] [TYPE] "
                 "[GPU_COUNTS] [nocpu] [pinned] [register]\n");
    return 2;
  }
  const std::string size = argv[1];
  std::uint64_t n = 0;
  try {
    n = size.starts_with("2^") ? gpusort::tools::parse_count(size, "COUNT")
                               : std::uint64_t{1} << std::strtoull(argv[1], nullptr, 10);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpusort_host_keys: %s\n", e.what());
    return 2;
  }
  const std::uint64_t budget = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 0;
  const std::string type = argc > 3 ? argv[3] : "u32";
  std::vector<int> counts;
  for (const char* at = argc > 4 ? argv[4] : "1"; *at;) {
    char* end = nullptr;
    counts.push_back(static_cast<int>(std::strtol(at, &end, 10)));
    if (end == at || counts.back() < 1) {
      std::fprintf(stderr, "gpusort_host_keys: GPU_COUNTS is a comma list of counts\n");
      return 2;
    }
    at = *end == ',' ? end + 1 : end;
  }
  bool cpu = true, pinned = false, registered = false;
  for (int i = 5; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "nocpu") cpu = false;
    else if (flag == "pinned") pinned = true;
    else if (flag == "register") registered = true;
    else {
      std::fprintf(stderr, "gpusort_host_keys: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  const std::size_t plus = type.find('+');
  const std::string key = type.substr(0, plus);
  const std::string value = plus == std::string::npos ? "" : type.substr(plus + 1);
  if (key == "u32") return with_values<std::uint32_t>(value, n, budget, type, counts, cpu, pinned, registered);
  if (key == "i32") return with_values<std::int32_t>(value, n, budget, type, counts, cpu, pinned, registered);
  if (key == "f32") return with_values<float>(value, n, budget, type, counts, cpu, pinned, registered);
  if (key == "u64") return with_values<std::uint64_t>(value, n, budget, type, counts, cpu, pinned, registered);
  if (key == "i64") return with_values<std::int64_t>(value, n, budget, type, counts, cpu, pinned, registered);
  if (key == "f64") return with_values<double>(value, n, budget, type, counts, cpu, pinned, registered);
  if (key == "u16") return with_values<std::uint16_t>(value, n, budget, type, counts, cpu, pinned, registered);
  if (key == "f16") return with_values<__half>(value, n, budget, type, counts, cpu, pinned, registered);
  std::fprintf(stderr, "gpusort_host_keys: unknown type %s\n", type.c_str());
  return 2;
}
