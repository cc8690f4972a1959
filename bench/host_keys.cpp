// gpusort_host_keys: gpusort::sort of keys in host memory (gpusort/external.hpp) on one GPU
// and on several, against GCC's parallel mode sort on all cores, on the same random array, in
// one process:
//   gpusort_host_keys LOG2N|COUNT [DEVICE_BUDGET_BYTES] [u32|u64|f32] [GPU_COUNTS] [nocpu]
// COUNT: 2^k or 2^k+c (the tool's counts), for sizes between powers of two.
// GPU_COUNTS: a comma list (default 1): each count c sorts on GPUs 0 .. c-1
// (external_options::devices). Prints one CSV row per side (keys, device budget, GPUs,
// seconds, keys/s) and the ratios. Every output is checked (in order, and the same keys by an
// order-independent checksum) before anything is printed. The array is filled again from the
// same seed before each side, so only one copy and the pipeline's runs live at once.
#include <omp.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <parallel/algorithm>
#include <span>
#include <string>
#include <vector>

#include "cli.hpp"  // parse_count
#include "gpusort/external.hpp"

namespace {

template <class K>
void fill(K* keys, std::uint64_t n) {
#pragma omp parallel for schedule(static, 1 << 16)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
    const std::uint64_t bits = gpusort::detail::external::mix64(static_cast<std::uint64_t>(i) + 12345);
    if constexpr (std::is_floating_point_v<K>)
      keys[i] = static_cast<K>(static_cast<double>(bits >> 11) * 0x1.0p-53 * 2e6 - 1e6);
    else
      std::memcpy(&keys[i], &bits, sizeof(K));
  }
}

// (sum, xor) of the keys' hashes, and whether they are in order.
template <class K>
std::pair<std::pair<std::uint64_t, std::uint64_t>, bool> summary(const K* keys, std::uint64_t n) {
  std::uint64_t sum = 0, x = 0, bad = 0;
#pragma omp parallel for reduction(+ : sum, bad) reduction(^ : x)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &keys[i], sizeof(K));
    const std::uint64_t h = gpusort::detail::external::mix64(bits);
    sum += h;
    x ^= h;
    if (i > 0 && gpusort::less<K>{}(keys[i], keys[i - 1])) ++bad;
  }
  return {{sum, x}, bad == 0};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct side {
  std::string name;
  int gpus;
  double seconds;
};

template <class K>
int run(std::uint64_t n, std::uint64_t budget, const char* type, const std::vector<int>& counts,
        bool cpu) {
  std::unique_ptr<K[]> keys(new K[n]);
  fill(keys.get(), n);
  const auto before = summary(keys.get(), n).first;
  std::vector<side> sides;
  for (const int count : counts) {
    fill(keys.get(), n);
    gpusort::external_options opt;
    opt.device_budget_bytes = budget;
    for (int d = 0; d < count; ++d) opt.devices.push_back(d);
    const auto start = std::chrono::steady_clock::now();
    const gpusort::file_sort_stats stats = gpusort::sort(std::span<K>(keys.get(), n), opt);
    const double seconds = seconds_since(start);
    const auto after = summary(keys.get(), n);
    if (after.first != before || !after.second) {
      std::fprintf(stderr, "gpusort_host_keys: wrong result on %d GPU(s) (%s)\n", count,
                   after.second ? "keys changed" : "out of order");
      return 1;
    }
    std::fprintf(stderr, "%d GPU(s):\n%s", count, stats.text().c_str());
    sides.push_back({"gpusort::sort", count, seconds});
  }
  if (cpu) {
    fill(keys.get(), n);
    const auto start = std::chrono::steady_clock::now();
    __gnu_parallel::sort(keys.get(), keys.get() + n, gpusort::less<K>{});
    sides.push_back({"cpu_parallel", 0, seconds_since(start)});
    if (!summary(keys.get(), n).second) return 1;
  }
  std::printf("side,type,keys,device_budget,gpus,seconds,keys_per_s\n");
  for (const side& s : sides)
    std::printf("%s,%s,%llu,%llu,%d,%.3f,%.4g\n", s.name.c_str(), type,
                static_cast<unsigned long long>(n), static_cast<unsigned long long>(budget),
                s.gpus, s.seconds, n / s.seconds);
  for (const side& s : sides)
    if (s.gpus > 0)
      std::printf("# %d GPU(s): %.2f GB/s of keys, %.2fx one GPU%s\n", s.gpus,
                  n * sizeof(K) / s.seconds / 1e9, sides[0].seconds / s.seconds,
                  sides[0].gpus == 1 ? "" : " (the first count)");
  if (cpu)
    std::printf("# ratio cpu_parallel / gpusort::sort on %d GPU(s): %.2fx (%d threads)\n",
                sides[0].gpus, sides.back().seconds / sides[0].seconds, omp_get_max_threads());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: gpusort_host_keys LOG2N|COUNT [DEVICE_BUDGET_BYTES] [u32|u64|f32] "
                 "[GPU_COUNTS] [nocpu]\n");
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
  const bool cpu = !(argc > 5 && std::string(argv[5]) == "nocpu");
  if (type == "u64") return run<std::uint64_t>(n, budget, "u64", counts, cpu);
  if (type == "f32") return run<float>(n, budget, "f32", counts, cpu);
  return run<std::uint32_t>(n, budget, "u32", counts, cpu);
}
