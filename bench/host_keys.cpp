// gpusort_host_keys: gpusort::sort of keys in host memory (gpusort/external.hpp) against GCC's
// parallel mode sort on all cores, on the same random array, in one process:
//   gpusort_host_keys LOG2N [DEVICE_BUDGET_BYTES] [u32|u64|f32]
// Prints one CSV row per side (keys, device budget, seconds, keys/s) and the ratio. The
// output is checked (in order, and the same keys by an order-independent checksum) before
// anything is printed. The array is filled twice from the same seed, so only one copy and the
// pipeline's runs live at once.
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

template <class K>
int run(std::uint64_t n, std::uint64_t budget, const char* type) {
  std::unique_ptr<K[]> keys(new K[n]);
  fill(keys.get(), n);
  const auto before = summary(keys.get(), n).first;
  gpusort::external_options opt;
  opt.device_budget_bytes = budget;
  auto start = std::chrono::steady_clock::now();
  const gpusort::file_sort_stats stats = gpusort::sort(std::span<K>(keys.get(), n), opt);
  const double gpu_s = seconds_since(start);
  const auto after = summary(keys.get(), n);
  if (after.first != before || !after.second) {
    std::fprintf(stderr, "gpusort_host_keys: wrong result (%s)\n",
                 after.second ? "keys changed" : "out of order");
    return 1;
  }
  std::fprintf(stderr, "%s", stats.text().c_str());
  fill(keys.get(), n);
  start = std::chrono::steady_clock::now();
  __gnu_parallel::sort(keys.get(), keys.get() + n, gpusort::less<K>{});
  const double cpu_s = seconds_since(start);
  std::printf("side,type,keys,device_budget,seconds,keys_per_s\n");
  std::printf("gpusort::sort,%s,%llu,%llu,%.3f,%.4g\n", type, static_cast<unsigned long long>(n),
              static_cast<unsigned long long>(budget), gpu_s, n / gpu_s);
  std::printf("cpu_parallel,%s,%llu,,%.3f,%.4g\n", type, static_cast<unsigned long long>(n), cpu_s,
              n / cpu_s);
  std::printf("# ratio cpu_parallel / gpusort::sort: %.2fx (%d threads)\n", cpu_s / gpu_s,
              omp_get_max_threads());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gpusort_host_keys LOG2N [DEVICE_BUDGET_BYTES] [u32|u64|f32]\n");
    return 2;
  }
  const std::uint64_t n = std::uint64_t{1} << std::strtoull(argv[1], nullptr, 10);
  const std::uint64_t budget = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 0;
  const std::string type = argc > 3 ? argv[3] : "u32";
  if (type == "u64") return run<std::uint64_t>(n, budget, "u64");
  if (type == "f32") return run<float>(n, budget, "f32");
  return run<std::uint32_t>(n, budget, "u32");
}
