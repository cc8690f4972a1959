// How `gpusort bench --segments` cuts n keys into segments: a fixed size, or the power-law
// sizes of CUB's segmented-sort benchmarks (lognormal, mu = 3, sigma = 1.2), reproducible
// from a seed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

#include "distributions.hpp"

namespace gpusort::tools {

struct segment_spec {
  bool powerlaw = false;
  std::uint64_t size = 0;  // without powerlaw: every segment's, the last one's at most
  // As --segments spells it, and as the CSV's segment_size column holds it.
  std::string name() const { return powerlaw ? "powerlaw" : std::to_string(size); }
  bool operator==(const segment_spec&) const = default;
};

inline constexpr double powerlaw_mu = 3.0, powerlaw_sigma = 1.2;

// Sizes drawn lognormal(powerlaw_mu, powerlaw_sigma) and rounded to the nearest integer (so
// some are 0) until they hold n keys; the last one is cut so that they add up to n.
inline std::vector<std::uint64_t> powerlaw_segment_sizes(std::uint64_t n, std::uint64_t seed) {
  // A stream of its own: the keys made from the same seed must not shape the sizes.
  const std::uint64_t stream = seed ^ 0x5EC5EC5EC5EC5EC5ull;
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t total = 0, i = 0; total < n; ++i) {
    // Box-Muller; 1 - unit(...) lies in (0, 1], so the logarithm is finite.
    const double radius = std::sqrt(-2 * std::log(1 - unit(random_bits(stream, 2 * i))));
    const double angle = 2 * std::numbers::pi * unit(random_bits(stream, 2 * i + 1));
    const double normal = radius * std::cos(angle);
    const auto size = static_cast<std::uint64_t>(
        std::llround(std::exp(powerlaw_mu + powerlaw_sigma * normal)));
    sizes.push_back(std::min(size, n - total));
    total += sizes.back();
  }
  return sizes;
}

// Segment i is [offsets[i], offsets[i + 1]); the segments cover [0, n) back to back.
inline std::vector<std::uint64_t> segment_offsets(const segment_spec& spec, std::uint64_t n,
                                                  std::uint64_t seed) {
  std::vector<std::uint64_t> offsets{0};
  if (spec.powerlaw) {
    for (std::uint64_t size : powerlaw_segment_sizes(n, seed))
      offsets.push_back(offsets.back() + size);
  } else {
    while (offsets.back() < n)
      offsets.push_back(offsets.back() + std::min(spec.size, n - offsets.back()));
  }
  return offsets;
}

}  // namespace gpusort::tools
