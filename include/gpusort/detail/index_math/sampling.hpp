// The draw of gpusort.sample_top_k_top_p from one row's candidates (issue 76): the row's top-k
// values, most likely first (NaNs, which top-k counts as the largest, first of all), and a
// uniform u in [0, 1). A candidate's weight is its softmax numerator at the temperature,
// relative to the most likely number; top-p keeps every candidate whose mass before it is below
// p of the total (the first always); the draw takes the first kept candidate whose running
// weight passes u times the kept weight. The device's kernel (src/operations.cu) and the host's
// loop (operations.hpp) share these.
#pragma once

#include <cmath>
#include <cstdint>

#include "gpusort/detail/core/config.hpp"

namespace gpusort::detail::index_math {

// The softmax numerator of `value` against `first`, the most likely number of the row:
// exp((value - first) / temperature). Candidates equal to it weigh 1 (so +inf logits share the
// draw among themselves); NaNs weigh 0, never drawn, and so do -inf logits (masked tokens) at
// an infinite temperature, where every other candidate weighs 1.
GPUSORT_HD inline float candidate_weight(float value, float first, float inverse_temperature) {
  if (value != value) return 0.0f;
  if (value == first) return 1.0f;
  const float exponent = (value - first) * inverse_temperature;
  return exponent == exponent ? expf(exponent) : 0.0f;
}

// Whether top-p keeps a candidate whose weights before it sum to `mass_before`, of `total`:
// below p of the total, or the first.
GPUSORT_HD constexpr bool kept_by_top_p(float mass_before, float total, float p) {
  return mass_before == 0.0f || mass_before < p * total;
}

// The weight the draw aims past: u of the kept candidates' weight.
GPUSORT_HD constexpr float draw_target(float u, float kept_weight) { return u * kept_weight; }

}  // namespace gpusort::detail::index_math
