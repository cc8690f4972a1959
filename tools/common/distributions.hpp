// Input data sets for tests, benchmarks and `gpusort gen`: every distribution of docs/design.md (Testing),
// reproducible from a seed, generated in parallel (counter-based: the result does not depend
// on the number of threads).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace gpusort::tools {

enum class distribution {
  uniform,
  gaussian,
  zipf,
  all_equal,
  sorted,
  reverse,
  few_unique,
  organ_pipe,
  reduced_entropy
};

inline constexpr distribution all_distributions[] = {
    distribution::uniform,    distribution::gaussian,   distribution::zipf,
    distribution::all_equal,  distribution::sorted,     distribution::reverse,
    distribution::few_unique, distribution::organ_pipe, distribution::reduced_entropy};

constexpr std::string_view to_string(distribution d) {
  switch (d) {
    case distribution::uniform: return "uniform";
    case distribution::gaussian: return "gaussian";
    case distribution::zipf: return "zipf";
    case distribution::all_equal: return "all_equal";
    case distribution::sorted: return "sorted";
    case distribution::reverse: return "reverse";
    case distribution::few_unique: return "few_unique";
    case distribution::organ_pipe: return "organ_pipe";
    case distribution::reduced_entropy: return "reduced_entropy";
  }
  return "unknown";
}

constexpr bool parse_distribution(std::string_view name, distribution& out) {
  for (distribution d : all_distributions)
    if (to_string(d) == name) {
      out = d;
      return true;
    }
  return false;
}

// splitmix64 of (seed, i): independent 64 random bits per element.
constexpr std::uint64_t random_bits(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + (i + 1) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A uniform value in [0, 1) from 53 random bits.
inline double unit(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

// Maps u in [0, 1) to a key: integers over their whole range, floats over [-1e6, 1e6).
template <class K>
K key_from_unit(double u) {
  if constexpr (std::is_floating_point_v<K>) {
    return static_cast<K>(-1e6 + 2e6 * u);
  } else {
    using U = std::make_unsigned_t<K>;
    const long double span = static_cast<long double>(static_cast<U>(~U{0})) + 1.0L;
    U v = static_cast<U>(std::min<long double>(u * span, static_cast<long double>(static_cast<U>(~U{0}))));
    if constexpr (std::is_signed_v<K>) v ^= U{1} << (sizeof(U) * 8 - 1);  // unsigned order -> signed
    K k;
    std::memcpy(&k, &v, sizeof(K));
    return k;
  }
}

template <class F>
void parallel_fill(std::size_t n, F&& f) {
  const unsigned threads = n < (1u << 16) ? 1u : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (std::size_t i = n * t / threads; i < n * (t + 1) / threads; ++i) f(i);
    });
  for (auto& th : pool) th.join();
}

// reduced_entropy's words AND-ed into each key beyond the first: each bit is 1 with
// probability 2^-(ands + 1), an entropy per bit of 1.0, 0.81, 0.54, 0.34, 0.20 for 0..4.
inline constexpr int max_entropy_ands = 8;
inline constexpr int default_entropy_ands = 2;  // entropy 0.54: skewed, yet many distinct keys

struct generator_options {
  double zipf_exponent = 1.0;  // > 0
  std::uint64_t zipf_ranks = 1u << 20;
  int few_unique_count = 16;
  // reduced_entropy's ANDs (CUB's trick), 0 to max_entropy_ands; unset, the default. Set on
  // uniform keys, it makes them reduced_entropy keys (as the GPU tests ask for them).
  std::optional<int> entropy_and;
};

// 64 random bits AND-ed with `ands` more words of other streams: bits are 1 less often.
constexpr std::uint64_t reduced_entropy_bits(std::uint64_t seed, std::uint64_t i, int ands) {
  std::uint64_t bits = random_bits(seed, i);
  for (int a = 1; a <= ands; ++a) bits &= random_bits(seed + 7919 * a, i);
  return bits;
}

// The low sizeof(K) bytes of `bits` as a key.
template <class K>
K key_from_bits(std::uint64_t bits) {
  K key;
  std::memcpy(&key, &bits, sizeof(K));
  return key;
}

// A reduced-entropy key: the word's low bits, for floats too as CUB's tests make them, but
// with the exponent's top bit cleared so that every key is finite: |key| < 2, many subnormal,
// some -0.0, more ANDs making them smaller and mostly positive.
template <class K>
K reduced_entropy_key(std::uint64_t bits) {
  if constexpr (std::is_floating_point_v<K>) {
    constexpr int mantissa_bits = std::numeric_limits<K>::digits - 1;
    constexpr int exponent_top_bit = static_cast<int>(sizeof(K) * 8) - 2;
    static_assert(exponent_top_bit > mantissa_bits);
    bits &= ~(std::uint64_t{1} << exponent_top_bit);
  }
  return key_from_bits<K>(bits);
}

// The keys of the 32- and 64-bit types and the narrow integers (zipf ranks beyond the type
// clamped to its largest key).
template <class K>
std::vector<K> generate_keys(distribution d, std::size_t n, std::uint64_t seed,
                             const generator_options& opt) {
  if (d == distribution::uniform && opt.entropy_and) d = distribution::reduced_entropy;
  std::vector<K> out(n);
  auto u = [seed](std::uint64_t i, int stream = 0) {
    return unit(random_bits(seed + 0x1000003ull * stream, i));
  };
  switch (d) {
    case distribution::uniform:
    case distribution::sorted:
    case distribution::reverse:
    case distribution::organ_pipe:
      parallel_fill(n, [&](std::size_t i) {
        if constexpr (std::is_integral_v<K>)
          out[i] = key_from_bits<K>(random_bits(seed, i));
        else
          out[i] = key_from_unit<K>(u(i));
      });
      break;
    case distribution::reduced_entropy: {
      const int ands = opt.entropy_and.value_or(default_entropy_ands);
      parallel_fill(n, [&](std::size_t i) {
        out[i] = reduced_entropy_key<K>(reduced_entropy_bits(seed, i, ands));
      });
      break;
    }
    case distribution::gaussian:  // mean of four uniforms
      parallel_fill(n, [&](std::size_t i) {
        out[i] = key_from_unit<K>((u(i, 0) + u(i, 1) + u(i, 2) + u(i, 3)) / 4);
      });
      break;
    case distribution::zipf: {  // rank by inverting the continuous Zipf CDF
      const double s = opt.zipf_exponent, ranks = static_cast<double>(opt.zipf_ranks);
      parallel_fill(n, [&](std::size_t i) {
        const double x = u(i);
        double rank = std::abs(s - 1.0) < 1e-9
                          ? std::pow(ranks, x)
                          : std::pow((std::pow(ranks, 1 - s) - 1) * x + 1, 1 / (1 - s));
        out[i] = static_cast<K>(
            std::min(std::floor(rank) - 1, static_cast<double>(std::numeric_limits<K>::max())));
      });
      break;
    }
    case distribution::all_equal:
      std::fill(out.begin(), out.end(), static_cast<K>(42));
      break;
    case distribution::few_unique:
      parallel_fill(n, [&](std::size_t i) {
        const auto pick = random_bits(seed, i) % static_cast<std::uint64_t>(opt.few_unique_count);
        out[i] = key_from_unit<K>(unit(random_bits(seed ^ 0xABCDEFull, pick)));
      });
      break;
  }
  auto by_order = [](const K& a, const K& b) { return a < b; };
  if (d == distribution::sorted) std::sort(out.begin(), out.end(), by_order);
  if (d == distribution::reverse) std::sort(out.rbegin(), out.rend(), by_order);
  if (d == distribution::organ_pipe) {
    std::sort(out.begin(), out.begin() + n / 2, by_order);
    std::sort(out.begin() + n / 2, out.end(), [&](const K& a, const K& b) { return b < a; });
  }
  return out;
}

template <class K>
std::vector<K> generate(distribution d, std::size_t n, std::uint64_t seed,
                        const generator_options& opt = {}) {
  if constexpr (std::is_same_v<K, __half> || std::is_same_v<K, __nv_bfloat16>) {
    // The f32 keys of the same seed rounded to the format, which keeps their order (sorted
    // stays sorted); binary16's scaled by 2^-5 first, so that [-1e6, 1e6) fits its range.
    const std::vector<float> wide = generate<float>(d, n, seed, opt);
    std::vector<K> out(n);
    parallel_fill(n, [&](std::size_t i) {
      if constexpr (std::is_same_v<K, __half>)
        out[i] = __float2half_rn(wide[i] * 0x1.0p-5f);
      else
        out[i] = __float2bfloat16_rn(wide[i]);
    });
    return out;
  } else {
    return generate_keys<K>(d, n, seed, opt);
  }
}

}  // namespace gpusort::tools
